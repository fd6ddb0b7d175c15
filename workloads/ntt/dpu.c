/* NTT workload on one DPU: one step of a (hierarchical) NTT, or an element-wise polynomial
 * operation, on the DPU's `m` vector slots.
 *
 * NTT step (mode 0): each slot holds an n-point vector (n <= 4096). The tasklets compute its
 * DIF NTT together, with radix-2^k butterfly groups (k = 1, 2, 4: radix 2, 4, 16), the groups
 * of a stage dealt round-robin, a barrier between stages; then they multiply every output by
 * its twiddle (the hierarchical NTT's twiddles between steps, or N^-1 for the last step of an
 * inverse NTT) when the step has them.
 * ADD (mode 1) / MUL (mode 2): A = A + B or A * B mod the slot's prime (B in Montgomery form).
 * PACK (mode 3) / UNPACK (mode 4): the DPU's side of a 2D NTT's transpose done by an all-to-all
 * collective (--exchange pidcomm): PACK gathers the step's outputs into one chunk per
 * destination DPU (chunk e, [slot][i]: output e + dg * i of each slot), UNPACK builds the next
 * step's vectors from the chunks received (element d + dg * t of slot (l, t') is word
 * (l * vpi + t) * (n / dg) + t' of source d's chunk).
 *
 * MRAM (from DPU_MRAM_HEAP_POINTER, offsets in params): A (m x n words), B (m x n words),
 * slot metadata (q, -q^-1 mod 2^32, limb, 0), the n-point twiddles of every limb
 * (n/2 x (w, w')), and this step's output twiddles (m x n x (w, w')). Outputs are in
 * bit-reversed order; the host knows it. */
#include <stdint.h>
#include <defs.h>
#include <mram.h>
#include <barrier.h>
#include <attributes.h>

#include "arith.h"

#define MAX_N 4096 /* WRAM: the vector and its twiddles take 32 KB at 4,096 points */
#define POST_CHUNK 256 /* output twiddles (pairs) in WRAM at a time */
#define EW_CHUNK 64 /* words per element-wise DMA */

struct ntt_params {
    uint32_t mode, m, n, log2n, radix_log, has_post;
    uint32_t a_off, b_off, meta_off, tw_off, post_off;
    uint32_t dg, vpi, pack_off, recv_off; /* the all-to-all's group, vectors per instance, regions */
};

__host struct ntt_params params;

/* The NTT's vector and the element-wise/transpose buffers are never used by the same launch
 * (one mode per launch): they share WRAM. */
static union {
    uint32_t buf[MAX_N];
    struct {
        uint32_t a[NR_TASKLETS][EW_CHUNK], b[NR_TASKLETS][EW_CHUNK];
    } ew;
} __dma_aligned work;
#define buf work.buf
#define ew_a work.ew.a
#define ew_b work.ew.b
static uint32_t __dma_aligned tw[MAX_N];               /* n/2 pairs */
static uint32_t __dma_aligned post[2 * POST_CHUNK];    /* up to POST_CHUNK pairs */
static uint32_t __dma_aligned meta[4];

BARRIER_INIT(step_barrier, NR_TASKLETS);

/* Loads/stores `words` words between MRAM and WRAM, split over the tasklets (2 KB DMAs). */
static void shared_copy(uint32_t *wram, __mram_ptr uint8_t *mram, uint32_t words, int to_mram)
{
    for (uint32_t off = me() * 512; off < words; off += NR_TASKLETS * 512) {
        uint32_t w = words - off < 512 ? words - off : 512;
        if (to_mram)
            mram_write(wram + off, mram + off * 4, w * 4);
        else
            mram_read(mram + off * 4, wram + off, w * 4);
    }
}

static void ntt_slots(__mram_ptr uint8_t *heap)
{
    uint32_t n = params.n, log2n = params.log2n, k = params.radix_log;
    uint32_t groups = n >> k, stages = log2n / k;
    uint32_t limb = 0xFFFFFFFFu;
    for (uint32_t v = 0; v < params.m; v++) {
        if (me() == 0)
            mram_read(heap + params.meta_off + v * 16, meta, 16);
        barrier_wait(&step_barrier);
        uint32_t q = meta[0];
        if (meta[2] != limb) { /* the n-point twiddles of this slot's prime */
            limb = meta[2];
            shared_copy(tw, heap + params.tw_off + limb * n * 4, n, 0);
        }
        shared_copy(buf, heap + params.a_off + v * n * 4, n, 0);
        uint32_t first = n < POST_CHUNK ? n : POST_CHUNK;
        if (params.has_post)
            shared_copy(post, heap + params.post_off + v * n * 8, 2 * first, 0);
        barrier_wait(&step_barrier);
        for (uint32_t gs = 0; gs < stages; gs++) {
            uint32_t s0 = gs * k, st = (n >> s0) >> k;
            for (uint32_t g = me(); g < groups; g += NR_TASKLETS) {
                uint32_t base = (g / st) * (n >> s0) + g % st;
                ntt_group(buf, base, st, k, s0, log2n, tw, q);
            }
            barrier_wait(&step_barrier);
        }
        /* the output twiddles, POST_CHUNK pairs at a time (the first chunk came with the data) */
        for (uint32_t c0 = 0; params.has_post && c0 < n; c0 += POST_CHUNK) {
            uint32_t len = n - c0 < POST_CHUNK ? n - c0 : POST_CHUNK;
            if (c0 > 0) {
                shared_copy(post, heap + params.post_off + (v * n + c0) * 8, 2 * len, 0);
                barrier_wait(&step_barrier);
            }
            for (uint32_t i = me(); i < len; i += NR_TASKLETS)
                buf[c0 + i] = mod_mul_shoup(buf[c0 + i], post[2 * i], post[2 * i + 1], q);
            barrier_wait(&step_barrier);
        }
        shared_copy(buf, heap + params.a_off + v * n * 4, n, 1);
    }
}

