//! The DPU side of the GDB server: a probe that stops the DPU (at its first slot, a
//! breakpoint, a watchpoint, after a step, on Ctrl-C or at a fault) and, while stopped,
//! answers the server's commands from the machine state.
//!
//! Stopping happens inside the probe's callbacks, between issue slots: the DPU's thread
//! waits there and virtual time does not move, so a session that only stops and continues
//! leaves cycles and results as a run without the debugger. Only frozen tasklets
//! ([`Action::Frozen`], GDB's scheduler-locking) change the schedule; such a run is
//! reported as stepped (`RunObserver::changed_schedule`: the report's `launches[].stepped`).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

use gdbstub::common::Signal;
use gdbstub::target::ext::breakpoints::WatchKind;
use openpim_engine::map::{MRAM_BASE, WRAM_SIZE};
use openpim_engine::probe::{Control, DpuView, Probe, Slot, Space, TaskletState};
use openpim_engine::{Fault, RunOutcome};
use openpim_runtime::observe::{RunObserver, RunSite};

use super::link::{Action, Attach, Cmd, Event, Flags, Plan, Point, Stop, StopKind};

/// Where the probe is in its session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Not stopped yet; stops only at a fault (`--gdb-on-fault`).
    OnFault,
    /// Stops before the first slot, then as the debugger asks.
    Served,
    /// No debugger (detached, or the server is gone): runs on.
    Free,
}

/// A connection to the server, once the DPU has stopped for the first time.
struct Session {
    cmds: Receiver<Cmd>,
    events: Sender<Event>,
    flags: Arc<Flags>,
}

#[derive(Clone, Copy)]
struct Watch {
    addr: u32,
    len: u32,
    kind: WatchKind,
}

pub(crate) struct GdbProbe {
    site: RunSite,
    attach: Sender<Attach>,
    mode: Mode,
    session: Option<Session>,
    first: bool,
    plan: Plan,
    breaks: Vec<(u32, bool)>,
    watches: Vec<Watch>,
    /// A stop decided during a slot (step done, watchpoint), taken at the next slot.
    pending: Option<Stop>,
    /// A slot was held back: the schedule is no longer the unobserved one.
    held: bool,
    /// Tasklets that issued a slot since the last resume (bit per tasklet).
    moved: u32,
}

/// The signal GDB shows for a fault.
fn signal_of(fault: &Fault) -> Signal {
    match fault {
        Fault::IllegalInstruction { .. } => Signal::SIGILL,
        Fault::Breakpoint => Signal::SIGTRAP,
        Fault::Misaligned { .. } | Fault::IramMisaligned { .. } | Fault::DmaMisaligned { .. } => {
            Signal::SIGBUS
        }
        Fault::DivisionByZero => Signal::SIGFPE,
        Fault::WramOutOfRange { .. }
        | Fault::MramOutOfRange { .. }
        | Fault::BadAddress { .. }
        | Fault::IramOutOfRange { .. }
        | Fault::DmaOutOfRange { .. }
        | Fault::StackOverflow { .. } => Signal::SIGSEGV,
        _ => Signal::SIGABRT,
    }
}

impl GdbProbe {
    pub(crate) fn new(site: &RunSite, serve: bool, attach: Sender<Attach>) -> Self {
        GdbProbe {
            site: site.clone(),
            attach,
            mode: if serve { Mode::Served } else { Mode::OnFault },
            session: None,
            first: serve,
            plan: Plan(Vec::new()),
            breaks: Vec::new(),
            watches: Vec::new(),
            pending: None,
            held: false,
            moved: 0,
        }
    }

