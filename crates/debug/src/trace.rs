//! Instruction traces, as the SDK's `dputrace` (`OPENPIM_DPU_TRACE=DIR`).
//!
//! One file per traced DPU run, `DIR/trace.RANK.DPU.LAUNCH`, one line per issue slot:
//!
//! ```text
//! cycle=1204 t=2 pc=0x80000054 main+0x38 slots=1 | add a5, a5, a4 | a5=0x00000013 | R wram 0x00000100 4
//! ```
//!
//! A fused pair shows both instructions (`insn ; insn`); the further slots of an arithmetic
//! environment call are one line (`arith ... slots=N`, written when the tasklet issues again);
//! idle cycles are comment lines (`# idle ...`). The `slots=` fields of a complete trace add
//! up to the report's `instructions` for that DPU. A file stops at `OPENPIM_DPU_TRACE_LIMIT`
//! lines (default 1,000,000) with a last comment line saying so; the run goes on.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use openpim_engine::probe::{Access, AccessKind, DpuView, Probe, Slot, Space};
use openpim_engine::RunOutcome;
use openpim_runtime::observe::{self, Observers, RunObserver, RunSite};

use crate::error::Error;
use crate::filter::{parse_dpus, parse_tasklets, DpuId};

/// The directory of the trace files.
pub const TRACE_ENV: &str = "OPENPIM_DPU_TRACE";
/// `RANK.DPU,...`: the DPUs traced (default all).
pub const TRACE_DPUS_ENV: &str = "OPENPIM_DPU_TRACE_DPUS";
/// `T,...`: the tasklets whose slots are written (default all).
pub const TRACE_TASKLETS_ENV: &str = "OPENPIM_DPU_TRACE_TASKLETS";
/// Lines per file (default 1,000,000).
pub const TRACE_LIMIT_ENV: &str = "OPENPIM_DPU_TRACE_LIMIT";
const DEFAULT_LIMIT: u64 = 1_000_000;

const ABI: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// What to trace.
#[derive(Clone, Debug)]
pub struct Config {
    pub dir: PathBuf,
    pub dpus: Option<Vec<DpuId>>,
    pub tasklets: u32,
    pub limit: u64,
}

impl Config {
    pub fn from_env() -> Result<Option<Config>, Error> {
        let Some(dir) = std::env::var(TRACE_ENV)
            .ok()
            .filter(|d| !d.trim().is_empty())
        else {
            return Ok(None);
        };
        let get = |k| std::env::var(k).unwrap_or_default();
        let limit = match std::env::var(TRACE_LIMIT_ENV) {
            Ok(v) if !v.trim().is_empty() => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Error::BadSetting {
                    var: TRACE_LIMIT_ENV,
                    value: v.clone(),
                    why: "expected a positive number of lines per trace file, e.g. 1000000".into(),
                })?,
            _ => DEFAULT_LIMIT,
        };
        Ok(Some(Config {
            dir: PathBuf::from(dir),
            dpus: parse_dpus(TRACE_DPUS_ENV, &get(TRACE_DPUS_ENV))?,
            tasklets: parse_tasklets(TRACE_TASKLETS_ENV, &get(TRACE_TASKLETS_ENV))?,
            limit,
        }))
    }
}

struct Tool {
    config: Config,
    /// Launches seen per DPU (the file name's last part).
    launches: Mutex<HashMap<(u32, u32), u32>>,
    /// Files cut at the limit.
    cut: Arc<Mutex<Vec<PathBuf>>>,
    /// The directory could not be written (said once).
    broken: Mutex<bool>,
}

static CUT: Mutex<Option<Arc<Mutex<Vec<PathBuf>>>>> = Mutex::new(None);

