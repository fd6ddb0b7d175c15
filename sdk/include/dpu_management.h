/* OpenPIM — UPMEM SDK compatible host API: access to ranks, DPUs, profiles. */
#ifndef DPU_MANAGEMENT_H
#define DPU_MANAGEMENT_H

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

#ifdef __cplusplus
}
#endif

#endif /* DPU_MANAGEMENT_H */
