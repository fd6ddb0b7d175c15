//! Environment calls: arithmetic, atomics, sleep/resume, halt, printf, stack, exit.

mod common;
use common::*;
use openpim_engine::{Fault, Timing};
use openpim_isa::{asm, reg::*};

/// Calls `nr` with a0..a3 = args on one tasklet; returns a0..a3 after the call.
fn call(nr: u32, args: [u32; 4]) -> [u32; 4] {
    let (fault, regs) = try_call(nr, args);
    assert_eq!(fault, None);
    regs
}

/// Like `call`, returning the fault (if any) instead of asserting there is none.
fn try_call(nr: u32, args: [u32; 4]) -> (Option<Fault>, [u32; 4]) {
    let mut p = P::new();
    for (i, v) in args.iter().enumerate() {
        p.li(A0 + i as u8, *v);
    }
    p.sys(nr);
    for i in 0..4u8 {
        p.i(asm::sw(A0 + i, ZERO, 0x40 + 4 * i32::from(i)));
    }
    p.exit();
    let (out, d) = run_p(&p, 1);
    (
        out.fault.map(|f| f.fault),
        [d.w32(0x40), d.w32(0x44), d.w32(0x48), d.w32(0x4c)],
    )
}

/// Division by zero faults on the DPU (its division routine executes `fault`).
fn assert_div_by_zero(nr: u32, args: [u32; 4]) {
    assert_eq!(
        try_call(nr, args).0,
        Some(Fault::DivisionByZero),
        "call {nr}"
    );
}

fn i(v: i32) -> u32 {
    v as u32
}

fn split(v: u64) -> (u32, u32) {
    (v as u32, (v >> 32) as u32)
}

#[test]
fn mul32() {
    assert_eq!(call(20, [6, 7, 0, 0])[0], 42);
    assert_eq!(call(20, [0x1_0001, 0x1_0001, 0, 0])[0], 0x0002_0001);
    assert_eq!(call(20, [i(-3), 5, 0, 0])[0], i(-15));
}

#[test]
fn divu32() {
    assert_eq!(call(21, [100, 7, 0, 0])[..2], [14, 2]);
    assert_eq!(call(21, [u32::MAX, 2, 0, 0])[..2], [0x7fff_ffff, 1]);
    assert_div_by_zero(21, [123, 0, 0, 0]);
    assert_div_by_zero(21, [0, 0, 0, 0]);
}

#[test]
fn divs32() {
    assert_eq!(call(22, [i(-100), 7, 0, 0])[..2], [i(-14), i(-2)]);
    assert_eq!(call(22, [100, i(-7), 0, 0])[..2], [i(-14), 2]);
    assert_div_by_zero(22, [i(-5), 0, 0, 0]);
    assert_eq!(call(22, [i(i32::MIN), i(-1), 0, 0])[..2], [i(i32::MIN), 0]);
}

#[test]
fn mul64() {
    let (a, b) = (0x1234_5678_9abc_def0u64, 0x0fed_cba9_8765_4321u64);
    let (al, ah) = split(a);
    let (bl, bh) = split(b);
    let r = call(23, [al, ah, bl, bh]);
    assert_eq!((r[0], r[1]), split(a.wrapping_mul(b)));
    let r = call(23, [i(-2), u32::MAX, 3, 0]);
    assert_eq!((r[0], r[1]), split((-6i64) as u64));
}

#[test]
fn divu64() {
    let (a, b) = (0xffff_0000_1234_5678u64, 0x1_0000_0003u64);
    let (al, ah) = split(a);
    let (bl, bh) = split(b);
    let r = call(24, [al, ah, bl, bh]);
    assert_eq!((r[0], r[1]), split(a / b));
    assert_eq!((r[2], r[3]), split(a % b));
    assert_div_by_zero(24, [al, ah, 0, 0]);
    // A divisor whose low word alone is zero is not zero.
    let r = call(24, [al, ah, 0, 1]);
    assert_eq!((r[0], r[1]), split(a >> 32));
}

#[test]
fn divs64() {
    let (a, b) = (-1_000_000_000_007i64, 13i64);
    let (al, ah) = split(a as u64);
    let (bl, bh) = split(b as u64);
    let r = call(25, [al, ah, bl, bh]);
    assert_eq!((r[0], r[1]), split((a / b) as u64));
    assert_eq!((r[2], r[3]), split((a % b) as u64));
    let (ml, mh) = split(i64::MIN as u64);
    assert_eq!(call(25, [ml, mh, u32::MAX, u32::MAX]), [ml, mh, 0, 0]);
    assert_div_by_zero(25, [al, ah, 0, 0]);
}

