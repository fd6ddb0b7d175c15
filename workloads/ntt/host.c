/* NTT workload on PIM: I independent N-point NTTs (one prime each: the limbs of an RNS
 * polynomial), N = n^steps, computed as a hierarchical (multi-dimensional) NTT: `steps`
 * kernels of n-point NTTs over the DPUs, an inter-DPU exchange (an all-to-all transpose,
 * through the host) between them. Also the inverse NTT and the element-wise polynomial add and
 * multiply of CKKS. Checked against the CPU (fast NTT, or the O(N^2) definition).
 *
 *   ./bin/host --n 256 --steps 1 --radix 16 --tasklets 16            one 256-point NTT, 1 DPU
 *   ./bin/host --n 256 --steps 2 --instances 8 --dpus 256            8 x 2D 65,536-point NTTs
 *   ./bin/host --n 16 --steps 4 --dpus 2048                          4D
 *   ./bin/host --sizes 64x1024 --radix 4 --dpus 256                  2D with unequal steps
 *   ./bin/host --op mul --n 256 --steps 2 --instances 24 --dpus 2048 CKKS poly mult, 24 limbs
 *
 * Vectors and DPUs: each step has V = N / n vectors per instance. With D <= V DPUs every
 * instance is spread over all DPUs (model parallelism); beyond, the DPUs form D / V groups,
 * each with its share of the instances (hybrid: model + input parallelism). Steps of
 * different sizes (--sizes) each have their own layout; a step with fewer instances than
 * groups leaves the DPUs beyond one group per instance idle. */
#include <dpu.h>
#include <libgen.h>
#if defined(__has_include)
#if __has_include(<pidcomm.h>)
#include <pidcomm.h> /* OpenPIM's (and PID-Comm's) collectives: --exchange pidcomm */
#define NTT_HAVE_PIDCOMM 1
#endif
#endif
#ifndef NTT_HAVE_PIDCOMM
#define NTT_HAVE_PIDCOMM 0
#endif

#include "ntt.h"

struct ntt_params {
    uint32_t mode, m, n, log2n, radix_log, has_post;
    uint32_t a_off, b_off, meta_off, tw_off, post_off;
    uint32_t dg, vpi, pack_off, recv_off;
};

struct layout {
    uint32_t D, Dg, groups, per_group, vec_per_dpu_inst, m, V, active;
};

/* The layout of a step of n points (V = N / n vectors per instance): Dg = min(D, V) DPUs share
 * each instance, in D / Dg groups that split the instances. With fewer instances than groups
 * (a large step on many DPUs: few vectors), one group per instance works and the other DPUs
 * idle in that step. Returns 0, or -1 when the DPUs do not divide the vectors or instances. */
static int layout_of(struct layout *l, uint32_t D, uint32_t I, uint64_t N, uint32_t n)
{
    l->D = D, l->V = (uint32_t)(N / n), l->Dg = D < l->V ? D : l->V, l->groups = D / l->Dg;
    if (D % l->Dg || l->V % l->Dg)
        return -1;
    if (l->groups > I)
        l->groups = I;
    else if (I % l->groups)
        return -1;
    l->per_group = I / l->groups, l->vec_per_dpu_inst = l->V / l->Dg, l->m = l->per_group * l->vec_per_dpu_inst;
    l->active = l->groups * l->Dg;
    return 0;
}

/* Slot k of DPU d: its instance and its vector index j in a step. */
static void slot_of(const struct layout *l, uint32_t d, uint32_t k, uint32_t *inst, uint32_t *j)
{
    uint32_t g = d / l->Dg, loc = d % l->Dg;
    *inst = g * l->per_group + k / l->vec_per_dpu_inst;
    *j = loc + l->Dg * (k % l->vec_per_dpu_inst);
}

/* Element m of vector j in a step (mixed-radix DIF indexing, in place): the step works on
 * blocks of L = 2^logL elements (L = N / the earlier steps' sizes) as sub = 2^logsub = L / n
 * vectors each; vector j is block j / sub, offset j mod sub, and its elements are sub apart.
 * All powers of two: shifts. */
