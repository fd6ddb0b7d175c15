/* OpenPIM — the UPMEM SDK's DPU checkpoint API (#include <dpu_checkpoint.h>).
 *
 * One DPU's state (IRAM, MRAM, WRAM, internal state) saved into a struct dpu_context_t and
 * put back, serialized to bytes and read back. As in the SDK:
 * - dpu_checkpoint_save fills a context the caller zeroed and allocates (malloc) the parts
 *   the flags ask for; dpu_checkpoint_free frees them (and sets the pointers to NULL);
 * - dpu_checkpoint_serialize allocates the buffer with malloc when *serialized_context is
 *   NULL (the caller frees it with free) and otherwise needs a buffer of exactly
 *   dpu_checkpoint_get_serialized_context_size(context) bytes;
 * - dpu_checkpoint_deserialize allocates the context's parts like save.
 * The set of save/restore must be a single DPU (DPU_FOREACH). Restoring IRAM needs the
 * program loaded (dpu_load) first. A whole set to and from one file: <openpim_checkpoint.h>.
 * See docs/memory.md, "Checkpoint and restore". */
#ifndef DPU_CHECKPOINT_H
#define DPU_CHECKPOINT_H

#include <stdint.h>

#include "dpu_error.h"
#include "dpu_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum _dpu_checkpoint_flags_t {
    DPU_CHECKPOINT_NONE = 0x0,
    DPU_CHECKPOINT_INTERNAL = 0x1, /* registers, PCs, flags, faults */
    DPU_CHECKPOINT_IRAM = 0x2,
    DPU_CHECKPOINT_MRAM = 0x8,
    DPU_CHECKPOINT_WRAM = 0x10,
} dpu_checkpoint_flags_t;

#define DPU_CHECKPOINT_ALL \
    (DPU_CHECKPOINT_INTERNAL | DPU_CHECKPOINT_IRAM | DPU_CHECKPOINT_MRAM | DPU_CHECKPOINT_WRAM)

dpu_error_t dpu_checkpoint_save(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_restore(struct dpu_set_t set, dpu_checkpoint_flags_t flags, struct dpu_context_t *context);
uint32_t dpu_checkpoint_get_serialized_context_size(struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_serialize(struct dpu_context_t *context, uint8_t **serialized_context,
    uint32_t *serialized_context_size);
dpu_error_t dpu_checkpoint_deserialize(const uint8_t *serialized_context, uint32_t serialized_context_size,
    struct dpu_context_t *context);
dpu_error_t dpu_checkpoint_free(struct dpu_context_t *context);

#ifdef __cplusplus
}
#endif

#endif /* DPU_CHECKPOINT_H */
