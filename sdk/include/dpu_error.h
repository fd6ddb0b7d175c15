/* OpenPIM — UPMEM SDK compatible host API: error codes.
 * Written for OpenPIM; values are part of the C ABI mirrored by libdpu. */
#ifndef DPU_ERROR_H
#define DPU_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Status returned by every host API function. Sequential from 0 (DPU_OK);
 * DPU_ERR_ASYNC_JOBS is a flag value. Do not reorder: libdpu mirrors these.
 */
typedef enum _dpu_error_t {
    DPU_OK = 0,
    DPU_ERR_INTERNAL,                 /* 1 */
    DPU_ERR_SYSTEM,                   /* 2 */
    DPU_ERR_DRIVER,                   /* 3 */
    DPU_ERR_ALLOCATION,               /* 4 */
    DPU_ERR_INVALID_DPU_SET,          /* 5 */
    DPU_ERR_INVALID_THREAD_ID,        /* 6 */
    DPU_ERR_INVALID_NOTIFY_ID,        /* 7 */
    DPU_ERR_INVALID_WRAM_ACCESS,      /* 8 */
    DPU_ERR_INVALID_IRAM_ACCESS,      /* 9 */
    DPU_ERR_INVALID_MRAM_ACCESS,      /* 10 */
    DPU_ERR_INVALID_SYMBOL_ACCESS,    /* 11 */
    DPU_ERR_MRAM_BUSY,                /* 12 */
    DPU_ERR_TRANSFER_ALREADY_SET,     /* 13 */
    DPU_ERR_NO_PROGRAM_LOADED,        /* 14 */
    DPU_ERR_DIFFERENT_DPU_PROGRAMS,   /* 15 */
    DPU_ERR_CORRUPTED_MEMORY,         /* 16 */
    DPU_ERR_DPU_DISABLED,             /* 17 */
    DPU_ERR_DPU_ALREADY_RUNNING,      /* 18 */
    DPU_ERR_INVALID_MEMORY_TRANSFER,  /* 19 */
    DPU_ERR_INVALID_LAUNCH_POLICY,    /* 20 */
    DPU_ERR_DPU_FAULT,                /* 21 */
    DPU_ERR_ELF_INVALID_FILE,         /* 22 */
    DPU_ERR_ELF_NO_SUCH_FILE,         /* 23 */
    DPU_ERR_ELF_NO_SUCH_SECTION,      /* 24 */
    DPU_ERR_TIMEOUT,                  /* 25 */
    DPU_ERR_INVALID_PROFILE,          /* 26 */
    DPU_ERR_UNKNOWN_SYMBOL,           /* 27 */
    DPU_ERR_LOG_FORMAT,               /* 28 */
    DPU_ERR_LOG_CONTEXT_MISSING,      /* 29 */
    DPU_ERR_LOG_BUFFER_TOO_SMALL,     /* 30 */
    DPU_ERR_VPD_INVALID_FILE,         /* 31 */
    DPU_ERR_VPD_NO_REPAIR,            /* 32 */
    DPU_ERR_NO_THREAD_PER_RANK,       /* 33 */
    DPU_ERR_INVALID_BUFFER_SIZE,      /* 34 */
    DPU_ERR_NONBLOCKING_SYNC_CALLBACK,/* 35 */
    DPU_ERR_TOO_MANY_TASKLETS,        /* 36 */
    DPU_ERR_SG_TOO_MANY_BLOCKS,       /* 37 */
    DPU_ERR_SG_LENGTH_MISMATCH,       /* 38 */
    DPU_ERR_SG_NOT_ACTIVATED,         /* 39 */
    DPU_ERR_SG_NOT_MRAM_SYMBOL,       /* 40 */
    DPU_ERR_ASYNC_JOBS = 1U << 31
} dpu_error_t;

/**
 * Human-readable description of a status. The returned string is allocated
 * with malloc() and must be released with free() by the caller.
 */
char *dpu_error_to_string(dpu_error_t status);

#ifdef __cplusplus
}
#endif

#endif /* DPU_ERROR_H */
