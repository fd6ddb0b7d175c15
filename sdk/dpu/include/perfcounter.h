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

/* The DPU frequency in Hz, to turn COUNT_CYCLES values into seconds. As in the SDK it is a
 * variable, not a constant: DPU programs are built before the machine is chosen, and the
 * loader (dpu_load) writes the frequency of the hardware profile the rank runs with into it
 * (350000000 under upmem-v1a, 400000000 under upmem-v1b). */
#ifndef CLOCKS_PER_SEC
extern const volatile uint32_t CLOCKS_PER_SEC;
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