    /// Stops the DPU with `stop` and serves the debugger until it resumes or leaves.
    fn stop(&mut self, view: &mut DpuView<'_, '_>, stop: Stop) {
        if self.session.is_none() {
            let (cmd_tx, cmd_rx) = channel();
            let (ev_tx, ev_rx) = channel();
            let flags = Arc::new(Flags::default());
            let attach = Attach {
                site: self.site.clone(),
                nr_tasklets: view.nr_tasklets(),
                first: stop,
                cmds: cmd_tx,
                events: ev_rx,
                flags: Arc::clone(&flags),
            };
            if self.attach.send(attach).is_err() {
                self.mode = Mode::Free;
                return;
            }
            self.mode = Mode::Served;
            self.session = Some(Session {
                cmds: cmd_rx,
                events: ev_tx,
                flags,
            });
        } else if let Some(s) = &self.session {
            if s.events.send(Event::Stopped(stop)).is_err() {
                self.mode = Mode::Free;
                return;
            }
        }
        loop {
            let Some(cmd) = self.session.as_ref().and_then(|s| s.cmds.recv().ok()) else {
                self.mode = Mode::Free;
                return;
            };
            match cmd {
                Cmd::Regs { tasklet, reply } => {
                    let r = view.regs(tasklet).map(|r| (*r, view.pc(tasklet)));
                    let _ = reply.send(r);
                }
                Cmd::SetRegs {
                    tasklet,
                    regs,
                    pc,
                    reply,
                } => {
                    let ok = tasklet < view.nr_tasklets()
                        && (view.pc(tasklet) == pc || view.set_pc(tasklet, pc));
                    if ok {
                        for (r, v) in regs.iter().enumerate() {
                            view.set_reg(tasklet, r as u32, *v);
                        }
                    }
                    let _ = reply.send(ok);
                }
                Cmd::Read { addr, len, reply } => {
                    let _ = reply.send(self.read(view, addr, len));
                }
                Cmd::Write { addr, data, reply } => {
                    let _ = reply.send(write(view, addr, &data));
                }
                Cmd::Threads { reply } => {
                    let states = (0..view.nr_tasklets()).map(|t| view.state(t)).collect();
                    let _ = reply.send(states);
                }
                Cmd::Point { point, add, reply } => {
                    let _ = reply.send(self.change_point(point, add));
                }
                Cmd::Info { reply } => {
                    let _ = reply.send(self.info(view));
                }
                Cmd::Resume(plan) => {
                    self.plan = plan;
                    self.moved = 0;
                    return;
                }
                Cmd::Detach => {
                    self.mode = Mode::Free;
                    return;
                }
            }
        }
    }

    /// `monitor info`: where the DPU is in its launch.
    fn info(&self, view: &DpuView<'_, '_>) -> Vec<String> {
        let program = &self.site.program;
        let mut lines = vec![format!(
            "DPU {}.{} ({}), cycle {}, {} tasklets",
            self.site.rank,
            self.site.dpu,
            program.origin().unwrap_or("program from memory"),
            view.cycle(),
            view.nr_tasklets()
        )];
        for t in 0..view.nr_tasklets() {
            let state = match view.state(t) {
                TaskletState::Running { ready_at } if ready_at > view.cycle() => {
                    format!("running (may issue from cycle {ready_at})")
                }
                TaskletState::Running { .. } => "running".to_string(),
                TaskletState::Sleeping => "sleeping".to_string(),
                TaskletState::Exited => "exited".to_string(),
            };
            let pc = view.pc(t);
            lines.push(format!(
                "tasklet {t}: {state}, pc {pc:#010x} {}, {} instructions issued",
                program.function_at(pc).unwrap_or_else(|| "?".into()),
                view.issued(t)
            ));
        }
        lines
    }

    fn change_point(&mut self, point: Point, add: bool) -> bool {
        match (point, add) {
            (Point::Break { addr, hw }, true) => self.breaks.push((addr, hw)),
            (Point::Break { addr, hw }, false) => {
                let Some(i) = self.breaks.iter().position(|b| *b == (addr, hw)) else {
                    return false;
                };
                self.breaks.swap_remove(i);
            }
            (Point::Watch { addr, len, kind }, true) => {
                self.watches.push(Watch { addr, len, kind })
            }
            (Point::Watch { addr, len, kind }, false) => {
                let Some(i) = self
                    .watches
                    .iter()
                    .position(|w| (w.addr, w.len, w.kind) == (addr, len, kind))
                else {
                    return false;
                };
                self.watches.swap_remove(i);
            }
        }
        true
    }

