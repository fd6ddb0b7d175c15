/* Host memory of the emulated server: resident set before allocation, after allocating
 * NR_DPUS (default: all) and loading a program, and after a launch that writes one MRAM
 * word per tasklet. Usage: mem_host [NR_DPUS] */
#include <dpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

int main(int argc, char **argv)
{
    uint32_t want = argc > 1 ? (uint32_t)atoi(argv[1]) : DPU_ALLOCATE_ALL;
    struct dpu_set_t set;
    long before = rss_kib();
    DPU_ASSERT(dpu_alloc(want, NULL, &set));
    uint32_t nr_dpus;
    DPU_ASSERT(dpu_get_nr_dpus(set, &nr_dpus));
    long allocated = rss_kib();
    DPU_ASSERT(dpu_load(set, "bin/tiny_dpu", NULL));
    long loaded = rss_kib();
    DPU_ASSERT(dpu_launch(set, DPU_SYNCHRONOUS));
    long launched = rss_kib();
    printf("dpus=%u rss_before_kib=%ld rss_allocated_kib=%ld rss_loaded_kib=%ld rss_launched_kib=%ld\n",
        nr_dpus, before, allocated, loaded, launched);
    DPU_ASSERT(dpu_free(set));
    return 0;
}
