//! The run report: the virtual timeline broken into the literature's phases, totals per rank,
//! per-launch statistics and advice; as a text table, as JSON (`docs/report-schema.md`,
//! `docs/report.schema.json`) and as a Chrome/Perfetto trace.
//!
//! Programs ask for it with environment variables (`openpim run --report/--trace` sets them):
//! `OPENPIM_REPORT=1` prints the table on stderr at exit, `OPENPIM_REPORT=FILE.json` writes
//! the JSON, `OPENPIM_TRACE=FILE.json` writes the trace.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use openpim_machine::{Nanos, Phase};
use serde::{Deserialize, Serialize};

use crate::clock::timeline::{self, State};

/// Version of the JSON report's schema.
pub const SCHEMA_VERSION: u32 = 1;

/// Environment variable: `1` (table on stderr) or a `.json` path.
pub const REPORT_ENV: &str = "OPENPIM_REPORT";
/// Environment variable: path of the trace to write.
pub const TRACE_ENV: &str = "OPENPIM_TRACE";

/// Nanoseconds per phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Phases {
    pub cpu_dpu_ns: u64,
    pub dpu_kernel_ns: u64,
    pub inter_dpu_ns: u64,
    pub dpu_cpu_ns: u64,
    pub host_ns: u64,
    pub alloc_load_ns: u64,
}

impl Phases {
    fn from_fn(f: impl Fn(Phase) -> Nanos) -> Phases {
        Phases {
            cpu_dpu_ns: f(Phase::CpuDpu),
            dpu_kernel_ns: f(Phase::DpuKernel),
            inter_dpu_ns: f(Phase::InterDpu),
            dpu_cpu_ns: f(Phase::DpuCpu),
            host_ns: f(Phase::Host),
            alloc_load_ns: f(Phase::AllocLoad),
        }
    }

    /// The time of one phase.
    pub fn get(&self, p: Phase) -> u64 {
        match p {
            Phase::CpuDpu => self.cpu_dpu_ns,
            Phase::DpuKernel => self.dpu_kernel_ns,
            Phase::InterDpu => self.inter_dpu_ns,
            Phase::DpuCpu => self.dpu_cpu_ns,
            Phase::Host => self.host_ns,
            Phase::AllocLoad => self.alloc_load_ns,
        }
    }

    /// Sum of the phases.
    pub fn total(&self) -> u64 {
        Phase::ALL.iter().map(|p| self.get(*p)).sum()
    }
}

/// The emulated hardware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareReport {
    pub profile: String,
    pub frequency_mhz: u32,
    pub revolver_cycles: u32,
}

/// One rank slot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: u32,
    pub dpus: u32,
    /// Time allocated (host clock), summed over its allocations.
    pub allocated_ns: u64,
    /// Busy time per phase on the rank's timeline.
    pub busy: Phases,
    /// Allocated but not busy.
    pub idle_ns: u64,
    /// Longest stretch allocated and not busy.
    pub longest_idle_ns: u64,
    pub launches: u64,
}

/// One rank's part of a launch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchRankReport {
    pub rank: u32,
    pub dpus: u32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub cycles: u64,
    pub instructions: u64,
    pub faults: u32,
}

/// One `dpu_launch` call (its ranks' launches, grouped by issue time).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LaunchReport {
    pub id: u32,
    pub issue_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub ranks: u32,
    pub dpus: u32,
    /// Most tasklets of a DPU.
    pub tasklets: u32,
    /// Cycles of the slowest DPU.
    pub cycles: u64,
    /// Instructions, all DPUs.
    pub instructions: u64,
    /// Instructions per cycle, averaged over the DPUs' cycles (at most 1).
    pub ipc: f64,
    pub dma_bytes: u64,
    pub dma_requests: u64,
    /// Average DMA engine busy time per DPU.
    pub dma_time_ns: u64,
    /// Fraction of tasklet-time spent runnable (not asleep, not waiting for DMA).
    pub tasklet_utilisation: f64,
    /// Fraction of tasklet-time spent asleep on synchronisation.
    pub sync_wait_fraction: f64,
    pub faults: u32,
    pub per_rank: Vec<LaunchRankReport>,
    /// A debugger stepped tasklets with the others frozen (scheduler-locking) in this
    /// launch: its schedule and cycles are not those of a run without the debugger.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stepped: bool,
}

/// Transfer counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TransferReport {
    pub serial_to_dpu: u64,
    pub parallel_to_dpu: u64,
    pub broadcast_to_dpu: u64,
    pub serial_from_dpu: u64,
    pub parallel_from_dpu: u64,
    pub bytes_to_dpus: u64,
    pub bytes_from_dpus: u64,
    /// Modeled bus time, summed over rank operations.
    pub bus_to_dpu_ns: u64,
    pub bus_from_dpu_ns: u64,
    /// Measured time of the host-side byte interleaving, summed.
    pub host_interleave_ns: u64,
    /// Rank operations dominated by the fixed per-call cost.
    pub small_transfers: u64,
    pub small_transfers_ns: u64,
    /// Serial transfers that came in runs (loops) over DPUs.
    pub serial_in_loops: u64,
    /// Transfers that were a rank's first MRAM access after a launch, and so first switched
    /// its MRAM back to the host (`[launch] mux_switch_ns` each), by direction, and the time
    /// of those switches (inside the transfers' phases).
    #[serde(default)]
    pub mux_switches_to_dpu: u64,
    #[serde(default)]
    pub mux_switches_from_dpu: u64,
    #[serde(default)]
    pub mux_switch_ns: u64,
}

