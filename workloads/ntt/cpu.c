/* CPU baseline of the NTT workload: the same instances and operation as bin/host, on the
 * host's cores with OpenMP (instances in parallel; element-wise operations split over all
 * elements), radix-2 NTTs with precomputed Shoup twiddles, timed with the real clock (not
 * linked with the SDK). Prints the best of at least --reps runs (and 0.2 s), the threads and the checksum of
 * the results, which must equal the PIM run's.
 *
 *   ./bin/cpu --n 256 --steps 2 --instances 8 [--op ntt|intt|add|mul] [--reps 5]
 *   (--sizes 64x1024 too, checked as bin/host checks it, radix included: only N, their
 *   product, matters to the CPU) */
#include <omp.h>

#include "ntt.h"

int main(int argc, char **argv)
{
    struct study_opts o;
    study_opts_init(&o, argc, argv);
    struct ntt_cfg c;
    ntt_parse(&c, &o); /* the PIM options (--dpus, --radix, --tasklets) are accepted and ignored */
    study_opt_str(&o, "verify", NULL);
    study_opt_str(&o, "exchange", NULL);
    study_opt_flag(&o, "setup-only");
    uint32_t reps = (uint32_t)study_opt_u64(&o, "reps", 5);
    study_opts_check(&o);
    if (reps < 1)
        reps = 1;
    uint32_t I = c.instances;
    uint64_t N = c.N;
    uint32_t *q = (uint32_t *)study_xcalloc(I, 4, "primes");
    ntt_primes(q, I);
    uint32_t **in = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "inputs");
    uint32_t **a = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "data");
    uint32_t **b = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "operands");
    uint32_t **tw = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "twiddles");
    uint32_t **tmp = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "scratch");
    for (uint32_t i = 0; i < I; i++) {
        in[i] = (uint32_t *)study_xcalloc(N, 4, "input");
        a[i] = (uint32_t *)study_xcalloc(N, 4, "data");
        b[i] = (uint32_t *)study_xcalloc(N, 4, "operand");
        tmp[i] = (uint32_t *)study_xcalloc(N, 4, "scratch");
        ntt_operands(&c, i, q[i], in[i], b[i]);
        if (c.op == OP_NTT || c.op == OP_INTT)
            tw[i] = ntt_twiddles(ntt_op_root(&c, q[i]), N, q[i]);
    }
    uint64_t best = UINT64_MAX, spent = 0, done = 0;
    /* At least --reps runs and at least 0.2 s of them (at most 1000): the best run is the
     * machine's time when nothing else competed for the cores. */
    while (done < reps || (spent < 200000000ull && done < 1000)) {
        for (uint32_t i = 0; i < I; i++)
            memcpy(a[i], in[i], N * 4);
        uint64_t t0 = study_now_ns();
        if (c.op == OP_ADD || c.op == OP_MUL) {
            int64_t total = (int64_t)I * (int64_t)N;
#pragma omp parallel for schedule(static)
            for (int64_t e = 0; e < total; e++) {
                uint32_t i = (uint32_t)(e / (int64_t)N);
                uint64_t x = (uint64_t)(e % (int64_t)N);
                a[i][x] = c.op == OP_ADD ? mod_add(a[i][x], b[i][x], q[i])
                                         : mod_mul_mont(a[i][x], b[i][x], q[i], mont_qneg(q[i]));
            }
        } else {
#pragma omp parallel for schedule(dynamic, 1)
            for (int i = 0; i < (int)I; i++)
                ntt_cpu_op(&c, a[i], b[i], tw[i], q[i], tmp[i]);
        }
        uint64_t t = study_now_ns() - t0;
        best = t < best ? t : best;
        spent += t;
        done++;
    }
    uint64_t sum = STUDY_FNV_INIT;
    for (uint32_t i = 0; i < I; i++)
        sum = study_fnv(sum, a[i], N * 4);
    printf("ntt cpu: op %s N %" PRIu64 " instances %u\n", c.op_name, N, I);
    printf("cpu_ns %" PRIu64 "\n", best);
    printf("runs %" PRIu64 "\n", done);
    printf("threads %d\n", omp_get_max_threads());
    printf("checksum 0x%016" PRIx64 "\n", sum);
    return 0;
}
