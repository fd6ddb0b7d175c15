//! Shortcuts and WRAM: programs whose tasklets load and store shared WRAM words while other
//! tasklets issue passive slots (paying an arithmetic call's slots, spinning on a held lock),
//! which is when the interpreter may execute a tasklet's next slots ahead of their issue. A
//! load or store executed ahead must give exactly what it gives at its issue: another
//! tasklet's access in between must be seen (a load or store, also one on the generic path
//! such as `lw sp`; a DMA: `mram_read` writes WRAM, `mram_write` reads it; `printf`, which
//! reads its arguments from WRAM), a store executed ahead must not be seen before its issue,
//! nor survive a run that ends before it issues (a fault, HALT, a cycle limit, a stop), and
//! an access that faults or is not a plain WRAM access (MRAM, misaligned, out of range, a word
//! pair at an address that is not 8-aligned) must behave as at its issue.
//!
//! Every program runs with the shortcuts and without them (`Program::without_shortcuts`) on
//! several tasklet counts and with cycle limits cutting it at many points; outcomes and both
//! memories must be identical. Each test also checks the program's own result against a value
//! computed here, and that the races it is about really happen (results that depend on the
//! interleaving do vary). The loop bodies mix word, half, byte and fused word-pair accesses
//! with register operations in several orders, so that runs of slots that may execute ahead
//! start with each kind.

mod common;

use common::*;
use openpim_engine::{map, run_stoppable, DpuMemory, Fault, RunOutcome};
use openpim_isa::{asm::*, reg::*};

// ---------------------------------------------------------------------------------------
// Comparing runs with and without shortcuts.

fn no_init(_: &mut Dpu) {}

/// One complete run (checked by `same_init`).
struct Run {
    nr: u32,
    out: RunOutcome,
    d: Dpu,
}

/// `same_init` on every tasklet count of `nrs` (the runs must end without a fault), then, for
/// every count of `cut`, cycle limits cutting the run at about 100 points; returns the
/// complete runs for the test's own checks.
fn same_everywhere(p: &P, nrs: &[u32], cut: &[u32], init: &dyn Fn(&mut Dpu)) -> Vec<Run> {
    let program = p.program_fused();
    let tm = timing();
    let mut runs = Vec::new();
    for &nr in nrs {
        let (out, d) = same_init(&program, nr, &tm, init);
        assert_eq!(out.fault, None, "{nr} tasklets: {:?}", out.fault);
        runs.push(Run { nr, out, d });
    }
    for &nr in cut {
        let run = runs
            .iter()
            .find(|r| r.nr == nr)
            .expect("cut a count of nrs");
        same_cut(&program, nr, init, spread(run.out.cycles));
    }
    runs
}

// ---------------------------------------------------------------------------------------
// Program pieces.

/// `a0 = x * y` with the MUL32 call (its operand set-up issues with the `ecall`; the caller
/// then owes the call's slots, which are passive).
fn mul(p: &mut P, x: u8, y: u8) {
    p.i(addi(A0, x, 0));
    p.i(addi(A1, y, 0));
    p.sys(20);
}

/// The word at `addr` of a run's WRAM.
fn w32(d: &Dpu, addr: i32) -> u32 {
    d.w32(addr as u32)
}

// ---------------------------------------------------------------------------------------
// 1. A flag handshake without locks.

const FLAG: i32 = 0x100;
const DATA: i32 = 0x108;
/// Results: 16 bytes per tasklet.
const RES: i32 = 0x400;

/// Tasklet 0 computes (MUL32 calls in a loop), stores its result in the two words at `DATA`,
/// then 1 at `FLAG`. The others spin until they load a non-zero flag, with a MUL32 call (or,
/// with `local`, register work only) in the spin loop, then store the pair they load from
/// `DATA` and how many times they spun.
fn flag_handshake(local: bool) -> P {
    let mut p = P::new();
    let to_waiter = hole(&mut p);
    p.i(addi(S1, ZERO, 10));
    p.all(&li(S2, 0x1357));
    let work = p.here();
    mul(&mut p, S2, S1);
    p.i(add(S2, S2, A0));
    p.i(xori(S2, S2, 0x5a));
    p.i(slli(T0, S2, 3));
    p.i(add(S2, S2, T0));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, work - p.here()));
    p.i(xori(T2, S2, 0x11));
    p.i(sw(S2, ZERO, DATA));
    p.i(addi(T1, ZERO, 1));
    p.i(sw(T0, ZERO, DATA + 4));
    p.i(sw(T1, ZERO, FLAG));
    p.i(add(T2, T2, T1));
    p.i(slli(T2, T2, 2));
    p.exit();
    fill(&mut p, to_waiter, |o| bne(TP, ZERO, o));
    p.i(addi(S4, ZERO, 0));
    // MUL32 of (tp + 1)^2 takes 4 to 8 slots, depending on the tasklet.
    p.i(addi(S5, TP, 1));
    let wait = p.here();
    if local {
        // tp % 4 + 1 rounds of register work.
        p.i(andi(T4, TP, 3));
        p.i(addi(T4, T4, 1));
        let inner = p.here();
        p.i(xori(S6, S6, 0x33));
        p.i(add(S6, S6, S5));
        p.i(slli(T3, S6, 1));
        p.i(xor(S6, S6, T3));
        p.i(addi(T4, T4, -1));
        p.i(bne(T4, ZERO, inner - p.here()));
    } else {
        mul(&mut p, S5, S5);
        p.i(add(S6, S6, A0));
        p.i(xori(S6, S6, 0x33));
    }
    p.i(addi(S4, S4, 1));
    p.i(lw(T0, ZERO, FLAG));
    p.i(beq(T0, ZERO, wait - p.here()));
    p.i(lw(T1, ZERO, DATA));
    p.i(lw(T2, ZERO, DATA + 4));
    p.i(slli(T3, TP, 4));
    p.i(sw(T1, T3, RES));
    p.i(sw(T2, T3, RES + 4));
    p.i(sw(S4, T3, RES + 8));
    p.exit();
    p
}

/// The pair tasklet 0 of `flag_handshake` stores at `DATA`.
fn handshake_data() -> (u32, u32) {
    let (mut s2, mut t0) = (0x1357u32, 0u32);
    for s1 in (1..=10u32).rev() {
        s2 = s2.wrapping_add(s2.wrapping_mul(s1)) ^ 0x5a;
        t0 = s2 << 3;
        s2 = s2.wrapping_add(t0);
    }
    (s2, t0)
}