/// One exchange between DPUs (a program-marked region or a collective), see
/// [`crate::clock::inter_dpu`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InterDpuReport {
    pub id: u32,
    /// `region` (program-marked) or the collective (`all_reduce`, `alltoall`, ...).
    pub primitive: String,
    pub label: String,
    /// Communicating axes (a PID-Comm `comm` string; empty for a region).
    pub axes: String,
    /// Bytes moved (the caller's count, else the transfers issued inside it).
    pub bytes: u64,
    /// How: `host`, `optimized`, `baseline`, `interconnect ...`.
    pub path: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Modeled DPU-to-DPU link time inside it, summed over ranks.
    pub link_ns: u64,
}

/// Where MRAM lived and what keeping it there cost (wall time only: none of it is on the
/// virtual timeline).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// The backing store (`anon`, `file:DIR`, `cached:DIR`; empty when nothing was allocated).
    pub store: String,
    /// The persistence horizon of a file-backed store.
    pub persist: Option<String>,
    /// The DRAM budget of `cached`.
    pub budget_bytes: Option<u64>,
    /// MRAM resident in memory at the end (page cache for file-backed stores).
    pub resident_bytes: u64,
    /// Highest resident + admitted figure the budget saw (`cached`).
    pub peak_resident_bytes: u64,
    /// MRAM bytes mapped from shared pages instead of copied (deduplication).
    pub dedup_bytes: u64,
    /// Regions made durable, and the wall time it took.
    pub flushes: u64,
    pub flush_ns: u64,
    /// Regions written back and dropped to stay within the budget, and the wall time.
    pub evictions: u64,
    pub evict_ns: u64,
}

impl MemoryReport {
    fn now() -> MemoryReport {
        let Some(store) = openpim_machine::process_store() else {
            return MemoryReport::default();
        };
        let s = store.stats();
        MemoryReport {
            store: s.store,
            persist: s.persist.map(str::to_string),
            budget_bytes: s.budget,
            resident_bytes: s.resident,
            peak_resident_bytes: s.peak_resident,
            dedup_bytes: s.dedup_bytes,
            flushes: s.flushes,
            flush_ns: s.flush_ns,
            evictions: s.evictions,
            evict_ns: s.evict_ns,
        }
    }
}

/// One piece of advice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    /// Stable identifier: `idle_ranks`, `serial_transfers_in_loops`, `small_transfers`,
    /// `few_tasklets`, `small_mram_transfers`, `tolerated_dma`, `host_mediated_exchange`,
    /// `all_tasklets_waiting`.
    pub id: String,
    pub message: String,
}

/// The whole report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub generator: String,
    pub hardware: HardwareReport,
    /// Virtual time of the run (the host clock at the end).
    pub total_ns: u64,
    /// The host timeline by phase (adds up to `total_ns`).
    pub phases: Phases,
    pub sdk_calls: u64,
    pub ranks: Vec<RankReport>,
    pub launches: Vec<LaunchReport>,
    pub transfers: TransferReport,
    /// Exchanges between DPUs, in order (their time is `phases.inter_dpu_ns`).
    #[serde(default)]
    pub inter_dpu: Vec<InterDpuReport>,
    /// The MRAM backing store.
    #[serde(default)]
    pub memory: MemoryReport,
    /// The remote path's cost (runs through the rank-manager daemon only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteReport>,
    /// The DPU engine that ran the launches in this process (absent when none ran here: no
    /// launch, or the ranks were a daemon's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<crate::clock::engine_use::EngineReport>,
    /// The MPI workers that ran the ranks (distributed runs only: `openpim run --mpi N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<Vec<WorkerReport>>,
    /// The messages between the program and its MPI workers, by kind of request
    /// (distributed runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mpi_traffic: Option<Vec<TrafficReport>>,
    /// The profiler's summary (runs under `openpim profile` / `OPENPIM_PROFILE` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileSummary>,
    /// The checkers' findings and stack report (`openpim run --check`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<serde_json::Value>,
    pub advice: Vec<Advice>,
}

/// The profiler's summary in the run report: its top functions over the run
/// (docs/profiling.md; the profile's own files have the rest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProfileSummary {
    /// DPU runs profiled (each DPU's launches count one each).
    pub dpu_runs: u64,
    /// Their cycles, summed.
    pub cycles: u64,
    /// The functions that issued the most cycles (wait frames included), most first.
    pub top_functions: Vec<TopFunction>,
}

/// One function of [`ProfileSummary::top_functions`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TopFunction {
    pub function: String,
    /// Cycles charged to its own instructions (or to the wait frame).
    pub cycles: u64,
    /// Of all profiled cycles.
    pub percent: f64,
    pub instructions: u64,
}

/// Where the report gets the profiler's summary from (the profiler crate sets it).
static PROFILE_SOURCE: std::sync::OnceLock<fn() -> Option<ProfileSummary>> =
    std::sync::OnceLock::new();

/// Makes the report include the profiler's summary (`f` is asked when a report is built).
pub fn set_profile_source(f: fn() -> Option<ProfileSummary>) {
    let _ = PROFILE_SOURCE.set(f);
}

/// Makes the report's `check` section (installed by the checkers, `openpim-check`).
pub type CheckSection = fn() -> serde_json::Value;

static CHECK_SECTION: std::sync::RwLock<Option<CheckSection>> = std::sync::RwLock::new(None);

