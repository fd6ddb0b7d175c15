/* Host side of the DPU microbenchmarks (a)-(d): one DPU, one program, a list of
 * configurations; for each, write the arguments, launch, read the perfcounter cycles back.
 *
 *   dpu_host BINARY OP SIZE N REPS SCALAR [OP SIZE N REPS SCALAR ...]
 *
 * prints one line per configuration: "op=.. size=.. n=.. reps=.. cycles=.. check=..".
 * Only the UPMEM SDK host API is used. */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common.h"

int main(int argc, char **argv)
{
    if (argc < 7 || (argc - 2) % 5 != 0) {
        fprintf(stderr, "usage: %s BINARY OP SIZE N REPS SCALAR [OP SIZE N REPS SCALAR ...]\n", argv[0]);
        return 2;
    }
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(1, NULL, &set));
    DPU_ASSERT(dpu_load(set, argv[1], NULL));
    for (int a = 2; a + 4 < argc; a += 5) {
        struct bench_args args = {
            .op = (uint32_t)strtoul(argv[a], NULL, 0),
            .size = (uint32_t)strtoul(argv[a + 1], NULL, 0),
            .n = (uint32_t)strtoul(argv[a + 2], NULL, 0),
            .reps = (uint32_t)strtoul(argv[a + 3], NULL, 0),
            .scalar = strtoull(argv[a + 4], NULL, 0),
        };
        struct bench_result result;
        DPU_ASSERT(dpu_broadcast_to(set, "args", 0, &args, sizeof(args), DPU_XFER_DEFAULT));
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        DPU_FOREACH (set, dpu) {
            DPU_ASSERT(dpu_copy_from(dpu, "result", 0, &result, sizeof(result)));
        }
        printf("op=%u size=%u n=%u reps=%u cycles=%llu check=%llu\n", args.op, args.size, args.n,
            args.reps, (unsigned long long)result.cycles, (unsigned long long)result.check);
    }
    DPU_ASSERT(dpu_free(set));
    return 0;
}
