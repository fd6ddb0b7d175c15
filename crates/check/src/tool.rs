//! The checkers as a tool of the runtime's observation seam: an observer per DPU run, and
//! the per-DPU state kept between runs (which bytes are written, launches so far).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use openpim_engine::probe::{Access, DpuView, Probe, Slot, SyncEvent};
use openpim_engine::{Fault, RunOutcome};
use openpim_runtime::observe::{HostWrite, Observers, RunObserver, RunSite};
use openpim_runtime::Program;

use crate::findings::{self, AccessNote, Finding, Kind, StackUse};
use crate::init::DpuInit;
use crate::memory::MemoryRun;
use crate::program::ProgramInfo;
use crate::races::RaceDetector;
use crate::Modes;

#[derive(Default)]
struct DpuState {
    /// `None` while a run holds it.
    init: Option<DpuInit>,
    launches: u64,
}

#[derive(Default)]
struct Shared {
    /// Per program (by address; the `Arc` keeps the address from being reused).
    programs: HashMap<usize, (Arc<Program>, Arc<ProgramInfo>)>,
    dpus: HashMap<(u32, u32), DpuState>,
}

/// The checkers, installed once per process.
pub struct CheckTool {
    modes: Modes,
    shared: Arc<Mutex<Shared>>,
}

impl CheckTool {
    pub fn new(modes: Modes) -> CheckTool {
        CheckTool {
            modes,
            shared: Arc::new(Mutex::new(Shared::default())),
        }
    }
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn info(&mut self, program: &Arc<Program>) -> Arc<ProgramInfo> {
        let key = Arc::as_ptr(program) as usize;
        let entry = self
            .programs
            .entry(key)
            .or_insert_with(|| (Arc::clone(program), Arc::new(ProgramInfo::new(program))));
        Arc::clone(&entry.1)
    }
}

impl Observers for CheckTool {
    fn observe(&self, site: &RunSite) -> Option<Box<dyn RunObserver>> {
        let mut shared = lock(&self.shared);
        let info = shared.info(&site.program);
        let dpu = shared.dpus.entry((site.rank, site.dpu)).or_default();
        dpu.launches += 1;
        let launch = dpu.launches;
        let memory = self.modes.memory.then(|| {
            let init = dpu
                .init
                .take()
                .unwrap_or_else(|| DpuInit::unknown(&site.program));
            MemoryRun::new(Arc::clone(&info), init)
        });
        Some(Box::new(CheckRun {
            shared: Arc::clone(&self.shared),
            races: self.modes.races.then(|| RaceDetector::new(info.base)),
            memory,
            info,
            launch,
            nr_tasklets: site.program.nr_tasklets(),
        }))
    }

    fn host_wrote(&self, rank: u32, dpu: u32, write: &HostWrite) {
        if !self.modes.memory {
            return;
        }
        let mut shared = lock(&self.shared);
        let state = shared.dpus.entry((rank, dpu)).or_default();
        match write {
            HostWrite::Load(program) => {
                // A load replaces WRAM; MRAM keeps what the host and earlier programs wrote.
                let mut init = DpuInit::loaded(program);
                if let Some(old) = state.init.take() {
                    init.keep_mram_of(old);
                }
                state.init = Some(init);
                state.launches = 0;
            }
            HostWrite::Wram { offset, len } => {
                if let Some(init) = state.init.as_mut() {
                    init.wram.set(*offset, *len, true);
                }
            }
            HostWrite::Mram { offset, len } => {
                if let Some(init) = state.init.as_mut() {
                    init.mram.set(*offset, *len, true);
                }
            }
        }
    }
}

/// The checkers' observer of one DPU run.
struct CheckRun {
    shared: Arc<Mutex<Shared>>,
    info: Arc<ProgramInfo>,
    races: Option<RaceDetector>,
    memory: Option<MemoryRun>,
    launch: u64,
    nr_tasklets: u32,
}