/// Installs what fills the report's `check` section.
pub fn set_check_section(section: CheckSection) {
    *CHECK_SECTION.write().unwrap_or_else(|e| e.into_inner()) = Some(section);
}

/// The messages of one kind of request between the program and its MPI workers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrafficReport {
    /// `open`, `close`, `load`, `write`, `broadcast`, `read`, `launch`, `log`, `stats`;
    /// `batched writes`, or `launch+batched writes` (and so on) for small writes that waited
    /// for the rank's next operation and travelled with it; `shared buffer` (an MPI
    /// broadcast); `collective` (a collective's host step run in the workers) and
    /// `collective: between workers` (the lines the workers sent each other for it, counted
    /// in `messages` and `bytes_to_workers`: none of it crosses the gateway).
    pub kind: String,
    /// Requests sent (one per worker of a call), each answered by one reply.
    pub messages: u64,
    /// Bytes of the requests and of the replies.
    pub bytes_to_workers: u64,
    pub bytes_from_workers: u64,
    /// Of `bytes_from_workers`, the read data the gateway wrote into the program's buffers
    /// itself (`OPENPIM_MPI_INPLACE`) rather than through its socket.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes_in_place: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The MPI traffic so far, by kind.
static TRAFFIC: std::sync::Mutex<Vec<TrafficReport>> = std::sync::Mutex::new(Vec::new());

/// Counts a request of `kind` to a worker (`out` bytes) and its reply (`back` bytes).
pub(crate) fn count_mpi_message(kind: &str, out: u64, back: u64) {
    count_mpi_traffic(kind, 1, out, back);
}

/// Counts `bytes` more from the workers for a message of `kind` already counted: read data
/// the gateway wrote into the program's buffers in place.
pub(crate) fn count_mpi_in_place(kind: &str, bytes: u64) {
    add_mpi_traffic(kind, 0, 0, bytes, bytes);
}

/// Counts `messages` of `kind` carrying `out` bytes to workers and `back` bytes from them.
pub(crate) fn count_mpi_traffic(kind: &str, messages: u64, out: u64, back: u64) {
    add_mpi_traffic(kind, messages, out, back, 0);
}

fn add_mpi_traffic(kind: &str, messages: u64, out: u64, back: u64, in_place: u64) {
    let mut t = TRAFFIC.lock().unwrap_or_else(|e| e.into_inner());
    let at = match t.iter().position(|r| r.kind == kind) {
        Some(at) => at,
        None => {
            t.push(TrafficReport {
                kind: kind.to_string(),
                ..Default::default()
            });
            t.len() - 1
        }
    };
    t[at].messages += messages;
    t[at].bytes_to_workers += out;
    t[at].bytes_from_workers += back;
    t[at].bytes_in_place += in_place;
}

/// One MPI worker of a distributed run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerReport {
    /// Its rank in the MPI job (the gateway is 0).
    pub mpi_rank: u32,
    /// The machine it ran on.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
    /// The machine's rank slots it held.
    pub rank_slots: Vec<u32>,
    /// The parts it held of ranks split over several workers (an allocation of fewer ranks
    /// than workers: `docs/scale-out.md`); absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rank_parts: Vec<RankPartReport>,
}

/// A worker's part of a rank split over several workers: DPUs `first_dpu..first_dpu + dpus`
/// of rank slot `slot`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankPartReport {
    pub slot: u32,
    pub first_dpu: u32,
    pub dpus: u32,
}

/// The workers of this process's distributed run (set by the MPI backend).
static WORKERS: std::sync::Mutex<Option<Vec<WorkerReport>>> = std::sync::Mutex::new(None);

/// Records the workers of a distributed run for the report.
pub(crate) fn set_workers(workers: Vec<WorkerReport>) {
    *WORKERS.lock().unwrap_or_else(|e| e.into_inner()) = Some(workers);
}

/// The remote path's cost: what a run through the rank-manager daemon adds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteReport {
    /// Rank operations the daemon ran for the program.
    pub operations: u64,
    /// CPU time of the remote path (both processes), by the phase of the operation it served.
    pub ipc: Phases,
}

/// Gaps of a rank's busy spans inside `[from, to)`: (total idle, longest idle).
fn idle_in(spans: &[openpim_machine::Span], from: Nanos, to: Nanos) -> (u64, u64) {
    let mut cursor = from;
    let mut total = 0;
    let mut longest = 0;
    let first = spans.partition_point(|s| s.end <= from);
    for s in &spans[first..] {
        if s.start >= to {
            break;
        }
        if s.start > cursor {
            let g = s.start - cursor;
            total += g;
            longest = longest.max(g);
        }
        cursor = cursor.max(s.end);
    }
    if to > cursor {
        let g = to - cursor;
        total += g;
        longest = longest.max(g);
    }
    (total, longest)
}

