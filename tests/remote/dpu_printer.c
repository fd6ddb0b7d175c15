/* A tenant's kernel that prints `lines` numbered lines of 32 bytes (printf log budget test). */
#include <attributes.h>
#include <stdint.h>
#include <stdio.h>

__host uint32_t lines;

int main(void)
{
    for (uint32_t i = 0; i < lines; i++)
        printf("printer line %08u of output\n", i);
    return 0;
}
