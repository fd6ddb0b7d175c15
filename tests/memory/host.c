/* Host side of the memory-store tests (tests/memory/run.sh) and of bench/memory.
 * The store comes from UPMEM_PROFILE_BASE (memory=, memoryBudget=, persist=).
 *
 *   host fill SEED DPUS MIB      write a pattern to MIB MiB of each DPU's MRAM, check a
 *                                sampled checksum computed by the DPUs
 *   host verify SEED DPUS MIB    read every byte back and compare with the pattern
 *   host big SEED DPUS MIB       fill, then read back the first and last 512 KiB of each DPU;
 *                                prints the peak RSS
 *   host bcast DPUS MIB          broadcast one MIB MiB buffer to every DPU; prints the memory
 *                                it took; reads every DPU back; checks copy-on-write
 *   host crash DPUS              endless 8-byte writes, printing each completed call
 *   host crashcheck DPUS LAST    checks that every write up to LAST is there
 *   host stream DPUS MIB REPS    STREAM copy/scale/add/triad by DPU kernels and by host
 *                                transfers; prints wall seconds per phase
 *   host ckpt SEED DPUS STEPS K FILE MODE
 *                                a multi-launch program (STEPS launches of a = 5a + 1 over
 *                                1 MiB of each DPU, a faulting launch after step K), printing
 *                                each step's per-DPU digest and cycles. MODE: run (all steps),
 *                                save (steps 1..K, then save the set to FILE), resume (another
 *                                rank first, restore FILE, steps K+1..), sdk (steps 1..K, then
 *                                every DPU through dpu_checkpoint_save/serialize, two steps
 *                                that change everything, deserialize/restore, steps K+1..)
 *                                With STEP_PAUSE_MS=N in the environment, sleeps N ms after
 *                                every step (idle between launches)
 * Exit 0 only when every check passed. */
#include <dpu_checkpoint.h>
#include <openpim.h>
#define _GNU_SOURCE
#include <dpu.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KERNEL "bin/kernel"
#define CHUNK (512u << 10)

static uint32_t pat(uint32_t seed, uint32_t dpu, uint32_t word)
{
    uint32_t x = seed * 0x9E3779B1u ^ dpu * 0x85EBCA77u ^ word * 0xC2B2AE3Du;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    x *= 0x297A2D39u;
    x ^= x >> 15;
    return x;
}

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':')
            v = atol(line + n + 1);
    if (f)
        fclose(f);
    return v;
}

/* Bytes this process caused to be written to storage (/proc/self/io write_bytes). */
static long long io_write_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[256];
    long long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "write_bytes:", 12))
            v = atoll(line + 12);
    if (f)
        fclose(f);
    return v;
}

static long pss_kib(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Pss:", 4))
            v = atol(line + 4);
    if (f)
        fclose(f);
    return v;
}

static struct dpu_set_t alloc_load(uint32_t nr_dpus)
{
    struct dpu_set_t set;
    DPU_ASSERT(dpu_alloc(nr_dpus, NULL, &set));
    DPU_ASSERT(dpu_load(set, KERNEL, NULL));
    return set;
}

/* Writes the pattern to [0, bytes) of each DPU's MRAM heap, chunk by chunk. */
static void write_pattern(struct dpu_set_t set, uint32_t nr_dpus, uint32_t seed, uint64_t bytes)
{
    uint32_t *bufs = malloc((size_t)nr_dpus * CHUNK);
    struct dpu_set_t dpu;
    uint32_t d;
    for (uint64_t off = 0; off < bytes; off += CHUNK) {
        uint32_t len = bytes - off < CHUNK ? (uint32_t)(bytes - off) : CHUNK;
        DPU_FOREACH (set, dpu, d) {
            uint32_t *b = bufs + (size_t)d * (CHUNK / 4);
            for (uint32_t k = 0; k < len / 4; k++)
                b[k] = pat(seed, d, (uint32_t)(off / 4) + k);
            DPU_ASSERT(dpu_prepare_xfer(dpu, b));
        }
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)off, len,
                                 DPU_XFER_DEFAULT));
    }
    free(bufs);
}

