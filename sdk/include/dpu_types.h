/* OpenPIM — UPMEM SDK compatible host API: basic types.
 * Layouts are part of the C ABI mirrored by libdpu: do not change them. */
#ifndef DPU_TYPES_H
#define DPU_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
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

/** Description of a profile (opaque; see dpu_get_profile_description). */
typedef struct _dpu_description_t *dpu_description_t;

#ifdef __cplusplus
}
#endif

#endif /* DPU_TYPES_H */
