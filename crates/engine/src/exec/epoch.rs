//! Epochs: the revolver's issue slots counted in bulk while the tasklets' code runs ahead of
//! them, one tasklet at a time.
//!
//! Interleaving sixteen tasklets slot by slot is what makes interpretation slow: the host
//! cannot predict the branches of code that changes every slot. During an epoch every
//! tasklet's code runs instead in *batches* (`batch_run`: up to `BATCH` slots of one tasklet
//! in a row, twice as many after each batch that was not stopped, up to `MAX_BATCH`), and the
//! revolver only counts: it picks the issuer of each cycle exactly as the interpreter does
//! (`Dpu::select`) and issues a slot its batch already executed (or a slot of a tasklet
//! spinning on a held atomic bit), updating the clock, the tasklet's next issue cycle and its
//! instruction count. Where the same tasklets issue in turn and all of them have such slots,
//! the slots are counted at once (`bulk`: whole turns of at least `revolver_cycles`
//! tasklets, or, with fewer, whole periods of `revolver_cycles` cycles in which each issues
//! once, `bulk_sparse`). A batch may run as soon as its tasklet's slots have all issued, even
//! while it waits for its DMA.
//!
//! A batch stops before a slot that other tasklets could observe or that depends on when it
//! issues: environment calls other than the arithmetic ones and the atomic-bit calls no other
//! tasklet can observe yet (below), MRAM accesses, ops that would fault, and WRAM accesses
//! that conflict (below). When that slot's turn comes, it is an
//! *event* (`event_ready`): any environment call but `printf` (DMA, atomic bits, sleep and
//! wake-up, counters, exit...) and any load or store outside the WRAM is handed to the
//! interpreter, which executes that one slot at its cycle (`run_loop`; the epoch goes on at
//! the next cycle), as is a spinning tasklet's acquire of a released bit; any other slot ends
//! the epoch. A slot handed over that faults or ends the run ends it as without epochs: the
//! live batches are rolled back first (`epoch_abort`).
//!
//! Exact because slots executed ahead of their cycle can only differ from slots executed at it
//! through data other tasklets write or read meanwhile, and none can:
//! - registers are the tasklet's own, and MRAM is only touched by events, which execute at
//!   their cycles in cycle order;
//! - an atomic bit is acquired or released in a batch (`batch_atomic`) only when no tasklet
//!   spins on it (a spinner reads it at each of its slots) and no other live batch changed it,
//!   and an acquire only when the bit is clear; each bit records the last batch that changed
//!   it (`Epochs::bit`), and an event on the bit (another tasklet's acquire or release, which
//!   is also how a tasklet starts spinning on it) first rolls back a live batch of another
//!   tasklet that changed it (`event_ready`), which restores the bit: the calls on a bit then
//!   execute in cycle order;
//! - WRAM is tracked per 8-byte granule: each granule records the last tasklet and batch that
//!   accessed it (`Epochs::access`). A batch is *live* while some of its slots have not issued.
//!   A tasklet may not load a granule a live batch of another tasklet stored to, nor store to
//!   one another live batch accessed; a DMA call may not write a granule another live batch
//!   accessed, nor read one it stored to. Where one would, the other tasklet's batch is rolled
//!   back to its issued slots (`rollback`: its stores undone from the granules' copies, its
//!   registers, pc and owed slots restored, its issued slots run again) and the access goes
//!   ahead: the data then passes in cycle order. Accesses of batches that have issued in full
//!   are in the past of every slot still to execute, and never conflict;
//! - an epoch ends before the next check of the cycle limit or of a stop request, and
//!   whatever ends it (any slot not handed over, the end of the run) first rolls back every
//!   live batch (`sweep_end`, `epoch_abort`).
//!
//! Speed only decides when an epoch ends early: when its rollbacks have thrown away more than
//! a quarter of the slots it issued (tasklets exchanging data through WRAM that often), or
//! when its recent events and bulk counts cost more than interpreting its slots would
//! (`Epochs::busy`: a hand-over costs about `EVENT_SLOTS` interpreted slots, a tasklet updated
//! by a bulk count about one; lock-heavy code runs faster interleaved).
//! An epoch that ended so, or issued fewer than `WORTH` slots, makes the next attempt wait
//! (doubling up to 65,536 cycles, halved by a good one).
//!
//! Spinning tasklets and the slots tasklets owe (see the `exec` module) take part: a spinner's
//! slots execute no op, and a batch starts with the slots its tasklet owes. Epochs are a
//! shortcut (`Program::without_shortcuts` turns them off).

use super::{Dpu, MAXT, WS};
use crate::decode::{alu_dest, fuse, Op};
use crate::ecall;
use crate::map::{ATOMIC_BITS, WRAM_SIZE};
use openpim_isa::reg;

