//! The server side of a session: a `gdbstub` target whose every operation is a command to
//! the stopped DPU ([`super::link`]), and the blocking event loop that waits for the DPU to
//! stop again (or for the debugger's Ctrl-C).

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use gdbstub::common::{Signal, Tid};
use gdbstub::conn::{Connection, ConnectionExt};
use gdbstub::stub::run_blocking::{BlockingEventLoop, Event as LoopEvent, WaitForStopReasonError};
use gdbstub::stub::MultiThreadStopReason;
use gdbstub::target::ext::base::multithread::{
    MultiThreadBase, MultiThreadResume, MultiThreadResumeOps, MultiThreadSchedulerLocking,
    MultiThreadSchedulerLockingOps, MultiThreadSingleStep, MultiThreadSingleStepOps,
};
use gdbstub::target::ext::base::BaseOps;
use gdbstub::target::ext::breakpoints::{
    Breakpoints, BreakpointsOps, HwBreakpoint, HwBreakpointOps, HwWatchpoint, HwWatchpointOps,
    SwBreakpoint, SwBreakpointOps, WatchKind,
};
use gdbstub::target::ext::monitor_cmd::{ConsoleOutput, MonitorCmd, MonitorCmdOps};
use gdbstub::target::ext::target_description_xml_override::{
    TargetDescriptionXmlOverride, TargetDescriptionXmlOverrideOps,
};
use gdbstub::target::ext::thread_extra_info::{ThreadExtraInfo, ThreadExtraInfoOps};
use gdbstub::target::{Target, TargetError, TargetResult};
use gdbstub_arch::riscv::reg::RiscvCoreRegs;
use gdbstub_arch::riscv::Riscv32;
use openpim_engine::probe::TaskletState;

use super::conn::DpuConnection;
use super::link::{Action, Attach, Cmd, Event, Plan, Point, Stop, StopKind};

/// The DPU went away (its run ended or its thread is gone) while the debugger asked for
/// something: the session ends.
#[derive(Debug)]
pub struct Gone;

/// A stopped DPU as GDB sees it. Thread ids are tasklet + 1 (GDB reserves 0).
pub struct RemoteDpu {
    pub attach: Attach,
    /// The tasklet of the last stop: listed first, so that GDB selects it.
    current: u32,
    actions: Vec<Option<Action>>,
    locked: bool,
    /// The run has ended: nothing is left to command.
    pub ended: bool,
}

fn tasklet(tid: Tid) -> u32 {
    (tid.get() - 1) as u32
}

fn tid(tasklet: u32) -> Tid {
    Tid::new(tasklet as usize + 1).expect("tasklet + 1 is non-zero")
}

impl RemoteDpu {
    pub fn new(attach: Attach) -> Self {
        let current = attach.first.tasklet;
        let n = attach.nr_tasklets as usize;
        RemoteDpu {
            attach,
            current,
            actions: vec![None; n],
            locked: false,
            ended: false,
        }
    }

    /// Sends a command built around a fresh reply channel and waits for the answer.
    fn ask<R>(&self, make: impl FnOnce(std::sync::mpsc::Sender<R>) -> Cmd) -> Result<R, Gone> {
        if self.ended {
            return Err(Gone);
        }
        let (tx, rx) = channel();
        self.attach.cmds.send(make(tx)).map_err(|_| Gone)?;
        rx.recv().map_err(|_| Gone)
    }

    fn point(&self, point: Point, add: bool) -> TargetResult<bool, Self> {
        self.ask(|reply| Cmd::Point { point, add, reply })
            .map_err(TargetError::Fatal)
    }

    /// The stop reason GDB gets for `stop`.
    pub fn reason(&mut self, stop: Stop) -> MultiThreadStopReason<u32> {
        self.current = stop.tasklet;
        let t = tid(stop.tasklet);
        match stop.kind {
            StopKind::Trap => MultiThreadStopReason::SignalWithThread {
                tid: t,
                signal: Signal::SIGTRAP,
            },
            StopKind::SwBreak => MultiThreadStopReason::SwBreak(t),
            StopKind::HwBreak => MultiThreadStopReason::HwBreak(t),
            StopKind::Watch { kind, addr } => MultiThreadStopReason::Watch { tid: t, kind, addr },
            StopKind::Interrupt => MultiThreadStopReason::SignalWithThread {
                tid: t,
                signal: Signal::SIGINT,
            },
            StopKind::Fault(signal) => MultiThreadStopReason::SignalWithThread { tid: t, signal },
        }
    }

