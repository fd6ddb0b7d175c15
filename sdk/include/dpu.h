/* OpenPIM — UPMEM SDK compatible host API (#include <dpu.h>).
 *
 * Written for OpenPIM from the SDK's documented interface. Enum values and
 * struct layouts are part of the C ABI that libdpu (target/release/libdpu.so)
 * mirrors: do not change them without changing libdpu. */
#ifndef DPU_H
#define DPU_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "dpu_error.h"
#include "dpu_types.h"
#include "dpu_management.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Enumerations                                                              */
/* ------------------------------------------------------------------------- */

/** How dpu_launch synchronises with the DPUs it boots. */
typedef enum _dpu_launch_policy_t {
    DPU_ASYNCHRONOUS = 0, /* return once booted; use dpu_sync / dpu_status */
    DPU_SYNCHRONOUS = 1,  /* return when every DPU of the set has finished */
} dpu_launch_policy_t;

/** Direction of a memory transfer. */
typedef enum _dpu_xfer_t {
    DPU_XFER_TO_DPU = 0,
    DPU_XFER_FROM_DPU = 1,
} dpu_xfer_t;

/** Options of a memory transfer (bit flags). */
typedef enum _dpu_xfer_flags_t {
    DPU_XFER_DEFAULT = 0,       /* transfer, then clear the prepared buffers */
    DPU_XFER_NO_RESET = 1 << 0, /* keep the prepared buffers */
    DPU_XFER_ASYNC = 1 << 1,    /* queue the transfer on the ranks' job lists */
    DPU_XFER_PARALLEL = 1 << 2, /* allow the ranks to transfer in parallel */
} dpu_xfer_flags_t;

/** Options of a scatter-gather transfer (bit flags). */
typedef enum _dpu_sg_xfer_flags_t {
    DPU_SG_XFER_DEFAULT = 0,
    DPU_SG_XFER_ASYNC = 1 << 1,
    DPU_SG_XFER_DISABLE_LENGTH_CHECK = 1 << 2,
} dpu_sg_xfer_flags_t;

/** Options of dpu_callback (bit flags). */
typedef enum _dpu_callback_flags_t {
    DPU_CALLBACK_DEFAULT = 0,          /* synchronous, once per rank */
    DPU_CALLBACK_ASYNC = 1 << 0,       /* queued on the ranks' job lists */
    DPU_CALLBACK_NONBLOCKING = 1 << 1, /* does not block other calls on the ranks */
    DPU_CALLBACK_SINGLE_CALL = 1 << 2, /* called once with the whole set */
    DPU_CALLBACK_PARALLEL = 1 << 3,    /* ranks may run the callback concurrently */
} dpu_callback_flags_t;

/** Callback type of dpu_callback: (set or rank, rank index, user args). */
typedef dpu_error_t (*dpu_callback_fn_t)(struct dpu_set_t, uint32_t, void *);

/* ------------------------------------------------------------------------- */
/* Macros                                                                    */
/* ------------------------------------------------------------------------- */

/** Allocate every available DPU (dpu_alloc) or rank (dpu_alloc_ranks). */
#define DPU_ALLOCATE_ALL (UINT_MAX)

/** Name of the symbol marking the start of the free MRAM (the MRAM heap). */
#define DPU_MRAM_HEAP_POINTER_NAME "__sys_used_mram_end"

/**
 * Runs `statement` (a dpu_error_t expression); on error prints
 * `file:line(func): DPU Error (message)` on stderr and runs `on_error`.
 */
#define DPU_CHECK(statement, on_error)                                                       \
    do {                                                                                     \
        dpu_error_t _dpu_check_status = (statement);                                         \
        if (_dpu_check_status != DPU_OK) {                                                   \
            char *_dpu_check_msg = dpu_error_to_string(_dpu_check_status);                   \
            fprintf(stderr, "%s:%d(%s): DPU Error (%s)\n", __FILE__, __LINE__, __func__,     \
                _dpu_check_msg != NULL ? _dpu_check_msg : "unknown error");                  \
            free(_dpu_check_msg);                                                            \
            on_error;                                                                        \
        }                                                                                    \
    } while (0)

/** Like DPU_CHECK, exiting the process with status 1 on error. */
#define DPU_ASSERT(statement) DPU_CHECK(statement, exit(EXIT_FAILURE))

/* Internal helpers of the iteration macros. */
#define _DPU_CAT_(a, b) a##b
#define _DPU_CAT(a, b) _DPU_CAT_(a, b)
#ifdef __COUNTER__
#define _DPU_UNIQUE(prefix) _DPU_CAT(prefix, __COUNTER__)
#else
#define _DPU_UNIQUE(prefix) _DPU_CAT(prefix, __LINE__)
#endif
#define _DPU_FOREACH_PICK(_1, _2, _3, NAME, ...) NAME

