/* printf formats: the DPU log, read with dpu_log_read into a tmpfile and with
 * dpulog_read_for_dpu into a memstream, must equal the text the host's own
 * snprintf produces for the same calls. Two launches: the log holds only the
 * last run. */
#define _GNU_SOURCE
#include <dpu.h>
#include <dpu_log.h>
#include <dpu_management.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cases.h"

#define NR_TASKLETS 4

static char expected[8192];
static size_t exp_len;

#define HOST_P(...) (exp_len += (size_t)snprintf(expected + exp_len, sizeof(expected) - exp_len, __VA_ARGS__))

static void build_expected(const struct print_values *v, uint32_t run)
{
    exp_len = 0;
    HOST_P("run %u\n", run);
    PRINT_CASES(HOST_P, *v);
    HOST_P("puts adds a newline\n");
    HOST_P("<>\n");
    for (int t = 0; t < NR_TASKLETS; t++)
        HOST_P("tasklet %u of %d\n", (unsigned)t, NR_TASKLETS);
}

static int compare(const char *what, const char *got, size_t got_len)
{
    if (got_len == exp_len && memcmp(got, expected, exp_len) == 0)
        return 0;
    printf("%s: log differs from the expected text\n--- expected (%zu bytes)\n%s--- got (%zu bytes)\n%.*s---\n",
        what, exp_len, expected, got_len, (int)got_len, got);
    return 1;
}

int main(void)
{
    struct dpu_set_t set, dpu;
    int bad = 0;
    /* 10 DPUs: the tenth is member 1 of the second slice (8 DPUs a slice) */
    DPU_ASSERT(dpu_alloc(10, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_printf", NULL));
    struct print_values v[2];
    memset(v, 0, sizeof(v));
    v[0].ull = 0xfedcba9876543210ull;
    v[0].ll = -1234567890123ll;
    v[0].d = 3.14159265358979;
    v[0].i = 123456;
    v[0].u = 3000000000u;
    v[0].f = 2.5f;
    v[0].c = 'Z';
    strcpy(v[0].s, "pim");
    v[1].ull = 42;
    v[1].ll = 9007199254740993ll;
    v[1].d = -0.000123456;
    v[1].i = -98765;
    v[1].u = 0xbeef;
    v[1].f = -1.0f / 3.0f;
    v[1].c = '#';
    strcpy(v[1].s, "hello, world!!");

    for (uint32_t run = 0; run < 2; run++) {
        DPU_ASSERT(dpu_copy_to(set, "values", 0, &v[run], sizeof(v[run])));
        DPU_ASSERT(dpu_copy_to(set, "run_id", 0, &run, sizeof(run)));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        build_expected(&v[run], run);
        uint32_t each;
        DPU_FOREACH(set, dpu, each) {
            uint32_t size;
            DPU_ASSERT(dpu_copy_from(dpu, "values_size", 0, &size, 4));
            if (size != sizeof(struct print_values)) {
                printf("struct layout differs: DPU %u bytes, host %zu bytes\n", size, sizeof(struct print_values));
                bad = 1;
            }
            /* dpu_log_read: a header line "=== DPU#0x... ===" then the log (as the SDK) */
            FILE *f = tmpfile();
            DPU_ASSERT(dpu_log_read(dpu, f));
            long len = ftell(f);
            rewind(f);
            char *text = calloc(1, (size_t)len + 1);
            if (fread(text, 1, (size_t)len, f) != (size_t)len)
                bad = 1;
            fclose(f);
            /* the header names the DPU's full id as dpu_get_id forms it (rank id << 16 |
             * slice << 8 | member; rank id = target type 3 (hw) << 12 | rank index) */
            char header[64];
            snprintf(header, sizeof(header), "=== DPU#0x%x ===\n", dpu_get_id(dpu.dpu));
            uint32_t sdk_id = (3u << 28) | ((each / 8) << 8) | (each % 8);
            if (dpu_get_id(dpu.dpu) != sdk_id) {
                printf("dpu_get_id of DPU %u: 0x%x, expected 0x%x\n", each, dpu_get_id(dpu.dpu), sdk_id);
                bad = 1;
            }
            const char *body = text;
            if (strncmp(text, header, strlen(header)) == 0) {
                body = text + strlen(header);
            } else {
                printf("dpu_log_read of DPU %u: header line is not '%.*s' (got '%.*s')\n", each,
                    (int)strlen(header) - 1, header, (int)(strchr(text, '\n') ? strchr(text, '\n') - text : 0), text);
                bad = 1;
            }
            bad |= compare("dpu_log_read", body, (size_t)len - (size_t)(body - text));
            free(text);

            /* dpulog_read_for_dpu: the log alone */
            char *mem = NULL;
            size_t mem_len = 0;
            FILE *m = open_memstream(&mem, &mem_len);
            DPU_ASSERT(dpulog_read_for_dpu(dpu.dpu, m));
            fclose(m);
            bad |= compare("dpulog_read_for_dpu", mem, mem_len);
            free(mem);
        }
    }
    DPU_ASSERT(dpu_free(set));
    printf("%s printf\n", bad ? "FAIL" : "OK");
    return bad;
}