fn build(s: &State) -> Report {
    let total = s.clock.now();
    let hw = s.hardware.clone();
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        generator: format!("openpim {}", env!("CARGO_PKG_VERSION")),
        hardware: hw
            .as_ref()
            .map(|h| HardwareReport {
                profile: h.name.clone(),
                frequency_mhz: h.frequency_mhz,
                revolver_cycles: h.revolver_cycles,
            })
            .unwrap_or_default(),
        total_ns: total,
        phases: Phases::from_fn(|p| s.clock.host_phase_ns(p)),
        sdk_calls: s.sdk_calls,
        engine: crate::clock::engine_use::report(),
        check: CHECK_SECTION
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .map(|section| section()),
        ..Report::default()
    };
    // Ranks.
    for (slot, life) in &s.ranks {
        let track = s.clock.rank_track(*slot);
        let busy = Phases::from_fn(|p| track.map_or(0, |t| t.phase_ns(p)));
        let mut allocated = 0;
        let mut longest = 0;
        let mut idle = 0;
        for (a, b) in &life.intervals {
            let end = b.unwrap_or(total).max(*a);
            allocated += end - a;
            let (i, l) = idle_in(track.map_or(&[], |t| t.spans()), *a, end);
            idle += i;
            longest = longest.max(l);
        }
        report.ranks.push(RankReport {
            rank: *slot,
            dpus: life.dpus,
            allocated_ns: allocated,
            busy,
            idle_ns: idle,
            longest_idle_ns: longest,
            launches: s.launches.iter().filter(|l| l.rank == *slot).count() as u64,
        });
    }
    // Launches, grouped by issue time.
    let mut groups: BTreeMap<u64, Vec<&timeline::LaunchEntry>> = BTreeMap::new();
    for l in &s.launches {
        groups.entry(l.issue_ns).or_default().push(l);
    }
    for (id, (issue, entries)) in groups.into_iter().enumerate() {
        let mut lr = LaunchReport {
            id: id as u32,
            issue_ns: issue,
            start_ns: u64::MAX,
            ..LaunchReport::default()
        };
        let (mut cycles_sum, mut dma_busy, mut dpus_total) = (0u64, 0u64, 0u64);
        let (mut runnable, mut sleep, mut tasklet_cycles) = (0u64, 0u64, 0u64);
        let mut mhz = 0u32;
        for e in entries {
            let r = &e.record;
            lr.start_ns = lr.start_ns.min(e.start_ns);
            lr.end_ns = lr.end_ns.max(e.end_ns);
            lr.ranks += 1;
            lr.dpus += r.dpus;
            lr.tasklets = lr.tasklets.max(r.tasklets);
            lr.cycles = lr.cycles.max(r.max_cycles);
            lr.instructions += r.total_instructions;
            lr.dma_bytes += r.dma_bytes;
            lr.dma_requests += r.dma_requests;
            lr.faults += r.faults;
            lr.stepped |= r.stepped_dpus > 0;
            cycles_sum += r.total_cycles;
            dma_busy += r.dma_busy_cycles;
            dpus_total += u64::from(r.dpus);
            runnable += r.runnable_cycles;
            sleep += r.sleep_cycles;
            tasklet_cycles += r.tasklet_cycles;
            mhz = e.frequency_mhz;
            lr.per_rank.push(LaunchRankReport {
                rank: e.rank,
                dpus: r.dpus,
                start_ns: e.start_ns,
                end_ns: e.end_ns,
                cycles: r.max_cycles,
                instructions: r.total_instructions,
                faults: r.faults,
            });
        }
        if lr.start_ns == u64::MAX {
            lr.start_ns = issue;
        }
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        lr.ipc = ratio(lr.instructions, cycles_sum);
        if dpus_total > 0 && mhz > 0 {
            lr.dma_time_ns = (dma_busy * 1000) / (dpus_total * u64::from(mhz));
        }
        lr.tasklet_utilisation = ratio(runnable, tasklet_cycles).min(1.0);
        lr.sync_wait_fraction = ratio(sleep, tasklet_cycles).min(1.0);
        report.launches.push(lr);
    }
    // Transfers.
    let x = &s.xfers;
    report.transfers = TransferReport {
        serial_to_dpu: x.ops[0][0],
        parallel_to_dpu: x.ops[0][1],
        broadcast_to_dpu: x.ops[0][2],
        serial_from_dpu: x.ops[1][0],
        parallel_from_dpu: x.ops[1][1] + x.ops[1][2],
        bytes_to_dpus: x.bytes[0],
        bytes_from_dpus: x.bytes[1],
        bus_to_dpu_ns: x.bus_ns[0],
        bus_from_dpu_ns: x.bus_ns[1],
        host_interleave_ns: x.interleave_ns,
        small_transfers: x.small_ops,
        small_transfers_ns: x.small_ops_ns,
        serial_in_loops: x.serial_in_loops,
        mux_switches_to_dpu: x.mux_switches[0],
        mux_switches_from_dpu: x.mux_switches[1],
        mux_switch_ns: x.mux_switch_ns,
    };
    report.inter_dpu = s
        .inter_dpu
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| InterDpuReport {
            id: i as u32,
            primitive: e.call.primitive.clone(),
            label: e.call.label.clone(),
            axes: e.call.axes.clone(),
            bytes: e.bytes(),
            path: e.call.path.clone(),
            start_ns: e.start_ns,
            end_ns: e.end_ns.unwrap_or(total).max(e.start_ns),
            link_ns: e.link_ns,
        })
        .collect();
    if s.remote.calls > 0 {
        report.remote = Some(RemoteReport {
            operations: s.remote.calls,
            ipc: Phases::from_fn(|p| s.remote.ipc_ns[p as usize]),
        });
    }
    report.advice = advise(&report, s);
    report
}

