//! The race detector: a happens-before detector in the style of ThreadSanitizer (FastTrack's
//! epochs) over one DPU run's accesses and synchronisation events.
//!
//! Each tasklet has a vector clock. The DPU runtime builds every synchronisation primitive
//! from two hardware mechanisms, and those are the only edges modelled:
//! - atomic bits: a release of bit `b` publishes the releaser's clock into `b`, a successful
//!   acquire of `b` joins it (mutexes, virtual mutexes, and the locks inside barriers,
//!   semaphores, handshakes and `mem_alloc`);
//! - sleep and resume: a `resume` hands the resumer's clock to the tasklet it wakes, at once
//!   when that tasklet sleeps, else when it next goes to sleep and consumes the wake-up
//!   (barriers: the last arrival resumes every waiter after taking the barrier's lock that
//!   every earlier arrival released; semaphores and handshakes: the giver or notifier
//!   resumes the sleeper).
//!
//! A launch is a boundary: every run starts with fresh clocks and shadow memory (the host
//! orders launches). Each byte of WRAM and MRAM has a shadow cell: its last write as an epoch
//! (tasklet, clock, instruction) and its reads since, one epoch while they are ordered, a
//! per-tasklet set once two are concurrent. Two accesses to a byte by different tasklets, at
//! least one a write, neither ordered before the other, are a race; each pair of instructions
//! is reported once per run.

use std::collections::HashSet;

use openpim_engine::probe::{Space, SyncEvent};

use crate::vclock::{VClock, MAX_TASKLETS};

const NOBODY: u8 = 0xff;
const SHARED: u8 = 0xfe;
const PAGE_BITS: u32 = 10;
const PAGE: usize = 1 << PAGE_BITS;
const WRAM_PAGES: usize = (openpim_engine::map::WRAM_SIZE as usize) >> PAGE_BITS;
const MRAM_PAGES: usize = (openpim_engine::map::MRAM_SIZE as usize) >> PAGE_BITS;

/// One byte's history. Instructions are kept as indices into the program's text (IRAM holds
/// at most 6,144 instructions, so 16 bits do).
#[derive(Clone, Copy)]
struct Cell {
    w_t: u8,
    /// `NOBODY`, a tasklet (one read epoch), or `SHARED` (`r_c` indexes the read sets).
    r_t: u8,
    w_pc: u16,
    r_pc: u16,
    w_c: u32,
    r_c: u32,
}

const EMPTY: Cell = Cell {
    w_t: NOBODY,
    r_t: NOBODY,
    w_pc: 0,
    r_pc: 0,
    w_c: 0,
    r_c: 0,
};

/// The reads of a byte by concurrent tasklets: per tasklet its last read's clock (0: none)
/// and instruction.
type ReadSet = [(u32, u16); MAX_TASKLETS];

/// Shadow cells of one memory, allocated by page as it is touched.
struct Shadow {
    pages: Vec<Option<Box<[Cell]>>>,
}

impl Shadow {
    fn new(pages: usize) -> Shadow {
        Shadow {
            pages: (0..pages).map(|_| None).collect(),
        }
    }

    /// The cells of the page holding `offset` (`None`: past the memory).
    #[inline]
    fn page(&mut self, offset: u32) -> Option<&mut [Cell]> {
        let page = self.pages.get_mut((offset >> PAGE_BITS) as usize)?;
        Some(page.get_or_insert_with(|| vec![EMPTY; PAGE].into_boxed_slice()))
    }
}

/// One side of a race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub tasklet: u32,
    /// Byte address of the instruction.
    pub pc: u32,
    pub write: bool,
}

/// A race found: the earlier access, the later one, and the first byte they share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Race {
    pub space: Space,
    pub offset: u32,
    pub earlier: Side,
    pub later: Side,
}

/// The race detector of one DPU run.
pub struct RaceDetector {
    /// IRAM address of the first instruction (instructions are kept as indices from it).
    base: u32,
    clocks: Vec<VClock>,
    /// The clock each atomic bit carries from its releases to its acquires.
    bits: Vec<Option<VClock>>,
    /// Wake-ups sent to running tasklets, to be joined when they next sleep.
    wakeups: Vec<Option<VClock>>,
    wram: Shadow,
    mram: Shadow,
    read_sets: Vec<ReadSet>,
    seen: HashSet<(u16, u16)>,
    pub races: Vec<Race>,
}

impl RaceDetector {
    pub fn new(base: u32) -> RaceDetector {
        let mut clocks = vec![VClock::default(); MAX_TASKLETS];
        for (t, c) in clocks.iter_mut().enumerate() {
            c.0[t] = 1;
        }
        RaceDetector {
            base,
            clocks,
            bits: vec![None; 256],
            wakeups: vec![None; MAX_TASKLETS],
            wram: Shadow::new(WRAM_PAGES),
            mram: Shadow::new(MRAM_PAGES),
            read_sets: Vec::new(),
            seen: HashSet::new(),
            races: Vec::new(),
        }
    }

