#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H
#include <stdint.h>

/* Arguments the host writes into each DPU before a launch. */
struct vecadd_args {
    uint32_t nr_elements; /* elements of this DPU's slice */
    uint32_t pad;
};

/* What each DPU reports back. */
struct vecadd_result {
    uint64_t cycles; /* perfcounter cycles of tasklet 0's view of the kernel */
};

/* Elements moved per DMA transfer by one tasklet (bytes = 4 * BLOCK). */
#define BLOCK 256
#endif
