//! The exact DPU profiler (`openpim profile`, docs/profiling.md).
//!
//! Every cycle of a profiled DPU run is charged once: to the instruction issued in it (its
//! function, inlined frames and source line, and the call stack the tasklet is on), or, in a
//! cycle with no issue, to a wait frame (`crate::wait`). So one DPU's per-line cycles sum to
//! its launch's cycles exactly. No rebuild is needed: the profile comes from the engine's
//! probe seam (`openpim_engine::probe`), the program's text (calls and returns) and its
//! debugging information (`openpim_debuginfo`; without DWARF, functions only).
//!
//! Programs ask for it with environment variables, read at the first `dpu_alloc`
//! (`openpim profile` sets them): `OPENPIM_PROFILE=DIR` profiles the run into `DIR` (created
//! if missing), `OPENPIM_PROFILE_DPU=all|RANK.DPU` chooses the DPUs (default all). The
//! outputs are written when the program exits ([`write_outputs`]).

mod code;
pub mod output;
mod probe;
pub mod profile;
pub mod wait;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use openpim_runtime::observe::{self, Observers, RunObserver, RunSite};
use openpim_runtime::report::{ProfileSummary, TopFunction};

use crate::code::Code;
use crate::probe::{DpuProfiler, RunCounts};
pub use crate::profile::Profile;
use crate::profile::RunEntry;

/// Environment variable: the directory to write the profile into.
pub const PROFILE_ENV: &str = "OPENPIM_PROFILE";
/// Environment variable: the DPUs to profile (`all`, or `RANK.DPU`).
pub const PROFILE_DPU_ENV: &str = "OPENPIM_PROFILE_DPU";

/// Why the profiler cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "{PROFILE_DPU_ENV}={0}: not a DPU; give `all` or RANK.DPU (e.g. 0.3: DPU 3 of rank 0)"
    )]
    BadDpu(String),
    #[error("{PROFILE_ENV}={dir}: cannot create the directory ({why}); give a directory that can be written")]
    BadDir { dir: String, why: String },
}

/// The DPUs profiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    All,
    One { rank: u32, dpu: u32 },
}

impl Selection {
    /// Parses `all` or `RANK.DPU`.
    pub fn parse(s: &str) -> Result<Selection, ProfileError> {
        let s = s.trim();
        if s.is_empty() || s == "all" {
            return Ok(Selection::All);
        }
        let bad = || ProfileError::BadDpu(s.to_string());
        let (r, d) = s.split_once('.').ok_or_else(bad)?;
        Ok(Selection::One {
            rank: r.trim().parse().map_err(|_| bad())?,
            dpu: d.trim().parse().map_err(|_| bad())?,
        })
    }

    fn wants(&self, site: &RunSite) -> bool {
        match *self {
            Selection::All => true,
            Selection::One { rank, dpu } => site.rank == rank && site.dpu == dpu,
        }
    }

    fn describe(&self) -> String {
        match self {
            Selection::All => "all".into(),
            Selection::One { rank, dpu } => format!("{rank}.{dpu}"),
        }
    }
}

/// Where profiled runs go: the run's profile and each launch's, summed over the DPUs.
pub(crate) struct Sink {
    state: Mutex<Gathered>,
}

#[derive(Default)]
struct Gathered {
    run: Profile,
    /// Per launch (index 0: the DPUs' first launch), the first [`MAX_LAUNCHES`].
    launches: Vec<Profile>,
    /// The last launch seen past those (0: none).
    launches_past: u32,
}

/// Launches profiled one by one (all are in the run's profile).
pub const MAX_LAUNCHES: usize = 256;

impl Sink {
    fn record(&self, site: &RunSite, launch: u32, counts: RunCounts) {
        let entry = RunEntry {
            rank: site.rank,
            dpu: site.dpu,
            launch,
            cycles: counts.outcome_cycles,
            instructions: counts.outcome_instructions,
            charged: 0,
        };
        // Resolved outside the lock (DWARF lookups), added under it.
        let p = Profile::of_run(entry, &counts);
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        g.run.absorb(&p);
        // Launches past the first MAX_LAUNCHES are in the run's figures only (a profile per
        // launch of a program launching thousands of times would be too much to hold).
        let k = launch.saturating_sub(1) as usize;
        if k < MAX_LAUNCHES {
            if g.launches.len() <= k {
                g.launches.resize_with(k + 1, Profile::default);
            }
            g.launches[k].absorb(&p);
        } else {
            g.launches_past = g.launches_past.max(launch);
        }
    }
}

/// The profiler of this process.
struct Profiler {
    dir: PathBuf,
    selection: Selection,
    sink: Arc<Sink>,
    /// Programs seen (by the address of their `Arc`, which the `Code` keeps alive).
    codes: Mutex<HashMap<usize, Arc<Code>>>,
    /// Launches seen per DPU.
    launches: Mutex<HashMap<(u32, u32), u32>>,
}

impl Observers for Profiler {
    fn observe(&self, site: &RunSite) -> Option<Box<dyn RunObserver>> {
        if !self.selection.wants(site) {
            return None;
        }
        let launch = {
            let mut l = self.launches.lock().unwrap_or_else(|e| e.into_inner());
            let n = l.entry((site.rank, site.dpu)).or_insert(0);
            *n += 1;
            *n
        };
        let code = {
            let key = Arc::as_ptr(&site.program) as usize;
            let mut codes = self.codes.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(
                codes
                    .entry(key)
                    .or_insert_with(|| Arc::new(Code::new(Arc::clone(&site.program)))),
            )
        };
        Some(Box::new(DpuProfiler::new(
            code,
            launch,
            Arc::clone(&self.sink),
        )))
    }
}