    fn tick(&mut self, t: usize) {
        self.clocks[t].0[t] = self.clocks[t].0[t].wrapping_add(1);
    }

    /// A synchronisation event of tasklet `t`.
    pub fn sync(&mut self, t: u32, event: &SyncEvent) {
        let t = t as usize;
        if t >= MAX_TASKLETS {
            return;
        }
        match *event {
            SyncEvent::Acquire {
                bit,
                acquired: true,
            } => {
                if let Some(c) = self.bits.get(bit as usize).copied().flatten() {
                    self.clocks[t].join(&c);
                }
            }
            SyncEvent::Acquire { .. } => {}
            SyncEvent::Release { bit } => {
                if let Some(slot) = self.bits.get_mut(bit as usize) {
                    slot.get_or_insert_with(VClock::default)
                        .join(&self.clocks[t]);
                }
                self.tick(t);
            }
            SyncEvent::Resume { target, woke } => {
                let target = target as usize;
                if target < MAX_TASKLETS && target != t {
                    let from = self.clocks[t];
                    if woke {
                        self.clocks[target].join(&from);
                    } else {
                        self.wakeups[target]
                            .get_or_insert_with(VClock::default)
                            .join(&from);
                    }
                }
                self.tick(t);
            }
            SyncEvent::Sleep { .. } => {
                // A wake-up sent while the tasklet ran is consumed by this sleep (returning
                // at once, or later, when the sleep ends: either way nothing of the tasklet
                // runs before it).
                if let Some(c) = self.wakeups[t].take() {
                    self.clocks[t].join(&c);
                }
            }
            SyncEvent::Exit => {}
        }
    }

    /// An access of tasklet `t` by the instruction at `pc`.
    pub fn access(&mut self, t: u32, pc: u32, space: Space, offset: u32, size: u32, write: bool) {
        let tu = t as usize;
        if tu >= MAX_TASKLETS {
            return;
        }
        let pc16 = (pc.wrapping_sub(self.base) >> 2) as u16;
        let me = Me {
            t: t as u8,
            clock: self.clocks[tu],
            pc: pc16,
        };
        let shadow = match space {
            Space::Wram => &mut self.wram,
            Space::Mram => &mut self.mram,
        };
        let end = offset.saturating_add(size);
        let mut off = offset;
        // Page by page: one page lookup per run of bytes.
        while off < end {
            let run_end = end.min(((off >> PAGE_BITS) + 1) << PAGE_BITS);
            let Some(page) = shadow.page(off) else {
                break;
            };
            for o in off..run_end {
                let cell = &mut page[o as usize & (PAGE - 1)];
                let found = if write {
                    me.write(cell, &self.read_sets)
                } else {
                    me.read(cell, &mut self.read_sets)
                };
                if let Some((u, upc, uwrite)) = found {
                    let key = (upc.min(pc16), upc.max(pc16));
                    if self.seen.insert(key) {
                        self.races.push(Race {
                            space,
                            offset: o,
                            earlier: Side {
                                tasklet: u32::from(u),
                                pc: self.base.wrapping_add(u32::from(upc) << 2),
                                write: uwrite,
                            },
                            later: Side {
                                tasklet: t,
                                pc,
                                write,
                            },
                        });
                    }
                }
            }
            off = run_end;
        }
    }
}

/// The accessing tasklet, its clock and instruction.
struct Me {
    t: u8,
    clock: VClock,
    pc: u16,
}

impl Me {
    fn now(&self) -> u32 {
        self.clock.0[self.t as usize]
    }

    /// The last write, if it races with this access.
    fn against_write(&self, cell: &Cell) -> Option<(u8, u16, bool)> {
        (cell.w_t != NOBODY && cell.w_t != self.t && !self.clock.covers(cell.w_t, cell.w_c))
            .then_some((cell.w_t, cell.w_pc, true))
    }