/// Installs the tracer (the directory is created; if it cannot be, that is said once and
/// nothing is traced).
pub fn start(config: Config) {
    if let Err(e) = std::fs::create_dir_all(&config.dir) {
        eprintln!(
            "openpim: {TRACE_ENV}={}: cannot create the directory ({e}); no trace is written: choose a writable directory",
            config.dir.display()
        );
        return;
    }
    let cut = Arc::new(Mutex::new(Vec::new()));
    *CUT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&cut));
    observe::install(Arc::new(Tool {
        config,
        launches: Mutex::new(HashMap::new()),
        cut,
        broken: Mutex::new(false),
    }));
}

/// The traces cut at their limit, said at exit.
pub fn exit_message() -> Option<String> {
    let cut = CUT.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    let files = cut.lock().unwrap_or_else(|e| e.into_inner());
    (!files.is_empty()).then(|| {
        format!(
            "openpim: {} instruction trace(s) stopped at {TRACE_LIMIT_ENV} lines (the first: {}); raise the limit or trace fewer DPUs/tasklets ({TRACE_DPUS_ENV}, {TRACE_TASKLETS_ENV})",
            files.len(),
            files[0].display()
        )
    })
}

impl Observers for Tool {
    fn observe(&self, site: &RunSite) -> Option<Box<dyn RunObserver>> {
        let id = DpuId {
            rank: site.rank,
            dpu: site.dpu,
        };
        if let Some(list) = &self.config.dpus {
            if !list.contains(&id) {
                return None;
            }
        }
        let launch = {
            let mut l = self.launches.lock().unwrap_or_else(|e| e.into_inner());
            let n = l.entry((site.rank, site.dpu)).or_insert(0);
            *n += 1;
            *n - 1
        };
        let path = self
            .config
            .dir
            .join(format!("trace.{}.{}.{launch}", site.rank, site.dpu));
        let file = match File::create(&path) {
            Ok(f) => f,
            Err(e) => {
                let mut broken = self.broken.lock().unwrap_or_else(|e| e.into_inner());
                if !*broken {
                    *broken = true;
                    eprintln!(
                        "openpim: {TRACE_ENV}: cannot write {} ({e}); traces are not written: choose a writable directory",
                        path.display()
                    );
                }
                return None;
            }
        };
        let mut out = BufWriter::new(file);
        let _ = writeln!(
            out,
            "# openpim instruction trace: DPU {id}, launch {launch}, program {}",
            site.program.origin().unwrap_or("(from memory)")
        );
        Some(Box::new(Tracer {
            program: Arc::clone(&site.program),
            out,
            path,
            lines: 1,
            limit: self.config.limit,
            tasklets: self.config.tasklets,
            before: [0; 32],
            accesses: String::new(),
            owed: HashMap::new(),
            names: HashMap::new(),
            cut: Arc::clone(&self.cut),
            slots: 0,
        }))
    }
}

/// Further slots of an arithmetic call not yet written: (first cycle, last cycle, pc, count).
type Owed = (u64, u64, u32, u64);

struct Tracer {
    program: Arc<openpim_runtime::Program>,
    out: BufWriter<File>,
    path: PathBuf,
    lines: u64,
    limit: u64,
    tasklets: u32,
    /// The issuing tasklet's registers before its slot.
    before: [u32; 32],
    /// The accesses of the current slot, formatted.
    accesses: String,
    owed: HashMap<u32, Owed>,
    names: HashMap<u32, String>,
    cut: Arc<Mutex<Vec<PathBuf>>>,
    /// Slots seen (all tasklets).
    slots: u64,
}

impl Tracer {
    fn wants(&self, tasklet: u32) -> bool {
        tasklet < 32 && self.tasklets & (1 << tasklet) != 0
    }

    /// Writes one line, or the cut notice when the limit is reached.
    fn line(&mut self, text: &str) {
        if self.lines > self.limit {
            return;
        }
        self.lines += 1;
        if self.lines > self.limit {
            let _ = writeln!(
                self.out,
                "# trace cut at {} lines ({TRACE_LIMIT_ENV}); the run went on",
                self.limit
            );
            self.cut
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(self.path.clone());
            return;
        }
        let _ = writeln!(self.out, "{text}");
    }