/// FADD32..FDIV32 (26..29) on bit patterns; returns a0 (a1..a3 must be unchanged).
fn f32_call(nr: u32, x: u32, y: u32) -> u32 {
    let r = call(nr, [x, y, 0x5555_0002, 0x5555_0003]);
    assert_eq!(
        r[1..],
        [y, 0x5555_0002, 0x5555_0003],
        "call {nr} wrote a1..a3"
    );
    r[0]
}

/// FADD64..FDIV64 (30..33) on bit patterns; returns a0:a1 (a2, a3 must be unchanged).
fn f64_call(nr: u32, x: u64, y: u64) -> u64 {
    let (xl, xh) = split(x);
    let (yl, yh) = split(y);
    let r = call(nr, [xl, xh, yl, yh]);
    assert_eq!(r[2..], [yl, yh], "call {nr} wrote a2, a3");
    u64::from(r[0]) | (u64::from(r[1]) << 32)
}

const NAN32: u32 = 0x7fc0_0000;
const NAN64: u64 = 0x7ff8_0000_0000_0000;

#[test]
fn float32_calls() {
    let f = |v: f32| v.to_bits();
    let (add, sub, mul, div) = (26, 27, 28, 29);
    // Normal values, with rounding (round to nearest, ties to even).
    assert_eq!(f32_call(add, f(1.5), f(-0.25)), f(1.25));
    assert_eq!(f32_call(add, f(0.1), f(0.2)), 0x3e99_999a);
    assert_eq!(f32_call(add, 0x4b80_0000, 0x3f80_0000), 0x4b80_0000); // 2^24 + 1: tie to even
    assert_eq!(f32_call(add, 0x4b80_0001, 0x3f80_0000), 0x4b80_0002); // tie, rounds up to even
    assert_eq!(f32_call(sub, f(1.0), f(1.0)), 0); // +0
    assert_eq!(f32_call(sub, f(-0.0), f(0.0)), 0x8000_0000); // -0
    assert_eq!(f32_call(sub, f(3.0), f(0.5)), f(2.5));
    assert_eq!(f32_call(mul, f(1.5), f(-0.25)), f(-0.375));
    assert_eq!(f32_call(mul, f(1.1), f(1.1)), 0x3f9a_e148);
    assert_eq!(f32_call(div, f(1.0), f(3.0)), 0x3eaa_aaab);
    assert_eq!(f32_call(div, f(-7.0), f(2.0)), f(-3.5));
    // Subnormals: as operands and as results (gradual underflow, no flush to zero).
    assert_eq!(f32_call(add, 1, 1), 2);
    assert_eq!(f32_call(sub, 0x0080_0000, 1), 0x007f_ffff); // FLT_MIN - smallest subnormal
    assert_eq!(f32_call(mul, 0x0080_0000, f(0.5)), 0x0040_0000);
    assert_eq!(f32_call(div, 1, f(2.0)), 0); // half of the smallest subnormal: tie to even (0)
    assert_eq!(f32_call(div, 3, f(2.0)), 2); // 1.5 ulp -> 2 (even)
    assert_eq!(f32_call(mul, 0x0000_1000, f(1024.0)), 0x0040_0000);
    // Overflow and infinities.
    assert_eq!(f32_call(mul, f(f32::MAX), f(2.0)), f(f32::INFINITY));
    assert_eq!(
        f32_call(add, f(f32::NEG_INFINITY), f(1e30)),
        f(f32::NEG_INFINITY)
    );
    assert_eq!(f32_call(div, f(1.0), f(f32::INFINITY)), 0);
    // Division by zero: a signed infinity.
    assert_eq!(f32_call(div, f(1.0), 0), f(f32::INFINITY));
    assert_eq!(f32_call(div, f(1.0), 0x8000_0000), f(f32::NEG_INFINITY));
    assert_eq!(f32_call(div, f(-2.0), 0), f(f32::NEG_INFINITY));
    // NaN results, whatever the operands' payloads and signs: the canonical quiet NaN.
    assert_eq!(f32_call(sub, f(f32::INFINITY), f(f32::INFINITY)), NAN32);
    assert_eq!(f32_call(add, f(f32::INFINITY), f(f32::NEG_INFINITY)), NAN32);
    assert_eq!(f32_call(mul, f(f32::INFINITY), 0x8000_0000), NAN32);
    assert_eq!(f32_call(div, 0, 0), NAN32);
    assert_eq!(f32_call(div, f(f32::INFINITY), f(f32::INFINITY)), NAN32);
    assert_eq!(f32_call(add, 0xffc1_2345, f(1.0)), NAN32); // negative quiet NaN with payload
    assert_eq!(f32_call(mul, f(2.0), 0x7f80_0001), NAN32); // signalling NaN
}

