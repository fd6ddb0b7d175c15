/* OpenPIM DPU: <stdio.h>
 * printf formats into the DPU's printf buffer (PRINTF environment call); the host prints it
 * with dpu_log_read(). The buffer capacity is __stdout_buffer_size (1 MiB unless
 * STDOUT_BUFFER_INIT(n) is used once in the program). It is a ring, as the SDK's: a launch
 * printing more wraps over the oldest output (the DPU runs on; dpu_log_read then returns
 * DPU_ERR_LOG_BUFFER_TOO_SMALL), and one call larger than the whole buffer is a DPU fault. */
#ifndef _OPENPIM_STDIO_H
#define _OPENPIM_STDIO_H
#include <stdarg.h>
#include <stddef.h>

#ifndef EOF
#define EOF (-1)
#endif

/* No format attribute on purpose: int32_t is int here, and the SDK's programs print
 * uint32_t with %d, %u, %lu... without warnings. */
int printf(const char *__restrict format, ...);
int vprintf(const char *__restrict format, va_list args);
int puts(const char *s);
int putchar(int c);

#define __STDOUT_STR2(x) #x
#define __STDOUT_STR(x) __STDOUT_STR2(x)
/* Sets the printf buffer capacity (bytes) of the program: defines the absolute symbol
 * __stdout_buffer_size. Use at file scope, once per program. */
/* Ends with its own ';' as the SDK's does, so both `STDOUT_BUFFER_INIT(n)` and
 * `STDOUT_BUFFER_INIT(n);` compile (the second adds an empty declaration; -Wpedantic warns). */
#define STDOUT_BUFFER_INIT(size)                                                             \
    __attribute__((__used__, __section__(".discard.__stdout_buffer_size"))) static void      \
    __stdout_buffer_size_definition(void)                                                    \
    {                                                                                        \
        __asm__ __volatile__(".globl __stdout_buffer_size\n\t.set __stdout_buffer_size, %0"  \
                             : : "i"((unsigned int)(size)));                                 \
    }                                                                                        \
    extern int __stdout_buffer_init_semicolon;

#endif