static inline uint64_t elem_of(uint32_t logL, uint32_t logsub, uint32_t j, uint32_t m)
{
    uint64_t sub_mask = (1ull << logsub) - 1;
    return (((uint64_t)j >> logsub) << logL) | (j & sub_mask) | ((uint64_t)m << logsub);
}

int main(int argc, char **argv)
{
    struct study_opts o;
    study_opts_init(&o, argc, argv);
    if (study_opt_flag(&o, "help")) {
        printf("usage: host [--op ntt|intt|add|mul] [--n POINTS_PER_STEP] [--steps S] [--sizes N1xN2[x...]]\n"
               "            [--instances I] [--dpus D] [--radix 2|4|16] [--tasklets T] [--verify fast|naive|none]\n"
               "            [--seed S] [--setup-only] [--exchange host|pidcomm|interconnect]\n"
               "  --sizes 64x1024: a step size per step (N = their product), instead of --n and --steps;\n"
               "  --exchange pidcomm: the 2D NTT's transpose as pidcomm_alltoall (DPUs pack and unpack);\n"
               "  interconnect: the same call, carried by the hardware profile's [links] if it has them\n");
        return 0;
    }
    struct ntt_cfg c;
    ntt_parse(&c, &o);
    const char *verify = study_opt_str(&o, "verify", "fast");
    const char *exchange = study_opt_str(&o, "exchange", "host");
    int setup_only = study_opt_flag(&o, "setup-only");
    study_opts_check(&o);
    if (strcmp(verify, "fast") && strcmp(verify, "naive") && strcmp(verify, "none")) {
        fprintf(stderr, "error: --verify must be fast, naive or none, got '%s'\n", verify);
        return 2;
    }
    int collective = study_exchange_path(exchange, NTT_HAVE_PIDCOMM) != STUDY_EXCHANGE_HOST;
    int ew = c.op == OP_ADD || c.op == OP_MUL;
    uint32_t steps = ew ? 1 : c.steps, I = c.instances, D = c.dpus;
    uint64_t N = c.N;
    if (!strcmp(verify, "naive") && N > 4096) {
        fprintf(stderr, "error: --verify naive is O(N^2): use it for N <= 4096 (got %" PRIu64 ")\n", N);
        return 2;
    }
    /* Per step: its size n, log2, layout, rank of its in-place blocks (logL, logsub), and the
     * first step of the same size (steps of one size share slot metadata and twiddles). */
    uint32_t ns[NTT_MAX_STEPS], lg[NTT_MAX_STEPS], logL[NTT_MAX_STEPS], logsub[NTT_MAX_STEPS], cls[NTT_MAX_STEPS];
    struct layout ls[NTT_MAX_STEPS];
    uint32_t log2N = log2_u64(N), done_log = 0, W = 0;
    for (uint32_t s = 0; s < steps; s++) {
        ns[s] = c.sizes[s], lg[s] = log2_u64(ns[s]);
        logL[s] = log2N - done_log, logsub[s] = logL[s] - lg[s], done_log += lg[s];
        cls[s] = s;
        for (uint32_t t = 0; t < s; t++)
            if (ns[t] == ns[s] && cls[s] == s)
                cls[s] = t;
        if (layout_of(&ls[s], D, I, N, ns[s])) {
            uint32_t V = (uint32_t)(N / ns[s]);
            if (c.balanced)
                fprintf(stderr,
                    "error: %u DPUs for %u instance(s) of %u vectors per step: use a DPU count that divides %u, "
                    "or a multiple of it that divides %u x %u\n",
                    D, I, V, V, V, I);
            else
                fprintf(stderr,
                    "error: %u DPUs for %u instance(s) of %u vectors in step %u (%u points): use a DPU count that "
                    "divides %u, or a multiple of it that divides %u x %u\n",
                    D, I, V, s + 1, ns[s], V, V, I);
            return 2;
        }
        if ((uint64_t)ls[s].m * ns[s] > W)
            W = ls[s].m * ns[s];
    }
    const struct layout *l0 = &ls[0];
    uint32_t n = ns[0], m = l0->m;
    uint32_t rlog = ew ? 1 : log2_u64(c.radix);
    uint32_t *rev[NTT_MAX_STEPS];
    for (uint32_t s = 0; s < steps; s++) {
        rev[s] = (uint32_t *)study_xcalloc(ns[s], 4, "bit reversal");
        for (uint32_t p = 0; p < ns[s]; p++)
            rev[s][p] = bitrev(p, lg[s]);
    }
    struct ntt_params prm = { ew ? (c.op == OP_ADD ? 1u : 2u) : 0u, m, n, lg[0], rlog, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
    /* MRAM: A (the widest step's m x n words), B, then each step size's slot metadata and
     * n-point twiddles, then each step's output twiddles. */
    uint32_t meta_off[NTT_MAX_STEPS], tw_off[NTT_MAX_STEPS], post_off[NTT_MAX_STEPS];
    uint64_t mram = 2ull * W * 4;
    prm.a_off = 0;
    prm.b_off = W * 4;
    for (uint32_t s = 0; s < steps; s++) {
        if (cls[s] != s)
            continue;
        meta_off[s] = (uint32_t)mram, mram += (uint64_t)ls[s].m * 16;
        tw_off[s] = (uint32_t)mram, mram += (uint64_t)I * ns[s] * 4;
    }
    for (uint32_t s = 0; s < steps; s++)
        post_off[s] = (uint32_t)mram, mram += (uint64_t)ls[s].m * ns[s] * 8;
    prm.meta_off = meta_off[0], prm.tw_off = tw_off[0];
    /* The collective's regions: packed chunks, received chunks, the library's scratch. */
    prm.dg = l0->Dg, prm.vpi = l0->vec_per_dpu_inst;
    prm.pack_off = (uint32_t)mram;
    prm.recv_off = prm.pack_off + m * n * 4;
    if (collective) {
        mram += 3ull * m * n * 4;
        const char *why = ew || steps != 2 ? "is the transpose of a 2-step NTT (--op ntt|intt --steps 2)"
            : !c.balanced                  ? "needs two steps of the same size (--n and --steps 2, not --sizes)"
            : D % 64                       ? "needs whole ranks (--dpus a multiple of 64)"
            : l0->active != D              ? "needs every DPU busy (--instances a multiple of DPUs / vectors)"
            : l0->Dg % 8 || n % l0->Dg     ? "needs groups of DPUs that are a multiple of 8 and divide n"
            : (m * n / l0->Dg) % 2         ? "needs chunks of whole 8-byte words (more instances or fewer DPUs)"
                                           : NULL;
        if (why) {
            fprintf(stderr, "error: --exchange %s %s (here --op %s, --steps %u, %u DPUs in groups of %u)\n", exchange,
                why, c.op_name, steps, D, l0->Dg);
            return 2;
        }
    }
    if (mram > (60u << 20)) {
        fprintf(stderr, "error: each DPU would need %.1f MiB of MRAM: use more DPUs\n", mram / 1048576.0);
        return 2;
    }

    /* Inputs, reference, twiddles, metadata: all before the first SDK call. */
    uint32_t *q = (uint32_t *)study_xcalloc(I, 4, "primes");
    ntt_primes(q, I);
    uint32_t **a = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "inputs");
    uint32_t **b = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "inputs");
    uint32_t **ref = (uint32_t **)study_xcalloc(I, sizeof(uint32_t *), "reference");
    uint32_t *tmp = (uint32_t *)study_xcalloc(N, 4, "scratch");
    uint32_t *wN = (uint32_t *)study_xcalloc(I, 4, "roots");
    for (uint32_t i = 0; i < I; i++) {
        a[i] = (uint32_t *)study_xcalloc(N, 4, "input");
        b[i] = (uint32_t *)study_xcalloc(N, 4, "input");
        ref[i] = (uint32_t *)study_xcalloc(N, 4, "reference");
        ntt_operands(&c, i, q[i], a[i], b[i]);
        memcpy(ref[i], a[i], N * 4);
        if (!ew)
            wN[i] = ntt_op_root(&c, q[i]);
        if (!strcmp(verify, "naive") && !ew) {
            ntt_naive(a[i], ref[i], N, wN[i], q[i]);
            if (c.op == OP_INTT) {
                uint32_t ninv = inv_mod((uint32_t)(N % q[i]), q[i]);
                for (uint64_t x = 0; x < N; x++)
                    ref[i][x] = (uint32_t)((uint64_t)ref[i][x] * ninv % q[i]);
            }
        } else if (strcmp(verify, "none")) {
            uint32_t *tw = ew ? NULL : ntt_twiddles(wN[i], N, q[i]);
            ntt_cpu_op(&c, ref[i], b[i], tw, q[i], tmp);
            free(tw);
        }
    }
    size_t dpu_words = W;
    uint32_t *xfer = (uint32_t *)study_xcalloc((size_t)D * dpu_words, 4, "per-DPU data");
    uint32_t *xfer_b = (uint32_t *)study_xcalloc(ew ? (size_t)D * dpu_words : 1, 4, "per-DPU operand");
    /* Per step size: the slot metadata (q, -q^-1, limb; zero on a step's idle DPUs) and the
     * n-point twiddles of every limb. */
    uint32_t *meta[NTT_MAX_STEPS] = { 0 }, *twn[NTT_MAX_STEPS] = { 0 };
    for (uint32_t s = 0; s < steps; s++) {
        if (cls[s] != s)
            continue;
        const struct layout *l = &ls[s];
        meta[s] = (uint32_t *)study_xcalloc((size_t)D * l->m * 4, 4, "slot metadata");
        for (uint32_t d = 0; d < l->active; d++)
            for (uint32_t k = 0; k < l->m; k++) {
                uint32_t inst, j, *mt = &meta[s][((size_t)d * l->m + k) * 4];
                slot_of(l, d, k, &inst, &j);
                mt[0] = q[inst], mt[1] = mont_qneg(q[inst]), mt[2] = inst, mt[3] = 0;
            }
        twn[s] = (uint32_t *)study_xcalloc((size_t)I * ns[s], 4, "step twiddles");
        for (uint32_t i = 0; i < I && !ew; i++) {
            uint32_t *t = ntt_twiddles(pow_mod(wN[i], N / ns[s], q[i]), ns[s], q[i]);
            memcpy(&twn[s][(size_t)i * ns[s]], t, ns[s] * 4);
            free(t);
        }
    }
    /* Output twiddles of step s: position p of vector j holds y_bitrev(p); between steps it is
     * multiplied by w_L^(off * bitrev(p)) (L the step's block length, off = j mod L/n); the
     * last step of an inverse NTT multiplies by N^-1. */
    uint32_t *post[NTT_MAX_STEPS] = { 0 };
    uint32_t has_post[NTT_MAX_STEPS] = { 0 };
    for (uint32_t s = 0; s < steps && !ew; s++) {
        const struct layout *l = &ls[s];
        uint64_t L = 1ull << logL[s];
        has_post[s] = s + 1 < steps || c.op == OP_INTT;
        if (!has_post[s])
            continue;
        post[s] = (uint32_t *)study_xcalloc((size_t)D * l->m * ns[s] * 2, 4, "output twiddles");
        for (uint32_t d = 0; d < l->active; d++)
            for (uint32_t k = 0; k < l->m; k++) {
                uint32_t inst, j;
                slot_of(l, d, k, &inst, &j);
                uint32_t qi = q[inst], wL = pow_mod(wN[inst], N / L, qi);
                uint32_t off = (uint32_t)(j % (L / ns[s]));
                uint32_t ninv = inv_mod((uint32_t)(N % qi), qi);
                uint32_t *pp = &post[s][((size_t)d * l->m + k) * ns[s] * 2];
                for (uint32_t p = 0; p < ns[s]; p++) {
                    uint32_t w = s + 1 < steps ? pow_mod(wL, (uint64_t)off * rev[s][p], qi) : ninv;
                    pp[2 * p] = w, pp[2 * p + 1] = shoup(w, qi);
                }
            }
    }

    /* Setup: allocation, program, metadata and twiddles (once per parameter set). */
    char prog[4096];
    snprintf(prog, sizeof(prog), "%s/ntt_dpu_%u", dirname(strdup(argv[0])), c.tasklets);
    struct dpu_set_t set, dpu;
    uint32_t each;
    DPU_ASSERT(dpu_alloc(D, NULL, &set));
    DPU_ASSERT(dpu_load(set, prog, NULL));
    /* DPU d of the layout: the set's order, or the collectives' logical order (entangled groups). */
    struct dpu_set_t *dpus = (struct dpu_set_t *)study_xcalloc(D, sizeof(struct dpu_set_t), "DPU handles");