#[test]
fn float64_calls() {
    use std::f64::consts::{E, PI};
    let f = |v: f64| v.to_bits();
    let (add, sub, mul, div) = (30, 31, 32, 33);
    assert_eq!(f64_call(add, f(0.1), f(0.2)), f(0.1 + 0.2));
    assert_eq!(f64_call(add, f(0.1), f(0.2)), 0x3fd3_3333_3333_3334);
    assert_eq!(
        f64_call(add, f(9007199254740992.0), f(1.0)),
        f(9007199254740992.0)
    ); // tie to even
    assert_eq!(f64_call(sub, f(PI), f(-2.5e10)), f(PI + 2.5e10));
    assert_eq!(f64_call(sub, f(-0.0), f(0.0)), 1 << 63);
    assert_eq!(f64_call(mul, f(PI), f(-2.5e10)), f(-78539816339.74483));
    assert_eq!(f64_call(mul, f(1.1), f(1.1)), 0x3ff3_5c28_f5c2_8f5d);
    assert_eq!(f64_call(div, f(1.0), f(3.0)), 0x3fd5_5555_5555_5555);
    assert_eq!(f64_call(div, f(E), f(7.0)), f(E / 7.0));
    // Subnormals.
    assert_eq!(f64_call(add, 1, 1), 2);
    assert_eq!(
        f64_call(sub, 0x0010_0000_0000_0000, 1),
        0x000f_ffff_ffff_ffff
    );
    assert_eq!(
        f64_call(mul, 0x0010_0000_0000_0000, f(0.25)),
        0x0004_0000_0000_0000
    );
    assert_eq!(f64_call(div, 1, f(2.0)), 0);
    assert_eq!(f64_call(div, 3, f(2.0)), 2);
    assert_eq!(f64_call(mul, f(1e-300), f(1e-10)), f(1e-310));
    // Overflow, infinities, division by zero.
    assert_eq!(f64_call(mul, f(f64::MAX), f(1.5)), f(f64::INFINITY));
    assert_eq!(
        f64_call(sub, f(f64::NEG_INFINITY), f(f64::MAX)),
        f(f64::NEG_INFINITY)
    );
    assert_eq!(f64_call(div, f(-5.0), f(f64::INFINITY)), 1 << 63);
    assert_eq!(f64_call(div, f(1.0), 0), f(f64::INFINITY));
    assert_eq!(f64_call(div, f(1.0), 1 << 63), f(f64::NEG_INFINITY));
    // NaN results: the canonical quiet NaN.
    assert_eq!(f64_call(sub, f(f64::INFINITY), f(f64::INFINITY)), NAN64);
    assert_eq!(f64_call(mul, 0, f(f64::NEG_INFINITY)), NAN64);
    assert_eq!(f64_call(div, 0, 1 << 63), NAN64);
    assert_eq!(f64_call(add, 0xfff8_dead_beef_0001, f(1.0)), NAN64);
    assert_eq!(f64_call(div, f(1.0), 0x7ff0_0000_0000_0001), NAN64); // signalling NaN
}

#[test]
fn float_calls_preserve_other_registers() {
    for nr in 26..=33u32 {
        let mut p = P::new();
        // Every register except x0 and sp gets a distinct value; a0..a3 hold 1.5 / 2.0.
        let mark = |r: u8| 0x1357_0000 + u32::from(r);
        for r in 1..32u8 {
            if r != SP && r != A7 {
                p.li(r, mark(r));
            }
        }
        if nr < 30 {
            p.li(A0, 1.5f32.to_bits()).li(A1, 2.0f32.to_bits());
        } else {
            let (l, h) = split(1.5f64.to_bits());
            p.li(A0, l).li(A1, h);
            let (l, h) = split(2.0f64.to_bits());
            p.li(A2, l).li(A3, h);
        }
        p.sys(nr);
        let r = regs_after(&p.0);
        let results: &[u8] = if nr < 30 { &[A0] } else { &[A0, A1] };
        for reg in 1..32u8 {
            if reg == SP || results.contains(&reg) {
                continue;
            }
            let want = match reg {
                A7 => nr,
                A1 if nr < 30 => 2.0f32.to_bits(),
                A2 if nr >= 30 => split(2.0f64.to_bits()).0,
                A3 if nr >= 30 => split(2.0f64.to_bits()).1,
                _ => mark(reg),
            };
            assert_eq!(r[usize::from(reg)], want, "call {nr} changed x{reg}");
        }
    }
}

