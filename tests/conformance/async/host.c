#define _DEFAULT_SOURCE
/* Asynchronous operation on 2 ranks (dpu_alloc_ranks): per rank, with
 * DPU_RANK_FOREACH: asynchronous broadcast and push_xfer, asynchronous launch,
 * asynchronous read-back and an asynchronous per-rank callback that checks
 * the results; dpu_status polling; dpu_sync; plus synchronous per-rank and
 * single-call callbacks with their rank indices. */
#include <dpu.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 256
#define NR_RANKS 2

struct ctx {
    uint32_t nr_dpus_per_rank[NR_RANKS];
    uint32_t *in;   /* [dpu][N], dpu numbered over the whole set */
    uint32_t *out;
    uint32_t first_dpu[NR_RANKS];
    uint32_t mult;
    pthread_mutex_t lock;
    int checked[NR_RANKS];
    int errors;
    int calls;
    uint32_t index_mask;
};

static dpu_error_t check_rank(struct dpu_set_t rank, uint32_t rank_index, void *arg)
{
    struct ctx *c = arg;
    uint32_t nr;
    int errors = 0;
    dpu_error_t st = dpu_get_nr_dpus(rank, &nr);
    if (st != DPU_OK)
        return st;
    if (rank_index >= NR_RANKS || nr != c->nr_dpus_per_rank[rank_index]) {
        errors++;
    } else {
        for (uint32_t d = c->first_dpu[rank_index]; d < c->first_dpu[rank_index] + nr; d++)
            for (int k = 0; k < N; k++)
                if (c->out[d * N + k] != c->in[d * N + k] * c->mult + 1000 * (rank_index + 1))
                    errors++;
    }
    pthread_mutex_lock(&c->lock);
    if (rank_index < NR_RANKS)
        c->checked[rank_index]++;
    c->errors += errors;
    pthread_mutex_unlock(&c->lock);
    return DPU_OK;
}

static dpu_error_t count_call(struct dpu_set_t set, uint32_t rank_index, void *arg)
{
    struct ctx *c = arg;
    (void)set;
    pthread_mutex_lock(&c->lock);
    c->calls++;
    if (rank_index < 32)
        c->index_mask |= 1u << rank_index;
    pthread_mutex_unlock(&c->lock);
    return DPU_OK;
}

int main(void)
{
    struct dpu_set_t set, rank, dpu;
    uint32_t nr_ranks, nr_dpus, r, i;
    int bad = 0;
    struct ctx c;
    memset(&c, 0, sizeof(c));
    pthread_mutex_init(&c.lock, NULL);

    DPU_ASSERT(dpu_alloc_ranks(NR_RANKS, NULL, &set));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    if (nr_ranks != NR_RANKS || nr_dpus < NR_RANKS) {
        printf("dpu_alloc_ranks(%d): %u ranks, %u DPUs\n", NR_RANKS, nr_ranks, nr_dpus);
        return 1;
    }
    DPU_ASSERT(dpu_load(set, "./bin/dpu_async", NULL));
    c.in = malloc((size_t)nr_dpus * N * 4);
    c.out = calloc((size_t)nr_dpus * N, 4);
    c.mult = 3;
    for (size_t k = 0; k < (size_t)nr_dpus * N; k++)
        c.in[k] = (uint32_t)(k * 2654435761u);
    DPU_ASSERT(dpu_broadcast_to(set, "mult", 0, &c.mult, 4, DPU_XFER_ASYNC));

    uint32_t first = 0, rank_params[NR_RANKS];
    DPU_RANK_FOREACH(set, rank, r) {
        uint32_t nr;
        DPU_ASSERT(dpu_get_nr_dpus(rank, &nr));
        c.nr_dpus_per_rank[r] = nr;
        c.first_dpu[r] = first;
        rank_params[r] = 1000 * (r + 1);
        DPU_ASSERT(dpu_broadcast_to(rank, "rank_param", 0, &rank_params[r], 4, DPU_XFER_ASYNC));
        DPU_FOREACH(rank, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &c.in[(size_t)(first + i) * N])); }
        DPU_ASSERT(dpu_push_xfer(rank, DPU_XFER_TO_DPU, "in", 0, N * 4, DPU_XFER_ASYNC));
        DPU_ASSERT(dpu_launch(rank, DPU_ASYNCHRONOUS));
        DPU_FOREACH(rank, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, &c.out[(size_t)(first + i) * N])); }
        DPU_ASSERT(dpu_push_xfer(rank, DPU_XFER_FROM_DPU, "out", 0, N * 4, DPU_XFER_ASYNC));
        first += nr;
    }
    if (first != nr_dpus) {
        printf("DPU_RANK_FOREACH + DPU_FOREACH visited %u DPUs, set has %u\n", first, nr_dpus);
        bad = 1;
    }
    /* one asynchronous callback per rank, queued after the rank's jobs */
    DPU_ASSERT(dpu_callback(set, check_rank, &c, DPU_CALLBACK_ASYNC));

    bool done = false, fault = true;
    for (int tries = 0; tries < 6000 && !done; tries++) {
        DPU_ASSERT(dpu_status(set, &done, &fault));
        if (!done)
            usleep(1000);
    }
    DPU_ASSERT(dpu_sync(set));
    DPU_ASSERT(dpu_status(set, &done, &fault));
    if (!done || fault) {
        printf("dpu_status after dpu_sync: done=%d fault=%d\n", done, fault);
        bad = 1;
    }
    for (r = 0; r < NR_RANKS; r++)
        if (c.checked[r] != 1) {
            printf("asynchronous callback ran %d times for rank %u, expected once\n", c.checked[r], r);
            bad = 1;
        }
    if (c.errors) {
        printf("%d wrong results seen by the callbacks\n", c.errors);
        bad = 1;
    }

    /* synchronous callback: once per rank, rank indices 0..nr_ranks-1 */
    c.calls = 0;
    c.index_mask = 0;
    DPU_ASSERT(dpu_callback(set, count_call, &c, DPU_CALLBACK_DEFAULT));
    if (c.calls != NR_RANKS || c.index_mask != (1u << NR_RANKS) - 1) {
        printf("DPU_CALLBACK_DEFAULT: %d calls, index mask %x\n", c.calls, c.index_mask);
        bad = 1;
    }
    /* single call with the whole set */
    c.calls = 0;
    DPU_ASSERT(dpu_callback(set, count_call, &c,
        (dpu_callback_flags_t)(DPU_CALLBACK_ASYNC | DPU_CALLBACK_NONBLOCKING | DPU_CALLBACK_SINGLE_CALL)));
    DPU_ASSERT(dpu_sync(set));
    if (c.calls != 1) {
        printf("DPU_CALLBACK_SINGLE_CALL: %d calls, expected 1\n", c.calls);
        bad = 1;
    }
    /* a second, synchronous launch of the whole set after the asynchronous one */
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_free(set));
    printf("async: %u ranks, %u DPUs\n", nr_ranks, nr_dpus);
    printf("%s async\n", bad ? "FAIL" : "OK");
    free(c.in);
    free(c.out);
    return bad;
}
