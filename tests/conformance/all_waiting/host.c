/* A launch where every tasklet waits (a barrier one tasklet never reaches, a semaphore never
 * given). As on the DPU, it stops issuing and the launch completes (DPU_OK, the DPU done):
 * what the tasklets wrote before the wait is there, nothing after it; the report advises
 * (all_tasklets_waiting, naming the DPU, the tasklets and barrier_wait / sem_take). With the
 * profile key strictSync=true it is a DPU fault (DPU_ERR_DPU_FAULT). */
#define _POSIX_C_SOURCE 200809L
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_TASKLETS 4

static int failures;
static void check(const char *what, int ok)
{
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok)
        failures++;
}

/* Launches mode `mode` under `profile`; returns the launch's code and reads the results. */
static dpu_error_t launch(const char *profile, uint32_t mode, uint32_t *before, uint32_t *after, bool *done)
{
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(1, profile, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_task", NULL));
    DPU_ASSERT(dpu_copy_to(set, "mode", 0, &mode, sizeof(mode)));
    dpu_error_t e = dpu_launch(set, DPU_SYNCHRONOUS);
    DPU_FOREACH(set, dpu) {
        bool fault = false;
        *done = false;
        DPU_ASSERT(dpu_status(dpu, done, &fault));
        DPU_ASSERT(dpu_copy_from(dpu, "before", 0, before, NR_TASKLETS * 4));
        DPU_ASSERT(dpu_copy_from(dpu, "after", 0, after, NR_TASKLETS * 4));
    }
    DPU_ASSERT(dpu_free(set));
    return e;
}

int main(int argc, char **argv)
{
    uint32_t before[NR_TASKLETS], after[NR_TASKLETS];
    bool done;
    if (argc == 2) { /* the child run that writes a report */
        launch("", (uint32_t)atoi(argv[1]), before, after, &done);
        return 0;
    }
    static const char *const names[] = { "barrier one tasklet never reaches", "semaphore never given" };
    for (uint32_t mode = 0; mode < 2; mode++) {
        char what[200];
        printf("%s:\n", names[mode]);
        dpu_error_t e = launch("", mode, before, after, &done);
        snprintf(what, sizeof(what), "the launch completes (code %d) and the DPU is done", (int)e);
        check(what, e == DPU_OK && done);
        int before_ok = 1, after_ok = 1;
        for (uint32_t t = 0; t < NR_TASKLETS; t++) {
            before_ok &= before[t] == 10 + t;
            after_ok &= after[t] == 0;
        }
        check("every tasklet's write before the wait is there, none after it", before_ok && after_ok);
        e = launch("strictSync=true", mode, before, after, &done);
        snprintf(what, sizeof(what), "under strictSync=true it is a DPU fault (code %d)", (int)e);
        check(what, e == DPU_ERR_DPU_FAULT);

        /* The report's advice, from a child run of this program. */
        char cmd[300], path[] = "/tmp/openpim-all-waiting-XXXXXX";
        int fd = mkstemp(path);
        if (fd >= 0)
            fclose(fdopen(fd, "w"));
        snprintf(cmd, sizeof(cmd), "OPENPIM_REPORT=%s OPENPIM_QUIET=1 %s %u >/dev/null 2>&1", path, argv[0], mode);
        int rc = system(cmd);
        FILE *f = fopen(path, "r");
        static char json[1 << 20];
        size_t n = f ? fread(json, 1, sizeof(json) - 1, f) : 0;
        json[n] = 0;
        if (f)
            fclose(f);
        remove(path);
        const char *advice = strstr(json, "all_tasklets_waiting");
        const char *where = mode == 0 ? "tasklet(s) 0, 1, 2 in barrier_wait" : "tasklet(s) 0, 1, 2, 3 in sem_take";
        snprintf(what, sizeof(what), "the report advises all_tasklets_waiting naming \"%s\"", where);
        check(what, rc == 0 && advice != NULL && strstr(json, where) != NULL);
    }
    printf("%s all tasklets waiting\n", failures ? "FAIL" : "OK");
    return failures != 0;
}
