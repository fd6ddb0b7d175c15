//! The profiler's observer of one DPU run: charges every cycle once (to the slot issued in
//! it, or to a wait frame), follows each tasklet's call stack from the calls and returns it
//! issues, and accounts each tasklet's cycles (issuing or waiting, and for what).

use std::collections::HashMap;
use std::sync::Arc;

use openpim_engine::probe::{DpuView, Probe, Slot, SyncEvent, TaskletState};
use openpim_engine::{Fault, RunOutcome};
use openpim_runtime::observe::{RunObserver, RunSite};

use crate::code::{Code, Flow};
use crate::wait::{Wait, SLEEP_ORDER};
use crate::Sink;

/// Deepest call stack followed; deeper calls (runaway recursion) are charged to the deepest
/// frame kept, so that a stack overflow does not cost the host unbounded memory.
const MAX_DEPTH: u32 = 512;

/// A fast hasher for the per-slot map keys (small integers from the run, not attacker-chosen
/// in a way that matters: a bad distribution only slows the profile): one multiply per word,
/// where the standard SipHash costs a measurable share of a profiled run.
#[derive(Default, Clone, Copy)]
pub(crate) struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<WordHasher>>;

/// Call-tree nodes whose cycles are counted in dense rows (a row is 8 bytes per instruction
/// of the program: at most 48 KiB).
const DENSE_NODES: usize = 128;

/// A node of the call tree: the stack up to a call site.
#[derive(Clone, Copy)]
struct Node {
    parent: u32,
    /// Byte address of the call instruction.
    callsite: u32,
    depth: u32,
}

/// The call tree of one run (node 0 is the root: no call made yet).
pub(crate) struct CallTree {
    nodes: Vec<Node>,
    children: FastMap<(u32, u32), u32>,
}

impl CallTree {
    fn new() -> CallTree {
        CallTree {
            nodes: vec![Node {
                parent: 0,
                callsite: 0,
                depth: 0,
            }],
            children: FastMap::default(),
        }
    }

    fn call(&mut self, node: u32, callsite: u32) -> u32 {
        let depth = self.nodes[node as usize].depth;
        if depth >= MAX_DEPTH {
            return node;
        }
        let next = self.nodes.len() as u32;
        *self.children.entry((node, callsite)).or_insert_with(|| {
            self.nodes.push(Node {
                parent: node,
                callsite,
                depth: depth + 1,
            });
            next
        })
    }

    /// The node a return to `pc` from `node` lands in: the caller whose call site is just
    /// before `pc`; `node` unchanged when no frame matches (a return the calls did not
    /// announce, e.g. a jump into the middle of a function).
    fn ret(&self, node: u32, pc: u32) -> u32 {
        let mut n = node;
        while n != 0 {
            let d = self.nodes[n as usize];
            if d.callsite.wrapping_add(4) == pc {
                return d.parent;
            }
            n = d.parent;
        }
        node
    }

    /// The call sites of `node`, outermost first.
    pub(crate) fn callsites(&self, node: u32) -> Vec<u32> {
        let mut v = Vec::new();
        let mut n = node;
        while n != 0 {
            let d = self.nodes[n as usize];
            v.push(d.callsite);
            n = d.parent;
        }
        v.reverse();
        v
    }
}

/// What a tasklet is doing, as the profiler follows it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Doing {
    Running,
    Sleeping(Wait),
    Exited,
}

/// One tasklet's state and its cycles.
struct Tasklet {
    node: u32,
    doing: Doing,
    /// Cycle of its last slot.
    last: Option<u64>,
    /// When its last slot started a transfer: the cycle it may issue again (later than the
    /// revolver allows); else 0.
    dma_until: u64,
    /// Its last slot was a failed lock acquire (it spins on a held lock).
    spinning: bool,
    /// The slot now issuing made a failed acquire.
    failed_acquire: bool,
    /// It slept in its last slot (for what) and was woken at this cycle (`None`: not yet).
    slept: Option<(Wait, Option<u64>)>,
    /// The slot now issuing put it to sleep (its sync event comes before the slot ends).
    falling_asleep: Option<Wait>,
    /// Cycles issuing work, then per wait frame.
    issue: u64,
    waits: [u64; Wait::ALL.len()],
}

impl Tasklet {
    fn new() -> Tasklet {
        Tasklet {
            node: 0,
            doing: Doing::Running,
            last: None,
            dma_until: 0,
            spinning: false,
            failed_acquire: false,
            slept: None,
            falling_asleep: None,
            issue: 0,
            waits: [0; Wait::ALL.len()],
        }
    }

