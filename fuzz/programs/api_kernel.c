/* The DPU program of the c_api fuzz target (fuzz/fuzz_targets/c_api.rs). Its effect is simple
 * enough for the harness's model of every DPU's memories to predict after each launch:
 *
 *   param == 0xDEAD: every tasklet faults (assert) before writing anything;
 *   otherwise: mout[i] = min[i] + (uint8_t)param for every byte i (tasklet t does the 8-byte
 *   words t, t + NR_TASKLETS, ...), wout[i] = wbuf[i] ^ 0x5a, tasklet 0 prints
 *   "param <param>" and launches is incremented by 1. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <barrier.h>
#include <assert.h>
#include <stdio.h>
#include <attributes.h>

#define MBYTES 2048
#define WBYTES 256

BARRIER_INIT(all_tasklets, NR_TASKLETS);

__host uint32_t param;
__host uint32_t launches;
__host uint8_t wbuf[WBYTES];
__host uint8_t wout[WBYTES];
__mram uint8_t min[MBYTES];
__mram uint8_t mout[MBYTES];

static uint8_t chunk[NR_TASKLETS][8];

int main(void)
{
    unsigned t = me();
    assert(param != 0xDEAD);
    uint8_t add = (uint8_t)param;
    for (unsigned w = t; w < MBYTES / 8; w += NR_TASKLETS) {
        mram_read(&min[w * 8], chunk[t], 8);
        for (int b = 0; b < 8; b++)
            chunk[t][b] = (uint8_t)(chunk[t][b] + add);
        mram_write(chunk[t], &mout[w * 8], 8);
    }
    for (unsigned i = t; i < WBYTES; i += NR_TASKLETS)
        wout[i] = wbuf[i] ^ 0x5a;
    barrier_wait(&all_tasklets);
    if (t == 0) {
        launches++;
        printf("param %u\n", (unsigned)param);
    }
    return 0;
}
