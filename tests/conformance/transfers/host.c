/* Host<->DPU transfers on 8 DPUs:
 *  - dpu_broadcast_to into WRAM and into part of an MRAM array (offset);
 *  - dpu_prepare_xfer + dpu_push_xfer TO_DPU with DPU_XFER_NO_RESET, then a
 *    second push that reuses the same prepared buffers (new contents);
 *  - dpu_push_xfer FROM_DPU with NO_RESET then again with the same buffers;
 *  - dpu_copy_to on the whole set and on single DPUs, dpu_copy_from;
 *  - MRAM symbols with unaligned offsets and lengths, WRAM with offsets;
 *  - dpu_get_nr_ranks, dpu_from_set, dpu_rank_from_set, nested FOREACH with break. */
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR_DPUS 8
#define NW 32
#define NM 512

int main(void)
{
    struct dpu_set_t set, dpu, rank;
    uint32_t i, nr_ranks, nr_dpus;
    int bad = 0;
    static uint64_t w_in[NW], part[NR_DPUS][128], bcast[256], ids[NR_DPUS];
    static uint64_t m_in[NR_DPUS][NM], m_out[NR_DPUS][NM], w_out[NR_DPUS][NW];

    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    if (nr_dpus != NR_DPUS || nr_ranks < 1) {
        printf("dpu_alloc(%d): %u DPUs in %u ranks\n", NR_DPUS, nr_dpus, nr_ranks);
        return 1;
    }
    DPU_ASSERT(dpu_load(set, "./bin/dpu_transfers", NULL));

    for (int k = 0; k < NW; k++)
        w_in[k] = 0x0100000000ull * (uint64_t)k + 17;
    for (int k = 0; k < 256; k++)
        bcast[k] = 0xabcdef00ull + (uint64_t)k;
    DPU_ASSERT(dpu_broadcast_to(set, "w_in", 0, w_in, sizeof(w_in), DPU_XFER_DEFAULT));
    /* m_in[256..511] = bcast on every DPU */
    DPU_ASSERT(dpu_broadcast_to(set, "m_in", 256 * 8, bcast, sizeof(bcast), DPU_XFER_DEFAULT));

    /* m_in[0..127] and m_in[128..255]: the same prepared buffers pushed twice */
    for (i = 0; i < NR_DPUS; i++)
        for (int k = 0; k < 128; k++)
            part[i][k] = (uint64_t)i << 40 | (uint64_t)k;
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, part[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "m_in", 0, 128 * 8, DPU_XFER_NO_RESET));
    for (i = 0; i < NR_DPUS; i++)
        for (int k = 0; k < 128; k++) {
            m_in[i][k] = part[i][k];
            part[i][k] = ~part[i][k];
            m_in[i][128 + k] = part[i][k];
        }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "m_in", 128 * 8, 128 * 8, DPU_XFER_DEFAULT));
    for (i = 0; i < NR_DPUS; i++)
        memcpy(&m_in[i][256], bcast, sizeof(bcast));

    /* ids: copy_to the whole set, then override on single DPUs */
    uint64_t all = 99;
    DPU_ASSERT(dpu_copy_to(set, "id", 0, &all, 8));
    DPU_FOREACH(set, dpu, i) {
        ids[i] = (i % 2) ? 1000 + i : 99;
        if (i % 2)
            DPU_ASSERT(dpu_copy_to(dpu, "id", 0, &ids[i], 8));
        if (dpu_from_set(dpu) == NULL || dpu.kind != DPU_SET_DPU || dpu.dpu != dpu_from_set(dpu)) {
            printf("dpu_from_set / struct dpu_set_t.dpu inconsistent for DPU %u\n", i);
            bad = 1;
        }
    }
    uint32_t seen = 0;
    DPU_RANK_FOREACH(set, rank) {
        if (dpu_rank_from_set(rank) == NULL) {
            printf("dpu_rank_from_set returned NULL\n");
            bad = 1;
        }
        DPU_FOREACH(rank, dpu) {
            seen++;
            break; /* break leaves only the inner loop */
        }
    }
    if (seen != nr_ranks) {
        printf("nested FOREACH with break visited %u, expected %u\n", seen, nr_ranks);
        bad = 1;
    }

    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    /* read m_out in two halves with the same prepared buffers (NO_RESET), then w_out */
    static uint64_t half[NR_DPUS][256];
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, half[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "m_out", 0, 256 * 8, DPU_XFER_NO_RESET));
    for (i = 0; i < NR_DPUS; i++)
        memcpy(m_out[i], half[i], sizeof(half[i]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "m_out", 256 * 8, 256 * 8, DPU_XFER_DEFAULT));
    for (i = 0; i < NR_DPUS; i++)
        memcpy(&m_out[i][256], half[i], sizeof(half[i]));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, w_out[i])); }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "w_out", 0, sizeof(w_out[0]), DPU_XFER_DEFAULT));

    int wrong = 0;
    for (i = 0; i < NR_DPUS; i++) {
        for (int k = 0; k < NM; k++)
            if (m_out[i][k] != m_in[i][k] + w_in[k % NW] + ids[i])
                wrong++;
        for (int k = 0; k < NW; k++)
            if (w_out[i][k] != w_in[k] * 2 + ids[i])
                wrong++;
    }
    if (wrong) {
        printf("%d wrong words after the kernel\n", wrong);
        bad = 1;
    }

    /* MRAM at any alignment: write 13 bytes at offset 3 of one DPU, read 21 bytes at offset 1 */
    DPU_FOREACH(set, dpu, i) {
        if (i != 5)
            continue;
        uint8_t pattern[13], back[21], ref[21];
        for (int k = 0; k < 13; k++)
            pattern[k] = (uint8_t)(0xc0 + k);
        DPU_ASSERT(dpu_copy_to(dpu, "m_in", 3, pattern, 13));
        DPU_ASSERT(dpu_copy_from(dpu, "m_in", 1, back, 21));
        memcpy(ref, (uint8_t *)m_in[i] + 1, 21);
        memcpy(ref + 2, pattern, 13);
        if (memcmp(back, ref, 21) != 0) {
            printf("unaligned MRAM copy_to/copy_from mismatch\n");
            bad = 1;
        }
        /* WRAM with a 4-aligned offset and length */
        uint32_t two[2] = { 0x11111111u, 0x22222222u }, got[3];
        DPU_ASSERT(dpu_copy_to(dpu, "w_out", 4, two, 8));
        DPU_ASSERT(dpu_copy_from(dpu, "w_out", 0, got, 12));
        uint32_t *orig = (uint32_t *)w_out[i];
        if (got[0] != orig[0] || got[1] != two[0] || got[2] != two[1]) {
            printf("WRAM copy with offset mismatch\n");
            bad = 1;
        }
        break;
    }
    DPU_ASSERT(dpu_free(set));
    printf("%s transfers\n", bad ? "FAIL" : "OK");
    return bad;
}