    /// The bytes GDB reads at `addr`: WRAM, MRAM and IRAM at the linker script's addresses.
    fn read(&self, view: &DpuView<'_, '_>, addr: u32, len: u32) -> Vec<u8> {
        let text_base = self.site.program.text_base();
        let (mem, off): (&[u8], u32) = if addr < WRAM_SIZE {
            (view.wram(), addr)
        } else if addr >= MRAM_BASE && addr - MRAM_BASE < view.mram().len() as u32 {
            (view.mram(), addr - MRAM_BASE)
        } else if addr >= text_base {
            (self.site.program.text(), addr - text_base)
        } else {
            return Vec::new();
        };
        let start = (off as usize).min(mem.len());
        let end = start.saturating_add(len as usize).min(mem.len());
        mem[start..end].to_vec()
    }

    /// The watchpoint the slot about to issue triggers, if any (RISC-V watchpoints stop
    /// before the accessing instruction: [`super::access`]).
    fn watch_hit(&self, view: &DpuView<'_, '_>, slot: &Slot) -> Option<StopKind> {
        if self.watches.is_empty() {
            return None;
        }
        let regs = view.regs(slot.tasklet)?;
        let program = &self.site.program;
        let word = |pc: u32| {
            let off = pc.checked_sub(program.text_base())? as usize;
            let b = program.text().get(off..off.checked_add(4)?)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        for (addr, size, is_write) in super::access::of_slot(slot.pc, word, regs) {
            let end = addr.saturating_add(size);
            for w in &self.watches {
                let wants = match w.kind {
                    WatchKind::Write => is_write,
                    WatchKind::Read => !is_write,
                    WatchKind::ReadWrite => true,
                };
                if wants && addr < w.addr.saturating_add(w.len) && w.addr < end {
                    return Some(StopKind::Watch {
                        kind: w.kind,
                        addr: w.addr.max(addr),
                    });
                }
            }
        }
        None
    }

    /// A stop for the tasklets that are resumed, when none of them can run: frozen tasklets
    /// would otherwise be held back forever.
    fn stuck(&self, view: &DpuView<'_, '_>) -> Option<Stop> {
        let any_runs = (0..view.nr_tasklets()).any(|t| {
            self.plan.action(t) != Action::Frozen
                && matches!(view.state(t), TaskletState::Running { .. })
        });
        let first_resumed =
            (0..view.nr_tasklets()).find(|&t| self.plan.action(t) != Action::Frozen);
        (!any_runs).then(|| Stop {
            tasklet: first_resumed.unwrap_or(0),
            kind: StopKind::Trap,
        })
    }
}

/// Writes WRAM or MRAM (IRAM is the program's and stays as loaded).
fn write(view: &mut DpuView<'_, '_>, addr: u32, data: &[u8]) -> bool {
    let len = data.len() as u32;
    let (mem, off) = match Space::of(addr) {
        Some((Space::Wram, off)) => (view.wram_mut(), off),
        Some((Space::Mram, off)) => (view.mram_mut(), off),
        None => return false,
    };
    let start = off as usize;
    match start.checked_add(len as usize) {
        Some(end) if end <= mem.len() => {
            mem[start..end].copy_from_slice(data);
            true
        }
        _ => false,
    }
}

impl Probe for GdbProbe {
    fn before_issue(&mut self, view: &mut DpuView<'_, '_>, slot: &Slot) -> Control {
        match self.mode {
            Mode::Free | Mode::OnFault => return Control::Go,
            Mode::Served => {}
        }
        let t = slot.tasklet;
        if self.first {
            self.first = false;
            self.stop(
                view,
                Stop {
                    tasklet: t,
                    kind: StopKind::Trap,
                },
            );
        } else if let Some(s) = self.pending.take() {
            self.stop(view, s);
        } else if self
            .session
            .as_ref()
            .is_some_and(|s| s.flags.interrupt.swap(false, Ordering::AcqRel))
        {
            self.stop(
                view,
                Stop {
                    tasklet: t,
                    kind: StopKind::Interrupt,
                },
            );
        }
        if let Some(s) = &self.session {
            if s.flags.detached.load(Ordering::Acquire) {
                self.mode = Mode::Free;
            }
        }
        if self.mode == Mode::Free {
            return Control::Go;
        }
        if !slot.owed && self.plan.action(t) != Action::Frozen {
            if let Some(&(_, hw)) = self.breaks.iter().find(|b| b.0 == slot.pc) {
                let kind = if hw {
                    StopKind::HwBreak
                } else {
                    StopKind::SwBreak
                };
                self.stop(view, Stop { tasklet: t, kind });
            } else if let Some(kind) = self.watch_hit(view, slot) {
                self.stop(view, Stop { tasklet: t, kind });
            }
        }
        if self.mode == Mode::Free {
            return Control::Go;
        }
        if self.plan.action(t) == Action::Frozen {
            // GDB steps one tasklet over an instruction with a temporary breakpoint after it
            // and only that tasklet resumed (software single-step): once it has moved onto
            // a breakpoint it has reached it, so stop now rather than hold the others back.
            let reached = (0..view.nr_tasklets()).find(|&r| {
                self.moved & (1 << r) != 0
                    && self.plan.action(r) == Action::Continue
                    && self.breaks.iter().any(|b| b.0 == view.pc(r))
            });
            if let Some(r) = reached {
                self.stop(
                    view,
                    Stop {
                        tasklet: r,
                        kind: StopKind::SwBreak,
                    },
                );
                if self.mode == Mode::Free || self.plan.action(t) != Action::Frozen {
                    return Control::Go;
                }
            }
            self.held = true;
            if let Some(s) = self.stuck(view) {
                self.stop(view, s);
                if self.mode == Mode::Free || self.plan.action(t) != Action::Frozen {
                    return Control::Go;
                }
            }
            return Control::Hold;
        }
        Control::Go
    }

