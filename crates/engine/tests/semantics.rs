//! Instruction semantics: every RV32I instruction on hand-assembled programs.

mod common;
use common::*;
use openpim_isa::{asm, reg::*};

#[test]
fn alu_register_register() {
    let mut p = P::new();
    p.li(A0, 0x8000_0001).li(A1, 5).li(A2, 0xffff_fff0);
    p.all(&[
        asm::add(S2, A0, A1),
        asm::sub(S3, A1, A0),
        asm::sll(S4, A1, A1),  // 5 << 5
        asm::slt(S5, A0, A1),  // signed: negative < 5
        asm::sltu(S6, A0, A1), // unsigned: big > 5
        asm::xor(S7, A0, A2),
        asm::srl(S8, A2, A1),
        asm::sra(S9, A2, A1),
        asm::or(S10, A0, A1),
        asm::and(S11, A0, A2),
        asm::sll(T3, A1, A2),   // shift amount uses low 5 bits: 0xfff0 & 31 = 16
        asm::add(ZERO, A0, A1), // discarded
    ]);
    let r = regs_after(&p.0);
    assert_eq!(r[S2 as usize], 0x8000_0006);
    assert_eq!(r[S3 as usize], 5u32.wrapping_sub(0x8000_0001));
    assert_eq!(r[S4 as usize], 160);
    assert_eq!(r[S5 as usize], 1);
    assert_eq!(r[S6 as usize], 0);
    assert_eq!(r[S7 as usize], 0x8000_0001 ^ 0xffff_fff0);
    assert_eq!(r[S8 as usize], 0xffff_fff0 >> 5);
    assert_eq!(r[S9 as usize], ((0xffff_fff0u32 as i32) >> 5) as u32);
    assert_eq!(r[S10 as usize], 0x8000_0005);
    assert_eq!(r[S11 as usize], 0x8000_0000);
    assert_eq!(r[T3 as usize], 5 << 16);
    assert_eq!(r[0], 0);
}

#[test]
fn alu_immediate() {
    let mut p = P::new();
    p.li(A0, 0xffff_ff00);
    p.all(&[
        asm::addi(S2, A0, -1),
        asm::slti(S3, A0, 0),
        asm::sltiu(S4, A0, -1), // compares with 0xffffffff
        asm::xori(S5, A0, -1),
        asm::ori(S6, A0, 0x0f),
        asm::andi(S7, A0, 0x7f0),
        asm::slli(S8, A0, 4),
        asm::srli(S9, A0, 4),
        asm::srai(S10, A0, 4),
        asm::addi(S11, ZERO, -2048),
        asm::lui(T3, 0x7654_3000u32 as i32),
        asm::addi(ZERO, A0, 5),
    ]);
    let r = regs_after(&p.0);
    assert_eq!(r[S2 as usize], 0xffff_feff);
    assert_eq!(r[S3 as usize], 1);
    assert_eq!(r[S4 as usize], 1);
    assert_eq!(r[S5 as usize], 0x0000_00ff);
    assert_eq!(r[S6 as usize], 0xffff_ff0f);
    assert_eq!(r[S7 as usize], 0x0000_0700);
    assert_eq!(r[S8 as usize], 0xffff_f000);
    assert_eq!(r[S9 as usize], 0x0fff_fff0);
    assert_eq!(r[S10 as usize], 0xffff_fff0);
    assert_eq!(r[S11 as usize], (-2048i32) as u32);
    assert_eq!(r[T3 as usize], 0x7654_3000);
}

#[test]
fn auipc_jal_jalr_links() {
    let mut p = P::new();
    p.i(asm::auipc(S2, 0x1000)); // at 0
    p.i(asm::jal(RA, 8)); // at 4 -> 12, ra = 8
    p.i(asm::ebreak()); // at 8 (skipped)
    p.i(asm::auipc(S3, 0)); // at 12
    p.i(asm::addi(S3, S3, 13)); // at 16: s3 = 25 + base
    p.i(asm::jalr(S4, S3, -1)); // at 20 -> (base+24)&!1 = 24, s4 = base + 24
    p.i(asm::jal(ZERO, 8)); // at 24 -> 32
    p.i(asm::ebreak()); // 28
    let r = regs_after(&p.0);
    assert_eq!(r[S2 as usize], BASE + 0x1000);
    assert_eq!(r[RA as usize], BASE + 8);
    assert_eq!(r[S3 as usize], BASE + 25);
    assert_eq!(r[S4 as usize], BASE + 24);
}

