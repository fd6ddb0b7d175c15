/* Host of launch_cost.py: runs the GEMV kernel (dpu/gemv_launch.c) on one DPU with `rows` rows
 * of `cols` elements (values 0..49, as the published runs' inputs), launches it twice (the
 * published timings are warm: repeated launches after warm-ups), checks the result against
 * the CPU, and leaves the kernel's cycles to the run report (OPENPIM_REPORT). */
#include <dpu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    uint32_t cols;
    uint32_t rows;
} gemv_args_t;

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s DPU_BINARY COLS ROWS\n", argv[0]);
        return 2;
    }
    gemv_args_t args = {(uint32_t)strtoul(argv[2], NULL, 10), (uint32_t)strtoul(argv[3], NULL, 10)};
    size_t words = (size_t)args.cols * args.rows + args.cols;
    uint32_t *in = calloc(words + 2, sizeof(uint32_t));
    uint32_t *out = calloc(args.rows + 2, sizeof(uint32_t));
    if (in == NULL || out == NULL)
        return 1;
    srand(0);
    for (size_t i = 0; i < words; i++)
        in[i] = (uint32_t)(rand() % 50);

    struct dpu_set_t set;
    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    DPU_ASSERT(dpu_copy_to(set, "GEMV_ARGS", 0, &args, sizeof(args)));
    DPU_ASSERT(dpu_copy_to(set, DPU_MRAM_HEAP_POINTER_NAME, 0, in, (words * 4 + 7) & ~(size_t)7));
    for (int i = 0; i < 2; i++)
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    DPU_ASSERT(dpu_copy_from(set, DPU_MRAM_HEAP_POINTER_NAME, words * 4, out, (args.rows * 4 + 7) & ~7u));
    DPU_ASSERT(dpu_free(set));

    const uint32_t *x = in + (size_t)args.cols * args.rows;
    for (uint32_t r = 0; r < args.rows; r++) {
        uint32_t want = 0;
        for (uint32_t i = 0; i < args.cols; i++)
            want += in[(size_t)r * args.cols + i] * x[i];
        if (out[r] != want) {
            fprintf(stderr, "row %u: DPU %u, CPU %u\n", r, out[r], want);
            return 1;
        }
    }
    return 0;
}
