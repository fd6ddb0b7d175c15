/* libopenpim_vclock.so: the host program's clocks on OpenPIM's virtual timeline.
 *
 * `dpu-pkg-config --libs dpu` links it into UPMEM host programs after libdpu. It defines
 * clock_gettime, gettimeofday, time, clock and timespec_get under the symbol version
 * OPENPIM_VCLOCK_1 (vclock.map): the program's own calls bind to these at link time, while
 * libdpu.so and every other library keep the C library's (their references carry GLIBC_x
 * versions, which a definition of another version does not satisfy), so the emulator never
 * measures itself in virtual time.
 *
 * Each function asks libdpu's openpim_virtual_clock for the virtual reading (real host time
 * plus modeled device time, see crates/runtime/src/host_clock.rs) and falls back to the C
 * library's function, found with dlsym(RTLD_NEXT), when it answers 0: CPU-time clocks,
 * OPENPIM_CLOCK=real, before the first SDK call, or a libdpu without a virtual clock. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

/* In libdpu.so (weak: a libdpu without it means real clocks). */
extern int openpim_virtual_clock(clockid_t clock, struct timespec *ts) __attribute__((weak));

/* The C library's function `name`, looked up once. */
#define REAL(type, name)                                                          \
    static type real_##name(void)                                                 \
    {                                                                             \
        static type fn;                                                           \
        type f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);                          \
        if (!f) {                                                                 \
            f = (type)dlsym(RTLD_NEXT, #name);                                    \
            __atomic_store_n(&fn, f, __ATOMIC_RELEASE);                           \
        }                                                                         \
        return f;                                                                 \
    }

typedef int (*clock_gettime_t)(clockid_t, struct timespec *);
typedef int (*gettimeofday_t)(struct timeval *, void *);
typedef time_t (*time_t_fn)(time_t *);
typedef clock_t (*clock_fn)(void);
typedef int (*timespec_get_t)(struct timespec *, int);

REAL(clock_gettime_t, clock_gettime)
REAL(gettimeofday_t, gettimeofday)
REAL(time_t_fn, time)
REAL(clock_fn, clock)
REAL(timespec_get_t, timespec_get)

static int sys_clock_gettime(clockid_t clock, struct timespec *ts)
{
    clock_gettime_t f = real_clock_gettime();
    if (f)
        return f(clock, ts);
    return (int)syscall(SYS_clock_gettime, clock, ts);
}

/* `p`, hidden from the compiler: the C library declares these pointer arguments nonnull, so
 * the compiler would drop the NULL checks that programs passing NULL (as the C library
 * tolerates) need. */
static inline void *opaque(void *p)
{
    __asm__("" : "+r"(p));
    return p;
}

/* Set while this thread is inside openpim_virtual_clock. A tool that intercepts the C
 * library's clock functions for the whole process (AddressSanitizer does) sends libdpu's own
 * clock readings here too, with its "real" function being this library's (the next
 * definition after it): libdpu reading the time inside openpim_virtual_clock must then get
 * the real clock, not recurse until the stack overflows (found by tests/sanitizers/run.sh). */
static __thread int inside_virtual_clock;

/* The virtual reading of `clock` into *ts: 1, or 0 for the real clock. */
static int virtual_clock(clockid_t clock, struct timespec *ts)
{
    if (!openpim_virtual_clock || inside_virtual_clock)
        return 0;
    inside_virtual_clock = 1;
    int r = openpim_virtual_clock(clock, ts);
    inside_virtual_clock = 0;
    return r;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    ts = opaque(ts);
    /* CPU-time clocks (and dynamic CPU clocks, which are negative) stay real. */
    if (ts && clock >= 0 && clock != CLOCK_PROCESS_CPUTIME_ID && clock != CLOCK_THREAD_CPUTIME_ID
        && virtual_clock(clock, ts))
        return 0;
    return sys_clock_gettime(clock, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    struct timespec ts;
    tv = opaque(tv);
    if (tv && virtual_clock(CLOCK_REALTIME, &ts)) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
        /* The time zone (obsolete) is the C library's. */
        if (tz) {
            struct timeval real;
            gettimeofday_t f = real_gettimeofday();
            if (f)
                return f(&real, tz);
        }
        return 0;
    }
    gettimeofday_t f = real_gettimeofday();
    if (f)
        return f(tv, tz);
    if (!tv)
        return 0;
    if (sys_clock_gettime(CLOCK_REALTIME, &ts))
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    time_t now;
    if (virtual_clock(CLOCK_REALTIME, &ts)) {
        now = ts.tv_sec;
    } else {
        time_t_fn f = real_time();
        if (f)
            return f(t);
        if (sys_clock_gettime(CLOCK_REALTIME, &ts))
            return (time_t)-1;
        now = ts.tv_sec;
    }
    if (t)
        *t = now;
    return now;
}

/* clock(): the process CPU time at the first SDK call plus the virtual time since (as a
 * single-threaded host program's, whose SDK polls the DPUs during launches). */