#[test]
fn jalr_with_rd_equal_rs1() {
    let mut p = P::new();
    p.li(T0, BASE + 16); // 0, 4
    p.i(asm::jalr(T0, T0, 0)); // 8 -> 16, t0 = base + 12
    p.i(asm::ebreak()); // 12
    let r = regs_after(&p.0);
    assert_eq!(r[T0 as usize], BASE + 12);
}

#[test]
fn branches_taken_and_not() {
    // For each branch: s2 += 1 when taken (skips an `addi s3, s3, 1`), else s3 += 1.
    type Branch = fn(u8, u8, i32) -> u32;
    let cases: [(Branch, u32, u32, bool); 12] = [
        (asm::beq, 5, 5, true),
        (asm::beq, 5, 6, false),
        (asm::bne, 5, 6, true),
        (asm::bne, 5, 5, false),
        (asm::blt, (-1i32) as u32, 0, true),
        (asm::blt, 0, (-1i32) as u32, false),
        (asm::bge, 0, (-1i32) as u32, true),
        (asm::bge, (-2i32) as u32, (-1i32) as u32, false),
        (asm::bltu, 0, u32::MAX, true),
        (asm::bltu, u32::MAX, 0, false),
        (asm::bgeu, u32::MAX, u32::MAX, true),
        (asm::bgeu, 1, 2, false),
    ];
    for (i, (b, x, y, taken)) in cases.into_iter().enumerate() {
        let mut p = P::new();
        p.li(A0, x).li(A1, y);
        p.i(b(A0, A1, 12)); // -> +12
        p.i(asm::addi(S3, S3, 1));
        p.i(asm::jal(ZERO, 8));
        p.i(asm::addi(S2, S2, 1));
        let r = regs_after(&p.0);
        assert_eq!(
            (r[S2 as usize], r[S3 as usize]),
            if taken { (1, 0) } else { (0, 1) },
            "case {i}"
        );
    }
}

#[test]
fn backward_branch_loop() {
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 10));
    let top = p.here();
    p.i(asm::addi(A1, A1, 3));
    p.i(asm::addi(A0, A0, -1));
    p.i(asm::bne(A0, ZERO, top - p.here()));
    let r = regs_after(&p.0);
    assert_eq!(r[A1 as usize], 30);
}

#[test]
fn loads_and_stores() {
    let mut p = P::new();
    p.li(A0, 0x8765_80f1);
    p.li(A1, 0x100);
    p.all(&[
        asm::sw(A0, A1, 0),
        asm::lw(S2, A1, 0),
        asm::lb(S3, A1, 0),  // 0xf1 -> sign
        asm::lbu(S4, A1, 0), // 0xf1
        asm::lh(S5, A1, 0),  // 0x80f1 -> sign
        asm::lhu(S6, A1, 0),
        asm::lh(S7, A1, 2), // 0x8765
        asm::lb(S8, A1, 1), // 0x80
        asm::sb(A0, A1, 8),
        asm::sh_(A0, A1, 10),
        asm::lw(S9, A1, 8), // 0x80f1_00f1
        asm::sw(A0, ZERO, 0x7fc),
        asm::lw(S10, A1, 0x6fc), // 0x100 + 0x6fc = 0x7fc
        asm::lw(ZERO, A1, 0),    // load into x0: discarded
    ]);
    let r = regs_after(&p.0);
    assert_eq!(r[S2 as usize], 0x8765_80f1);
    assert_eq!(r[S3 as usize], 0xffff_fff1);
    assert_eq!(r[S4 as usize], 0xf1);
    assert_eq!(r[S5 as usize], 0xffff_80f1);
    assert_eq!(r[S6 as usize], 0x80f1);
    assert_eq!(r[S7 as usize], 0xffff_8765);
    assert_eq!(r[S8 as usize], 0xffff_ff80);
    assert_eq!(r[S9 as usize], 0x80f1_00f1);
    assert_eq!(r[S10 as usize], 0x8765_80f1);
}

#[test]
fn last_wram_bytes_are_accessible() {
    let mut p = P::new();
    p.li(A1, 0xfffc);
    p.li(A0, 0xa1b2_c3d4);
    p.all(&[asm::sw(A0, A1, 0), asm::lbu(S2, A1, 3), asm::lhu(S3, A1, 2)]);
    let r = regs_after(&p.0);
    assert_eq!(r[S2 as usize], 0xa1);
    assert_eq!(r[S3 as usize], 0xa1b2);
}