/**
 * DPU_FOREACH(set, dpu) / DPU_FOREACH(set, dpu, i): loop over the DPUs of
 * `set` (a struct dpu_set_t lvalue: a whole set or one rank), in rank order;
 * `dpu` (struct dpu_set_t) receives each DPU, `i` the running index from 0.
 * A `break` leaves the loop; loops nest. As in the SDK, `i` and `dpu` are
 * assigned before the end test: after a complete loop, `i` is the number of
 * DPUs iterated.
 */
#define DPU_FOREACH(...)                                                                     \
    _DPU_FOREACH_PICK(__VA_ARGS__, _DPU_FOREACH_I, _DPU_FOREACH_X, _DPU_FOREACH_BAD)(__VA_ARGS__)
#define _DPU_FOREACH_X(set, dpu) _DPU_FOREACH_X_(set, dpu, _DPU_UNIQUE(_dpu_foreach_it_))
#define _DPU_FOREACH_X_(set, dpu, it)                                                        \
    for (struct dpu_set_dpu_iterator_t it = dpu_set_dpu_iterator_from(&(set));               \
         ((dpu) = it.next), it.has_next; dpu_set_dpu_iterator_next(&it))
#define _DPU_FOREACH_I(set, dpu, i) _DPU_FOREACH_I_(set, dpu, i, _DPU_UNIQUE(_dpu_foreach_it_))
#define _DPU_FOREACH_I_(set, dpu, i, it)                                                     \
    for (struct dpu_set_dpu_iterator_t it = dpu_set_dpu_iterator_from(&(set));               \
         ((i) = it.count), ((dpu) = it.next), it.has_next;                                   \
         dpu_set_dpu_iterator_next(&it))

/**
 * DPU_RANK_FOREACH(set, rank) / DPU_RANK_FOREACH(set, rank, i): loop over the
 * ranks of `set`; `rank` (struct dpu_set_t) is a one-rank set, usable with
 * DPU_FOREACH and every API function; `i` the running rank index from 0.
 */
#define DPU_RANK_FOREACH(...)                                                                \
    _DPU_FOREACH_PICK(__VA_ARGS__, _DPU_RANK_FOREACH_I, _DPU_RANK_FOREACH_X,                 \
        _DPU_FOREACH_BAD)(__VA_ARGS__)
#define _DPU_RANK_FOREACH_X(set, rank)                                                       \
    _DPU_RANK_FOREACH_X_(set, rank, _DPU_UNIQUE(_dpu_rank_foreach_it_))
#define _DPU_RANK_FOREACH_X_(set, rank, it)                                                  \
    for (struct dpu_set_rank_iterator_t it = dpu_set_rank_iterator_from(&(set));             \
         ((rank) = it.next), it.has_next; dpu_set_rank_iterator_next(&it))
#define _DPU_RANK_FOREACH_I(set, rank, i)                                                    \
    _DPU_RANK_FOREACH_I_(set, rank, i, _DPU_UNIQUE(_dpu_rank_foreach_it_))
#define _DPU_RANK_FOREACH_I_(set, rank, i, it)                                               \
    for (struct dpu_set_rank_iterator_t it = dpu_set_rank_iterator_from(&(set));             \
         ((i) = it.count), ((rank) = it.next), it.has_next;                                  \
         dpu_set_rank_iterator_next(&it))

/* Pointer-sized data directive for DPU_INCBIN. */
#if defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 4
#define _DPU_INCBIN_PTR ".long"
#else
#define _DPU_INCBIN_PTR ".quad"
#endif

/**
 * DPU_INCBIN(name, file): embeds the file `file` (a string literal, resolved
 * by the assembler relative to the compiler's working directory) in the host
 * binary and defines `struct dpu_incbin_t name` describing it (buffer, size,
 * path), for dpu_load_from_incbin. Use at file scope, once per name.
 */