    /// Tells the DPU the debugger left: it runs on and never stops again.
    pub fn detach(&self) {
        self.attach.flags.detached.store(true, Ordering::Release);
        let _ = self.attach.cmds.send(Cmd::Detach);
    }
}

impl Target for RemoteDpu {
    type Arch = Riscv32;
    type Error = Gone;

    fn base_ops(&mut self) -> BaseOps<'_, Self::Arch, Self::Error> {
        BaseOps::MultiThread(self)
    }

    fn support_breakpoints(&mut self) -> Option<BreakpointsOps<'_, Self>> {
        Some(self)
    }

    fn support_monitor_cmd(&mut self) -> Option<MonitorCmdOps<'_, Self>> {
        Some(self)
    }

    fn support_target_description_xml_override(
        &mut self,
    ) -> Option<TargetDescriptionXmlOverrideOps<'_, Self>> {
        Some(self)
    }
}

/// RV32I's registers, as `gdbstub_arch::riscv::Riscv32` sends them (x0..x31, pc), in a
/// description that also names the OS ABI "none": GDB's default on Linux hosts (GNU/Linux)
/// makes it single-step by planting breakpoints after an instruction, which a fused issue
/// slot (two instructions) would jump over; with no OS ABI it asks the target to step (`s`),
/// and a step is one issue slot.
fn target_xml() -> String {
    const NAMES: [&str; 32] = [
        "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "fp", "s1", "a0", "a1", "a2", "a3", "a4",
        "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
        "t5", "t6",
    ];
    let mut xml = String::from(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE target SYSTEM \"gdb-target.dtd\">\n<target version=\"1.0\">\n<architecture>riscv:rv32</architecture>\n<osabi>none</osabi>\n<feature name=\"org.gnu.gdb.riscv.cpu\">\n",
    );
    for (n, name) in NAMES.iter().enumerate() {
        let ty = match n {
            1 => "code_ptr",
            2..=4 => "data_ptr",
            _ => "int",
        };
        xml.push_str(&format!(
            "<reg name=\"{name}\" bitsize=\"32\" type=\"{ty}\" regnum=\"{n}\"/>\n"
        ));
    }
    xml.push_str("<reg name=\"pc\" bitsize=\"32\" type=\"code_ptr\" regnum=\"32\"/>\n</feature>\n</target>\n");
    xml
}

impl TargetDescriptionXmlOverride for RemoteDpu {
    fn target_description_xml(
        &self,
        annex: &[u8],
        offset: u64,
        length: usize,
        buf: &mut [u8],
    ) -> TargetResult<usize, Self> {
        if annex != b"target.xml" {
            return Err(TargetError::NonFatal);
        }
        let xml = target_xml();
        let bytes = xml.as_bytes();
        let start = (offset as usize).min(bytes.len());
        let n = length.min(buf.len()).min(bytes.len() - start);
        buf[..n].copy_from_slice(&bytes[start..start + n]);
        Ok(n)
    }
}

impl MultiThreadBase for RemoteDpu {
    fn read_registers(
        &mut self,
        regs: &mut RiscvCoreRegs<u32>,
        tid: Tid,
    ) -> TargetResult<(), Self> {
        let t = tasklet(tid);
        match self.ask(|reply| Cmd::Regs { tasklet: t, reply }) {
            Ok(Some((x, pc))) => {
                regs.x = x;
                regs.pc = pc;
                Ok(())
            }
            Ok(None) => Err(TargetError::NonFatal),
            Err(e) => Err(TargetError::Fatal(e)),
        }
    }

