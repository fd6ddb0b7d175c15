//! Issue-slot corrections: pairs of RV32I instructions that the DPU executes as one
//! instruction issue in one slot (crate docs, "Issue-slot corrections").
//!
//! Every test runs the same program decoded with fusion (`program_fused`) and without
//! (`program`) and checks that the results are identical and only the issue count differs.

mod common;
use common::*;
use openpim_engine::{Program, RunOutcome};
use openpim_isa::{asm, reg::*};

/// Runs `p` on one tasklet with and without fusion; asserts no fault and identical memories.
fn both(p: &P) -> (RunOutcome, RunOutcome, Dpu) {
    let mut plain = Dpu::new();
    let off = plain.run_program(&p.program(), &boot(1), &timing());
    let mut fused = Dpu::new();
    let on = fused.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!(off.fault, None);
    assert_eq!(on.fault, None);
    assert_eq!(off.stats.fused_pairs, 0);
    assert!(plain.wram == fused.wram, "fusion changed WRAM contents");
    assert!(plain.mram == fused.mram, "fusion changed MRAM contents");
    // Same RV32I instructions executed either way.
    assert_eq!(off.instructions, on.instructions + on.stats.fused_pairs);
    (off, on, fused)
}

fn fused_at(p: &P, index: usize) -> bool {
    p.program_fused().fuses_with_next(BASE + 4 * index as u32)
}

#[test]
fn alu_op_and_branch_on_its_result_issue_together() {
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 3)); // 0
    p.i(asm::addi(A0, A0, 1)); // 1: loop
    p.i(asm::addi(S2, S2, -1)); // 2: pair with 3
    p.i(asm::bne(S2, ZERO, -8)); // 3: -> 1
    p.i(asm::sw(A0, ZERO, 0x100)); // 4
    p.exit(); // 5, 6: one slot (rule 5)
    assert!(fused_at(&p, 2));
    assert!(!fused_at(&p, 1) && !fused_at(&p, 3));
    let (off, on, d) = both(&p);
    assert_eq!(d.w32(0x100), 3);
    assert_eq!(off.instructions, 1 + 3 * 3 + 3);
    assert_eq!(on.instructions, 1 + 3 * 2 + 2);
    assert_eq!(on.stats.fused_pairs, 3 + 1);
    // One tasklet: one issue every 11 cycles.
    assert_eq!(on.cycles, 11 * (on.instructions - 1) + 1);
    assert_eq!(off.cycles, 11 * (off.instructions - 1) + 1);
}

#[test]
fn compare_idioms_fuse() {
    // slt + bnez, sltiu + beqz: the DPU's compare-and-branch.
    let mut p = P::new();
    p.i(asm::slt(T0, A0, A1)).i(asm::bne(T0, ZERO, 8));
    p.i(asm::sltiu(T1, A0, 100)).i(asm::beq(ZERO, T1, 8));
    // A constant (addi rd, zero, imm11) compared by the next branch: compare-and-branch with
    // an immediate.
    p.i(asm::addi(T2, ZERO, 10)).i(asm::blt(A0, T2, 8));
    p.i(asm::addi(T2, ZERO, 1023)).i(asm::bge(T2, A0, 8));
    p.exit();
    let prog = p.program_fused();
    assert_eq!(prog.fused_pair_count(), 4 + 1); // + the exit (rule 5)
    for i in [0, 2, 4, 6] {
        assert!(fused_at(&p, i), "pair at {i}");
    }
}

#[test]
fn immediates_beyond_the_dpu_fields_do_not_fuse() {
    let mut p = P::new();
    // add with a jump has an 8-bit signed immediate on the DPU.
    p.i(asm::addi(A5, A5, 127)).i(asm::bne(A5, ZERO, 8)); // 0: fused
    p.i(asm::addi(A5, A5, 128)).i(asm::bne(A5, ZERO, 8)); // 2: not
                                                          // compare-and-branch with an immediate: 11 bits signed.
    p.i(asm::addi(T2, ZERO, -1024)).i(asm::blt(A0, T2, 8)); // 4: fused
    p.i(asm::addi(T2, ZERO, 1024)).i(asm::blt(A0, T2, 8)); // 6: not
                                                           // a branch that compares the ALU result with another register (not zero): two DPU
                                                           // instructions.
    p.i(asm::addi(A5, A5, 1)).i(asm::bne(A5, A4, 8)); // 8: not
                                                      // a branch on a register the ALU op did not write.
    p.i(asm::addi(A5, A5, 1)).i(asm::bne(A4, ZERO, 8)); // 10: not
    p.exit();
    let fused: Vec<usize> = (0..12).filter(|&i| fused_at(&p, i)).collect();
    assert_eq!(fused, vec![0, 4]);
}

