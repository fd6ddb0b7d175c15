/* Compile-only check of the host headers (tests/headers/check.sh).
 * Exercises every macro and declaration; never linked. */
#include <dpu.h>
#include <dpu_log.h>
#include <dpu_management.h>
#include <dpu_target_macros.h>

#ifdef CHECK_INCBIN
DPU_INCBIN(embedded_program, "use_headers.c")
#endif

static dpu_error_t on_rank(struct dpu_set_t rank, uint32_t idx, void *args)
{
    (void)rank;
    (void)idx;
    (void)args;
    return DPU_OK;
}

static bool get_block(struct sg_block_info *out, uint32_t dpu_index, uint32_t block_index, void *args)
{
    (void)dpu_index;
    (void)args;
    out->addr = NULL;
    out->length = 0;
    return block_index == 0;
}

int check_headers(void);
int check_headers(void)
{
    struct dpu_set_t set, rank, dpu;
    struct dpu_program_t *program = NULL;
    struct dpu_symbol_t symbol;
    uint32_t nr_dpus, nr_ranks, i, r;
    unsigned int u;
    int count = 0;
    uint64_t buffer[8] = { 0 };
    bool done, fault;
    get_block_t gb = { get_block, NULL, 0 };

    DPU_ASSERT(dpu_alloc(DPU_ALLOCATE_ALL, NULL, &set));
    DPU_ASSERT(dpu_alloc_ranks(1, "backend=simulator", &set));
    DPU_CHECK(dpu_get_nr_dpus(set, &nr_dpus), return 1);
    DPU_ASSERT(dpu_get_nr_ranks(set, &nr_ranks));
    DPU_ASSERT(dpu_load(set, "prog", &program));
    DPU_ASSERT(dpu_load(set, "prog", NULL));
    DPU_ASSERT(dpu_load_from_memory(set, (uint8_t *)buffer, sizeof(buffer), NULL));
#ifdef CHECK_INCBIN
    DPU_ASSERT(dpu_load_from_incbin(set, &embedded_program, NULL));
    count += (int)embedded_program.size + (embedded_program.path[0] == 'u') + embedded_program.buffer[0];
#endif
    DPU_ASSERT(dpu_get_symbol(program, DPU_MRAM_HEAP_POINTER_NAME, &symbol));
    DPU_ASSERT(dpu_copy_to(set, "x", 0, buffer, 8));
    DPU_ASSERT(dpu_copy_to_symbol(set, symbol, 0, buffer, 8));
    DPU_FOREACH(set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "x", 0, buffer, 8));
        DPU_ASSERT(dpu_copy_from_symbol(dpu, symbol, 0, buffer, 8));
        DPU_ASSERT(dpu_log_read(dpu, stdout));
        DPU_ASSERT(dpulog_read_for_dpu(dpu.dpu, stdout));
        if (dpu_from_set(dpu) == NULL || dpu_rank_from_set(dpu) == NULL)
            break;
    }
    DPU_FOREACH(set, dpu, i) {
        DPU_ASSERT(dpu_prepare_xfer(dpu, &buffer[i % 8]));
        if (i == 3)
            break;
    }
    DPU_FOREACH(set, dpu, u) { count += (int)u; }
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "x", 0, 8, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, "x", 0, 8, DPU_XFER_NO_RESET | DPU_XFER_ASYNC));
    DPU_ASSERT(dpu_push_xfer_symbol(set, DPU_XFER_FROM_DPU, symbol, 0, 8, DPU_XFER_PARALLEL));
    DPU_ASSERT(dpu_push_sg_xfer(set, DPU_XFER_TO_DPU, "x", 0, 8, &gb, DPU_SG_XFER_DEFAULT));
    DPU_ASSERT(dpu_push_sg_xfer_symbol(set, DPU_XFER_TO_DPU, symbol, 0, 8, &gb, DPU_SG_XFER_ASYNC));
    DPU_ASSERT(dpu_broadcast_to(set, "x", 0, buffer, 8, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to_symbol(set, symbol, 0, buffer, 8, DPU_XFER_ASYNC));
    DPU_RANK_FOREACH(set, rank) {
        DPU_FOREACH(rank, dpu) { count++; }
        DPU_FOREACH(rank, dpu, i) {
            DPU_FOREACH(rank, dpu, u) { count++; }
        }
    }
    DPU_RANK_FOREACH(set, rank, r) {
        DPU_FOREACH(rank, dpu, i) { count += (int)(r + i); break; }
        DPU_ASSERT(dpu_launch(rank, DPU_ASYNCHRONOUS));
        if (r == 1)
            break;
    }
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_status(set, &done, &fault));
    DPU_ASSERT(dpu_sync(set));
    DPU_ASSERT(dpu_callback(set, on_rank, NULL, DPU_CALLBACK_ASYNC | DPU_CALLBACK_NONBLOCKING));
    DPU_ASSERT(dpu_callback(set, on_rank, NULL,
        (dpu_callback_flags_t)(DPU_CALLBACK_SINGLE_CALL | DPU_CALLBACK_PARALLEL | DPU_CALLBACK_DEFAULT)));
    {
        dpu_description_t desc;
        DPU_ASSERT(dpu_get_profile_description("backend=simulator", &desc));
        (void)desc;
    }
    {
        char *s = dpu_error_to_string(DPU_ERR_DPU_FAULT);
        free(s);
    }
    {
        /* dpu_management.h and dpu_target_macros.h, as dpu_demo's checksum host uses them */
        struct dpu_rank_t *rk = NULL;
        struct dpu_t *d = NULL;
        dpu_type_t type = HW;
        DPU_FOREACH(set, dpu) {
            dpu_id_t rank_id = dpu_get_rank_id(dpu_get_rank(dpu_from_set(dpu))) & DPU_TARGET_MASK;
            dpu_slice_id_t slice = dpu_get_slice_id(dpu_from_set(dpu));
            dpu_member_id_t member = dpu_get_member_id(dpu_from_set(dpu));
            int node = dpu_get_rank_numa_node(dpu_get_rank(dpu_from_set(dpu)));
            count += (int)rank_id + slice + member + node + (int)(dpu_get_id(dpu.dpu) >> DPU_TARGET_SHIFT);
            count += dpu_is_enabled(dpu.dpu);
        }
        DPU_ASSERT(dpu_get_rank_of_type("backend=hw", &rk));
        STRUCT_DPU_FOREACH(rk, d) { count++; }
        STRUCT_DPU_FOREACH(rk, d, u) { count += (int)u; }
        d = dpu_get(rk, 0, 1);
        rank = dpu_set_from_rank(&rk);
        dpu = dpu_set_from_dpu(d);
        (void)dpu_get_description(rk);
        dpu_lock_rank(rk);
        count += dpu_trylock_rank(rk);
        dpu_unlock_rank(rk);
        dpu_unlock_rank(rk);
        count += dpu_type_from_profile_string("hw", &type) + (int)strlen(dpu_type_to_string(type));
        DPU_ASSERT(dpu_free_rank(rk));
    }
    DPU_ASSERT(dpu_free(set));
    return count + (int)nr_dpus + (int)nr_ranks + done + fault;
}
