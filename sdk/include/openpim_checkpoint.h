/* OpenPIM's own checkpoint functions (not part of the UPMEM SDK), included by <openpim.h>.
 *
 * A whole DPU set (every DPU's IRAM, WRAM, MRAM and fault flag) saved to one file and restored
 * from it, in this process or another, on the same or other ranks (the set must have as many
 * DPUs). MRAM pages never written are not stored, and a page equal to the same page of an
 * earlier DPU (a broadcast, a program's MRAM data) is stored once. Every part of the file has a
 * CRC-32: a damaged or truncated file is refused, naming it, before any DPU changes. Restoring
 * needs the program loaded (dpu_load) first; the next launch then gives the results and cycle
 * counts an uninterrupted run would. `openpim checkpoint inspect FILE` describes a file.
 * See docs/memory.md, "Checkpoint and restore" (with a crash-resume pattern). */
#ifndef OPENPIM_CHECKPOINT_H
#define OPENPIM_CHECKPOINT_H

#include "dpu_error.h"
#include "dpu_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Saves every DPU of `set` to `path` (written to PATH.partial, then renamed: a crash while
 * saving leaves the previous file intact). */
dpu_error_t openpim_checkpoint_save_file(struct dpu_set_t set, const char *path);
/* Restores every DPU of `set` from `path`. */
dpu_error_t openpim_checkpoint_restore_file(struct dpu_set_t set, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* OPENPIM_CHECKPOINT_H */
