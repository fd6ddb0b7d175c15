//! The interpreter's shortcuts (slots executed ahead of their issue, spinning on a held atomic
//! bit without re-executing the lock loop, skipping tasklets blocked on their DMA when picking
//! the next issuer, epochs: each tasklet's code run ahead in batches while the slots are
//! counted) change nothing but speed: every program here runs with them and without them (`Program::without_shortcuts`),
//! and the outcomes (cycles, instructions, statistics, fused pairs, faults and where they
//! happened) and the memories must be identical, also when the run is cut by a cycle limit at
//! any point or ends on another tasklet's fault.

mod common;

use common::*;
use openpim_engine::{map, Fault, Program, RunOutcome, Timing};
use openpim_isa::{asm, reg::*};

/// Runs `program` with and without shortcuts on `nr` tasklets; asserts identical outcomes and
/// memories; returns the outcome.
fn same(program: &Program, nr: u32, timing: &Timing) -> RunOutcome {
    same_init(program, nr, timing, &|_| {}).0
}

/// `same` for every tasklet count in `nrs`, then with cycle limits cutting the run of the
/// largest count at many points.
fn same_everywhere(p: &P, nrs: &[u32]) {
    let program = p.program_fused();
    let tm = timing();
    let mut full = 0;
    for &nr in nrs {
        let out = same(&program, nr, &tm);
        assert_eq!(out.fault, None, "{nr} tasklets: {:?}", out.fault);
        full = out.cycles;
    }
    same_cut(&program, *nrs.last().unwrap(), &|_| {}, spread(full));
}

/// A local loop of `n` iterations (register-only slots, fused ALU + branch).
fn local_work(p: &mut P, n: i32) {
    p.i(asm::addi(T2, ZERO, n));
    let top = p.here();
    p.i(asm::xori(T3, T3, 0x55));
    p.i(asm::addi(T2, T2, -1));
    p.i(asm::bne(T2, ZERO, top - p.here()));
}