/// Below this average size (bytes), MRAM DMA transfers waste their fixed cost.
pub const SMALL_DMA_BYTES: u64 = 256;
/// Fewer tasklets than this (the revolver depth) leave the pipeline idle.
pub const MIN_TASKLETS_DEFAULT: u32 = 11;

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The advice rules (documented in `docs/report-schema.md`).
fn advise(r: &Report, s: &State) -> Vec<Advice> {
    let mut out = Vec::new();
    let total = r.total_ns.max(1);
    // 1. Ranks allocated but idle for long stretches.
    let idle: Vec<&RankReport> = r
        .ranks
        .iter()
        .filter(|k| k.longest_idle_ns >= 1_000_000 && k.longest_idle_ns * 2 >= total)
        .collect();
    if !idle.is_empty() {
        let worst = idle.iter().map(|k| k.longest_idle_ns).max().unwrap_or(0);
        out.push(Advice {
            id: "idle_ranks".into(),
            message: format!(
                "{} rank(s) stayed allocated but idle for long stretches (longest {}, {:.0}% of the run): allocate DPUs just before using them and dpu_free them as soon as possible. An allocated rank is not free even when idle: on a real server, disk reads ran 1.5-2.7x slower while a PIM rank was allocated and unused (\"Side effects of allocating UPMEM processing units\").",
                idle.len(),
                ms(worst),
                100.0 * worst as f64 / total as f64
            ),
        });
    }
    // 2. Serial transfers in loops.
    if r.transfers.serial_in_loops >= timeline::SERIAL_RUN {
        out.push(Advice {
            id: "serial_transfers_in_loops".into(),
            message: format!(
                "{} serial transfers (dpu_copy_to/dpu_copy_from on one DPU) came in loops over DPUs: the bus moves one DPU at a time then (about 0.33 GB/s CPU-DPU); dpu_prepare_xfer + dpu_push_xfer moves a whole rank at once (about 6.7 GB/s per rank).",
                r.transfers.serial_in_loops
            ),
        });
    }
    // 3. Many small transfers.
    let xfer_ns = r.phases.cpu_dpu_ns + r.phases.dpu_cpu_ns;
    if r.transfers.small_transfers >= 64
        && r.transfers.small_transfers_ns * 10 >= total.min(xfer_ns.max(1)).max(1)
    {
        let latency = s.hardware.as_ref().map_or([0, 0], |h| h.bus_latency_ns);
        out.push(Advice {
            id: "small_transfers".into(),
            message: format!(
                "{} transfers were so small that their fixed cost (~{:.1} us CPU-DPU, ~{:.1} us DPU-CPU for a call on one rank, more with more ranks) was most of their time ({} in total): gather the data into fewer, larger transfers.",
                r.transfers.small_transfers,
                latency[0] as f64 / 1000.0,
                latency[1] as f64 / 1000.0,
                ms(r.transfers.small_transfers_ns)
            ),
        });
    }
    // 4. Fewer than 11 tasklets.
    let revolver = s
        .hardware
        .as_ref()
        .map_or(MIN_TASKLETS_DEFAULT, |h| h.revolver_cycles);
    let few: Vec<&LaunchReport> = r
        .launches
        .iter()
        .filter(|l| l.tasklets > 0 && l.tasklets < revolver)
        .collect();
    if !few.is_empty() {
        let t = few.iter().map(|l| l.tasklets).max().unwrap_or(0);
        let ipc = few.iter().map(|l| l.ipc).fold(0.0, f64::max);
        out.push(Advice {
            id: "few_tasklets".into(),
            message: format!(
                "{} launch(es) ran with {} tasklet(s) per DPU, fewer than {}: a tasklet issues at most once every {} cycles, so the DPU's pipeline stays partly idle (IPC {:.2}); build the DPU program with -DNR_TASKLETS=16 or more.",
                few.len(),
                t,
                revolver,
                revolver,
                ipc
            ),
        });
    }
    // 5. MRAM transfers below 256 bytes.
    let (bytes, reqs): (u64, u64) = r
        .launches
        .iter()
        .fold((0, 0), |(b, q), l| (b + l.dma_bytes, q + l.dma_requests));
    if reqs >= 256 && bytes < SMALL_DMA_BYTES * reqs {
        let alpha = s.hardware.as_ref().map_or(77, |h| h.dma_read_alpha);
        out.push(Advice {
            id: "small_mram_transfers".into(),
            message: format!(
                "the kernels' MRAM transfers average {:.0} bytes ({} requests): each DMA costs about {} cycles plus 0.5 cycle per byte, so transfers of 256 to 2048 bytes (mram_read/mram_write into WRAM buffers) amortize the fixed cost.",
                bytes as f64 / reqs as f64,
                reqs,
                alpha
            ),
        });
    }
    // 7. Exchanges between DPUs the program makes itself through the host (marked regions).
    let marked: Vec<&InterDpuReport> = r
        .inter_dpu
        .iter()
        .filter(|e| e.primitive == "region")
        .collect();
    let marked_ns: u64 = marked.iter().map(|e| e.end_ns - e.start_ns).sum();
    if marked_ns >= 1_000_000 && marked_ns * 10 >= total {
        out.push(Advice {
            id: "host_mediated_exchange".into(),
            message: format!(
                "{} host-mediated exchange(s) between DPUs took {} ({:.0}% of the run): if they are collectives (all-reduce, reduce-scatter, all-to-all, all-gather, ...), <pidcomm.h> does them without staging the data in host memory (docs/collectives.md); bench/collectives compares both paths on this machine.",
                marked.len(),
                ms(marked_ns),
                100.0 * marked_ns as f64 / total as f64
            ),
        });
    }
    // 6. DMA requests the DPU tolerates but that are almost certainly bugs.
    let quirks: u64 = s.launches.iter().map(|l| l.record.dma_quirks).sum();
    if quirks > 0 {
        let mut examples: Vec<&str> = Vec::new();
        for e in s
            .launches
            .iter()
            .filter_map(|l| l.record.dma_quirk_example.as_deref())
        {
            if examples.len() < 3 && !examples.contains(&e) {
                examples.push(e);
            }
        }
        out.push(Advice {
            id: "tolerated_dma".into(),
            message: format!(
                "{quirks} DMA request(s) were performed as the DPU performs them although they are almost certainly bugs (the length is what its 8-bit field encodes, addresses lose their low 3 bits, an MRAM offset is taken without the base): {}. Run with the profile key strictDma=true to make them faults.",
                examples.join(" | ")
            ),
        });
    }
    // 7. Launches that ended with every tasklet of a DPU waiting.
    let waiting: u64 = s.launches.iter().map(|l| l.record.waiting_dpus).sum();
    if waiting > 0 {
        let example = s
            .launches
            .iter()
            .find_map(|l| l.record.waiting_example.as_deref())
            .unwrap_or("");
        out.push(Advice {
            id: "all_tasklets_waiting".into(),
            message: format!(
                "{waiting} DPU run(s) ended with every tasklet that had not finished waiting and none left to wake them (a barrier not every tasklet reaches, a semaphore never given, a handshake never notified), e.g. {example}. As on the DPU, it stopped issuing and the launch completed: the work after the wait was not done. Run with the profile key strictSync=true to make it a fault (DPU_ERR_DPU_FAULT)."
            ),
        });
    }
    out
}

