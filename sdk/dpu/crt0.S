/*
 * OpenPIM DPU start-up code. Every tasklet starts here with sp = its stack top,
 * tp = a0 = its tasklet id (docs/internals/dpu-abi.md, "Boot").
 */
    .section .text.__sys_start, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    .option push
    .option norelax
    la      gp, __global_pointer$
    .option pop
    call    main
    /* main's return value is the tasklet's exit status (a0). */
    li      a7, 0           /* TASKLET_EXIT */
    ecall
1:  j       1b
    .size _start, . - _start
