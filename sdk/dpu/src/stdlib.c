/* OpenPIM DPU runtime: <stdlib.h> basics. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <limits.h>

int abs(int x) { return x < 0 ? -x : x; }
long labs(long x) { return x < 0 ? -x : x; }
long long llabs(long long x) { return x < 0 ? -x : x; }

div_t div(int num, int den)
{
    div_t r = { num / den, num % den };
    return r;
}

ldiv_t ldiv(long num, long den)
{
    ldiv_t r = { num / den, num % den };
    return r;
}

lldiv_t lldiv(long long num, long long den)
{
    lldiv_t r = { num / den, num % den };
    return r;
}

static unsigned long long parse_unsigned(const char *s, char **end, int base, int *neg, int *any, int *overflow)
{
    const char *p = s;
    unsigned long long v = 0;
    *neg = 0;
    *any = 0;
    *overflow = 0;
    while (isspace((unsigned char)*p)) {
        p++;
    }
    if (*p == '+' || *p == '-') {
        *neg = (*p == '-');
        p++;
    }
    if ((base == 0 || base == 16) && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && isxdigit((unsigned char)p[2])) {
        p += 2;
        base = 16;
    } else if (base == 0) {
        base = (p[0] == '0') ? 8 : 10;
    }
    for (;; p++) {
        int c = (unsigned char)*p, d;
        if (isdigit(c)) {
            d = c - '0';
        } else if (isalpha(c)) {
            d = (c | 32) - 'a' + 10;
        } else {
            break;
        }
        if (d >= base) {
            break;
        }
        unsigned long long nv = v * (unsigned)base + (unsigned)d;
        if (nv / (unsigned)base != v) {
            *overflow = 1;
        }
        v = nv;
        *any = 1;
    }
    if (end) {
        *end = (char *)(*any ? p : s);
    }
    return v;
}

long long strtoll(const char *__restrict s, char **__restrict end, int base)
{
    int neg, any, ovf;
    unsigned long long v = parse_unsigned(s, end, base, &neg, &any, &ovf);
    if (ovf || v > (unsigned long long)LLONG_MAX + (neg ? 1u : 0u)) {
        return neg ? LLONG_MIN : LLONG_MAX;
    }
    return neg ? (long long)(0 - v) : (long long)v;
}

unsigned long long strtoull(const char *__restrict s, char **__restrict end, int base)
{
    int neg, any, ovf;
    unsigned long long v = parse_unsigned(s, end, base, &neg, &any, &ovf);
    if (ovf) {
        return ULLONG_MAX;
    }
    return neg ? 0 - v : v;
}

long strtol(const char *__restrict s, char **__restrict end, int base)
{
    long long v = strtoll(s, end, base);
    if (v > LONG_MAX) {
        return LONG_MAX;
    }
    if (v < LONG_MIN) {
        return LONG_MIN;
    }
    return (long)v;
}

unsigned long strtoul(const char *__restrict s, char **__restrict end, int base)
{
    int neg, any, ovf;
    unsigned long long v = parse_unsigned(s, end, base, &neg, &any, &ovf);
    if (ovf || v > ULONG_MAX) {
        return ULONG_MAX;
    }
    return neg ? (unsigned long)(0 - v) : (unsigned long)v;
}

int atoi(const char *s) { return (int)strtol(s, NULL, 10); }
long atol(const char *s) { return strtol(s, NULL, 10); }
long long atoll(const char *s) { return strtoll(s, NULL, 10); }

static void swap_bytes(uint8_t *a, uint8_t *b, size_t size)
{
    while (size--) {
        uint8_t t = *a;
        *a++ = *b;
        *b++ = t;
    }
}

/* Shell sort (in place, no allocation, small code). */
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    uint8_t *b = base;
    size_t gap = 1;
    while (gap < n / 3) {
        gap = gap * 3 + 1;
    }
    for (; gap > 0; gap /= 3) {
        for (size_t i = gap; i < n; i++) {
            for (size_t j = i; j >= gap && cmp(b + (j - gap) * size, b + j * size) > 0; j -= gap) {
                swap_bytes(b + (j - gap) * size, b + j * size, size);
            }
        }
    }
}

void *bsearch(const void *key, const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const uint8_t *b = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp(key, b + mid * size);
        if (c == 0) {
            return (void *)(b + mid * size);
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

static unsigned int rand_state = 1;

int rand_r(unsigned int *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (int)((*seed >> 1) & RAND_MAX);
}

int rand(void) { return rand_r(&rand_state); }
void srand(unsigned int seed) { rand_state = seed; }
