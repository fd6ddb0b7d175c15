/* OpenPIM — UPMEM SDK compatible host API: DPU printf log access. */
#ifndef DPU_LOG_H
#define DPU_LOG_H

#include <stdio.h>

#include "dpu_error.h"
#include "dpu_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes the printf output of the last run of one DPU to `output`
 * (the same text as dpu_log_read on the set holding this DPU).
 */
dpu_error_t dpulog_read_for_dpu(struct dpu_t *dpu, FILE *output);

#ifdef __cplusplus
}
#endif

#endif /* DPU_LOG_H */
