/* OpenPIM DPU runtime: printf family, assert, exit/abort, errno. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>
#include <errno.h>
#include <openpim_ecall.h>

int errno;

int vprintf(const char *__restrict format, va_list args)
{
    /* RV32 ILP32: a va_list is the WRAM address of the next argument slot. */
    __ecall2(__ECALL_PRINTF, (unsigned int)(uintptr_t)format, (unsigned int)(uintptr_t)args);
    return 0;
}

int printf(const char *__restrict format, ...)
{
    va_list args;
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    return 0;
}

int puts(const char *s)
{
    printf("%s\n", s);
    return 0;
}

int putchar(int c)
{
    printf("%c", c);
    return (unsigned char)c;
}

void __assert_fail_line(unsigned int line)
{
    __dpu_fault(__FAULT_ASSERTION, line);
}

void exit(int status)
{
    (void)status;
    __ecall0(__ECALL_HALT);
    __builtin_unreachable();
}

void abort(void)
{
    __dpu_fault(__FAULT_GENERIC, 0);
}