    /// Charges the cycles between its last slot and cycle `until` (exclusive), in which it
    /// did not issue, to what it waited for.
    fn account_gap(&mut self, until: u64, revolver: u64) {
        let start = self.last.map_or(0, |l| l + 1);
        let gap = until.saturating_sub(start);
        if gap == 0 {
            self.slept = None;
            return;
        }
        let mut rest = gap;
        if let Some((kind, woke)) = self.slept.take() {
            let asleep = woke.map_or(gap, |w| (w + 1).saturating_sub(start).min(gap));
            self.waits[kind.index()] += asleep;
            rest -= asleep;
        } else if self.spinning {
            self.waits[Wait::Mutex.index()] += rest;
            rest = 0;
        } else if self.dma_until > 0 {
            let free_at = self.last.map_or(0, |l| l + revolver);
            let dma = self.dma_until.saturating_sub(free_at).min(rest);
            self.waits[Wait::Dma.index()] += dma;
            rest -= dma;
        }
        self.waits[Wait::Revolver.index()] += rest;
    }
}

/// The wait frame of an idle cycle from `from` on, given each tasklet's scheduling state
/// and what the profiler knows of it (the rule of `crate::wait`).
fn idle_wait<'t>(tasklets: impl Iterator<Item = (TaskletState, &'t Tasklet)>, from: u64) -> Wait {
    let (mut dma, mut revolver, mut spin) = (false, false, false);
    let mut sleeping = [false; SLEEP_ORDER.len()];
    for (state, me) in tasklets {
        match state {
            TaskletState::Running { .. } => {
                if me.dma_until > from {
                    dma = true;
                } else if me.spinning {
                    spin = true;
                } else {
                    revolver = true;
                }
            }
            TaskletState::Sleeping => {
                let kind = match me.doing {
                    Doing::Sleeping(k) => k,
                    _ => Wait::Sleep,
                };
                if let Some(i) = SLEEP_ORDER.iter().position(|s| *s == kind) {
                    sleeping[i] = true;
                }
            }
            TaskletState::Exited => {}
        }
    }
    if dma {
        Wait::Dma
    } else if revolver {
        Wait::Revolver
    } else if spin {
        Wait::Mutex
    } else if let Some(i) = sleeping.iter().position(|s| *s) {
        SLEEP_ORDER[i]
    } else {
        Wait::End
    }
}

/// The raw counts of one DPU run, by instruction and by stack.
pub(crate) struct RunCounts {
    pub(crate) code: Arc<Code>,
    pub(crate) tree: CallTree,
    /// Per instruction (index into the text): cycles charged, slots issued.
    pub(crate) cycles: Vec<u64>,
    pub(crate) slots: Vec<u64>,
    /// Cycles per call-tree node and instruction: a dense row per node for the first
    /// [`DENSE_NODES`] nodes (one index per slot, no hashing), then a map.
    rows: Vec<Option<Box<[u64]>>>,
    sparse: FastMap<(u32, u32), u64>,
    /// Cycles per wait frame.
    pub(crate) waits: [u64; Wait::ALL.len()],
    /// Per tasklet: cycles issuing, cycles per wait frame.
    pub(crate) tasklets: Vec<(u64, [u64; Wait::ALL.len()])>,
    pub(crate) outcome_cycles: u64,
    pub(crate) outcome_instructions: u64,
    /// Cycles charged before the trailing ones (must not exceed the run's cycles).
    pub(crate) charged: u64,
}

impl RunCounts {
    /// Cycles per (call-tree node, pc), every nonzero one.
    pub(crate) fn stacks(&self) -> Vec<((u32, u32), u64)> {
        let mut v: Vec<((u32, u32), u64)> = self.sparse.iter().map(|(k, n)| (*k, *n)).collect();
        for (node, row) in self.rows.iter().enumerate() {
            let Some(row) = row else { continue };
            for (i, &n) in row.iter().enumerate() {
                if n > 0 {
                    let pc = self.code.base.wrapping_add((i as u32) << 2);
                    v.push(((node as u32, pc), n));
                }
            }
        }
        v
    }
}

/// The observer of one DPU run.
pub(crate) struct DpuProfiler {
    counts: RunCounts,
    tasklets: Vec<Tasklet>,
    revolver: u64,
    launch: u32,
    sink: Arc<Sink>,
}

impl DpuProfiler {
    pub(crate) fn new(code: Arc<Code>, launch: u32, sink: Arc<Sink>) -> DpuProfiler {
        let n = code.len();
        DpuProfiler {
            counts: RunCounts {
                code,
                tree: CallTree::new(),
                cycles: vec![0; n],
                slots: vec![0; n],
                rows: Vec::new(),
                sparse: FastMap::default(),
                waits: [0; Wait::ALL.len()],
                tasklets: Vec::new(),
                outcome_cycles: 0,
                outcome_instructions: 0,
                charged: 0,
            },
            tasklets: (0..openpim_engine::map::MAX_TASKLETS)
                .map(|_| Tasklet::new())
                .collect(),
            revolver: 11,
            launch,
            sink,
        }
    }

