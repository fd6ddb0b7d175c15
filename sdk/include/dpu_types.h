/* OpenPIM — UPMEM SDK compatible host API: basic types.
 * Layouts are part of the C ABI mirrored by libdpu: do not change them. */
#ifndef DPU_TYPES_H
#define DPU_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dpu_target.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most control interfaces (slices) of a rank, and DPUs per control interface. */
#define DPU_MAX_NR_CIS 8
#define DPU_MAX_NR_DPUS_PER_CI 8
/** The tasklet that boots a DPU. */
#define DPU_BOOT_THREAD 0
#define DPU_MAX_NR_GROUPS 8

/** Ids (dpu_management.h): a rank (backend type in the top 4 bits, dpu_target_macros.h), a DPU
 *  (rank id << 16 | slice << 8 | member), a slice (control interface) of a rank, a DPU in its
 *  slice. */
typedef uint16_t dpu_rank_id_t;
typedef uint32_t dpu_id_t;
typedef uint8_t dpu_slice_id_t;
typedef uint8_t dpu_member_id_t;
typedef uint8_t dpu_group_id_t;
/** A tasklet of a DPU. */
typedef uint8_t dpu_thread_t;
typedef uint8_t dpu_notify_bit_id_t;
/** Addresses and sizes in the DPU memories (IRAM in instructions, the others in bytes). */
typedef uint16_t iram_addr_t;
typedef uint32_t wram_addr_t;
typedef uint32_t mram_addr_t;
typedef mram_addr_t dpu_mem_max_addr_t;
typedef uint16_t iram_size_t;
typedef uint32_t wram_size_t;
typedef uint32_t mram_size_t;
typedef mram_size_t dpu_mem_max_size_t;
/** A DPU instruction, a WRAM word. */
typedef uint64_t dpuinstruction_t;
typedef uint32_t dpuword_t;

/** Marks a deprecated function. */
#ifndef DPU_API_DEPRECATED
#define DPU_API_DEPRECATED __attribute__((deprecated))
#endif

/** Opaque handles owned by libdpu. */
struct dpu_t;
struct dpu_rank_t;
struct dpu_program_t;

/** What a struct dpu_set_t designates. */
typedef enum _dpu_set_kind_t {
    DPU_SET_RANKS = 0, /* a list of ranks (what dpu_alloc returns, or one rank) */
    DPU_SET_DPU = 1,   /* a single DPU */
} dpu_set_kind_t;

/**
 * A set of DPUs, passed by value. Programs read `set.dpu` directly, so the
 * layout is fixed: 24 bytes on LP64 targets.
 */
struct dpu_set_t {
    dpu_set_kind_t kind;
#if defined(__GNUC__) || defined(__clang__)
    __extension__
#endif
    union {
        struct {
            uint32_t nr_ranks;
            struct dpu_rank_t **ranks;
        } list;
        struct dpu_t *dpu;
    };
};

#if defined(__x86_64__) || defined(__aarch64__) || (defined(__LP64__) && __LP64__)
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(struct dpu_set_t) == 24, "struct dpu_set_t must be 24 bytes");
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(struct dpu_set_t) == 24, "struct dpu_set_t must be 24 bytes");
#else
typedef char _dpu_set_t_size_check[(sizeof(struct dpu_set_t) == 24) ? 1 : -1];
#endif
#endif

/** A host-reachable symbol of a loaded DPU program. */
struct dpu_symbol_t {
    uint32_t address; /* DPU address (0x80000000 bit: IRAM, 0x08000000 bit: MRAM, else WRAM) */
    uint32_t size;    /* size in bytes */
};

/** A DPU program embedded in the host binary by DPU_INCBIN. */
struct dpu_incbin_t {
    uint8_t *buffer;
    size_t size;
    const char *path;
};

/** The state of one DPU (dpu_checkpoint.h). The memories are the SDK's; the internal state is
 * OpenPIM's: a DPU at rest (between launches, or stopped by a fault) runs no tasklet, its
 * registers (32 per tasklet, RV32I's), PCs and flags are the boot values, and mem_fault says
 * whether its last launch faulted. */
struct dpu_context_t {
    struct {
        uint32_t nr_threads;     /* tasklets */
        uint32_t nr_registers;   /* work registers per tasklet */
        uint32_t nr_atomic_bits;
        iram_size_t iram_size;   /* in instructions */
        mram_size_t mram_size;   /* in bytes */
        wram_size_t wram_size;   /* in 32-bit words */
    } info;
    dpuinstruction_t *iram;
    uint8_t *mram;
    dpuword_t *wram;
    uint32_t *registers;         /* nr_threads x nr_registers */
    iram_addr_t *pcs;            /* per tasklet */
    bool *atomic_register;       /* nr_atomic_bits */
    bool *zero_flags;            /* per tasklet */
    bool *carry_flags;           /* per tasklet */
    uint8_t nr_of_running_threads;
    uint8_t *scheduling;         /* per tasklet */
    bool bkp_fault;
    bool dma_fault;
    bool mem_fault;
    dpu_thread_t bkp_fault_thread_index;
    dpu_thread_t dma_fault_thread_index;
    dpu_thread_t mem_fault_thread_index;
    uint32_t bkp_fault_id;
};

/** Description of a profile (opaque; see dpu_get_profile_description). */
typedef struct _dpu_description_t *dpu_description_t;

#ifdef __cplusplus
}
#endif

#endif /* DPU_TYPES_H */
