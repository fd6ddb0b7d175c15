//! Issue-slot corrections, rules 5 and 6 (crate docs, "Issue-slot corrections"): the
//! operand set-up of an environment call issues with the `ecall`, and the carry (borrow)
//! computation and consumption of a 64-bit add (subtract) are free.
//!
//! Every run is done with fusion (`program_fused`) and without (`program`): results must be
//! identical and only the issue count may differ.

mod common;
use common::*;
use openpim_engine::RunOutcome;
use openpim_isa::{asm, reg::*};

/// Runs `p` on one tasklet with and without fusion from the same initial memories (`init`);
/// asserts no fault, identical memories and RV32I instructions = instructions + fused_pairs.
fn both_with(p: &P, init: impl Fn(&mut Dpu)) -> (RunOutcome, RunOutcome, Dpu) {
    let mut plain = Dpu::new();
    init(&mut plain);
    let off = plain.run_program(&p.program(), &boot(1), &timing());
    let mut fused = Dpu::new();
    init(&mut fused);
    let on = fused.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!(off.fault, None);
    assert_eq!(on.fault, None);
    assert_eq!(off.stats.fused_pairs, 0);
    assert!(plain.wram == fused.wram, "fusion changed WRAM contents");
    assert!(plain.mram == fused.mram, "fusion changed MRAM contents");
    assert_eq!(off.instructions, on.instructions + on.stats.fused_pairs);
    (off, on, fused)
}

fn both(p: &P) -> (RunOutcome, RunOutcome, Dpu) {
    both_with(p, |_| {})
}

/// Indices `< end` of the ops that make the next op issue in their slot.
fn marks(p: &P, end: usize) -> Vec<usize> {
    let prog = p.program_fused();
    (0..end)
        .filter(|&i| prog.fuses_with_next(BASE + 4 * i as u32))
        .collect()
}

// ------------------------------------------------------------------ rule 5: call set-up

#[test]
fn call_setup_moves_issue_with_the_ecall() {
    let mut p = P::new();
    p.i(asm::lui(T5, 0x0800_0000)); // 0: MRAM address
    p.i(asm::addi(S1, ZERO, 0x100)); // 1: WRAM address
    p.i(asm::addi(T4, ZERO, 16)); // 2: size
    p.i(asm::addi(A0, ZERO, 7)); // 3
    p.i(asm::addi(A1, ZERO, 9)); // 4
    p.i(asm::sw(ZERO, ZERO, 0x80)); // 5: not a move: ends any run before it

    // 6..12: DMA_MRAM_TO_WRAM with the compiler's register shuffle: one slot.
    p.i(asm::addi(A7, ZERO, 2)); // 6: li a7, 2
    p.i(asm::addi(T1, A1, 0)); // 7: mv t1, a1
    p.i(asm::addi(A5, A0, 0)); // 8: mv a5, a0
    p.i(asm::addi(A1, S1, 0)); // 9: mv a1, s1
    p.i(asm::addi(A0, T5, 0)); // 10: mv a0, t5
    p.i(asm::addi(A2, T4, 0)); // 11: mv a2, t4
    p.i(asm::ecall()); // 12
    p.i(asm::sw(T1, ZERO, 0x84)); // 13 (offsets 0x84/0x88: not a word pair)
    p.i(asm::sw(A5, ZERO, 0x88)); // 14
    p.exit(); // 15, 16: one slot
    assert_eq!(marks(&p, 17), vec![6, 7, 8, 9, 10, 11, 15]);
    let (off, on, d) = both_with(&p, |d| {
        for k in 0..16 {
            d.mram[k] = 0x30 + k as u8;
        }
    });
    assert_eq!(&d.wram[0x100..0x110], &d.mram[0..16]);
    assert_eq!(d.wram[0x10f], 0x3f);
    assert_eq!((d.w32(0x84), d.w32(0x88)), (9, 7));
    assert_eq!(off.instructions, 17);
    assert_eq!(on.instructions, 6 + 1 + 2 + 1);
    assert_eq!(on.stats.fused_pairs, 7);
    // Fused: issues at 0, 11, .., 55; the call at 66 (DMA of 16 bytes ends at
    // 66 + 77 + 8 = 151); stores at 151, 162; exit at 173.
    assert_eq!(on.cycles, 174);
    // Unfused: the ecall issues at 12 * 11 = 132 (DMA ends at 217); 217, 228, 239, 250.
    assert_eq!(off.cycles, 251);
}

