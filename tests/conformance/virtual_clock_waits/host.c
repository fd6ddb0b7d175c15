/* Absolute deadlines on the virtual clock: after a launch whose emulation takes far longer
 * than its modeled time (so the virtual clocks run far behind the real ones), a deadline
 * computed from a virtual reading + 100 ms is waited for 100 ms of virtual time by
 * clock_nanosleep(TIMER_ABSTIME) on CLOCK_MONOTONIC and CLOCK_REALTIME, pthread_cond_timedwait
 * and sem_timedwait (which time out, ETIMEDOUT) - not returned from at once, as a deadline
 * taken for a real time would be. Kernel: ../virtual_clock/task.c. */
#define _GNU_SOURCE
#include <dpu.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000LL
static int failures;

static int64_t now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static int64_t raw_now(clockid_t c)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static struct timespec at(int64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
    return ts;
}
static void check(const char *what, int64_t waited)
{
    int ok = waited >= 100 * MS && waited < 150 * MS;
    printf("  %s %s: waited %.1f ms of the program's time (expected 100 ms)\n", ok ? "ok  " : "FAIL", what,
        (double)waited / 1e6);
    failures += !ok;
}

int main(void)
{
    struct dpu_set_t set;
    uint32_t iterations = 16000;
    DPU_ASSERT(dpu_alloc(64, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_spin", NULL));
    DPU_ASSERT(dpu_broadcast_to(set, "iterations", 0, &iterations, sizeof(iterations), DPU_XFER_DEFAULT));
    /* (launch until the emulation has put the virtual clocks 150 ms behind the real ones) */
    int64_t behind = 0;
    for (int launches = 0; launches < 100 && behind < 150 * MS; launches++) {
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        behind = raw_now(CLOCK_MONOTONIC) - now(CLOCK_MONOTONIC);
    }
    printf("the virtual clock is %.1f ms behind the real one after the launches\n", (double)behind / 1e6);
    if (behind < 150 * MS) {
        printf("  FAIL the launch's emulation was too quick to test deadlines\n");
        return 1;
    }

    clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME };
    const char *names[] = { "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)",
        "clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME)" };
    for (int i = 0; i < 2; i++) {
        int64_t start = now(clocks[i]);
        struct timespec deadline = at(start + 100 * MS);
        int rc = clock_nanosleep(clocks[i], TIMER_ABSTIME, &deadline, NULL);
        check(names[i], rc == 0 ? now(clocks[i]) - start : -1);
    }

    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    int64_t start = now(CLOCK_REALTIME);
    struct timespec deadline = at(start + 100 * MS);
    int rc = 0;
    while (rc != ETIMEDOUT && rc != EINVAL)
        rc = pthread_cond_timedwait(&c, &m, &deadline);
    pthread_mutex_unlock(&m);
    check("pthread_cond_timedwait (ETIMEDOUT)", rc == ETIMEDOUT ? now(CLOCK_REALTIME) - start : -1);

    sem_t s;
    sem_init(&s, 0, 0);
    start = now(CLOCK_REALTIME);
    deadline = at(start + 100 * MS);
    int r;
    while ((r = sem_timedwait(&s, &deadline)) == -1 && errno == EINTR)
        ;
    check("sem_timedwait (ETIMEDOUT)", r == -1 && errno == ETIMEDOUT ? now(CLOCK_REALTIME) - start : -1);
    sem_destroy(&s);

    DPU_ASSERT(dpu_free(set));
    printf("%s absolute deadlines on the virtual clock\n", failures ? "FAIL" : "OK");
    return failures != 0;
}
