/* OpenPIM's own host functions (not part of the UPMEM SDK's interface), exported by libdpu.so.
 *
 * Inter-DPU regions: UPMEM DPUs cannot exchange data directly; a program that moves data from
 * some DPUs to others reads it to the host, rearranges or reduces it there and writes it back.
 * Marking that code as a region makes the run report (openpim run --report) show its
 * transfers and host code as inter-DPU time, with one entry per region, instead of CPU-DPU,
 * DPU-CPU and host time:
 *
 *     openpim_interdpu_begin();
 *     dpu_push_xfer(set, DPU_XFER_FROM_DPU, ...);   // gather
 *     ...                                           // reduce / permute on the host
 *     dpu_push_xfer(set, DPU_XFER_TO_DPU, ...);     // scatter back
 *     openpim_interdpu_end();
 *
 * Regions are process-wide and nest; launches and program loads inside one keep their phase.
 *
 * Programs that must also build with the UPMEM SDK (which has no such header) include it
 * only where it exists, and otherwise make the calls compile to nothing:
 *
 *     #if defined(__has_include)
 *     #if __has_include(<openpim.h>)
 *     #include <openpim.h>
 *     #endif
 *     #endif
 *     #ifndef OPENPIM_H
 *     #define openpim_interdpu_begin() ((void)0)
 *     #define openpim_interdpu_end() ((void)0)
 *     #endif
 *
 * See docs/report-schema.md ("Inter-DPU time").
 *
 * Checkpoints of whole DPU sets to files: <openpim_checkpoint.h>, included here. */
#ifndef OPENPIM_H
#define OPENPIM_H

#include "openpim_checkpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens an inter-DPU region (host-mediated exchange between DPUs). */
void openpim_interdpu_begin(void);
/* The same, with a label shown in the report and the trace (NULL: none). */
void openpim_interdpu_begin_named(const char *label);
/* Closes the innermost open region (without one: a message on stderr, nothing else). */
void openpim_interdpu_end(void);

struct dpu_program_t;
/* The names of a loaded program's host-reachable symbols, sorted: *names gets one malloc'd
 * block of *count NUL-terminated names, one after the other (free() it). */
dpu_error_t openpim_program_symbols(struct dpu_program_t *program, char **names, uint32_t *count);

/* The calling thread's last error explanation, the line libdpu prints on stderr as
 * "openpim: FUNC: CAUSE" (also under OPENPIM_QUIET), as "FUNC: CAUSE"; NULL before any error.
 * Valid until the thread's next error. */
const char *openpim_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* OPENPIM_H */
