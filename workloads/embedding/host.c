/* Embedding lookup on PIM: the tables partitioned over DPUs (row-, column-, table-wise, or
 * the hybrids C-R and T-R), one batch of pooled lookups, the partial sums reduced on the
 * host (or by the PID-Comm collectives along the row blocks: --exchange pidcomm|interconnect),
 * optionally the DLRM's MLPs on the host (--mlp). Checked against the CPU.
 *
 *   ./bin/host --part row --dpus 64 --rows 131072 --dim 64 --pooling 32 [--type fp] ...
 *   ./bin/host --help
 *
 * Everything a batch needs is prepared before the first SDK call (the run's timeline starts
 * there); --setup-only stops after the tables are in MRAM, so that a study can subtract the
 * one-time setup (allocation, loading, table transfer) from a run. */
#include <dpu.h>
#include <libgen.h>
#if defined(__has_include)
#if __has_include(<pidcomm.h>)
#include <pidcomm.h> /* OpenPIM's (and PID-Comm's) collectives: --exchange pidcomm */
#define EMB_HAVE_PIDCOMM 1
#endif
#endif
#ifndef EMB_HAVE_PIDCOMM
#define EMB_HAVE_PIDCOMM 0
#endif

#include "emb.h"

struct emb_params {
    uint32_t nt, nr, ncp, batch, is_fp;
    uint32_t queries_off, index_off, out_off;
};

#define MAX_COLS 128
#define MRAM_BUDGET (60u << 20) /* of 64 MiB: the rest for the program's own MRAM data */

static void usage(void)
{
    printf("usage: host [--part row|col|table|cr|tr] [--dpus N] [--tables T] [--rows H] [--dim D]\n"
           "            [--batch B] [--pooling P] [--biased X] [--type int|fp] [--tasklets N]\n"
           "            [--col-blocks C] [--table-groups G] [--seed S] [--mlp] [--setup-only]\n"
           "            [--exchange host|pidcomm|interconnect] [--dump FILE]\n"
           "  --biased X: X of the P lookups of every sample hit the first 1/64 of the table (x:y skew)\n"
           "  --exchange pidcomm: the row blocks' partial sums reduced by pidcomm_reduce (to the host)\n"
           "            instead of read back and summed by the host; interconnect: by\n"
           "            pidcomm_reduce_scatter among the row blocks (over the links of a profile with\n"
           "            [links]), then each DPU's 1/R of the sums read back. Both need --type int, whole\n"
           "            ranks (--dpus a multiple of 64) and a supported shape of row blocks R (a multiple\n"
           "            of 8, or 2 or 4 with R x column blocks >= 8)\n");
}