#[test]
fn atomic_acquire_release() {
    let mut p = P::new();
    let mut k = 0x40;
    let mut store = |p: &mut P| {
        p.i(asm::sw(A0, ZERO, k));
        k += 4;
    };
    p.li(A0, 7).sys(4);
    store(&mut p); // 1: was clear
    p.li(A0, 0xf000_0007).sys(4);
    store(&mut p); // 0: same bit, already set
    p.li(A0, 0xf000_0007).sys(5);
    store(&mut p); // 1: was set
    p.li(A0, 7).sys(5);
    store(&mut p); // 0: already clear
    p.li(A0, 255).sys(4);
    store(&mut p); // 1
    p.li(A0, 3).sys(4); // left set at exit
    store(&mut p); // 1
    p.exit();
    let mut d = Dpu::new();
    for _ in 0..2 {
        let out = d.run(&p, &boot(1), &timing());
        assert_eq!(out.fault, None);
        // Bits are reset at every launch: bit 3 is clear again in the second run.
        let got: Vec<u32> = (0..6).map(|j| d.w32(0x40 + 4 * j)).collect();
        assert_eq!(got, [1, 0, 1, 0, 1, 1]);
    }
}

#[test]
fn mutex_with_atomics_protects_a_counter() {
    // 16 tasklets x 20 increments under an atomic-bit lock.
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 20)); // 0
    let lock = p.here();
    p.i(asm::addi(A0, ZERO, 9)); // acquire bit 9
    p.sys(4);
    p.i(asm::beq(A0, ZERO, lock - p.here())); // spin
    p.i(asm::lw(T0, ZERO, 0x80));
    p.i(asm::addi(T0, T0, 1));
    p.i(asm::addi(T1, T1, 0)); // widen the critical section
    p.i(asm::sw(T0, ZERO, 0x80));
    p.i(asm::addi(A0, ZERO, 9));
    p.sys(5);
    p.i(asm::addi(S2, S2, -1));
    p.i(asm::bne(S2, ZERO, lock - p.here()));
    p.exit();
    let (out, d) = run_p(&p, 16);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x80), 320);
}

#[test]
fn sleep_and_resume() {
    // t0 sleeps then writes 1; t1 spins 5 iterations, writes 2, then resumes t0.
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 28)); // 0 -> 7
    p.sys(6); // 1, 2: sleep
    p.i(asm::addi(T0, ZERO, 1)); // 3
    p.i(asm::sw(T0, ZERO, 0x40)); // 4
    p.exit(); // 5, 6
    p.i(asm::addi(S2, ZERO, 5)); // 7
    p.i(asm::addi(S2, S2, -1)); // 8
    p.i(asm::bne(S2, ZERO, -4)); // 9
    p.i(asm::lw(T0, ZERO, 0x40)); // 10: t0 has not written yet
    p.i(asm::sw(T0, ZERO, 0x44)); // 11
    p.i(asm::addi(A0, ZERO, 0)); // 12
    p.sys(7); // 13, 14: resume 0 -> a0 = 1
    p.i(asm::sw(A0, ZERO, 0x48)); // 15
    p.exit();
    let (out, d) = run_p(&p, 2);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x40), 1);
    assert_eq!(d.w32(0x44), 0);
    assert_eq!(d.w32(0x48), 1);
    // t1 issues at 1 + 11k: 0, 7, (8, 9) x 5, 10..=14: its RESUME ecall is its 17th issue
    // (k = 16) at 177. t0 slept from its SLEEP (3rd issue, at 22) to 177, then issues its
    // last 4 instructions at 178, 189, 200, 211.
    assert_eq!(out.stats.tasklets[0].sleep_cycles, 177 - 22);
    assert_eq!(out.stats.tasklets[0].end_cycle, 212);
    assert_eq!(out.stats.tasklets[1].end_cycle, 1 + 11 * 19 + 1); // 20 issues
}

