//! Findings: what the checkers report, printed once on stderr as they are found, gathered
//! for the JSON report's `check` section and the one-line summary at exit.
//!
//! The same finding (same kind, same source locations) on other DPUs or in later launches is
//! counted, not printed again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use serde::Serialize;

/// The kind of a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Two unordered accesses to the same bytes by different tasklets, one a write.
    Race,
    /// A read of bytes never written since the program was loaded.
    UninitialisedRead,
    /// An access past the end of a data symbol.
    SymbolOverrun,
    /// An access to the heap outside every live `mem_alloc` / `buddy_alloc` block.
    AllocationOverrun,
    /// A tasklet's stack pointer went below its stack, into its neighbour's.
    StackOverflow,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Race => "race",
            Kind::UninitialisedRead => "uninitialised-read",
            Kind::SymbolOverrun => "symbol-overrun",
            Kind::AllocationOverrun => "allocation-overrun",
            Kind::StackOverflow => "stack-overflow",
        }
    }
}

/// One access of a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AccessNote {
    pub tasklet: u32,
    /// `read` or `write`.
    pub access: &'static str,
    /// `FILE:LINE` (or the function and offset without DWARF).
    pub location: String,
    pub pc: u32,
}

/// A finding of one DPU run.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub rank: u32,
    pub dpu: u32,
    /// The DPU's launch it was found in (1 for the first launch after the load).
    pub launch: u64,
    pub tasklets: Vec<u32>,
    pub accesses: Vec<AccessNote>,
    /// The variable, stack or heap block and its address.
    pub target: String,
    /// What happened, in words.
    pub detail: String,
    /// DPU runs (DPUs x launches) it was found in.
    pub occurrences: u64,
}

/// The DPU run a finding was last counted in.
type RunKey = (u32, u32, u64);

impl Finding {
    /// The line printed on stderr.
    pub fn line(&self) -> String {
        let accesses: Vec<String> = self
            .accesses
            .iter()
            .map(|a| format!("tasklet {} {} at {}", a.tasklet, a.access, a.location))
            .collect();
        format!(
            "openpim: check: {} on DPU {} of rank {} (launch {}): {} on {}: {}",
            self.kind.name(),
            self.dpu,
            self.rank,
            self.launch,
            accesses.join(" and "),
            self.target,
            self.detail
        )
    }

    /// The same kind at the same lines (in either order) is the same finding.
    fn key(&self) -> (Kind, Vec<String>) {
        let mut lines: Vec<String> = self.accesses.iter().map(|a| a.location.clone()).collect();
        lines.sort();
        (self.kind, lines)
    }
}

/// One tasklet's deepest stack use over the runs of a program.
#[derive(Clone, Debug, Serialize)]
pub struct StackUse {
    pub tasklet: u32,
    /// Bytes below the stack's top the stack pointer reached.
    pub used: u32,
    /// The tasklet's stack (`STACK_SIZE`).
    pub size: u32,
    /// Where it was deepest (`FILE:LINE`).
    pub deepest_at: String,
}

#[derive(Default)]
struct Store {
    findings: Vec<Finding>,
    index: HashMap<(Kind, Vec<String>), (usize, RunKey)>,
    runs: u64,
    dpus: HashSet<(u32, u32)>,
    /// Per program (its name), per tasklet.
    stacks: BTreeMap<String, Vec<StackUse>>,
}

static STORE: Mutex<Option<Store>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut Store) -> R) -> R {
    let mut g = STORE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Store::default))
}

/// A DPU run was checked.
pub fn count_run(rank: u32, dpu: u32) {
    with(|s| {
        s.runs += 1;
        s.dpus.insert((rank, dpu));
    });
}

/// Records `finding`; prints it when it is new.
pub fn record(finding: Finding) {
    let run = (finding.rank, finding.dpu, finding.launch);
    let line = with(|s| match s.index.get_mut(&finding.key()) {
        Some((i, last)) => {
            if *last != run {
                *last = run;
                s.findings[*i].occurrences += 1;
            }
            None
        }
        None => {
            let line = finding.line();
            s.index.insert(finding.key(), (s.findings.len(), run));
            s.findings.push(finding);
            Some(line)
        }
    });
    if let Some(line) = line {
        eprintln!("{line}");
    }
}

/// Records the stack use of a run of `program`.
pub fn record_stacks(program: &str, uses: Vec<StackUse>) {
    with(|s| {
        let entry = s.stacks.entry(program.to_string()).or_default();
        for u in uses {
            match entry.iter_mut().find(|e| e.tasklet == u.tasklet) {
                Some(e) if u.used > e.used => *e = u,
                Some(_) => {}
                None => entry.push(u),
            }
        }
        entry.sort_by_key(|e| e.tasklet);
    });
}

/// The findings so far.
pub fn findings() -> Vec<Finding> {
    with(|s| s.findings.clone())
}

/// The report's `check` section.
pub fn report_section(modes: &str) -> serde_json::Value {
    with(|s| {
        let stacks: Vec<serde_json::Value> = s
            .stacks
            .iter()
            .map(|(p, u)| serde_json::json!({ "program": p, "tasklets": u }))
            .collect();
        serde_json::json!({
            "modes": modes,
            "dpu_runs": s.runs,
            "dpus": s.dpus.len(),
            "findings": s.findings,
            "stacks": stacks,
        })
    })
}

/// The line printed at exit: how many findings of which kinds, over how many runs, and the
/// deepest stack use against its size.
pub fn summary_line(modes: &str) -> Option<String> {
    with(|s| {
        if s.runs == 0 {
            return None;
        }
        let mut by_kind: BTreeMap<Kind, usize> = BTreeMap::new();
        for f in &s.findings {
            *by_kind.entry(f.kind).or_default() += 1;
        }
        let found = if by_kind.is_empty() {
            "no finding".to_string()
        } else {
            let kinds: Vec<String> = by_kind
                .iter()
                .map(|(k, n)| format!("{n} {}", k.name()))
                .collect();
            let total: u64 = s.findings.iter().map(|f| f.occurrences).sum();
            format!(
                "{} finding(s) ({}; {total} occurrence(s) in all)",
                s.findings.len(),
                kinds.join(", ")
            )
        };
        let deepest = s
            .stacks
            .values()
            .flatten()
            .max_by(|a, b| {
                (u64::from(a.used) * u64::from(b.size.max(1)))
                    .cmp(&(u64::from(b.used) * u64::from(a.size.max(1))))
            })
            .map(|u| {
                format!(
                    "; deepest stack: tasklet {} used {} of {} bytes",
                    u.tasklet, u.used, u.size
                )
            })
            .unwrap_or_default();
        Some(format!(
            "openpim: check ({modes}): {found} over {} DPU run(s) on {} DPU(s){deepest}",
            s.runs,
            s.dpus.len()
        ))
    })
}
