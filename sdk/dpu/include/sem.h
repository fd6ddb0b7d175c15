/* OpenPIM DPU: <sem.h> — counting semaphores (sleeping waiters, FIFO). */
#ifndef _OPENPIM_SEM_H
#define _OPENPIM_SEM_H
#include <stdint.h>
#include <atomic_bit.h>
#include <openpim_ecall.h>

/* wait_queue: id of the last waiting tasklet (0xff: none); count: current value (signed
 * byte, negative = number of waiters); lock: the atomic bit protecting the semaphore. */
typedef struct sem_t {
    uint8_t wait_queue;
    uint8_t count;
    uint8_t initial_count;
    uint8_t lock;
} sem_t;

/* `lock` holds the low byte of an atomic bit's address (= its index); the linker fills it.
 * The object is alone at the start of its own section, so its `lock` is byte 3 of that
 * section. (Not `.reloc _obj+3`: clang emits file-scope asm before the object, and LLVM 13's
 * assembler drops the +3 of a symbol defined later.) */
#define __OPENPIM_LOCK_BYTE_INIT(_obj, _bit)                                                 \
    __asm__(".pushsection .data.__sync." __STR(_obj) ",\"aw\",@progbits\n\t"                 \
            ".reloc 3, R_RISCV_SET8, " __STR(_bit) "\n\t"                                    \
            ".popsection")

/* Ends with its own ';' as the SDK's does, so both `SEMAPHORE_INIT(s, n)` and
 * `SEMAPHORE_INIT(s, n);` compile (the second adds an empty declaration; -Wpedantic warns). */
#define SEMAPHORE_INIT(_name, _counter)                                                      \
    _Static_assert((_counter) < 128 && (_counter) >= -127, "semaphore counter must fit in a byte"); \
    ATOMIC_BIT_INIT(__CONCAT(__semaphore_, _name));                                          \
    __OPENPIM_LOCK_BYTE_INIT(_name, ATOMIC_BIT_GET(__CONCAT(__semaphore_, _name)));          \
    __attribute__((__section__(".data.__sync." __STR(_name)), __used__, __aligned__(4)))     \
    sem_t _name = { 0xff, (uint8_t)(_counter), (uint8_t)(_counter), 0 };

void sem_take(sem_t *sem);
void sem_give(sem_t *sem);

#endif
