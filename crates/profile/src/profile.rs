//! A profile: cycles and slots by source line, by call stack and by wait frame, for one DPU
//! run or summed over many (the DPUs of a launch, the launches of a run).

use std::collections::{BTreeMap, HashMap};

use crate::probe::RunCounts;
use crate::wait::Wait;

/// One frame of a stack: a function and, with DWARF, the line it is at (the issuing line
/// for the leaf, the call site for the others).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameKey {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl FrameKey {
    fn wait(w: Wait) -> FrameKey {
        FrameKey {
            function: w.frame().to_string(),
            file: None,
            line: None,
        }
    }

    /// `file.c:LINE` (the file's last path component), if known.
    pub fn location(&self) -> Option<String> {
        let file = self.file.as_deref()?;
        let short = file.rsplit('/').next().unwrap_or(file);
        Some(format!("{short}:{}", self.line?))
    }
}

/// Cycles and issue slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub cycles: u64,
    pub slots: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.cycles += o.cycles;
        self.slots += o.slots;
    }
}

/// One DPU run in a profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunEntry {
    pub rank: u32,
    pub dpu: u32,
    /// The DPU's launch (1: its first).
    pub launch: u32,
    /// The run's cycles and instructions, as the engine counted them.
    pub cycles: u64,
    pub instructions: u64,
    /// The cycles the profile charged for it (lines and wait frames): always `cycles`.
    pub charged: u64,
}

/// Per-tasklet cycles: issuing work, and per wait frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskletCycles {
    pub issue: u64,
    pub waits: [u64; Wait::ALL.len()],
}

/// DPU runs listed one by one in a profile (the totals count them all): a program with
/// thousands of launches on thousands of DPUs would otherwise hold millions of entries.
pub const LISTED_RUNS: usize = 4096;

/// A profile.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// The first [`LISTED_RUNS`] DPU runs.
    pub runs: Vec<RunEntry>,
    /// Every DPU run: how many, their cycles and instructions, and whether each was charged
    /// exactly its cycles.
    pub run_count: u64,
    pub total_cycles: u64,
    pub total_instructions: u64,
    pub inexact_runs: u64,
    /// Some program of it had DWARF lines.
    pub has_lines: bool,
    /// Per source line (the innermost frame of the issuing pc; wait frames have no line).
    pub lines: HashMap<FrameKey, Counts>,
    /// Cycles per stack (outermost first).
    pub stacks: HashMap<Vec<FrameKey>, u64>,
    pub tasklets: BTreeMap<u32, TaskletCycles>,
}

impl Profile {
    /// The profile of one DPU run.
    pub(crate) fn of_run(entry: RunEntry, c: &RunCounts) -> Profile {
        let code = &c.code;
        let mut p = Profile {
            has_lines: code.has_lines(),
            ..Profile::default()
        };
        let key = |f: &openpim_debuginfo::Frame| FrameKey {
            function: f.function.clone(),
            file: f.file.clone(),
            line: f.line,
        };
        for (i, (&cycles, &slots)) in c.cycles.iter().zip(&c.slots).enumerate() {
            if cycles == 0 && slots == 0 {
                continue;
            }
            let pc = code.base.wrapping_add((i as u32) << 2);
            let frames = code.frames_outer_first(pc);
            if let Some(inner) = frames.last() {
                *p.lines.entry(key(inner)).or_default() += Counts { cycles, slots };
            }
        }
        let mut sites: HashMap<u32, Vec<FrameKey>> = HashMap::new();
        for ((node, pc), n) in c.stacks() {
            let prefix = sites.entry(node).or_insert_with(|| {
                c.tree
                    .callsites(node)
                    .into_iter()
                    .flat_map(|s| code.frames_outer_first(s))
                    .map(|f| key(&f))
                    .collect()
            });
            let mut stack = prefix.clone();
            stack.extend(code.frames_outer_first(pc).iter().map(key));
            *p.stacks.entry(stack).or_insert(0) += n;
        }
        for w in Wait::ALL {
            let n = c.waits[w.index()];
            if n > 0 {
                p.lines.entry(FrameKey::wait(w)).or_default().cycles += n;
                *p.stacks.entry(vec![FrameKey::wait(w)]).or_insert(0) += n;
            }
        }
        for (t, (issue, waits)) in c.tasklets.iter().enumerate() {
            p.tasklets.insert(
                t as u32,
                TaskletCycles {
                    issue: *issue,
                    waits: *waits,
                },
            );
        }
        let mut entry = entry;
        entry.charged = p.lines.values().map(|l| l.cycles).sum();
        p.run_count = 1;
        p.total_cycles = entry.cycles;
        p.total_instructions = entry.instructions;
        p.inexact_runs = u64::from(entry.charged != entry.cycles);
        p.runs.push(entry);
        p
    }

