/* OpenPIM DPU: <perfcounter.h> — the DPU-wide performance counter (cycles or instructions). */
#ifndef _OPENPIM_PERFCOUNTER_H
#define _OPENPIM_PERFCOUNTER_H
#include <stdint.h>
#include <stdbool.h>
#include <openpim_ecall.h>

typedef uint64_t perfcounter_t;

typedef enum _perfcounter_config_t {
    COUNT_SAME = 0,
    COUNT_CYCLES = 1,
    COUNT_INSTRUCTIONS = 2,
    COUNT_NOTHING = 3,
} perfcounter_config_t;

#ifndef CLOCKS_PER_SEC
#define CLOCKS_PER_SEC 350000000
#endif

/* Selects what the counter counts; returns its value before an optional reset. */
static __inline__ perfcounter_t perfcounter_config(perfcounter_config_t config, bool reset_value)
{
    return __ecall2_64(__ECALL_PERF_CONFIG, (unsigned int)config, reset_value ? 1u : 0u);
}

/* Cycles or instructions since the last reset. */
static __inline__ perfcounter_t perfcounter_get(void)
{
    return __ecall2_64(__ECALL_PERF_GET, 0, 0);
}

#endif
