//! What the GDB server thread and a stopped DPU's probe say to each other.
//!
//! The DPU's machine state lives on the thread that runs the DPU; while the DPU is stopped
//! that thread waits in its probe for [`Cmd`]s, each answered on its own reply channel. The
//! server thread speaks the Remote Serial Protocol (`gdbstub`) and turns packets into
//! commands. The probe tells the server of each stop and of the run's end with [`Event`]s.

use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;

use gdbstub::common::Signal;
use gdbstub::target::ext::breakpoints::WatchKind;
use openpim_engine::probe::TaskletState;
use openpim_runtime::observe::RunSite;

/// What a resumed tasklet does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Runs as the machine schedules it.
    Continue,
    /// Issues one slot, then the DPU stops.
    Step,
    /// Does not issue (GDB's scheduler-locking): its slots are held back, which changes the
    /// schedule.
    Frozen,
}

/// The actions of a resume, per tasklet.
#[derive(Clone, Debug)]
pub struct Plan(pub Vec<Action>);

impl Plan {
    pub fn action(&self, tasklet: u32) -> Action {
        self.0
            .get(tasklet as usize)
            .copied()
            .unwrap_or(Action::Continue)
    }
}

/// Why the DPU stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// Before the first instruction of the launch, after a step, or when nothing can run.
    Trap,
    SwBreak,
    HwBreak,
    Watch {
        kind: WatchKind,
        addr: u32,
    },
    /// The debugger interrupted (Ctrl-C).
    Interrupt,
    /// The DPU faulted (the signal GDB shows).
    Fault(Signal),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    pub tasklet: u32,
    pub kind: StopKind,
}

/// A breakpoint or watchpoint change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    Break {
        addr: u32,
        hw: bool,
    },
    Watch {
        addr: u32,
        len: u32,
        kind: WatchKind,
    },
}

/// A request to the stopped DPU.
pub enum Cmd {
    /// x0..x31 and the pc of a tasklet (`None`: no such tasklet).
    Regs {
        tasklet: u32,
        reply: Sender<Option<([u32; 32], u32)>>,
    },
    SetRegs {
        tasklet: u32,
        regs: [u32; 32],
        pc: u32,
        reply: Sender<bool>,
    },
    /// The readable bytes from `addr` (fewer than `len` where a memory ends).
    Read {
        addr: u32,
        len: u32,
        reply: Sender<Vec<u8>>,
    },
    Write {
        addr: u32,
        data: Vec<u8>,
        reply: Sender<bool>,
    },
    Threads {
        reply: Sender<Vec<TaskletState>>,
    },
    Point {
        point: Point,
        add: bool,
        reply: Sender<bool>,
    },
    /// The DPU's cycle and each tasklet's state, pc and instructions issued, as text lines
    /// (`monitor info`).
    Info {
        reply: Sender<Vec<String>>,
    },
    Resume(Plan),
    /// The debugger left (detach, kill or a dropped connection): run on, never stop again.
    Detach,
}

/// What the DPU tells the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Stopped(Stop),
    /// The run ended (`Some`: with a fault, as this signal).
    Ended(Option<Signal>),
}

/// Asked of the DPU while it runs.
#[derive(Default)]
pub struct Flags {
    /// Stop at the next slot (Ctrl-C).
    pub interrupt: AtomicBool,
    /// The debugger left: never stop again.
    pub detached: AtomicBool,
}

/// A DPU that stopped for the first time and waits for a debugger: the server serves these
/// one at a time.
pub struct Attach {
    pub site: RunSite,
    pub nr_tasklets: u32,
    pub first: Stop,
    pub cmds: Sender<Cmd>,
    pub events: Receiver<Event>,
    pub flags: Arc<Flags>,
}