    fn after_issue(&mut self, _view: &mut DpuView<'_, '_>, slot: &Slot, _ops: u32) {
        if self.mode != Mode::Served || slot.owed {
            return;
        }
        self.moved |= 1 << (slot.tasklet & 31);
        if self.pending.is_none() && self.plan.action(slot.tasklet) == Action::Step {
            self.pending = Some(Stop {
                tasklet: slot.tasklet,
                kind: StopKind::Trap,
            });
        }
    }

    fn fault(&mut self, view: &mut DpuView<'_, '_>, tasklet: u32, _pc: u32, fault: &Fault) {
        if self.mode == Mode::Free {
            return;
        }
        self.stop(
            view,
            Stop {
                tasklet,
                kind: StopKind::Fault(signal_of(fault)),
            },
        );
    }
}

impl RunObserver for GdbProbe {
    fn changed_schedule(&self) -> bool {
        self.held
    }

    fn finish(self: Box<Self>, _site: &RunSite, outcome: &RunOutcome) {
        if self.mode != Mode::Served {
            return;
        }
        if let Some(s) = &self.session {
            let fault = outcome.fault.as_ref().map(|f| signal_of(&f.fault));
            if s.events.send(Event::Ended(fault)).is_ok() {
                // Until the server has told the debugger (it then drops its end): the host
                // program may exit right after this launch.
                while let Ok(cmd) = s.cmds.recv() {
                    if matches!(cmd, Cmd::Detach) {
                        break;
                    }
                }
            }
        }
    }
}