/// A TRNS-like kernel: tasklets take turns under a lock that is held across DMA requests,
/// with local work, an arithmetic call and a counter in WRAM.
fn mutex_dma_kernel(iterations: i32, lock_call: u32) -> P {
    let mut p = P::new();
    p.i(asm::addi(S0, ZERO, 3)); // the lock's atomic bit
    p.i(asm::addi(S1, ZERO, iterations));
    p.i(asm::addi(S2, ZERO, 0x100)); // shared counter
    p.i(asm::slli(S3, A0, 6)); // this tasklet's 64 bytes of MRAM
    p.all(&asm::li(T0, map::MRAM_BASE));
    p.i(asm::add(S3, S3, T0));
    p.i(asm::slli(S4, A0, 6)); // and of WRAM
    p.i(asm::addi(S4, S4, 0x400));
    let top = p.here();
    lock(&mut p, S0, lock_call);
    p.i(asm::lw(T1, S2, 0));
    p.i(asm::addi(T1, T1, 1));
    p.i(asm::sw(T1, S2, 0));
    // mram_write(counter, mram, 8), mram_read(mram, buffer, 32) under the lock.
    p.i(asm::addi(A0, S2, 0));
    p.i(asm::addi(A1, S3, 0));
    p.i(asm::addi(A2, ZERO, 8));
    p.sys(3);
    p.i(asm::addi(A0, S3, 0));
    p.i(asm::addi(A1, S4, 0));
    p.i(asm::addi(A2, ZERO, 32));
    p.sys(2);
    unlock(&mut p, S0);
    local_work(&mut p, 7);
    // MUL32 (operand-dependent slots).
    p.i(asm::addi(A0, S1, 0));
    p.i(asm::addi(A1, T1, 0));
    p.sys(20);
    p.i(asm::sw(A0, S4, 8));
    p.i(asm::addi(S1, S1, -1));
    p.i(asm::bne(S1, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn mutex_and_dma_kernel() {
    for call in [14, 4] {
        let p = mutex_dma_kernel(6, call);
        same_everywhere(&p, &[1, 2, 3, 5, 11, 12, 16, 24]);
        let (out, d) = run_p(&p, 16);
        assert_eq!(out.fault, None);
        assert_eq!(d.w32(0x100), 16 * 6);
    }
}

/// A call-heavy arithmetic loop (`jal` to a wrapper that makes the MUL32 / DIVU32 calls and
/// returns with `jalr`): nearly every slot can execute ahead. With `perf`, tasklet 0 sets the
/// performance counter to count instructions first, and every tasklet reads it before it
/// exits and stores the reading.
fn arithmetic_kernel(iterations: i32, perf: bool) -> P {
    let mut p = P::new();
    if perf {
        let skip = p.here();
        p.i(0); // bne tp, zero, after the configuration (patched below)
        p.i(asm::addi(A0, ZERO, 2)); // COUNT_INSTRUCTIONS
        p.i(asm::addi(A1, ZERO, 1)); // reset
        p.sys(8);
        let at = (skip / 4) as usize;
        p.0[at] = asm::bne(TP, ZERO, p.here() - skip);
    }
    p.i(asm::addi(S1, ZERO, iterations));
    p.i(asm::addi(S2, A0, 12345));
    let top = p.here();
    p.i(asm::addi(A0, S2, 0));
    p.i(asm::addi(A1, S1, 77));
    let call = p.0.len();
    p.i(0); // jal ra, wrapper (patched below)
    p.i(asm::add(S2, S2, A0));
    p.i(asm::xori(S2, S2, 0x3c));
    p.i(asm::addi(S1, S1, -1));
    p.i(asm::bne(S1, ZERO, top - p.here()));
    p.i(asm::slli(T0, TP, 3));
    p.i(asm::sw(S2, T0, 0x200));
    if perf {
        p.sys(9); // PERF_GET
        p.i(asm::slli(T0, TP, 3));
        p.i(asm::sw(A0, T0, 0x300));
        p.i(asm::sw(A1, T0, 0x304));
    }
    p.exit();
    let wrapper = p.here();
    p.0[call] = asm::jal(RA, wrapper - 4 * call as i32);
    p.i(asm::addi(A3, A7, 0));
    p.i(asm::addi(A7, ZERO, 20)); // MUL32
    p.i(asm::ecall());
    p.i(asm::addi(A1, ZERO, 1000));
    p.i(asm::addi(A7, ZERO, 21)); // DIVU32
    p.i(asm::ecall());
    p.i(asm::addi(A7, A3, 0));
    p.i(asm::jalr(ZERO, RA, 0));
    p
}

#[test]
fn arithmetic_calls_ahead() {
    same_everywhere(&arithmetic_kernel(9, false), &[1, 4, 11, 16]);
}

#[test]
fn fault_of_another_tasklet_while_others_are_ahead() {
    // Tasklet 5 divides by zero in the middle of the run, while the others have slots
    // executed ahead that then never issue.
    let mut p = P::new();
    p.i(asm::addi(S1, ZERO, 40));
    let top = p.here();
    local_work(&mut p, 3);
    p.i(asm::addi(A0, S1, 0));
    p.i(asm::addi(A1, S1, 3));
    p.sys(20);
    p.i(asm::addi(T0, ZERO, 5));
    p.i(asm::bne(TP, T0, 20)); // not tasklet 5: skip the division
    p.i(asm::addi(T0, ZERO, 20));
    p.i(asm::bne(S1, T0, 12)); // only at iteration 20
    p.i(asm::addi(A1, ZERO, 0));
    p.sys(21);
    p.i(asm::addi(S1, S1, -1));
    p.i(asm::bne(S1, ZERO, top - p.here()));
    p.exit();
    let program = p.program_fused();
    for nr in [6, 9, 16] {
        let out = same(&program, nr, &timing());
        let f = out.fault.expect("division by zero");
        assert_eq!((f.tasklet, f.fault), (5, Fault::DivisionByZero));
    }
}

#[test]
fn performance_counter_sees_issued_instructions() {
    // Tasklet 0 counts instructions while the others run slots ahead; the readings (stored in
    // WRAM) and everything else must be the same.
    let p = arithmetic_kernel(5, true);
    same_everywhere(&p, &[1, 3, 12, 16]);
    let (_, d) = run_p(&p, 16);
    assert!(d.w32(0x300) > 0);
}

#[test]
fn sleeping_and_dma_blocked_tasklets() {
    // Tasklets block on DMAs, sleep, and are woken by tasklet 0 after its own long DMA (the
    // selection of the next issuer skips blocked tasklets and must take them back exactly when
    // they are ready).
    for nr in [2, 7, 13, 16] {
        let mut p = P::new();
        p.i(asm::addi(S6, ZERO, nr as i32));
        p.i(asm::addi(S1, ZERO, 4));
        let top = p.here();
        p.i(asm::slli(S4, TP, 8));
        p.all(&asm::li(T0, map::MRAM_BASE));
        p.i(asm::add(A0, S4, T0));
        p.i(asm::addi(A1, S4, 0x400));
        p.i(asm::addi(A2, ZERO, 256));
        p.sys(2); // mram_read(mram + 256 t, 0x400 + 256 t, 256)
        let branch = p.0.len();
        p.i(0); // beq tp, zero, tasklet 0's part (patched)
        p.sys(6); // SLEEP
        let jump = p.0.len();
        p.i(0); // j next (patched)
        let zero_part = p.here();
        p.i(asm::addi(A2, ZERO, 2040));
        p.sys(2); // a long DMA
        p.i(asm::addi(S5, ZERO, 1));
        let wake = p.here();
        p.i(asm::addi(A0, S5, 0));
        p.sys(7); // RESUME s5
        p.i(asm::addi(S5, S5, 1));
        p.i(asm::blt(S5, S6, wake - p.here()));
        let next = p.here();
        p.i(asm::addi(S1, S1, -1));
        p.i(asm::bne(S1, ZERO, top - p.here()));
        p.exit();
        p.0[branch] = asm::beq(TP, ZERO, zero_part - 4 * branch as i32);
        p.0[jump] = asm::jal(ZERO, next - 4 * jump as i32);
        let out = same(&p.program_fused(), nr, &timing());
        // A wake-up that comes before its tasklet sleeps is kept as a pending one, and a
        // second one is lost: the run may end in a deadlock (the same one in both runs).
        if let Some(f) = out.fault {
            assert!(matches!(f.fault, Fault::Deadlock { .. }), "{f:?}");
        }
    }
}

/// A loop with a 64-bit equality branch (rule 8: `xor; xor; or; beqz` in two slots) and a
/// shift-and-add (rule 7) on the taken side: the marked slots behave the same ahead or not.
#[test]
fn sixty_four_bit_compare_and_shift_add_loop() {
    let iterations = 10;
    let mut p = P::new();
    p.i(asm::addi(S1, ZERO, iterations));
    p.i(asm::slli(S4, A0, 6)); // this tasklet's 64 bytes of WRAM
    p.i(asm::addi(S4, S4, 0x400));
    let top = p.here();
    p.i(asm::andi(A2, S1, 1)); // (a2, a3): a 64-bit value, odd or even
    p.i(asm::addi(A3, ZERO, 0));
    p.i(asm::xor(A4, A2, ZERO));
    p.i(asm::xor(A5, A3, ZERO));
    p.i(asm::or(A4, A5, A4));
    p.i(asm::beq(A4, ZERO, 16)); // even: skip the store
    p.i(asm::slli(T0, S1, 2));
    p.i(asm::add(T0, S4, T0));
    p.i(asm::sw(S1, T0, 0));
    p.i(asm::addi(S1, S1, -1));
    let back = top - p.here();
    p.i(asm::bne(S1, ZERO, back));
    p.exit();
    same_everywhere(&p, &[1, 2, 11, 16]);
    let (out, d) = run_p(&p, 16);
    assert_eq!(out.fault, None);
    for t in 0..16u32 {
        for i in 1..=iterations as u32 {
            let want = if i % 2 == 1 { i } else { 0 };
            assert_eq!(
                d.w32(0x400 + t * 64 + i * 4),
                want,
                "tasklet {t}, element {i}"
            );
        }
    }
    assert!(p.program_fused().fuses_with_next(BASE + 4 * 6));
    assert!(p.program_fused().fuses_with_next(BASE + 4 * 9));
}
