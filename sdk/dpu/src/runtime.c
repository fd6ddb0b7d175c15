/* OpenPIM DPU runtime: assert, exit/abort, errno (the printf family: stdio.c). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <assert.h>
#include <errno.h>
#include <openpim_ecall.h>

int errno;

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