#[test]
fn small_constants_issue_with_the_ecall() {
    // li a0, 0; li a1, 0; li a7, 9 (PERF_GET); ecall: one slot, at cycle 0.
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 0)).i(asm::addi(A1, ZERO, 0)).sys(9); // 0..3
    p.i(asm::sw(A0, ZERO, 0x100)); // 4
    p.exit(); // 5, 6
    assert_eq!(marks(&p, 7), vec![0, 1, 2, 5]);
    let mut d = Dpu::new();
    let on = d.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!(on.fault, None);
    assert_eq!(d.w32(0x100), 0, "PERF_GET issued at cycle 0");
    assert_eq!(on.instructions, 3);
    assert_eq!(on.stats.fused_pairs, 4);
    assert_eq!(on.cycles, 23);
    let mut d = Dpu::new();
    let off = d.run_program(&p.program(), &boot(1), &timing());
    assert_eq!(
        d.w32(0x100),
        33,
        "PERF_GET issued at cycle 33 without fusion"
    );
    assert_eq!(off.instructions, 7);
}

#[test]
fn runtime_call_wrapper_set_up_is_free() {
    // __mulsi3: mv a3, a7; li a7, 20; ecall; mv a7, a3; ret. The restore of a7 after the
    // ecall is not covered (it issues alone).
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 6)); // 0
    p.i(asm::addi(A1, ZERO, 7)); // 1
    p.i(asm::addi(A7, ZERO, 99)); // 2
    p.i(asm::jal(RA, 24)); // 3: -> 9
    p.i(asm::sw(A0, ZERO, 0x100)); // 4
    p.i(asm::sw(A7, ZERO, 0x104)); // 5: a word pair with 4
    p.i(asm::sw(A3, ZERO, 0x108)); // 6
    p.exit(); // 7, 8
    p.i(asm::addi(A3, A7, 0)); // 9: mv a3, a7
    p.i(asm::addi(A7, ZERO, 20)); // 10: li a7, MUL32
    p.i(asm::ecall()); // 11
    p.i(asm::addi(A7, A3, 0)); // 12: mv a7, a3
    p.i(asm::jalr(ZERO, RA, 0)); // 13: ret
    assert_eq!(marks(&p, 14), vec![4, 7, 9, 10]);
    let (off, on, d) = both(&p);
    assert_eq!((d.w32(0x100), d.w32(0x104), d.w32(0x108)), (42, 99, 99));
    // Fused: 0, 1, 2, 3, (9 10 11), 6 MUL32 slots (6 * 7: 3 + 3 mul_steps), 12, 13, (4 5),
    // 6, (7 8).
    assert_eq!(on.instructions, 4 + 1 + 6 + 2 + 3);
    assert_eq!(off.instructions, 4 + 3 + 6 + 2 + 5);
    assert_eq!(on.cycles, 11 * (on.instructions - 1) + 1);
}

