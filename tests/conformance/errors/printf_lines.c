/* Tasklet 0 prints `lines` lines of 24 characters (the default printf buffer holds them). */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>

__host uint32_t lines;

int main(void)
{
    if (me() != 0)
        return 0;
    for (uint32_t i = 0; i < lines; i++)
        printf("line %04u of this DPU.\n", i);
    return 0;
}
