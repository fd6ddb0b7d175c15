/* Program loading without a path: DPU_INCBIN + dpu_load_from_incbin, and
 * dpu_load_from_memory from a buffer read by the host. Symbols are resolved
 * once with dpu_get_symbol and used with the *_symbol transfer functions. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64
#define NR_DPUS 4

DPU_INCBIN(embedded_program, "bin/dpu_incbin")

static int run(struct dpu_set_t set, struct dpu_program_t *program, uint32_t magic, const char *how)
{
    struct dpu_symbol_t s_magic, s_in, s_out;
    struct dpu_set_t dpu;
    uint32_t i, in[NR_DPUS][N], out[NR_DPUS][N];
    int bad = 0;
    if (program == NULL) {
        printf("%s: no dpu_program_t returned\n", how);
        return 1;
    }
    DPU_ASSERT(dpu_get_symbol(program, "magic", &s_magic));
    DPU_ASSERT(dpu_get_symbol(program, "in", &s_in));
    DPU_ASSERT(dpu_get_symbol(program, "out", &s_out));
    if (s_magic.size != 4 || s_in.size != N * 4 || s_out.size != N * 4 || (s_in.address & 0x80000000u) ||
        (s_in.address & 0x08000000u)) {
        printf("%s: symbol sizes/addresses wrong: magic %u@%x in %u@%x out %u@%x\n", how, s_magic.size,
            s_magic.address, s_in.size, s_in.address, s_out.size, s_out.address);
        bad = 1;
    }
    for (i = 0; i < NR_DPUS; i++)
        for (int k = 0; k < N; k++)
            in[i][k] = i * 1000 + (uint32_t)k * 7;
    DPU_ASSERT(dpu_broadcast_to_symbol(set, s_magic, 0, &magic, 4, DPU_XFER_DEFAULT));
    DPU_FOREACH(set, dpu, i) { DPU_ASSERT(dpu_prepare_xfer(dpu, in[i])); }
    DPU_ASSERT(dpu_push_xfer_symbol(set, DPU_XFER_TO_DPU, s_in, 0, N * 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    memset(out, 0, sizeof(out));
    DPU_FOREACH(set, dpu, i) {
        /* two halves, to exercise symbol offsets */
        DPU_ASSERT(dpu_copy_from_symbol(dpu, s_out, 0, out[i], N * 2));
        DPU_ASSERT(dpu_copy_from_symbol(dpu, s_out, N * 2, &out[i][N / 2], N * 2));
    }
    for (i = 0; i < NR_DPUS; i++)
        for (int k = 0; k < N; k++)
            if (out[i][k] != (in[i][k] ^ magic)) {
                if (bad++ < 4)
                    printf("%s: DPU %u out[%d] = %u expected %u\n", how, i, k, out[i][k], in[i][k] ^ magic);
            }
    /* dpu_copy_to_symbol on the whole set, read back from each DPU */
    uint32_t newmagic = magic + 1, check;
    DPU_ASSERT(dpu_copy_to_symbol(set, s_magic, 0, &newmagic, 4));
    DPU_FOREACH(set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "magic", 0, &check, 4));
        if (check != newmagic) {
            printf("%s: dpu_copy_to_symbol did not reach every DPU\n", how);
            bad = 1;
        }
    }
    printf("%s: %s\n", how, bad ? "wrong" : "ok");
    return bad != 0;
}

int main(void)
{
    struct dpu_set_t set;
    struct dpu_program_t *program = NULL;
    int bad = 0;
    DPU_ASSERT(dpu_alloc(NR_DPUS, NULL, &set));

    if (embedded_program.size < 64 || memcmp(embedded_program.buffer, "\177ELF", 4) != 0 ||
        strcmp(embedded_program.path, "bin/dpu_incbin") != 0) {
        printf("DPU_INCBIN: size %zu path %s: not the DPU program\n", embedded_program.size, embedded_program.path);
        bad = 1;
    }
    DPU_ASSERT(dpu_load_from_incbin(set, &embedded_program, &program));
    bad |= run(set, program, 0x5a5a5a5au, "dpu_load_from_incbin");

    FILE *f = fopen("bin/dpu_incbin", "rb");
    if (!f) {
        printf("cannot open bin/dpu_incbin\n");
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *buffer = malloc((size_t)size);
    if (fread(buffer, 1, (size_t)size, f) != (size_t)size)
        bad = 1;
    fclose(f);
    program = NULL;
    DPU_ASSERT(dpu_load_from_memory(set, buffer, (size_t)size, &program));
    memset(buffer, 0, (size_t)size); /* the loaded program must not depend on the buffer any more */
    bad |= run(set, program, 0x12345678u, "dpu_load_from_memory");
    free(buffer);

    /* dpu_load with a NULL program pointer is allowed */
    DPU_ASSERT(dpu_load(set, "bin/dpu_incbin", NULL));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));

    DPU_ASSERT(dpu_free(set));
    printf("%s incbin\n", bad ? "FAIL" : "OK");
    return bad;
}