#[test]
fn only_moves_and_small_constants_directly_before_the_ecall_are_free() {
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 5)); // 0: li, but the run is broken by 1
    p.i(asm::addi(A1, SP, 16)); // 1: addi a1, sp, 16 is not a move
    p.i(asm::addi(A2, A0, 0)); // 2: mv, broken by 3
    p.i(asm::addi(ZERO, A0, 0)); // 3: a write to x0 (nop) is not a move
    p.i(asm::addi(A3, A0, 0)); // 4: mv, broken by 5
    p.i(asm::add(A4, A0, A2)); // 5: not a move
    p.i(asm::lui(A6, 0x1000)); // 6: a 32-bit constant is not free (see the crate docs)
    p.i(asm::addi(A7, ZERO, 12)); // 7: li a7, STACK_LEFT: free
    p.i(asm::ecall()); // 8
    p.i(asm::sw(A1, ZERO, 0x100)); // 9
    p.i(asm::sw(A4, ZERO, 0x104)); // 10 (pair with 9)
    p.i(asm::sw(A6, ZERO, 0x108)); // 11
    p.i(asm::sw(A0, ZERO, 0x10c)); // 12 (pair with 11)
    p.exit(); // 13, 14
    assert_eq!(marks(&p, 15), vec![7, 9, 11, 13]);
    let (off, on, d) = both(&p);
    assert_eq!(d.w32(0x100), STACKS + STACK + 16);
    assert_eq!(d.w32(0x104), 10);
    assert_eq!(d.w32(0x108), 0x1000);
    assert_eq!(d.w32(0x10c), STACK, "STACK_LEFT = sp - stack_lo");
    assert_eq!(off.instructions, 15);
    assert_eq!(on.instructions, 11);
    assert_eq!(on.cycles, 11 * 10 + 1);
}

#[test]
fn branch_into_the_setup_run_issues_the_rest_with_the_ecall() {
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 2)); // 0
    p.i(asm::jal(ZERO, 8)); // 1: -> 3, the middle of the run
    p.i(asm::addi(A0, ZERO, 0)); // 2: li a0, 0 (loop target)
    p.i(asm::addi(A1, A0, 0)); // 3: mv a1, a0
    p.i(asm::addi(A7, ZERO, 13)); // 4: li a7, CYCLES
    p.i(asm::ecall()); // 5
    p.i(asm::addi(S2, S2, -1)); // 6
    p.i(asm::bne(S2, ZERO, -20)); // 7: -> 2
    p.exit(); // 8, 9
    assert_eq!(marks(&p, 10), vec![2, 3, 4, 6, 8]);
    let (off, on, _) = both(&p);
    // Issues: 0, 1, (3 4 5), (6 7), (2 3 4 5), (6 7), (8 9).
    assert_eq!(on.instructions, 7);
    assert_eq!(on.stats.fused_pairs, 2 + 1 + 3 + 1 + 1);
    assert_eq!(off.instructions, 15);
    assert_eq!(on.cycles, 11 * 6 + 1);
}

// ------------------------------------------------------------------ rule 6: 64-bit add/sub

/// The i64_add loop body of the fidelity suite (gcc -O2 for rv32i), on one element.
fn add64_program(b: u64) -> P {
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 0x200)); // 0
    p.i(asm::addi(A2, ZERO, b as u32 as i32)); // 1
    p.i(asm::addi(A3, ZERO, (b >> 32) as i32)); // 2
    p.i(asm::lw(A5, A0, 0)); // 3: ld pair
    p.i(asm::lw(A4, A0, 4)); // 4
    p.i(asm::add(A6, A5, A2)); // 5: lo = al + bl
    p.i(asm::sltu(A5, A6, A5)); // 6: carry: free
    p.i(asm::add(A4, A4, A3)); // 7: h = ah + bh
    p.i(asm::add(A5, A5, A4)); // 8: hi = c + h: free
    p.i(asm::sw(A6, A0, 8)); // 9: sd pair
    p.i(asm::sw(A5, A0, 12)); // 10
    p.exit(); // 11, 12
    p
}

fn put64(d: &mut Dpu, addr: u32, v: u64) {
    d.set_w32(addr, v as u32);
    d.set_w32(addr + 4, (v >> 32) as u32);
}

