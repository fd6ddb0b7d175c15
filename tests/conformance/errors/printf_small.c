/* printf with a 64-byte buffer: mode 0 fits, mode 1 overflows (a DPU fault). */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>

STDOUT_BUFFER_INIT(64);

__host uint32_t mode;

int main(void)
{
    if (me() != 0)
        return 0;
    printf("x%d\n", 1);
    if (mode == 1)
        for (uint32_t i = 0; i < 100; i++)
            printf("line %u of a long log\n", i);
    return 0;
}
