//! Epochs: many revolver turns of every running tasklet executed one tasklet at a time.
//!
//! When at least `revolver_cycles` tasklets are running and none of them waits, the revolver
//! issues them in strict round-robin order, one slot each per turn of `n` cycles, until one
//! of them does something that changes that (a DMA, a lock, any environment call other than
//! the arithmetic ones, an MRAM access) or a waiting tasklet becomes ready. Over such a
//! stretch the issue cycle of every slot is known in advance, and only the tasklets' WRAM
//! accesses could make the order in which their slots *execute* matter. An epoch executes
//! `J` turns of every tasklet, one tasklet after the other (each tasklet's code in a run,
//! which the host predicts far better than tasklets interleaved slot by slot), and is exact
//! because:
//!
//! - every tasklet stops before a slot that would end the stretch (it then executes in the
//!   interleaved interpreter at its own cycle), and `J` is the fewest turns any tasklet ran:
//!   the tasklets that ran more are rolled back to `J` turns (their stores undone, their
//!   registers and what they owed restored, their `J` turns executed again);
//! - the WRAM they touch is tracked per 32-byte granule for the epoch: a tasklet stops before
//!   an access to a granule another tasklet of the epoch has stored to, or before a store to
//!   a granule another tasklet has accessed. So no two tasklets exchange data through WRAM
//!   within the epoch's `J` turns, and executing their slots in another order than the
//!   revolver's gives the same values (a granule only read by several tasklets is fine);
//! - the epoch ends before the first cycle at which a waiting tasklet becomes ready and before
//!   the next check of the cycle limit or of a stop request.
//!
//! Spinning tasklets and the slots tasklets owe (see the `exec` module) take part: their slots
//! execute no op. Epochs are a shortcut (`Program::without_shortcuts` turns them off).

use super::{Dpu, MAXT, WS};
use crate::decode::{fuse, Op};
use crate::map::WRAM_SIZE;

/// Granules of WRAM tracked per epoch (32 bytes each).
pub(super) const GRANULES: usize = WS / 32;
/// Fewest turns an epoch must keep to be worth its set-up.
const MIN_TURNS: u32 = 24;
/// Most turns of one epoch (bounds the undo log and the work thrown away by a rollback).
const MAX_TURNS: u32 = 256;
/// Owner value of a granule read by several tasklets in the epoch.
const SHARED: u32 = 31;
/// Bit of a granule's state: stored to in the epoch.
const WRITTEN: u32 = 32;

/// A granule's index and its bytes before the epoch's first store to it.
type GranuleCopy = (u16, [u8; 32]);

/// A store of a slot that may still stop (the first access of a word pair), undone if it does.
#[derive(Clone, Copy, Default)]
struct Undo {
    addr: u32,
    old: u32,
}

/// What a tasklet had before the epoch, restored by a rollback.
#[derive(Clone, Copy, Default)]
pub(super) struct Saved {
    regs: [u32; 32],
    pc: u32,
    /// Slots it owed (a run only ever pays some of them; new ones are owed at the commit).
    owed: u64,
    /// Turns its run executed, and the fused pairs of those turns (counted at the commit).
    turns: u32,
    fused: u64,
    /// An arithmetic call whose issue slots go on after the epoch: its op index and the slots
    /// left, owed at the commit.
    owe: Option<(u32, u32)>,
}

/// Epoch state of a DPU run.
pub(super) struct Epochs {
    /// Per granule: the epoch number (bits 8..), the tasklet that accessed it (bits 0..5, or
    /// `SHARED`) and `WRITTEN`.
    granule: Box<[u32]>,
    number: u32,
    /// Per tasklet, the granules it stored to in the epoch, as they were before (what a
    /// rollback restores; a granule is only ever stored to by one tasklet in an epoch).
    before: Box<[Vec<GranuleCopy>]>,
    saved: Box<[Saved]>,
    /// Cycles in the interleaved interpreter before the next attempt after a failed one, and
    /// after the next failure (doubling up to a limit, halved by a success).
    pub(super) wait: u32,
    backoff: u32,
    /// Most turns the next epoch tries.
    cap: u32,
}

impl Epochs {
    pub(super) fn new() -> Epochs {
        Epochs {
            granule: vec![0; GRANULES].into_boxed_slice(),
            number: 0,
            before: (0..MAXT).map(|_| Vec::new()).collect(),
            saved: vec![Saved::default(); MAXT].into_boxed_slice(),
            wait: 0,
            backoff: 16,
            cap: MAX_TURNS,
        }
    }

