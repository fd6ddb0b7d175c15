/* Embedding lookup (DLRM-style), the part shared by the PIM host program and the CPU
 * baseline: the configuration and its options, the table contents, the lookups (with the
 * paper's x:y skew), the pooled reference, the partitioning geometry and the host MLPs.
 *
 * Values: entry (t, row, col) of table t is a small integer in [-16, 16] (INT32), or that
 * integer / 8 (FP32). Every pooled sum of such floats is exact in FP32 (|sum| <= 16 * P with
 * a 1/8 step needs far fewer than 24 bits for P <= 4096), so the DPU's summation order gives
 * bit-identical results to the CPU's and both can be compared by checksum. */
#ifndef WORKLOADS_EMB_H
#define WORKLOADS_EMB_H

#include "../common/study.h"

enum emb_part { PART_ROW, PART_COL, PART_TABLE, PART_CR, PART_TR };

struct emb_cfg {
    uint32_t tables, rows, dim, batch, pooling, biased, dpus, tasklets, is_fp;
    uint32_t groups, col_blocks, row_blocks; /* DPU grid: groups x col_blocks x row_blocks */
    enum emb_part part;
    const char *part_name;
    uint64_t seed;
    int mlp; /* end-to-end DLRM: bottom and top MLPs on the host */
};

static inline const char *emb_part_names(void) { return "row, col, table, cr, tr"; }

/* Reads the options shared by both programs (the DPU grid only matters for PIM). */
static inline void emb_parse(struct emb_cfg *c, struct study_opts *o)
{
    memset(c, 0, sizeof(*c));
    c->tables = (uint32_t)study_opt_u64(o, "tables", 1);
    c->rows = (uint32_t)study_opt_u64(o, "rows", 1024);
    c->dim = (uint32_t)study_opt_u64(o, "dim", 64);
    c->batch = (uint32_t)study_opt_u64(o, "batch", 512);
    c->pooling = (uint32_t)study_opt_u64(o, "pooling", 16);
    c->biased = (uint32_t)study_opt_u64(o, "biased", 0);
    c->dpus = (uint32_t)study_opt_u64(o, "dpus", 1);
    c->tasklets = (uint32_t)study_opt_u64(o, "tasklets", 24);
    c->seed = study_opt_u64(o, "seed", 1);
    c->mlp = study_opt_flag(o, "mlp");
    const char *type = study_opt_str(o, "type", "int");
    if (strcmp(type, "int") == 0)
        c->is_fp = 0;
    else if (strcmp(type, "fp") == 0)
        c->is_fp = 1;
    else {
        fprintf(stderr, "error: --type must be int or fp, got '%s'\n", type);
        exit(2);
    }
    c->part_name = study_opt_str(o, "part", "row");
    uint32_t cb = (uint32_t)study_opt_u64(o, "col-blocks", 0);
    uint32_t tg = (uint32_t)study_opt_u64(o, "table-groups", 0);
    if (!c->tables || !c->rows || !c->dim || !c->batch || !c->pooling || !c->dpus) {
        fprintf(stderr, "error: --tables, --rows, --dim, --batch, --pooling and --dpus must be > 0\n");
        exit(2);
    }
    if (c->biased > c->pooling) {
        fprintf(stderr, "error: --biased %u is more than --pooling %u (x of x:y counts lookups of the pooling group)\n",
            c->biased, c->pooling);
        exit(2);
    }
    if (c->tasklets < 1 || c->tasklets > 24) {
        fprintf(stderr, "error: --tasklets must be 1..24, got %u\n", c->tasklets);
        exit(2);
    }
    const char *p = c->part_name;
    c->groups = c->col_blocks = c->row_blocks = 1;
    if (strcmp(p, "row") == 0) {
        c->part = PART_ROW;
        c->row_blocks = c->dpus;
    } else if (strcmp(p, "col") == 0) {
        c->part = PART_COL;
        c->col_blocks = c->dpus;
    } else if (strcmp(p, "table") == 0) {
        c->part = PART_TABLE;
        c->groups = c->dpus;
    } else if (strcmp(p, "cr") == 0) {
        c->part = PART_CR;
        c->col_blocks = cb ? cb : (c->dpus < c->dim ? c->dpus : c->dim);
        if (c->dpus % c->col_blocks) {
            fprintf(stderr, "error: --part cr: --dpus %u is not a multiple of --col-blocks %u\n",
                c->dpus, c->col_blocks);
            exit(2);
        }
        c->row_blocks = c->dpus / c->col_blocks;
    } else if (strcmp(p, "tr") == 0) {
        c->part = PART_TR;
        c->groups = tg ? tg : (c->dpus < c->tables ? c->dpus : c->tables);
        if (c->dpus % c->groups) {
            fprintf(stderr, "error: --part tr: --dpus %u is not a multiple of --table-groups %u\n",
                c->dpus, c->groups);
            exit(2);
        }
        c->row_blocks = c->dpus / c->groups;
    } else {
        fprintf(stderr, "error: --part must be one of %s, got '%s'\n", emb_part_names(), p);
        exit(2);
    }
    if (c->tables % c->groups) {
        fprintf(stderr, "error: --part %s: %u tables cannot be split evenly into %u table groups (use a divisor of --tables)\n",
            p, c->tables, c->groups);
        exit(2);
    }
    if (c->dim % c->col_blocks) {
        fprintf(stderr, "error: --part %s: dim %u cannot be split into %u column blocks (column-wise scales to at most dim DPUs: use cr)\n",
            p, c->dim, c->col_blocks);
        exit(2);
    }
    if (c->row_blocks > c->rows) {
        fprintf(stderr, "error: --part %s: %u row blocks for %u rows (use fewer DPUs or more rows)\n", p,
            c->row_blocks, c->rows);
        exit(2);
    }
}