/* Reads [0, bytes) of each DPU back (only the first and last chunks when `sampled`) and
 * compares it with the pattern; returns mismatches. */
static uint64_t check_pattern(struct dpu_set_t set, uint32_t nr_dpus, uint32_t seed, uint64_t bytes, int sampled)
{
    uint32_t *bufs = malloc((size_t)nr_dpus * CHUNK);
    struct dpu_set_t dpu;
    uint32_t d;
    uint64_t bad = 0;
    for (uint64_t off = 0; off < bytes; off += CHUNK) {
        uint32_t len = bytes - off < CHUNK ? (uint32_t)(bytes - off) : CHUNK;
        if (sampled && off != 0 && off + CHUNK < bytes)
            continue;
        DPU_FOREACH (set, dpu, d)
            DPU_ASSERT(dpu_prepare_xfer(dpu, bufs + (size_t)d * (CHUNK / 4)));
        DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)off, len,
                                 DPU_XFER_DEFAULT));
        for (d = 0; d < nr_dpus; d++) {
            uint32_t *b = bufs + (size_t)d * (CHUNK / 4);
            for (uint32_t k = 0; k < len / 4; k++)
                if (b[k] != pat(seed, d, (uint32_t)(off / 4) + k)) {
                    if (bad < 5)
                        fprintf(stderr, "DPU %u word %" PRIu64 ": %08x, expected %08x\n", d, off / 4 + k,
                                b[k], pat(seed, d, (uint32_t)(off / 4) + k));
                    bad++;
                }
        }
    }
    free(bufs);
    return bad;
}