    /// A write of the byte: the earlier access it races with, if any.
    fn write(&self, cell: &mut Cell, read_sets: &[ReadSet]) -> Option<(u8, u16, bool)> {
        let now = self.now();
        if cell.w_t == self.t && cell.w_c == now && cell.r_t == NOBODY {
            return None;
        }
        let mut found = self.against_write(cell);
        if found.is_none() {
            if cell.r_t == SHARED {
                found = read_sets[cell.r_c as usize]
                    .iter()
                    .enumerate()
                    .find(|&(u, &(c, _))| {
                        u != self.t as usize && c != 0 && !self.clock.covers(u as u8, c)
                    })
                    .map(|(u, &(_, rpc))| (u as u8, rpc, false));
            } else if cell.r_t != NOBODY
                && cell.r_t != self.t
                && !self.clock.covers(cell.r_t, cell.r_c)
            {
                found = Some((cell.r_t, cell.r_pc, false));
            }
        }
        cell.w_t = self.t;
        cell.w_c = now;
        cell.w_pc = self.pc;
        cell.r_t = NOBODY;
        found
    }

    /// A read of the byte: the earlier write it races with, if any.
    fn read(&self, cell: &mut Cell, read_sets: &mut Vec<ReadSet>) -> Option<(u8, u16, bool)> {
        let now = self.now();
        if cell.r_t == self.t && cell.r_c == now {
            return None;
        }
        let found = self.against_write(cell);
        if cell.r_t == SHARED {
            read_sets[cell.r_c as usize][self.t as usize] = (now, self.pc);
        } else if cell.r_t == NOBODY || cell.r_t == self.t || self.clock.covers(cell.r_t, cell.r_c)
        {
            cell.r_t = self.t;
            cell.r_c = now;
            cell.r_pc = self.pc;
        } else {
            let mut set: ReadSet = [(0, 0); MAX_TASKLETS];
            set[cell.r_t as usize] = (cell.r_c, cell.r_pc);
            set[self.t as usize] = (now, self.pc);
            cell.r_t = SHARED;
            cell.r_c = read_sets.len() as u32;
            read_sets.push(set);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: u32 = 0x8000_0000;

    #[test]
    fn unordered_write_and_read_race_once() {
        let mut d = RaceDetector::new(BASE);
        d.access(0, BASE + 4, Space::Wram, 100, 4, true);
        d.access(1, BASE + 8, Space::Wram, 100, 4, false);
        d.access(1, BASE + 8, Space::Wram, 100, 4, false);
        assert_eq!(d.races.len(), 1);
        assert_eq!(d.races[0].earlier.tasklet, 0);
        assert!(d.races[0].earlier.write);
        assert!(!d.races[0].later.write);
    }

    #[test]
    fn release_acquire_orders() {
        let mut d = RaceDetector::new(BASE);
        d.access(0, BASE, Space::Wram, 64, 4, true);
        d.sync(0, &SyncEvent::Release { bit: 3 });
        d.sync(
            1,
            &SyncEvent::Acquire {
                bit: 3,
                acquired: true,
            },
        );
        d.access(1, BASE + 4, Space::Wram, 64, 4, true);
        assert!(d.races.is_empty());
    }

    #[test]
    fn failed_acquire_does_not_order() {
        let mut d = RaceDetector::new(BASE);
        d.access(0, BASE, Space::Mram, 64, 8, true);
        d.sync(0, &SyncEvent::Release { bit: 3 });
        d.sync(
            1,
            &SyncEvent::Acquire {
                bit: 4,
                acquired: true,
            },
        );
        d.access(1, BASE + 4, Space::Mram, 68, 4, false);
        assert_eq!(d.races.len(), 1);
        assert_eq!(d.races[0].offset, 68);
    }

    #[test]
    fn resume_orders_the_woken_and_pending_wakeups() {
        let mut d = RaceDetector::new(BASE);
        d.access(0, BASE, Space::Wram, 8, 1, true);
        d.sync(
            0,
            &SyncEvent::Resume {
                target: 1,
                woke: false,
            },
        );
        d.sync(1, &SyncEvent::Sleep { slept: false });
        d.access(1, BASE + 4, Space::Wram, 8, 1, false);
        d.access(2, BASE + 8, Space::Wram, 9, 1, true);
        d.sync(
            2,
            &SyncEvent::Resume {
                target: 3,
                woke: true,
            },
        );
        d.access(3, BASE + 12, Space::Wram, 9, 1, true);
        assert!(d.races.is_empty());
    }

    #[test]
    fn concurrent_reads_then_a_write_race() {
        let mut d = RaceDetector::new(BASE);
        d.access(0, BASE, Space::Wram, 8, 1, false);
        d.access(1, BASE + 4, Space::Wram, 8, 1, false);
        d.sync(0, &SyncEvent::Release { bit: 0 });
        d.sync(
            2,
            &SyncEvent::Acquire {
                bit: 0,
                acquired: true,
            },
        );
        // Ordered after tasklet 0's read, not after tasklet 1's.
        d.access(2, BASE + 8, Space::Wram, 8, 1, true);
        assert_eq!(d.races.len(), 1);
        assert_eq!(d.races[0].earlier.tasklet, 1);
    }
}