#define DPU_INCBIN(name, file)                                                               \
    __asm__(".pushsection .rodata\n"                                                         \
            ".balign 8\n"                                                                    \
            "_dpu_incbin_data_" #name ":\n"                                                  \
            ".incbin \"" file "\"\n"                                                         \
            "_dpu_incbin_data_end_" #name ":\n"                                              \
            ".byte 0\n"                                                                      \
            "_dpu_incbin_path_" #name ":\n"                                                  \
            ".asciz \"" file "\"\n"                                                          \
            ".popsection\n"                                                                  \
            ".pushsection .data\n"                                                           \
            ".balign 8\n"                                                                    \
            ".globl " #name "\n"                                                             \
            #name ":\n"                                                                      \
            _DPU_INCBIN_PTR " _dpu_incbin_data_" #name "\n"                                  \
            _DPU_INCBIN_PTR " _dpu_incbin_data_end_" #name " - _dpu_incbin_data_" #name "\n" \
            _DPU_INCBIN_PTR " _dpu_incbin_path_" #name "\n"                                  \
            ".popsection\n");                                                                \
    extern struct dpu_incbin_t name;

/* ------------------------------------------------------------------------- */
/* Set iterators (public: used by the FOREACH macros)                        */
/* ------------------------------------------------------------------------- */

/** Iterator over the ranks of a set. `next` is the current rank while has_next. */
struct dpu_set_rank_iterator_t {
    struct dpu_set_t set;  /* the set iterated on (copy) */
    uint32_t count;        /* index of the current rank */
    bool has_next;         /* whether `next` is valid */
    struct dpu_set_t next; /* the current rank (a one-rank set) */
};

/** Iterator over the DPUs of a set. `next` is the current DPU while has_next. */
struct dpu_set_dpu_iterator_t {
    struct dpu_set_rank_iterator_t rank_iterator; /* position among the ranks */
    struct dpu_set_t rank;                        /* the rank being walked */
    uint32_t count;                               /* running index of the current DPU */
    bool has_next;                                /* whether `next` is valid */
    struct dpu_set_t next;                        /* the current DPU (kind DPU_SET_DPU) */
};

struct dpu_set_rank_iterator_t dpu_set_rank_iterator_from(struct dpu_set_t *set);
void dpu_set_rank_iterator_next(struct dpu_set_rank_iterator_t *iterator);
struct dpu_set_dpu_iterator_t dpu_set_dpu_iterator_from(struct dpu_set_t *set);
void dpu_set_dpu_iterator_next(struct dpu_set_dpu_iterator_t *iterator);

/* ------------------------------------------------------------------------- */
/* Allocation                                                                */
/* ------------------------------------------------------------------------- */

/** Allocates `nr_dpus` DPUs (DPU_ALLOCATE_ALL: all) with `profile` (NULL: default). */
dpu_error_t dpu_alloc(uint32_t nr_dpus, const char *profile, struct dpu_set_t *dpu_set);
/** Allocates `nr_ranks` whole ranks (DPU_ALLOCATE_ALL: all). */
dpu_error_t dpu_alloc_ranks(uint32_t nr_ranks, const char *profile, struct dpu_set_t *dpu_set);
/** Frees a set returned by dpu_alloc / dpu_alloc_ranks. */
dpu_error_t dpu_free(struct dpu_set_t dpu_set);
dpu_error_t dpu_get_nr_ranks(struct dpu_set_t dpu_set, uint32_t *nr_ranks);
dpu_error_t dpu_get_nr_dpus(struct dpu_set_t dpu_set, uint32_t *nr_dpus);

/* ------------------------------------------------------------------------- */
/* Programs                                                                  */
/* ------------------------------------------------------------------------- */

/** Loads the DPU program at `binary_path` on every DPU of the set. `program` may be NULL. */
dpu_error_t dpu_load(struct dpu_set_t dpu_set, const char *binary_path,
    struct dpu_program_t **program);
/** Loads a DPU program held in memory. */
dpu_error_t dpu_load_from_memory(struct dpu_set_t dpu_set, uint8_t *buffer, size_t buffer_size,
    struct dpu_program_t **program);
/** Loads a DPU program embedded with DPU_INCBIN. */
dpu_error_t dpu_load_from_incbin(struct dpu_set_t dpu_set, struct dpu_incbin_t *incbin,
    struct dpu_program_t **program);
/** Looks up a host-reachable symbol of a loaded program. */
dpu_error_t dpu_get_symbol(struct dpu_program_t *program, const char *symbol_name,
    struct dpu_symbol_t *symbol);

/* ------------------------------------------------------------------------- */
/* Execution                                                                 */
/* ------------------------------------------------------------------------- */

dpu_error_t dpu_launch(struct dpu_set_t dpu_set, dpu_launch_policy_t policy);
/** done: every DPU of the set has finished; fault: some DPU of the set is in fault. */
dpu_error_t dpu_status(struct dpu_set_t dpu_set, bool *done, bool *fault);
/** Waits for every queued operation and run of the set. */
dpu_error_t dpu_sync(struct dpu_set_t dpu_set);