/* Sampled checksum by the DPUs (one 1 KiB block in every 64 KiB) against the CPU's. */
static int check_sampled(struct dpu_set_t set, uint32_t seed, uint64_t bytes)
{
    uint32_t mode = 0, n = (uint32_t)bytes, stride = 64 << 10;
    DPU_ASSERT(dpu_broadcast_to(set, "mode", 0, &mode, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to(set, "n_bytes", 0, &n, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_broadcast_to(set, "stride", 0, &stride, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    struct dpu_set_t dpu;
    uint32_t d;
    int bad = 0;
    DPU_FOREACH (set, dpu, d) {
        uint64_t sums[NR_TASKLETS], got = 0, want = 0;
        DPU_ASSERT(dpu_copy_from(dpu, "sums", 0, sums, sizeof sums));
        for (int t = 0; t < NR_TASKLETS; t++)
            got += sums[t];
        for (uint64_t off = 0; off < bytes; off += stride)
            for (uint32_t k = 0; k < 256; k++)
                want += pat(seed, d, (uint32_t)(off / 4) + k);
        if (got != want) {
            fprintf(stderr, "DPU %u: sampled checksum %" PRIu64 ", expected %" PRIu64 "\n", d, got, want);
            bad++;
        }
    }
    return bad;
}

/* verify: 0 none, 1 every byte read back, 2 first and last chunks read back */
static int cmd_fill(uint32_t seed, uint32_t nr_dpus, uint64_t bytes, int verify)
{
    struct dpu_set_t set = alloc_load(nr_dpus);
    double t0 = wall();
    write_pattern(set, nr_dpus, seed, bytes);
    int bad = check_sampled(set, seed, bytes);
    double t1 = wall();
    uint64_t wrong = verify ? check_pattern(set, nr_dpus, seed, bytes, verify == 2) : 0;
    double t2 = wall();
    DPU_ASSERT(dpu_free(set));
    printf("fill %u DPUs x %" PRIu64 " MiB: write+launch %.2f s, read back %.2f s, peak RSS %ld MiB, written to disk %lld MiB\n",
           nr_dpus, bytes >> 20, t1 - t0, t2 - t1, status_kib("VmHWM") >> 10, io_write_bytes() >> 20);
    if (bad || wrong) {
        printf("FAILED: %d DPU checksums wrong, %" PRIu64 " words wrong\n", bad, wrong);
        return 1;
    }
    printf("OK\n");
    return 0;
}

static int cmd_verify(uint32_t seed, uint32_t nr_dpus, uint64_t bytes)
{
    struct dpu_set_t set = alloc_load(nr_dpus);
    uint64_t wrong = check_pattern(set, nr_dpus, seed, bytes, 0);
    DPU_ASSERT(dpu_free(set));
    if (wrong) {
        printf("FAILED: %" PRIu64 " words differ from what was written\n", wrong);
        return 1;
    }
    printf("OK: %u DPUs x %" PRIu64 " MiB as written\n", nr_dpus, bytes >> 20);
    return 0;
}

static int cmd_bcast(uint32_t nr_dpus, uint64_t bytes)
{
    struct dpu_set_t set = alloc_load(nr_dpus);
    uint32_t *buf = malloc(bytes);
    for (uint64_t k = 0; k < bytes / 4; k++)
        buf[k] = pat(7, 0, (uint32_t)k);
    uint32_t *back = malloc(bytes);
    memset(back, 1, bytes);
    long before = pss_kib();
    DPU_ASSERT(dpu_broadcast_to(set, DPU_MRAM_HEAP_POINTER_NAME, 0, buf, bytes, DPU_XFER_DEFAULT));
    long after = pss_kib();
    /* Read every DPU back. */
    struct dpu_set_t dpu;
    uint32_t d;
    uint32_t wrong = 0;
    DPU_FOREACH (set, dpu, d) {
        DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, back, bytes));
        if (memcmp(back, buf, bytes))
            wrong++;
    }
    long after_read = pss_kib();
    long pte = status_kib("VmPTE");
    /* Copy-on-write: DPU 1 gets a host write inside a shared page, DPU 0 a kernel write
     * (STREAM copy c = a lies past the buffer; step a = 5a + 1 changes a). */
    uint32_t one = 0xdeadbeef;
    struct dpu_set_t d0, d1;
    uint32_t k = 0;
    DPU_FOREACH (set, dpu, d) {
        if (d == 0)
            d0 = dpu;
        if (d == 1)
            d1 = dpu;
        k++;
    }
    DPU_ASSERT(dpu_copy_to(d1, DPU_MRAM_HEAP_POINTER_NAME, 4096 + 100 * 8, &one, 4));
    uint32_t mode = 5, n = 8192;
    DPU_ASSERT(dpu_copy_to(d0, "mode", 0, &mode, 4));
    DPU_ASSERT(dpu_copy_to(d0, "n_bytes", 0, &n, 4));
    DPU_ASSERT(dpu_launch(d0, DPU_SYNCHRONOUS));
    int cow_bad = 0;
    /* What the step kernel makes of DPU 0's first n bytes, 1 KiB block by block. */
    uint32_t *stepped = malloc(n);
    memcpy(stepped, buf, n);
    for (uint32_t b = 0; b < n / 4; b += 256) {
        for (uint32_t r = 0; r < (stepped[b] & 15); r++)
            stepped[b + 1] = stepped[b + 1] * 3 + r;
        for (uint32_t w = b; w < b + 256; w++)
            stepped[w] = stepped[w] * 5 + 1;
    }
    DPU_FOREACH (set, dpu, d) {
        DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, back, 3 * 4096));
        for (uint32_t w = 0; w < 3 * 1024; w++) {
            uint32_t want = buf[w];
            if (d == 0 && w < n / 4)
                want = stepped[w];
            if (d == 1 && w == (4096 + 800) / 4)
                want = one;
            if (back[w] != want) {
                if (cow_bad < 5)
                    fprintf(stderr, "DPU %u word %u: %08x, expected %08x\n", d, w, back[w], want);
                cow_bad++;
            }
        }
    }
    DPU_ASSERT(dpu_free(set));
    long mib = (long)(bytes >> 20);
    printf("broadcast %ld MiB to %u DPUs: PSS +%ld MiB after the broadcast, +%ld MiB after reading every DPU back "
           "(page tables %ld MiB)\n",
           mib, nr_dpus, (after - before) >> 10, (after_read - before) >> 10, pte >> 10);
    printf("bcast_pss_kib=%ld read_pss_kib=%ld buffer_kib=%ld\n", after - before, after_read - before,
           (long)(bytes >> 10));
    if (wrong || cow_bad) {
        printf("FAILED: %u DPUs read back wrong bytes, %d words wrong after copy-on-write writes\n", wrong,
               cow_bad);
        return 1;
    }
    printf("OK\n");
    return 0;
}

