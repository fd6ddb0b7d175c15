/* OpenPIM — UPMEM SDK compatible host API: the backend type inside a rank id
 * (#include <dpu_target_macros.h>).
 *
 * dpu_get_rank_id(rank) = type << DPU_TARGET_SHIFT | index of the rank in the machine, so
 * `dpu_get_rank_id(rank) & DPU_TARGET_MASK` is the rank's index (what the SDK's hardware
 * backend reports as the rank's device number) and `>> DPU_TARGET_SHIFT` its dpu_type_t. */
#ifndef DPU_TARGET_MACROS_H
#define DPU_TARGET_MACROS_H

#include <limits.h>

#include "dpu_target.h"
#include "dpu_types.h"

#define DPU_TARGET_LOG2_SIZE (4)
#define DPU_TARGET_SHIFT (CHAR_BIT * sizeof(dpu_rank_id_t) - DPU_TARGET_LOG2_SIZE)
#define DPU_TARGET_MASK ((1 << DPU_TARGET_SHIFT) - 1)

/* Every dpu_type_t must fit in the DPU_TARGET_LOG2_SIZE top bits. */
#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert((1 << DPU_TARGET_LOG2_SIZE) > NB_OF_DPU_TYPES, "update DPU_TARGET_SHIFT");
#elif !defined(__cplusplus) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert((1 << DPU_TARGET_LOG2_SIZE) > NB_OF_DPU_TYPES, "update DPU_TARGET_SHIFT");
#else
typedef char _dpu_target_size_check[((1 << DPU_TARGET_LOG2_SIZE) > NB_OF_DPU_TYPES) ? 1 : -1];
#endif

#endif /* DPU_TARGET_MACROS_H */
