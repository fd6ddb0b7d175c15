/* OpenPIM — PID-Comm's support header (brought in by <pidcomm.h>).
 *
 * The element type T by a -D flag, as PID-Comm's programs expect: -DINT8, -DINT16, -DINT32
 * (the default of PID-Comm's relocation programs), -DINT64, and the unsigned -DUINT8,
 * -DUINT16, -DUINT32, -DUINT64; byte_dt is its size and DIV its log2. A program that
 * defines T itself (-DT=int32_t) keeps it. Also the relocation programs' argument block and
 * small wall-clock timers. */
#ifndef PIDCOMM_SUPPORT_H
#define PIDCOMM_SUPPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/time.h>

#if defined(INT8) || defined(UINT8)
#ifndef T
#ifdef UINT8
#define T uint8_t
#else
#define T int8_t
#endif
#endif
#define byte_dt 1
#define DIV 0
#elif defined(INT16) || defined(UINT16)
#ifndef T
#ifdef UINT16
#define T uint16_t
#else
#define T int16_t
#endif
#endif
#define byte_dt 2
#define DIV 1
#elif defined(INT64) || defined(UINT64)
#ifndef T
#ifdef UINT64
#define T uint64_t
#else
#define T int64_t
#endif
#endif
#define byte_dt 8
#define DIV 3
#elif defined(INT32) || defined(UINT32)
#ifndef T
#ifdef UINT32
#define T uint32_t
#else
#define T int32_t
#endif
#endif
#define byte_dt 4
#define DIV 2
#endif

/* The argument block of PID-Comm's relocation programs (programs that push it to their own
 * relocation kernels use this layout: 40 bytes). OpenPIM's collectives use their own. */
typedef struct {
    uint32_t start_offset;
    uint32_t target_offset;
    uint32_t total_data_size;
    uint32_t num_comm_dpu;
    uint32_t each_dpu;
    bool no_rotate;
    uint32_t num_row;
    uint32_t comm_type;
    uint32_t a_length;
    uint32_t num_comm_rg;
} dpu_arguments_comm_t;

/* Wall-clock timers, 12 slots (times in ms). */
typedef struct Timer {
    struct timeval startTime[12];
    struct timeval stopTime[12];
    double time[12];
} Timer;

static inline void resetTimer(Timer *timer, int i) { timer->time[i] = 0.0; }

static inline void startTimer(Timer *timer, int i) { gettimeofday(&timer->startTime[i], NULL); }

static inline void stopTimer(Timer *timer, int i)
{
    gettimeofday(&timer->stopTime[i], NULL);
    timer->time[i] += (double)(timer->stopTime[i].tv_sec - timer->startTime[i].tv_sec) * 1000.0 +
                      (double)(timer->stopTime[i].tv_usec - timer->startTime[i].tv_usec) / 1000.0;
}

static inline void printTimer(Timer *timer, int i) { printf("Time (ms): %f\t", timer->time[i]); }

#endif /* PIDCOMM_SUPPORT_H */