static int cmd_crash(uint32_t nr_dpus)
{
    struct dpu_set_t set = alloc_load(nr_dpus);
    struct dpu_set_t dpu;
    uint32_t d;
    struct dpu_set_t dpus[64];
    DPU_FOREACH (set, dpu, d)
        dpus[d] = dpu;
    for (uint64_t k = 0; k < 1000000; k++) {
        uint64_t v = k + 1;
        DPU_ASSERT(dpu_copy_to(dpus[k % nr_dpus], DPU_MRAM_HEAP_POINTER_NAME, (uint32_t)(k / nr_dpus) * 8, &v, 8));
        printf("%" PRIu64 "\n", k);
        fflush(stdout);
    }
    return 0;
}

static int cmd_crashcheck(uint32_t nr_dpus, uint64_t last)
{
    struct dpu_set_t set = alloc_load(nr_dpus);
    struct dpu_set_t dpu;
    uint32_t d;
    uint64_t per = last / nr_dpus + 1, bad = 0;
    uint64_t *v = malloc(per * 8);
    DPU_FOREACH (set, dpu, d) {
        DPU_ASSERT(dpu_copy_from(dpu, DPU_MRAM_HEAP_POINTER_NAME, 0, v, (uint32_t)per * 8));
        for (uint64_t i = 0; i < per; i++) {
            uint64_t k = i * nr_dpus + d;
            if (k <= last && v[i] != k + 1) {
                if (bad < 5)
                    fprintf(stderr, "write %" PRIu64 " (DPU %u, offset %" PRIu64 "): %" PRIu64 " found\n", k, d,
                            i * 8, v[i]);
                bad++;
            }
        }
    }
    DPU_ASSERT(dpu_free(set));
    if (bad) {
        printf("FAILED: %" PRIu64 " of the %" PRIu64 " completed writes are lost\n", bad, last + 1);
        return 1;
    }
    printf("OK: all %" PRIu64 " completed writes are there\n", last + 1);
    return 0;
}

