/* OpenPIM — PID-Comm-compatible collective communication between DPUs (#include <pidcomm.h>).
 *
 * The interface of PID-Comm (ISCA'24), written for OpenPIM from its documented behaviour;
 * the functions live in libdpu.so (link with `dpu-pkg-config --libs dpu`). A hypercube model
 * of the DPUs (entangled order: see DPU_FOREACH_ENTANGLED_GROUP), eight primitives, MRAM
 * offsets relative to the MRAM heap (DPU_MRAM_HEAP_POINTER_NAME) of the program loaded when
 * the call is made. docs/collectives.md is the user's guide: buffers each primitive reads,
 * writes and uses as scratch, the shapes supported, the optimized and baseline paths
 * (OPENPIM_COLLECTIVES_PATH, OPENPIM_COLLECTIVES_PR, OPENPIM_COLLECTIVES_OFF), what the run
 * report shows.
 *
 * Errors end the program as DPU_ASSERT does (a message naming the parameter first); after
 * openpim_pidcomm_error_mode(OPENPIM_PIDCOMM_RETURN_ERRORS) the calls return instead and
 * openpim_pidcomm_last_error() gives the code (OpenPIM's extension). */
#ifndef PIDCOMM_H
#define PIDCOMM_H

#include <stdint.h>
#include <stdbool.h>

#include "dpu.h"
#include "dpu_types.h"
#include "dpu_error.h"
#include "dpu_management.h"
#include "support.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The hypercube over a set: its axes (x first). `axis_len` is not copied: it must outlive
 * the manager. Allocated by init_hypercube_manager, released with free(). */
typedef struct {
    struct dpu_set_t dpu_set;
    uint32_t dimension;
    uint32_t *axis_len;
} hypercube_manager;

hypercube_manager *init_hypercube_manager(struct dpu_set_t dpu_set, uint32_t dimension, uint32_t *axis_len);

/* `comm`: one '0'/'1' per axis, x first ("100": along x). Sizes in bytes per DPU; offsets
 * relative to the MRAM heap; `buffer_offset` is relative to `start_offset` (scratch at
 * start_offset + buffer_offset, total_data_size bytes). `size`: element size (1, 2, 4, 8).
 * `reduce_type`: 0 sum, 1 max. */
void pidcomm_broadcast(hypercube_manager *manager, uint32_t total_data_size, uint32_t target_offset, void *data);
void pidcomm_alltoall(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t target_offset, uint32_t buffer_offset);
void pidcomm_reduce_scatter(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t target_offset, uint32_t buffer_offset, uint32_t size);
void pidcomm_all_reduce(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t target_offset, uint32_t buffer_offset, uint32_t size, uint32_t reduce_type);
void pidcomm_allgather(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t target_offset, uint32_t buffer_offset);
void pidcomm_reduce(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t buffer_offset, uint32_t size, void **host_buffer);
void pidcomm_gather(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t buffer_offset, void **host_buffer);
void pidcomm_scatter(hypercube_manager *manager, char *comm, uint32_t total_data_size, uint32_t start_offset,
    uint32_t buffer_offset, void **host_buffer);

/** Allocates whole ranks (nr_dpus a multiple of 64), in order; `type` is accepted. */
dpu_error_t dpu_alloc_comm(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set, int type);
/** dpu_alloc, and the number of DPUs allocated in *enabled_dpus. */
dpu_error_t dpu_alloc_custom(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set, int *enabled_dpus);

/** Advances to the next DPU in entangled order (logical id L: chip L % 8, line L / 8 of the
 * rank). */
void dpu_set_dpu_iterator_next_entangled_group(struct dpu_set_dpu_iterator_t *iterator, uint32_t cube_size);

/** DPU_FOREACH_ENTANGLED_GROUP(set, dpu, i, cube_size): the DPUs in the hypercube's order
 * (i = logical id), the order in which to prepare their buffers. */
#define DPU_FOREACH_ENTANGLED_GROUP(set, dpu, i, cube_size)                                     \
    _PIDCOMM_FOREACH_(set, dpu, i, cube_size, _DPU_UNIQUE(_pidcomm_it_))
#define _PIDCOMM_FOREACH_(set, dpu, i, cube_size, it)                                           \
    for (struct dpu_set_dpu_iterator_t it = dpu_set_dpu_iterator_from(&(set));                 \
         ((dpu) = it.next, (i) = it.count), it.has_next;                                        \
         dpu_set_dpu_iterator_next_entangled_group(&it, (cube_size)))

/* OpenPIM's extension: what a failing call does. */
#define OPENPIM_PIDCOMM_EXIT_ON_ERROR 0 /* default: end the program as DPU_ASSERT */
#define OPENPIM_PIDCOMM_RETURN_ERRORS 1 /* return; see openpim_pidcomm_last_error */
/** Sets the mode; returns the previous one. */
int openpim_pidcomm_error_mode(int mode);
/** The code of the last pidcomm_* call: DPU_OK, or why it failed (the message is on stderr). */
dpu_error_t openpim_pidcomm_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* PIDCOMM_H */