/// Bytes of a granule of WRAM (the unit in which batches' accesses are tracked): a 64-bit
/// word, so that the per-tasklet words of an array do not look shared.
const GRANULE: usize = 8;
/// Granules of WRAM.
pub(super) const GRANULES: usize = WS / GRANULE;
/// Most slots of a tasklet's first batch; each batch that runs that many (not stopped
/// by an op) lets the next run twice as many, up to `MAX_BATCH` (bounds the work a rollback
/// throws away).
const BATCH: u32 = 128;
const MAX_BATCH: u32 = 2048;
/// Fewest slots an epoch must issue to count as worth its set-up (else the next attempt waits
/// longer).
const WORTH: u64 = 64;
/// Fewest slots an epoch must issue per event it hands over, over its last few thousand slots
/// (up to `8 * EVENT_GRACE`, `EVENT_GRACE` granted): handing an event over costs about what
/// interpreting this many slots does, so where tasklets make events more often the
/// interleaved interpreter is faster (PrIM HST-L: 40 and 48 as fast as without epochs, 32
/// 1.25x slower; `dma` the same from 32 to 48; PrIM TRNS 1.06x faster at 40 than at 48).
/// Each tasklet a bulk count updates adds one slot to that cost (`Epochs::busy`: a count
/// costs about one interpreted slot per tasklet; with the atomic bits taken inside batches,
/// PrIM TRNS ran 4 % faster with this than without, `dma` the same).
const EVENT_SLOTS: u64 = 40;
const EVENT_GRACE: u64 = 512;
/// Owner value of a granule read by several live batches.
const SHARED: u64 = 31;
/// Bit of a granule's state: stored to by its batch.
const WRITTEN: u64 = 32;

/// A granule's index and its bytes before the batch's first store to it.
type GranuleCopy = (u16, [u8; GRANULE]);

/// A store of a slot that may still stop (the first access of a word pair), undone if it does.
#[derive(Clone, Copy, Default)]
struct Undo {
    addr: u32,
    old: u32,
}

/// What a tasklet had before its current batch, restored by a rollback.
#[derive(Clone, Copy, Default)]
pub(super) struct Saved {
    regs: [u32; 32],
    pc: u32,
    /// Slots it owed (a batch starts by paying them).
    owed: u64,
    /// The batch's fused pairs (counted once it has issued in full, or at its rollback).
    fused: u64,
    /// An arithmetic call whose issue slots go on after the batch: its op index and the slots
    /// left, owed once the batch has issued.
    owe: Option<(u32, u32)>,
}

/// Epoch state of a DPU run.
pub(super) struct Epochs<'a> {
    /// Per granule: the epoch number (bits 32..), the batch of its tasklet that accessed it
    /// last (bits 8..24), `WRITTEN`, and the tasklet (bits 0..5, or `SHARED`).
    granule: Box<[u64]>,
    number: u32,
    /// Per tasklet, its batch number (in the granules), the slots of its batch executed and
    /// not issued (the batch is live while there are some), and those issued.
    batch: [u16; MAXT],
    avail: [u32; MAXT],
    issued: [u32; MAXT],
    /// Most slots of each tasklet's next batch.
    cap: [u32; MAXT],
    /// Tasklets with a live batch.
    live: u32,
    /// Tasklets whose last batch stopped before a slot it could not execute (not at its
    /// most slots): that slot is likely an event.
    stopped: u32,
    /// Per tasklet, the granules its batch stored to, as they were before (what a rollback
    /// restores; a granule is only ever stored to by one live batch).
    before: Box<[Vec<GranuleCopy>]>,
    /// Per atomic bit, the last batch that acquired or released it (as `granule`, without
    /// `WRITTEN`); per tasklet, the bits its batch changed and their values before (what a
    /// rollback restores).
    bit: Box<[u64]>,
    bits_before: Box<[Vec<(u8, bool)>]>,
    saved: Box<[Saved]>,
    /// An epoch is under way (it handed an event to the interpreter and goes on after it).
    pub(super) active: bool,
    /// Tasklets whose live batches the last refused WRAM access conflicts with.
    conflict: u32,
    /// Whether whole turns may be counted at once (set when the tasklets' slots change).
    dirty: bool,
    /// Slots issued by the epoch under way, slots its rollbacks threw away and events it
    /// handed over; the slots and events since `window` slots (the events' rate is judged
    /// over the last few thousand slots).
    slots: u64,
    wasted: u64,
    events: u64,
    /// Tasklets updated by the bulk counts since `window` slots (each about the cost of one
    /// interpreted slot).
    members: u64,
    window: u64,
    /// The tasklet whose event the interpreter executes.
    event: Option<usize>,
    /// Cycles in the interleaved interpreter before the next attempt after an epoch that
    /// issued less than `WORTH` slots, and after the next such one (doubling up to a limit,
    /// halved by a good one).
    pub(super) wait: u32,
    backoff: u32,
    /// The program's translated code, when the translating engine runs the batches
    /// (`Engine::Translator`, on a host with a code generator, with the shortcuts on).
    pub(super) translation: Option<&'a crate::jit::Cache>,
    /// What the engine did (`EngineUse`).
    pub(super) engine_use: crate::EngineUse,
}

