/* OpenPIM DPU runtime: environment calls (docs/internals/dpu-abi.md). Internal header. */
#ifndef OPENPIM_ECALL_H
#define OPENPIM_ECALL_H

#define __ECALL_TASKLET_EXIT     0
#define __ECALL_HALT             1
#define __ECALL_DMA_MRAM_TO_WRAM 2
#define __ECALL_DMA_WRAM_TO_MRAM 3
#define __ECALL_ATOMIC_ACQUIRE   4
#define __ECALL_ATOMIC_RELEASE   5
#define __ECALL_SLEEP            6
#define __ECALL_RESUME           7
#define __ECALL_PERF_CONFIG      8
#define __ECALL_PERF_GET         9
#define __ECALL_PRINTF           10
#define __ECALL_FAULT            11
#define __ECALL_STACK_LEFT       12
#define __ECALL_CYCLES           13
#define __ECALL_ATOMIC_LOCK      14

/* FAULT codes */
#define __FAULT_HEAP_EXHAUSTED   1
#define __FAULT_ASSERTION        2
#define __FAULT_SEQREAD          3
#define __FAULT_ALLOCATOR        4
#define __FAULT_GENERIC          5

#define __OPENPIM_AI __inline__ __attribute__((always_inline))

static __OPENPIM_AI unsigned int __ecall0(unsigned int nr)
{
    register unsigned int a0 __asm__("a0");
    register unsigned int a7 __asm__("a7") = nr;
    __asm__ __volatile__("ecall" : "=r"(a0) : "r"(a7) : "memory");
    return a0;
}

static __OPENPIM_AI unsigned int __ecall1(unsigned int nr, unsigned int x)
{
    register unsigned int a0 __asm__("a0") = x;
    register unsigned int a7 __asm__("a7") = nr;
    __asm__ __volatile__("ecall" : "+r"(a0) : "r"(a7) : "memory");
    return a0;
}

static __OPENPIM_AI unsigned int __ecall2(unsigned int nr, unsigned int x, unsigned int y)
{
    register unsigned int a0 __asm__("a0") = x;
    register unsigned int a1 __asm__("a1") = y;
    register unsigned int a7 __asm__("a7") = nr;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1) : "r"(a7) : "memory");
    return a0;
}

static __OPENPIM_AI unsigned int __ecall3(unsigned int nr, unsigned int x, unsigned int y, unsigned int z)
{
    register unsigned int a0 __asm__("a0") = x;
    register unsigned int a1 __asm__("a1") = y;
    register unsigned int a2 __asm__("a2") = z;
    register unsigned int a7 __asm__("a7") = nr;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1), "+r"(a2) : "r"(a7) : "memory");
    return a0;
}

/* 64-bit result in a0:a1 */
static __OPENPIM_AI unsigned long long __ecall2_64(unsigned int nr, unsigned int x, unsigned int y)
{
    register unsigned int a0 __asm__("a0") = x;
    register unsigned int a1 __asm__("a1") = y;
    register unsigned int a7 __asm__("a7") = nr;
    __asm__ __volatile__("ecall" : "+r"(a0), "+r"(a1) : "r"(a7) : "memory");
    return ((unsigned long long)a1 << 32) | a0;
}

static __OPENPIM_AI __attribute__((__noreturn__)) void __dpu_fault(unsigned int code, unsigned int detail)
{
    __ecall2(__ECALL_FAULT, code, detail);
    __builtin_unreachable();
}

static __OPENPIM_AI unsigned int __dpu_acquire(unsigned int bit)
{
    return __ecall1(__ECALL_ATOMIC_ACQUIRE, bit);
}

/* The lock is one statement, as the UPMEM SDK's (`acquire ..., nz, .`: one DPU instruction that
 * jumps to itself while the bit is held). A loop written in C is a basic block of its own, into
 * which the compiler may sink the work the program does before taking the lock, lengthening the
 * critical section (clang moved PrIM HST-L's multiply inside it: 4x its hardware time). The call
 * is ATOMIC_LOCK, an acquire by which the engine knows this loop for the DPU's one instruction:
 * the set-up, the acquire and the branch back issue in one slot per attempt (rule 9 of
 * docs/internals/dpu-abi.md); a trylock loop (ATOMIC_ACQUIRE) is two on the DPU too. */
static __OPENPIM_AI void __dpu_lock(unsigned int bit)
{
    __asm__ __volatile__("1:\n\tli a7, %1\n\tmv a0, %0\n\tecall\n\tbeqz a0, 1b"
                         :
                         : "r"(bit), "i"(__ECALL_ATOMIC_LOCK)
                         : "a0", "a7", "memory");
}

static __OPENPIM_AI void __dpu_unlock(unsigned int bit)
{
    __ecall1(__ECALL_ATOMIC_RELEASE, bit);
}

static __OPENPIM_AI void __dpu_sleep(void)
{
    __ecall0(__ECALL_SLEEP);
}

static __OPENPIM_AI unsigned int __dpu_resume(unsigned int tasklet)
{
    return __ecall1(__ECALL_RESUME, tasklet);
}

static __OPENPIM_AI unsigned int __dpu_me(void)
{
    unsigned int id;
    __asm__("mv %0, tp" : "=r"(id));
    return id;
}

#endif /* OPENPIM_ECALL_H */
