/* A fully unrolled 64-bit reduction (the shape of PrIM's SCAN-RSS kernel): clang's Reassociate
 * pass puts all 128 loads of a block first, so without the machine scheduler the registers
 * spill; the shim schedules this program (schedule.sh checks the spills and the sum). */
#include <stdint.h>
#include <stdio.h>
#include <defs.h>

#define BLOCK 128
#define N 1024

static uint64_t data[N];

static uint64_t block_sum(const uint64_t *block)
{
    uint64_t sum = 0;
#pragma unroll
    for (int j = 0; j < BLOCK; j++) {
        sum += block[j];
    }
    return sum;
}

int main(void)
{
    if (me() != 0) {
        return 0;
    }
    /* a 64-bit linear congruential sequence (Knuth's MMIX constants) */
    uint64_t x = 42;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        data[i] = x >> 7;
    }
    uint64_t total = 0;
    for (int i = 0; i < N; i += BLOCK) {
        total += block_sum(&data[i]);
    }
    printf("sum=%llu\n", (unsigned long long)total);
    return 0;
}