impl Epochs<'_> {
    pub(super) fn new() -> Epochs<'static> {
        Epochs {
            granule: vec![0; GRANULES].into_boxed_slice(),
            number: 0,
            batch: [0; MAXT],
            avail: [0; MAXT],
            issued: [0; MAXT],
            cap: [BATCH; MAXT],
            live: 0,
            stopped: 0,
            before: (0..MAXT).map(|_| Vec::new()).collect(),
            bit: vec![0; ATOMIC_BITS as usize].into_boxed_slice(),
            bits_before: (0..MAXT).map(|_| Vec::new()).collect(),
            saved: vec![Saved::default(); MAXT].into_boxed_slice(),
            active: false,
            conflict: 0,
            dirty: false,
            slots: 0,
            wasted: 0,
            events: 0,
            members: 0,
            window: 0,
            event: None,
            wait: 0,
            backoff: 16,
            translation: None,
            engine_use: crate::EngineUse::default(),
        }
    }

    /// Whether the epoch's recent slots cost more than the interleaved interpreter would:
    /// handing events over (each about `EVENT_SLOTS` interpreted slots) and updating tasklets in
    /// bulk counts (each about one), against the slots issued since `window`.
    fn busy(&self) -> bool {
        self.events * EVENT_SLOTS + self.members > self.slots - self.window + EVENT_GRACE
    }

    /// The state of a granule that tasklet `t`'s batch accessed (without `WRITTEN`).
    fn mark(&self, t: usize) -> u64 {
        u64::from(self.number) << 32 | u64::from(self.batch[t]) << 8 | t as u64
    }

    /// The live batches other than `t`'s that a granule state `g` says accessed the granule
    /// (a mask; every other live batch for a granule several read).
    fn live_others(&self, g: u64, t: usize) -> u32 {
        if g >> 32 != u64::from(self.number) {
            return 0;
        }
        let owner = (g & 31) as usize;
        if g & 31 == SHARED {
            return self.live & !(1 << t);
        }
        if owner == t || (g >> 8) as u16 != self.batch[owner] {
            return 0;
        }
        self.live & (1 << owner)
    }

    /// Records tasklet `t`'s access to WRAM byte `a` (a store if `store`) in its batch, keeping
    /// the granule's bytes before the batch's first store to it; false (with the batches it
    /// conflicts with in `conflict`) if a live batch of another tasklet accessed the granule
    /// and one of the two accesses is a store.
    #[inline(never)]
    fn access(&mut self, wram: &[u8; WS], t: usize, a: u32, store: bool) -> bool {
        let at = (a as usize / GRANULE) % GRANULES;
        let g = self.granule[at];
        let mine = self.mark(t);
        let first_store = if g & !WRITTEN == mine {
            // (Already this batch's.)
            let first = store && g & WRITTEN == 0;
            if store {
                self.granule[at] = g | WRITTEN;
            }
            first
        } else {
            let others = self.live_others(g, t);
            if others == 0 {
                self.granule[at] = mine | if store { WRITTEN } else { 0 };
                store
            } else if store || g & WRITTEN != 0 {
                self.conflict = others;
                return false;
            } else {
                self.granule[at] = u64::from(self.number) << 32 | SHARED;
                false
            }
        };
        if first_store {
            let mut bytes = [0u8; GRANULE];
            bytes.copy_from_slice(&wram[at * GRANULE..(at + 1) * GRANULE]);
            self.before[t].push((at as u16, bytes));
        }
        true
    }

    /// The live batches of tasklets other than `t` that a DMA of `t` writing (`store`) or
    /// reading the WRAM bytes `w..w + n` conflicts with.
    fn dma_conflicts(&self, t: usize, w: u32, n: u32, store: bool) -> u32 {
        let mut m = 0;
        let (first, last) = (w as usize / GRANULE, (w + n - 1) as usize / GRANULE);
        for &g in &self.granule[first % GRANULES..=last % GRANULES] {
            if store || g & WRITTEN != 0 {
                m |= self.live_others(g, t);
            }
        }
        m
    }
}

