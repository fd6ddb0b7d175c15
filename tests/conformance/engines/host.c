/* The DPU engines: the translating engine (jit) and the interpreter (interp) compute the same.
 *   - a kernel of register work, multiplications, DMA, a mutex and barriers runs on each engine
 *     (profile key engine=jit and engine=interp, in one process): results equal to the CPU
 *     reference, and the same cycle count (the DPU's own performance counter) on both;
 *   - OPENPIM_ENGINE wins over the profile key (the run report names the engine that ran);
 *   - OPENPIM_ENGINE=bogus makes dpu_alloc fail with DPU_ERR_SYSTEM; engine=bogus in the
 *     profile is refused as a bad profile (DPU_ERR_INVALID_PROFILE).
 */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR_DPUS 4
#define WORDS_PER_TASKLET 256
#define WORDS (NR_TASKLETS * WORDS_PER_TASKLET)
#define ROUNDS 3

static int failures;
#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "FAIL: " __VA_ARGS__);                                               \
            fprintf(stderr, "\n");                                                               \
            failures++;                                                                          \
        }                                                                                        \
    } while (0)

static uint32_t input[NR_DPUS][WORDS];

/* The kernel's result for one DPU, on the CPU. */
static void reference(const uint32_t *in, uint32_t *out, uint32_t *sum)
{
    /* (Every round reads the input from MRAM again; the output is the last round's.) */
    static uint32_t words[WORDS];
    *sum = 0;
    for (unsigned t = 0; t < NR_TASKLETS; t++) {
        uint32_t acc = 0;
        for (uint32_t r = 0; r < ROUNDS; r++) {
            for (unsigned i = 0; i < WORDS_PER_TASKLET; i++) {
                uint32_t x = in[t * WORDS_PER_TASKLET + i] ^ (r * 0x9e3779b9u);
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x = x * 2654435761u + (i % 64);
                words[t * WORDS_PER_TASKLET + i] = x;
                acc += x >> 7;
            }
            /* (The shared sum gets each round's running total.) */
            *sum += acc;
        }
    }
    memcpy(out, words, sizeof(words));
}

/* Runs the kernel with `profile`; returns the cycles of DPU 0 (every DPU checked). */
static uint64_t run_kernel(const char *profile, const char *what)
{
    struct dpu_set_t set, dpu;
    uint32_t i = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, profile, &set));
    DPU_ASSERT(dpu_load(set, "bin/dpu_engines", NULL));
    uint32_t rounds = ROUNDS;
    DPU_ASSERT(dpu_broadcast_to(set, "rounds", 0, &rounds, sizeof(rounds), DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i)
    {
        DPU_ASSERT(dpu_prepare_xfer(dpu, input[i]));
    }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "input", 0, sizeof(input[0]), DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    uint64_t first = 0;
    DPU_FOREACH(set, dpu, i)
    {
        static uint32_t out[WORDS], want[WORDS];
        uint32_t sum = 0, want_sum = 0;
        uint64_t cycles = 0;
        DPU_ASSERT(dpu_copy_from(dpu, "output", 0, out, sizeof(out)));
        DPU_ASSERT(dpu_copy_from(dpu, "sum", 0, &sum, sizeof(sum)));
        DPU_ASSERT(dpu_copy_from(dpu, "cycles", 0, &cycles, sizeof(cycles)));
        reference(input[i], want, &want_sum);
        CHECK(!memcmp(out, want, sizeof(out)), "%s: DPU %u's output differs from the CPU's", what, i);
        CHECK(sum == want_sum, "%s: DPU %u's sum %u, the CPU's %u", what, i, sum, want_sum);
        CHECK(cycles > 0, "%s: DPU %u counted no cycles", what, i);
        if (i == 0)
            first = cycles;
    }
    DPU_ASSERT(dpu_free(set));
    return first;
}