int main(int argc, char **argv)
{
    struct study_opts o;
    study_opts_init(&o, argc, argv);
    if (study_opt_flag(&o, "help")) {
        usage();
        return 0;
    }
    struct emb_cfg c;
    emb_parse(&c, &o);
    int setup_only = study_opt_flag(&o, "setup-only");
    const char *exchange = study_opt_str(&o, "exchange", "host");
    const char *dump = study_opt_str(&o, "dump", NULL);
    study_opts_check(&o);
    enum study_exchange path = study_exchange_path(exchange, EMB_HAVE_PIDCOMM);
    int scatter = path == STUDY_EXCHANGE_INTERCONNECT;
    int collective = path != STUDY_EXCHANGE_HOST;

    uint32_t G = c.groups, C = c.col_blocks, R = c.row_blocks, D = c.dpus, B = c.batch;
    if (collective) {
        /* The reduction runs along the row blocks: PID-Comm's x axis (the fastest-varying
         * coordinate of the layout d = (g * C + cb) * R + rb), in groups of R DPUs. */
        const char *why = c.is_fp                        ? "reduces integers (--type int): PID-Comm has no float sum"
            : R < 2                                      ? "reduces the partial sums of row blocks (--part row, cr or tr)"
            : D % 64                                     ? "needs whole ranks (--dpus a multiple of 64)"
            : !(R % 8 == 0 || ((R == 2 || R == 4) && R * C >= 8)) ? "needs row blocks a multiple of 8, or 2 or 4 with row x column blocks >= 8"
                                                                  : NULL;
        if (why) {
            fprintf(stderr, "error: --exchange %s %s (here --part %s, --type %s, %u DPUs: %u row blocks x %u column blocks x %u groups)\n",
                exchange, why, c.part_name, c.is_fp ? "fp" : "int", D, R, C, G);
            return 2;
        }
    }
    /* nr rounds up: the last row block may be shorter (its shard is padded, never read) */
    uint32_t nt = c.tables / G, nr = (c.rows + R - 1) / R, nc = c.dim / C, ncp = nc + (nc & 1);
    if (ncp > MAX_COLS) {
        fprintf(stderr, "error: %u columns per DPU; the kernel holds at most %u (use more column blocks)\n",
            nc, MAX_COLS);
        return 2;
    }
    uint64_t shard_bytes = (uint64_t)nt * nr * ncp * 4;
    uint32_t items = nt * B;

    /* The lookups, their reference result and every DPU's share, before the first SDK call. */
    uint32_t *idx = emb_lookups(&c);
    size_t out_words = (size_t)c.tables * B * c.dim;
    uint32_t *ref = (uint32_t *)study_xcalloc(out_words, 4, "reference output");
    for (uint32_t t = 0; t < c.tables; t++)
        for (uint32_t b = 0; b < B; b++) {
            const uint32_t *rows = &idx[((size_t)t * B + b) * c.pooling];
            uint32_t *dst = &ref[((size_t)t * B + b) * c.dim];
            for (uint32_t k = 0; k < c.pooling; k++)
                for (uint32_t d = 0; d < c.dim; d++) {
                    int32_t v = emb_value(t, rows[k], d);
                    if (c.is_fp) {
                        float f;
                        memcpy(&f, &dst[d], 4);
                        f += (float)v / 8.0f;
                        memcpy(&dst[d], &f, 4);
                    } else
                        dst[d] += (uint32_t)v;
                }
        }

    /* Per DPU (g, cb, rb), index d = (g * C + cb) * R + rb: its local rows per item. */
    uint32_t *counts = (uint32_t *)study_xcalloc((size_t)D * items, 4, "query counts");
    for (uint32_t t = 0; t < c.tables; t++)
        for (uint32_t b = 0; b < B; b++)
            for (uint32_t k = 0; k < c.pooling; k++) {
                uint32_t row = idx[((size_t)t * B + b) * c.pooling + k];
                uint32_t g = t / nt, rb = row / nr, item = (t % nt) * B + b;
                for (uint32_t cb = 0; cb < C; cb++)
                    counts[(size_t)((g * C + cb) * R + rb) * items + item]++;
            }
    uint32_t max_idx = 0;
    for (uint32_t d = 0; d < D; d++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < items; i++)
            n += counts[(size_t)d * items + i];
        if (n > max_idx)
            max_idx = n;
    }
    max_idx += max_idx & 1;
    struct emb_params prm = { nt, nr, ncp, B, c.is_fp, 0, 0, 0 };
    prm.queries_off = (uint32_t)shard_bytes;
    prm.index_off = prm.queries_off + items * 8;
    prm.out_off = prm.index_off + max_idx * 4;
    /* The collective's regions follow the output: pidcomm_reduce's scratch (buffer_offset), or
     * the reduce-scatter's target then its scratch. */
    uint32_t sum_bytes = items * ncp * 4, chunk = R ? sum_bytes / R : 0;
    if (scatter && sum_bytes % (8 * R)) {
        fprintf(stderr, "error: --exchange %s cuts each group's %u bytes of sums into %u chunks of whole 8-byte "
                        "words: use a batch x tables x columns that is a multiple of %u\n",
            exchange, sum_bytes, R, 2 * R);
        return 2;
    }
    uint64_t mram_need = (uint64_t)prm.out_off + (uint64_t)sum_bytes * (collective ? (scatter ? 3 : 2) : 1);
    if (shard_bytes > MRAM_BUDGET || mram_need > MRAM_BUDGET) {
        fprintf(stderr, "error: each DPU would need %.1f MiB of MRAM (tables %.1f MiB + queries + output), "
                        "more than %u MiB: use more DPUs or smaller tables\n",
            mram_need / 1048576.0, shard_bytes / 1048576.0, MRAM_BUDGET >> 20);
        return 2;
    }
    uint32_t q_words = items * 2 + max_idx;
    uint32_t *queries = (uint32_t *)study_xcalloc((size_t)D * q_words, 4, "per-DPU queries");
    for (uint32_t d = 0; d < D; d++) {
        uint32_t *q = &queries[(size_t)d * q_words], pos = 0;
        for (uint32_t i = 0; i < items; i++) {
            q[2 * i] = pos;
            q[2 * i + 1] = 0; /* filled below */
            pos += counts[(size_t)d * items + i];
        }
    }
    for (uint32_t t = 0; t < c.tables; t++)
        for (uint32_t b = 0; b < B; b++)
            for (uint32_t k = 0; k < c.pooling; k++) {
                uint32_t row = idx[((size_t)t * B + b) * c.pooling + k];
                uint32_t g = t / nt, rb = row / nr, item = (t % nt) * B + b;
                for (uint32_t cb = 0; cb < C; cb++) {
                    uint32_t *q = &queries[(size_t)((g * C + cb) * R + rb) * q_words];
                    q[items * 2 + q[2 * item] + q[2 * item + 1]++] = row % nr;
                }
            }
    uint32_t *shards = (uint32_t *)study_xcalloc((size_t)D * (shard_bytes / 4), 4, "table shards");
    for (uint32_t d = 0; d < D; d++) {
        uint32_t g = d / (C * R), cb = (d / R) % C, rb = d % R;
        uint32_t *s = &shards[(size_t)d * (shard_bytes / 4)];
        for (uint32_t lt = 0; lt < nt; lt++)
            for (uint32_t r = 0; r < nr && rb * nr + r < c.rows; r++)
                for (uint32_t j = 0; j < nc; j++) {
                    int32_t v = emb_value(g * nt + lt, rb * nr + r, cb * nc + j);
                    uint32_t w = (uint32_t)v;
                    if (c.is_fp) {
                        float f = (float)v / 8.0f;
                        memcpy(&w, &f, 4);
                    }
                    s[((size_t)lt * nr + r) * ncp + j] = w;
                }
    }
    uint32_t *partial = (uint32_t *)study_xcalloc((size_t)D * items * ncp, 4, "partial sums");
    uint32_t *out = (uint32_t *)study_xcalloc(out_words, 4, "pooled output");
    struct emb_mlp mlp;
    if (c.mlp)
        emb_mlp_init(&mlp, &c);

    /* Setup: allocation, program, tables (once per model; not part of a batch). */
    char prog[4096];
    snprintf(prog, sizeof(prog), "%s/emb_dpu_%u", dirname(strdup(argv[0])), c.tasklets);
    struct dpu_set_t set, dpu;
    uint32_t each;
    DPU_ASSERT(dpu_alloc(D, NULL, &set));
    DPU_ASSERT(dpu_load(set, prog, NULL));
    /* DPU d of the layout: the set's order, or the collectives' logical order (entangled groups). */
    struct dpu_set_t *dpus = (struct dpu_set_t *)study_xcalloc(D, sizeof(struct dpu_set_t), "DPU handles");
