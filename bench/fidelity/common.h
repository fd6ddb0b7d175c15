/* OpenPIM fidelity suite: what the host passes to the DPU microbenchmarks and reads back. */
#ifndef FIDELITY_COMMON_H
#define FIDELITY_COMMON_H
#include <stdint.h>

struct bench_args {
    uint32_t op;     /* which kernel (see each DPU program) */
    uint32_t size;   /* DMA size in bytes (MRAM benchmarks) */
    uint32_t n;      /* elements or bytes, per benchmark */
    uint32_t reps;   /* repetitions of the timed part */
    uint64_t scalar; /* the STREAM / arithmetic scalar operand (bit pattern) */
};

struct bench_result {
    uint64_t cycles; /* perfcounter cycles of the timed part */
    uint64_t check;  /* a value derived from the results, so that nothing is optimised away */
};

/* Arithmetic kernels: op = 4 * type + operation. */
enum { T_INT32 = 0, T_INT64 = 1, T_FLOAT = 2, T_DOUBLE = 3 };
enum { O_ADD = 0, O_SUB = 1, O_MUL = 2, O_DIV = 3 };

/* STREAM kernels (MRAM and WRAM). */
enum { S_COPY_DMA = 0, S_COPY = 1, S_ADD = 2, S_SCALE = 3, S_TRIAD = 4 };
#endif
