//! Epochs and the events they hand to the interpreter: while the tasklets' code runs ahead of
//! its issue in batches, a slot that other tasklets could observe is executed by the
//! interpreter at its own cycle and the epoch goes on after it. These programs make such slots
//! between long runs of register-only code: a tasklet put to sleep and woken by another that
//! stored what it then reads, MRAM word loads and stores and DMA between tasklets, the words of
//! adjacent tasklets within one 8-byte word, counters read mid-run, and atomic bits that
//! batches acquire and release themselves when no other tasklet can see them yet. A few
//! tasklets (fewer than the revolver's cycles, whose slots are counted period by period) and
//! many.
//!
//! Every program runs with the shortcuts and without them (`Program::without_shortcuts`), on
//! many tasklet counts and with cycle limits cutting it at about 100 points; outcomes and both
//! memories must be identical. Each test also checks the program's own results.

mod common;

use common::*;
use openpim_engine::{map, Program};
use openpim_isa::{asm::*, reg::*};

/// WRAM word holding the number of tasklets (set by each test's initialisation).
const NR: i32 = 0x100;
/// Per-tasklet results: 16 bytes each (every address here fits an immediate).
const RES: i32 = 0x400;

/// `iterations` rounds of a xorshift on `s5` (register-only code: long batches).
fn compute(p: &mut P, iterations: u8) {
    p.i(addi(T3, ZERO, i32::from(iterations)));
    compute_t3(p);
}

/// `compute` with its count already in `t3`.
fn compute_t3(p: &mut P) {
    let top = p.here();
    p.i(slli(T4, S5, 13));
    p.i(xor(S5, S5, T4));
    p.i(srli(T4, S5, 17));
    p.i(xor(S5, S5, T4));
    p.i(slli(T4, S5, 5));
    p.i(xor(S5, S5, T4));
    p.i(addi(T3, T3, -1));
    p.i(bne(T3, ZERO, top - p.here()));
}