#[test]
fn resume_before_sleep_is_remembered() {
    // t1 resumes t0 at once (t0 awake: pending wake-up, a0 = 0); t0 wastes time then sleeps:
    // the sleep returns immediately.
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 28)); // 0 -> 7
    for _ in 0..4 {
        p.i(asm::addi(T0, T0, 1)); // 1..=4
    }
    p.sys(6); // 5, 6
    p.exit(); // 7?? (t0 continues here)
    let t1 = p.here();
    assert_eq!(t1, 36);
    p.i(asm::addi(A0, ZERO, 0));
    p.sys(7);
    p.i(asm::sw(A0, ZERO, 0x44));
    p.exit();
    p.0[0] = asm::bne(TP, ZERO, t1);
    let (out, d) = run_p(&p, 2);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x44), 0);
    assert_eq!(out.stats.tasklets[0].sleep_cycles, 0);
    assert_eq!(out.stats.tasklets[0].instructions, 9);
}

#[test]
fn resume_of_exited_tasklet_returns_zero() {
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 12)); // 0 -> 3
    p.exit(); // 1, 2
    for _ in 0..3 {
        p.i(asm::addi(T0, T0, 1));
    }
    p.i(asm::addi(A0, ZERO, 0));
    p.sys(7);
    p.i(asm::sw(A0, ZERO, 0x44));
    p.i(asm::addi(A0, ZERO, 1));
    p.sys(7); // resume self: awake, pending
    p.i(asm::sw(A0, ZERO, 0x48));
    p.sys(6); // consumes the pending wake-up
    p.exit();
    let mut d = Dpu::new();
    d.set_w32(0x44, 9);
    d.set_w32(0x48, 9);
    let out = d.run(&p, &boot(2), &timing());
    assert_eq!(out.fault, None);
    assert_eq!((d.w32(0x44), d.w32(0x48)), (0, 0));
}

#[test]
fn everyone_waiting_ends_the_run_as_on_the_dpu() {
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 12)); // 0 -> 3
    p.sys(6); // 1, 2: t0 sleeps forever
    p.exit(); // 3, 4: t1 exits
    let (out, _) = run_p(&p, 2);
    // The DPU stops issuing: no fault, the waiting tasklet and where it waits reported.
    assert_eq!(out.fault, None);
    let w = out.waiting.expect("waiting tasklets");
    assert_eq!(w.sleeping, 1);
    assert_eq!(w.pcs, vec![(0, BASE + 8)]);
    assert_eq!(out.cycles, 24);
}

#[test]
fn deadlock_when_everyone_sleeps_under_strict_sync() {
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 12)); // 0 -> 3
    p.sys(6); // 1, 2: t0 sleeps forever
    p.exit(); // 3, 4: t1 exits
    let mut d = Dpu::new();
    let strict = Timing {
        strict_sync: true,
        ..timing()
    };
    let out = d.run(&p, &boot(2), &strict);
    assert_eq!(out.waiting, None);
    let f = out.fault.expect("deadlock");
    assert_eq!(f.fault, Fault::Deadlock { sleeping: 1 });
    assert_eq!(f.tasklet, 0);
    assert_eq!(f.pc, BASE + 8);
    // t0's SLEEP is its 3rd issue (at 22); t1's exit issues at 12 and 23: the run ends at 24.
    assert_eq!(out.cycles, 24);
    assert_eq!(out.stats.tasklets[0].sleep_cycles, 2);
}

#[test]
fn halt_stops_all_tasklets() {
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 16)); // 0 -> 4
    p.i(asm::addi(T0, ZERO, 1)); // 1
    p.sys(1); // 2, 3 halt
    p.i(asm::jal(ZERO, 0)); // 4: t1 loops forever
    let (out, _) = run_p(&p, 2);
    assert_eq!(out.fault, None);
    assert!(out.halted);
    assert_eq!(out.cycles, 34);
}

#[test]
fn exit_status_is_recorded() {
    let mut p = P::new();
    p.i(asm::addi(A0, TP, 40));
    p.exit();
    let (out, _) = run_p(&p, 3);
    let st: Vec<_> = out.stats.tasklets.iter().map(|t| t.exit_status).collect();
    assert_eq!(st, [Some(40), Some(41), Some(42)]);
}