#[test]
fn flag_handshake_without_locks() {
    let want = handshake_data();
    for local in [false, true] {
        let nrs = [1, 2, 3, 11, 12, 16, 24];
        let runs = same_everywhere(&flag_handshake(local), &nrs, &[3, 16], &no_init);
        let mut spins = Vec::new();
        for r in &runs {
            assert_eq!((w32(&r.d, DATA), w32(&r.d, DATA + 4)), want);
            assert_eq!(w32(&r.d, FLAG), 1);
            for t in 1..r.nr as i32 {
                let at = RES + 16 * t;
                let seen = (w32(&r.d, at), w32(&r.d, at + 4));
                assert_eq!(seen, want, "local {local}, {} tasklets, tasklet {t}", r.nr);
                let n = w32(&r.d, at + 8);
                // Every waiter spun while tasklet 0 worked (its loop is 10 MUL32 calls long).
                assert!(n > 1, "local {local}, {} tasklets, tasklet {t}: {n}", r.nr);
                spins.push(n);
            }
        }
        // The number of spins depends on the interleaving.
        spins.sort_unstable();
        spins.dedup();
        println!("local {local}: spins {spins:?}");
        assert!(spins.len() > 3, "local {local}: spins {spins:?}");
    }
}

/// Tasklet k waits for the flag byte of tasklet k - 1 (`lbu` in a spin loop with a MUL32
/// call), loads the word pair k - 1 stored, computes its own pair from it and stores it, then
/// sets its own flag byte (neighbouring flags share a word). Tasklet 0 starts from constants.
fn flag_chain() -> P {
    let mut p = P::new();
    p.i(addi(S5, TP, 3));
    p.i(addi(S4, ZERO, 0));
    p.i(addi(S6, ZERO, 0));
    let to_first = hole(&mut p);
    let wait = p.here();
    mul(&mut p, S5, S5);
    p.i(add(S6, S6, A0));
    p.i(addi(S4, S4, 1));
    p.i(lbu(T0, TP, 0x17f)); // flag byte of tasklet k - 1 (0x180 + k - 1)
    p.i(beq(T0, ZERO, wait - p.here()));
    p.i(slli(T1, TP, 3));
    p.i(lw(T2, T1, 0x1f8)); // pair of tasklet k - 1 (0x200 + 8 (k - 1))
    p.i(lw(T3, T1, 0x1fc));
    let to_compute = hole(&mut p);
    fill(&mut p, to_first, |o| beq(TP, ZERO, o));
    p.all(&li(T2, 0x1234));
    p.i(addi(T3, ZERO, 0x77));
    fill(&mut p, to_compute, |o| jal(ZERO, o));
    mul(&mut p, T2, S5);
    p.i(add(T2, A0, T3));
    p.i(xori(T3, T3, 0x2d));
    p.i(add(T3, T3, TP));
    p.i(slli(T1, TP, 3));
    p.i(sw(T2, T1, 0x200));
    p.i(sw(T3, T1, 0x204));
    p.i(addi(T0, ZERO, 1));
    p.i(sb(T0, TP, 0x180));
    p.i(sw(S4, T1, RES));
    p.exit();
    p
}