static PROFILER: OnceLock<Arc<Profiler>> = OnceLock::new();

/// Installs the profiler when `OPENPIM_PROFILE` asks for it (once per process; later calls
/// return the first's answer). `Ok(false)`: not asked.
pub fn install_from_env() -> Result<bool, String> {
    static ONCE: OnceLock<Result<bool, String>> = OnceLock::new();
    ONCE.get_or_init(|| {
        let Some(dir) = std::env::var(PROFILE_ENV)
            .ok()
            .filter(|v| !v.is_empty() && v != "0")
        else {
            return Ok(false);
        };
        let selection = Selection::parse(&std::env::var(PROFILE_DPU_ENV).unwrap_or_default())
            .map_err(|e| e.to_string())?;
        install(PathBuf::from(dir), selection).map_err(|e| e.to_string())?;
        Ok(true)
    })
    .clone()
}

/// Installs the profiler, writing into `dir` (created if missing).
pub fn install(dir: PathBuf, selection: Selection) -> Result<(), ProfileError> {
    std::fs::create_dir_all(&dir).map_err(|e| ProfileError::BadDir {
        dir: dir.display().to_string(),
        why: e.to_string(),
    })?;
    let p = Arc::new(Profiler {
        dir,
        selection,
        sink: Arc::new(Sink {
            state: Mutex::new(Gathered::default()),
        }),
        codes: Mutex::new(HashMap::new()),
        launches: Mutex::new(HashMap::new()),
    });
    if PROFILER.set(Arc::clone(&p)).is_ok() {
        observe::install(p);
        openpim_runtime::report::set_profile_source(summary);
    }
    Ok(())
}

/// What has been gathered so far (`None`: no profiler installed).
pub struct Snapshot {
    /// The run (every launch of every profiled DPU).
    pub run: Profile,
    /// The first [`MAX_LAUNCHES`] launches.
    pub launches: Vec<Profile>,
    /// The last launch past those (0: none).
    pub launches_past: u32,
}

/// The run's profile and each launch's, as gathered so far (`None`: no profiler installed).
pub fn snapshot() -> Option<Snapshot> {
    let p = PROFILER.get()?;
    let g = p.sink.state.lock().unwrap_or_else(|e| e.into_inner());
    Some(Snapshot {
        run: g.run.clone(),
        launches: g.launches.clone(),
        launches_past: g.launches_past,
    })
}

/// Functions listed in the run report.
const TOP_FUNCTIONS: usize = 10;

/// The run report's summary of the profile: its top functions.
fn summary() -> Option<ProfileSummary> {
    let p = PROFILER.get()?;
    let g = p.sink.state.lock().unwrap_or_else(|e| e.into_inner());
    let run = &g.run;
    let cycles = run.cycles();
    Some(ProfileSummary {
        dpu_runs: run.run_count,
        cycles,
        top_functions: run
            .functions()
            .into_iter()
            .take(TOP_FUNCTIONS)
            .map(|(name, c)| TopFunction {
                function: name,
                cycles: c.cycles,
                percent: output::percent(c.cycles, cycles),
                instructions: c.slots,
            })
            .collect(),
    })
}

/// Writes the profile's files (at the program's exit); a line on stderr says where, or what
/// went wrong. Never fails the program.
pub fn write_outputs() {
    let Some(p) = PROFILER.get() else { return };
    let Some(Snapshot {
        run,
        launches,
        launches_past,
    }) = snapshot()
    else {
        return;
    };
    let quiet = openpim_runtime::quiet();
    if run.run_count == 0 {
        if !quiet {
            eprintln!(
                "openpim: profile: no DPU run was profiled (DPUs: {}); nothing written to {} — the program launched no DPU of the selection, or its ranks ran in a daemon or MPI workers (the profiler sees local runs only)",
                p.selection.describe(),
                p.dir.display()
            );
        }
        return;
    }
    let note = (launches_past > 0).then(|| {
        format!(
            "launches {}..{launches_past} are in the run's figures only (launches profiled one by one: the first {MAX_LAUNCHES})",
            MAX_LAUNCHES + 1
        )
    });
    match output::write_all(
        &p.dir,
        &p.selection.describe(),
        &run,
        &launches,
        note.as_deref(),
    ) {
        Ok(files) => {
            if !quiet {
                eprintln!(
                    "openpim: profile of {} DPU run(s), {} cycles, written to {} ({})",
                    run.run_count,
                    run.cycles(),
                    p.dir.display(),
                    files.join(", ")
                );
            }
        }
        Err(e) => eprintln!(
            "openpim: profile: cannot write into {}: {e}",
            p.dir.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections() {
        assert_eq!(Selection::parse("all").unwrap(), Selection::All);
        assert_eq!(Selection::parse("").unwrap(), Selection::All);
        assert_eq!(
            Selection::parse("1.7").unwrap(),
            Selection::One { rank: 1, dpu: 7 }
        );
        for bad in ["7", "a.b", "1.", "1.2.3"] {
            let e = Selection::parse(bad).unwrap_err().to_string();
            assert!(e.contains("RANK.DPU"), "{e}");
        }
    }
}