    fn write_registers(&mut self, regs: &RiscvCoreRegs<u32>, tid: Tid) -> TargetResult<(), Self> {
        let t = tasklet(tid);
        let (x, pc) = (regs.x, regs.pc);
        match self.ask(|reply| Cmd::SetRegs {
            tasklet: t,
            regs: x,
            pc,
            reply,
        }) {
            Ok(true) => Ok(()),
            Ok(false) => Err(TargetError::NonFatal),
            Err(e) => Err(TargetError::Fatal(e)),
        }
    }

    fn read_addrs(&mut self, start: u32, data: &mut [u8], _tid: Tid) -> TargetResult<usize, Self> {
        let len = data.len() as u32;
        let bytes = self
            .ask(|reply| Cmd::Read {
                addr: start,
                len,
                reply,
            })
            .map_err(TargetError::Fatal)?;
        if bytes.is_empty() && !data.is_empty() {
            return Err(TargetError::NonFatal);
        }
        data[..bytes.len()].copy_from_slice(&bytes);
        Ok(bytes.len())
    }

    fn write_addrs(&mut self, start: u32, data: &[u8], _tid: Tid) -> TargetResult<(), Self> {
        let data = data.to_vec();
        match self.ask(|reply| Cmd::Write {
            addr: start,
            data,
            reply,
        }) {
            Ok(true) => Ok(()),
            Ok(false) => Err(TargetError::NonFatal),
            Err(e) => Err(TargetError::Fatal(e)),
        }
    }

    fn list_active_threads(&mut self, active: &mut dyn FnMut(Tid)) -> Result<(), Self::Error> {
        let n = self.attach.nr_tasklets;
        if self.current < n {
            active(tid(self.current));
        }
        for t in (0..n).filter(|&t| t != self.current) {
            active(tid(t));
        }
        Ok(())
    }

    fn support_resume(&mut self) -> Option<MultiThreadResumeOps<'_, Self>> {
        Some(self)
    }

    fn support_thread_extra_info(&mut self) -> Option<ThreadExtraInfoOps<'_, Self>> {
        Some(self)
    }
}

impl MonitorCmd for RemoteDpu {
    fn handle_monitor_cmd(&mut self, cmd: &[u8], mut out: ConsoleOutput<'_>) -> Result<(), Gone> {
        use std::fmt::Write;
        match cmd.trim_ascii() {
            b"" | b"info" => {
                for line in self.ask(|reply| Cmd::Info { reply })? {
                    let _ = writeln!(out, "{line}");
                }
            }
            other => {
                let _ = writeln!(
                    out,
                    "unknown monitor command `{}`: `monitor info` shows the DPU's cycle and each tasklet's state, pc and instructions issued",
                    String::from_utf8_lossy(other)
                );
            }
        }
        Ok(())
    }
}

impl ThreadExtraInfo for RemoteDpu {
    fn thread_extra_info(&self, tid: Tid, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let t = tasklet(tid);
        let states = self.ask(|reply| Cmd::Threads { reply })?;
        let state = match states.get(t as usize) {
            Some(TaskletState::Running { .. }) => "running",
            Some(TaskletState::Sleeping) => "sleeping",
            Some(TaskletState::Exited) => "exited",
            None => "not booted",
        };
        let site = &self.attach.site;
        let text = format!("tasklet {t} {state}, DPU {}.{}", site.rank, site.dpu);
        let n = text.len().min(buf.len());
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        Ok(n)
    }
}

impl MultiThreadResume for RemoteDpu {
    fn resume(&mut self) -> Result<(), Self::Error> {
        let default = if self.locked {
            Action::Frozen
        } else {
            Action::Continue
        };
        let plan = Plan(self.actions.iter().map(|a| a.unwrap_or(default)).collect());
        self.attach.cmds.send(Cmd::Resume(plan)).map_err(|_| Gone)
    }

    fn clear_resume_actions(&mut self) -> Result<(), Self::Error> {
        self.actions.iter_mut().for_each(|a| *a = None);
        self.locked = false;
        Ok(())
    }

    fn set_resume_action_continue(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        if let Some(a) = self.actions.get_mut(tasklet(tid) as usize) {
            *a = Some(Action::Continue);
        }
        Ok(())
    }