clock_t clock(void)
{
    struct timespec ts;
    if (!virtual_clock(CLOCK_PROCESS_CPUTIME_ID, &ts)) {
        clock_fn f = real_clock();
        if (f)
            return f();
        if (sys_clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
            return (clock_t)-1;
    }
    return (clock_t)ts.tv_sec * CLOCKS_PER_SEC
        + (clock_t)(ts.tv_nsec / (1000000000 / CLOCKS_PER_SEC));
}

int timespec_get(struct timespec *ts, int base)
{
    ts = opaque(ts);
    if (ts && base == TIME_UTC && virtual_clock(CLOCK_REALTIME, ts))
        return base;
    timespec_get_t f = real_timespec_get();
    if (f)
        return f(ts, base);
    if (!ts || base != TIME_UTC || sys_clock_gettime(CLOCK_REALTIME, ts))
        return 0;
    return base;
}

/* ---- clocks read inside other libraries, under those libraries' symbol versions ----------
 * A C++ program's std::chrono::steady_clock / system_clock (high_resolution_clock is
 * system_clock) calls libstdc++'s now(), and an OpenMP program's omp_get_wtime is libgomp's:
 * they bind to GLIBCXX_3.4.19 / OMP_2.0 versions, which this library (linked before libstdc++
 * and libgomp) defines too, so the program's calls land here. Outside a program linked with
 * this library nothing changes. */

/* Nanoseconds of `clock`, virtual when the virtual clock is on. */
static int64_t nanoseconds(clockid_t clock)
{
    struct timespec ts;
    if (!virtual_clock(clock, &ts) && sys_clock_gettime(clock, &ts))
        return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* std::chrono::_V2::steady_clock::now() and system_clock::now(): a time_point is one int64_t
 * of nanoseconds, returned as that integer. */
int64_t openpim_chrono_steady_now(void) __asm__("_ZNSt6chrono3_V212steady_clock3nowEv");
int64_t openpim_chrono_steady_now(void)
{
    return nanoseconds(CLOCK_MONOTONIC);
}
int64_t openpim_chrono_system_now(void) __asm__("_ZNSt6chrono3_V212system_clock3nowEv");
int64_t openpim_chrono_system_now(void)
{
    return nanoseconds(CLOCK_REALTIME);
}

/* omp_get_wtime(): seconds of the monotonic clock, as libgomp's. */
double omp_get_wtime(void);
double omp_get_wtime(void)
{
    return (double)nanoseconds(CLOCK_MONOTONIC) / 1e9;
}

/* ---- absolute deadlines ------------------------------------------------------------------
 * A deadline a program computes from a virtual reading is a virtual time: the wait is given
 * the real deadline as far away as the virtual one is from the virtual now. (The virtual
 * clocks are the real ones shifted by one offset, so the distance is the same on every clock.) */

/* The virtual clock's offset from the real one (ns), or 0 and false for the real clock. */
static int virtual_offset(int64_t *offset)
{
    struct timespec v, r;
    if (!virtual_clock(CLOCK_MONOTONIC, &v) || sys_clock_gettime(CLOCK_MONOTONIC, &r))
        return 0;
    *offset = ((int64_t)v.tv_sec - r.tv_sec) * 1000000000 + (v.tv_nsec - r.tv_nsec);
    return 1;
}

/* `deadline` moved from the virtual timeline to the real one, into *out; `deadline` itself when
 * the clock is real. */
static const struct timespec *real_deadline(const struct timespec *deadline, struct timespec *out)
{
    int64_t offset;
    if (!deadline || !virtual_offset(&offset))
        return deadline;
    int64_t ns = (int64_t)deadline->tv_sec * 1000000000 + deadline->tv_nsec - offset;
    if (ns < 0)
        ns = 0;
    out->tv_sec = (time_t)(ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
    return out;
}

typedef int (*clock_nanosleep_t)(clockid_t, int, const struct timespec *, struct timespec *);
typedef int (*cond_timedwait_t)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*sem_timedwait_t)(sem_t *, const struct timespec *);
REAL(clock_nanosleep_t, clock_nanosleep)
REAL(cond_timedwait_t, pthread_cond_timedwait)
REAL(sem_timedwait_t, sem_timedwait)

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request, struct timespec *remain)
{
    struct timespec moved;
    if ((flags & TIMER_ABSTIME) && clock >= 0 && clock != CLOCK_PROCESS_CPUTIME_ID
        && clock != CLOCK_THREAD_CPUTIME_ID)
        request = real_deadline(request, &moved);
    clock_nanosleep_t f = real_clock_nanosleep();
    if (f)
        return f(clock, flags, request, remain);
    return (int)syscall(SYS_clock_nanosleep, clock, flags, request, remain) == 0 ? 0 : errno;
}

int pthread_cond_timedwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex,
    const struct timespec *restrict deadline)
{
    struct timespec moved;
    cond_timedwait_t f = real_pthread_cond_timedwait();
    if (!f)
        return ENOSYS;
    return f(cond, mutex, real_deadline(opaque((void *)deadline), &moved));
}

int sem_timedwait(sem_t *restrict sem, const struct timespec *restrict deadline)
{
    struct timespec moved;
    sem_timedwait_t f = real_sem_timedwait();
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    return f(sem, real_deadline(opaque((void *)deadline), &moved));
}