    fn charge_pc(&mut self, tasklet: usize, pc: u32, slots: u64) {
        let c = &mut self.counts;
        if let Some(i) = c.code.index(pc) {
            c.cycles[i] += 1;
            c.slots[i] += slots;
        }
        let node = self.tasklets[tasklet].node;
        match c.code.index(pc) {
            Some(i) if (node as usize) < DENSE_NODES => {
                let n = node as usize;
                if c.rows.len() <= n {
                    c.rows.resize_with(n + 1, || None);
                }
                let len = c.cycles.len();
                c.rows[n].get_or_insert_with(|| vec![0; len].into_boxed_slice())[i] += 1;
            }
            _ => *c.sparse.entry((node, pc)).or_insert(0) += 1,
        }
        c.charged += 1;
    }

    /// The wait frame of idle cycles from `from` (the rule of `crate::wait`).
    fn idle_kind(&self, dpu: &DpuView<'_, '_>, from: u64) -> Wait {
        idle_wait(
            (0..dpu.nr_tasklets()).map(|t| (dpu.state(t), &self.tasklets[t as usize])),
            from,
        )
    }

    /// What tasklet `t` sleeping at `pc` waits for (from its stack).
    fn sleep_kind(&self, t: usize, pc: u32) -> Wait {
        let code = &self.counts.code;
        let mut frames = code.frames_outer_first(pc);
        frames.reverse();
        let mut sites = self.counts.tree.callsites(self.tasklets[t].node);
        sites.reverse();
        for site in sites {
            let mut f = code.frames_outer_first(site);
            f.reverse();
            frames.extend(f);
        }
        Wait::of_sleep(&frames)
    }
}

impl Probe for DpuProfiler {
    fn after_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot, ops: u32) {
        let t = slot.tasklet as usize;
        if t >= self.tasklets.len() {
            return;
        }
        self.revolver = dpu.revolver_cycles();
        self.charge_pc(t, slot.pc, 1);
        let revolver = self.revolver;
        let me = &mut self.tasklets[t];
        me.account_gap(slot.cycle, revolver);
        if me.failed_acquire {
            me.waits[Wait::Mutex.index()] += 1;
        } else {
            me.issue += 1;
        }
        me.spinning = me.failed_acquire;
        me.failed_acquire = false;
        // (After the gap before this slot is accounted: the sleep starts now.)
        if let Some(kind) = me.falling_asleep.take() {
            me.slept = Some((kind, None));
        }
        me.last = Some(slot.cycle);
        me.dma_until = 0;
        match dpu.state(slot.tasklet) {
            TaskletState::Running { ready_at } => {
                if ready_at > slot.cycle + revolver {
                    me.dma_until = ready_at;
                }
                me.doing = Doing::Running;
            }
            TaskletState::Sleeping => {}
            TaskletState::Exited => me.doing = Doing::Exited,
        }
        // The call stack: the last instruction of the slot is the one that may transfer
        // control (a fused group ends with its branch or jump).
        if ops > 0 {
            let last = slot.pc.wrapping_add(4 * (ops - 1));
            match self.counts.code.flow_at(last) {
                Flow::Call => {
                    let node = self.tasklets[t].node;
                    self.tasklets[t].node = self.counts.tree.call(node, last);
                }
                Flow::Return => {
                    let node = self.tasklets[t].node;
                    self.tasklets[t].node = self.counts.tree.ret(node, dpu.pc(slot.tasklet));
                }
                Flow::Other => {}
            }
        }
    }

    fn idle(&mut self, dpu: &mut DpuView<'_, '_>, from: u64, to: u64) {
        let kind = self.idle_kind(dpu, from);
        let n = to.saturating_sub(from);
        self.counts.waits[kind.index()] += n;
        self.counts.charged += n;
    }

    fn sync(&mut self, cycle: u64, tasklet: u32, pc: u32, event: &SyncEvent) {
        let t = tasklet as usize;
        if t >= self.tasklets.len() {
            return;
        }
        match *event {
            SyncEvent::Acquire {
                acquired: false, ..
            } => self.tasklets[t].failed_acquire = true,
            SyncEvent::Sleep { slept: true } => {
                let kind = self.sleep_kind(t, pc);
                let me = &mut self.tasklets[t];
                me.doing = Doing::Sleeping(kind);
                me.falling_asleep = Some(kind);
            }
            SyncEvent::Resume { target, woke: true } => {
                if let Some(other) = self.tasklets.get_mut(target as usize) {
                    other.doing = Doing::Running;
                    if let Some((kind, None)) = other.slept {
                        other.slept = Some((kind, Some(cycle)));
                    }
                }
            }
            SyncEvent::Exit => self.tasklets[t].doing = Doing::Exited,
            _ => {}
        }
    }

    fn fault(&mut self, _dpu: &mut DpuView<'_, '_>, tasklet: u32, pc: u32, _fault: &Fault) {
        // The faulting slot's cycle goes to the instruction that faulted (no slot issued).
        if self.counts.code.index(pc).is_some() && (tasklet as usize) < self.tasklets.len() {
            self.charge_pc(tasklet as usize, pc, 0);
        }
    }
}