impl Dpu<'_> {
    /// Starts an epoch at cycle `now` (`last` being the last issuer), or goes on with the one
    /// under way after the interpreter executed its event; ending before cycle `bound`.
    /// Returns the cycle and last issuer at which the interpreter goes on (with the epoch under
    /// way when it is to execute an event), or `None` when nothing changed.
    #[inline(never)]
    pub(super) fn try_epoch(&mut self, now: u64, last: usize, bound: u64) -> Option<(u64, usize)> {
        if now >= bound {
            return if self.epochs.active {
                self.sweep_end(now, last, now)
            } else {
                None
            };
        }
        if !self.epochs.active {
            let e = &mut self.epochs;
            e.number = e.number.wrapping_add(1);
            if e.number == 0 {
                e.granule.fill(0);
                e.bit.fill(0);
                e.number = 1;
            }
            e.active = true;
            e.slots = 0;
        } else if let Some(t) = self.epochs.event.take() {
            // The tasklet whose event the interpreter just executed: its next batch runs now
            // (a batch may run as soon as its tasklet's slots have all issued), so that the
            // slots up to its next turn count in bulk.
            let bit = 1u32 << t;
            if self.held_spin & bit == 0
                && self.hot[t].pc != self.spin_index
                && self.hot[t].ready_at != u64::MAX
            {
                self.batch_run(t);
            }
        }
        self.epochs.dirty = true;
        self.sweep(now, last, bound)
    }

    /// The epoch's revolver (see the module documentation).
    fn sweep(&mut self, start: u64, mut last: usize, bound: u64) -> Option<(u64, usize)> {
        let (nr, rev) = (self.nr, self.rev);
        let mut now = start;
        loop {
            if self.epochs.dirty {
                self.epochs.dirty = false;
                if let Some((at, l)) = self.bulk(now, last, bound) {
                    now = at;
                    last = l;
                }
            }
            if now >= bound {
                return self.sweep_end(now, last, start);
            }
            // The issuer of cycle `now`, chosen as the interpreter does.
            let mut t = last + 1;
            if t >= nr {
                t = 0;
            }
            if self.hot[t].ready_at > now {
                match self.select(now, last) {
                    Some((n, at)) if at < bound => {
                        t = n;
                        now = at;
                    }
                    Some((_, at)) => return self.sweep_end(at, last, start),
                    None => return self.sweep_end(now, last, start),
                }
            }
            let bit = 1u32 << t;
            if self.held_spin & bit != 0 {
                debug_assert!(self.owing & bit == 0);
                self.spin_passive_slot(t);
            } else if self.epochs.avail[t] > 0 {
                self.issue_ahead(t, 1);
            } else if self.hot[t].pc == self.spin_index {
                // A spinner whose bit was released: its slot is the branch back, the acquire
                // failing again, or the acquire that takes the bit (an event).
                if self.spin_slot(t).is_some() {
                    // (No live batch changes a bit a tasklet spins on: `batch_atomic`.)
                    debug_assert_eq!(
                        self.epochs
                            .live_others(self.epochs.bit[usize::from(self.spin[t].bit)], t),
                        0
                    );
                    return self.hand_over(t, now, last, start);
                }
                self.epochs.dirty = true;
            } else if self.epochs.stopped & bit != 0 && self.owing & bit == 0 && self.event_ready(t)
            {
                self.epochs.stopped &= !bit;
                return self.hand_over(t, now, last, start);
            } else {
                let mut done = self.batch_run(t);
                if done == 0 && self.epochs.conflict != 0 {
                    // Its next slot accesses WRAM that other live batches conflict with: they
                    // go back to their issued slots, and the access is no longer early.
                    self.rollback(self.epochs.conflict);
                    if self.epochs.wasted > WORTH + self.epochs.slots / 4 {
                        // Tasklets exchanging data this often throw away more than the epoch
                        // saves.
                        return self.sweep_end(now, last, start);
                    }
                    done = self.batch_run(t);
                }
                if done == 0 {
                    return if self.event_ready(t) {
                        self.hand_over(t, now, last, start)
                    } else {
                        self.sweep_end(now, last, start)
                    };
                }
                self.issue_ahead(t, 1);
            }
            let h = &mut self.hot[t];
            h.icount += 1;
            h.ready_at = now + rev;
            now += 1;
            last = t;
            self.epochs.slots += 1;
        }
    }

    /// Runs a new batch of tasklet `t` (whose slots have all issued); returns its slots.
    fn batch_run(&mut self, t: usize) -> u32 {
        let e = &mut self.epochs;
        e.conflict = 0;
        e.batch[t] = e.batch[t].wrapping_add(1);
        self.epoch_save(t);
        let cap = self.epochs.cap[t];
        let done = self.epoch_run(t, cap);
        if done > 0 {
            let e = &mut self.epochs;
            if done < cap {
                e.stopped |= 1 << t;
                e.cap[t] = BATCH;
            } else {
                e.stopped &= !(1 << t);
                e.cap[t] = (2 * cap).min(MAX_BATCH);
            }
            e.avail[t] = done;
            e.issued[t] = 0;
            e.live |= 1 << t;
            e.dirty = true;
        }
        done
    }

    /// `q` slots of tasklet `t`'s live batch issue (their cycles and counts are the caller's).
    #[inline(always)]
    fn issue_ahead(&mut self, t: usize, q: u32) {
        let e = &mut self.epochs;
        e.avail[t] -= q;
        e.issued[t] += q;
        if e.avail[t] == 0 {
            e.live &= !(1 << t);
            self.batch_issued(t);
        }
    }

    /// Tasklet `t`'s batch has issued (in full, or as far as a rollback ran it again): its
    /// fused pairs count, and the slots of an arithmetic call it began are owed.
    #[inline(never)]
    fn batch_issued(&mut self, t: usize) {
        let s = &mut self.epochs.saved[t];
        self.run_stats.fused_pairs += s.fused;
        s.fused = 0;
        if let Some((at, slots)) = s.owe.take() {
            self.owe(t, at, slots, 0);
        }
    }

    /// The epoch goes on after the interpreter executes the slot of cycle `now`.
    fn hand_over(&mut self, t: usize, now: u64, last: usize, start: u64) -> Option<(u64, usize)> {
        let e = &mut self.epochs;
        if e.slots - e.window > 8 * EVENT_GRACE {
            e.window = e.slots;
            e.events = 0;
            e.members = 0;
        }
        e.events += 1;
        if e.busy() {
            return self.sweep_end(now, last, start);
        }
        e.event = Some(t);
        Some((now, last))
    }

    /// Counts slots in bulk from cycle `now` (`last` being the last issuer) while the same
    /// tasklets (at least `revolver_cycles`) issue in turn, each a slot its batch executed or a
    /// spinner's, and no other becomes ready: whole turns, then the slots of the next turn
    /// before the first tasklet whose batch has issued in full. Ends before `bound`.
    #[inline(never)]
    fn bulk(&mut self, now: u64, last: usize, bound: u64) -> Option<(u64, usize)> {
        let nr = self.nr;
        let all = if nr == 32 { u32::MAX } else { (1u32 << nr) - 1 };
        let passive = (self.epochs.live | self.held_spin) & all;
        // The count ends before any other tasklet is ready (its slot is not counted), and
        // before a tasklet with a batch that waits longer than a turn is.
        let mut end = bound;
        let mut m = all & !passive;
        while m != 0 {
            let t = m.trailing_zeros() as usize;
            m &= m - 1;
            end = end.min(self.hot[t].ready_at);
        }
        if end <= now {
            // (One is ready now: nothing to count, in either way.)
            return None;
        }
        if (passive.count_ones() as u64) < self.rev {
            return self.bulk_sparse(now, all, end);
        }
        // The tasklets in round-robin order after `last`, each ready at its turn; the fewest
        // slots any batch has left, and the first tasklet (in that order) left with so few.
        let mut order = [0usize; MAXT];
        let shift = (last as u32 + 1) % 32;
        let mut m = passive.rotate_right(shift);
        let (mut fewest, mut first, mut n) = (u32::MAX, 0, 0);
        let mut waiting = false;
        while m != 0 {
            let j = m.trailing_zeros();
            m &= m - 1;
            let t = ((j + shift) % 32) as usize;
            let at = self.hot[t].ready_at;
            if at > now + nr as u64 {
                end = end.min(at);
                waiting = true;
                continue;
            }
            if at > now + n as u64 {
                return None;
            }
            if self.held_spin & (1 << t) == 0 && self.epochs.avail[t] < fewest {
                fewest = self.epochs.avail[t];
                first = n;
            }
            order[n] = t;
            n += 1;
        }
        if (n as u64) < self.rev {
            return self.bulk_sparse(now, all, bound);
        }
        let n64 = n as u64;
        // (Spinners alone count at most `BATCH` turns at once.)
        let most = if fewest == u32::MAX {
            u64::from(BATCH) * n64
        } else {
            u64::from(fewest) * n64 + first as u64
        };
        let total = most.min(end.saturating_sub(now));
        if total == 0 {
            return None;
        }
        // (Cut where another tasklet becomes ready: when it has a batch, the count goes on once
        // it has joined.)
        self.epochs.dirty = most > total && waiting;
        let (full, part) = (total / n64, (total % n64) as usize);
        for (p, &t) in order[..n].iter().enumerate() {
            let q = full + u64::from(p < part);
            if q == 0 {
                break;
            }
            self.issue_counted(t, q, now + (q - 1) * n64 + p as u64);
        }
        self.epochs.slots += total;
        self.epochs.members += n64.min(total);
        Some((now + total, order[((total - 1) % n64) as usize]))
    }

    /// `q` slots of tasklet `t` counted at once (a spinner's, or slots its batch executed), the
    /// last of them at cycle `last`.
    fn issue_counted(&mut self, t: usize, q: u64, last: u64) {
        if self.held_spin & (1 << t) != 0 {
            self.spin_passive_slots(t, q as u32);
        } else {
            self.issue_ahead(t, q as u32);
        }
        let h = &mut self.hot[t];
        h.icount += q;
        h.ready_at = last + self.rev;
    }

    /// `bulk` for fewer tasklets than the revolver has cycles: each issues once every
    /// `revolver_cycles` cycles, at the cycle it is ready, as long as they are ready at
    /// distinct cycles within one such period (else they wait for one another, and the slots
    /// issue one by one). Ends before `end` and before the first slot a batch has not executed.
    fn bulk_sparse(&mut self, now: u64, members: u32, end: u64) -> Option<(u64, usize)> {
        let rev = self.rev;
        if rev > 64 {
            return None;
        }
        let (mut lo, mut hi, mut seen) = (u64::MAX, 0u64, 0u64);
        let (mut stop, mut rotation) = (end, 0u32);
        let mut m = members;
        while m != 0 {
            let t = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = self.hot[t].ready_at;
            if r >= now + rev {
                stop = stop.min(r);
                continue;
            }
            rotation |= 1 << t;
            let phase = 1u64 << (r % rev);
            if r < now || seen & phase != 0 {
                return None;
            }
            seen |= phase;
            (lo, hi) = (lo.min(r), hi.max(r));
            if self.held_spin & (1 << t) == 0 {
                stop = stop.min(r + u64::from(self.epochs.avail[t]) * rev);
            }
        }
        if rotation == 0 || hi - lo >= rev {
            return None;
        }
        // (Spinners alone count at most `BATCH` periods at once.)
        stop = stop.min(lo + u64::from(BATCH) * rev);
        // (Cut where another tasklet becomes ready: when it has a batch, the count goes on once
        // it has joined.)
        let cut = self.epochs.live & !rotation != 0 || stop == lo + u64::from(BATCH) * rev;
        let (mut total, mut last_at, mut last) = (0u64, 0u64, 0usize);
        let mut m = rotation;
        while m != 0 {
            let t = m.trailing_zeros() as usize;
            m &= m - 1;
            let r = self.hot[t].ready_at;
            if stop <= r {
                continue;
            }
            let q = (stop - r - 1) / rev + 1;
            self.issue_counted(t, q, r + (q - 1) * rev);
            total += q;
            if r + (q - 1) * rev >= last_at {
                last_at = r + (q - 1) * rev;
                last = t;
            }
        }
        if total == 0 {
            return None;
        }
        self.epochs.dirty = cut;
        // The cycles without an issue, as `select`'s clock jumps count them.
        self.run_stats.idle_cycles += last_at + 1 - now - total;
        self.epochs.slots += total;
        Some((last_at + 1, last))
    }

    /// Whether tasklet `t`'s next slot (nothing of which its batch could execute) is an event
    /// the interpreter may execute within the epoch: one that touches no WRAM a live batch of
    /// another tasklet accessed (those a DMA conflicts with are rolled back first). That is an
    /// environment call other than `printf` (which reads WRAM), or a load or store outside the
    /// WRAM (an MRAM access, or a fault). A slot that faults or ends the run is fine: the run
    /// ends with every live batch rolled back (`epoch_abort`).
    #[inline(never)]
    fn event_ready(&mut self, t: usize) -> bool {
        // The slot's ops before its last (register-only ops), on the registers, then undone.
        let regs = self.regs[t];
        let mut i = self.hot[t].pc;
        let last = loop {
            let op = self.ops[i as usize];
            match alu_dest(op) {
                Some(rd) if rd >> 5 == fuse::ALWAYS => {
                    self.plain_op(t, i);
                    i += 1;
                }
                _ => break op,
            }
        };
        let r = std::mem::replace(&mut self.regs[t], regs);
        let x = |i: u8| r[usize::from(i & 31)];
        match last {
            Op::Ecall | Op::EcallSpin { .. } => {
                let call = x(reg::A7);
                if call == ecall::PRINTF {
                    return false;
                }
                if matches!(
                    call,
                    ecall::ATOMIC_ACQUIRE | ecall::ATOMIC_LOCK | ecall::ATOMIC_RELEASE
                ) {
                    // (A live batch of another tasklet that changed the bit goes back first.)
                    if let Ok(b) = Self::atomic_bit(x(reg::A0)) {
                        let others = self.epochs.live_others(self.epochs.bit[b], t);
                        if others != 0 {
                            self.rollback(others);
                        }
                    }
                    return true;
                }
                if call != ecall::DMA_MRAM_TO_WRAM && call != ecall::DMA_WRAM_TO_MRAM {
                    return true;
                }
                let read = call == ecall::DMA_MRAM_TO_WRAM;
                let (a0, a1) = (x(reg::A0), x(reg::A1));
                let (mram, wram) = if read { (a0, a1) } else { (a1, a0) };
                let Ok((d, _)) = self.dma_decode(wram, mram, x(reg::A2)) else {
                    // (It faults.)
                    return true;
                };
                let others = self.epochs.dma_conflicts(t, d.wram, d.size, read);
                if others != 0 {
                    self.rollback(others);
                }
                true
            }
            Op::Lw { rs1, imm, .. }
            | Op::Lh { rs1, imm, .. }
            | Op::Lhu { rs1, imm, .. }
            | Op::Lb { rs1, imm, .. }
            | Op::Lbu { rs1, imm, .. }
            | Op::Sw { rs1, imm, .. }
            | Op::Sh { rs1, imm, .. }
            | Op::Sb { rs1, imm, .. } => {
                let size = match last {
                    Op::Lw { .. } | Op::Sw { .. } => 4,
                    Op::Lh { .. } | Op::Lhu { .. } | Op::Sh { .. } => 2,
                    _ => 1,
                };
                let a = x(rs1).wrapping_add(imm as u32);
                // (An aligned WRAM access stopped the batch on a conflict, handled above.)
                a >= WRAM_SIZE || a & (size - 1) != 0
            }
            _ => false,
        }
    }

    /// Rolls the live batches of the tasklets in `mask` back to their issued slots.
    fn rollback(&mut self, mask: u32) {
        let mut m = mask & self.epochs.live;
        while m != 0 {
            let t = m.trailing_zeros() as usize;
            m &= m - 1;
            let issued = self.epochs.issued[t];
            self.epochs.wasted += u64::from(self.epochs.avail[t]);
            self.epoch_restore(t);
            let e = &mut self.epochs;
            e.live &= !(1 << t);
            e.avail[t] = 0;
            if issued > 0 {
                // The same slots, on the same data: they run in full.
                let done = self.epoch_run(t, issued);
                debug_assert_eq!(done, issued, "a batch ran again differently");
                self.batch_issued(t);
            }
        }
        self.epochs.dirty = true;
    }

    /// Ends the epoch at cycle `now` (`last` being the last issuer): every live batch rolled
    /// back. `None` when nothing changed since cycle `start`.
    #[cold]
    fn sweep_end(&mut self, now: u64, last: usize, start: u64) -> Option<(u64, usize)> {
        // (Judged before the rollbacks of the end, which throw away what any end would.)
        let e = &self.epochs;
        let poor = e.slots < WORTH || e.wasted > WORTH + e.slots / 4 || e.busy();
        self.epoch_abort();
        let e = &mut self.epochs;
        if poor {
            e.wait = e.backoff;
            e.backoff = (e.backoff * 2).min(1 << 16);
        } else {
            // (Halved, not reset: where epochs mostly end early, one good one should not
            // bring back attempts at every turn.)
            e.wait = 1;
            e.backoff = (e.backoff / 2).max(16);
        }
        e.slots = 0;
        e.wasted = 0;
        e.events = 0;
        e.members = 0;
        e.window = 0;
        e.event = None;
        (now != start).then_some((now, last))
    }

    /// Ends the epoch under way, if any: every live batch rolled back to its issued slots.
    pub(super) fn epoch_abort(&mut self) {
        if self.epochs.active {
            self.rollback(self.epochs.live);
            self.epochs.active = false;
        }
    }

    /// Keeps what tasklet `t` has before its batch.
    fn epoch_save(&mut self, t: usize) {
        self.epochs.before[t].clear();
        self.epochs.bits_before[t].clear();
        self.epochs.saved[t] = Saved {
            regs: self.regs[t],
            pc: self.hot[t].pc,
            owed: self.owed[t],
            fused: 0,
            owe: None,
        };
    }

    /// Undoes tasklet `t`'s batch: its stores (in reverse), its registers, pc and what it owes.
    fn epoch_restore(&mut self, t: usize) {
        let s = self.epochs.saved[t];
        // (The granules stay marked as this batch's: a run again stores to them without
        // keeping them again, and another restore restores them from these.)
        for &(at, bytes) in self.epochs.before[t].iter().rev() {
            let at = usize::from(at) * GRANULE;
            self.wram[at..at + GRANULE].copy_from_slice(&bytes);
        }
        for &(b, was) in self.epochs.bits_before[t].iter().rev() {
            let (word, mask) = (usize::from(b) / 64, 1u64 << (b % 64));
            if was {
                self.atomic[word] |= mask;
            } else {
                self.atomic[word] &= !mask;
            }
        }
        self.regs[t] = s.regs;
        self.hot[t].pc = s.pc;
        self.owed[t] = s.owed;
        // (A tasklet with a batch does not spin: it is passive only if it owes slots.)
        let bit = 1u32 << t;
        if s.owed != 0 {
            self.owing |= bit;
            self.passive |= bit;
        } else {
            self.owing &= !bit;
            self.passive &= !bit;
        }
        self.epochs.saved[t].fused = 0;
        self.epochs.saved[t].owe = None;
    }

    /// The atomic-bit call of op `op` (index `i`, an `ecall` whose `a7` asks to acquire, lock
    /// or release a bit) in tasklet `t`'s batch, when no other tasklet can observe the bit
    /// before the slot issues: no tasklet spins on it (its slots read it at their cycles) and
    /// no other live batch changed it (events on it roll such a batch back first,
    /// `event_ready`); and when an acquire finds it clear (a failed one makes the tasklet spin:
    /// the interpreter's). Returns the next op index and the fused pairs of the slot (a lock's
    /// branch back, rule 9); `None`, and nothing changed, otherwise.
    #[inline(always)]
    fn batch_atomic(&mut self, t: usize, i: u32, op: Op) -> Option<(u32, u64)> {
        let r = &self.regs[t];
        let (call, v) = (r[usize::from(reg::A7)], r[usize::from(reg::A0)]);
        let b = Self::atomic_bit(v).ok()?;
        let (word, mask) = (b / 64, 1u64 << (b % 64));
        let was_set = self.atomic[word] & mask != 0;
        let acquire = call != ecall::ATOMIC_RELEASE;
        if acquire && was_set || self.epochs.live_others(self.epochs.bit[b], t) != 0 {
            return None;
        }
        let spin = self.spin_index;
        if (0..self.nr).any(|s| self.hot[s].pc == spin && usize::from(self.spin[s].bit) == b) {
            return None;
        }
        self.epochs.bits_before[t].push((b as u8, was_set));
        self.epochs.bit[b] = self.epochs.mark(t);
        if acquire {
            self.atomic[word] |= mask;
        } else {
            self.atomic[word] &= !mask;
        }
        // (The interpreter's result: 1 when the bit changed.)
        self.regs[t][usize::from(reg::A0)] = u32::from(was_set != acquire);
        Some(match op {
            Op::EcallSpin { lock: true, .. } if call == ecall::ATOMIC_LOCK => (i + 2, 1),
            _ => (i + 1, 0),
        })
    }

    /// Runs up to `k` issue slots of tasklet `t` (its batch); returns the slots run, keeping
    /// their fused pairs (counted once they have issued) in `Epochs::saved`. Stops before a
    /// slot that cannot execute in a batch; its registers, pc, what it owes and WRAM are then
    /// as after the slots run.
    ///
    /// The engines' batches are two functions, chosen here: with both behind one call the
    /// batch interpreter's loop kept its slot count and ops pointer on the stack and ran 14-18 %
    /// slower (docs/performance.md).
    #[inline(always)]
    fn epoch_run(&mut self, t: usize, k: u32) -> u32 {
        match self.epochs.translation {
            Some(code) => self.epoch_run_translated(t, k, code),
            None => self.epoch_run_interpreted(t, k),
        }
    }

    /// `epoch_run` on the batch interpreter.
    #[inline(never)]
    fn epoch_run_interpreted(&mut self, t: usize, k: u32) -> u32 {
        let done = self.epoch_owed(t, k);
        let (done, fused) = self.epoch_slots::<false>(t, done, k);
        self.epochs.saved[t].fused = fused;
        done
    }

    /// `epoch_run` on the program's translated code.
    #[inline(never)]
    fn epoch_run_translated(&mut self, t: usize, k: u32, code: &crate::jit::Cache) -> u32 {
        let (done, fused) = self.epoch_translated(t, k, code);
        self.epochs.saved[t].fused = fused;
        done
    }

    /// `epoch_run`'s slots with the program's translated code (`jit`): each region from the
    /// tasklet's pc runs until it leaves (the next region goes on), its batch has run `k`
    /// slots, or it reaches a slot it does not execute, which the batch interpreter executes
    /// (`epoch_slots` for one slot) or stops at.
    #[inline(always)]
    fn epoch_translated(&mut self, t: usize, k: u32, code: &crate::jit::Cache) -> (u32, u64) {
        use crate::jit::{exit, JitCtx};
        let mut done = self.epoch_owed(t, k);
        let mut fused = 0u64;
        let len = self.len;
        while done < k {
            let pc = self.hot[t].pc;
            if let Some(region) = code.region(self.ops, self.base, len, pc) {
                // (The pointers are taken afresh for each call: nothing else touches the DPU
                // while the translated code runs.)
                let mut ctx =
                    JitCtx::new(&mut self.epochs as *mut Epochs<'_> as *mut std::ffi::c_void);
                ctx.regs = self.regs[t].as_mut_ptr();
                ctx.wram = self.wram.as_mut_ptr();
                ctx.granule = self.epochs.granule.as_mut_ptr();
                ctx.mine = self.epochs.mark(t);
                ctx.stack_lo = self.stack_lo[t];
                ctx.tasklet = t as u32;
                ctx.done = done;
                ctx.limit = k;
                ctx.pc = pc;
                ctx.timing = self.timing;
                // SAFETY: the region was translated from this program's ops for a context of
                // this layout; every access it makes is to the tasklet's registers, WRAM at
                // addresses it checked to be inside it, or the granule of such an address.
                let status = unsafe { region(&mut ctx) };
                self.epochs.engine_use.translated_slots += u64::from(ctx.done - done);
                done = ctx.done;
                fused += ctx.fused;
                self.hot[t].pc = ctx.pc;
                match status {
                    exit::LIMIT => break,
                    exit::LEAVE => continue,
                    exit::OWE => {
                        // (As `epoch_slots` leaves an arithmetic call the batch has no room
                        // for.)
                        self.epochs.saved[t].owe = Some((ctx.owe_at, ctx.owe_slots));
                        break;
                    }
                    _ => {}
                }
                if done >= k {
                    break;
                }
            } else {
                // No region here (not hot yet, or not translatable): the batch interpreter runs
                // the rest of the batch, and its slots count towards translating one.
                let (d, f) = self.epoch_slots::<false>(t, done, k);
                code.warm(pc, d - done);
                self.epochs.engine_use.interpreted_slots += u64::from(d - done);
                return (d, fused + f);
            }
            // The slot at the tasklet's pc: the batch interpreter's, which executes it or stops
            // the batch there.
            let (d, f) = self.epoch_slots::<true>(t, done, k);
            if d == done {
                break;
            }
            self.epochs.engine_use.interpreted_slots += u64::from(d - done);
            done = d;
            fused += f;
            if self.epochs.saved[t].owe.is_some() {
                // (An arithmetic call whose slots go on after the batch ends it.)
                break;
            }
        }
        (done, fused)
    }

    /// The slots tasklet `t` owes that begin its batch (at most `k`); returns them.
    #[inline(always)]
    fn epoch_owed(&mut self, t: usize, k: u32) -> u32 {
        let bit = 1u32 << t;
        // (A spinner's slots are counted, never run.)
        debug_assert!(self.held_spin & bit == 0);
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
        done
    }

    /// The batch interpreter: runs issue slots of tasklet `t` from its pc, having run `done`,
    /// until it has run `k` (`ONE`: until it ran one more) or before a slot it cannot run;
    /// returns the slots run and the fused pairs of those it ran.
    #[inline(always)]
    fn epoch_slots<const ONE: bool>(&mut self, t: usize, mut done: u32, k: u32) -> (u32, u64) {
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
                    let g = ($a as usize / GRANULE) % GRANULES;
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
                    if ONE {
                        break 'slot;
                    }
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
                        x!(rd) = super::op_address(self.base, i + 1);
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
                        x!(rd) = super::op_address(self.base, i + 1);
                        end_slot!(to);
                    }
                    Op::Jr { rs1, imm } => {
                        let dest = x!(rs1).wrapping_add(imm as u32) & !1;
                        let Ok(to) = self.jump_index(dest) else {
                            stop!();
                        };
                        end_slot!(to);
                    }
                    Op::Ecall | Op::EcallSpin { .. }
                        if matches!(
                            x!(reg::A7),
                            ecall::ATOMIC_ACQUIRE | ecall::ATOMIC_LOCK | ecall::ATOMIC_RELEASE
                        ) =>
                    {
                        let Some((to, pair)) = self.batch_atomic(t, i, op) else {
                            stop!();
                        };
                        fused += pair;
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
                                if ONE {
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

/// The granule check that translated code does not settle inline (`jit::translate`):
/// [`Epochs::access`] for the batch of the context's tasklet. Returns 1 when the access may go
/// ahead.
///
/// # Safety
/// `ctx` is the context `Dpu::epoch_translated` made for the running batch: its `epochs`
/// points to the DPU's `Epochs` and its `wram` to the DPU's WRAM, neither otherwise borrowed
/// while the translated code runs.
pub(crate) unsafe extern "C" fn translated_access(
    ctx: *mut crate::jit::JitCtx,
    addr: u32,
    store: u32,
) -> u32 {
    // SAFETY: as the function's contract says.
    unsafe {
        let c = &*ctx;
        let epochs = &mut *(c.epochs as *mut Epochs<'_>);
        let wram = &*(c.wram as *const [u8; WS]);
        u32::from(epochs.access(wram, c.tasklet as usize, addr, store != 0))
    }
}