#[test]
fn stack_left() {
    let mut p = P::new();
    p.sys(12);
    p.i(asm::sw(A0, ZERO, 0x40));
    p.i(asm::addi(SP, SP, -40));
    p.sys(12);
    p.i(asm::sw(A0, ZERO, 0x44));
    p.exit();
    let (out, d) = run_p(&p, 1);
    assert_eq!(out.fault, None);
    assert_eq!((d.w32(0x40), d.w32(0x44)), (STACK, STACK - 40));
}

/// Runs a PRINTF of `fmt` (at 0x400) with argument slots at 0x500.
fn printf_log(fmt: &str, slots: &[u32], calls: usize, capacity: u32) -> openpim_engine::RunOutcome {
    let mut p = P::new();
    for _ in 0..calls {
        p.li(A0, 0x400).li(A1, 0x500).sys(10);
    }
    p.exit();
    let mut d = Dpu::new();
    d.put_str(0x400, fmt);
    d.put_str(0x600, "DPU");
    for (k, v) in slots.iter().enumerate() {
        d.set_w32(0x500 + 4 * k as u32, *v);
    }
    let mut b = boot(1);
    b.printf_capacity = capacity;
    d.run(&p, &b, &timing())
}

#[test]
fn printf_formats_into_the_log() {
    let x = 2.5f64.to_bits();
    let out = printf_log(
        "hello %s #%d: %5.2f|%-4x|%c\n",
        &[0x600, 7, x as u32, (x >> 32) as u32, 0xab, b'!' as u32],
        2,
        1 << 20,
    );
    assert_eq!(out.fault, None);
    let line = "hello DPU #7:  2.50|ab  |!\n";
    assert_eq!(String::from_utf8(out.log).unwrap(), format!("{line}{line}"));
    // As the UPMEM runtime encodes a call: a format section of 27 bytes ("%s" per literal run,
    // '%' and the letters of each conversion) and its NUL, an argument section of 40 (6 + 1
    // for "hello " and its NUL, 3 + 1 for the string, 2 + 1 + 4, 2 + 1 + 8 for the double,
    // 1 + 1 + 4, 1 + 1 + 1 for the char, 1 + 1 for the newline): 68 bytes, 72 in 8-byte
    // lines.
    assert!(!out.log_wrapped);
    assert_eq!(out.stats.printf_bytes, 2 * 72);
}

#[test]
fn printf_buffer_wraps_and_one_call_larger_than_it_faults() {
    // "%d %d\n": 9 bytes of format section, 12 of arguments: 24 per call.
    let out = printf_log("%d %d\n", &[1, 2], 2, 72);
    assert_eq!((out.fault, out.log_wrapped), (None, false));
    assert_eq!(String::from_utf8(out.log).unwrap(), "1 2\n1 2\n");
    // Three calls in 48 or 64 bytes: the ring wraps over the oldest output (the log cannot be
    // shown), and the DPU runs on; exactly full (two calls in 48) wraps too, as the write
    // pointer goes back to 0.
    for capacity in [48, 64] {
        let out = printf_log("%d %d\n", &[1, 2], 3, capacity);
        assert_eq!(out.fault, None, "capacity {capacity}");
        assert!(out.log_wrapped, "capacity {capacity}");
        assert!(out.log.is_empty());
        assert_eq!(out.stats.printf_bytes, 72);
    }
    // One call larger than the whole buffer faults, at that call.
    let out = printf_log("%d %d\n", &[1, 2], 3, 16);
    assert_eq!(out.log, b"");
    let f = out.fault.expect("overflow");
    assert_eq!(
        f.fault,
        Fault::PrintfOverflow {
            bytes: 24,
            capacity: 16
        }
    );
    assert_eq!(f.pc, BASE + 4 * 5); // the first call's ecall
}

#[test]
fn printf_log_resets_each_launch() {
    let mut p = P::new();
    p.li(A0, 0x400).li(A1, 0x500).sys(10).exit();
    let mut d = Dpu::new();
    d.put_str(0x400, "x");
    let mut b = boot(1);
    // (One call takes 8 bytes: a launch that kept the last one's would wrap.)
    b.printf_capacity = 16;
    for _ in 0..3 {
        let out = d.run(&p, &b, &timing());
        assert_eq!(out.fault, None);
        assert_eq!(out.log, b"x");
    }
}