#[test]
fn branch_into_the_second_op_issues_it_alone() {
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 2)); // 0
    p.i(asm::jal(ZERO, 8)); // 1: -> 3, the second op of the pair (2, 3)
    p.i(asm::addi(S2, S2, -1)); // 2: first of the pair; also the loop target
    p.i(asm::bne(S2, ZERO, -4)); // 3: -> 2
    p.exit(); // 4, 5
    assert!(fused_at(&p, 2));
    let (off, on, _) = both(&p);
    // Issues: 0, 1, 3 (alone: reached by the jump), 2+3, 2+3, 4+5.
    assert_eq!(on.instructions, 6);
    assert_eq!(on.stats.fused_pairs, 3);
    assert_eq!(off.instructions, 9);
    assert_eq!(on.cycles, 11 * 5 + 1);
}

#[test]
fn taken_branch_out_of_the_first_op_does_not_fuse() {
    // The first op of a pair never branches, but a pair whose second op is reached only by
    // falling through: check that a pair ending a run (FellOff guard) is not needed, and that
    // a fused pair can be followed by another pair.
    let mut p = P::new();
    p.i(asm::lui(A0, 0x1000)).i(asm::addi(A0, A0, 0x10)); // 0: pair (move imm32)
    p.i(asm::lui(A1, 0x2000)).i(asm::addi(A1, A1, -4)); // 2: pair
    p.i(asm::sw(A0, ZERO, 0x100)).i(asm::sw(A1, ZERO, 0x104)); // 4: sd pair (base zero)
    p.exit(); // 6, 7
    let (off, on, d) = both(&p);
    assert_eq!(d.w32(0x100), 0x1010);
    assert_eq!(d.w32(0x104), 0x1ffc);
    assert_eq!(on.stats.fused_pairs, 4);
    assert_eq!(off.instructions, 8);
    assert_eq!(on.instructions, 4);
}

#[test]
fn word_pairs_fuse_in_either_order() {
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 0x200)); // 0
    p.i(asm::lw(A1, A0, 0)).i(asm::lw(A2, A0, 4)); // 1: ld, lower first
    p.i(asm::lw(A3, A0, 12)).i(asm::lw(A4, A0, 8)); // 3: ld, upper first
    p.i(asm::lw(A5, A0, 16)).i(asm::lw(A0, A0, 20)); // 5: the second load may clobber the base
    p.i(asm::sw(A1, ZERO, 0x300)).i(asm::sw(A2, ZERO, 0x304)); // 7: sd
    p.i(asm::sw(A3, ZERO, 0x30c)).i(asm::sw(A4, ZERO, 0x308)); // 9: sd, upper first
    p.i(asm::sw(A5, ZERO, 0x310)).i(asm::sw(A0, ZERO, 0x314)); // 11: sd
    p.exit(); // 13, 14
    let mut fused = Dpu::new();
    for k in 0..6u32 {
        fused.set_w32(0x200 + 4 * k, 100 + k);
    }
    let mut plain = Dpu::new();
    plain.wram.clone_from(&fused.wram);
    let off = plain.run_program(&p.program(), &boot(1), &timing());
    let on = fused.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!((off.fault.clone(), on.fault.clone()), (None, None));
    assert!(plain.wram == fused.wram);
    for k in 0..6u32 {
        assert_eq!(fused.w32(0x300 + 4 * k), 100 + k);
    }
    assert_eq!(on.stats.fused_pairs, 6 + 1);
    assert_eq!(off.instructions, 15);
    assert_eq!(on.instructions, 8);
}

