/* Prints the C ABI facts libdpu mirrors; compiled and run by check.sh. */
#include <dpu.h>
#include <dpu_checkpoint.h>
#include <dpu_management.h>
#include <dpu_target_macros.h>
#include <stddef.h>
#include <stdio.h>

int main(void)
{
    int bad = 0;
#define EXPECT(cond)                                                                             \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            printf("layout check failed: %s\n", #cond);                                          \
            bad = 1;                                                                             \
        }                                                                                        \
    } while (0)
    EXPECT(sizeof(struct dpu_set_t) == 24);
    EXPECT(offsetof(struct dpu_set_t, list.nr_ranks) == 8);
    EXPECT(offsetof(struct dpu_set_t, list.ranks) == 16);
    EXPECT(offsetof(struct dpu_set_t, dpu) == 8);
    EXPECT(sizeof(dpu_error_t) == 4);
    EXPECT(DPU_OK == 0 && DPU_ERR_ALLOCATION == 4 && DPU_ERR_INVALID_WRAM_ACCESS == 8);
    EXPECT(DPU_ERR_INVALID_SYMBOL_ACCESS == 11 && DPU_ERR_NO_PROGRAM_LOADED == 14);
    EXPECT(DPU_ERR_DPU_FAULT == 21 && DPU_ERR_ELF_INVALID_FILE == 22 && DPU_ERR_ELF_NO_SUCH_FILE == 23);
    EXPECT(DPU_ERR_INVALID_PROFILE == 26 && DPU_ERR_UNKNOWN_SYMBOL == 27);
    EXPECT(DPU_ERR_TOO_MANY_TASKLETS == 36 && DPU_ERR_SG_NOT_MRAM_SYMBOL == 40);
    EXPECT((unsigned)DPU_ERR_ASYNC_JOBS == 0x80000000u);
    EXPECT(sizeof(struct dpu_symbol_t) == 8);
    EXPECT(sizeof(struct dpu_incbin_t) == 24);
    EXPECT(offsetof(struct dpu_set_rank_iterator_t, count) == 24);
    EXPECT(offsetof(struct dpu_set_rank_iterator_t, has_next) == 28);
    EXPECT(offsetof(struct dpu_set_rank_iterator_t, next) == 32);
    EXPECT(sizeof(struct dpu_set_rank_iterator_t) == 56);
    EXPECT(offsetof(struct dpu_set_dpu_iterator_t, rank) == 56);
    EXPECT(offsetof(struct dpu_set_dpu_iterator_t, count) == 80);
    EXPECT(offsetof(struct dpu_set_dpu_iterator_t, has_next) == 84);
    EXPECT(offsetof(struct dpu_set_dpu_iterator_t, next) == 88);
    EXPECT(sizeof(struct dpu_set_dpu_iterator_t) == 112);
    EXPECT(DPU_ALLOCATE_ALL == 0xFFFFFFFFu);
    EXPECT(offsetof(struct dpu_iterator_t, count) == 8 && offsetof(struct dpu_iterator_t, next_idx) == 12);
    EXPECT(offsetof(struct dpu_iterator_t, has_next) == 16 && offsetof(struct dpu_iterator_t, next) == 24);
    EXPECT(sizeof(struct dpu_iterator_t) == 32);
    EXPECT(DPU_TARGET_SHIFT == 12 && DPU_TARGET_MASK == 0xfff && HW == 3 && FUNCTIONAL_SIMULATOR == 0);
    EXPECT(sizeof(dpu_rank_id_t) == 2 && sizeof(dpu_id_t) == 4 && sizeof(dpu_slice_id_t) == 1);
    EXPECT(sizeof(dpu_member_id_t) == 1);
    EXPECT(DPU_XFER_PARALLEL == 4 && DPU_CALLBACK_PARALLEL == 8 && DPU_CALLBACK_SINGLE_CALL == 4);
    EXPECT(sizeof(struct dpu_context_t) == 120 && offsetof(struct dpu_context_t, iram) == 24);
    EXPECT(offsetof(struct dpu_context_t, scheduling) == 96 && offsetof(struct dpu_context_t, mem_fault) == 106);
    EXPECT(offsetof(struct dpu_context_t, bkp_fault_id) == 112);
    EXPECT(DPU_CHECKPOINT_INTERNAL == 1 && DPU_CHECKPOINT_IRAM == 2 && DPU_CHECKPOINT_MRAM == 8);
    EXPECT(DPU_CHECKPOINT_WRAM == 16 && DPU_CHECKPOINT_ALL == 0x1b);
    printf("struct dpu_set_t %zu, rank iterator %zu, dpu iterator %zu\n", sizeof(struct dpu_set_t),
        sizeof(struct dpu_set_rank_iterator_t), sizeof(struct dpu_set_dpu_iterator_t));
    return bad;
}