/// The report of the run so far (the host clock is settled to now and every rank joined).
pub fn report() -> Report {
    let mut r = timeline::with_state(|s| {
        s.settle();
        build(s)
    });
    r.memory = MemoryReport::now();
    r.workers = WORKERS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if r.workers.is_some() {
        r.mpi_traffic = Some(TRAFFIC.lock().unwrap_or_else(|e| e.into_inner()).clone());
    }
    r.profile = PROFILE_SOURCE.get().and_then(|f| f());
    r
}

impl Report {
    /// The report as a text table.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let total = self.total_ns.max(1);
        let _ = writeln!(
            o,
            "OpenPIM run report: hardware {} ({} MHz); virtual time {} (host code measured, DPUs and bus modeled)",
            if self.hardware.profile.is_empty() {
                "-"
            } else {
                &self.hardware.profile
            },
            self.hardware.frequency_mhz,
            ms(self.total_ns)
        );
        if let Some(e) = &self.engine {
            let _ = match e.name.as_str() {
                "jit" => writeln!(
                    o,
                    "DPU engine: jit ({:.1}% of the issue slots ran as translated code; {} regions, {} KiB of host code, {} translating)",
                    100.0 * e.translated_slots as f64 / e.instructions.max(1) as f64,
                    e.regions,
                    e.code_bytes.div_ceil(1024),
                    ms(e.translate_ns)
                ),
                _ => writeln!(o, "DPU engine: {}", e.name),
            };
        }
        let _ = writeln!(o, "\n{:<12} {:>14} {:>7}", "phase", "time", "share");
        for p in Phase::ALL {
            let v = self.phases.get(p);
            let _ = writeln!(
                o,
                "{:<12} {:>14} {:>6.1}%",
                p.label(),
                ms(v),
                100.0 * v as f64 / total as f64
            );
        }
        let _ = writeln!(
            o,
            "{:<12} {:>14} {:>6.1}%",
            "total",
            ms(self.total_ns),
            100.0
        );
        if !self.ranks.is_empty() {
            let _ = writeln!(
                o,
                "\n{:<5} {:>5} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>8}",
                "rank",
                "DPUs",
                "allocated",
                "CPU-DPU",
                "kernel",
                "inter-DPU",
                "DPU-CPU",
                "load",
                "idle",
                "launches"
            );
            for r in &self.ranks {
                let _ = writeln!(
                    o,
                    "{:<5} {:>5} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>13} {:>8}",
                    r.rank,
                    r.dpus,
                    ms(r.allocated_ns),
                    ms(r.busy.cpu_dpu_ns),
                    ms(r.busy.dpu_kernel_ns),
                    ms(r.busy.inter_dpu_ns),
                    ms(r.busy.dpu_cpu_ns),
                    ms(r.busy.alloc_load_ns),
                    ms(r.idle_ns),
                    r.launches
                );
            }
        }
        if !self.launches.is_empty() {
            let _ = writeln!(
                o,
                "\n{:<4} {:>5} {:>5} {:>4} {:>12} {:>12} {:>14} {:>5} {:>12} {:>12} {:>6} {:>6}",
                "#",
                "ranks",
                "DPUs",
                "tsk",
                "cycles",
                "time",
                "instructions",
                "IPC",
                "DMA bytes",
                "DMA time",
                "util",
                "sync"
            );
            const MAX_ROWS: usize = 40;
            for l in self.launches.iter().take(MAX_ROWS) {
                let _ = writeln!(
                    o,
                    "{:<4} {:>5} {:>5} {:>4} {:>12} {:>12} {:>14} {:>5.2} {:>12} {:>12} {:>5.0}% {:>5.0}%",
                    l.id,
                    l.ranks,
                    l.dpus,
                    l.tasklets,
                    l.cycles,
                    ms(l.end_ns - l.start_ns),
                    l.instructions,
                    l.ipc,
                    l.dma_bytes,
                    ms(l.dma_time_ns),
                    100.0 * l.tasklet_utilisation,
                    100.0 * l.sync_wait_fraction
                );
            }
            let stepped: Vec<String> = self
                .launches
                .iter()
                .filter(|l| l.stepped)
                .map(|l| l.id.to_string())
                .collect();
            if !stepped.is_empty() {
                let _ = writeln!(
                    o,
                    "launch(es) {} were stepped by a debugger with other tasklets frozen: their cycles differ from a run without it",
                    stepped.join(", ")
                );
            }
            if self.launches.len() > MAX_ROWS {
                let _ = writeln!(
                    o,
                    "... {} more launches (all in the JSON report)",
                    self.launches.len() - MAX_ROWS
                );
            }
        }
        let t = &self.transfers;
        let _ = writeln!(
            o,
            "\ntransfers: to DPUs {} serial, {} parallel, {} broadcast ({} bytes); from DPUs {} serial, {} parallel ({} bytes); host interleaving measured {}",
            t.serial_to_dpu,
            t.parallel_to_dpu,
            t.broadcast_to_dpu,
            t.bytes_to_dpus,
            t.serial_from_dpu,
            t.parallel_from_dpu,
            t.bytes_from_dpus,
            ms(t.host_interleave_ns)
        );
        if let Some(r) = &self.remote {
            let p = &r.ipc;
            let _ = writeln!(
                o,
                "remote path (rank-manager daemon): {} operations, {} of CPU time on the ranks' timelines (CPU-DPU {}, kernel {}, DPU-CPU {}, load {})",
                r.operations,
                ms(p.cpu_dpu_ns + p.dpu_kernel_ns + p.dpu_cpu_ns + p.alloc_load_ns + p.host_ns + p.inter_dpu_ns),
                ms(p.cpu_dpu_ns),
                ms(p.dpu_kernel_ns),
                ms(p.dpu_cpu_ns),
                ms(p.alloc_load_ns)
            );
        }
        if !self.inter_dpu.is_empty() {
            o.push_str(&self.inter_dpu_table());
        }
        let m = &self.memory;
        if !m.store.is_empty() {
            let mut line = format!("\nMRAM: store {}", m.store);
            if let Some(p) = &m.persist {
                let _ = write!(line, ", persist={p}");
            }
            if let Some(b) = m.budget_bytes {
                let _ = write!(
                    line,
                    ", budget {} MiB (peak resident + admitted {} MiB)",
                    b >> 20,
                    m.peak_resident_bytes >> 20
                );
            }
            let _ = writeln!(
                o,
                "{line}; resident {} MiB; {} MiB deduplicated; {} flushes ({} wall), {} evictions ({} wall); wall time only, not on the virtual timeline",
                m.resident_bytes >> 20,
                m.dedup_bytes >> 20,
                m.flushes,
                ms(m.flush_ns),
                m.evictions,
                ms(m.evict_ns)
            );
        }
        if let Some(p) = &self.profile {
            let _ = writeln!(
                o,
                "\nprofile: {} DPU run(s), {} cycles; top functions (docs/profiling.md):",
                p.dpu_runs, p.cycles
            );
            for f in &p.top_functions {
                let _ = writeln!(
                    o,
                    "  {:>12} cycles {:>6.2}%  {}",
                    f.cycles, f.percent, f.function
                );
            }
        }
        if self.advice.is_empty() {
            let _ = writeln!(o, "\nadvice: none");
        } else {
            let _ = writeln!(o, "\nadvice:");
            for a in &self.advice {
                let _ = writeln!(o, "- [{}] {}", a.id, a.message);
            }
        }
        o
    }

    /// The exchanges between DPUs, one row per kind (primitive, axes, path): calls, bytes,
    /// time on the host clock (nested exchanges count in their own row and in the enclosing
    /// one's).
    fn inter_dpu_table(&self) -> String {
        // (calls, bytes, time, link time) per (primitive, axes, path).
        type Row = (u64, u64, u64, u64);
        let mut rows: BTreeMap<(&str, &str, &str), Row> = BTreeMap::new();
        for e in &self.inter_dpu {
            let r = rows.entry((&e.primitive, &e.axes, &e.path)).or_default();
            r.0 += 1;
            r.1 += e.bytes;
            r.2 += e.end_ns - e.start_ns;
            r.3 += e.link_ns;
        }
        let mut o = String::new();
        let _ = writeln!(
            o,
            "\ninter-DPU exchanges ({} in total, inter-DPU phase {})",
            self.inter_dpu.len(),
            ms(self.phases.inter_dpu_ns)
        );
        let _ = writeln!(
            o,
            "{:<16} {:<6} {:<24} {:>7} {:>14} {:>13} {:>13}",
            "primitive", "axes", "path", "calls", "bytes", "time", "link time"
        );
        for ((prim, axes, path), (n, bytes, ns, link)) in rows {
            let _ = writeln!(
                o,
                "{:<16} {:<6} {:<24} {:>7} {:>14} {:>13} {:>13}",
                prim,
                if axes.is_empty() { "-" } else { axes },
                path,
                n,
                bytes,
                ms(ns),
                ms(link)
            );
        }
        o
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

/// One Chrome trace event (trace event format, "X" complete events and "M" metadata).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceEvent {
    pub name: String,
    pub cat: String,
    pub ph: String,
    /// Microseconds.
    pub ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    pub pid: u32,
    pub tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<serde_json::Value>,
}