fn get64(d: &Dpu, addr: u32) -> u64 {
    u64::from(d.w32(addr)) | u64::from(d.w32(addr + 4)) << 32
}

#[test]
fn add64_carry_is_free() {
    for (a, b) in [
        (0x0000_0001_ffff_fff0u64, 0x0000_0002_0000_0020u64),
        (0x0000_0001_0000_0010, 0x0000_0002_0000_0020),
        (u64::MAX, 0x0000_0000_0000_0001),
    ] {
        let p = add64_program(b);
        assert_eq!(marks(&p, 13), vec![3, 5, 7, 9, 11]);
        let (off, on, d) = both_with(&p, |d| put64(d, 0x200, a));
        assert_eq!(get64(&d, 0x208), a.wrapping_add(b));
        // li, li, li, ld, add+sltu, add+add, sd, exit.
        assert_eq!(on.instructions, 8);
        assert_eq!(off.instructions, 13);
        assert_eq!(on.cycles, 11 * 7 + 1);
    }
}

#[test]
fn sub64_borrow_is_free() {
    // The i64_sub loop body: sub a6,a4,a2; sltu a4,a4,a6; sub a5,a5,a3; sub a5,a5,a4.
    for (a, b) in [
        (0x0000_0005_0000_0010u64, 0x0000_0002_0000_0020u64),
        (0x0000_0005_0000_0030, 0x0000_0002_0000_0020),
        (0, 1),
    ] {
        let mut p = P::new();
        p.i(asm::addi(A0, ZERO, 0x200)); // 0
        p.i(asm::addi(A2, ZERO, b as u32 as i32)); // 1
        p.i(asm::addi(A3, ZERO, (b >> 32) as i32)); // 2
        p.i(asm::lw(A4, A0, 0)); // 3: ld pair
        p.i(asm::lw(A5, A0, 4)); // 4
        p.i(asm::sub(A6, A4, A2)); // 5: lo = al - bl
        p.i(asm::sltu(A4, A4, A6)); // 6: borrow: free
        p.i(asm::sub(A5, A5, A3)); // 7: h = ah - bh
        p.i(asm::sub(A5, A5, A4)); // 8: hi = h - borrow: free
        p.i(asm::sw(A6, A0, 8)); // 9: sd pair
        p.i(asm::sw(A5, A0, 12)); // 10
        p.exit(); // 11, 12
        assert_eq!(marks(&p, 13), vec![3, 5, 7, 9, 11]);
        let (off, on, d) = both_with(&p, |d| put64(d, 0x200, a));
        assert_eq!(get64(&d, 0x208), a.wrapping_sub(b));
        assert_eq!(on.instructions, 8);
        assert_eq!(off.instructions, 13);
        assert_eq!(on.cycles, 11 * 7 + 1);
    }
}

/// Runs `snippet` (a0:a1 = `a`, a2:a3 = `b`, set up by a prefix that ends with a jump, so
/// no window reaches into it) and returns (marks inside the snippet, relative; a0:a1).
fn shape(snippet: &[u32], a: u64, b: u64) -> (Vec<usize>, u64) {
    let mut p = P::new();
    p.li(A0, a as u32).li(A1, (a >> 32) as u32);
    p.li(A2, b as u32).li(A3, (b >> 32) as u32);
    p.i(asm::jal(ZERO, 4));
    let first = p.0.len();
    p.all(snippet);
    let end = p.0.len();
    p.i(asm::sw(A0, ZERO, 0x100)).i(asm::sw(A1, ZERO, 0x104));
    p.exit();
    let m = marks(&p, end)
        .into_iter()
        .filter(|&i| i >= first)
        .map(|i| i - first)
        .collect();
    let (_, _, d) = both(&p);
    (m, get64(&d, 0x100))
}