/* ------------------------------------------------------------------------- */
/* Memory transfers                                                          */
/* ------------------------------------------------------------------------- */

/** Copies `length` bytes to the symbol of every DPU of the set. */
dpu_error_t dpu_copy_to(struct dpu_set_t dpu_set, const char *symbol_name, uint32_t symbol_offset,
    const void *src, size_t length);
/** Copies `length` bytes from the symbol of one DPU. */
dpu_error_t dpu_copy_from(struct dpu_set_t dpu_set, const char *symbol_name,
    uint32_t symbol_offset, void *dst, size_t length);
dpu_error_t dpu_copy_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
    uint32_t symbol_offset, const void *src, size_t length);
dpu_error_t dpu_copy_from_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
    uint32_t symbol_offset, void *dst, size_t length);

/** Sets the host buffer of every DPU of the set for the next dpu_push_xfer (NULL clears). */
dpu_error_t dpu_prepare_xfer(struct dpu_set_t dpu_set, void *buffer);
/** Transfers between the prepared buffers and the symbol of each DPU of the set. */
dpu_error_t dpu_push_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
    uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_push_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer,
    struct dpu_symbol_t symbol, uint32_t symbol_offset, size_t length, dpu_xfer_flags_t flags);

/** Copies the same `length` bytes to the symbol of every DPU of the set. */
dpu_error_t dpu_broadcast_to(struct dpu_set_t dpu_set, const char *symbol_name,
    uint32_t symbol_offset, const void *src, size_t length, dpu_xfer_flags_t flags);
dpu_error_t dpu_broadcast_to_symbol(struct dpu_set_t dpu_set, struct dpu_symbol_t symbol,
    uint32_t symbol_offset, const void *src, size_t length, dpu_xfer_flags_t flags);

/** One block of a scatter-gather transfer. */
struct sg_block_info {
    uint8_t *addr;   /* host address of the block */
    uint32_t length; /* bytes */
};

/** Fills `out` with block `block_index` of DPU `dpu_index`; false when there is no such block. */
typedef bool (*get_block_func_t)(struct sg_block_info *out, uint32_t dpu_index,
    uint32_t block_index, void *args);

/** The block function of a scatter-gather transfer and its arguments. */
typedef struct get_block_t {
    get_block_func_t f;
    void *args;
    size_t args_size;
} get_block_t;

dpu_error_t dpu_push_sg_xfer(struct dpu_set_t dpu_set, dpu_xfer_t xfer, const char *symbol_name,
    uint32_t symbol_offset, size_t length, get_block_t *get_block_info,
    dpu_sg_xfer_flags_t flags);
dpu_error_t dpu_push_sg_xfer_symbol(struct dpu_set_t dpu_set, dpu_xfer_t xfer,
    struct dpu_symbol_t symbol, uint32_t symbol_offset, size_t length,
    get_block_t *get_block_info, dpu_sg_xfer_flags_t flags);

/* ------------------------------------------------------------------------- */
/* Callbacks and logs                                                        */
/* ------------------------------------------------------------------------- */

/** Runs `callback(set_or_rank, rank_index, args)` (see dpu_callback_flags_t). */
dpu_error_t dpu_callback(struct dpu_set_t dpu_set,
    dpu_error_t (*callback)(struct dpu_set_t, uint32_t, void *), void *args,
    dpu_callback_flags_t flags);

/** Writes the printf output of the last run of one DPU (a single-DPU set) to `stream`. */
dpu_error_t dpu_log_read(struct dpu_set_t set, FILE *stream);

#ifdef __cplusplus
} /* extern "C" */

/* In C++ the flag enumerations do not convert from int: let `|` combine them. (C++ linkage
 * even when a program includes <dpu.h> inside its own extern "C" { }.) */
extern "C++" {
inline dpu_xfer_flags_t operator|(dpu_xfer_flags_t a, dpu_xfer_flags_t b)
{
    return static_cast<dpu_xfer_flags_t>(static_cast<int>(a) | static_cast<int>(b));
}
inline dpu_sg_xfer_flags_t operator|(dpu_sg_xfer_flags_t a, dpu_sg_xfer_flags_t b)
{
    return static_cast<dpu_sg_xfer_flags_t>(static_cast<int>(a) | static_cast<int>(b));
}
inline dpu_callback_flags_t operator|(dpu_callback_flags_t a, dpu_callback_flags_t b)
{
    return static_cast<dpu_callback_flags_t>(static_cast<int>(a) | static_cast<int>(b));
}
} /* extern "C++" */
#endif

#endif /* DPU_H */