/// A Chrome/Perfetto trace.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trace {
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TraceEvent>,
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: String,
}

/// Trace track of the exchanges between DPUs (one event per exchange).
pub const INTER_DPU_TRACK: u32 = 1_000_000;

/// The trace of the run so far: track 0 is the host, track `r + 1` rank `r`, track
/// [`INTER_DPU_TRACK`] the exchanges between DPUs (when there are some).
pub fn trace() -> Trace {
    timeline::with_state(|s| {
        s.settle();
        let mut ev = Vec::new();
        let meta = |tid: u32, name: String| TraceEvent {
            name: "thread_name".into(),
            cat: "__metadata".into(),
            ph: "M".into(),
            ts: 0.0,
            dur: None,
            pid: 1,
            tid,
            args: Some(serde_json::json!({ "name": name })),
        };
        ev.push(TraceEvent {
            name: "process_name".into(),
            cat: "__metadata".into(),
            ph: "M".into(),
            ts: 0.0,
            dur: None,
            pid: 1,
            tid: 0,
            args: Some(serde_json::json!({ "name": "OpenPIM virtual timeline" })),
        });
        ev.push(meta(0, "host".into()));
        let span_event = |sp: &openpim_machine::Span, tid: u32| TraceEvent {
            name: if sp.name == "wait" {
                format!("wait ({})", sp.phase.label())
            } else {
                sp.name.to_string()
            },
            cat: sp.phase.key().into(),
            ph: "X".into(),
            ts: sp.start as f64 / 1000.0,
            dur: Some(sp.len() as f64 / 1000.0),
            pid: 1,
            tid,
            args: Some(serde_json::json!({ "phase": sp.phase.label() })),
        };
        for sp in s.clock.host_track().spans() {
            ev.push(span_event(sp, 0));
        }
        for r in 0..s.clock.nr_ranks() {
            let Some(track) = s.clock.rank_track(r) else {
                continue;
            };
            if track.spans().is_empty() && !s.ranks.contains_key(&r) {
                continue;
            }
            ev.push(meta(r + 1, format!("rank {r}")));
            for sp in track.spans() {
                ev.push(span_event(sp, r + 1));
            }
        }
        if !s.inter_dpu.entries.is_empty() {
            ev.push(meta(INTER_DPU_TRACK, "inter-DPU exchanges".into()));
            let now = s.clock.now();
            for e in &s.inter_dpu.entries {
                let end = e.end_ns.unwrap_or(now).max(e.start_ns);
                ev.push(TraceEvent {
                    name: if e.call.label.is_empty() {
                        e.call.primitive.clone()
                    } else {
                        format!("{} ({})", e.call.primitive, e.call.label)
                    },
                    cat: Phase::InterDpu.key().into(),
                    ph: "X".into(),
                    ts: e.start_ns as f64 / 1000.0,
                    dur: Some((end - e.start_ns) as f64 / 1000.0),
                    pid: 1,
                    tid: INTER_DPU_TRACK,
                    args: Some(serde_json::json!({
                        "axes": e.call.axes,
                        "bytes": e.bytes(),
                        "path": e.call.path,
                        "link_ns": e.link_ns,
                    })),
                });
            }
        }
        Trace {
            trace_events: ev,
            display_time_unit: "ns".into(),
        }
    })
}

