/* Prints its DPU's number (written by the host) from tasklet 0 (tests/mpi/logs.c); DPU 40
 * then prints 2,000 more lines, a log longer than 64 KiB (a reply the MPI worker sends from
 * its own buffer). */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>

__host uint32_t id;

int main(void)
{
    if (me() == 0) {
        printf("hello from DPU %u\n", id);
        if (id == 40)
            for (int i = 0; i < 2000; i++)
                printf("DPU 40, line %d of a log longer than 64 KiB\n", i);
    }
    return 0;
}
