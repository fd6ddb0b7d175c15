//! Observers of DPU runs: where the developer tools (debugger, tracer, profiler, checkers)
//! attach to the runs of the local backend, through the engine's probe seam
//! (`openpim_engine::probe`).
//!
//! A tool installs an [`Observers`] implementation once per process ([`install`]); before
//! each DPU of a launch runs, every installed one may give a [`RunObserver`] for that run.
//! A run with at least one observer runs on the engine's probed interpreter (all observers
//! see it together, [`Fanout`]); a run with none runs as if no tool were installed. After the
//! run, each observer gets the outcome ([`RunObserver::finish`]).

use std::sync::{Arc, RwLock};

use openpim_engine::probe::{Access, Control, DpuView, Probe, Slot, SyncEvent};
use openpim_engine::{Fault, RunOutcome};

use crate::program::Program;

/// The DPU a run is on, and its program.
#[derive(Clone)]
pub struct RunSite {
    /// The machine's rank slot (as in the report's `ranks[]`).
    pub rank: u32,
    /// The DPU's index in its rank.
    pub dpu: u32,
    pub program: Arc<Program>,
}

/// One tool's observer of one DPU run.
pub trait RunObserver: Probe {
    /// Whether the observer held slots back ([`Control::Hold`]): the run's schedule, and so
    /// its cycles, differ from a run without it (the report marks the launch `stepped`).
    fn changed_schedule(&self) -> bool {
        false
    }

    /// The run ended with `outcome` (not called when the engine panicked).
    fn finish(self: Box<Self>, _site: &RunSite, _outcome: &RunOutcome) {}
}

/// A tool: gives observers to the runs it wants to see.
pub trait Observers: Send + Sync {
    /// An observer for the run about to start at `site`, or `None` to leave it alone.
    fn observe(&self, site: &RunSite) -> Option<Box<dyn RunObserver>>;

    /// The host wrote DPU memory of DPU `dpu` of rank slot `rank` (a transfer, a symbol
    /// copy, a program load), between runs.
    fn host_wrote(&self, _rank: u32, _dpu: u32, _write: &HostWrite) {}
}

/// What the host wrote into a DPU's memory.
pub enum HostWrite<'a> {
    /// `program` was loaded: WRAM is its image and MRAM holds its segments.
    Load(&'a Arc<Program>),
    /// Bytes `offset..offset + len` of WRAM.
    Wram { offset: u32, len: u32 },
    /// Bytes `offset..offset + len` of MRAM.
    Mram { offset: u32, len: u32 },
}

/// Tells the installed tools that the host wrote a DPU's memory (nothing when none is
/// installed).
pub(crate) fn host_wrote(rank: u32, dpu: u32, write: &HostWrite) {
    if !any_installed() {
        return;
    }
    let tools = INSTALLED.read().unwrap_or_else(|e| e.into_inner());
    for t in tools.iter() {
        t.host_wrote(rank, dpu, write);
    }
}

static INSTALLED: RwLock<Vec<Arc<dyn Observers>>> = RwLock::new(Vec::new());

/// Installs a tool for the rest of the process (tools are never removed).
pub fn install(tool: Arc<dyn Observers>) {
    INSTALLED
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(tool);
}

/// Whether any tool is installed.
pub fn any_installed() -> bool {
    !INSTALLED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .is_empty()
}

/// The observers the installed tools give the run at `site` (`None`: no tool wants it).
pub(crate) fn observers_for(site: &RunSite) -> Option<Fanout> {
    let tools = INSTALLED.read().unwrap_or_else(|e| e.into_inner());
    let observers: Vec<Box<dyn RunObserver>> =
        tools.iter().filter_map(|t| t.observe(site)).collect();
    (!observers.is_empty()).then_some(Fanout(observers))
}

/// Several observers of one run, each seeing every event in the order they were installed; a
/// slot is held back when any of them holds it.
pub(crate) struct Fanout(Vec<Box<dyn RunObserver>>);

impl Fanout {
    /// Ends the run for every observer; `true` when one of them changed its schedule.
    pub(crate) fn finish(self, site: &RunSite, outcome: &RunOutcome) -> bool {
        let changed = self.0.iter().any(|o| o.changed_schedule());
        for o in self.0 {
            o.finish(site, outcome);
        }
        changed
    }
}

impl Probe for Fanout {
    fn before_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot) -> Control {
        let mut control = Control::Go;
        for o in &mut self.0 {
            if o.before_issue(dpu, slot) == Control::Hold {
                control = Control::Hold;
            }
        }
        control
    }

    fn after_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot, ops: u32) {
        for o in &mut self.0 {
            o.after_issue(dpu, slot, ops);
        }
    }

    fn idle(&mut self, dpu: &mut DpuView<'_, '_>, from: u64, to: u64) {
        for o in &mut self.0 {
            o.idle(dpu, from, to);
        }
    }

    fn access(&mut self, access: &Access) {
        for o in &mut self.0 {
            o.access(access);
        }
    }

    fn sync(&mut self, cycle: u64, tasklet: u32, pc: u32, event: &SyncEvent) {
        for o in &mut self.0 {
            o.sync(cycle, tasklet, pc, event);
        }
    }

    fn fault(&mut self, dpu: &mut DpuView<'_, '_>, tasklet: u32, pc: u32, fault: &Fault) {
        for o in &mut self.0 {
            o.fault(dpu, tasklet, pc, fault);
        }
    }
}