/// Writes what `OPENPIM_REPORT` / `OPENPIM_TRACE` ask for (at the program's exit). Errors are
/// printed on stderr, never fatal.
pub fn write_requested_outputs() {
    let report_req = std::env::var(REPORT_ENV)
        .ok()
        .filter(|v| !v.is_empty() && v != "0");
    let trace_req = std::env::var(TRACE_ENV).ok().filter(|v| !v.is_empty());
    if report_req.is_none() && trace_req.is_none() {
        return;
    }
    if let Some(req) = report_req {
        let r = report();
        if req == "1" || req == "text" || req == "-" {
            eprint!("{}", r.to_text());
        } else if let Err(e) = std::fs::write(&req, r.to_json()) {
            eprintln!("openpim: cannot write the report to {req}: {e}");
        }
    }
    if let Some(path) = trace_req {
        let t = trace();
        match serde_json::to_string(&t) {
            Ok(text) => {
                if let Err(e) = std::fs::write(&path, text) {
                    eprintln!("openpim: cannot write the trace to {path}: {e}");
                }
            }
            Err(e) => eprintln!("openpim: cannot encode the trace: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openpim_machine::Span;

    #[test]
    fn idle_gaps() {
        let spans = [
            Span {
                start: 10,
                end: 20,
                phase: Phase::CpuDpu,
                name: "x",
            },
            Span {
                start: 50,
                end: 60,
                phase: Phase::DpuKernel,
                name: "y",
            },
        ];
        assert_eq!(idle_in(&spans, 0, 100), (80, 40));
        assert_eq!(idle_in(&spans, 15, 55), (30, 30));
        assert_eq!(idle_in(&[], 5, 9), (4, 4));
    }

    #[test]
    fn phases_total() {
        let p = Phases {
            cpu_dpu_ns: 1,
            dpu_kernel_ns: 2,
            inter_dpu_ns: 3,
            dpu_cpu_ns: 4,
            host_ns: 5,
            alloc_load_ns: 6,
        };
        assert_eq!(p.total(), 21);
        assert_eq!(p.get(Phase::Host), 5);
    }
}