/* Runs this program as `mode` with OPENPIM_ENGINE=env (NULL: unset); returns its status. */
static int child(const char *exe, const char *mode, const char *env, const char *report)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        if (env)
            setenv("OPENPIM_ENGINE", env, 1);
        else
            unsetenv("OPENPIM_ENGINE");
        if (report)
            setenv("OPENPIM_REPORT", report, 1);
        execl(exe, exe, mode, (char *)NULL);
        perror(exe);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Whether the JSON report at `path` names engine `name`. */
static int report_names(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = 0;
    /* The report's top-level "engine": {"name": "...", ...} (the last "engine" key). */
    const char *e = NULL;
    for (const char *p = text; (p = strstr(p, "\"engine\"")) != NULL; p++)
        e = p;
    const char *v = e ? strstr(e, "\"name\"") : NULL;
    if (!v)
        return 0;
    v = strchr(v + 6, '"');
    return v && !strncmp(v + 1, name, strlen(name)) && v[1 + strlen(name)] == '"';
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "main";
    for (unsigned d = 0; d < NR_DPUS; d++)
        for (unsigned w = 0; w < WORDS; w++)
            input[d][w] = (d + 1) * 0x01000193u ^ (w * 0x9e3779b1u);

    if (!strcmp(mode, "badenv")) {
        struct dpu_set_t set;
        dpu_error_t st = dpu_alloc(1, NULL, &set);
        CHECK(st == DPU_ERR_SYSTEM, "OPENPIM_ENGINE=%s: dpu_alloc gave %d, not DPU_ERR_SYSTEM",
            getenv("OPENPIM_ENGINE"), (int)st);
        if (st == DPU_OK)
            dpu_free(set);
        return failures ? 1 : 0;
    }
    if (!strcmp(mode, "profile-jit")) {
        /* (OPENPIM_ENGINE, set by the parent, wins over this key.) */
        run_kernel("engine=jit", "engine=jit under OPENPIM_ENGINE");
        return failures ? 1 : 0;
    }

    unsetenv("OPENPIM_ENGINE");
    uint64_t jit = run_kernel("engine=jit", "engine=jit");
    uint64_t interp = run_kernel("engine=interp", "engine=interp");
    uint64_t plain = run_kernel(NULL, "the default engine");
    CHECK(jit == interp && jit == plain, "cycles differ: jit %llu, interp %llu, default %llu",
        (unsigned long long)jit, (unsigned long long)interp, (unsigned long long)plain);
    printf("kernel: %llu cycles on both engines\n", (unsigned long long)jit);

    /* A bad profile value. */
    struct dpu_set_t set;
    dpu_error_t st = dpu_alloc(1, "engine=bogus", &set);
    CHECK(st == DPU_ERR_INVALID_PROFILE, "engine=bogus: dpu_alloc gave %d, not DPU_ERR_INVALID_PROFILE",
        (int)st);
    if (st == DPU_OK)
        dpu_free(set);

    /* The environment: a bad value fails dpu_alloc; a good one wins over the profile key. */
    CHECK(child(argv[0], "badenv", "bogus", NULL) == 0, "a bad OPENPIM_ENGINE does not fail dpu_alloc");
    char report[] = "/tmp/openpim-engines-XXXXXX";
    int fd = mkstemp(report);
    if (fd >= 0)
        close(fd);
    CHECK(child(argv[0], "profile-jit", "interp", report) == 0, "the run under OPENPIM_ENGINE=interp failed");
    if (getenv("OPENPIM_SERVER") || getenv("OPENPIM_MPI"))
        /* (Through the rank-manager daemon or MPI workers, their engines run the DPUs, and the
         * program's report has no engine section.) */
        printf("engine choice of a remote run: not checked here\n");
    else
        CHECK(report_names(report, "interp"), "OPENPIM_ENGINE=interp did not win over engine=jit (report %s)",
            report);
    unlink(report);

    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("engines: OK\n");
    return 0;
}