#[test]
fn load_that_clobbers_the_base_does_not_fuse() {
    let mut p = P::new();
    p.i(asm::lw(A0, A0, 0)).i(asm::lw(A1, A0, 4)); // 0: the first load overwrites the base
    p.i(asm::lw(A2, A3, 0)).i(asm::lw(A2, A3, 4)); // 2: same destination twice
    p.exit();
    assert!(!fused_at(&p, 0));
    assert!(!fused_at(&p, 2));
    let (off, on, _) = both(&p);
    assert_eq!(on.instructions, off.instructions - 1); // only the exit (rule 5)
}

#[test]
fn offsets_not_8_aligned_do_not_fuse() {
    let mut p = P::new();
    p.i(asm::lw(A1, A0, 4)).i(asm::lw(A2, A0, 8)); // 0: lower offset 4
    p.i(asm::lw(A1, A0, 0)).i(asm::lw(A2, A0, 8)); // 2: not adjacent
    p.i(asm::lw(A1, A0, 0)).i(asm::lw(A2, A1, 4)); // 4: different bases
    p.i(asm::sw(A1, A0, 12)).i(asm::sw(A2, A0, 8)); // 6: upper first, lower offset 8: fused
    p.exit();
    let fused: Vec<usize> = (0..8).filter(|&i| fused_at(&p, i)).collect();
    assert_eq!(fused, vec![6]);
}

#[test]
fn word_pair_at_a_misaligned_address_issues_twice() {
    // Statically a pair (offsets 0 and 4), but the base is only 4-aligned at run time: the
    // DPU's ld needs an 8-aligned address, so the two loads issue separately.
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 0x204)); // 0
    p.i(asm::lw(A1, A0, 0)).i(asm::lw(A2, A0, 4)); // 1
    p.i(asm::addi(A0, ZERO, 0x208)); // 3
    p.i(asm::lw(A1, A0, 0)).i(asm::lw(A2, A0, 4)); // 4
    p.exit();
    assert!(fused_at(&p, 1) && fused_at(&p, 4));
    let (off, on, _) = both(&p);
    assert_eq!(on.stats.fused_pairs, 1 + 1); // + the exit (rule 5)
    assert_eq!(on.instructions, off.instructions - 2);
}

