/* The printf calls of this test, shared by the DPU program (which prints them)
 * and the host (which formats the same calls with snprintf to get the expected
 * log). `v` is a struct print_values. Only types of equal width on both sides. */
#ifndef PRINT_CASES_H
#define PRINT_CASES_H

#include <stdint.h>

struct print_values {
    uint64_t ull;
    int64_t ll;
    double d;
    int32_t i;
    uint32_t u;
    float f;
    char c;
    char s[15];
};

#define PRINT_CASES(P, v)                                                                          \
    P("int %d %i neg %d zero %d\n", (int)(v).i, (int)(v).i, (int)-(v).i, 0);                       \
    P("uns %u hex %x HEX %X oct %o alt %#x\n", (unsigned)(v).u, (unsigned)(v).u, (unsigned)(v).u,  \
        (unsigned)(v).u, (unsigned)(v).u);                                                         \
    P("width [%6d] [%-6d] [%06d] [%+d] [% d]\n", (int)(v).i % 1000, (int)(v).i % 1000,            \
        (int)(v).i % 1000, (int)(v).i % 1000, (int)(v).i % 1000);                                  \
    P("long %ld %lu %lx\n", (long)(v).i, (unsigned long)(v).u, (unsigned long)(v).u);              \
    P("64 %lld %llu %llx %016llX\n", (long long)(v).ll, (unsigned long long)(v).ull,             \
        (unsigned long long)(v).ull, (unsigned long long)(v).ull);                                 \
    P("char [%c] [%3c] str [%s] [%8s] [%-8s] [%.3s]\n", (v).c, (v).c, (v).s, (v).s, (v).s, (v).s); \
    P("double %f %.2f %10.3f %-10.1f| %e %.3E %g %g\n", (v).d, (v).d, (v).d, (v).d, (v).d, (v).d,  \
        (v).d, (v).d * 1e-7);                                                                      \
    P("float %f %.1f %g\n", (double)(v).f, (double)(v).f, (double)(v).f);                          \
    P("star [%*d] [%.*f] percent %% done\n", 7, (int)(v).i % 100, 3, (v).d);                       \
    P("short %hd %hu %hhd %hhu\n", (short)(v).i, (unsigned short)(v).u, (signed char)(v).i,       \
        (unsigned char)(v).u);                                                                     \
    P("%s\n", "no conversion after this string")

#endif