impl Probe for CheckRun {
    fn before_issue(
        &mut self,
        dpu: &mut DpuView<'_, '_>,
        slot: &Slot,
    ) -> openpim_engine::probe::Control {
        if let (Some(m), false) = (self.memory.as_mut(), slot.owed) {
            m.before_issue(slot.tasklet, slot.pc, |r| dpu.reg(slot.tasklet, r));
        }
        openpim_engine::probe::Control::Go
    }

    fn after_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot, _ops: u32) {
        if let Some(m) = self.memory.as_mut() {
            m.after_issue(slot.tasklet, slot.pc, dpu.reg(slot.tasklet, 2));
        }
    }

    fn access(&mut self, a: &Access) {
        if let Some(r) = self.races.as_mut() {
            if a.write || !self.info.in_spin(a.pc) {
                r.access(a.tasklet, a.pc, a.space, a.offset, a.size, a.write);
            }
        }
        if let Some(m) = self.memory.as_mut() {
            m.access(a);
        }
    }

    fn sync(&mut self, _cycle: u64, tasklet: u32, _pc: u32, event: &SyncEvent) {
        if let Some(r) = self.races.as_mut() {
            r.sync(tasklet, event);
        }
    }

    fn fault(&mut self, _dpu: &mut DpuView<'_, '_>, tasklet: u32, pc: u32, fault: &Fault) {
        if let Some(m) = self.memory.as_mut() {
            m.fault(tasklet, pc, fault);
        }
    }
}

fn rw(write: bool) -> &'static str {
    if write {
        "write"
    } else {
        "read"
    }
}

impl RunObserver for CheckRun {
    fn finish(self: Box<Self>, site: &RunSite, _outcome: &RunOutcome) {
        let CheckRun {
            shared,
            info,
            races,
            memory,
            launch,
            nr_tasklets,
        } = *self;
        findings::count_run(site.rank, site.dpu);
        let finding = |kind: Kind, accesses: Vec<AccessNote>, target: String, detail: String| {
            let mut tasklets: Vec<u32> = accesses.iter().map(|a| a.tasklet).collect();
            tasklets.sort_unstable();
            tasklets.dedup();
            Finding {
                kind,
                rank: site.rank,
                dpu: site.dpu,
                launch,
                tasklets,
                accesses,
                target,
                detail,
                occurrences: 1,
            }
        };
        let note = |tasklet: u32, write: bool, pc: u32| AccessNote {
            tasklet,
            access: rw(write),
            location: info.location(pc),
            pc,
        };
        if let Some(r) = races {
            for race in r.races {
                findings::record(finding(
                    Kind::Race,
                    vec![
                        note(race.earlier.tasklet, race.earlier.write, race.earlier.pc),
                        note(race.later.tasklet, race.later.write, race.later.pc),
                    ],
                    info.describe(race.space, race.offset),
                    "not ordered by any synchronisation (mutex, semaphore, barrier, handshake, atomic bit)".to_string(),
                ));
            }
        }
        if let Some(m) = memory {
            for raw in &m.found {
                let accesses = raw
                    .accesses
                    .iter()
                    .map(|&(t, w, pc)| note(t, w, pc))
                    .collect();
                findings::record(finding(
                    raw.kind,
                    accesses,
                    raw.target.clone(),
                    raw.detail.clone(),
                ));
            }
            let uses = m
                .stack_use(nr_tasklets)
                .into_iter()
                .map(|(tasklet, used, size, pc)| StackUse {
                    tasklet,
                    used,
                    size,
                    deepest_at: if pc == 0 {
                        String::new()
                    } else {
                        info.location(pc)
                    },
                })
                .collect();
            let name = site
                .program
                .origin()
                .map_or_else(|| "<program>".to_string(), str::to_string);
            findings::record_stacks(&name, uses);
            let mut g = lock(&shared);
            if let Some(d) = g.dpus.get_mut(&(site.rank, site.dpu)) {
                d.init = Some(m.init);
            }
        }
    }
}
