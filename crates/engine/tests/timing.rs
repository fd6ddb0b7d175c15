//! Timing model on hand-computed examples (revolver, DMA, arithmetic-call slots, clocks).

mod common;
use common::*;
use openpim_isa::{asm, reg::*};

/// `n_nops` no-ops then TASKLET_EXIT: `n_nops + 2` instructions per tasklet.
fn straight(n_nops: usize) -> P {
    let mut p = P::new();
    for _ in 0..n_nops {
        p.i(asm::addi(T0, T0, 1));
    }
    p.exit();
    p
}

#[test]
fn one_tasklet_issues_every_revolver_cycles() {
    let (out, _) = run_p(&straight(8), 1); // N = 10 instructions
    assert_eq!(out.fault, None);
    assert_eq!(out.instructions, 10);
    assert_eq!(out.cycles, 11 * 9 + 1);
    assert_eq!(out.stats.idle_cycles, 100 - 10);
    assert_eq!(out.stats.tasklets[0].end_cycle, 100);
}

#[test]
fn revolver_is_a_parameter() {
    let mut tm = timing();
    tm.revolver_cycles = 5;
    let mut d = Dpu::new();
    let out = d.run(&straight(8), &boot(1), &tm);
    assert_eq!(out.cycles, 5 * 9 + 1);
}

#[test]
fn two_tasklets_interleave_within_the_revolver_window() {
    let (out, _) = run_p(&straight(8), 2);
    // t0 at 0, 11, ..., 99; t1 at 1, 12, ..., 100.
    assert_eq!(out.instructions, 20);
    assert_eq!(out.cycles, 11 * 9 + 2);
    assert_eq!(out.stats.tasklets[0].end_cycle, 100);
    assert_eq!(out.stats.tasklets[1].end_cycle, 101);
}

#[test]
fn ten_tasklets_leave_a_bubble() {
    let (out, _) = run_p(&straight(8), 10);
    // Each round takes 11 cycles with 10 issues; last issue of t9 at 11*9 + 9.
    assert_eq!(out.cycles, 11 * 9 + 10);
    assert_eq!(out.stats.idle_cycles, 9);
}

#[test]
fn eleven_or_more_tasklets_reach_one_ipc() {
    for nr in [11u32, 12, 16, 24] {
        let (out, _) = run_p(&straight(8), nr);
        assert_eq!(out.instructions, 10 * u64::from(nr));
        assert_eq!(out.cycles, 10 * u64::from(nr), "nr = {nr}");
        assert_eq!(out.stats.idle_cycles, 0);
        for (t, s) in out.stats.tasklets.iter().enumerate() {
            assert_eq!(s.instructions, 10);
            assert_eq!(s.end_cycle, 9 * u64::from(nr) + t as u64 + 1);
        }
    }
}

/// DMA of 64 bytes at index 7: `li a0, mram; li a1, wram; li a2, 64; li a7, nr; ecall`.
fn dma_program(nr_call: u32, mram: u32, wram: u32) -> P {
    let mut p = P::new();
    let (src, dst) = if nr_call == 2 {
        (mram, wram)
    } else {
        (wram, mram)
    };
    p.li(A0, src).li(A1, dst).li(A2, 64).sys(nr_call).exit();
    p
}

#[test]
fn dma_read_costs_alpha_plus_beta_n() {
    let mut d = Dpu::new();
    for (i, b) in d.mram[0x200..0x240].iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    let out = d.run(&dma_program(2, 0x0800_0200, 0x100), &boot(1), &timing());
    assert_eq!(out.fault, None);
    // ecall at 77; done 77 + 77 + 32 = 186; exit's two issues at 186 and 197.
    assert_eq!(out.cycles, 198);
    assert_eq!(&d.wram[0x100..0x140], &d.mram[0x200..0x240]);
    assert_eq!(d.wram[0x100], 1);
    let s = &out.stats;
    assert_eq!(s.dma_bytes_read, 64);
    assert_eq!(s.dma_bytes_written, 0);
    assert_eq!(s.dma_busy_cycles, 109);
    assert_eq!(s.dma_requests, 1);
    assert_eq!(s.tasklets[0].dma_wait_cycles, 186 - 88);
    assert_eq!(s.tasklets[0].dma_requests, 1);
}