/// `compute` in Rust.
fn xorshift(mut x: u32, iterations: u32) -> u32 {
    for _ in 0..iterations {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    x
}

/// Runs `program` on each tasklet count of `nrs` (initialised by `init`, which is given the
/// count) with and without shortcuts, complete and cut by cycle limits at about 100 points;
/// returns the complete runs' memories.
fn same_everywhere(program: &Program, nrs: &[u32], init: &dyn Fn(&mut Dpu, u32)) -> Vec<Dpu> {
    let mut runs = Vec::new();
    for &nr in nrs {
        let tm = timing();
        let (out, d) = same_init(program, nr, &tm, &|d| init(d, nr));
        assert_eq!(out.fault, None, "{nr} tasklets: {:?}", out.fault);
        same_cut(program, nr, &|d| init(d, nr), spread(out.cycles));
        runs.push(d);
    }
    runs
}

fn set_nr(d: &mut Dpu, nr: u32) {
    d.set_w32(NR as u32, nr);
}

const COUNTS: [u32; 9] = [1, 2, 3, 6, 10, 11, 12, 16, 24];

// ---------------------------------------------------------------------------------------
// 1. A chain of sleeps and wake-ups passing values through WRAM.

/// Chain values: word `t` at `CHAIN + 4t`, adjacent words of adjacent tasklets.
const CHAIN: i32 = 0x140;

/// Each tasklet computes (a count of rounds that depends on its id), then every tasklet but
/// the first sleeps until the one before it wakes it; it reads the value that one stored,
/// stores `3 * value + its own`, wakes the next one (a wake-up before the sleep is kept, as on
/// the DPU) and computes on.
fn sleep_chain() -> P {
    let mut p = P::new();
    p.i(addi(S5, TP, 1));
    p.i(slli(T0, TP, 3));
    p.i(addi(T3, T0, 40));
    // compute(40 + 8 tp)
    compute_t3(&mut p);
    p.i(addi(S6, ZERO, 7));
    let first = hole(&mut p); // beq tp, zero
    p.sys(6); // sleep
    p.i(slli(T0, TP, 2));
    p.i(lw(S6, T0, CHAIN - 4));
    fill(&mut p, first, |o| beq(TP, ZERO, o));
    p.i(slli(T1, S6, 1));
    p.i(add(T1, T1, S6));
    p.i(add(T1, T1, S5));
    p.i(slli(T0, TP, 2));
    p.i(sw(T1, T0, CHAIN));
    p.i(addi(A0, TP, 1));
    p.i(lw(T1, ZERO, NR));
    let last = hole(&mut p); // bgeu a0, t1
    p.sys(7); // resume
    fill(&mut p, last, |o| bgeu(A0, T1, o));
    compute(&mut p, 30);
    p.i(slli(T0, TP, 4));
    p.i(sw(S5, T0, RES));
    p.exit();
    p
}

#[test]
fn sleep_and_wake_up_pass_values_through_wram() {
    let runs = same_everywhere(&sleep_chain().program_fused(), &COUNTS, &set_nr);
    for (d, &nr) in runs.iter().zip(&COUNTS) {
        let mut v = 7u32;
        for t in 0..nr {
            let own = xorshift(t + 1, 40 + 8 * t);
            v = v.wrapping_mul(3).wrapping_add(own);
            assert_eq!(d.w32(CHAIN as u32 + 4 * t), v, "{nr} tasklets, tasklet {t}");
            assert_eq!(
                d.w32(RES as u32 + 16 * t),
                xorshift(own, 30),
                "{nr} tasklets"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// 2. MRAM words and DMA between tasklets.

/// MRAM slots: 8 bytes per tasklet at this offset.
const SLOTS: u32 = 0x1_0000;
/// WRAM buffers of the DMA reads: 8 bytes per tasklet.
const BUF: i32 = 0x280;
const ROUNDS: i32 = 12;

/// Each tasklet, `ROUNDS` times: computes, stores the round number into its MRAM slot (a word
/// store to MRAM), loads the next tasklet's slot (a word load from MRAM) and adds it up; every
/// fourth round also reads the slot two tasklets on into its WRAM buffer by DMA and adds that
/// up. Sums in its results.
fn mram_words() -> P {
    let mut p = P::new();
    p.i(addi(S5, TP, 1));
    p.all(&li(S9, map::MRAM_BASE + SLOTS));
    p.i(lw(S1, ZERO, NR));
    // s2: own slot, s3: next tasklet's, s4: two on (addresses).
    p.i(slli(T0, TP, 3));
    p.i(add(S2, S9, T0));
    p.i(addi(T1, TP, 1));
    let wrap1 = hole(&mut p); // bltu t1, s1
    p.i(addi(T1, ZERO, 0));
    fill(&mut p, wrap1, |o| bltu(T1, S1, o));
    p.i(slli(T1, T1, 3));
    p.i(add(S3, S9, T1));
    p.i(addi(T1, TP, 2));
    let wrap2 = hole(&mut p); // bltu t1, s1
    p.i(sub(T1, T1, S1));
    let wrap3 = hole(&mut p); // bltu t1, s1
    p.i(sub(T1, T1, S1));
    fill(&mut p, wrap2, |o| bltu(T1, S1, o));
    fill(&mut p, wrap3, |o| bltu(T1, S1, o));
    p.i(slli(T1, T1, 3));
    p.i(add(S4, S9, T1));
    p.i(slli(S8, TP, 3));
    p.i(addi(S8, S8, BUF));
    p.i(addi(S7, ZERO, 0));
    let top = p.here();
    compute(&mut p, 6);
    p.i(sw(S7, S2, 0));
    p.i(lw(T1, S3, 0));
    p.i(add(S6, S6, T1));
    p.i(andi(T2, S7, 3));
    let skip = hole(&mut p); // bne t2, zero
    p.i(addi(A0, S4, 0));
    p.i(addi(A1, S8, 0));
    p.i(addi(A2, ZERO, 8));
    p.sys(2);
    p.i(lw(T1, S8, 0));
    p.i(add(S10, S10, T1));
    fill(&mut p, skip, |o| bne(T2, ZERO, o));
    p.i(addi(S7, S7, 1));
    p.i(addi(T0, ZERO, ROUNDS));
    p.i(bne(S7, T0, top - p.here()));
    p.i(slli(T0, TP, 4));
    p.i(sw(S6, T0, RES));
    p.i(sw(S10, T0, RES + 4));
    p.exit();
    p
}

#[test]
fn mram_word_accesses_and_dma_between_tasklets() {
    let runs = same_everywhere(&mram_words().program_fused(), &COUNTS, &set_nr);
    let mut sums = std::collections::BTreeSet::new();
    for (d, &nr) in runs.iter().zip(&COUNTS) {
        for t in 0..nr {
            let slot = (SLOTS + 8 * t) as usize;
            let last = u32::from_le_bytes(d.mram[slot..slot + 4].try_into().unwrap());
            assert_eq!(last, ROUNDS as u32 - 1, "{nr} tasklets, tasklet {t}'s slot");
            // Each load saw a round number of the slot's owner (or its initial 0).
            let sum = d.w32(RES as u32 + 16 * t);
            assert!(
                sum <= (ROUNDS * (ROUNDS - 1)) as u32,
                "{nr} tasklets: {sum}"
            );
            sums.insert(sum);
        }
    }
    // What the loads saw depends on the interleaving.
    assert!(sums.len() > 3, "{sums:?}");
}

// ---------------------------------------------------------------------------------------
// 3. Adjacent tasklets' bytes, halves and words within one 8-byte word.

const BYTES: i32 = 0x1c0;
const HALVES: i32 = 0x1e0;
const WORDS: i32 = 0x220;

/// Each tasklet, `ROUNDS` times: computes, then increments its byte, its half and its word of
/// three arrays indexed by tasklet; tasklet 0 also adds up every word of the word array each
/// round (racy reads of the others' words).
fn adjacent() -> P {
    let mut p = P::new();
    p.i(addi(S5, TP, 1));
    p.i(lw(S1, ZERO, NR));
    p.i(addi(S7, ZERO, 0));
    let top = p.here();
    compute(&mut p, 4);
    p.i(lbu(T0, TP, BYTES));
    p.i(addi(T0, T0, 1));
    p.i(sb(T0, TP, BYTES));
    p.i(slli(T1, TP, 1));
    p.i(lhu(T0, T1, HALVES));
    p.i(addi(T0, T0, 1));
    p.i(sh_(T0, T1, HALVES));
    p.i(slli(T1, TP, 2));
    p.i(lw(T0, T1, WORDS));
    p.i(addi(T0, T0, 1));
    p.i(sw(T0, T1, WORDS));
    let not0 = hole(&mut p); // bne tp, zero
    p.i(addi(T2, ZERO, 0));
    let sum = p.here();
    p.i(slli(T1, T2, 2));
    p.i(lw(T0, T1, WORDS));
    p.i(add(S6, S6, T0));
    p.i(addi(T2, T2, 1));
    p.i(bne(T2, S1, sum - p.here()));
    fill(&mut p, not0, |o| bne(TP, ZERO, o));
    p.i(addi(S7, S7, 1));
    p.i(addi(T0, ZERO, ROUNDS));
    p.i(bne(S7, T0, top - p.here()));
    p.i(slli(T0, TP, 4));
    p.i(sw(S6, T0, RES));
    p.exit();
    p
}

#[test]
fn adjacent_tasklets_words_in_one_granule() {
    let runs = same_everywhere(&adjacent().program_fused(), &COUNTS, &set_nr);
    let mut sums = std::collections::BTreeSet::new();
    for (d, &nr) in runs.iter().zip(&COUNTS) {
        for t in 0..nr {
            let r = ROUNDS as u32;
            let byte = u32::from(d.wram[(BYTES as u32 + t) as usize]);
            assert_eq!(byte, r, "{nr} tasklets, tasklet {t}'s byte");
            let half = d.w32(HALVES as u32 + 2 * t) & 0xffff;
            assert_eq!(half, r, "{nr} tasklets, tasklet {t}'s half");
            assert_eq!(d.w32(WORDS as u32 + 4 * t), r, "{nr} tasklets, tasklet {t}");
        }
        sums.insert(d.w32(RES as u32));
    }
    assert!(
        sums.len() > 3,
        "tasklet 0's sums do not depend on the others: {sums:?}"
    );
}

// ---------------------------------------------------------------------------------------
// 4. Counters read mid-run.

/// The readings: 128 bytes per tasklet.
const COUNTERS: u32 = 0x1000;

/// Tasklet 0 sets the performance counter to count instructions; every tasklet, `ROUNDS`
/// times, computes and reads the counter and the cycle counter, keeping each reading in its
/// results (two words per round).
fn counters() -> P {
    let mut p = P::new();
    p.i(addi(S5, TP, 1));
    let not0 = hole(&mut p); // bne tp, zero
    p.i(addi(A0, ZERO, 2));
    p.sys(8);
    fill(&mut p, not0, |o| bne(TP, ZERO, o));
    p.all(&li(S8, COUNTERS));
    p.i(slli(T0, TP, 7));
    p.i(add(S8, S8, T0));
    p.i(addi(S7, ZERO, 0));
    let top = p.here();
    compute(&mut p, 5);
    p.sys(9);
    p.i(sw(A0, S8, 0));
    p.sys(13);
    p.i(sw(A0, S8, 4));
    p.i(addi(S8, S8, 8));
    p.i(addi(S7, S7, 1));
    p.i(addi(T0, ZERO, ROUNDS));
    p.i(bne(S7, T0, top - p.here()));
    p.exit();
    p
}

#[test]
fn counters_read_between_batches() {
    let runs = same_everywhere(&counters().program_fused(), &COUNTS, &set_nr);
    for (d, &nr) in runs.iter().zip(&COUNTS) {
        for t in 0..nr {
            let at = COUNTERS + 128 * t;
            let (mut instr, mut cycles) = (0, 0);
            for k in 0..ROUNDS as u32 {
                let (i, c) = (d.w32(at + 8 * k), d.w32(at + 8 * k + 4));
                assert!(
                    i > instr && c > cycles,
                    "{nr} tasklets, tasklet {t}, round {k}: {i} {c} after {instr} {cycles}"
                );
                (instr, cycles) = (i, c);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// 5. Atomic bits taken and released inside batches.

/// Shared counter under the shared lock.
const SHARED_COUNT: i32 = 0x140;
/// The shared lock's bit, the shared try-lock's bit, a bit never acquired, and the first of
/// the tasklets' own bits (one each).
const LOCK_BIT: i32 = 2;
const TRY_BIT: i32 = 3;
const CLEAR_BIT: i32 = 60;
const OWN_BIT: i32 = 10;

/// Each tasklet, `ROUNDS` times: computes; takes its own bit, adds 1 to its own count and
/// releases it (never contended: a batch may do all three); tries the shared try-lock once
/// and, if it got it, computes holding it and counts a success, else counts a failure;
/// takes the shared lock, adds 1 to the shared count with some computing in between and
/// releases it; releases a bit nobody holds and keeps the result (0). Counts in its
/// results: own count, successes, failures, the last release's result.
fn atomic_bits() -> P {
    let mut p = P::new();
    p.i(addi(S5, TP, 1));
    p.i(addi(S0, TP, OWN_BIT));
    p.i(addi(S1, ZERO, LOCK_BIT));
    p.i(addi(S2, ZERO, TRY_BIT));
    p.i(addi(S3, ZERO, CLEAR_BIT));
    p.i(slli(S8, TP, 4));
    p.i(addi(S8, S8, RES));
    p.i(addi(S7, ZERO, 0));
    let top = p.here();
    compute(&mut p, 8);
    lock(&mut p, S0, 14);
    p.i(lw(T0, S8, 0));
    p.i(addi(T0, T0, 1));
    p.i(sw(T0, S8, 0));
    unlock(&mut p, S0);
    // One attempt at the try-lock (`ATOMIC_ACQUIRE`, not in a loop).
    p.i(addi(A0, S2, 0));
    p.sys(4);
    let missed = hole(&mut p); // beq a0, zero
    compute(&mut p, 3);
    p.i(lw(T0, S8, 4));
    p.i(addi(T0, T0, 1));
    p.i(sw(T0, S8, 4));
    unlock(&mut p, S2);
    let joined = hole(&mut p); // j
    fill(&mut p, missed, |o| beq(A0, ZERO, o));
    p.i(lw(T0, S8, 8));
    p.i(addi(T0, T0, 1));
    p.i(sw(T0, S8, 8));
    fill(&mut p, joined, jal_zero);
    lock(&mut p, S1, 14);
    p.i(lw(T0, ZERO, SHARED_COUNT));
    compute(&mut p, 2);
    p.i(addi(T0, T0, 1));
    p.i(sw(T0, ZERO, SHARED_COUNT));
    unlock(&mut p, S1);
    unlock(&mut p, S3);
    p.i(sw(A0, S8, 12));
    p.i(addi(S7, S7, 1));
    p.i(addi(T0, ZERO, ROUNDS));
    p.i(bne(S7, T0, top - p.here()));
    p.exit();
    p
}

/// `j` by `o` bytes.
fn jal_zero(o: i32) -> u32 {
    jal(ZERO, o)
}

#[test]
fn atomic_bits_taken_and_released_in_batches() {
    let runs = same_everywhere(&atomic_bits().program_fused(), &COUNTS, &|d, nr| {
        set_nr(d, nr);
        // (A result word the last release overwrites with 0.)
        for t in 0..nr {
            d.set_w32(RES as u32 + 16 * t + 12, 0xdead);
        }
    });
    let rounds = ROUNDS as u32;
    for (d, &nr) in runs.iter().zip(&COUNTS) {
        assert_eq!(d.w32(SHARED_COUNT as u32), nr * rounds, "{nr} tasklets");
        let mut successes = 0;
        for t in 0..nr {
            let at = RES as u32 + 16 * t;
            assert_eq!(d.w32(at), rounds, "{nr} tasklets, tasklet {t}");
            assert_eq!(
                d.w32(at + 4) + d.w32(at + 8),
                rounds,
                "{nr} tasklets, tasklet {t}"
            );
            assert_eq!(d.w32(at + 12), 0, "{nr} tasklets, tasklet {t}");
            successes += d.w32(at + 4);
        }
        assert!(successes > 0, "{nr} tasklets: nobody got the try-lock");
        if nr == 1 {
            assert_eq!(successes, rounds);
        }
    }
}