    fn name(&mut self, pc: u32) -> String {
        let program = &self.program;
        self.names
            .entry(pc)
            .or_insert_with(|| program.function_at(pc).unwrap_or_else(|| "?".into()))
            .clone()
    }

    fn word(&self, pc: u32) -> Option<u32> {
        let off = pc.checked_sub(self.program.text_base())? as usize;
        let b = self.program.text().get(off..off + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Writes tasklet `t`'s pending arithmetic slots as one line.
    fn flush_owed(&mut self, t: u32) {
        if let Some((first, last, pc, n)) = self.owed.remove(&t) {
            let name = self.name(pc);
            self.line(&format!(
                "cycle={first} t={t} pc={pc:#010x} {name} slots={n} | arith routine of the call at this pc, cycles {first}..={last}"
            ));
        }
    }
}

impl Probe for Tracer {
    fn before_issue(
        &mut self,
        dpu: &mut DpuView<'_, '_>,
        slot: &Slot,
    ) -> openpim_engine::probe::Control {
        if let Some(r) = dpu.regs(slot.tasklet) {
            self.before = *r;
        }
        self.accesses.clear();
        openpim_engine::probe::Control::Go
    }

    fn after_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot, ops: u32) {
        self.slots += 1;
        let t = slot.tasklet;
        if !self.wants(t) {
            return;
        }
        if slot.owed {
            let e = self
                .owed
                .entry(t)
                .or_insert((slot.cycle, slot.cycle, slot.pc, 0));
            e.1 = slot.cycle;
            e.3 += 1;
            return;
        }
        self.flush_owed(t);
        let mut text = String::new();
        for i in 0..ops.max(1) {
            let pc = slot.pc.wrapping_add(4 * i);
            if i > 0 {
                text.push_str(" ; ");
            }
            match self.word(pc) {
                Some(w) => text.push_str(&openpim_engine::disassemble(w, pc)),
                None => text.push('?'),
            }
        }
        let mut written = String::new();
        if let Some(after) = dpu.regs(t) {
            for (r, (a, b)) in after.iter().zip(self.before.iter()).enumerate() {
                if a != b {
                    let _ = write!(
                        written,
                        "{}{}={a:#010x}",
                        if written.is_empty() { "" } else { " " },
                        ABI[r]
                    );
                }
            }
        }
        let name = self.name(slot.pc);
        let accesses = std::mem::take(&mut self.accesses);
        self.line(&format!(
            "cycle={} t={t} pc={:#010x} {name} slots=1 | {text} | {written} |{accesses}",
            slot.cycle, slot.pc
        ));
    }

    fn idle(&mut self, _dpu: &mut DpuView<'_, '_>, from: u64, to: u64) {
        self.line(&format!("# idle cycles {from}..{to}"));
    }

    fn access(&mut self, a: &Access) {
        let space = match a.space {
            Space::Wram => "wram",
            Space::Mram => "mram",
        };
        let _ = write!(
            self.accesses,
            " {} {space} {:#010x} {}{}",
            if a.write { "W" } else { "R" },
            a.space.address(a.offset),
            a.size,
            if a.kind == AccessKind::Dma {
                " dma"
            } else {
                ""
            }
        );
    }
}

impl RunObserver for Tracer {
    fn finish(mut self: Box<Self>, _site: &RunSite, outcome: &RunOutcome) {
        let pending: Vec<u32> = self.owed.keys().copied().collect();
        for t in pending {
            self.flush_owed(t);
        }
        let slots = self.slots;
        self.line(&format!(
            "# end: {} slots, {} cycles{}",
            slots,
            outcome.cycles,
            outcome
                .fault
                .as_ref()
                .map(|f| format!(", fault: {f}"))
                .unwrap_or_default()
        ));
        let _ = self.out.flush();
    }
}
