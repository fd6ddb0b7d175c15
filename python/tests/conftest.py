"""Shared fixtures: DPU programs compiled once per test session."""

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PACKAGE_ROOT = HERE.parent  # <openpim>/python
OPENPIM_ROOT = PACKAGE_ROOT.parent

if str(PACKAGE_ROOT) not in sys.path:
    sys.path.insert(0, str(PACKAGE_ROOT))

# libdpu explains every error on stderr; the tests check the codes instead.
os.environ.setdefault("OPENPIM_QUIET", "1")

from dpu import compiler  # noqa: E402

# Vector addition c[i] = a[i] + b[i] over n elements, NR_TASKLETS tasklets in rake order,
# 256-byte MRAM blocks; tasklet 0 adds up c into `sum` and prints a line.
VADD_C = r"""
#include <barrier.h>
#include <defs.h>
#include <mram.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_ELEMS 8192
#define BLOCK_ELEMS 64

__mram_noinit uint32_t a[MAX_ELEMS];
__mram_noinit uint32_t b[MAX_ELEMS];
__mram_noinit uint32_t c[MAX_ELEMS];
__host uint32_t n;
__host uint32_t sum;
__host uint32_t nr_tasklets;
__dma_aligned uint32_t wa[NR_TASKLETS][BLOCK_ELEMS];
__dma_aligned uint32_t wb[NR_TASKLETS][BLOCK_ELEMS];
uint32_t partial[NR_TASKLETS];
BARRIER_INIT(done, NR_TASKLETS);

int main() {
    unsigned t = me();
    uint32_t s = 0;
    for (uint32_t i = t * BLOCK_ELEMS; i < n; i += NR_TASKLETS * BLOCK_ELEMS) {
        mram_read(&a[i], wa[t], sizeof(wa[t]));
        mram_read(&b[i], wb[t], sizeof(wb[t]));
        for (int j = 0; j < BLOCK_ELEMS; j++) {
            wa[t][j] += wb[t][j];
            if (i + j < n)
                s += wa[t][j];
        }
        mram_write(wa[t], &c[i], sizeof(wa[t]));
    }
    partial[t] = s;
    barrier_wait(&done);
    if (t == 0) {
        uint32_t total = 0;
        for (int k = 0; k < NR_TASKLETS; k++)
            total += partial[k];
        sum = total;
        nr_tasklets = NR_TASKLETS;
        printf("n=%u sum=%u\n", n, total);
    }
    return 0;
}
"""

# Every C type of DpuVariable's accessors, and per-tasklet printf.
TYPES_C = r"""
#include <attributes.h>
#include <barrier.h>
#include <defs.h>
#include <stdint.h>
#include <stdio.h>

BARRIER_INIT(turn, NR_TASKLETS);
__host int8_t v_i8 = -5;
__host uint8_t v_u8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
__host int16_t v_i16[4] = {-1, 2, -3, 4};
__host uint16_t v_u16[4] = {65535, 1, 2, 3};
__host int32_t v_i32 = -123456;
__host uint32_t v_u32[2] = {4000000000u, 7};
__host int64_t v_i64 = -9000000000LL;
__host uint64_t v_u64 = 18000000000000000000ULL;
__host float v_f32[2] = {1.5f, -2.25f};
__host double v_f64 = 3.140625;
__host uint32_t load;            /* same name as a DpuSet method */
__host uint32_t input;
__host uint32_t output;
__mram uint8_t m_bytes[24];      /* MRAM: any size and offset from the host */

int main() {
    if (me() == 0)
        output = input * 3;
    for (unsigned t = 0; t < NR_TASKLETS; t++) { /* tasklets print in order */
        if (me() == t)
            printf("tasklet %u: input=%u\n", me(), input);
        barrier_wait(&turn);
    }
    return 0;
}
"""

FAULT_C = r"""
#include <stdint.h>
#include <stdio.h>
int main() {
    printf("before the fault\n");
    volatile uint32_t *p = (uint32_t *)0x20000; /* past the 64 KiB WRAM */
    *p = 1;
    return 0;
}
"""

# RV32I assembly (OpenPIM's DPU ISA): main stores 42 into the __host variable `answer`.
ANSWER_S = r"""
    .section .dpu_host,"aw",@progbits
    .balign 8
    .globl answer
    .type answer, @object
    .size answer, 4
answer:
    .word 0
    .text
    .globl main
    .type main, @function
main:
    li t0, 42
    lui t1, %hi(answer)
    sw t0, %lo(answer)(t1)
    li a0, 0
    ret
"""


class Programs:
    """Paths of the compiled test programs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.vadd = self._build("vadd", VADD_C, {"NR_TASKLETS": 4})
        self.vadd1 = self._build("vadd1", VADD_C, {"NR_TASKLETS": 1})
        self.types = self._build("types", TYPES_C, {"NR_TASKLETS": 2})
        self.fault = self._build("fault", FAULT_C, {})
        self.too_many = self._build("too_many", TYPES_C, {"NR_TASKLETS": 25})

    def _build(self, name: str, source: str, defines: dict) -> str:
        src = self.root / f"{name}.c"
        src.write_text(source)
        out = self.root / f"{name}.dpu"
        compiler.DEFAULT_DPU_COMPILER.compile(
            [str(src)], output=str(out), defines=defines, opt_lvl=compiler.O2
        )
        return str(out)


@pytest.fixture(scope="session")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Programs:
    return Programs(tmp_path_factory.mktemp("dpu-programs"))