#[test]
fn gcc_add64_and_sub64_shapes_cost_two_slots() {
    let (a, b) = (0x0000_0003_ffff_fffeu64, 0x0000_0001_0000_0005u64);
    // uint64_t add(a, b): mv a5,a0; add a0,a0,a2; sltu a5,a0,a5; add a1,a1,a3; add a1,a5,a1.
    let add = [
        asm::addi(A5, A0, 0),
        asm::add(A0, A0, A2),
        asm::sltu(A5, A0, A5),
        asm::add(A1, A1, A3),
        asm::add(A1, A5, A1),
    ];
    assert_eq!(shape(&add, a, b), (vec![0, 1, 3], a.wrapping_add(b)));
    // The high add between the low add and the carry.
    let add = [
        asm::add(T0, A0, A2),
        asm::add(A1, A1, A3),
        asm::sltu(T1, T0, A2),
        asm::add(A1, A1, T1),
        asm::addi(A0, T0, 0),
    ];
    assert_eq!(shape(&add, a, b), (vec![1, 2], a.wrapping_add(b)));
    // A sum loop: add a4,a0,a4; sltu a3,a4,a0; add a1,a1,a2; mv a0,a4; add a1,a3,a1
    // (here a4 = a2).
    let sum = [
        asm::add(A4, A0, A2),
        asm::sltu(T2, A4, A0),
        asm::add(A1, A1, A3),
        asm::addi(A0, A4, 0),
        asm::add(A1, T2, A1),
    ];
    assert_eq!(shape(&sum, a, b), (vec![0, 3], a.wrapping_add(b)));
    // a + 5 (64-bit + 32-bit, no high add): only the carry is free (DPU: add, addc _, 0).
    let add5 = [
        asm::addi(A5, A0, 0),
        asm::addi(A0, A0, 5),
        asm::sltu(A5, A0, A5),
        asm::add(A1, A5, A1),
    ];
    assert_eq!(shape(&add5, a, 0), (vec![0, 1], a.wrapping_add(5)));
    // A constant high part: add t0,a0,a2; sltu a1,t0,a0; addi a1,a1,2 (DPU: addc a1, zero,
    // 2); mv a0,t0. Only the carry is free.
    let addk = [
        asm::add(T0, A0, A2),
        asm::sltu(A1, T0, A0),
        asm::addi(A1, A1, 2),
        asm::addi(A0, T0, 0),
    ];
    let lo = u64::from(a as u32) + u64::from(b as u32);
    assert_eq!(shape(&addk, a, b), (vec![0], lo + (2 << 32)));
    // uint64_t sub(a, b): mv a5,a0; sub a0,a0,a2; sltu a5,a5,a0; sub a1,a1,a3; sub a1,a1,a5.
    let sub = [
        asm::addi(A5, A0, 0),
        asm::sub(A0, A0, A2),
        asm::sltu(A5, A5, A0),
        asm::sub(A1, A1, A3),
        asm::sub(A1, A1, A5),
    ];
    assert_eq!(shape(&sub, a, b), (vec![0, 1, 3], a.wrapping_sub(b)));
    assert_eq!(shape(&sub, b, a), (vec![0, 1, 3], b.wrapping_sub(a)));
    // The borrow computed first: sltu c,al,bl; sub lo,al,bl; sub h,ah,bh; sub hi,h,c.
    let sub = [
        asm::sltu(T0, A0, A2),
        asm::sub(A0, A0, A2),
        asm::sub(A1, A1, A3),
        asm::sub(A1, A1, T0),
    ];
    assert_eq!(shape(&sub, b, a), (vec![0, 2], b.wrapping_sub(a)));
    // Negation: snez a5,a0; neg a1,a1; neg a0,a0; sub a1,a1,a5.
    let neg = [
        asm::sltu(A5, ZERO, A0),
        asm::sub(A1, ZERO, A1),
        asm::sub(A0, ZERO, A0),
        asm::sub(A1, A1, A5),
    ];
    assert_eq!(shape(&neg, a, 0), (vec![1, 2], a.wrapping_neg()));
}