/* Entry (t, row, col) as the integer the INT32 table holds (the FP32 table holds it / 8). */
static inline int32_t emb_value(uint32_t t, uint32_t row, uint32_t col)
{
    return (int32_t)(study_hash3(t, row, col) % 33) - 16;
}

/* The rows of the lookups: for every table t and sample b, `pooling` rows; the first
 * `biased` of them fall in the hot range (the first 1/64 of the table: one DPU's rows under
 * row-wise partitioning at 64 DPUs), the others anywhere. idx[(t * batch + b) * pooling + k]. */
static inline uint32_t *emb_lookups(const struct emb_cfg *c)
{
    size_t n = (size_t)c->tables * c->batch * c->pooling;
    uint32_t *idx = (uint32_t *)study_xcalloc(n, sizeof(uint32_t), "lookup indices");
    uint32_t hot = c->rows / 64 ? c->rows / 64 : 1;
    uint64_t s = c->seed;
    for (size_t i = 0; i < n; i++) {
        uint32_t k = (uint32_t)(i % c->pooling);
        idx[i] = study_below(&s, k < c->biased ? hot : c->rows);
    }
    return idx;
}

/* Pooled output out[(t * batch + b) * dim + d] as 32-bit words (int32 or float bits). */
static inline uint64_t emb_checksum(const struct emb_cfg *c, const uint32_t *out)
{
    return study_fnv(STUDY_FNV_INIT, out, (size_t)c->tables * c->batch * c->dim * 4);
}

/* Dense layers of the end-to-end DLRM, on the host (FP32). Bottom MLP: 13 dense features
 * -> 256 -> 64 -> dim; top MLP on [bottom output, pooled embeddings]: -> 256 -> 64 -> 1.
 * Weights are deterministic and built once (emb_mlp_init, before any timing); the result is
 * one score per sample. */
#define EMB_DENSE 13
#define EMB_LAYERS 6
struct emb_mlp {
    uint32_t n_in[EMB_LAYERS], n_out[EMB_LAYERS];
    float *w[EMB_LAYERS];
    float *dense;
};