static void launch_mode(struct dpu_set_t set, uint32_t mode)
{
    DPU_ASSERT(dpu_broadcast_to(set, "mode", 0, &mode, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
}

static int cmd_stream(uint32_t nr_dpus, uint64_t bytes, int reps)
{
    struct dpu_set_t set = alloc_load(nr_dpus);
    uint32_t n = (uint32_t)bytes;
    DPU_ASSERT(dpu_broadcast_to(set, "n_bytes", 0, &n, 4, DPU_XFER_DEFAULT));
    double t = wall();
    for (int a = 0; a < 3; a++)
        write_pattern(set, nr_dpus, (uint32_t)a, bytes); /* a (then b, c) get patterns */
    /* Arrays b and c: written by the kernels below. */
    double t_init = wall() - t;
    static const char *names[] = {"copy", "scale", "add", "triad"};
    double dpu_s[4] = {0}, host_s[4] = {0};
    for (int r = 0; r < reps; r++)
        for (int m = 1; m <= 4; m++) {
            t = wall();
            launch_mode(set, (uint32_t)m);
            dpu_s[m - 1] += wall() - t;
        }
    /* Through host transfers: read the operands from every DPU, compute, write the result. */
    uint32_t *x = malloc((size_t)nr_dpus * CHUNK), *y = malloc((size_t)nr_dpus * CHUNK);
    struct dpu_set_t dpu;
    uint32_t d;
    for (int r = 0; r < reps; r++)
        for (int m = 1; m <= 4; m++) {
            t = wall();
            uint32_t src1 = m == 1 ? 0 : m == 2 ? 2 : m == 3 ? 0 : 1; /* array index */
            uint32_t src2 = m == 3 ? 1 : 2;
            uint32_t dst = m == 1 ? 2 : m == 2 ? 1 : m == 3 ? 2 : 0;
            for (uint64_t off = 0; off < bytes; off += CHUNK) {
                uint32_t len = bytes - off < CHUNK ? (uint32_t)(bytes - off) : CHUNK;
                DPU_FOREACH (set, dpu, d)
                    DPU_ASSERT(dpu_prepare_xfer(dpu, x + (size_t)d * (CHUNK / 4)));
                DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME,
                                         src1 * n + (uint32_t)off, len, DPU_XFER_DEFAULT));
                if (m >= 3) {
                    DPU_FOREACH (set, dpu, d)
                        DPU_ASSERT(dpu_prepare_xfer(dpu, y + (size_t)d * (CHUNK / 4)));
                    DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME,
                                             src2 * n + (uint32_t)off, len, DPU_XFER_DEFAULT));
                }
                for (size_t k = 0; k < (size_t)nr_dpus * (len / 4); k++) {
                    size_t i = (k / (len / 4)) * (CHUNK / 4) + k % (len / 4);
                    if (m == 2)
                        x[i] *= 3;
                    else if (m == 3)
                        x[i] += y[i];
                    else if (m == 4)
                        x[i] = x[i] + 3 * y[i];
                }
                DPU_FOREACH (set, dpu, d)
                    DPU_ASSERT(dpu_prepare_xfer(dpu, x + (size_t)d * (CHUNK / 4)));
                DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_TO_DPU, DPU_MRAM_HEAP_POINTER_NAME, dst * n + (uint32_t)off,
                                         len, DPU_XFER_DEFAULT));
            }
            host_s[m - 1] += wall() - t;
        }
    /* The result, checked: every word of the three arrays of every DPU against the same
     * sequence of operations replayed on the host (a = the last pattern written, b = c = 0,
     * then 2 * reps rounds of copy, scale, add, triad: the DPU kernels' and the host's). */
    uint64_t wrong = 0;
    uint32_t *z = malloc((size_t)nr_dpus * CHUNK);
    for (uint64_t off = 0; off < bytes; off += CHUNK) {
        uint32_t len = bytes - off < CHUNK ? (uint32_t)(bytes - off) : CHUNK;
        uint32_t *got[3] = {x, y, z};
        for (uint32_t arr = 0; arr < 3; arr++) {
            DPU_FOREACH (set, dpu, d)
                DPU_ASSERT(dpu_prepare_xfer(dpu, got[arr] + (size_t)d * (CHUNK / 4)));
            DPU_ASSERT(dpu_push_xfer(set, DPU_XFER_FROM_DPU, DPU_MRAM_HEAP_POINTER_NAME, arr * n + (uint32_t)off,
                                     len, DPU_XFER_DEFAULT));
        }
        for (d = 0; d < nr_dpus; d++)
            for (uint32_t k = 0; k < len / 4; k++) {
                uint32_t a = pat(2, d, (uint32_t)(off / 4) + k), b = 0, c = 0;
                for (int r = 0; r < 2 * reps; r++) {
                    c = a;
                    b = 3 * c;
                    c = a + b;
                    a = b + 3 * c;
                }
                size_t i = (size_t)d * (CHUNK / 4) + k;
                wrong += (x[i] != a) + (y[i] != b) + (z[i] != c);
            }
    }
    free(z);
    free(x);
    free(y);
    DPU_ASSERT(dpu_free(set));
    if (wrong) {
        printf("FAILED: %" PRIu64 " words of the STREAM arrays differ from the host's replay\n", wrong);
        return 1;
    }
    printf("stream check OK\n");
    printf("init %.3f\n", t_init);
    for (int m = 0; m < 4; m++)
        printf("%s dpu %.4f host %.4f\n", names[m], dpu_s[m] / reps, host_s[m] / reps);
    printf("peak_rss_mib %ld\n", status_kib("VmHWM") >> 10);
    printf("io_write_mib %lld\n", io_write_bytes() >> 20);
    return 0;
}

