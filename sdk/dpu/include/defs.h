/* OpenPIM DPU: <defs.h> — tasklet identity and control. */
#ifndef _OPENPIM_DEFS_H
#define _OPENPIM_DEFS_H
#include <stdint.h>
#include <sysdef.h>
#include <attributes.h>
#include <macro_utils.h>
#include <openpim_ecall.h>

#ifndef NR_TASKLETS
#define NR_TASKLETS 1
#endif

/* The id of the running tasklet (0 .. NR_TASKLETS-1). */
static __inline__ sysname_t me(void)
{
    return __dpu_me();
}

/* Stops the whole DPU now (every tasklet). */
static __inline__ __attribute__((__noreturn__)) void halt(void)
{
    __ecall0(__ECALL_HALT);
    __builtin_unreachable();
}

/* Bytes left on the running tasklet's stack (negative after an overflow). */
static __inline__ int check_stack(void)
{
    return (int)__ecall0(__ECALL_STACK_LEFT);
}

/* Number of tasklets the program was built with (from the tasklet configuration). */
extern const volatile uint32_t __sys_nr_tasklets;

#endif