impl RunObserver for DpuProfiler {
    fn finish(mut self: Box<Self>, site: &RunSite, outcome: &RunOutcome) {
        let end = outcome.cycles;
        // The run's last cycles, after its last slot: charged by the rule, with the machine
        // as the last slot left it.
        let trailing = end.saturating_sub(self.counts.charged);
        if trailing > 0 {
            let kind = if self
                .tasklets
                .iter()
                .any(|t| t.dma_until > self.counts.charged)
            {
                Wait::Dma
            } else {
                SLEEP_ORDER
                    .iter()
                    .copied()
                    .find(|k| self.tasklets.iter().any(|t| t.doing == Doing::Sleeping(*k)))
                    .unwrap_or(Wait::End)
            };
            self.counts.waits[kind.index()] += trailing;
        }
        let nr = site.program.nr_tasklets() as usize;
        let revolver = self.revolver;
        for t in self.tasklets.iter_mut().take(nr) {
            if t.doing != Doing::Exited {
                t.account_gap(end, revolver);
            }
        }
        self.counts.tasklets = self
            .tasklets
            .iter()
            .take(nr)
            .map(|t| (t.issue, t.waits))
            .collect();
        self.counts.outcome_cycles = end;
        self.counts.outcome_instructions = outcome.instructions;
        let launch = self.launch;
        self.sink.record(site, launch, self.counts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_find_their_caller() {
        let mut tree = CallTree::new();
        let a = tree.call(0, 0x100);
        let b = tree.call(a, 0x200);
        assert_eq!(tree.callsites(b), vec![0x100, 0x200]);
        assert_eq!(tree.ret(b, 0x204), a);
        // A return two frames up (a frame the calls did not see return) pops both.
        assert_eq!(tree.ret(b, 0x104), 0);
        // A return to nowhere known keeps the stack.
        assert_eq!(tree.ret(b, 0x999), b);
        // The same call from the same stack is the same node.
        assert_eq!(tree.call(a, 0x200), b);
    }

    #[test]
    fn gap_splits_into_dma_and_revolver() {
        let mut t = Tasklet::new();
        t.last = Some(100);
        t.dma_until = 150;
        t.account_gap(160, 11);
        // Free of the revolver at 111; its transfer holds it to 150; it issues at 160.
        assert_eq!(t.waits[Wait::Dma.index()], 39);
        assert_eq!(t.waits[Wait::Revolver.index()], 20);
    }

    #[test]
    fn idle_cycles_by_the_rule() {
        let running = TaskletState::Running { ready_at: 200 };
        let mut dma = Tasklet::new();
        dma.dma_until = 200;
        let turn = Tasklet::new();
        let mut spin = Tasklet::new();
        spin.spinning = true;
        let mut barrier = Tasklet::new();
        barrier.doing = Doing::Sleeping(Wait::Barrier);
        let mut sem = Tasklet::new();
        sem.doing = Doing::Sleeping(Wait::Semaphore);
        let exited = Tasklet::new();
        let wait = |v: Vec<(TaskletState, &Tasklet)>| idle_wait(v.into_iter(), 100);
        let asleep = TaskletState::Sleeping;
        assert_eq!(wait(vec![(running, &turn), (running, &dma)]), Wait::Dma);
        assert_eq!(
            wait(vec![(running, &spin), (running, &turn)]),
            Wait::Revolver
        );
        assert_eq!(
            wait(vec![(running, &spin), (asleep, &barrier)]),
            Wait::Mutex
        );
        assert_eq!(
            wait(vec![(asleep, &sem), (asleep, &barrier)]),
            Wait::Barrier
        );
        assert_eq!(wait(vec![(asleep, &sem)]), Wait::Semaphore);
        assert_eq!(wait(vec![(TaskletState::Exited, &exited)]), Wait::End);
        // A transfer that ended before the idle cycles is no longer waited for.
        let mut done = Tasklet::new();
        done.dma_until = 90;
        assert_eq!(wait(vec![(running, &done)]), Wait::Revolver);
    }

    #[test]
    fn gap_of_a_sleep() {
        let mut t = Tasklet::new();
        t.last = Some(10);
        t.slept = Some((Wait::Barrier, Some(40)));
        t.account_gap(52, 11);
        assert_eq!(t.waits[Wait::Barrier.index()], 30);
        assert_eq!(t.waits[Wait::Revolver.index()], 11);
    }
}
