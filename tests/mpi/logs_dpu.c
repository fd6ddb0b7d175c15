/* Prints its DPU's number (written by the host) from tasklet 0 (tests/mpi/logs.c). */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>

__host uint32_t id;

int main(void)
{
    if (me() == 0)
        printf("hello from DPU %u\n", id);
    return 0;
}