#[test]
fn dma_write_uses_write_alpha() {
    let mut d = Dpu::new();
    d.wram[0x100..0x140].fill(0xab);
    let out = d.run(&dma_program(3, 0x0800_0008, 0x100), &boot(1), &timing());
    assert_eq!(out.fault, None);
    // ecall at 77; done 77 + 61 + 32 = 170; exit at 170, 181.
    assert_eq!(out.cycles, 182);
    assert!(d.mram[8..72].iter().all(|&b| b == 0xab));
    assert_eq!(d.mram[72], 0);
    assert_eq!(out.stats.dma_bytes_written, 64);
}

#[test]
fn beta_rounds_up() {
    let mut tm = timing();
    tm.dma_beta_milli = 333; // 64 * 0.333 = 21.3 -> 22
    let mut d = Dpu::new();
    let out = d.run(&dma_program(2, 0x0800_0000, 0x100), &boot(1), &tm);
    assert_eq!(out.cycles, 77 + 77 + 22 + 11 + 1);
}

#[test]
fn dmas_of_two_tasklets_are_serialised() {
    let (out, _) = run_p(&dma_program(2, 0x0800_0000, 0x100), 2);
    assert_eq!(out.fault, None);
    // t0: ecall at 77, DMA 77..186, exits at 186, 197.
    // t1: ecall at 78, DMA waits for the engine: 186..295, exits at 295, 306.
    assert_eq!(out.stats.tasklets[0].end_cycle, 198);
    assert_eq!(out.stats.tasklets[1].end_cycle, 307);
    assert_eq!(out.cycles, 307);
    assert_eq!(out.stats.dma_busy_cycles, 218);
    assert_eq!(out.stats.tasklets[1].dma_wait_cycles, 295 - 89);
}

#[test]
fn other_tasklets_keep_issuing_during_a_dma() {
    // t0 does a DMA; t1 runs 20 no-ops. t1 must be unaffected by t0's wait.
    let mut p = P::new();
    p.i(asm::bne(TP, ZERO, 44)); // 0 -> 44 for t1
    p.li(A0, 0x0800_0000)
        .li(A1, 0x100)
        .li(A2, 2048)
        .sys(2)
        .exit(); // 1..=10, ecall at 8
    for _ in 0..20 {
        p.i(asm::addi(T0, T0, 1)); // 11..=30
    }
    p.exit();
    assert_eq!(p.0[11], asm::addi(T0, T0, 1));
    let (out, _) = run_p(&p, 2);
    assert_eq!(out.fault, None);
    // t1 issues at 1, 12, ...: 1 + 20 + 2 = 23 instructions, last at 1 + 22 * 11.
    assert_eq!(out.stats.tasklets[1].end_cycle, 1 + 22 * 11 + 1);
    // t0's DMA ecall is its 9th instruction (at 88): 88 + 77 + 1024 = 1189.
    assert_eq!(out.stats.tasklets[0].end_cycle, 1189 + 11 + 1);
}

#[test]
fn direct_mram_access_is_an_8_byte_dma() {
    let mut p = P::new();
    p.li(A1, 0x0800_0000); // 0, 1
    p.i(asm::lw(A0, A1, 0)); // 2, at 22: DMA 22 + 77 + 4 = 103
    p.exit(); // at 103, 114
    let (out, _) = run_p(&p, 1);
    assert_eq!(out.cycles, 115);
    assert_eq!(out.stats.dma_bytes_read, 8);
    let mut p = P::new();
    p.li(A1, 0x0800_0000);
    p.i(asm::sb(A0, A1, 3)); // at 22: 22 + 61 + 4 = 87
    p.exit();
    let (out, _) = run_p(&p, 1);
    assert_eq!(out.cycles, 87 + 11 + 1);
    assert_eq!(out.stats.dma_bytes_written, 8);
}

#[test]
fn arithmetic_calls_occupy_issue_slots() {
    let mut p = P::new();
    p.li(A0, 6).li(A1, 7).sys(20).exit(); // ecall at index 5
    p.i(asm::ebreak());
    let (out, d) = run_p(&p, 1);
    let _ = d;
    assert_eq!(out.fault, None);
    // 6 * 7: 3 fixed slots + one mul_step per significant bit of 6 (3).
    assert_eq!(out.instructions, 8 + 6);
    assert_eq!(out.cycles, 11 * (14 - 1) + 1);
    assert_eq!(out.stats.tasklets[0].instructions, 14);

    let mut tm = timing();
    tm.mul32_slots = 0;
    tm.mul32_step_slots = 0;
    let out = Dpu::new().run(&p, &boot(1), &tm);
    assert_eq!(out.instructions, 8);
    assert_eq!(out.cycles, 78);
}

