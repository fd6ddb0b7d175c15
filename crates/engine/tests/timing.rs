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
    assert_eq!(out.instructions, 8 + 32);
    assert_eq!(out.cycles, 11 * (40 - 1) + 1);
    assert_eq!(out.stats.tasklets[0].instructions, 40);

    let mut tm = timing();
    tm.mul32_slots = 0;
    let out = Dpu::new().run(&p, &boot(1), &tm);
    assert_eq!(out.instructions, 8);
    assert_eq!(out.cycles, 78);
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
    // 12 tasklets each do one DIVU32 (34 slots): 1 IPC throughout.
    let mut p = P::new();
    p.li(A0, 100).li(A1, 7).sys(21).exit();
    let (out, _) = run_p(&p, 12);
    assert_eq!(out.instructions, 12 * (8 + 34));
    assert_eq!(out.cycles, 12 * (8 + 34));
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