#[test]
fn mram_word_pair_is_one_8_byte_dma() {
    let mut p = P::new();
    p.i(asm::lui(A0, 0x0800_0000)); // 0 (0x0800_0000 does not fit a 24-bit offset: no pair)
    p.i(asm::lw(A1, A0, 8)).i(asm::lw(A2, A0, 12)); // 1: one ldma of 8 bytes
    p.i(asm::sw(A2, A0, 16)).i(asm::sw(A1, A0, 20)); // 3: one sdma of 8 bytes
    p.exit(); // 5, 6
    assert!(!fused_at(&p, 0));
    let mut d = Dpu::new();
    d.mram[8..16].copy_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    let on = d.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!(on.fault, None);
    assert_eq!(&d.mram[16..24], &[2, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(on.stats.fused_pairs, 2 + 1); // + the exit (rule 5)
    assert_eq!(on.stats.dma_requests, 2);
    assert_eq!(on.stats.dma_bytes_read, 8);
    assert_eq!(on.stats.dma_bytes_written, 8);
    // Issue 1 at 11: read DMA ends at 11 + 77 + 4 = 92; issue 2 (sd) at 92: write DMA ends at
    // 92 + 61 + 4 = 157; exit (li a7 + ecall, one slot) at 157.
    assert_eq!(on.cycles, 158);
    let mut d = Dpu::new();
    let off = d.run_program(&p.program(), &boot(1), &timing());
    assert_eq!(off.stats.dma_requests, 4);
}

#[test]
fn constants_fuse_with_their_consumer() {
    let mut p = P::new();
    p.i(asm::lui(A0, 0x1000)).i(asm::lw(A1, A0, 0x100)); // 0: lw rc, zero, 0x1100
    p.i(asm::lui(A2, 0x2000)).i(asm::sw(A1, A2, -4)); // 2: sw zero, 0x1ffc, rc
    p.i(asm::lui(A3, 0xffff_0000u32 as i32))
        .i(asm::and(A4, A1, A3)); // 4: and rc, ra, imm32
    p.i(asm::auipc(T0, 0)).i(asm::jalr(RA, T0, 12)); // 6: call (-> 9)
    p.i(asm::jal(ZERO, 8)); // 8: -> 10
    p.i(asm::jalr(ZERO, RA, 0)); // 9: return to 8
    p.i(asm::lui(A5, 0x1000)).i(asm::bne(A5, ZERO, 4)); // 10: no (compare immediate > 11 bits)
    p.i(asm::lui(A5, 0x1000)).i(asm::sw(A5, A5, 0)); // 12: no (stores its own address)
    p.exit(); // 14, 15
    let fused: Vec<usize> = (0..16).filter(|&i| fused_at(&p, i)).collect();
    assert_eq!(fused, vec![0, 2, 4, 6, 14]); // 14: the exit (rule 5)
    let mut d = Dpu::new();
    d.set_w32(0x1100, 0x1234_5678);
    let on = d.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!(on.fault, None);
    assert_eq!(d.w32(0x1ffc), 0x1234_5678);
    assert_eq!(on.stats.fused_pairs, 4 + 1);
}

#[test]
fn fused_program_reaches_one_issue_per_cycle_with_11_tasklets() {
    let mut p = P::new();
    p.i(asm::addi(S2, ZERO, 50));
    p.i(asm::addi(A0, A0, 3));
    p.i(asm::addi(S2, S2, -1)).i(asm::bne(S2, ZERO, -8));
    p.exit();
    let mut d = Dpu::new();
    let out = d.run_program(&p.program_fused(), &boot(16), &timing());
    assert_eq!(out.fault, None);
    assert_eq!(out.instructions, 16 * (1 + 50 * 2 + 1));
    assert_eq!(out.stats.fused_pairs, 16 * (50 + 1));
    assert_eq!(out.cycles, out.instructions);
}

#[test]
fn perf_counter_counts_a_pair_once() {
    let mut p = P::new();
    // 0..3: instructions mode, reset (one slot: the set-up issues with the ecall, rule 5).
    p.i(asm::addi(A0, ZERO, 2)).i(asm::addi(A1, ZERO, 1)).sys(8);
    p.i(asm::addi(S2, ZERO, 4)); // 4
    p.i(asm::addi(S2, S2, -1)).i(asm::bne(S2, ZERO, -4)); // 5: 4 fused issues
    p.sys(9); // 7, 8: PERF_GET, one slot: the resetting slot + 1 + 4 pair issues = 6
    p.i(asm::sw(A0, ZERO, 0x100));
    p.exit();
    let mut d = Dpu::new();
    let out = d.run_program(&p.program_fused(), &boot(1), &timing());
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x100), 1 + 1 + 4);
}

#[test]
fn decode_without_fusion_marks_nothing() {
    let mut p = P::new();
    p.i(asm::addi(S2, S2, -1)).i(asm::bne(S2, ZERO, -4));
    p.exit();
    let bytes = p.bytes();
    assert_eq!(
        Program::decode_with(BASE, &bytes, false).fused_pair_count(),
        0
    );
    assert_eq!(Program::decode(BASE, &bytes).fused_pair_count(), 2);
}