#define STEP_BYTES (1u << 20)

/* One launch of the step kernel; prints per-DPU digest (sum of the tasklets' sums and the
 * launch counter) and cycles. */
static void step(struct dpu_set_t set, int k, int print)
{
    uint32_t mode = 5;
    DPU_ASSERT(dpu_broadcast_to(set, "mode", 0, &mode, 4, DPU_XFER_DEFAULT));
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    struct dpu_set_t dpu;
    uint32_t d;
    DPU_FOREACH (set, dpu, d) {
        uint64_t sums[NR_TASKLETS], digest = 0, cycles;
        uint32_t launches;
        DPU_ASSERT(dpu_copy_from(dpu, "sums", 0, sums, sizeof sums));
        DPU_ASSERT(dpu_copy_from(dpu, "cycles", 0, &cycles, 8));
        DPU_ASSERT(dpu_copy_from(dpu, "launches", 0, &launches, 4));
        for (int t = 0; t < NR_TASKLETS; t++)
            digest = digest * 31 + sums[t];
        if (print)
            printf("step %d dpu %u digest %016" PRIx64 " launches %u cycles %" PRIu64 "\n", k, d, digest,
                   launches, cycles);
    }
}

static void fault_launch(struct dpu_set_t set)
{
    uint32_t mode = 6;
    DPU_ASSERT(dpu_broadcast_to(set, "mode", 0, &mode, 4, DPU_XFER_DEFAULT));
    dpu_error_t e = dpu_launch(set, DPU_SYNCHRONOUS);
    bool done, fault;
    DPU_ASSERT(dpu_status(set, &done, &fault));
    printf("fault launch: %s, status fault=%d\n", e == DPU_ERR_DPU_FAULT ? "DPU_ERR_DPU_FAULT" : "no fault", fault);
}

