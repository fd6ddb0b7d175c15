/* Shared helpers of the scalability-study workloads (host side, plain C11).
 *
 * - a deterministic random generator (the same inputs in the PIM host program and in the
 *   CPU baseline, so their results can be compared by checksum);
 * - the phase timers every host program prints (CPU-DPU, kernel, inter-DPU, DPU-CPU, host
 *   reduction): on OpenPIM the clocks are virtual, on a real server they are real;
 * - the inter-DPU region markers: OpenPIM's <openpim.h> when the SDK provides it, nothing
 *   otherwise (a real UPMEM SDK has no such header, and the program builds unchanged);
 * - a small option parser that rejects unknown options with the list of valid ones.
 */
#ifndef WORKLOADS_STUDY_H
#define WORKLOADS_STUDY_H

#define _GNU_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<openpim.h>)
#include <openpim.h>
#define STUDY_HAVE_INTERDPU_MARKERS 1
#endif
#endif

#ifdef STUDY_HAVE_INTERDPU_MARKERS
#define STUDY_INTERDPU_BEGIN() openpim_interdpu_begin()
#define STUDY_INTERDPU_END() openpim_interdpu_end()
#else
#define STUDY_INTERDPU_BEGIN() ((void)0)
#define STUDY_INTERDPU_END() ((void)0)
#endif

/* splitmix64: a fast generator whose stream depends only on the seed. */
static inline uint64_t study_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A uniform integer in [0, n). */
static inline uint32_t study_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(((study_next(s) >> 32) * (uint64_t)n) >> 32);
}

/* A value that depends only on its coordinates (tables are never stored whole by the host). */
static inline uint64_t study_hash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t s = a * 0x100000001B3ull ^ (b << 21) ^ (c << 42) ^ c;
    return study_next(&s);
}

/* FNV-1a over bytes: the checksum both the PIM run and the CPU baseline print. */
static inline uint64_t study_fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}
#define STUDY_FNV_INIT 0xCBF29CE484222325ull

static inline uint64_t study_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The phases of a run, as the paper splits them. */
struct study_phases {
    uint64_t cpu_dpu, kernel, inter_dpu, dpu_cpu, host;
};

static inline void study_print_phases(const char *name, const char *host_label, const struct study_phases *p)
{
    uint64_t total = p->cpu_dpu + p->kernel + p->inter_dpu + p->dpu_cpu + p->host;
    printf("%s phases (ms): CPU-DPU %.3f | kernel %.3f | inter-DPU %.3f | DPU-CPU %.3f | "
           "%s %.3f | total %.3f\n",
        name, p->cpu_dpu / 1e6, p->kernel / 1e6, p->inter_dpu / 1e6, p->dpu_cpu / 1e6,
        host_label, p->host / 1e6, total / 1e6);
}

/* How a program's inter-DPU exchange goes (--exchange): through the host, through the PID-Comm
 * collectives, or through them over what-if links (a hardware profile with [links]). */
enum study_exchange { STUDY_EXCHANGE_HOST, STUDY_EXCHANGE_PIDCOMM, STUDY_EXCHANGE_INTERCONNECT };

/* Parses --exchange's value; an unknown one, or a collective when the SDK has no <pidcomm.h>
 * (have_pidcomm 0), exits with status 2 and a message naming it. */
static inline enum study_exchange study_exchange_path(const char *exchange, int have_pidcomm)
{
    enum study_exchange e = STUDY_EXCHANGE_HOST;
    if (strcmp(exchange, "pidcomm") == 0)
        e = STUDY_EXCHANGE_PIDCOMM;
    else if (strcmp(exchange, "interconnect") == 0)
        e = STUDY_EXCHANGE_INTERCONNECT;
    else if (strcmp(exchange, "host") != 0) {
        fprintf(stderr, "error: --exchange must be host, pidcomm or interconnect, got '%s'\n", exchange);
        exit(2);
    }
    if (e != STUDY_EXCHANGE_HOST && !have_pidcomm) {
        fprintf(stderr, "error: --exchange %s needs <pidcomm.h>, which this SDK does not have\n", exchange);
        exit(2);
    }
    return e;
}

/* Options: "--name value" pairs. study_opt_* fetch a value; study_opts_check fails on any
 * option no study_opt_* asked for, naming it and the valid ones. */
struct study_opts {
    int argc;
    char **argv;
    char used[256];
    char valid[2048];
};

static inline void study_opts_init(struct study_opts *o, int argc, char **argv)
{
    memset(o, 0, sizeof(*o));
    o->argc = argc < 256 ? argc : 256;
    o->argv = argv;
}

static inline void study_opts_note(struct study_opts *o, const char *name)
{
    size_t n = strlen(o->valid);
    snprintf(o->valid + n, sizeof(o->valid) - n, "%s--%s", n ? ", " : "", name);
}

static inline const char *study_opt_str(struct study_opts *o, const char *name, const char *dflt)
{
    study_opts_note(o, name);
    for (int i = 1; i < o->argc; i++) {
        if (strncmp(o->argv[i], "--", 2) == 0 && strcmp(o->argv[i] + 2, name) == 0) {
            o->used[i] = 1;
            if (i + 1 >= o->argc) {
                fprintf(stderr, "error: option --%s needs a value\n", name);
                exit(2);
            }
            o->used[i + 1] = 1;
            return o->argv[i + 1];
        }
    }
    return dflt;
}

static inline int study_opt_flag(struct study_opts *o, const char *name)
{
    study_opts_note(o, name);
    for (int i = 1; i < o->argc; i++)
        if (strncmp(o->argv[i], "--", 2) == 0 && strcmp(o->argv[i] + 2, name) == 0) {
            o->used[i] = 1;
            return 1;
        }
    return 0;
}

static inline uint64_t study_opt_u64(struct study_opts *o, const char *name, uint64_t dflt)
{
    const char *s = study_opt_str(o, name, NULL);
    if (!s)
        return dflt;
    char *end;
    unsigned long long v = strtoull(s, &end, 0);
    if (*s == '-' || *end != '\0') {
        fprintf(stderr, "error: --%s wants a non-negative integer, got '%s'\n", name, s);
        exit(2);
    }
    return v;
}

static inline void study_opts_check(struct study_opts *o)
{
    for (int i = 1; i < o->argc; i++)
        if (!o->used[i]) {
            fprintf(stderr, "error: unknown option '%s'; valid options: %s\n", o->argv[i],
                o->valid);
            exit(2);
        }
}

static inline void *study_xcalloc(size_t n, size_t size, const char *what)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "error: out of host memory for %s (%zu x %zu bytes): use smaller sizes\n",
            what, n, size);
        exit(2);
    }
    return p;
}

#endif