#[test]
fn shift_and_add_issues_as_one_lsl_add() {
    // `slli t, rb, k; add t, ra, t` is the DPU's `lsl_add t, ra, rb, k` (rule 7): the
    // address of `out[pos]` for 8-byte elements, as clang emits it in PrIM's SEL and UNI.
    let mut p = P::new();
    p.li(A0, 0x200); // 0, 1: base
    p.li(A1, 5); // 2, 3: index
    p.i(asm::slli(T0, A1, 3)); // 4: fused with 5
    p.i(asm::add(T0, A0, T0)); // 5: t0 = 0x200 + 5 * 8
    p.i(asm::sw(A1, T0, 0)); // 6
    p.i(asm::slli(T1, A1, 2)); // 7: fused with 8 (the shifted register second operand)
    p.i(asm::add(T1, T1, A0)); // 8: t1 = 0x200 + 5 * 4
    p.i(asm::sw(A1, T1, 0)); // 9
                             // The shifted value survives in another register: two DPU instructions.
    p.i(asm::slli(T2, A1, 4)); // 10: not fused
    p.i(asm::add(T3, A0, T2)); // 11: t3 = 0x200 + 80
    p.i(asm::sw(T2, T3, 0)); // 12
                             // `add t, t, t` doubles the shift, not an lsl_add of another register.
    p.i(asm::slli(T4, A1, 1)); // 13: not fused
    p.i(asm::add(T4, T4, T4)); // 14
    p.i(asm::sw(T4, ZERO, 0x300)); // 15
    p.exit();
    assert!(fused_at(&p, 4) && fused_at(&p, 7));
    assert!(!fused_at(&p, 10) && !fused_at(&p, 13));
    let (off, on, d) = both(&p);
    assert_eq!(d.w32(0x228), 5);
    assert_eq!(d.w32(0x214), 5);
    assert_eq!(d.w32(0x250), 80);
    assert_eq!(d.w32(0x300), 20);
    assert_eq!(off.instructions - on.instructions, on.stats.fused_pairs);
    // The two lsl_adds, the two two-word `li`s (rule 4) and the exit's set-up (rule 5).
    assert_eq!(on.stats.fused_pairs, 2 + 2 + 1);
}

/// `xor a, x0, y0; xor b, x1, y1; or a, b, a; beqz/bnez a` comparing the 64-bit values in
/// (A0, A1) and (A2, A3); stores 1 at 0x100 when the branch is taken, 2 when not.
fn eq64_program(equal_branch: bool) -> P {
    let mut p = P::new();
    p.i(asm::xor(A4, A0, A2)); // 0
    p.i(asm::xor(A5, A1, A3)); // 1: issues with 2 and 3 (rule 8)
    p.i(asm::or(A4, A5, A4)); // 2
    if equal_branch {
        p.i(asm::beq(A4, ZERO, 16)); // 3: -> 7
    } else {
        p.i(asm::bne(A4, ZERO, 16)); // 3: -> 7
    }
    p.i(asm::addi(T0, ZERO, 2)); // 4
    p.i(asm::sw(T0, ZERO, 0x100)); // 5
    p.i(asm::jal(ZERO, 12)); // 6: -> 9
    p.i(asm::addi(T0, ZERO, 1)); // 7
    p.i(asm::sw(T0, ZERO, 0x100)); // 8
    p.exit(); // 9, 10
    p
}

#[test]
fn sixty_four_bit_equality_branch_issues_in_two_slots() {
    // The DPU compiler branches on a 64-bit (in)equality with two 32-bit compare-and-jumps
    // (rule 8): the RV32I `xor; xor; or; beqz` issues in two slots, not three.
    for equal_branch in [true, false] {
        let p = eq64_program(equal_branch);
        assert!(fused_at(&p, 1) && fused_at(&p, 2), "marks ({equal_branch})");
        assert!(!fused_at(&p, 0));
        for (lo, hi, equal) in [(7, 9, true), (7, 8, false), (6, 9, false)] {
            let mut with = p.clone();
            let mut set = P::new();
            set.i(asm::addi(A0, ZERO, 7)).i(asm::addi(A1, ZERO, 9));
            set.i(asm::addi(A2, ZERO, lo)).i(asm::addi(A3, ZERO, hi));
            set.0.extend_from_slice(&with.0);
            with.0 = set.0;
            let (off, on, d) = both(&with);
            let taken = equal == equal_branch;
            assert_eq!(d.w32(0x100), if taken { 1 } else { 2 });
            // xor + (xor, or, beqz): 2 slots instead of 3; and the exit's set-up.
            assert_eq!(off.instructions - on.instructions, 2 + 1);
        }
    }
}