#if EMB_HAVE_PIDCOMM
    uint32_t axes[3] = { R, C, G };
    hypercube_manager *cube = NULL;
    if (collective) {
        cube = init_hypercube_manager(set, 3, axes);
        DPU_FOREACH_ENTANGLED_GROUP(set, dpu, each, D) { dpus[each] = dpu; }
    } else
#endif
        DPU_FOREACH(set, dpu, each) { dpus[each] = dpu; }
    for (each = 0; each < D; each++)
        DPU_ASSERT(dpu_prepare_xfer(dpus[each], &shards[(size_t)each * (shard_bytes / 4)]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, shard_bytes, DPU_XFER_DEFAULT));
    if (setup_only) {
        DPU_ASSERT(dpu_free(set));
        printf("setup only: %u DPUs, %.1f MiB of tables\n", D, (double)shard_bytes * D / 1048576.0);
        return 0;
    }

    /* One batch. */
    struct study_phases ph = { 0 };
    uint64_t t0 = study_now_ns();
    DPU_ASSERT(dpu_broadcast_to(set, "params", 0, &prm, sizeof(prm), DPU_XFER_DEFAULT));
    for (each = 0; each < D; each++)
        DPU_ASSERT(dpu_prepare_xfer(dpus[each], &queries[(size_t)each * q_words]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, prm.queries_off,
        (size_t)q_words * 4, DPU_XFER_DEFAULT));
    uint64_t t1 = study_now_ns();
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    uint64_t t2 = study_now_ns(), t_read = 0; /* t_read: when the reduce-scatter's read-back began */
#if EMB_HAVE_PIDCOMM
    if (collective && !scatter) {
        /* Row blocks reduced by the collective: group (g, cb)'s sum lands in partial[g * C + cb]. */
        void **sums = (void **)study_xcalloc((size_t)C * G, sizeof(void *), "reduce buffers");
        for (uint32_t gi = 0; gi < C * G; gi++)
            sums[gi] = &partial[(size_t)gi * items * ncp];
        STUDY_INTERDPU_BEGIN();
        pidcomm_reduce(cube, "100", sum_bytes, prm.out_off, sum_bytes, 4, sums);
        STUDY_INTERDPU_END();
        free(sums);
    } else if (scatter) {
        /* Reduce-scatter among the row blocks (row block rb keeps chunk rb of its group's sum),
         * then each DPU's chunk read back: group (g, cb)'s sum lands in partial[g * C + cb]. */
        STUDY_INTERDPU_BEGIN();
        pidcomm_reduce_scatter(cube, "100", sum_bytes, prm.out_off, prm.out_off + sum_bytes, 2 * sum_bytes, 4);
        STUDY_INTERDPU_END();
        t_read = study_now_ns();
        for (each = 0; each < D; each++)
            DPU_ASSERT(dpu_prepare_xfer(dpus[each], (uint8_t *)partial + (size_t)(each / R) * sum_bytes +
                                                        (size_t)(each % R) * chunk));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, prm.out_off + sum_bytes, chunk,
            DPU_XFER_DEFAULT));
    } else