static inline void emb_mlp_init(struct emb_mlp *m, const struct emb_cfg *c)
{
    uint32_t D = c->dim;
    uint32_t in[EMB_LAYERS] = { EMB_DENSE, 256, 64, D + c->tables * D, 256, 64 };
    uint32_t out[EMB_LAYERS] = { 256, 64, D, 256, 64, 1 };
    for (uint32_t l = 0; l < EMB_LAYERS; l++) {
        m->n_in[l] = in[l], m->n_out[l] = out[l];
        m->w[l] = (float *)study_xcalloc((size_t)in[l] * out[l], 4, "MLP weights");
        for (uint32_t j = 0; j < out[l]; j++)
            for (uint32_t i = 0; i < in[l]; i++)
                m->w[l][(size_t)j * in[l] + i] = (float)((int32_t)(study_hash3(100 + l, j, i) % 17) - 8) / 64.0f;
    }
    m->dense = (float *)study_xcalloc((size_t)c->batch * EMB_DENSE, 4, "dense features");
    for (uint32_t i = 0; i < c->batch * EMB_DENSE; i++)
        m->dense[i] = (float)(study_hash3(7, i, c->seed) % 100) / 100.0f;
}

static inline void emb_layer(const struct emb_mlp *m, uint32_t l, const float *in, float *out,
    uint32_t batch, int relu)
{
    uint32_t n_in = m->n_in[l], n_out = m->n_out[l];
#pragma omp parallel for schedule(static)
    for (uint32_t b = 0; b < batch; b++)
        for (uint32_t j = 0; j < n_out; j++) {
            const float *w = &m->w[l][(size_t)j * n_in];
            float acc = 0.0f;
            for (uint32_t i = 0; i < n_in; i++)
                acc += w[i] * in[(size_t)b * n_in + i];
            out[(size_t)b * n_out + j] = relu && acc < 0.0f ? 0.0f : acc;
        }
}

/* Runs both MLPs for the batch; `pooled` holds the embeddings as float (converted by the
 * caller for INT32 tables). Returns the sum of the scores (printed, compared). */
static inline double emb_mlps(const struct emb_mlp *m, const struct emb_cfg *c, const float *pooled)
{
    uint32_t B = c->batch, D = c->dim, T = c->tables, top_in = D + T * D;
    float *h1 = (float *)study_xcalloc((size_t)B * 256, 4, "MLP activations");
    float *h2 = (float *)study_xcalloc((size_t)B * 64, 4, "MLP activations");
    float *bot = (float *)study_xcalloc((size_t)B * D, 4, "MLP activations");
    float *cat = (float *)study_xcalloc((size_t)B * top_in, 4, "MLP activations");
    float *score = (float *)study_xcalloc(B, 4, "MLP scores");
    emb_layer(m, 0, m->dense, h1, B, 1);
    emb_layer(m, 1, h1, h2, B, 1);
    emb_layer(m, 2, h2, bot, B, 1);
    for (uint32_t b = 0; b < B; b++) {
        memcpy(cat + (size_t)b * top_in, bot + (size_t)b * D, D * 4);
        for (uint32_t t = 0; t < T; t++)
            memcpy(cat + (size_t)b * top_in + D + t * D, pooled + ((size_t)t * B + b) * D, D * 4);
    }
    emb_layer(m, 3, cat, h1, B, 1);
    emb_layer(m, 4, h1, h2, B, 1);
    emb_layer(m, 5, h2, score, B, 0);
    double sum = 0;
    for (uint32_t b = 0; b < B; b++)
        sum += score[b];
    free(h1), free(h2), free(bot), free(cat), free(score);
    return sum;
}

static inline float *emb_pooled_float(const struct emb_cfg *c, const uint32_t *out)
{
    size_t n = (size_t)c->tables * c->batch * c->dim;
    float *f = (float *)study_xcalloc(n, 4, "pooled embeddings");
    for (size_t i = 0; i < n; i++) {
        if (c->is_fp)
            memcpy(&f[i], &out[i], 4);
        else
            f[i] = (float)(int32_t)out[i];
    }
    return f;
}

#endif