    /// Records tasklet `t`'s access to WRAM byte `a` (a store if `store`) in the epoch, keeping
    /// the granule's bytes before its first store; false if another tasklet's access conflicts
    /// with it.
    #[inline(never)]
    fn access(&mut self, wram: &[u8; WS], t: usize, a: u32, store: bool) -> bool {
        let at = (a as usize >> 5) % GRANULES;
        let g = &mut self.granule[at];
        let mine = self.number << 8 | t as u32;
        let first_store = if *g >> 8 != self.number {
            *g = mine | if store { WRITTEN } else { 0 };
            store
        } else if *g & 31 == t as u32 {
            let first = store && *g & WRITTEN == 0;
            if store {
                *g |= WRITTEN;
            }
            first
        } else if store || *g & WRITTEN != 0 {
            return false;
        } else {
            *g = self.number << 8 | SHARED;
            false
        };
        if first_store {
            let mut bytes = [0u8; 32];
            bytes.copy_from_slice(&wram[at * 32..at * 32 + 32]);
            self.before[t].push((at as u16, bytes));
        }
        true
    }
}

impl Dpu<'_> {
    /// Tries an epoch at cycle `now` (the last issuer being `last`), ending before cycle
    /// `bound`. Returns the cycle and last issuer after it, or `None` when no epoch of at least
    /// `MIN_TURNS` turns was possible (nothing changed).
    #[inline(never)]
    pub(super) fn try_epoch(&mut self, now: u64, last: usize, bound: u64) -> Option<(u64, usize)> {
        let nr = self.nr;
        // The tasklets in the rotation: ready within a turn (`blocked` is only a hint: a
        // tasklet in it may be ready again); the others wait longer, and the epoch ends before
        // the first of them is ready.
        let mut running = 0u32;
        let mut end = bound;
        for t in 0..nr {
            let at = self.hot[t].ready_at;
            if at <= now + nr as u64 {
                running |= 1 << t;
            } else {
                end = end.min(at);
            }
        }
        let n = running.count_ones() as usize;
        if (n as u64) < self.rev {
            return self.epoch_failed();
        }
        // In round-robin order after `last`, each ready at its turn.
        let mut order = [0usize; MAXT];
        let mut m = running.rotate_right((last as u32 + 1) % 32);
        for (p, slot) in order.iter_mut().enumerate().take(n) {
            let j = m.trailing_zeros();
            m &= m - 1;
            let t = ((j + last as u32 + 1) % 32) as usize;
            if self.hot[t].ready_at > now + p as u64 || self.stops_at_once(t) {
                return self.epoch_failed();
            }
            *slot = t;
        }
        // At most twice the turns of the last epoch: the tasklets run first would otherwise
        // run far beyond where the others stop, and be rolled back.
        let turns = (end.saturating_sub(now) / n as u64).min(u64::from(self.epochs.cap)) as u32;
        if turns < MIN_TURNS {
            return self.epoch_failed();
        }
        let order = &order[..n];
        let e = &mut self.epochs;
        e.number = (e.number + 1) & 0xff_ffff;
        if e.number == 0 {
            e.granule.fill(0);
            e.number = 1;
        }
        let passive = (self.passive, self.owing);
        let mut k = turns;
        for (i, &t) in order.iter().enumerate() {
            self.epoch_save(t);
            k = k.min(self.epoch_run(t, k));
            if k < MIN_TURNS {
                // Not worth it: every tasklet run so far back as it was.
                for &u in order[..=i].iter().rev() {
                    self.epoch_restore(u, passive);
                }
                return self.epoch_failed();
            }
        }
        // Every tasklet to `k` turns: those that ran more are rolled back and run `k` again
        // (the same turns, so they run them in full; were one to stop earlier, `k` falls).
        loop {
            let mut again = false;
            for &t in order {
                if self.epochs.saved[t].turns > k {
                    self.epoch_restore(t, passive);
                    let done = self.epoch_run(t, k);
                    if done < k {
                        k = done;
                        again = true;
                    }
                }
            }
            if !again {
                break;
            }
            if k < MIN_TURNS {
                // (Not expected: a tasklet's turns are the same when run again.)
                for &t in order.iter().rev() {
                    self.epoch_restore(t, passive);
                }
                return self.epoch_failed();
            }
        }
        // Commit: the `k` turns issue at their cycles.
        let rev = self.rev;
        for (p, &t) in order.iter().enumerate() {
            let s = self.epochs.saved[t];
            self.run_stats.fused_pairs += s.fused;
            if let Some((at, slots)) = s.owe {
                self.owe(t, at, slots, 0);
            }
            if self.held_spin & (1 << t) != 0 {
                for _ in 0..k {
                    self.spin_passive_slot(t);
                }
            }
            let h = &mut self.hot[t];
            h.icount += u64::from(k);
            h.ready_at = now + (u64::from(k) - 1) * n as u64 + p as u64 + rev;
        }
        // (Halved, not reset: where epochs mostly fail, one success should not bring back
        // attempts at every turn.)
        self.epochs.backoff = (self.epochs.backoff / 2).max(16);
        self.epochs.cap = (2 * k).clamp(2 * MIN_TURNS, MAX_TURNS);
        Some((now + u64::from(k) * n as u64, order[n - 1]))
    }

    /// Whether tasklet `t`'s next slot is sure to stop an epoch (an environment call other
    /// than the arithmetic ones, or an op never executed in one): seen from its ops alone, so
    /// that an attempt that would end at once costs nothing. (Only a hint: `epoch_run`
    /// decides.)
    fn stops_at_once(&self, t: usize) -> bool {
        if self.passive & (1 << t) != 0 {
            return false;
        }
        let mut i = self.hot[t].pc as usize;
        let mut call = None;
        loop {
            let op = self.ops[i];
            let mark = match op {
                Op::Ecall => {
                    let nr = call.unwrap_or(self.regs[t][usize::from(openpim_isa::reg::A7)]);
                    return !(crate::ecall::MUL32..=crate::ecall::FDIV64).contains(&nr);
                }
                Op::EcallSpin { .. }
                | Op::Ebreak
                | Op::Illegal { .. }
                | Op::Generic { .. }
                | Op::FellOff
                | Op::Stall
                | Op::Spin => return true,
                Op::Li { rd, imm } => {
                    if rd & 31 == openpim_isa::reg::A7 {
                        call = Some(imm);
                    }
                    rd >> 5
                }
                Op::Addi { rd, .. }
                | Op::Add { rd, .. }
                | Op::Ori { rd, .. }
                | Op::Andi { rd, .. }
                | Op::Xori { rd, .. } => {
                    if rd & 31 == openpim_isa::reg::A7 {
                        return false;
                    }
                    rd >> 5
                }
                _ => return false,
            };
            if mark != fuse::ALWAYS || i + 1 >= self.ops.len() {
                return false;
            }
            i += 1;
        }
    }

    #[cold]
    fn epoch_failed(&mut self) -> Option<(u64, usize)> {
        let e = &mut self.epochs;
        e.wait = e.backoff;
        e.backoff = (e.backoff * 2).min(1 << 16);
        None
    }

    /// Keeps what tasklet `t` has before its run in the epoch.
    fn epoch_save(&mut self, t: usize) {
        self.epochs.before[t].clear();
        self.epochs.saved[t] = Saved {
            regs: self.regs[t],
            pc: self.hot[t].pc,
            owed: self.owed[t],
            turns: 0,
            fused: 0,
            owe: None,
        };
    }

    /// Undoes tasklet `t`'s run in the epoch: its stores (in reverse), its registers, pc and
    /// what it owes (`passive`: the `passive` and `owing` masks before the epoch).
    fn epoch_restore(&mut self, t: usize, passive: (u32, u32)) {
        let s = self.epochs.saved[t];
        // (The granules stay marked as this tasklet's: a run again stores to them without
        // keeping them again, and another restore restores them from these.)
        for &(at, bytes) in self.epochs.before[t].iter().rev() {
            let at = usize::from(at) * 32;
            self.wram[at..at + 32].copy_from_slice(&bytes);
        }
        self.regs[t] = s.regs;
        self.hot[t].pc = s.pc;
        self.owed[t] = s.owed;
        let bit = 1u32 << t;
        self.passive = (self.passive & !bit) | (passive.0 & bit);
        self.owing = (self.owing & !bit) | (passive.1 & bit);
        self.epochs.saved[t].turns = 0;
        self.epochs.saved[t].fused = 0;
        self.epochs.saved[t].owe = None;
    }

    /// Runs up to `k` turns of tasklet `t` (one issue slot each); returns the turns run, kept
    /// with the fused pairs of their slots (counted at the commit) in `Epochs::saved`. Stops
    /// before a slot that cannot execute in an epoch; its registers, pc, what it owes and WRAM
    /// are then as after the turns run.
    #[inline(never)]
    fn epoch_run(&mut self, t: usize, k: u32) -> u32 {
        let (done, fused) = self.epoch_turns(t, k);
        let s = &mut self.epochs.saved[t];
        s.turns = done;
        s.fused = fused;
        done
    }

    /// `epoch_run`'s turns: the turns run and their fused pairs.
    #[inline(always)]
    fn epoch_turns(&mut self, t: usize, k: u32) -> (u32, u64) {
        let bit = 1u32 << t;
        if self.held_spin & bit != 0 {
            // Every slot of a spin on a held bit executes no op (counted at the commit); no
            // tasklet can release the bit within the epoch (a release is an environment
            // call).
            return (k, 0);
        }
        let mut done = 0u32;
        if self.owing & bit != 0 {
            let m = self.owed[t].min(u64::from(k));
            self.owed[t] -= m;
            done = m as u32;
            if self.owed[t] == 0 {
                self.owing &= !bit;
                self.passive &= !bit;
            }
        }
        let ops = self.ops;
        let mut fused = 0u64;
        let mut pc = self.hot[t].pc;
        // Registers written by the ops of the current slot before its last, to undo a slot
        // whose later op cannot execute in an epoch (a slot of more such ops stops).
        let mut kept: [(u8, u32); 8] = [(0, 0); 8];
        // Stores of the current slot that may be followed by an op that stops it.
        let mut stored: [Undo; 4] = [Undo::default(); 4];
        // The granules this run last read and last stored to (checked once per granule).
        let (mut read_g, mut stored_g) = (usize::MAX, usize::MAX);
        'slot: while done < k {
            let mut written = 0usize;
            let mut nstored = 0usize;
            let fused_before = fused;
            let mut i = pc;
            macro_rules! x {
                ($r:expr) => {
                    self.regs[t][($r & 31) as usize]
                };
            }
            // The slot stops: what its earlier ops did is undone.
            macro_rules! stop {
                () => {{
                    for &(r, v) in kept[..written].iter().rev() {
                        self.regs[t][usize::from(r)] = v;
                    }
                    for u in stored[..nstored].iter().rev() {
                        write_raw(self.wram, u.addr, 4, u.old);
                    }
                    fused = fused_before;
                    break 'slot;
                }};
            }
            // The op at `i` continues the slot: keep the register it writes.
            macro_rules! keep {
                ($rd:expr) => {{
                    if written == kept.len() {
                        stop!();
                    }
                    let rd = ($rd & 31) as u8;
                    kept[written] = (rd, self.regs[t][usize::from(rd)]);
                    written += 1;
                }};
            }
            // Whether the run may access WRAM byte `a` (see `Epochs::access`).
            macro_rules! granted {
                ($a:expr, $store:expr) => {{
                    let g = ($a as usize >> 5) % GRANULES;
                    g == stored_g
                        || (!$store && g == read_g)
                        || (self.epochs.access(&*self.wram, t, $a, $store) && {
                            if $store {
                                stored_g = g;
                            } else {
                                read_g = g;
                            }
                            true
                        })
                }};
            }
            macro_rules! end_slot {
                ($npc:expr) => {{
                    pc = $npc;
                    done += 1;
                    continue 'slot;
                }};
            }
            macro_rules! alu {
                ($rd:expr, $v:expr) => {{
                    let v = $v;
                    if $rd >> 5 == fuse::ALWAYS {
                        keep!($rd);
                        x!($rd) = v;
                        fused += 1;
                        i += 1;
                        continue;
                    }
                    x!($rd) = v;
                    end_slot!(i + 1);
                }};
            }
            // After a word access: the slot goes on with the next op if the access is marked
            // to (always, or as a word pair at an aligned address), else it ends.
            macro_rules! word_next {
                ($kind:expr, $rs1:expr, $imm:expr) => {{
                    if $kind == fuse::ALWAYS
                        || ($kind != fuse::NONE && self.pair_fuses(t, $rs1, $imm, $kind))
                    {
                        fused += 1;
                        i += 1;
                        continue;
                    }
                    end_slot!(i + 1);
                }};
            }
            macro_rules! branch {
                ($taken:expr, $target:expr) => {{
                    let to = if $taken { $target } else { i + 1 };
                    end_slot!(to);
                }};
            }
            loop {
                // SAFETY: as in `run_loop`: `i` is always a valid index into `ops`.
                let op = unsafe { *ops.get_unchecked(i as usize) };
                match op {
                    Op::Li { rd, imm } => alu!(rd, imm),
                    Op::Addi { rd, rs1, imm } => alu!(rd, x!(rs1).wrapping_add(imm as u32)),
                    Op::Slti { rd, rs1, imm } => alu!(rd, ((x!(rs1) as i32) < imm) as u32),
                    Op::Sltiu { rd, rs1, imm } => alu!(rd, (x!(rs1) < imm as u32) as u32),
                    Op::Xori { rd, rs1, imm } => alu!(rd, x!(rs1) ^ imm as u32),
                    Op::Ori { rd, rs1, imm } => alu!(rd, x!(rs1) | imm as u32),
                    Op::Andi { rd, rs1, imm } => alu!(rd, x!(rs1) & imm as u32),
                    Op::Slli { rd, rs1, sh } => alu!(rd, x!(rs1) << (sh & 31)),
                    Op::Srli { rd, rs1, sh } => alu!(rd, x!(rs1) >> (sh & 31)),
                    Op::Srai { rd, rs1, sh } => alu!(rd, ((x!(rs1) as i32) >> (sh & 31)) as u32),
                    Op::Add { rd, rs1, rs2 } => alu!(rd, x!(rs1).wrapping_add(x!(rs2))),
                    Op::Sub { rd, rs1, rs2 } => alu!(rd, x!(rs1).wrapping_sub(x!(rs2))),
                    Op::Sll { rd, rs1, rs2 } => alu!(rd, x!(rs1) << (x!(rs2) & 31)),
                    Op::Slt { rd, rs1, rs2 } => {
                        alu!(rd, ((x!(rs1) as i32) < (x!(rs2) as i32)) as u32)
                    }
                    Op::Sltu { rd, rs1, rs2 } => alu!(rd, (x!(rs1) < x!(rs2)) as u32),
                    Op::Xor { rd, rs1, rs2 } => alu!(rd, x!(rs1) ^ x!(rs2)),
                    Op::Srl { rd, rs1, rs2 } => alu!(rd, x!(rs1) >> (x!(rs2) & 31)),
                    Op::Sra { rd, rs1, rs2 } => {
                        alu!(rd, ((x!(rs1) as i32) >> (x!(rs2) & 31)) as u32)
                    }
                    Op::Or { rd, rs1, rs2 } => alu!(rd, x!(rs1) | x!(rs2)),
                    Op::And { rd, rs1, rs2 } => alu!(rd, x!(rs1) & x!(rs2)),
                    Op::Beq { rs1, rs2, target } => branch!(x!(rs1) == x!(rs2), target),
                    Op::Bne { rs1, rs2, target } => branch!(x!(rs1) != x!(rs2), target),
                    Op::Blt { rs1, rs2, target } => {
                        branch!((x!(rs1) as i32) < (x!(rs2) as i32), target)
                    }
                    Op::Bge { rs1, rs2, target } => {
                        branch!((x!(rs1) as i32) >= (x!(rs2) as i32), target)
                    }
                    Op::Bltu { rs1, rs2, target } => branch!(x!(rs1) < x!(rs2), target),
                    Op::Bgeu { rs1, rs2, target } => branch!(x!(rs1) >= x!(rs2), target),
                    Op::Nop => end_slot!(i + 1),
                    Op::J { target } => end_slot!(target),
                    Op::Jal { rd, target } => {
                        x!(rd) = self.base.wrapping_add((i + 1) << 2);
                        end_slot!(target);
                    }
                    Op::Lw { rd, rs1, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        if a > WRAM_SIZE - 4 || a & 3 != 0 || !granted!(a, false) {
                            stop!();
                        }
                        let kind = rd >> 5;
                        if kind != fuse::NONE {
                            keep!(rd);
                        }
                        x!(rd) = read_raw(self.wram, a, 4);
                        word_next!(kind, rs1, imm);
                    }
                    Op::Lh { rd, rs1, imm }
                    | Op::Lhu { rd, rs1, imm }
                    | Op::Lb { rd, rs1, imm }
                    | Op::Lbu { rd, rs1, imm } => {
                        let size = if matches!(op, Op::Lh { .. } | Op::Lhu { .. }) {
                            2
                        } else {
                            1
                        };
                        let a = x!(rs1).wrapping_add(imm as u32);
                        if a > WRAM_SIZE - size || a & (size - 1) != 0 || !granted!(a, false) {
                            stop!();
                        }
                        let raw = read_raw(self.wram, a, size);
                        x!(rd) = match op {
                            Op::Lh { .. } => raw as u16 as i16 as i32 as u32,
                            Op::Lb { .. } => raw as u8 as i8 as i32 as u32,
                            _ => raw,
                        };
                        end_slot!(i + 1);
                    }
                    Op::Sw { rs1, rs2, imm }
                    | Op::Sh { rs1, rs2, imm }
                    | Op::Sb { rs1, rs2, imm } => {
                        let size = match op {
                            Op::Sw { .. } => 4,
                            Op::Sh { .. } => 2,
                            _ => 1,
                        };
                        let a = x!(rs1).wrapping_add(imm as u32);
                        if a > WRAM_SIZE - size || a & (size - 1) != 0 || !granted!(a, true) {
                            stop!();
                        }
                        let v = x!(rs2);
                        let kind = if size == 4 { rs2 >> 5 } else { fuse::NONE };
                        if kind != fuse::NONE {
                            // (The slot may go on with an op that stops it.)
                            if nstored == stored.len() {
                                stop!();
                            }
                            stored[nstored] = Undo {
                                addr: a,
                                old: read_raw(self.wram, a, 4),
                            };
                            nstored += 1;
                        }
                        write_raw(self.wram, a, size, v);
                        word_next!(kind, rs1, imm);
                    }
                    Op::AddiSp { imm } => {
                        let sp = x!(2u8).wrapping_add(imm as u32);
                        if sp < self.stack_lo[t] {
                            stop!();
                        }
                        x!(2u8) = sp;
                        end_slot!(i + 1);
                    }
                    Op::Jalr { rd, rs1, imm } => {
                        let dest = x!(rs1).wrapping_add(imm as u32) & !1;
                        let Ok(to) = self.jump_index(dest) else {
                            stop!();
                        };
                        x!(rd) = self.base.wrapping_add((i + 1) << 2);
                        end_slot!(to);
                    }
                    Op::Jr { rs1, imm } => {
                        let dest = x!(rs1).wrapping_add(imm as u32) & !1;
                        let Ok(to) = self.jump_index(dest) else {
                            stop!();
                        };
                        end_slot!(to);
                    }
                    Op::Ecall => {
                        let call = x!(openpim_isa::reg::A7);
                        if !(crate::ecall::MUL32..=crate::ecall::FDIV64).contains(&call) {
                            stop!();
                        }
                        // The arithmetic calls do not look at the cycle; they fault (division
                        // by zero) before changing anything.
                        match self.ecall(t, i, 0) {
                            Ok(super::Flow::Next { .. }) => end_slot!(i + 1),
                            Ok(super::Flow::Jump { .. }) => {
                                let (slots, next) = (self.stall_left[t], self.stall_ret[t]);
                                pc = next;
                                done += 1;
                                let m = slots.min(k - done);
                                done += m;
                                if slots > m {
                                    // The call's remaining slots are owed after the epoch, as
                                    // after a call issued in the interleaved interpreter
                                    // (`try_epoch`'s commit).
                                    self.epochs.saved[t].owe = Some((i, slots - m));
                                    break 'slot;
                                }
                                continue 'slot;
                            }
                            Ok(super::Flow::Halt) | Err(_) => stop!(),
                        }
                    }
                    // Any other op (an acquire loop's call, the sentinels, the generic path, a
                    // breakpoint or an illegal word) executes in the interleaved interpreter.
                    _ => stop!(),
                }
            }
        }
        self.hot[t].pc = pc;
        (done, fused)
    }
}

/// The `size` bytes (1, 2 or 4, naturally aligned) at WRAM address `a`, zero-extended.
#[inline(always)]
fn read_raw(w: &[u8; WS], a: u32, size: u32) -> u32 {
    let a = a as usize;
    match size {
        4 => u32::from_le_bytes([
            w[a & (WS - 1)],
            w[(a + 1) & (WS - 1)],
            w[(a + 2) & (WS - 1)],
            w[(a + 3) & (WS - 1)],
        ]),
        2 => u32::from(u16::from_le_bytes([w[a & (WS - 1)], w[(a + 1) & (WS - 1)]])),
        _ => u32::from(w[a & (WS - 1)]),
    }
}

/// Writes the low `size` bytes of `v` at WRAM address `a` (naturally aligned).
#[inline(always)]
fn write_raw(w: &mut [u8; WS], a: u32, size: u32, v: u32) {
    let b = v.to_le_bytes();
    for (k, byte) in b.iter().enumerate().take(size as usize) {
        w[(a as usize + k) & (WS - 1)] = *byte;
    }
}