static void elementwise(__mram_ptr uint8_t *heap)
{
    uint32_t words = params.m * params.n, n = params.n, *a = ew_a[me()], *b = ew_b[me()];
    uint32_t meta_slot = 0xFFFFFFFFu, q = 0, qneg = 0;
    for (uint32_t off = me() * EW_CHUNK; off < words; off += NR_TASKLETS * EW_CHUNK) {
        uint32_t slot = off / n;
        if (slot != meta_slot) {
            uint32_t __dma_aligned m4[4];
            mram_read(heap + params.meta_off + slot * 16, m4, 16);
            meta_slot = slot, q = m4[0], qneg = m4[1];
        }
        mram_read(heap + params.a_off + off * 4, a, EW_CHUNK * 4);
        mram_read(heap + params.b_off + off * 4, b, EW_CHUNK * 4);
        if (params.mode == 1)
            for (uint32_t i = 0; i < EW_CHUNK; i++)
                a[i] = mod_add(a[i], b[i], q);
        else
            for (uint32_t i = 0; i < EW_CHUNK; i++)
                a[i] = mod_mul_mont(a[i], b[i], q, qneg);
        mram_write(a, heap + params.a_off + off * 4, EW_CHUNK * 4);
    }
}

static uint32_t bitrev_dpu(uint32_t x, uint32_t bits)
{
    uint32_t r = 0;
    for (uint32_t i = 0; i < bits; i++)
        r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
}

/* One word of MRAM (an 8-byte read: the DMA's smallest). */
static uint32_t mram_word(__mram_ptr uint8_t *base, uint32_t word)
{
    uint64_t __dma_aligned pair;
    mram_read(base + (word & ~1u) * 4, &pair, 8);
    return (uint32_t)(pair >> (32 * (word & 1u)));
}

/* PACK and UNPACK: the output is built EW_CHUNK words at a time in the tasklet's buffer. */
static void transpose_side(__mram_ptr uint8_t *heap)
{
    uint32_t n = params.n, dg = params.dg, per = n / dg, m = params.m, *w = ew_a[me()];
    uint32_t chunk = m * per;
    if (params.mode == 3) {
        for (uint32_t e = me(); e < dg; e += NR_TASKLETS)
            for (uint32_t off = 0; off < chunk; off += EW_CHUNK) {
                uint32_t len = chunk - off < EW_CHUNK ? chunk - off : EW_CHUNK;
                for (uint32_t x = 0; x < len; x++) {
                    uint32_t k = (off + x) / per, i = (off + x) % per;
                    w[x] = mram_word(heap + params.a_off, k * n + bitrev_dpu(e + dg * i, params.log2n));
                }
                mram_write(w, heap + params.pack_off + (e * chunk + off) * 4, len * 4);
            }
    } else {
        for (uint32_t k = me(); k < m; k += NR_TASKLETS) {
            uint32_t l = k / params.vpi, tp = k % params.vpi;
            for (uint32_t off = 0; off < n; off += EW_CHUNK) {
                uint32_t len = n - off < EW_CHUNK ? n - off : EW_CHUNK;
                for (uint32_t x = 0; x < len; x++) {
                    uint32_t j = off + x, d = j % dg, t = j / dg;
                    w[x] = mram_word(heap + params.recv_off, d * chunk + (l * params.vpi + t) * per + tp);
                }
                mram_write(w, heap + params.a_off + (k * n + off) * 4, len * 4);
            }
        }
    }
}

int main(void)
{
    __mram_ptr uint8_t *heap = (__mram_ptr uint8_t *)DPU_MRAM_HEAP_POINTER;
    if (params.mode == 0)
        ntt_slots(heap);
    else if (params.mode <= 2)
        elementwise(heap);
    else
        transpose_side(heap);
    return 0;
}