static int cmd_ckpt(uint32_t seed, uint32_t nr_dpus, int steps, int k, const char *file, const char *mode)
{
    struct dpu_set_t set, other;
    int resume = !strcmp(mode, "resume");
    if (resume) /* take rank 0 first: the set lands on other rank numbers than when saved */
        DPU_ASSERT(dpu_alloc_ranks(1, NULL, &other));
    set = alloc_load(nr_dpus);
    uint32_t n = STEP_BYTES;
    DPU_ASSERT(dpu_broadcast_to(set, "n_bytes", 0, &n, 4, DPU_XFER_DEFAULT));
    int first = 1;
    const char *pause = getenv("STEP_PAUSE_MS");
    unsigned pause_ms = pause ? (unsigned)atoi(pause) : 0;
    if (resume) {
        dpu_error_t e = openpim_checkpoint_restore_file(set, file);
        if (e != DPU_OK) {
            printf("restore failed: %s\n", dpu_error_to_string(e));
            return 1;
        }
        first = k + 1;
    } else {
        write_pattern(set, nr_dpus, seed, STEP_BYTES);
    }
    for (int s = first; s <= steps; s++) {
        if (!strcmp(mode, "save") && s > k)
            break;
        step(set, s, 1);
        if (s == k && !resume)
            fault_launch(set);
        fflush(stdout);
        if (pause_ms) /* idle between launches (tests/memory/run.sh oversubscribe) */
            usleep(pause_ms * 1000);
        if (s == k && !strcmp(mode, "save")) {
            DPU_ASSERT(openpim_checkpoint_save_file(set, file));
            break;
        }
        if (s == k && !strcmp(mode, "sdk")) {
            struct dpu_set_t dpu;
            uint32_t d;
            uint8_t *blobs[64] = {0};
            uint32_t sizes[64] = {0};
            DPU_FOREACH (set, dpu, d) {
                struct dpu_context_t ctx;
                memset(&ctx, 0, sizeof ctx);
                DPU_ASSERT(dpu_checkpoint_save(dpu, DPU_CHECKPOINT_ALL, &ctx));
                if (d == 0) {
                    /* A caller buffer of the wrong size is refused; the right size works. */
                    uint32_t size = dpu_checkpoint_get_serialized_context_size(&ctx);
                    uint8_t *buf = malloc(size), *p = buf;
                    uint32_t wrong = size - 1;
                    if (dpu_checkpoint_serialize(&ctx, &p, &wrong) != DPU_ERR_INVALID_BUFFER_SIZE) {
                        printf("FAILED: a too small serialize buffer was accepted\n");
                        return 1;
                    }
                    uint32_t right = size;
                    DPU_ASSERT(dpu_checkpoint_serialize(&ctx, &p, &right));
                    printf("serialized context: %u bytes, mem_fault=%d\n", right, ctx.mem_fault);
                    free(buf);
                }
                DPU_ASSERT(dpu_checkpoint_serialize(&ctx, &blobs[d], &sizes[d]));
                DPU_ASSERT(dpu_checkpoint_free(&ctx));
                if (ctx.mram != NULL || ctx.wram != NULL) {
                    printf("FAILED: dpu_checkpoint_free left pointers set\n");
                    return 1;
                }
            }
            step(set, 0, 0); /* change everything */
            step(set, 0, 0);
            DPU_FOREACH (set, dpu, d) {
                struct dpu_context_t ctx;
                memset(&ctx, 0, sizeof ctx);
                DPU_ASSERT(dpu_checkpoint_deserialize(blobs[d], sizes[d], &ctx));
                DPU_ASSERT(dpu_checkpoint_restore(dpu, DPU_CHECKPOINT_ALL, &ctx));
                DPU_ASSERT(dpu_checkpoint_free(&ctx));
                free(blobs[d]);
            }
        }
    }
    DPU_ASSERT(dpu_free(set));
    if (resume)
        DPU_ASSERT(dpu_free(other));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of host.c\n");
        return 2;
    }
    const char *cmd = argv[1];
#define ARG(i) (argc > (i) ? strtoull(argv[i], NULL, 0) : 0)
    if (!strcmp(cmd, "fill"))
        return cmd_fill((uint32_t)ARG(2), (uint32_t)ARG(3), ARG(4) << 20, 0);
    if (!strcmp(cmd, "big"))
        return cmd_fill((uint32_t)ARG(2), (uint32_t)ARG(3), ARG(4) << 20, 2);
    if (!strcmp(cmd, "verify"))
        return cmd_verify((uint32_t)ARG(2), (uint32_t)ARG(3), ARG(4) << 20);
    if (!strcmp(cmd, "bcast"))
        return cmd_bcast((uint32_t)ARG(2), ARG(3) << 20);
    if (!strcmp(cmd, "crash"))
        return cmd_crash((uint32_t)ARG(2));
    if (!strcmp(cmd, "crashcheck"))
        return cmd_crashcheck((uint32_t)ARG(2), ARG(3));
    if (!strcmp(cmd, "stream"))
        return cmd_stream((uint32_t)ARG(2), ARG(3) << 20, (int)ARG(4));
    if (!strcmp(cmd, "ckpt") && argc == 8)
        return cmd_ckpt((uint32_t)ARG(2), (uint32_t)ARG(3), (int)ARG(4), (int)ARG(5), argv[6], argv[7]);
    fprintf(stderr, "unknown command %s\n", cmd);
    return 2;
}
