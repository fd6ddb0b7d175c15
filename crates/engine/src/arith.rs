//! What an integer multiplication or division costs on the DPU, as a function of its
//! operands: the issue slots the `MUL32` ... `DIVS64` environment calls charge.
//!
//! The DPU has no multiplier or divider for 32/64-bit operands: its compiler calls runtime
//! routines built from `mul_step` and `div_step` (UPMEM's LLVM, `compiler-rt/lib/builtins/dpu/`:
//! `mul32`/`mulsi3`, `udiv32`, `div32`, `muldi3`, `udiv64`, `divdi3`; the counts below follow
//! the routines as linked into a DPU program by the UPMEM SDK, read from a disassembled DPU
//! binary, `docs/internals/dpu-abi.md` "Cost of the arithmetic calls"). What they execute
//! depends on the operands:
//!
//! - **32-bit multiply** (`__mulsi3`): orders the operands so that the smaller one (unsigned)
//!   is the multiplier, then runs one `mul_step` per bit of it from bit 0 upward and leaves as
//!   soon as the remaining bits are zero: `steps = max(1, significant bits of min(a, b))`.
//! - **32-bit unsigned divide** (`__udiv32`): `clz` of both operands; if the dividend has
//!   fewer significant bits than the divisor the quotient is 0 (short path); otherwise a
//!   computed jump runs `clz(divisor) - clz(dividend) + 1` `div_step`s.
//! - **32-bit signed divide** (`__div32`): saves its return address, tests both signs, negates
//!   the negative operands, calls `__udiv32` on the magnitudes, negates the results the signs
//!   require (2 negations when only the divisor is negative, 3 otherwise when one is), restores.
//! - **64-bit multiply** (`__muldi3`): a fixed sequence of 8x8-bit multiplies, no branch: a
//!   constant.
//! - **64-bit unsigned divide** (`__udiv64`): a short path when the divisor is larger than the
//!   dividend; otherwise one loop iteration (64-bit shift, compare, conditional subtract) per
//!   bit of difference, `clz64(divisor) - clz64(dividend) + 1`.
//! - **64-bit signed divide** (`__divdi3`): two sign tests, the 64-bit negations its branch
//!   needs (0, or 2: of the negative operand(s) and/or of the quotient), then `__udiv64` on the
//!   magnitudes.
//!
//! The profile's values ([`Timing`]'s `*_slots` fields, `[cost]` keys of the hardware profile)
//! are what the engine charges on top of the slots the program issues itself around the
//! `ecall` (the call, the wrapper's `ecall` with its operand set-up, the restore of `a7` and
//! the return of `sdk/dpu/src/arith.S`: 4 slots, standing for the DPU's `call` and the
//! routine's own `jump r23`). Division by zero is not costed here: the engine faults.

use crate::{ecall, Fault, Timing};
use openpim_isa::reg;

/// Significant bits of `x` (0 for 0).
fn bits32(x: u32) -> u32 {
    32 - x.leading_zeros()
}

/// `mul_step`s of `__mulsi3` for `a * b`: one per significant bit of the smaller operand taken
/// as unsigned, at least one (the first step runs before the exit test).
pub fn mul32_steps(a: u32, b: u32) -> u32 {
    bits32(a.min(b)).max(1)
}

/// Issue slots charged for a 32-bit multiplication `a * b` (`MUL32`).
pub fn mul32(tm: &Timing, a: u32, b: u32) -> u32 {
    tm.mul32_slots
        .saturating_add(tm.mul32_step_slots.saturating_mul(mul32_steps(a, b)))
}

/// `div_step`s of `__udiv32` for `a / b` (`b != 0`): `None` on the short path (the dividend
/// has fewer significant bits than the divisor: quotient 0, no step), else
/// `clz(b) - clz(a) + 1`.
pub fn divu32_steps(a: u32, b: u32) -> Option<u32> {
    let (za, zb) = (a.leading_zeros(), b.leading_zeros());
    if za > zb {
        None
    } else {
        Some(zb - za + 1)
    }
}

/// Issue slots charged for a 32-bit unsigned division `a / b` (`DIVU32`, `b != 0`).
pub fn divu32(tm: &Timing, a: u32, b: u32) -> u32 {
    match divu32_steps(a, b) {
        None => tm.div32_short_slots,
        Some(steps) => tm
            .div32_slots
            .saturating_add(tm.div32_step_slots.saturating_mul(steps)),
    }
}

