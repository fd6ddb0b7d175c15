/* Program-detected faults: -DWHICH=1 heap exhausted, 2 assertion, 3 bad DMA size at run time. */
#include <assert.h>
#include <alloc.h>
#include <mram.h>
#include <stdint.h>
__mram uint64_t m[4];
uint64_t w[4];
volatile unsigned size = 12;
int main(void)
{
#if WHICH == 1
    for (;;) {
        mem_alloc(1024);
    }
#elif WHICH == 2
    assert(size == 13);
#else
    mram_read(m, w, size);
#endif
    return 0;
}