/// Runs `nr` with a0..a3 = `args` (4 x li, ecall, exit: 12 issues) on one tasklet and
/// returns the slots the call charged, checked against the cycle count.
fn charged(nr: u32, args: [u32; 4]) -> u64 {
    let mut p = P::new();
    p.li(A0, args[0])
        .li(A1, args[1])
        .li(A2, args[2])
        .li(A3, args[3]);
    p.sys(nr).exit();
    let (out, _) = run_p(&p, 1);
    assert_eq!(out.fault, None, "call {nr} {args:?}");
    let slots = out.instructions - 12;
    assert_eq!(
        out.cycles,
        11 * (out.instructions - 1) + 1,
        "call {nr} {args:?}"
    );
    slots
}

fn lo_hi(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

#[test]
fn integer_call_costs_follow_the_operands() {
    // (call, operands, slots) for the shipped profile's costs: see crates/engine/src/arith.rs
    // and docs/internals/dpu-abi.md for the derivation of each formula.
    let neg = |v: i32| v as u32;
    let cases32: &[(u32, u32, u32, u64)] = &[
        // MUL32: 3 + one mul_step per significant bit of min(a, b) as unsigned (at least 1).
        (20, 12345, 3, 3 + 2),
        (20, 3, 12345, 3 + 2),
        (20, 100_000, 1000, 3 + 10),
        (20, 0, 77, 3 + 1),
        (20, 1, 1, 3 + 1),
        (20, neg(-3), 5, 3 + 3), // the small positive operand is the multiplier
        (20, neg(-3), neg(-5), 3 + 32), // both large as unsigned: all 32 steps
        (20, 1 << 31, 1 << 31, 3 + 32),
        // DIVU32: 4 + clz(b) - clz(a) + 1 div_steps; 2 when a has fewer bits than b.
        (21, 100, 7, 4 + 5),
        (21, 5, 7, 4 + 1), // same bit length: the long path, one step
        (21, 3, 7, 2),     // short path
        (21, 0, 7, 2),
        (21, u32::MAX, 1, 4 + 32),
        (21, 1 << 20, 3, 4 + 20),
        // DIVS32: the unsigned cost of |a| / |b| + 7 + one per negation (0, 2 or 3).
        (22, 100, 7, 9 + 7),
        (22, neg(-100), 7, 9 + 7 + 3),
        (22, 100, neg(-7), 9 + 7 + 2),
        (22, neg(-100), neg(-7), 9 + 7 + 3),
        (22, 3, neg(-7), 2 + 7 + 2),
        (22, neg(i32::MIN), neg(-1), 36 + 7 + 3),
    ];
    for &(nr, a, b, want) in cases32 {
        assert_eq!(charged(nr, [a, b, 0, 0]), want, "call {nr}: {a:#x}, {b:#x}");
    }
    let cases64: &[(u32, u64, u64, u64)] = &[
        // MUL64: a constant (branch-free routine).
        (23, 3, 5, 129),
        (23, u64::MAX, u64::MAX, 129),
        // DIVU64: 20 + 22 per iteration (clz64(b) - clz64(a) + 1); 7 when b > a.
        (24, 1 << 40, 1 << 20, 20 + 22 * 21),
        (24, 7, 7, 20 + 22),
        (24, 5, 7, 7),
        (24, u64::MAX, 1, 20 + 22 * 64),
        // DIVS64: the unsigned cost of the magnitudes + 2 + 2 per 64-bit negation (0 or 2).
        (25, 1 << 40, 1 << 20, 20 + 22 * 21 + 2),
        (25, (-(1i64 << 40)) as u64, 1 << 20, 20 + 22 * 21 + 2 + 4),
        (25, 1 << 40, (-(1i64 << 20)) as u64, 20 + 22 * 21 + 2 + 4),
        (25, (-5i64) as u64, (-7i64) as u64, 7 + 2 + 4),
    ];
    for &(nr, a, b, want) in cases64 {
        let [al, ah] = lo_hi(a);
        let [bl, bh] = lo_hi(b);
        assert_eq!(
            charged(nr, [al, ah, bl, bh]),
            want,
            "call {nr}: {a:#x}, {b:#x}"
        );
    }
    // The test timing's integer costs are the engine's default (= profiles/upmem-v1a.toml).
    let (t, d) = (timing(), openpim_engine::Timing::upmem_default());
    assert_eq!(
        [
            t.mul32_slots,
            t.mul32_step_slots,
            t.div32_slots,
            t.div32_step_slots
        ],
        [
            d.mul32_slots,
            d.mul32_step_slots,
            d.div32_slots,
            d.div32_step_slots
        ]
    );
    assert_eq!(
        [
            t.div32_short_slots,
            t.divs32_slots,
            t.divs32_negate_slots,
            t.mul64_slots
        ],
        [
            d.div32_short_slots,
            d.divs32_slots,
            d.divs32_negate_slots,
            d.mul64_slots
        ]
    );
    assert_eq!(
        [t.div64_slots, t.div64_step_slots, t.div64_short_slots],
        [d.div64_slots, d.div64_step_slots, d.div64_short_slots]
    );
    assert_eq!(
        [t.divs64_slots, t.divs64_negate_slots],
        [d.divs64_slots, d.divs64_negate_slots]
    );
}

#[test]
fn integer_call_costs_use_every_profile_key() {
    // Each key scales its own part of the formula.
    let run = |tm: &openpim_engine::Timing, nr: u32, args: [u32; 4]| {
        let mut p = P::new();
        p.li(A0, args[0])
            .li(A1, args[1])
            .li(A2, args[2])
            .li(A3, args[3]);
        p.sys(nr).exit();
        Dpu::new().run(&p, &boot(1), tm).instructions - 12
    };
    let mut tm = timing();
    tm.mul32_slots = 10;
    tm.mul32_step_slots = 2;
    assert_eq!(run(&tm, 20, [1000, 1 << 30, 0, 0]), 10 + 2 * 10);
    tm.div32_slots = 100;
    tm.div32_step_slots = 3;
    tm.div32_short_slots = 50;
    assert_eq!(run(&tm, 21, [100, 7, 0, 0]), 100 + 3 * 5);
    assert_eq!(run(&tm, 21, [6, 7, 0, 0]), 100 + 3);
    assert_eq!(run(&tm, 21, [3, 7, 0, 0]), 50);
    tm.divs32_slots = 1000;
    tm.divs32_negate_slots = 10;
    assert_eq!(run(&tm, 22, [(-3i32) as u32, 7, 0, 0]), 50 + 1000 + 30);
    tm.mul64_slots = 7;
    assert_eq!(run(&tm, 23, [1, 2, 3, 4]), 7);
    tm.div64_slots = 300;
    tm.div64_step_slots = 5;
    tm.div64_short_slots = 40;
    assert_eq!(run(&tm, 24, [0, 1, 1, 0]), 300 + 5 * 33);
    assert_eq!(run(&tm, 24, [1, 0, 0, 1]), 40);
    tm.divs64_slots = 2000;
    tm.divs64_negate_slots = 100;
    assert_eq!(
        run(&tm, 25, [1, 0, u32::MAX, u32::MAX]),
        300 + 5 + 2000 + 200
    );
}

#[test]
fn float_calls_charge_their_profile_slots() {
    // li a0; li a1; li a2; li a3; li a7 + ecall; exit: 12 issues + the call's slots, on one
    // tasklet: cycles = 11 * (issues - 1) + 1. Every call is charged its own key.
    let tm = timing();
    let cases = [
        (26, tm.fadd32_slots),
        (27, tm.fsub32_slots),
        (28, tm.fmul32_slots),
        (29, tm.fdiv32_slots),
        (30, tm.fadd64_slots),
        (31, tm.fsub64_slots),
        (32, tm.fmul64_slots),
        (33, tm.fdiv64_slots),
    ];
    for (nr, slots) in cases {
        let mut p = P::new();
        p.li(A0, 0x3fc0_0000).li(A1, 0x4000_0000);
        p.li(A2, 0).li(A3, 0x4000_0000).sys(nr).exit();
        let (out, _) = run_p(&p, 1);
        assert_eq!(out.fault, None);
        let issues = 12 + u64::from(slots);
        assert_eq!(out.instructions, issues, "call {nr}");
        assert_eq!(out.cycles, 11 * (issues - 1) + 1, "call {nr}");
        assert_eq!(out.stats.tasklets[0].instructions, issues, "call {nr}");
        // A profile that makes the call free: only the 12 issues remain.
        let mut free = timing();
        free.fadd32_slots = 0;
        free.fsub32_slots = 0;
        free.fmul32_slots = 0;
        free.fdiv32_slots = 0;
        free.fadd64_slots = 0;
        free.fsub64_slots = 0;
        free.fmul64_slots = 0;
        free.fdiv64_slots = 0;
        let out = Dpu::new().run(&p, &boot(1), &free);
        assert_eq!(
            (out.instructions, out.cycles),
            (12, 11 * 11 + 1),
            "call {nr}"
        );
    }
    // The test timing uses the shipped profile's costs (checked against the profile in
    // openpim-machine's tests).
    assert_eq!(cases.map(|c| c.1), [64, 69, 176, 1022, 98, 105, 653, 2180]);
}

#[test]
fn float_slots_share_the_pipeline() {
    // 11 tasklets each do one FDIV64: one issue per cycle throughout.
    let mut p = P::new();
    p.li(A0, 0)
        .li(A1, 0x3ff0_0000)
        .li(A2, 0)
        .li(A3, 0x4008_0000)
        .sys(33)
        .exit();
    let (out, _) = run_p(&p, 11);
    assert_eq!(out.fault, None);
    assert_eq!(out.instructions, 11 * (12 + 2180));
    assert_eq!(out.cycles, 11 * (12 + 2180));
}

#[test]
fn arithmetic_slots_share_the_pipeline() {
    // 12 tasklets each do one DIVU32 of 0xffffffff / 1 (4 + 32 slots): 1 IPC throughout.
    let mut p = P::new();
    p.li(A0, u32::MAX).li(A1, 1).sys(21).exit();
    let (out, _) = run_p(&p, 12);
    assert_eq!(out.instructions, 12 * (8 + 36));
    assert_eq!(out.cycles, 12 * (8 + 36));
}

#[test]
fn cycles_call_reads_the_clock() {
    let mut p = P::new();
    p.sys(13); // ecall at 11
    p.i(asm::sw(A0, ZERO, 0x40));
    p.i(asm::sw(A1, ZERO, 0x44));
    p.exit();
    let (out, d) = run_p(&p, 1);
    assert_eq!(out.fault, None);
    assert_eq!((d.w32(0x40), d.w32(0x44)), (11, 0));
}

#[test]
fn perf_counter_cycles_and_instructions() {
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 1)); // 0 (mode cycles)
    p.i(asm::addi(A1, ZERO, 1)); // 1 (reset)
    p.sys(8); // ecall at 33: returns 33 (cycles since launch), resets
    p.i(asm::sw(A0, ZERO, 0x40)); // 4
    p.sys(9); // ecall at 66 -> 33
    p.i(asm::sw(A0, ZERO, 0x44)); // 7
    p.i(asm::addi(A0, ZERO, 2)); // 8 instructions mode
    p.i(asm::addi(A1, ZERO, 1)); // 9
    p.sys(8); // 10, ecall 11 at 121: returns cycles 121 - 33 = 88; base = 11 instructions
    p.i(asm::sw(A0, ZERO, 0x48)); // 12
    p.sys(9); // ecall 14: 14 instructions issued before it -> 3
    p.i(asm::sw(A0, ZERO, 0x4c)); // 15
    p.i(asm::addi(A0, ZERO, 3)); // 16 nothing
    p.i(asm::addi(A1, ZERO, 0)); // 17
    p.sys(8); // ecall 19: returns instructions 19 - 11 = 8
    p.i(asm::sw(A0, ZERO, 0x50));
    p.sys(9);
    p.i(asm::sw(A0, ZERO, 0x54));
    p.exit();
    let (out, d) = run_p(&p, 1);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x40), 33);
    assert_eq!(d.w32(0x44), 33);
    assert_eq!(d.w32(0x48), 88);
    assert_eq!(d.w32(0x4c), 3);
    assert_eq!(d.w32(0x50), 8);
    assert_eq!(d.w32(0x54), 0);
}

#[test]
fn perf_counter_is_dpu_wide_and_reset_per_launch() {
    // Two tasklets: each reads PERF_GET (cycles since launch) at its 2nd instruction.
    let mut p = P::new();
    p.sys(9);
    p.i(asm::slli(T0, TP, 2));
    p.i(asm::sw(A0, T0, 0x40));
    p.exit();
    let mut d = Dpu::new();
    for _ in 0..2 {
        let out = d.run(&p, &boot(2), &timing());
        assert_eq!(out.fault, None);
        assert_eq!((d.w32(0x40), d.w32(0x44)), (11, 12));
    }
}