/// Negations `__div32` executes for the signs of `a` and `b`: none when both are
/// non-negative; divisor alone negative: the divisor and the quotient (2); dividend
/// negative: the dividend, the remainder and either the quotient or the divisor (3).
pub fn divs32_negations(a: i32, b: i32) -> u32 {
    match (a < 0, b < 0) {
        (false, false) => 0,
        (false, true) => 2,
        (true, _) => 3,
    }
}

/// Issue slots charged for a 32-bit signed division `a / b` (`DIVS32`, `b != 0`): the
/// unsigned division of the magnitudes plus the signed routine's own instructions.
pub fn divs32(tm: &Timing, a: i32, b: i32) -> u32 {
    divu32(tm, a.unsigned_abs(), b.unsigned_abs())
        .saturating_add(tm.divs32_slots)
        .saturating_add(
            tm.divs32_negate_slots
                .saturating_mul(divs32_negations(a, b)),
        )
}

/// Issue slots charged for a 64-bit multiplication (`MUL64`): `__muldi3` has no branch.
pub fn mul64(tm: &Timing) -> u32 {
    tm.mul64_slots
}

/// Loop iterations of `__udiv64` for `a / b` (`b != 0`): `None` on the short path (the
/// divisor is larger than the dividend), else `clz64(b) - clz64(a) + 1`.
pub fn divu64_steps(a: u64, b: u64) -> Option<u32> {
    if b > a {
        None
    } else {
        Some(b.leading_zeros() - a.leading_zeros() + 1)
    }
}

/// Issue slots charged for a 64-bit unsigned division `a / b` (`DIVU64`, `b != 0`).
pub fn divu64(tm: &Timing, a: u64, b: u64) -> u32 {
    match divu64_steps(a, b) {
        None => tm.div64_short_slots,
        Some(steps) => tm
            .div64_slots
            .saturating_add(tm.div64_step_slots.saturating_mul(steps)),
    }
}

/// 64-bit negations `__divdi3` executes: none when both operands are non-negative, else 2
/// (the negative operand(s) and, when the signs differ, the quotient).
pub fn divs64_negations(a: i64, b: i64) -> u32 {
    if a < 0 || b < 0 {
        2
    } else {
        0
    }
}

/// Issue slots charged for a 64-bit signed division `a / b` (`DIVS64`, `b != 0`).
pub fn divs64(tm: &Timing, a: i64, b: i64) -> u32 {
    divu64(tm, a.unsigned_abs(), b.unsigned_abs())
        .saturating_add(tm.divs64_slots)
        .saturating_add(
            tm.divs64_negate_slots
                .saturating_mul(divs64_negations(a, b)),
        )
}

