// The virtual clock in a C++ OpenMP host: std::chrono::steady_clock, system_clock,
// high_resolution_clock and omp_get_wtime show a synchronous launch as the kernel's modeled
// time (its cycles at the DPU's frequency plus the launch's cost), within 3% and 0.3 ms, not
// the emulation's time (measured with the raw system call); OPENPIM_CLOCK=real gives the real
// clocks. Kernel: ../virtual_clock/task.c.
#include <dpu.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>

static const int64_t MS = 1000000;
static int failures;

#define CHECK(ok, ...)                                                                             \
    do {                                                                                           \
        std::printf("  %s ", (ok) ? "ok  " : "FAIL");                                              \
        std::printf(__VA_ARGS__);                                                                  \
        std::printf("\n");                                                                         \
        if (!(ok))                                                                                 \
            failures++;                                                                            \
    } while (0)

static int64_t raw_monotonic()
{
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
template <typename Clock> static int64_t now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
static double ms(int64_t ns) { return (double)ns / 1e6; }
static bool near(int64_t got, int64_t want)
{
    int64_t d = got > want ? got - want : want - got;
    return d <= want * 3 / 100 + 3 * MS / 10;
}

int main()
{
    const bool real = std::getenv("OPENPIM_CLOCK") != nullptr;
    const uint32_t nr_dpus = 64, iterations = 16000;
    struct dpu_set_t set, dpu;
    DPU_ASSERT(dpu_alloc(nr_dpus, nullptr, &set));
    DPU_ASSERT(dpu_load(set, "./bin/dpu_spin", nullptr));
    DPU_ASSERT(dpu_broadcast_to(set, "iterations", 0, &iterations, sizeof(iterations), DPU_XFER_DEFAULT));

    int64_t raw0 = raw_monotonic();
    int64_t st0 = now_ns<std::chrono::steady_clock>(), sy0 = now_ns<std::chrono::system_clock>();
    int64_t hr0 = now_ns<std::chrono::high_resolution_clock>();
    double w0 = omp_get_wtime();
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    double w1 = omp_get_wtime();
    int64_t hr1 = now_ns<std::chrono::high_resolution_clock>();
    int64_t sy1 = now_ns<std::chrono::system_clock>(), st1 = now_ns<std::chrono::steady_clock>();
    int64_t raw1 = raw_monotonic();

    uint64_t cycles = 0;
    uint32_t cps = 0;
    DPU_FOREACH (set, dpu) {
        DPU_ASSERT(dpu_copy_from(dpu, "cycles", 0, &cycles, sizeof(cycles)));
        DPU_ASSERT(dpu_copy_from(dpu, "clocks_per_sec", 0, &cps, sizeof(cps)));
        break;
    }
    // The launch as the default profile charges it: cycles / frequency + 85.5 us + 5.8 us a rank.
    int64_t kernel = (int64_t)(cycles * 1000000000ULL / cps) + 85500 + 5800;
    int64_t emulation = raw1 - raw0;
    const char *names[] = { "std::chrono::steady_clock", "std::chrono::system_clock",
        "std::chrono::high_resolution_clock", "omp_get_wtime" };
    int64_t deltas[] = { st1 - st0, sy1 - sy0, hr1 - hr0, (int64_t)((w1 - w0) * 1e9) };
    std::printf("launch: modeled %.3f ms, emulation (real) %.3f ms%s\n", ms(kernel), ms(emulation),
        real ? " (OPENPIM_CLOCK=real)" : "");
    for (int i = 0; i < 4; i++) {
        if (real)
            CHECK(near(deltas[i], emulation), "%s: %.3f ms, the real time %.3f ms", names[i], ms(deltas[i]),
                ms(emulation));
        else
            CHECK(near(deltas[i], kernel), "%s: %.3f ms, the modeled launch %.3f ms", names[i], ms(deltas[i]),
                ms(kernel));
    }
    // The test means something only if the two times differ.
    CHECK(!near(emulation, kernel), "the emulation's real time (%.3f ms) differs from the modeled one (%.3f ms)",
        ms(emulation), ms(kernel));
    DPU_ASSERT(dpu_free(set));
    std::printf("%s virtual clock in C++/OpenMP\n", failures ? "FAIL" : "OK");
    return failures != 0;
}
