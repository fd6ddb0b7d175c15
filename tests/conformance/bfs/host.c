/* Breadth-first search over 8 DPUs, one launch per BFS level (tens of
 * launches); the host merges the DPUs' next frontiers between launches. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 8
#define N 2048
#define WORDS (N / 64)
#define PER_DPU (N / NR_DPUS)
#define MAX_DEG 16

static uint32_t adj[N][MAX_DEG * 2 + 2];
static uint32_t deg[N];
static uint32_t st = 31337;
static uint32_t rnd(void)
{
    st = st * 1103515245u + 12345u;
    return st >> 8;
}
static void add_edge(uint32_t a, uint32_t b)
{
    if (deg[a] < MAX_DEG * 2 && deg[b] < MAX_DEG * 2) {
        adj[a][deg[a]++] = b;
        adj[b][deg[b]++] = a;
    }
}

int main(void)
{
    for (uint32_t v = 0; v + 1 < N; v++) {
        uint32_t u = v + 1 + rnd() % 24;
        if (v % 500 != 499 && u < N) /* a few weak spots; other edges may still bridge them */
            add_edge(v, u);
        if (rnd() % 3 == 0)
            add_edge(v, (v + rnd() % 60) % N);
    }
    /* reference BFS from vertex 0 */
    int level_ref[N], level[N];
    uint32_t queue[N], qh = 0, qt = 0;
    for (int v = 0; v < N; v++)
        level_ref[v] = level[v] = -1;
    level_ref[0] = 0;
    queue[qt++] = 0;
    while (qh < qt) {
        uint32_t v = queue[qh++];
        for (uint32_t k = 0; k < deg[v]; k++)
            if (level_ref[adj[v][k]] < 0) {
                level_ref[adj[v][k]] = level_ref[v] + 1;
                queue[qt++] = adj[v][k];
            }
    }

    struct dpu_set_t set, dpu;
    uint32_t i;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_bfs", NULL));
    DPU_FOREACH(set, dpu, i) {
        uint32_t recs[PER_DPU * 2], edges[PER_DPU * (MAX_DEG * 2 + 2)], ne = 0;
        for (uint32_t v = 0; v < PER_DPU; v++) {
            uint32_t g = i * PER_DPU + v;
            recs[2 * v] = ne;
            for (uint32_t k = 0; k < deg[g]; k++)
                edges[ne++] = adj[g][k];
            if (ne & 1)
                edges[ne++] = g; /* pad to an even count with a self loop */
            recs[2 * v + 1] = ne - recs[2 * v];
        }
        uint32_t first = i * PER_DPU, nl = PER_DPU, eoff = sizeof(recs);
        DPU_ASSERT(dpu_copy_to(dpu, "first_vertex", 0, &first, 4));
        DPU_ASSERT(dpu_copy_to(dpu, "nr_local", 0, &nl, 4));
        DPU_ASSERT(dpu_copy_to(dpu, "edges_off", 0, &eoff, 4));
        DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, recs, sizeof(recs)));
        DPU_ASSERT(dpu_copy_to(dpu, DPU_MRAM_HEAP_POINTER_NAME, eoff, edges, ne * 4));
    }
    uint32_t zero = 0;
    DPU_ASSERT(dpu_broadcast_to(set, "launches", 0, &zero, 4, DPU_XFER_DEFAULT));

    uint64_t frontier[WORDS] = { 0 }, visited[WORDS] = { 0 }, next[NR_DPUS][WORDS];
    frontier[0] = visited[0] = 1;
    level[0] = 0;
    int depth = 0, nr_launches = 0;
    for (;;) {
        int any = 0;
        for (int w = 0; w < WORDS; w++)
            any |= frontier[w] != 0;
        if (!any)
            break;
        DPU_ASSERT(dpu_broadcast_to(set, "frontier", 0, frontier, sizeof(frontier), DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        nr_launches++;
        DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, next[i])); }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "next", 0, sizeof(next[0]), DPU_XFER_DEFAULT));
        depth++;
        for (int w = 0; w < WORDS; w++) {
            uint64_t acc = 0;
            for (int d = 0; d < NR_DPUS; d++)
                acc |= next[d][w];
            frontier[w] = acc & ~visited[w];
            visited[w] |= frontier[w];
            for (int b = 0; b < 64; b++)
                if ((frontier[w] >> b) & 1)
                    level[w * 64 + b] = depth;
        }
    }
    int bad = memcmp(level, level_ref, sizeof(level)) != 0;
    int reached = 0, maxl = 0;
    for (int v = 0; v < N; v++) {
        if (level_ref[v] >= 0)
            reached++;
        if (level_ref[v] > maxl)
            maxl = level_ref[v];
        if (level[v] != level_ref[v] && bad++ < 6)
            printf("vertex %d: level %d expected %d\n", v, level[v], level_ref[v]);
    }
    DPU_FOREACH(set, dpu, i) {
        uint32_t l;
        DPU_ASSERT(dpu_copy_from(dpu, "launches", 0, &l, 4));
        if ((int)l != nr_launches) {
            printf("DPU %u counted %u launches, expected %d\n", i, l, nr_launches);
            bad = 1;
        }
    }
    DPU_ASSERT(dpu_free(set));
    printf("bfs: %d vertices reached, depth %d, %d launches\n", reached, maxl, nr_launches);
    printf("%s bfs\n", bad ? "FAIL" : "OK");
    return bad != 0;
}