/// An arithmetic environment call (`MUL32` ... `FDIV64`, number `nr`) on a tasklet's
/// registers: writes its results (from `a0`) and returns the issue slots it occupies beyond
/// its own; `None` if `nr` is not one; a division by zero faults before changing anything.
/// The one implementation of these calls, for the interpreter and for translated code.
#[inline(always)]
pub(crate) fn call(tm: &Timing, nr: u32, regs: &mut [u32; 32]) -> Option<Result<u32, Fault>> {
    let nr_call = nr;
    let (a0, a1, a2, a3) = (
        regs[usize::from(reg::A0)],
        regs[usize::from(reg::A1)],
        regs[usize::from(reg::A2)],
        regs[usize::from(reg::A3)],
    );
    let set = |r: &mut [u32; 32], i: u8, v: u32| r[usize::from(i)] = v;
    let set64 = |r: &mut [u32; 32], lo: u8, v: u64| {
        r[usize::from(lo)] = v as u32;
        r[usize::from(lo) + 1] = (v >> 32) as u32;
    };
    let slots = match nr_call {
        ecall::MUL32 => {
            set(regs, reg::A0, a0.wrapping_mul(a1));
            mul32(tm, a0, a1)
        }
        ecall::DIVU32 => {
            if a1 == 0 {
                return Some(Err(Fault::DivisionByZero));
            }
            let (q, r) = (a0 / a1, a0 % a1);
            set(regs, reg::A0, q);
            set(regs, reg::A1, r);
            divu32(tm, a0, a1)
        }
        ecall::DIVS32 => {
            let (x, y) = (a0 as i32, a1 as i32);
            if y == 0 {
                return Some(Err(Fault::DivisionByZero));
            }
            let (q, r) = (x.wrapping_div(y), x.wrapping_rem(y));
            set(regs, reg::A0, q as u32);
            set(regs, reg::A1, r as u32);
            divs32(tm, x, y)
        }
        ecall::MUL64 | ecall::DIVU64 | ecall::DIVS64 => {
            let x = u64::from(a0) | (u64::from(a1) << 32);
            let y = u64::from(a2) | (u64::from(a3) << 32);
            if y == 0 && nr_call != ecall::MUL64 {
                return Some(Err(Fault::DivisionByZero));
            }
            match nr_call {
                ecall::MUL64 => {
                    set64(regs, reg::A0, x.wrapping_mul(y));
                    mul64(tm)
                }
                ecall::DIVU64 => {
                    let (q, r) = (x / y, x % y);
                    set64(regs, reg::A0, q);
                    set64(regs, reg::A2, r);
                    divu64(tm, x, y)
                }
                _ => {
                    let (x, y) = (x as i64, y as i64);
                    let (q, r) = (x.wrapping_div(y), x.wrapping_rem(y));
                    set64(regs, reg::A0, q as u64);
                    set64(regs, reg::A2, r as u64);
                    divs64(tm, x, y)
                }
            }
        }
        ecall::FADD32 | ecall::FSUB32 | ecall::FMUL32 | ecall::FDIV32 => {
            let (x, y) = (f32::from_bits(a0), f32::from_bits(a1));
            let (r, slots) = match nr_call {
                ecall::FADD32 => (x + y, tm.fadd32_slots),
                ecall::FSUB32 => (x - y, tm.fsub32_slots),
                ecall::FMUL32 => (x * y, tm.fmul32_slots),
                _ => (x / y, tm.fdiv32_slots),
            };
            // NaN payloads and signs differ between hosts: one canonical quiet NaN.
            let bits = if r.is_nan() { 0x7fc0_0000 } else { r.to_bits() };
            set(regs, reg::A0, bits);
            slots
        }
        ecall::FADD64 | ecall::FSUB64 | ecall::FMUL64 | ecall::FDIV64 => {
            let x = f64::from_bits(u64::from(a0) | (u64::from(a1) << 32));
            let y = f64::from_bits(u64::from(a2) | (u64::from(a3) << 32));
            let (r, slots) = match nr_call {
                ecall::FADD64 => (x + y, tm.fadd64_slots),
                ecall::FSUB64 => (x - y, tm.fsub64_slots),
                ecall::FMUL64 => (x * y, tm.fmul64_slots),
                _ => (x / y, tm.fdiv64_slots),
            };
            let bits = if r.is_nan() {
                0x7ff8_0000_0000_0000
            } else {
                r.to_bits()
            };
            set64(regs, reg::A0, bits);
            slots
        }
        _ => return None,
    };
    Some(Ok(slots))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps() {
        assert_eq!(mul32_steps(12345, 3), 2);
        assert_eq!(mul32_steps(3, 12345), 2);
        assert_eq!(mul32_steps(7, 1000), 3);
        assert_eq!(mul32_steps(100_000, 1000), 10);
        assert_eq!(mul32_steps(0, 5), 1);
        assert_eq!(mul32_steps(1, 1), 1);
        assert_eq!(mul32_steps(-3i32 as u32, -5i32 as u32), 32);
        assert_eq!(mul32_steps(-3i32 as u32, 5), 3);
        assert_eq!(divu32_steps(100, 7), Some(5));
        assert_eq!(divu32_steps(5, 7), Some(1));
        assert_eq!(divu32_steps(3, 7), None);
        assert_eq!(divu32_steps(0, 1), None);
        assert_eq!(divu32_steps(u32::MAX, 1), Some(32));
        assert_eq!(divs32_negations(-7, 2), 3);
        assert_eq!(divs32_negations(7, -2), 2);
        assert_eq!(divs32_negations(-7, -2), 3);
        assert_eq!(divu64_steps(1 << 40, 1 << 20), Some(21));
        assert_eq!(divu64_steps(5, 7), None);
        assert_eq!(divu64_steps(7, 7), Some(1));
        assert_eq!(divu64_steps(u64::MAX, 1), Some(64));
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        let mut tm = Timing::upmem_default();
        tm.mul32_step_slots = u32::MAX;
        assert_eq!(mul32(&tm, u32::MAX, u32::MAX), u32::MAX);
        tm.div64_step_slots = u32::MAX;
        tm.divs64_slots = u32::MAX;
        assert_eq!(divs64(&tm, i64::MIN, 1), u32::MAX);
    }
}