#[test]
fn carries_that_are_not_unambiguous_do_not_fuse() {
    let (a, b) = (0x0000_0003_ffff_fffeu64, 0x0000_0001_0000_0005u64);
    let none = (vec![], 0);
    let no_marks = |s: &[u32]| (shape(s, a, b).0, 0);
    // The sltu compares the sum with a register that is not an operand of the add.
    let s = [
        asm::add(T0, A0, A2),
        asm::sltu(T1, T0, A3),
        asm::add(A1, A1, A3),
        asm::add(A1, A1, T1),
    ];
    assert_eq!(no_marks(&s), none);
    // The operand compared with was overwritten between the add and the sltu.
    let s = [
        asm::add(T0, A0, A2),
        asm::addi(A2, A2, 1),
        asm::sltu(T1, T0, A2),
        asm::add(A1, A1, T1),
    ];
    assert_eq!(no_marks(&s), none);
    // The consumer does not use the carry.
    let s = [
        asm::add(T0, A0, A2),
        asm::sltu(T1, T0, A0),
        asm::add(A1, A1, A3),
        asm::add(A1, A1, A2),
    ];
    assert_eq!(no_marks(&s), none);
    // sub's borrow is not `sltu c, lo, a`.
    let s = [
        asm::sub(T0, A0, A2),
        asm::sltu(T1, T0, A0),
        asm::sub(A1, A1, A3),
        asm::sub(A1, A1, T1),
    ];
    assert_eq!(no_marks(&s), none);
    // sub hi, c, h is not a subtract with borrow.
    let s = [
        asm::sub(T0, A0, A2),
        asm::sltu(T1, A0, T0),
        asm::sub(A1, A1, A3),
        asm::sub(A1, T1, A1),
    ];
    assert_eq!(no_marks(&s), none);
    // A branch inside the window.
    let s = [
        asm::add(T0, A0, A2),
        asm::beq(A0, A0, 4),
        asm::sltu(T1, T0, A0),
        asm::add(A1, A1, A3),
        asm::add(A1, A1, T1),
    ];
    assert_eq!(no_marks(&s), none);
    // Too far apart: the consumer is 6 instructions after the add.
    let s = [
        asm::add(T0, A0, A2),
        asm::sltu(T1, T0, A0),
        asm::addi(T3, ZERO, 1),
        asm::addi(T3, ZERO, 2),
        asm::addi(T4, ZERO, 1),
        asm::addi(T5, ZERO, 1),
        asm::add(A1, A1, T1),
    ];
    assert_eq!(no_marks(&s), none);
}

#[test]
fn branch_target_inside_the_carry_window_prevents_fusion() {
    // A loop whose back edge targets the sltu: control may reach it with a different sum.
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 2)); // 0
    p.i(asm::addi(A0, ZERO, -1)); // 1
    p.i(asm::addi(A2, ZERO, 3)); // 2
    p.i(asm::add(T0, A0, A2)); // 3
    p.i(asm::sltu(T1, T0, A0)); // 4: loop target
    p.i(asm::add(A1, A1, A3)); // 5
    p.i(asm::add(A1, A1, T1)); // 6
    p.i(asm::addi(S2, S2, -1)); // 7
    p.i(asm::bne(S2, ZERO, -16)); // 8: -> 4
    p.i(asm::sw(A1, ZERO, 0x100)); // 9
    p.exit(); // 10, 11
    assert_eq!(marks(&p, 12), vec![7, 10]);
    let (off, on, d) = both(&p);
    assert_eq!(d.w32(0x100), 2);
    // 0..3, then twice 4, 5, 6, (7 8), then 9, (10 11).
    assert_eq!(on.instructions, 4 + 2 * 4 + 2);
    assert_eq!(off.instructions, 4 + 2 * 5 + 3);
    assert_eq!(on.cycles, 11 * (on.instructions - 1) + 1);
}