#if NTT_HAVE_PIDCOMM
    uint32_t axes[2] = { l0->Dg, l0->groups };
    hypercube_manager *cube = NULL;
    if (collective) {
        cube = init_hypercube_manager(set, 2, axes);
        DPU_FOREACH_ENTANGLED_GROUP(set, dpu, each, D) { dpus[each] = dpu; }
    } else
#endif
        DPU_FOREACH(set, dpu, each) { dpus[each] = dpu; }
    for (uint32_t s = 0; s < steps; s++) {
        if (cls[s] != s)
            continue;
        for (each = 0; each < D; each++)
            DPU_ASSERT(dpu_prepare_xfer(dpus[each], &meta[s][(size_t)each * ls[s].m * 4]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, meta_off[s],
            (size_t)ls[s].m * 16, DPU_XFER_DEFAULT));
        if (!ew)
            DPU_ASSERT(dpu_broadcast_to(set, DPU_MRAM_HEAP_POINTER_NAME, tw_off[s], twn[s], (size_t)I * ns[s] * 4,
                DPU_XFER_DEFAULT));
    }
    for (uint32_t s = 0; s < steps && !ew; s++) {
        if (!has_post[s])
            continue;
        for (each = 0; each < ls[s].active; each++)
            DPU_ASSERT(dpu_prepare_xfer(dpus[each], &post[s][(size_t)each * ls[s].m * ns[s] * 2]));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, post_off[s],
            (size_t)ls[s].m * ns[s] * 8, DPU_XFER_DEFAULT));
    }
    if (setup_only) {
        DPU_ASSERT(dpu_free(set));
        printf("setup only: %u DPUs\n", D);
        return 0;
    }

    /* The run. Step s gathers vector j of every slot from the in-place arrays a[inst]; only
     * the step's active DPUs get data (the others idle with no slots). */
    struct study_phases ph = { 0 };
    uint64_t launch_ns[NTT_MAX_STEPS] = { 0 };
    for (uint32_t s = 0; s < steps; s++) {
        const struct layout *l = &ls[s];
        uint32_t nn = ns[s], ms = l->m;
        size_t words = (size_t)ms * nn;
        uint64_t e0 = study_now_ns();
        if (s > 0)
            STUDY_INTERDPU_BEGIN();
#if NTT_HAVE_PIDCOMM
        if (s > 0 && collective) {
            /* the transpose as an all-to-all in each group: pack, exchange, unpack */
            prm.mode = 3;
            DPU_ASSERT(dpu_broadcast_to(set, "params", 0, &prm, sizeof(prm), DPU_XFER_DEFAULT));
            DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
            pidcomm_alltoall(cube, "10", m * n * 4, prm.pack_off, prm.recv_off, 2 * m * n * 4);
            prm.mode = 4;
            DPU_ASSERT(dpu_broadcast_to(set, "params", 0, &prm, sizeof(prm), DPU_XFER_DEFAULT));
            DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
            prm.mode = 0;
        } else
#endif
        if (s > 0) {
            /* the previous step's outputs back into the in-place arrays (the transpose) */
            const struct layout *lp = &ls[s - 1];
            size_t pwords = (size_t)lp->m * ns[s - 1];
            for (each = 0; each < lp->active; each++)
                DPU_ASSERT(dpu_prepare_xfer(dpus[each], &xfer[(size_t)each * pwords]));
            DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, pwords * 4,
                DPU_XFER_DEFAULT));
            for (uint32_t d = 0; d < lp->active; d++)
                for (uint32_t k = 0; k < lp->m; k++) {
                    uint32_t inst, j;
                    slot_of(lp, d, k, &inst, &j);
                    const uint32_t *src = &xfer[((size_t)d * lp->m + k) * ns[s - 1]];
                    for (uint32_t p = 0; p < ns[s - 1]; p++)
                        a[inst][elem_of(logL[s - 1], logsub[s - 1], j, rev[s - 1][p])] = src[p];
                }
        }
        for (uint32_t d = 0; d < l->active && !(s > 0 && collective); d++)
            for (uint32_t k = 0; k < ms; k++) {
                uint32_t inst, j;
                slot_of(l, d, k, &inst, &j);
                uint32_t *dst = &xfer[((size_t)d * ms + k) * nn];
                for (uint32_t p = 0; p < nn; p++)
                    dst[p] = ew ? a[inst][(uint64_t)j * nn + p] : a[inst][elem_of(logL[s], logsub[s], j, p)];
                if (ew)
                    memcpy(&xfer_b[((size_t)d * ms + k) * nn], &b[inst][(uint64_t)j * nn], nn * 4);
            }
        if (!(s > 0 && collective)) {
            for (each = 0; each < l->active; each++)
                DPU_ASSERT(dpu_prepare_xfer(dpus[each], &xfer[(size_t)each * words]));
            DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, words * 4,
                DPU_XFER_DEFAULT));
        }
        if (ew) {
            for (each = 0; each < l->active; each++)
                DPU_ASSERT(dpu_prepare_xfer(dpus[each], &xfer_b[(size_t)each * words]));
            DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, prm.b_off, words * 4,
                DPU_XFER_DEFAULT));
        }
        prm.m = ms, prm.n = nn, prm.log2n = lg[s];
        prm.meta_off = meta_off[cls[s]], prm.tw_off = tw_off[cls[s]];
        prm.has_post = has_post[s];
        prm.post_off = post_off[s];
        if (l->active == D) {
            DPU_ASSERT(dpu_broadcast_to(set, "params", 0, &prm, sizeof(prm), DPU_XFER_DEFAULT));
        } else { /* the idle DPUs get no slots */
            struct ntt_params idle = prm;
            idle.m = 0;
            for (each = 0; each < D; each++)
                DPU_ASSERT(dpu_prepare_xfer(dpus[each], each < l->active ? &prm : &idle));
            DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, "params", 0, sizeof(prm), DPU_XFER_DEFAULT));
        }
        if (s > 0)
            STUDY_INTERDPU_END();
        uint64_t e1 = study_now_ns();
        if (s == 0)
            ph.cpu_dpu += e1 - e0;
        else
            ph.inter_dpu += e1 - e0;
        DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
        launch_ns[s] = study_now_ns() - e1;
        ph.kernel += launch_ns[s];
    }
    const struct layout *lz = &ls[steps - 1];
    uint32_t nz = ns[steps - 1];
    size_t zwords = (size_t)lz->m * nz;
    uint64_t f0 = study_now_ns();
    for (each = 0; each < lz->active; each++)
        DPU_ASSERT(dpu_prepare_xfer(dpus[each], &xfer[(size_t)each * zwords]));
    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, 0, zwords * 4, DPU_XFER_DEFAULT));
    uint64_t f1 = study_now_ns();
    /* Host: the results back in natural order (digit-reversed after the last step). */
    for (uint32_t d = 0; d < lz->active && ew; d++)
        for (uint32_t k = 0; k < lz->m; k++) {
            uint32_t inst, j;
            slot_of(lz, d, k, &inst, &j);
            memcpy(&a[inst][(uint64_t)j * nz], &xfer[((size_t)d * lz->m + k) * nz], nz * 4);
        }
    if (!ew) {
        /* in-place position of X[k]: k's mixed-radix digits (first step's size first) reversed */
        for (uint32_t i = 0; i < I; i++) {
            for (uint32_t d = 0; d < lz->active; d++)
                for (uint32_t k = 0; k < lz->m; k++) {
                    uint32_t inst, j;
                    slot_of(lz, d, k, &inst, &j);
                    if (inst != i)
                        continue;
                    const uint32_t *src = &xfer[((size_t)d * lz->m + k) * nz];
                    for (uint32_t p = 0; p < nz; p++)
                        tmp[elem_of(logL[steps - 1], logsub[steps - 1], j, rev[steps - 1][p])] = src[p];
                }
            for (uint64_t x = 0; x < N; x++) {
                uint64_t pos = 0, r = x;
                for (uint32_t s = 0; s < steps; s++) {
                    pos = (pos << lg[s]) | (r & (ns[s] - 1));
                    r >>= lg[s];
                }
                a[i][x] = tmp[pos];
            }
        }
    }
    uint64_t f2 = study_now_ns();
    ph.dpu_cpu = f1 - f0, ph.host = f2 - f1;
    DPU_ASSERT(dpu_free(set));

    size_t bad = 0;
    uint64_t sum = STUDY_FNV_INIT;
    for (uint32_t i = 0; i < I; i++) {
        sum = study_fnv(sum, a[i], N * 4);
        if (strcmp(verify, "none"))
            for (uint64_t x = 0; x < N; x++)
                if (a[i][x] != ref[i][x]) {
                    if (bad < 3)
                        fprintf(stderr, "mismatch: instance %u coefficient %" PRIu64 ": got %u expected %u\n", i,
                            x, a[i][x], ref[i][x]);
                    bad++;
                }
    }
    if (c.balanced)
        printf("ntt: op %s N %" PRIu64 " = %u^%u instances %u dpus %u (%u group(s) of %u, %u slot(s) per DPU) radix %u "
               "tasklets %u\n",
            c.op_name, N, n, steps, I, D, l0->groups, l0->Dg, m, c.radix, c.tasklets);
    else {
        printf("ntt: op %s N %" PRIu64 " =", c.op_name, N);
        for (uint32_t s = 0; s < steps; s++)
            printf("%s%u", s ? "x" : " ", ns[s]);
        printf(" instances %u dpus %u radix %u tasklets %u\n", I, D, c.radix, c.tasklets);
    }
    for (uint32_t s = 0; s < steps && (!c.balanced || l0->active < D); s++)
        printf("step %u: %u points, %u of %u DPUs busy (%u group(s) of %u, %u slot(s) per DPU)\n", s + 1, ns[s],
            ls[s].active, D, ls[s].groups, ls[s].Dg, ls[s].m);
    for (uint32_t s = 0; s < steps; s++)
        printf("kernel %u (ms): %.3f\n", s + 1, launch_ns[s] / 1e6);
    study_print_phases("ntt", "host reorder", &ph);
    printf("checksum 0x%016" PRIx64 "\n", sum);
    if (!strcmp(verify, "none"))
        printf("not verified (--verify none)\n");
    else
        printf("%s ntt (%zu of %" PRIu64 " values differ from the %s CPU reference)\n", bad ? "FAIL" : "OK", bad,
            (uint64_t)I * N, verify);
    return bad ? 1 : 0;
}
