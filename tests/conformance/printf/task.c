/* printf / puts / putchar from a DPU; the host compares the log. */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>
#include <barrier.h>
#include "cases.h"

__host struct print_values values;
__host uint32_t values_size;
__host uint32_t run_id;

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    if (t == 0) {
        values_size = sizeof(struct print_values);
        printf("run %u\n", run_id);
        PRINT_CASES(printf, values);
        puts("puts adds a newline");
        putchar('<');
        putchar('>');
        putchar('\n');
    }
    /* then every tasklet prints one line, in tasklet order */
    for (unsigned int k = 0; k < NR_TASKLETS; k++) {
        barrier_wait(&bar);
        if (k == t)
            printf("tasklet %u of %d\n", t, NR_TASKLETS);
    }
    return 0;
}
