/* OpenPIM DPU runtime: <string.h>. Word-at-a-time where alignment allows (every instruction
 * is a DPU cycle in the timing model). */
#define OPENPIM_NO_STRING_BUILTINS
#include <stddef.h>
#include <stdint.h>
#include <string.h>

void *memcpy(void *__restrict dst, const void *__restrict src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if ((((uintptr_t)d | (uintptr_t)s) & 3) == 0) {
        uint32_t *dw = (uint32_t *)d;
        const uint32_t *sw = (const uint32_t *)s;
        while (n >= 16) {
            uint32_t a = sw[0], b = sw[1], c = sw[2], e = sw[3];
            dw[0] = a;
            dw[1] = b;
            dw[2] = c;
            dw[3] = e;
            dw += 4;
            sw += 4;
            n -= 16;
        }
        while (n >= 4) {
            *dw++ = *sw++;
            n -= 4;
        }
        d = (uint8_t *)dw;
        s = (const uint8_t *)sw;
    }
    while (n--) {
        *d++ = *s++;
    }
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    if (d == s || n == 0) {
        return dst;
    }
    if (d < s || d >= s + n) {
        return memcpy(dst, src, n);
    }
    /* overlapping, copy backwards */
    d += n;
    s += n;
    if ((((uintptr_t)d | (uintptr_t)s | n) & 3) == 0) {
        while (n >= 4) {
            d -= 4;
            s -= 4;
            *(uint32_t *)d = *(const uint32_t *)s;
            n -= 4;
        }
    }
    while (n--) {
        *--d = *--s;
    }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    uint8_t *d = dst;
    uint8_t v = (uint8_t)c;
    while (n && ((uintptr_t)d & 3)) {
        *d++ = v;
        n--;
    }
    if (n >= 4) {
        uint32_t w = v;
        w |= w << 8;
        w |= w << 16;
        uint32_t *dw = (uint32_t *)d;
        while (n >= 16) {
            dw[0] = w;
            dw[1] = w;
            dw[2] = w;
            dw[3] = w;
            dw += 4;
            n -= 16;
        }
        while (n >= 4) {
            *dw++ = w;
            n -= 4;
        }
        d = (uint8_t *)dw;
    }
    while (n--) {
        *d++ = v;
    }
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    for (; n; n--, x++, y++) {
        if (*x != *y) {
            return (int)*x - (int)*y;
        }
    }
    return 0;
}

void *memchr(const void *s, int c, size_t n)
{
    const uint8_t *p = s;
    for (; n; n--, p++) {
        if (*p == (uint8_t)c) {
            return (void *)p;
        }
    }
    return NULL;
}

size_t strlen(const char *s)
{
    const char *p = s;
    while (*p) {
        p++;
    }
    return (size_t)(p - s);
}

size_t strnlen(const char *s, size_t max)
{
    size_t i = 0;
    while (i < max && s[i]) {
        i++;
    }
    return i;
}

int strcmp(const char *a, const char *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    while (*x && *x == *y) {
        x++;
        y++;
    }
    return (int)*x - (int)*y;
}

int strncmp(const char *a, const char *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n; n--, x++, y++) {
        if (*x != *y || *x == 0) {
            return (int)*x - (int)*y;
        }
    }
    return 0;
}

char *strcpy(char *__restrict dst, const char *__restrict src)
{
    char *d = dst;
    while ((*d++ = *src++) != 0) {
    }
    return dst;
}

char *stpcpy(char *__restrict dst, const char *__restrict src)
{
    while ((*dst = *src++) != 0) {
        dst++;
    }
    return dst;
}

char *strncpy(char *__restrict dst, const char *__restrict src, size_t n)
{
    size_t i = 0;
    for (; i < n && src[i]; i++) {
        dst[i] = src[i];
    }
    for (; i < n; i++) {
        dst[i] = 0;
    }
    return dst;
}

char *strcat(char *__restrict dst, const char *__restrict src)
{
    strcpy(dst + strlen(dst), src);
    return dst;
}

char *strncat(char *__restrict dst, const char *__restrict src, size_t n)
{
    char *d = dst + strlen(dst);
    while (n-- && *src) {
        *d++ = *src++;
    }
    *d = 0;
    return dst;
}

char *strchr(const char *s, int c)
{
    for (;; s++) {
        if (*s == (char)c) {
            return (char *)s;
        }
        if (!*s) {
            return NULL;
        }
    }
}

char *strrchr(const char *s, int c)
{
    const char *last = NULL;
    for (;; s++) {
        if (*s == (char)c) {
            last = s;
        }
        if (!*s) {
            return (char *)last;
        }
    }
}

char *strstr(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0) {
        return (char *)haystack;
    }
    for (; *haystack; haystack++) {
        if (*haystack == *needle && strncmp(haystack, needle, n) == 0) {
            return (char *)haystack;
        }
    }
    return NULL;
}

size_t strspn(const char *s, const char *accept)
{
    size_t i = 0;
    while (s[i] && strchr(accept, s[i])) {
        i++;
    }
    return i;
}

size_t strcspn(const char *s, const char *reject)
{
    size_t i = 0;
    while (s[i] && !strchr(reject, s[i])) {
        i++;
    }
    return i;
}

char *strpbrk(const char *s, const char *accept)
{
    s += strcspn(s, accept);
    return *s ? (char *)s : NULL;
}

char *strtok_r(char *__restrict s, const char *__restrict delim, char **__restrict save)
{
    if (!s) {
        s = *save;
    }
    if (!s) {
        return NULL;
    }
    s += strspn(s, delim);
    if (!*s) {
        *save = NULL;
        return NULL;
    }
    char *end = s + strcspn(s, delim);
    if (*end) {
        *end = 0;
        *save = end + 1;
    } else {
        *save = NULL;
    }
    return s;
}

char *strerror(int errnum)
{
    (void)errnum;
    return (char *)"error";
}