#endif
    {
        for (each = 0; each < D; each++)
            DPU_ASSERT(dpu_prepare_xfer(dpus[each], &partial[(size_t)each * items * ncp]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, prm.out_off,
            (size_t)items * ncp * 4, DPU_XFER_DEFAULT));
    }
    uint64_t t3 = study_now_ns();
    /* Host reduction: partial sums of the row blocks added (already summed by the collective:
     * one vector per group), column blocks placed. */
    for (uint32_t d = 0; d < (collective ? C * G : D); d++) {
        uint32_t g = collective ? d / C : d / (C * R), cb = collective ? d % C : (d / R) % C;
        const uint32_t *p = &partial[(size_t)d * items * ncp];
        for (uint32_t i = 0; i < items; i++) {
            uint32_t t = g * nt + i / B, b = i % B;
            uint32_t *dst = &out[((size_t)t * B + b) * c.dim + cb * nc];
            const uint32_t *src = &p[(size_t)i * ncp];
            if (c.is_fp) {
                float *fd = (float *)dst;
                const float *fs = (const float *)src;
                for (uint32_t j = 0; j < nc; j++)
                    fd[j] += fs[j];
            } else
                for (uint32_t j = 0; j < nc; j++)
                    dst[j] += src[j];
        }
    }
    uint64_t t4 = study_now_ns();
    ph.cpu_dpu = t1 - t0, ph.kernel = t2 - t1, ph.host = t4 - t3;
    if (scatter)
        ph.inter_dpu = t_read - t2, ph.dpu_cpu = t3 - t_read;
    else if (collective)
        ph.inter_dpu = t3 - t2;
    else
        ph.dpu_cpu = t3 - t2;
    double score = 0;
    uint64_t mlp_ns = 0;
    if (c.mlp) {
        float *pooled = emb_pooled_float(&c, out);
        uint64_t m0 = study_now_ns();
        score = emb_mlps(&mlp, &c, pooled);
        mlp_ns = study_now_ns() - m0;
        free(pooled);
    }
    DPU_ASSERT(dpu_free(set));

    size_t bad = 0;
    for (size_t i = 0; i < out_words; i++)
        if (out[i] != ref[i]) {
            if (bad < 3)
                fprintf(stderr, "mismatch at table %zu sample %zu column %zu: got 0x%08x expected 0x%08x\n",
                    i / ((size_t)B * c.dim), (i / c.dim) % B, i % c.dim, out[i], ref[i]);
            bad++;
        }
    printf("embedding: part %s (%u groups x %u column blocks x %u row blocks) dpus %u tables %u rows %u dim %u "
           "batch %u pooling %u biased %u type %s tasklets %u exchange %s\n",
        c.part_name, G, C, R, D, c.tables, c.rows, c.dim, B, c.pooling, c.biased, c.is_fp ? "fp" : "int",
        c.tasklets, exchange);
    study_print_phases("embedding", "host reduction", &ph);
    if (c.mlp)
        printf("host MLPs (ms): %.3f, score sum %.6f\n", mlp_ns / 1e6, score);
    printf("checksum 0x%016" PRIx64 "\n", emb_checksum(&c, out));
    if (dump) { /* the pooled output, for checks outside C (tests/workloads: NumPy) */
        FILE *f = fopen(dump, "wb");
        if (!f || fwrite(out, 4, out_words, f) != out_words || fclose(f) != 0) {
            fprintf(stderr, "error: cannot write --dump %s\n", dump);
            return 2;
        }
    }
    printf("%s embedding (%zu of %zu values differ from the CPU reference)\n", bad ? "FAIL" : "OK", bad,
        out_words);
    return bad ? 1 : 0;
}
