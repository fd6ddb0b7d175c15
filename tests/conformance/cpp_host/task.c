/* out[i] = in[i] * factor + dpu_tag, and one printf line (tasklet 0). */
#include <defs.h>
#include <stdint.h>
#include <stdio.h>

#define N 64

__host uint32_t factor;
__host uint32_t dpu_tag;
__host uint32_t input[N];
__host uint32_t output[N];
__host uint32_t runs;

int main(void)
{
    for (uint32_t i = me(); i < N; i += NR_TASKLETS)
        output[i] = input[i] * factor + dpu_tag;
    if (me() == 0) {
        runs++;
        printf("tag %u run %u\n", dpu_tag, runs);
    }
    return 0;
}
