/* OpenPIM DPU: <stdlib.h> (basics; no malloc: use mem_alloc/buddy_alloc from <alloc.h>) */
#ifndef _OPENPIM_STDLIB_H
#define _OPENPIM_STDLIB_H
#include <stddef.h>

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 0x7fffffff

typedef struct {
    int quot;
    int rem;
} div_t;
typedef struct {
    long quot;
    long rem;
} ldiv_t;
typedef struct {
    long long quot;
    long long rem;
} lldiv_t;

int abs(int x);
long labs(long x);
long long llabs(long long x);
div_t div(int num, int den);
ldiv_t ldiv(long num, long den);
lldiv_t lldiv(long long num, long long den);
int atoi(const char *s);
long atol(const char *s);
long long atoll(const char *s);
long strtol(const char *__restrict s, char **__restrict end, int base);
unsigned long strtoul(const char *__restrict s, char **__restrict end, int base);
long long strtoll(const char *__restrict s, char **__restrict end, int base);
unsigned long long strtoull(const char *__restrict s, char **__restrict end, int base);
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void *bsearch(const void *key, const void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
int rand(void);
int rand_r(unsigned int *seed);
void srand(unsigned int seed);
/* exit(): stops the whole DPU (HALT), like the end of the program. abort(): DPU fault. */
void exit(int status) __attribute__((__noreturn__));
void abort(void) __attribute__((__noreturn__));

#endif
