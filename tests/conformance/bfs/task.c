/* One BFS step. Each DPU owns a contiguous block of vertices and their
 * adjacency lists (MRAM). The host sends the current frontier (bitmap over all
 * vertices, a WRAM __host array); each tasklet marks the neighbours of its
 * frontier vertices in a private bitmap; the bitmaps are OR-ed into next[]. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <attributes.h>
#include <alloc.h>
#include <barrier.h>

#define MAX_VERTICES 2048
#define WORDS (MAX_VERTICES / 64)
#define CHUNK 32 /* neighbours read per DMA */

struct vertex_rec {
    uint32_t offset; /* index of the first neighbour in the edge array, even */
    uint32_t degree; /* padded to even */
};

__host uint32_t first_vertex; /* global id of local vertex 0 */
__host uint32_t nr_local;     /* vertices owned by this DPU */
__host uint32_t edges_off;    /* byte offset of the edge array in the MRAM heap */
__host uint64_t frontier[WORDS];
__host uint64_t next[WORDS];
__host uint32_t launches;     /* counts the launches of this program */

static uint64_t priv[NR_TASKLETS][WORDS];

BARRIER_INIT(bar, NR_TASKLETS);

int main(void)
{
    unsigned int t = me();
    __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    uint64_t *mine = priv[t];
    __dma_aligned uint32_t nb[CHUNK];
    __dma_aligned struct vertex_rec rec;

    if (t == 0)
        launches++;
    for (int w = 0; w < WORDS; w++)
        mine[w] = 0;
    for (uint32_t v = t; v < nr_local; v += NR_TASKLETS) {
        uint32_t g = first_vertex + v;
        if (!((frontier[g / 64] >> (g % 64)) & 1))
            continue;
        mram_read(heap + v * sizeof(struct vertex_rec), &rec, sizeof(rec));
        for (uint32_t k = 0; k < rec.degree; k += CHUNK) {
            uint32_t n = rec.degree - k < CHUNK ? rec.degree - k : CHUNK;
            mram_read(heap + edges_off + (rec.offset + k) * 4, nb, n * 4);
            for (uint32_t j = 0; j < n; j++)
                mine[nb[j] / 64] |= (uint64_t)1 << (nb[j] % 64);
        }
    }
    barrier_wait(&bar);
    for (unsigned int w = t; w < WORDS; w += NR_TASKLETS) {
        uint64_t acc = 0;
        for (int k = 0; k < NR_TASKLETS; k++)
            acc |= priv[k][w];
        next[w] = acc;
    }
    return 0;
}
