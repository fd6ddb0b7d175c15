//! The observation seam: what a developer tool (debugger, tracer, profiler, checkers) sees of
//! a DPU run, and the little it may change.
//!
//! A run with a probe ([`crate::run_probed`]) is the interpreter without its shortcuts
//! (`Program::without_shortcuts`: no epochs, no slots executed ahead, no translated code), so
//! that every issue slot happens at its cycle and the probe sees the machine as it is at that
//! cycle. Results, cycles and every statistic are those of a run without a probe unless the
//! probe holds a tasklet back ([`Control::Hold`]) or writes registers or memory.
//!
//! A run without a probe pays nothing: the interpreter loop is compiled twice, and only the
//! probed copy has the calls (`exec::Dpu::run_loop::<PROBED>`).
//!
//! Each issue slot of the run reaches the probe exactly once, as [`Probe::before_issue`] then
//! (unless held) [`Probe::after_issue`]; so the number of slots a probe sees is the run's
//! `instructions`, and the slots plus the idle cycles ([`Probe::idle`]) are its `cycles`.

pub use crate::exec::view::DpuView;
use crate::map::{MRAM_BASE, WRAM_SIZE};
use crate::Fault;

/// The memory an access touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    Wram,
    Mram,
}

impl Space {
    /// The space of DPU data address `addr` and the offset into it, as loads and stores see
    /// it (`None`: neither memory).
    pub fn of(addr: u32) -> Option<(Space, u32)> {
        if addr < WRAM_SIZE {
            Some((Space::Wram, addr))
        } else if addr >= MRAM_BASE {
            Some((Space::Mram, addr - MRAM_BASE))
        } else {
            None
        }
    }

    /// The DPU data address of `offset` in this space (the address a program uses).
    pub fn address(self, offset: u32) -> u32 {
        match self {
            Space::Wram => offset,
            Space::Mram => MRAM_BASE.wrapping_add(offset),
        }
    }
}

/// One issue slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The cycle it issues in.
    pub cycle: u64,
    pub tasklet: u32,
    /// Byte address (IRAM) of the slot's first instruction. For the further slots of an
    /// arithmetic routine (`owed`), the address of the environment call that started it.
    pub pc: u32,
    /// The slot is one of the further issue slots of an arithmetic environment call (see
    /// `crate::arith`), which executes no instruction of its own.
    pub owed: bool,
}

/// How an access was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// A load or store instruction.
    Op,
    /// One side of a DMA transfer (`mram_read`, `mram_write`).
    Dma,
}

/// A successful access to WRAM or MRAM by a tasklet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub cycle: u64,
    pub tasklet: u32,
    /// Byte address of the instruction that made it.
    pub pc: u32,
    pub space: Space,
    /// Offset into the space (the bytes `offset..offset + size`).
    pub offset: u32,
    pub size: u32,
    pub write: bool,
    pub kind: AccessKind,
}

/// A synchronisation event: what orders tasklets' accesses (the SDK's mutexes, semaphores,
/// barriers and handshakes are built from these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncEvent {
    /// An acquire of atomic bit `bit` (0..256); `acquired` when the bit was clear and is now
    /// the tasklet's.
    Acquire { bit: u32, acquired: bool },
    /// A release of atomic bit `bit`.
    Release { bit: u32 },
    /// The tasklet went to sleep (`stop`), or consumed a wake-up sent earlier (`slept` false).
    Sleep { slept: bool },
    /// The tasklet resumed `target` (`resume`): `woke` when it was asleep; else the wake-up
    /// is kept for its next sleep (or lost if it exited).
    Resume { target: u32, woke: bool },
    /// The tasklet exited.
    Exit,
}

/// What the probe asks of a slot it sees before it issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Control {
    /// Issue it.
    #[default]
    Go,
    /// Do not issue it now: the tasklet gives up this cycle (the cycle has no issue, and is
    /// reported as idle with the next idle span) and is asked again at its next turn. This
    /// changes the schedule (a debugger stepping one tasklet with the others frozen).
    Hold,
}

/// The scheduling state of a tasklet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskletState {
    /// Running; it may issue from cycle `ready_at` (later than the revolver allows when it
    /// waits for its DMA).
    Running {
        ready_at: u64,
    },
    Sleeping,
    Exited,
}

/// A probe: called by the interpreter at each issue slot, memory access and synchronisation
/// event of one DPU run. Every method has an empty default.
pub trait Probe: Send {
    /// Before slot `slot` issues; `dpu` shows (and may change) the machine at that cycle.
    /// May block (a debugger waiting for its user): time stopped is not virtual time.
    fn before_issue(&mut self, _dpu: &mut DpuView<'_, '_>, _slot: &Slot) -> Control {
        Control::Go
    }

    /// After slot `slot` issued: its registers and memory writes are done. `ops` is the
    /// number of instructions it executed (2 for a fused pair, 0 for an owed slot).
    fn after_issue(&mut self, _dpu: &mut DpuView<'_, '_>, _slot: &Slot, _ops: u32) {}

    /// Cycles `from..to` had no issue: no tasklet was ready (each waited for the revolver,
    /// its DMA, a wake-up, or had exited). Called before the slot at `to`.
    fn idle(&mut self, _dpu: &mut DpuView<'_, '_>, _from: u64, _to: u64) {}

    /// A successful WRAM or MRAM access (called as it is made, within its slot).
    fn access(&mut self, _access: &Access) {}

    /// A synchronisation event of tasklet `tasklet` at `pc` in cycle `cycle`.
    fn sync(&mut self, _cycle: u64, _tasklet: u32, _pc: u32, _event: &SyncEvent) {}

    /// The run is about to end with `fault`, raised by `tasklet` at `pc`; `dpu` shows the
    /// machine as the fault left it (may block, as `before_issue`).
    fn fault(&mut self, _dpu: &mut DpuView<'_, '_>, _tasklet: u32, _pc: u32, _fault: &Fault) {}
}

/// A probe that sees nothing.
pub struct NoProbe;

impl Probe for NoProbe {}