#[test]
fn fence_is_nop_and_boot_registers() {
    let mut p = P::new();
    p.i(asm::fence());
    let r = regs_after(&p.0);
    assert_eq!(r[SP as usize], STACKS + STACK);
    assert_eq!(r[TP as usize], 0);
    assert_eq!(r[A0 as usize], 0);
    assert_eq!(r[RA as usize], 0);
}

#[test]
fn tasklet_ids_in_tp_and_a0_and_stacks() {
    // Every tasklet stores (tp, a0, sp) at 0x200 + 16 * id.
    let mut p = P::new();
    p.i(asm::slli(T0, TP, 4));
    p.i(asm::sw(TP, T0, 0x200));
    p.i(asm::sw(A0, T0, 0x204));
    p.i(asm::sw(SP, T0, 0x208));
    p.exit();
    let (out, d) = run_p(&p, 24);
    assert_eq!(out.fault, None);
    for t in 0..24u32 {
        assert_eq!(d.w32(0x200 + 16 * t), t);
        assert_eq!(d.w32(0x204 + 16 * t), t);
        assert_eq!(d.w32(0x208 + 16 * t), STACKS + (t + 1) * STACK);
    }
    assert_eq!(out.stats.tasklets.len(), 24);
}

#[test]
fn stack_pointer_moves_and_generic_sp_writes() {
    let mut p = P::new();
    p.i(asm::addi(SP, SP, -16));
    p.i(asm::sw(SP, ZERO, 0x300));
    p.i(asm::addi(T0, SP, -8));
    p.i(asm::addi(SP, T0, 0)); // mv sp, t0 (generic path)
    p.i(asm::sw(SP, ZERO, 0x304));
    p.i(asm::lw(SP, ZERO, 0x300)); // load into sp (generic path)
    p.i(asm::sw(SP, ZERO, 0x308));
    p.exit();
    let (out, d) = run_p(&p, 1);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x300), STACKS + STACK - 16);
    assert_eq!(d.w32(0x304), STACKS + STACK - 24);
    assert_eq!(d.w32(0x308), STACKS + STACK - 16);
}

#[test]
fn mram_direct_loads_and_stores() {
    let mut p = P::new();
    p.li(A1, 0x0800_0100);
    p.li(A0, 0xdead_beef);
    p.all(&[
        asm::sw(A0, A1, 0),
        asm::lw(S2, A1, 0),
        asm::lhu(S3, A1, 2),
        asm::lb(S4, A1, 3),
        asm::sb(A0, A1, 5),
        asm::sh_(A0, A1, 6),
        asm::lw(S5, A1, 4),
    ]);
    for r in [S2, S3, S4, S5] {
        p.i(asm::sw(r, ZERO, 4 * i32::from(r)));
    }
    p.exit();
    let (out, d) = run_p(&p, 1);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(4 * S2 as u32), 0xdead_beef);
    assert_eq!(d.w32(4 * S3 as u32), 0xdead);
    assert_eq!(d.w32(4 * S4 as u32), 0xffff_ffde);
    assert_eq!(d.w32(4 * S5 as u32), 0xbeef_ef00);
    assert_eq!(
        &d.mram[0x100..0x108],
        &[0xef, 0xbe, 0xad, 0xde, 0, 0xef, 0xef, 0xbe]
    );
    assert_eq!(out.stats.dma_bytes_read, 3 * 8 + 8);
    assert_eq!(out.stats.dma_bytes_written, 3 * 8);
    assert_eq!(out.stats.dma_requests, 7);
}

#[test]
fn wram_and_mram_keep_contents_between_runs() {
    let mut p = P::new();
    p.i(asm::lw(A0, ZERO, 0x400));
    p.i(asm::addi(A0, A0, 1));
    p.i(asm::sw(A0, ZERO, 0x400));
    p.exit();
    let mut d = Dpu::new();
    for _ in 0..3 {
        let out = d.run(&p, &boot(1), &timing());
        assert_eq!(out.fault, None);
    }
    assert_eq!(d.w32(0x400), 3);
}

#[test]
fn init_writes_are_applied() {
    let mut p = P::new();
    p.i(asm::lw(A0, ZERO, 0x40));
    p.i(asm::sw(A0, ZERO, 0x44));
    p.exit();
    let mut b = boot(1);
    b.init_writes = vec![(0x40, 0x1234_5678)];
    let mut d = Dpu::new();
    let out = d.run(&p, &b, &timing());
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x44), 0x1234_5678);
}