#[test]
fn flag_chain_through_bytes() {
    let nrs = [1, 2, 3, 11, 12, 16, 24];
    let runs = same_everywhere(&flag_chain(), &nrs, &[3, 12, 24], &no_init);
    let mut want = Vec::new();
    let (mut x, mut y) = (0x1234u32, 0x77u32);
    for k in 0..24u32 {
        x = x.wrapping_mul(k + 3).wrapping_add(y);
        y = (y ^ 0x2d).wrapping_add(k);
        want.push((x, y));
    }
    for r in &runs {
        for k in 0..r.nr as i32 {
            let got = (w32(&r.d, 0x200 + 8 * k), w32(&r.d, 0x204 + 8 * k));
            assert_eq!(got, want[k as usize], "{} tasklets, tasklet {k}", r.nr);
            assert_eq!(r.d.wram[0x180 + k as usize], 1);
        }
        if r.nr >= 3 {
            // The later in the chain, the longer a tasklet waits.
            let spins: Vec<u32> = (0..r.nr as i32).map(|k| w32(&r.d, RES + 8 * k)).collect();
            assert!(
                spins[r.nr as usize - 1] > spins[1] && spins[1] > 1,
                "{} tasklets: {spins:?}",
                r.nr
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// 2. Shared words updated without a lock, and under a lock.

const COUNTER: i32 = 0x100;
const ITER: i32 = 10;

/// `ITER` times: a MUL32 call, then racy read-modify-writes of shared words without a lock:
/// `COUNTER += tp + 1` (word), a word pair at 0x108 (`+= 1`, `+= a0 ^ 0x11`), a half at 0x110
/// and a byte at 0x113 (`+= 1`); and a store of the iteration count to `COUNTER + 4`.
fn racy_updates() -> P {
    let mut p = P::new();
    p.i(addi(S1, ZERO, ITER));
    p.i(addi(S3, TP, 1));
    p.i(slli(S5, S3, 8));
    p.i(add(S5, S5, S3));
    p.i(slli(T0, S3, 4));
    p.i(add(S5, S5, T0)); // (tp + 1) * 0x111
    let top = p.here();
    p.i(add(S7, S5, S1));
    mul(&mut p, S5, S7);
    p.i(lw(T0, ZERO, COUNTER));
    p.i(add(T0, T0, S3));
    p.i(xori(T4, A0, 0x11));
    p.i(sw(T0, ZERO, COUNTER));
    p.i(sw(S1, ZERO, COUNTER + 4)); // only stored (and printed)
    p.i(lw(T1, ZERO, 0x108));
    p.i(lw(T2, ZERO, 0x10c));
    p.i(addi(T1, T1, 1));
    p.i(add(T2, T2, T4));
    p.i(sw(T1, ZERO, 0x108));
    p.i(sw(T2, ZERO, 0x10c));
    p.i(lhu(T5, ZERO, 0x110));
    p.i(addi(T5, T5, 1));
    p.i(sh_(T5, ZERO, 0x110));
    p.i(lbu(T6, ZERO, 0x113));
    p.i(addi(T6, T6, 1));
    p.i(sb(T6, ZERO, 0x113));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn racy_read_modify_write_without_lock() {
    let nrs = [1, 2, 3, 11, 12, 16, 24];
    let runs = same_everywhere(&racy_updates(), &nrs, &[2, 12, 24], &no_init);
    let mut lost = Vec::new();
    for r in &runs {
        let n = r.nr;
        let race_free = ITER as u32 * n * (n + 1) / 2;
        let c = w32(&r.d, COUNTER);
        let pair = w32(&r.d, 0x108);
        let half = u32::from(u16::from_le_bytes([r.d.wram[0x110], r.d.wram[0x111]]));
        let byte = u32::from(r.d.wram[0x113]);
        if n == 1 {
            assert_eq!((c, pair, half, byte), (race_free, 10, 10, 10));
        }
        for (what, v, max) in [
            ("counter", c, race_free),
            ("pair", pair, ITER as u32 * n),
            ("half", half, ITER as u32 * n),
            ("byte", byte, ITER as u32 * n),
        ] {
            assert!(v > 0 && v <= max, "{n} tasklets: {what} {v}, at most {max}");
        }
        assert_eq!(r.d.wram[0x112], 0, "the byte between the half and the byte");
        lost.push((n, race_free - c));
    }
    // The updates do race: many tasklets lose some (which ones depends on the interleaving).
    assert!(
        lost.iter().filter(|&&(n, l)| n > 2 && l > 0).count() >= 3,
        "{lost:?}"
    );
}

/// Tasklet 0 prints the words at 0x100 and 0x104 with `printf` (which reads its arguments
/// from WRAM), 3 register ops apart, `4 * ITER` times. The others, `ITER` times: a MUL32 call,
/// then store `100 tp + s1` to 0x100 and the product to 0x104 (stores only, no loads).
fn printf_program() -> P {
    let mut p = P::new();
    let to_others = hole(&mut p);
    p.i(addi(S1, ZERO, 4 * ITER));
    let top = p.here();
    p.i(xori(T3, S1, 0x3c));
    p.i(add(T4, T3, S1));
    p.i(slli(T4, T4, 2));
    p.i(addi(A0, ZERO, 0x600)); // "c=%u p=%u\n"
    p.i(addi(A1, ZERO, 0x100)); // va_list: the words at 0x100 and 0x104
    p.sys(10);
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    fill(&mut p, to_others, |o| bne(TP, ZERO, o));
    p.i(addi(S1, ZERO, ITER));
    p.i(addi(T0, ZERO, 100));
    mul(&mut p, TP, T0);
    p.i(addi(S3, A0, 0)); // 100 tp
    p.i(slli(S5, TP, 6));
    p.i(addi(S5, S5, 0x1f3));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(add(T0, S3, S1));
    p.i(xori(T1, A0, 0x11));
    p.i(sw(T0, ZERO, 0x100));
    p.i(addi(T2, T1, 1));
    p.i(sw(A0, ZERO, 0x104));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn printf_reads_words_other_tasklets_store() {
    let init = |d: &mut Dpu| d.put_str(0x600, "c=%u p=%u\n");
    let runs = same_everywhere(&printf_program(), &[1, 2, 3, 12, 16, 24], &[3, 16], &init);
    let mut distinct = Vec::new();
    for r in &runs {
        let log = String::from_utf8(r.out.log.clone()).unwrap();
        let lines: Vec<(u32, u32)> = log
            .lines()
            .map(|l| {
                let v: Vec<u32> = l
                    .split(' ')
                    .filter_map(|f| f.split('=').nth(1)?.parse().ok())
                    .collect();
                assert!(l.starts_with("c=") && v.len() == 2, "line {l:?}");
                (v[0], v[1])
            })
            .collect();
        assert_eq!(lines.len(), 4 * ITER as usize, "{log}");
        // Each value printed is 0 (nothing stored yet) or one a tasklet stored.
        for &(c, prod) in &lines {
            let (t, s1) = (c / 100, c % 100);
            assert!(
                c == 0 || (t >= 1 && t < r.nr && (1..=ITER as u32).contains(&s1)),
                "{} tasklets: {c}",
                r.nr
            );
            let products =
                (1..r.nr).flat_map(|t| (1..=ITER as u32).map(move |i| (64 * t + 0x1f3) * i));
            assert!(prod == 0 || products.clone().any(|v| v == prod), "{prod}");
        }
        let mut d: Vec<u32> = lines.iter().map(|l| l.0).collect();
        d.sort_unstable();
        d.dedup();
        distinct.push(d.len());
    }
    // The printer sees the words change while the others store them.
    assert!(
        distinct.iter().filter(|&&n| n > 3).count() >= 3,
        "{distinct:?}"
    );
}

/// A lock taken around a read-modify-write of a counter word and a word pair (exact results),
/// with a racy word written inside the lock and another outside, local work and MUL32 calls.
fn locked_updates(call: u32) -> P {
    let mut p = P::new();
    p.i(addi(S0, ZERO, 9)); // the lock's atomic bit
    p.i(addi(S1, ZERO, 8));
    p.i(addi(S5, TP, 0x2f1));
    let top = p.here();
    mul(&mut p, S5, S5);
    p.i(xori(T4, A0, 0x5));
    lock(&mut p, S0, call);
    p.i(lw(T0, ZERO, 0x140));
    p.i(addi(T0, T0, 1));
    p.i(lw(T1, ZERO, 0x148));
    p.i(lw(T2, ZERO, 0x14c));
    p.i(sw(T0, ZERO, 0x140));
    p.i(add(T1, T1, TP));
    p.i(addi(T2, T2, 3));
    p.i(sw(T1, ZERO, 0x148));
    p.i(sw(T2, ZERO, 0x14c));
    p.i(sw(TP, ZERO, 0x150)); // the last holder
    p.i(slli(T3, T0, 1));
    p.i(xor(T3, T3, T4));
    p.i(sb(T3, ZERO, 0x154));
    unlock(&mut p, S0);
    // Racy, outside the lock.
    p.i(lw(T5, ZERO, 0x158));
    p.i(add(T5, T5, T4));
    p.i(sw(T5, ZERO, 0x158));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn lock_protected_and_racy_words() {
    for call in [14, 4] {
        let nrs = [1, 2, 3, 11, 16, 24];
        let runs = same_everywhere(&locked_updates(call), &nrs, &[3, 16], &no_init);
        for r in &runs {
            let n = r.nr;
            assert_eq!(w32(&r.d, 0x140), 8 * n, "call {call}, {n} tasklets");
            assert_eq!(w32(&r.d, 0x148), 8 * (0..n).sum::<u32>());
            assert_eq!(w32(&r.d, 0x14c), 24 * n);
            assert!(w32(&r.d, 0x150) < n);
        }
    }
}

// ---------------------------------------------------------------------------------------
// 3. Bytes and halves of words that others load whole.

/// Tasklet 0 stores bytes and halves into the pair at 0x200 (12 iterations); the others load
/// the word at 0x200, the pair, a half and a byte of it (24 iterations), fold them into a
/// checksum and count how often the word changed between their loads. Every tasklet also
/// stores its own byte of the words at 0x300 (`sb` at 0x300 + tp), which the others load whole.
fn mixed_sizes() -> P {
    let mut p = P::new();
    p.all(&li(S5, 0x4321));
    p.i(addi(S1, ZERO, 12));
    let to_reader = hole(&mut p);
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(sb(S1, ZERO, 0x201));
    p.i(sh_(A0, ZERO, 0x206));
    p.i(addi(T0, S1, 7));
    p.i(sb(T0, ZERO, 0x200));
    p.i(sh_(S1, ZERO, 0x202));
    p.i(srli(T1, A0, 8));
    p.i(sb(T1, ZERO, 0x207));
    p.i(sb(S1, TP, 0x300));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    fill(&mut p, to_reader, |o| bne(TP, ZERO, o));
    p.i(addi(S1, ZERO, 24));
    p.i(slli(T0, TP, 5));
    p.i(add(S5, S5, T0));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(lw(T0, ZERO, 0x200));
    p.i(lhu(T3, ZERO, 0x206));
    p.i(lb(T4, ZERO, 0x201));
    p.i(lw(T5, ZERO, 0x300));
    p.i(lw(T1, ZERO, 0x200));
    p.i(lw(T2, ZERO, 0x204));
    p.i(add(S6, S6, T0));
    p.i(xor(S6, S6, T2));
    p.i(add(S6, S6, T3));
    p.i(add(S6, S6, T4));
    p.i(add(S6, S6, T5));
    p.i(sub(T6, T1, S7));
    p.i(sltu(T6, ZERO, T6));
    p.i(add(S8, S8, T6));
    p.i(addi(S7, T1, 0));
    p.i(sb(S1, TP, 0x300));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.i(slli(T0, TP, 4));
    p.i(sw(S6, T0, RES));
    p.i(sw(S8, T0, RES + 4));
    p.exit();
    p
}

#[test]
fn bytes_and_halves_of_shared_words() {
    let nrs = [1, 2, 3, 11, 12, 16, 24];
    let runs = same_everywhere(&mixed_sizes(), &nrs, &[2, 12, 24], &no_init);
    let mut changes = Vec::new();
    for r in &runs {
        // Tasklet 0's last iteration (s1 = 1, a0 = 0x4321): bytes 8, 1, half 1, half 0x4321
        // whose high byte is then stored again.
        assert_eq!(w32(&r.d, 0x200), 0x0001_0108, "{} tasklets", r.nr);
        assert_eq!(w32(&r.d, 0x204), 0x4321_0000);
        for t in 0..r.nr as usize {
            assert_eq!(r.d.wram[0x300 + t], 1, "{} tasklets, byte {t}", r.nr);
        }
        for t in 1..r.nr as i32 {
            changes.push(w32(&r.d, RES + 16 * t + 4));
        }
    }
    // Readers saw the word change several times while tasklet 0 wrote it.
    assert!(changes.iter().any(|&c| c >= 4), "{changes:?}");
}

// ---------------------------------------------------------------------------------------
// 4. DMA against loads and stores.

const BUF_R: u32 = 0x1000;
const BUF_W: u32 = 0x2000;
const BUF_X: u32 = 0x3000;
const DMA_ITER: i32 = 16;
/// MRAM offset of the snapshots of `BUF_W` (2 KiB per tasklet) and of `BUF_X` (1 KiB each).
const SNAP_W: u32 = 0x8_0000;
const SNAP_X: u32 = 0xC_0000;

/// The MRAM word at offset `o` (`o < 64 KiB`): its 256-byte chunk number in the high half,
/// its word index within the chunk in the low half.
fn pattern(o: u32) -> u32 {
    ((o >> 8) << 16) | ((o & 0xff) >> 2)
}

fn dma_init(d: &mut Dpu) {
    for o in (0..0x1_0000u32).step_by(4) {
        d.mram[o as usize..o as usize + 4].copy_from_slice(&pattern(o).to_le_bytes());
    }
    // BUF_R starts as chunk 0.
    for j in 0..64 {
        d.set_w32(BUF_R + 4 * j, pattern(4 * j));
    }
}

/// Roles by `tp % 3`. A (0): loads word j of `BUF_R` (j cycling 0..63) and its first pair,
/// checks each word's low half is its index (error bits), sums the chunk numbers seen and
/// counts their changes; stores `(s1 << 8) | j % 16` into word j % 16 of `BUF_W` and a pair
/// into its 64 bytes of `BUF_X`. B (1): `mram_read`s chunk `s1 % 16` into `BUF_R`, and every
/// fourth iteration 2 KiB into `BUF_X` (size 0 and a WRAM address 4 past `BUF_X`: the DMA
/// moves 2,048 bytes to `BUF_X`, as the DPU's length field and alignment make it). C (2):
/// `mram_write`s `BUF_W` to a new 64-byte MRAM snapshot each iteration, and every fourth
/// iteration the first KiB of `BUF_X`.
fn dma_against_accesses() -> P {
    let mut p = P::new();
    p.i(addi(S1, ZERO, DMA_ITER));
    p.i(slli(S5, TP, 6));
    p.i(addi(S5, S5, 0x1a3));
    // Role: tp % 3 (DIVU32: a0 = tp / 3, a1 = tp % 3).
    p.i(addi(A0, TP, 0));
    p.i(addi(A1, ZERO, 3));
    p.sys(21);
    p.all(&li(S9, BUF_R));
    p.all(&li(S2, BUF_W));
    p.all(&li(S3, BUF_X));
    p.all(&li(S4, map::MRAM_BASE));
    p.i(addi(T0, ZERO, 1));
    let to_b = hole(&mut p); // beq a1, t0 (1)
    p.i(addi(T0, ZERO, 2));
    let to_c = hole(&mut p); // beq a1, t0 (2)

    // A: its 64 bytes of BUF_X (tp * 64 mod 2 KiB).
    p.i(slli(T0, TP, 6));
    p.i(andi(T0, T0, 0x7c0));
    p.i(add(S3, S3, T0));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(slli(T0, S7, 2));
    p.i(add(T0, T0, S9));
    p.i(lw(T1, T0, 0));
    p.i(slli(T2, T1, 16));
    p.i(srli(T2, T2, 16));
    p.i(xor(T2, T2, S7));
    p.i(or(S10, S10, T2));
    p.i(srli(T3, T1, 16));
    p.i(add(S11, S11, T3));
    p.i(sub(T4, T3, S6));
    p.i(sltu(T4, ZERO, T4));
    p.i(add(S8, S8, T4));
    p.i(addi(S6, T3, 0));
    p.i(lw(T5, S9, 0));
    p.i(lw(T6, S9, 4));
    p.i(slli(T5, T5, 16));
    p.i(or(S10, S10, T5));
    p.i(xori(T6, T6, 1));
    p.i(slli(T6, T6, 16));
    p.i(or(S10, S10, T6));
    p.i(andi(T2, S7, 15));
    p.i(slli(T0, T2, 2));
    p.i(add(T0, T0, S2));
    p.i(slli(T1, S1, 8));
    p.i(or(T1, T1, T2));
    p.i(sw(T1, T0, 0));
    p.i(sw(S1, S3, 0));
    p.i(sw(T1, S3, 4));
    p.i(addi(S7, S7, 1));
    p.i(andi(S7, S7, 63));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.i(slli(T0, TP, 4));
    p.i(sw(S10, T0, RES));
    p.i(sw(S11, T0, RES + 4));
    p.i(sw(S8, T0, RES + 8));
    p.exit();

    // B
    fill(&mut p, to_b, |o| beq(A1, T0, o));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(andi(T0, S1, 15));
    p.i(slli(T0, T0, 8));
    p.i(add(A0, T0, S4));
    p.i(addi(A1, S9, 0));
    p.i(addi(A2, ZERO, 256));
    p.sys(2);
    p.i(xori(S6, S6, 0x5));
    p.i(andi(T1, S1, 3));
    let skip = hole(&mut p);
    p.all(&li(T0, 0x8000));
    p.i(add(A0, S4, T0));
    p.i(addi(A1, S3, 4));
    p.i(addi(A2, ZERO, 0));
    p.sys(2);
    fill(&mut p, skip, |o| bne(T1, ZERO, o));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();

    // C
    fill(&mut p, to_c, |o| beq(A1, T0, o));
    p.all(&li(T0, SNAP_W));
    p.i(add(S10, S4, T0));
    p.i(slli(T0, TP, 11));
    p.i(add(S10, S10, T0));
    p.all(&li(T0, SNAP_X));
    p.i(add(S11, S4, T0));
    p.i(slli(T0, TP, 10));
    p.i(add(S11, S11, T0));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(slli(T0, S1, 6));
    p.i(add(A1, S10, T0));
    p.i(addi(A0, S2, 0));
    p.i(addi(A2, ZERO, 64));
    p.sys(3);
    p.i(andi(T1, S1, 3));
    let skip = hole(&mut p);
    p.i(addi(A0, S3, 0));
    p.i(addi(A1, S11, 0));
    p.i(addi(A2, ZERO, 1024));
    p.sys(3);
    fill(&mut p, skip, |o| bne(T1, ZERO, o));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn dma_reads_and_writes_against_loads_and_stores() {
    let nrs = [1, 2, 3, 5, 11, 12, 16, 24];
    let runs = same_everywhere(&dma_against_accesses(), &nrs, &[3, 12, 24], &dma_init);
    let mut changes = 0;
    let mut written = 0;
    for r in &runs {
        for t in 0..r.nr {
            let at = RES + 16 * t as i32;
            match t % 3 {
                0 => {
                    // Every word A loaded was a whole chunk word at its place.
                    assert_eq!(w32(&r.d, at), 0, "{} tasklets, tasklet {t}", r.nr);
                    changes += w32(&r.d, at + 8);
                }
                2 => {
                    for s1 in 1..=DMA_ITER as u32 {
                        let snap = (SNAP_W + 2048 * t + 64 * s1) as usize;
                        for j in 0..16u32 {
                            let o = snap + 4 * j as usize;
                            let w = u32::from_le_bytes(r.d.mram[o..o + 4].try_into().unwrap());
                            assert!(
                                w == 0 || (w & 0xff == j && (1..=16).contains(&(w >> 8))),
                                "{} tasklets, tasklet {t}, snapshot {s1}, word {j}: {w:#x}",
                                r.nr
                            );
                            written += u32::from(w != 0);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // A saw B's DMAs change BUF_R, and C's snapshots caught A's stores.
    assert!(changes > 10 && written > 100, "{changes} {written}");
}

// ---------------------------------------------------------------------------------------
// 5. Runs that end while tasklets have loads and stores not yet issued.

/// How the finishing tasklet ends the run.
#[derive(Clone, Copy, Debug)]
enum Finish {
    DivisionByZero,
    MisalignedLoad,
    MisalignedStore,
    OutOfRangeLoad,
    OutOfRangeStore,
    StackOverflow,
    Halt,
}

/// If `tp == f` and `s1 == k`: the `finish` action (`base`: a register holding a WRAM
/// address of the tasklet's own 8-aligned region).
fn finisher(p: &mut P, f: i32, k: i32, finish: Finish, base: u8) {
    p.i(addi(T1, ZERO, f));
    let not_f = hole(p);
    p.i(addi(T1, ZERO, k));
    let not_k = hole(p);
    match finish {
        Finish::DivisionByZero => {
            p.i(addi(A1, ZERO, 0));
            p.sys(21);
        }
        Finish::MisalignedLoad => {
            p.i(lw(T2, base, 2));
        }
        Finish::MisalignedStore => {
            p.i(sh_(T2, base, 5));
        }
        Finish::OutOfRangeLoad => {
            p.all(&li(T2, map::WRAM_SIZE));
            p.i(lw(T2, T2, 4));
        }
        Finish::OutOfRangeStore => {
            p.all(&li(T2, map::WRAM_SIZE));
            p.i(sw(T2, T2, 0));
        }
        Finish::StackOverflow => {
            p.i(addi(SP, SP, -2048));
        }
        Finish::Halt => {
            p.sys(1);
        }
    }
    fill(p, not_f, |o| bne(TP, T1, o));
    fill(p, not_k, |o| bne(S1, T1, o));
}

/// `n` iterations of stores (words, a pair, a half, a byte) into the tasklet's own 64 bytes at
/// 0x1000 + 64 tp and into shared words, between MUL32 calls; tasklet `f` (if any) ends the
/// run at iteration `k` (counting down).
fn store_heavy(n: i32, end: Option<(i32, i32, Finish)>) -> P {
    let mut p = P::new();
    p.i(addi(S1, ZERO, n));
    p.i(slli(S5, TP, 7));
    p.i(addi(S5, S5, 0x2b3));
    p.i(slli(S2, TP, 6));
    p.all(&li(T0, 0x1000));
    p.i(add(S2, S2, T0));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(addi(T5, S1, 0x10));
    p.i(sw(T5, S2, 36));
    p.i(xori(T5, T5, 3));
    p.i(sb(A0, S2, 11));
    p.i(sw(A0, ZERO, 0x100));
    p.i(sh_(S1, S2, 8));
    p.i(sb(T5, ZERO, 0x101)); // into the shared word just stored
    p.i(sb(S1, TP, 0x180));
    p.i(lw(T0, S2, 16));
    p.i(addi(T0, T0, 1));
    p.i(sw(T0, S2, 16));
    p.i(sw(T0, S2, 20));
    p.i(sw(S1, S2, 0));
    p.i(sw(A0, S2, 4));
    p.i(sw(S1, S2, 24));
    p.i(sw(A0, S2, 28));
    p.i(lw(T3, ZERO, 0x100));
    p.i(sw(T3, S2, 32));
    if let Some((f, k, finish)) = end {
        finisher(&mut p, f, k, finish, S2);
    }
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn store_heavy_run_cut_at_every_cycle() {
    let p = store_heavy(4, None);
    let program = p.program_fused();
    for nr in [3, 12] {
        let (out, d) = same_init(&program, nr, &timing(), &no_init);
        assert_eq!(out.fault, None);
        for t in 0..nr {
            let base = (0x1000 + 64 * t) as i32;
            let s5 = (t << 7) + 0x2b3;
            assert_eq!(w32(&d, base), 1);
            assert_eq!(w32(&d, base + 4), s5);
            assert_eq!(w32(&d, base + 16), 4);
            assert_eq!(w32(&d, base + 28), s5);
        }
        same_cut(&program, nr, &no_init, 1..out.cycles);
    }
    same_everywhere(&store_heavy(12, None), &[1, 2, 11, 16, 24], &[24], &no_init);
}

#[test]
fn run_ends_on_another_tasklets_fault_or_halt() {
    let f = 2;
    for finish in [
        Finish::DivisionByZero,
        Finish::MisalignedLoad,
        Finish::MisalignedStore,
        Finish::OutOfRangeLoad,
        Finish::OutOfRangeStore,
        Finish::StackOverflow,
        Finish::Halt,
    ] {
        for k in [29, 17, 4] {
            let program = store_heavy(30, Some((f, k, finish))).program_fused();
            for nr in [3, 8, 12, 16, 24] {
                let (out, d) = same_init(&program, nr, &timing(), &no_init);
                let what = format!("{finish:?} at {k}, {nr} tasklets: {:?}", out.fault);
                if let Finish::Halt = finish {
                    assert!(out.halted && out.fault.is_none(), "{what}");
                } else {
                    let r = out.fault.as_ref().expect(&what);
                    assert_eq!(r.tasklet, f as u32, "{what}");
                    let ok = match finish {
                        Finish::DivisionByZero => r.fault == Fault::DivisionByZero,
                        Finish::MisalignedLoad => {
                            r.fault
                                == Fault::Misaligned {
                                    addr: 0x1000 + 64 * f as u32 + 2,
                                    size: 4,
                                }
                        }
                        Finish::MisalignedStore => {
                            r.fault
                                == Fault::Misaligned {
                                    addr: 0x1000 + 64 * f as u32 + 5,
                                    size: 2,
                                }
                        }
                        Finish::OutOfRangeLoad | Finish::OutOfRangeStore => {
                            matches!(r.fault, Fault::WramOutOfRange { .. })
                        }
                        Finish::StackOverflow => matches!(r.fault, Fault::StackOverflow { .. }),
                        Finish::Halt => unreachable!(),
                    };
                    assert!(ok, "{what}");
                }
                // The finisher's own counter: it completed 30 - k iterations, and the stores
                // of the one it ends in before the check.
                assert_eq!(w32(&d, 0x1000 + 64 * f + 16), (31 - k) as u32, "{what}");
            }
        }
    }
}

#[test]
fn run_stopped_while_tasklets_store() {
    // A run long enough to be asked whether to stop (every `STOP_CHECK_CYCLES`); it is told to
    // at the second question.
    let program = store_heavy(3000, None).program_fused();
    for nr in [5, 16] {
        let mut runs = Vec::new();
        for p in [program.clone(), program.without_shortcuts()] {
            let mut d = Dpu::new();
            let asked = std::sync::atomic::AtomicU32::new(0);
            let stop = || asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= 1;
            let out = run_stoppable(
                &p,
                &boot(nr),
                DpuMemory {
                    wram: &mut d.wram,
                    mram: &mut d.mram,
                },
                &timing(),
                &stop,
            );
            runs.push((out, d));
        }
        let (a, da) = &runs[0];
        let (b, db) = &runs[1];
        assert_eq!(a, b, "{nr} tasklets");
        assert!(
            matches!(a.fault.as_ref().map(|f| &f.fault), Some(Fault::Stopped)),
            "{:?}",
            a.fault
        );
        assert_eq!(first_difference(&da.wram, &db.wram), None, "{nr} tasklets");
        assert!(da.mram == db.mram);
    }
}

// ---------------------------------------------------------------------------------------
// 6. Loads and stores that are not plain aligned WRAM words.

/// Per tasklet, in its own 64 bytes of WRAM (s2 = 0x1000 + 64 tp) and of MRAM (s3 = MRAM
/// 0x1000 + 64 tp): MRAM words and an 8-aligned MRAM pair (DMAs), a WRAM pair and an MRAM
/// pair at 4-but-not-8-aligned addresses (not fused: two slots, two DMAs), bytes and halves
/// at odd and 2-mod-4 addresses in both; everything loaded back and folded into a checksum
/// stored at 0x400 + 8 tp. Tasklet `f` may end the run at iteration `k`.
fn not_plain(n: i32, end: Option<(i32, i32, Finish)>) -> P {
    let mut p = P::new();
    p.i(addi(S1, ZERO, n));
    p.i(slli(S5, TP, 7));
    p.i(slli(T0, TP, 4));
    p.i(add(S5, S5, T0));
    p.i(addi(S5, S5, 0x2b3)); // tp * 144 + 691
    p.i(slli(S2, TP, 6));
    p.all(&li(T0, 0x1000));
    p.i(add(S2, S2, T0));
    p.all(&li(T0, map::MRAM_BASE));
    p.i(add(S3, S2, T0));
    p.i(addi(S4, S2, 36));
    p.i(addi(S7, S3, 36));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(sw(A0, S3, 0));
    p.i(lw(T0, S3, 0));
    p.i(add(S6, S6, T0));
    p.i(sw(S1, S3, 8));
    p.i(sw(A0, S3, 12));
    p.i(lw(T1, S3, 8));
    p.i(lw(T2, S3, 12));
    p.i(add(S6, S6, T1));
    p.i(xor(S6, S6, T2));
    p.i(sw(S1, S4, 0));
    p.i(sw(A0, S4, 4));
    p.i(lw(T3, S4, 0));
    p.i(lw(T4, S4, 4));
    p.i(add(S6, S6, T3));
    p.i(sub(S6, S6, T4));
    p.i(sw(A0, S7, 0));
    p.i(sw(S1, S7, 4));
    p.i(lw(T5, S7, 0));
    p.i(lw(T6, S7, 4));
    p.i(xor(S6, S6, T5));
    p.i(add(S6, S6, T6));
    p.i(sb(S1, S2, 17));
    p.i(lbu(T0, S2, 17));
    p.i(sh_(A0, S2, 22));
    p.i(lh(T1, S2, 22));
    p.i(add(S6, S6, T0));
    p.i(add(S6, S6, T1));
    p.i(sb(A0, S3, 49));
    p.i(lbu(T2, S3, 49));
    p.i(sh_(S1, S3, 50));
    p.i(lhu(T3, S3, 50));
    p.i(add(S6, S6, T2));
    p.i(xor(S6, S6, T3));
    p.i(srli(T4, S6, 31));
    p.i(slli(S6, S6, 1));
    p.i(or(S6, S6, T4));
    if let Some((f, k, finish)) = end {
        finisher(&mut p, f, k, finish, S2);
    }
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.i(slli(T0, TP, 3));
    p.i(sw(S6, T0, 0x400));
    p.exit();
    p
}

/// The checksum `not_plain(n, _)` computes for tasklet `t`.
fn not_plain_sum(n: u32, t: u32) -> u32 {
    let s5 = t * 144 + 691;
    let mut s6 = 0u32;
    for s1 in (1..=n).rev() {
        let a0 = s5.wrapping_mul(s1);
        s6 = s6.wrapping_add(a0);
        s6 = s6.wrapping_add(s1) ^ a0;
        s6 = s6.wrapping_add(s1).wrapping_sub(a0);
        s6 = (s6 ^ a0).wrapping_add(s1);
        s6 = s6.wrapping_add(s1 & 0xff);
        s6 = s6.wrapping_add(a0 as u16 as i16 as i32 as u32);
        s6 = s6.wrapping_add(a0 & 0xff) ^ (s1 & 0xffff);
        s6 = s6.rotate_left(1);
    }
    s6
}

#[test]
fn mram_misaligned_pairs_bytes_and_halves() {
    let n = 9;
    let p = not_plain(n, None);
    let nrs = [1, 2, 3, 11, 12, 16, 24];
    let runs = same_everywhere(&p, &nrs, &[3, 16], &no_init);
    for r in &runs {
        for t in 0..r.nr {
            let got = w32(&r.d, 0x400 + 8 * t as i32);
            assert_eq!(
                got,
                not_plain_sum(n as u32, t),
                "{} tasklets, tasklet {t}",
                r.nr
            );
        }
        // Per iteration and tasklet, 12 DMAs: 4 MRAM words, bytes and halves, 2 for the
        // 8-aligned MRAM pairs (one each), 4 for those at 4-mod-8 addresses (two each).
        assert_eq!(r.out.stats.dma_requests, 12 * n as u64 * u64::from(r.nr));
    }
    // The pairs at 4-mod-8 addresses are marked as pairs (and split at run time).
    let program = p.program_fused();
    let pair_at = |ws: [u32; 2]| {
        let i = p.0.windows(2).position(|w| w == ws).unwrap();
        program.fuses_with_next(BASE + 4 * i as u32)
    };
    assert!(pair_at([sw(S1, S4, 0), sw(A0, S4, 4)]));
    assert!(pair_at([lw(T5, S7, 0), lw(T6, S7, 4)]));
}

/// `n` iterations of a MUL32 call followed by WRAM loads only (a word, a half, a byte, a pair
/// of the tasklet's 64 bytes at 0x1000 + 64 tp, and a shared word), folded into a checksum
/// stored at the end: after the call, the whole loop body up to the faulting access of
/// tasklet `f` at iteration `k` is loads and register operations.
fn load_heavy(n: i32, end: Option<(i32, i32, Finish)>) -> P {
    let mut p = P::new();
    p.i(addi(S1, ZERO, n));
    p.i(slli(S5, TP, 7));
    p.i(addi(S5, S5, 0x2b3));
    p.i(slli(S2, TP, 6));
    p.all(&li(T0, 0x1000));
    p.i(add(S2, S2, T0));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(lw(T0, S2, 0));
    p.i(add(S6, S6, T0));
    p.i(lhu(T1, S2, 6));
    p.i(xor(S6, S6, T1));
    p.i(lbu(T2, S2, 9));
    p.i(add(S6, S6, T2));
    p.i(lw(T3, S2, 16));
    p.i(lw(T4, S2, 20));
    p.i(add(S6, S6, T3));
    p.i(xor(S6, S6, T4));
    p.i(lw(T5, ZERO, 0x100));
    p.i(add(S6, S6, T5));
    p.i(add(S6, S6, A0));
    if let Some((f, k, finish)) = end {
        finisher(&mut p, f, k, finish, S2);
    }
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.i(slli(T0, TP, 3));
    p.i(sw(S6, T0, 0x400));
    p.exit();
    p
}

fn load_heavy_init(d: &mut Dpu) {
    for (i, b) in d.wram[0x100..0x1600].iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
}

#[test]
fn misaligned_and_out_of_range_accesses_among_early_ones() {
    for finish in [
        Finish::MisalignedLoad,
        Finish::MisalignedStore,
        Finish::OutOfRangeLoad,
        Finish::OutOfRangeStore,
    ] {
        for k in [8, 3] {
            for (name, p, init) in [
                (
                    "not_plain",
                    not_plain(9, Some((1, k, finish))),
                    &no_init as &dyn Fn(&mut Dpu),
                ),
                (
                    "load_heavy",
                    load_heavy(9, Some((1, k, finish))),
                    &load_heavy_init,
                ),
            ] {
                let program = p.program_fused();
                for nr in [2, 3, 12, 16, 24] {
                    let (out, _) = same_init(&program, nr, &timing(), init);
                    let what = format!("{name}, {finish:?} at {k}, {nr} tasklets: {:?}", out.fault);
                    let r = out.fault.as_ref().expect(&what);
                    assert_eq!(r.tasklet, 1, "{what}");
                    assert!(
                        matches!(
                            (finish, &r.fault),
                            (Finish::MisalignedLoad, Fault::Misaligned { size: 4, .. })
                                | (Finish::MisalignedStore, Fault::Misaligned { size: 2, .. })
                                | (Finish::OutOfRangeLoad, Fault::WramOutOfRange { .. })
                                | (Finish::OutOfRangeStore, Fault::WramOutOfRange { .. })
                        ),
                        "{what}"
                    );
                }
            }
        }
    }
    // Without a fault, the loads give the checksum computed here.
    let n = 9;
    let runs = same_everywhere(
        &load_heavy(n, None),
        &[1, 3, 12, 24],
        &[12],
        &load_heavy_init,
    );
    let mut init = Dpu::new();
    load_heavy_init(&mut init);
    for r in &runs {
        for t in 0..r.nr {
            let base = (0x1000 + 64 * t) as i32;
            let s5 = (t << 7) + 0x2b3;
            let mut s6 = 0u32;
            for s1 in (1..=n as u32).rev() {
                s6 = s6.wrapping_add(w32(&init, base));
                s6 ^= w32(&init, base + 4) >> 16;
                s6 = s6.wrapping_add(u32::from(init.wram[base as usize + 9]));
                s6 = s6.wrapping_add(w32(&init, base + 16)) ^ w32(&init, base + 20);
                s6 = s6.wrapping_add(w32(&init, 0x100));
                s6 = s6.wrapping_add(s5.wrapping_mul(s1));
            }
            assert_eq!(
                w32(&r.d, 0x400 + 8 * t as i32),
                s6,
                "{} tasklets, tasklet {t}",
                r.nr
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// 7. The stack.

/// A loop calling `f(s2, s1)` (`s3 = (s3 + f) ^ 0x1f`), where `f` saves ra, s0 and s1 on the
/// stack (a fused `sw` pair), makes a MUL32 call and calls the leaf `g`, which stores its
/// arguments into a 32-byte frame (pair, byte, half) and loads them back. With `snoop`,
/// tasklet 0 also loads and stores the word of tasklet 1's stack that `g` stores and at once
/// loads back (a race on another tasklet's stack).
fn stack_calls(n: i32, snoop: bool) -> P {
    let mut p = P::new();
    p.i(addi(S1, ZERO, n));
    p.i(slli(S2, TP, 4));
    p.i(sub(S2, S2, TP));
    p.i(addi(S2, S2, 5)); // tp * 15 + 5
    let top = p.here();
    if snoop {
        let skip = hole(&mut p);
        // Tasklet 1's stack ends at 0x8800; `g`'s word at 16(sp) is 0x8800 - 48 + 16.
        p.all(&li(T5, 0x87e0));
        p.i(lw(T6, T5, 0));
        p.i(add(S3, S3, T6));
        p.i(sw(S1, T5, 0));
        fill(&mut p, skip, |o| bne(TP, ZERO, o));
    }
    p.i(addi(A0, S2, 0));
    p.i(addi(A1, S1, 0));
    let call_f = hole(&mut p);
    p.i(add(S3, S3, A0));
    p.i(xori(S3, S3, 0x1f));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.i(slli(T0, TP, 3));
    p.i(sw(S3, T0, 0x400));
    p.i(sw(SP, T0, 0x404));
    p.exit();
    // f(a0, a1) = g(a0 * a1, a1 + 3) + a0
    fill(&mut p, call_f, |o| jal(RA, o));
    p.i(addi(SP, SP, -16));
    p.i(sw(S1, SP, 4));
    p.i(sw(RA, SP, 12));
    p.i(sw(S0, SP, 8));
    p.i(addi(S0, A0, 0));
    p.i(addi(S1, A1, 0));
    mul(&mut p, S0, S1);
    p.i(addi(A1, S1, 3));
    let call_g = hole(&mut p);
    p.i(add(A0, A0, S0));
    p.i(lw(S1, SP, 4));
    p.i(lw(RA, SP, 12));
    p.i(lw(S0, SP, 8));
    p.i(addi(SP, SP, 16));
    p.i(jalr(ZERO, RA, 0));
    // g(a0, a1) = ((a0 + a1) ^ (a1 & 0xff)) + (a0 & 0xffff)
    fill(&mut p, call_g, |o| jal(RA, o));
    p.i(addi(SP, SP, -32));
    p.i(sb(A1, SP, 9));
    p.i(sh_(A0, SP, 10));
    p.i(sw(A0, SP, 0));
    p.i(sw(A1, SP, 4));
    p.i(lw(T0, SP, 4));
    p.i(lw(T1, SP, 0));
    p.i(lbu(T2, SP, 9));
    p.i(lhu(T3, SP, 10));
    p.i(add(A0, T1, T0));
    p.i(xor(A0, A0, T2));
    p.i(add(A0, A0, T3));
    p.i(sw(A0, SP, 16));
    p.i(lw(A0, SP, 16));
    p.i(addi(SP, SP, 32));
    p.i(jalr(ZERO, RA, 0));
    p
}

fn stack_sum(n: u32, t: u32) -> u32 {
    let g = |a0: u32, a1: u32| (a0.wrapping_add(a1) ^ (a1 & 0xff)).wrapping_add(a0 & 0xffff);
    let f = |a0: u32, a1: u32| g(a0.wrapping_mul(a1), a1 + 3).wrapping_add(a0);
    let mut s3 = 0u32;
    for s1 in (1..=n).rev() {
        s3 = s3.wrapping_add(f(t * 15 + 5, s1)) ^ 0x1f;
    }
    s3
}

#[test]
fn stack_frames_in_loops() {
    let n = 12;
    for snoop in [false, true] {
        let nrs = [1, 2, 3, 11, 12, 16, 24];
        let runs = same_everywhere(&stack_calls(n, snoop), &nrs, &[2, 12], &no_init);
        let mut snooped = Vec::new();
        for r in &runs {
            for t in 0..r.nr {
                let at = 0x400 + 8 * t as i32;
                assert_eq!(
                    w32(&r.d, at + 4),
                    STACKS + (t + 1) * STACK,
                    "sp back at the top"
                );
                if snoop && t < 2 {
                    snooped.push(w32(&r.d, at));
                    continue;
                }
                assert_eq!(
                    w32(&r.d, at),
                    stack_sum(n as u32, t),
                    "snoop {snoop}, {} tasklets, tasklet {t}",
                    r.nr
                );
            }
        }
        if snoop {
            println!("snooped sums (tasklets 0 and 1 per count): {snooped:x?}");
            // Tasklet 0's stores into tasklet 1's frame did land between its store and load.
            let race_free = stack_sum(n as u32, 1);
            assert!(
                snooped.iter().skip(2).step_by(2).any(|&s| s != race_free),
                "{snooped:x?}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// 8. A load that takes the engine's generic path: `lw sp` from a word another tasklet stores.

const SLOTS: i32 = 0x700;

/// Tasklet 0, 16 times: a MUL32 call, then stores into word k of `SLOTS` (k = 1..23) the top
/// of tasklet k's stack, 32 bytes lower every other time. Tasklet k > 0, 40 times: a MUL32
/// call, `lw sp` from its word (a load into `sp`, which the engine checks on its generic
/// path), counts how often sp changed, pushes a 16-byte frame (a fused pair of `sw`), loads
/// it back into a checksum and pops it.
fn sp_from_wram() -> P {
    let mut p = P::new();
    p.i(slli(S5, TP, 5));
    p.i(addi(S5, S5, 0x3a1));
    let to_others = hole(&mut p);
    p.i(addi(S1, ZERO, 16));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(andi(T1, S1, 1));
    p.i(slli(T1, T1, 5)); // 32 every other time
    p.all(&li(T3, STACKS + 2 * STACK));
    p.i(sub(T3, T3, T1)); // the top of tasklet 1's stack, maybe 32 lower
    for k in 1..24 {
        p.i(sw(T3, ZERO, SLOTS + 4 * k));
        p.i(addi(T3, T3, STACK as i32));
    }
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.exit();
    fill(&mut p, to_others, |o| bne(TP, ZERO, o));
    p.i(addi(S1, ZERO, 40));
    p.i(slli(S9, TP, 2));
    p.i(addi(S9, S9, SLOTS));
    p.i(sw(SP, S9, 0));
    p.i(addi(S11, SP, 0));
    let top = p.here();
    mul(&mut p, S5, S1);
    p.i(xori(T1, A0, 7));
    p.i(lw(SP, S9, 0));
    p.i(sub(T0, SP, S11));
    p.i(sltu(T0, ZERO, T0));
    p.i(add(S8, S8, T0));
    p.i(addi(S11, SP, 0));
    p.i(addi(SP, SP, -16));
    p.i(sw(S1, SP, 0));
    p.i(sw(T1, SP, 4));
    p.i(lw(T2, SP, 0));
    p.i(lw(T3, SP, 4));
    p.i(add(S6, S6, T2));
    p.i(xor(S6, S6, T3));
    p.i(addi(SP, SP, 16));
    p.i(addi(S1, S1, -1));
    p.i(bne(S1, ZERO, top - p.here()));
    p.i(slli(T0, TP, 3));
    p.i(sw(S6, T0, 0x780));
    p.i(sw(S8, T0, 0x784));
    p.exit();
    p
}

#[test]
fn stack_pointer_loaded_from_a_word_another_tasklet_stores() {
    let p = sp_from_wram();
    assert!(p.0.contains(&lw(SP, S9, 0)));
    let runs = same_everywhere(&p, &[1, 2, 3, 11, 12, 16, 24], &[3, 12, 24], &no_init);
    let mut changes = Vec::new();
    for r in &runs {
        for t in 1..r.nr {
            let s5 = (t << 5) + 0x3a1;
            let mut s6 = 0u32;
            for s1 in (1..=40u32).rev() {
                s6 = s6.wrapping_add(s1) ^ (s5.wrapping_mul(s1) ^ 7);
            }
            let at = 0x780 + 8 * t as i32;
            assert_eq!(w32(&r.d, at), s6, "{} tasklets, tasklet {t}", r.nr);
            changes.push(w32(&r.d, at + 4));
        }
    }
    println!("sp changes seen: {changes:?}");
    // The tasklets saw tasklet 0's stores move their sp.
    assert!(
        changes.iter().filter(|&&c| c >= 2).count() > 10,
        "{changes:?}"
    );
}