    /// Adds `other` to this profile.
    pub fn absorb(&mut self, other: &Profile) {
        let room = LISTED_RUNS.saturating_sub(self.runs.len());
        self.runs.extend(other.runs.iter().take(room).cloned());
        self.run_count += other.run_count;
        self.total_cycles += other.total_cycles;
        self.total_instructions += other.total_instructions;
        self.inexact_runs += other.inexact_runs;
        self.has_lines |= other.has_lines;
        for (k, v) in &other.lines {
            *self.lines.entry(k.clone()).or_default() += *v;
        }
        for (k, v) in &other.stacks {
            *self.stacks.entry(k.clone()).or_insert(0) += v;
        }
        for (t, v) in &other.tasklets {
            let mine = self.tasklets.entry(*t).or_default();
            mine.issue += v.issue;
            for (a, b) in mine.waits.iter_mut().zip(v.waits) {
                *a += b;
            }
        }
    }

    /// Cycles of the DPU runs (what the lines sum to).
    pub fn cycles(&self) -> u64 {
        self.total_cycles
    }

    pub fn instructions(&self) -> u64 {
        self.total_instructions
    }

    /// Per function: self cycles and slots (the function that issued: the innermost frame,
    /// an inlined function being its own), sorted by cycles, most first.
    pub fn functions(&self) -> Vec<(String, Counts)> {
        let mut by: HashMap<&str, Counts> = HashMap::new();
        for (k, v) in &self.lines {
            *by.entry(&k.function).or_default() += *v;
        }
        let mut v: Vec<(String, Counts)> =
            by.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        v.sort_by(|a, b| b.1.cycles.cmp(&a.1.cycles).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// Per function: cycles of the stacks it is on (itself and what it called).
    pub fn inclusive(&self) -> HashMap<String, u64> {
        let mut by: HashMap<String, u64> = HashMap::new();
        for (stack, n) in &self.stacks {
            let mut seen: Vec<&str> = Vec::new();
            for f in stack {
                if !seen.contains(&f.function.as_str()) {
                    seen.push(&f.function);
                    *by.entry(f.function.clone()).or_insert(0) += n;
                }
            }
        }
        by
    }

    /// Lines sorted by cycles, most first.
    pub fn lines_sorted(&self) -> Vec<(&FrameKey, Counts)> {
        let mut v: Vec<(&FrameKey, Counts)> = self.lines.iter().map(|(k, v)| (k, *v)).collect();
        v.sort_by(|a, b| b.1.cycles.cmp(&a.1.cycles).then_with(|| a.0.cmp(b.0)));
        v
    }

    /// Folded stacks: `frame;frame;...;leaf COUNT`, function names outermost first, COUNT in
    /// cycles; stacks that differ only in lines are one. Sorted, for stable files.
    pub fn folded(&self) -> Vec<(String, u64)> {
        let mut by: BTreeMap<String, u64> = BTreeMap::new();
        for (stack, n) in &self.stacks {
            let names: Vec<&str> = stack.iter().map(|f| f.function.as_str()).collect();
            *by.entry(names.join(";")).or_insert(0) += n;
        }
        by.into_iter().filter(|(_, n)| *n > 0).collect()
    }
}