#[test]
fn deterministic_results_and_cycles() {
    // 16 tasklets incrementing a shared counter without locks: racy, but deterministic.
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 50));
    let top = p.here();
    p.i(asm::lw(A0, ZERO, 0x80));
    p.i(asm::addi(A0, A0, 1));
    p.i(asm::sw(A0, ZERO, 0x80));
    p.i(asm::addi(S2, S2, -1));
    p.i(asm::bne(S2, ZERO, top - p.here()));
    p.exit();
    let (a, da) = run_p(&p, 16);
    let (b, db) = run_p(&p, 16);
    assert_eq!(a, b);
    assert_eq!(da.w32(0x80), db.w32(0x80));
    assert_eq!(a.instructions, 16 * (1 + 50 * 5 + 2));
}

#[test]
fn recursive_calls_with_stack_frames() {
    // fib(n) = n < 2 ? n : fib(n-1) + fib(n-2), the way a compiler writes it.
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 15)); // 0
    p.i(asm::jal(RA, 16)); // 1 -> fib at 5
    p.i(asm::sw(A0, ZERO, 0x40)); // 2
    p.exit(); // 3, 4
    let fib = p.here();
    assert_eq!(fib, 20);
    p.i(asm::addi(T0, ZERO, 2)); // 5
    p.i(asm::blt(A0, T0, 44)); // 6 -> 17 (ret)
    p.i(asm::addi(SP, SP, -16)); // 7
    p.i(asm::sw(RA, SP, 12)); // 8
    p.i(asm::sw(S0, SP, 8)); // 9
    p.i(asm::addi(S0, A0, 0)); // 10
    p.i(asm::addi(A0, A0, -1)); // 11
    p.i(asm::jal(RA, fib - p.here())); // 12
    p.i(asm::sw(A0, SP, 4)); // 13
    p.i(asm::addi(A0, S0, -2)); // 14
    p.i(asm::jal(RA, fib - p.here())); // 15
    p.i(asm::jal(ZERO, 8)); // 16 -> 18
    p.i(asm::jalr(ZERO, RA, 0)); // 17: ret (leaf)
    p.i(asm::lw(T1, SP, 4)); // 18
    p.i(asm::add(A0, A0, T1)); // 19
    p.i(asm::lw(RA, SP, 12)); // 20
    p.i(asm::lw(S0, SP, 8)); // 21
    p.i(asm::addi(SP, SP, 16)); // 22
    p.i(asm::jalr(ZERO, RA, 0)); // 23
    let (out, d) = run_p(&p, 4);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x40), 610);
    assert_eq!(
        out.stats.tasklets[3].instructions,
        out.stats.tasklets[0].instructions
    );
}

#[test]
fn every_fault_has_a_message() {
    use openpim_engine::Fault::*;
    let all = [
        WramOutOfRange { addr: 1, size: 4 },
        MramOutOfRange { addr: 1, size: 4 },
        BadAddress { addr: 1, size: 4 },
        Misaligned { addr: 1, size: 4 },
        IramOutOfRange { addr: 1 },
        IramMisaligned { addr: 1 },
        IllegalInstruction { word: 1 },
        Breakpoint,
        DmaMisaligned { wram: 1, mram: 2 },
        DmaBadSize { size: 3 },
        DivisionByZero,
        DmaOutOfRange {
            wram: 1,
            mram: 2,
            size: 3,
        },
        StackOverflow { sp: 1, stack_lo: 2 },
        HeapExhausted { requested: 1 },
        AssertionFailed { line: 1 },
        SeqreadMisuse { detail: 1 },
        AllocatorMisuse { detail: 1 },
        ProgramFault { code: 9, detail: 1 },
        PrintfOverflow {
            bytes: 16,
            capacity: 1,
        },
        PrintfOutputTooLarge { limit: 1 },
        BadAtomicBit { bit: 1 },
        BadTaskletId {
            id: 1,
            nr_tasklets: 1,
        },
        UnknownEcall { nr: 1 },
        BadEcallArgument { nr: 1, value: 2 },
        Deadlock { sleeping: 1 },
        CycleLimit { limit: 1 },
        BadBoot { reason: "x".into() },
    ];
    let msgs: std::collections::HashSet<String> = all.iter().map(|f| f.to_string()).collect();
    assert_eq!(msgs.len(), all.len());
    assert!(all[0].to_string().contains("0x00000001"));
}
