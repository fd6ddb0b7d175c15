/* OpenPIM — UPMEM SDK compatible host API: access to ranks, DPUs, profiles. */
#ifndef DPU_MANAGEMENT_H
#define DPU_MANAGEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "dpu_error.h"
#include "dpu_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Parses `profile` (comma-separated key=value, may be NULL for the default)
 * and stores an opaque description of the hardware it designates.
 */
dpu_error_t dpu_get_profile_description(const char *profile, dpu_description_t *description);

/** The DPU of a single-DPU set (kind DPU_SET_DPU), NULL otherwise. */
struct dpu_t *dpu_from_set(struct dpu_set_t dpu_set);

/** The rank of a single-rank set, or the rank holding a single-DPU set; NULL otherwise. */
struct dpu_rank_t *dpu_rank_from_set(struct dpu_set_t dpu_set);

/** A one-rank set of `*rank` (a pointer to a struct dpu_rank_t * the caller keeps alive). */
struct dpu_set_t dpu_set_from_rank(struct dpu_rank_t **rank);
/** A one-DPU set of `dpu`. */
struct dpu_set_t dpu_set_from_dpu(struct dpu_t *dpu);

/** The rank holding `dpu` (NULL if `dpu` is not a DPU of a live set). */
struct dpu_rank_t *dpu_get_rank(struct dpu_t *dpu);
/**
 * The rank's id: its backend type (dpu_type_t) << DPU_TARGET_SHIFT | its index in the machine
 * (dpu_target_macros.h: `dpu_get_rank_id(rank) & DPU_TARGET_MASK` is the index).
 */
dpu_id_t dpu_get_rank_id(struct dpu_rank_t *rank);
/** The NUMA node of the rank's memory: 0 for every emulated rank (-1 for an invalid rank). */
int dpu_get_rank_numa_node(struct dpu_rank_t *rank);
/** The DPU's id: rank id << 16 | slice << 8 | member. */
dpu_id_t dpu_get_id(struct dpu_t *dpu);
/** The DPU's control interface in its rank (8 DPUs per slice on a 64-DPU rank). */
dpu_slice_id_t dpu_get_slice_id(struct dpu_t *dpu);
/** The DPU's index in its slice. */
dpu_member_id_t dpu_get_member_id(struct dpu_t *dpu);
/** Whether the DPU can be used (every DPU of a live set is). */
bool dpu_is_enabled(struct dpu_t *dpu);
/** The DPU of a rank by slice and member; NULL when there is none. */
struct dpu_t *dpu_get(struct dpu_rank_t *rank, dpu_slice_id_t slice_id, dpu_member_id_t dpu_id);
/** The description of the rank's machine (owned by the rank). */
dpu_description_t dpu_get_description(struct dpu_rank_t *rank);

/** Allocates one rank with `profile` (NULL: default); free it with dpu_free_rank. */
dpu_error_t dpu_get_rank_of_type(const char *profile, struct dpu_rank_t **rank);
/** Frees a rank from dpu_get_rank_of_type, waiting for its queued work. */
dpu_error_t dpu_free_rank(struct dpu_rank_t *rank);

/** A recursive lock per rank for the program's own use (0 from trylock: taken). */
void dpu_lock_rank(struct dpu_rank_t *rank);
int dpu_trylock_rank(struct dpu_rank_t *rank);
void dpu_unlock_rank(struct dpu_rank_t *rank);

/** Iterator over the DPUs of a rank (STRUCT_DPU_FOREACH). */
struct dpu_iterator_t {
    struct dpu_rank_t *rank;
    uint32_t count;    /* running index of the current DPU */
    uint32_t next_idx; /* index in the rank of the DPU after `next` */
    bool has_next;     /* whether `next` is valid */
    struct dpu_t *next;
};

struct dpu_iterator_t dpu_iterator_from(struct dpu_rank_t *rank);
void dpu_iterator_next(struct dpu_iterator_t *iterator);

/* Internal helpers of STRUCT_DPU_FOREACH. */
#define _STRUCT_DPU_FOREACH_PICK(_1, _2, _3, NAME, ...) NAME
#define _STRUCT_DPU_FOREACH_CAT_(a, b) a##b
#define _STRUCT_DPU_FOREACH_CAT(a, b) _STRUCT_DPU_FOREACH_CAT_(a, b)
#ifdef __COUNTER__
#define _STRUCT_DPU_FOREACH_IT _STRUCT_DPU_FOREACH_CAT(_struct_dpu_it_, __COUNTER__)
#else
#define _STRUCT_DPU_FOREACH_IT _STRUCT_DPU_FOREACH_CAT(_struct_dpu_it_, __LINE__)
#endif

/**
 * STRUCT_DPU_FOREACH(rank, dpu) / STRUCT_DPU_FOREACH(rank, dpu, i): loop over the DPUs of a
 * struct dpu_rank_t *; `dpu` (struct dpu_t *) receives each DPU, `i` its index from 0.
 */
#define STRUCT_DPU_FOREACH(...)                                                              \
    _STRUCT_DPU_FOREACH_PICK(__VA_ARGS__, _STRUCT_DPU_FOREACH_I, _STRUCT_DPU_FOREACH_X,       \
        _STRUCT_DPU_FOREACH_BAD)(__VA_ARGS__)
#define _STRUCT_DPU_FOREACH_X(rank, dpu) _STRUCT_DPU_FOREACH_X_(rank, dpu, _STRUCT_DPU_FOREACH_IT)
#define _STRUCT_DPU_FOREACH_X_(rank, dpu, it)                                                \
    for (struct dpu_iterator_t it = dpu_iterator_from(rank); ((dpu) = it.next), it.has_next; \
         dpu_iterator_next(&it))
#define _STRUCT_DPU_FOREACH_I(rank, dpu, i)                                                  \
    _STRUCT_DPU_FOREACH_I_(rank, dpu, i, _STRUCT_DPU_FOREACH_IT)
#define _STRUCT_DPU_FOREACH_I_(rank, dpu, i, it)                                             \
    for (struct dpu_iterator_t it = dpu_iterator_from(rank);                                 \
         ((i) = it.count), ((dpu) = it.next), it.has_next; dpu_iterator_next(&it))

#ifdef __cplusplus
}
#endif

#endif /* DPU_MANAGEMENT_H */
