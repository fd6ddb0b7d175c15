/* A DPU program that defines its own rand(), srand() and strcmp() while calling other
 * functions of the same runtime files (atoi, strtol and qsort share stdlib.c with rand; strstr
 * and strlen share string.c with strcmp). It must link, and its own definitions must be the ones called,
 * as with the SDK's C library (one function per object). */
#include <defs.h>
#include <perfcounter.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NR_RANDS 8
#define NR_SORT 6

static uint32_t my_state = 1;
static uint32_t strcmp_calls;

int rand(void)
{
    my_state = my_state * 1664525u + 1013904223u;
    return (int)(my_state >> 1);
}

void srand(unsigned int seed)
{
    my_state = seed ^ 0x5a5a5a5au;
}

int strcmp(const char *a, const char *b)
{
    strcmp_calls++;
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return (int)(unsigned char)*a - (int)(unsigned char)*b;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

__host uint32_t seed;
__host char text[32];
__host int32_t rands[NR_RANDS];
__host int32_t atoi_value;
__host int32_t strtol_value;
__host uint32_t strlen_value;
__host uint32_t strcmp_calls_seen;
__host int32_t strcmp_value;
__host uint32_t found_at;
__host int32_t sorted[NR_SORT];
__host uint32_t clocks_seen;

int main(void)
{
    srand(seed);
    for (int i = 0; i < NR_RANDS; i++)
        rands[i] = rand();
    atoi_value = atoi(text);
    strtol_value = (int32_t)strtol(text + 4, NULL, 16);
    strlen_value = (uint32_t)strlen(text);
    const char *p = strstr(text, "ff");
    found_at = p != NULL ? (uint32_t)(p - text) : 0xffffffffu;
    for (int i = 0; i < NR_SORT; i++)
        sorted[i] = rands[i] % 1000;
    qsort(sorted, NR_SORT, sizeof(sorted[0]), cmp_int);
    strcmp_value = strcmp(text, "1234ffee") > 0;
    strcmp_calls_seen = strcmp_calls;
    clocks_seen = CLOCKS_PER_SEC;
    return 0;
}