    fn support_single_step(&mut self) -> Option<MultiThreadSingleStepOps<'_, Self>> {
        Some(self)
    }

    fn support_scheduler_locking(&mut self) -> Option<MultiThreadSchedulerLockingOps<'_, Self>> {
        Some(self)
    }
}

impl MultiThreadSingleStep for RemoteDpu {
    fn set_resume_action_step(
        &mut self,
        tid: Tid,
        _signal: Option<Signal>,
    ) -> Result<(), Self::Error> {
        if let Some(a) = self.actions.get_mut(tasklet(tid) as usize) {
            *a = Some(Action::Step);
        }
        Ok(())
    }
}

impl MultiThreadSchedulerLocking for RemoteDpu {
    fn set_resume_action_scheduler_lock(&mut self) -> Result<(), Self::Error> {
        self.locked = true;
        Ok(())
    }
}

impl Breakpoints for RemoteDpu {
    fn support_sw_breakpoint(&mut self) -> Option<SwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_breakpoint(&mut self) -> Option<HwBreakpointOps<'_, Self>> {
        Some(self)
    }

    fn support_hw_watchpoint(&mut self) -> Option<HwWatchpointOps<'_, Self>> {
        Some(self)
    }
}

impl SwBreakpoint for RemoteDpu {
    fn add_sw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.point(Point::Break { addr, hw: false }, true)
    }

    fn remove_sw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.point(Point::Break { addr, hw: false }, false)
    }
}

impl HwBreakpoint for RemoteDpu {
    fn add_hw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.point(Point::Break { addr, hw: true }, true)
    }

    fn remove_hw_breakpoint(&mut self, addr: u32, _kind: usize) -> TargetResult<bool, Self> {
        self.point(Point::Break { addr, hw: true }, false)
    }
}

impl HwWatchpoint for RemoteDpu {
    fn add_hw_watchpoint(
        &mut self,
        addr: u32,
        len: u32,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        self.point(Point::Watch { addr, len, kind }, true)
    }

    fn remove_hw_watchpoint(
        &mut self,
        addr: u32,
        len: u32,
        kind: WatchKind,
    ) -> TargetResult<bool, Self> {
        self.point(Point::Watch { addr, len, kind }, false)
    }
}

/// Waits for the DPU while it runs: its next stop or end, or the debugger's Ctrl-C.
pub enum DpuLoop {}

impl BlockingEventLoop for DpuLoop {
    type Target = RemoteDpu;
    type Connection = DpuConnection;
    type StopReason = MultiThreadStopReason<u32>;

    fn wait_for_stop_reason(
        target: &mut RemoteDpu,
        conn: &mut DpuConnection,
    ) -> Result<
        LoopEvent<MultiThreadStopReason<u32>>,
        WaitForStopReasonError<Gone, <DpuConnection as Connection>::Error>,
    > {
        loop {
            match target.attach.events.recv_timeout(Duration::from_millis(5)) {
                Ok(Event::Stopped(stop)) => {
                    return Ok(LoopEvent::TargetStopped(target.reason(stop)));
                }
                Ok(Event::Ended(fault)) => {
                    target.ended = true;
                    let reason = match fault {
                        None => MultiThreadStopReason::Exited(0),
                        Some(signal) => MultiThreadStopReason::Terminated(signal),
                    };
                    return Ok(LoopEvent::TargetStopped(reason));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    target.ended = true;
                    return Ok(LoopEvent::TargetStopped(MultiThreadStopReason::Exited(0)));
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
            if conn
                .peek()
                .map_err(WaitForStopReasonError::Connection)?
                .is_some()
            {
                let byte = ConnectionExt::read(conn).map_err(WaitForStopReasonError::Connection)?;
                return Ok(LoopEvent::IncomingData(byte));
            }
        }
    }

    fn on_interrupt(target: &mut RemoteDpu) -> Result<Option<MultiThreadStopReason<u32>>, Gone> {
        target.attach.flags.interrupt.store(true, Ordering::Release);
        Ok(None)
    }
}