#[test]
fn sixty_four_bit_equality_needs_the_whole_pattern() {
    // The `or` into a third register, a branch into the middle, a branch on a register
    // other than the `or`: the second `xor` issues alone.
    let mut p = P::new();
    p.i(asm::xor(A4, A0, A2)).i(asm::xor(A5, A1, A3)); // 0, 1
    p.i(asm::or(A6, A5, A4)).i(asm::beq(A6, ZERO, 8)); // 2, 3: rule 1 only
    p.i(asm::xor(A4, A0, A2)).i(asm::xor(A5, A1, A3)); // 4, 5
    p.i(asm::or(A4, A5, A4)).i(asm::beq(A5, ZERO, 8)); // 6, 7: branch on a5
    p.i(asm::xor(A4, A0, A2)).i(asm::xor(A5, A1, A3)); // 8, 9
    p.i(asm::or(A4, A5, A4)).i(asm::beq(A4, ZERO, 8)); // 10, 11
    p.i(asm::jal(ZERO, -8)); // 12: -> 10 (a branch target inside the pattern); never runs
    p.exit();
    assert!(fused_at(&p, 2) && !fused_at(&p, 1));
    assert!(!fused_at(&p, 5) && !fused_at(&p, 6));
    assert!(fused_at(&p, 10) && !fused_at(&p, 9));
}

/// The SDK's lock loop (`mv a0, s0; li a7, call; ecall; beqz a0, back`) on atomic bit `s0`.
fn lock_loop(p: &mut P, call: u32) {
    let top = p.here();
    p.i(asm::addi(A0, S0, 0));
    p.sys(call);
    p.i(asm::beq(A0, ZERO, top - p.here()));
}

#[test]
fn the_sdk_lock_is_one_slot_per_attempt() {
    // Rule 9: with ATOMIC_LOCK (14) the loop's branch issues with its acquire; with
    // ATOMIC_ACQUIRE (4), a trylock loop, it issues alone.
    for (call, slots, pairs) in [(14, 6, 6), (4, 7, 5)] {
        let mut p = P::new();
        p.i(asm::addi(S0, ZERO, 3)); // 0
        p.i(asm::sw(S0, ZERO, 0x104)); // 1
        lock_loop(&mut p, call); // 2-5
        p.i(asm::sw(A0, ZERO, 0x100)); // 6
        p.i(asm::addi(A0, S0, 0)); // 7-9: release
        p.sys(5);
        p.exit(); // 10, 11
        assert_eq!(fused_at(&p, 4), call == 14, "call {call}");
        let (off, on, d) = both(&p);
        assert_eq!(d.w32(0x100), 1, "call {call}: the lock was taken");
        assert_eq!(off.instructions, 12);
        assert_eq!(on.instructions, slots, "call {call}");
        assert_eq!(on.stats.fused_pairs, pairs, "call {call}");
    }
}

#[test]
fn a_waiter_on_the_sdk_lock_takes_it_at_its_first_slot_after_the_release() {
    // Two tasklets: each takes the lock, reads the cycle counter, stores it, releases.
    // Tasklet 0 gets the lock first (cycle 11); tasklet 1 issues at cycles 1, 12, 23, ...
    //   ATOMIC_LOCK: t0 lock 11, CYCLES 22, store 33, release 44; t1 fails at 12, 23, 34,
    //   acquires at 45 (every slot is an attempt), CYCLES 56: 34 cycles apart.
    //   ATOMIC_ACQUIRE: t0 acquire 11, branch 22, CYCLES 33, store 44, release 55; t1
    //   attempts at 12, 34, branches at 23, 45, acquires at 56, branch 67, CYCLES 78: 45.
    for (call, apart) in [(14u32, 34u32), (4, 45)] {
        let mut p = P::new();
        p.i(asm::slli(T0, TP, 2));
        p.i(asm::addi(S0, ZERO, 3));
        lock_loop(&mut p, call);
        p.sys(13); // CYCLES
        p.i(asm::sw(A0, T0, 0x200));
        p.i(asm::addi(A0, S0, 0));
        p.sys(5);
        p.exit();
        let program = p.program_fused();
        for program in [program.without_shortcuts(), program] {
            let mut d = Dpu::new();
            let out = d.run_program(&program, &boot(2), &timing());
            assert_eq!(out.fault, None);
            assert_eq!(d.w32(0x204) - d.w32(0x200), apart, "call {call}");
        }
    }
}
