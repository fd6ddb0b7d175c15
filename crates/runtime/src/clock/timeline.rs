//! The run's virtual timeline: where the host runtime feeds the virtual clock.
//!
//! - Host code between SDK calls advances the host clock by its real duration: every SDK entry
//!   point holds an [`SdkCall`] guard; the time from the end of one call to the start of the
//!   next on the same thread is measured with a monotonic clock, less the time the thread
//!   waited for a core (the emulator simulating an asynchronous launch competes for the
//!   host's cores), and counted as host time. Time spent inside SDK calls is the emulator's
//!   and is never counted as such; user callbacks count, less the SDK calls they make.
//! - With several host threads, each thread's host code counts (the SDK-call depth is per
//!   thread), and real time in which several threads run host code counts once. While
//!   another thread is inside an SDK call, a thread's host code counts by its CPU time: it
//!   may be waiting for that call (joining the thread that makes it, say), whose time is the
//!   emulator's; if it computes, its CPU time is its real time.
//! - Each rank operation gets a modeled duration: DPU kernels `max cycles / frequency` plus
//!   the profile's `[launch]` cost; transfers from the bus model
//!   ([`openpim_machine::BusModel`]: the call's fixed cost for each of its ranks, the rank's
//!   bytes, the host-wide limits of the whole call), or the real time of the host-side byte
//!   interleaving (measured by the execution layer) when that is longer (the real SDK pipelines the
//!   two), and for a rank's first MRAM transfer after a launch the switch of its MRAM back to
//!   the host (`[launch] mux_switch_ns`); program loading as a broadcast of the program image.
//! - Operations are placed on their rank's timeline at the host time they were issued;
//!   synchronous calls and `dpu_sync` then join the host with the ranks.
//! - The program can read the host clock between SDK calls without moving it
//!   ([`program_now`]: what [`super::host_clock`] shows as the program's clocks); the
//!   emulator's work in such reads is not host code ([`emulator_work`]).

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use openpim_machine::{
    CallShape, Direction, HardwareProfile, Nanos, Phase, VirtualClock, XferKind,
};

use crate::clock::cpu::thread_cpu_ns;
use crate::clock::exchanges::InterDpuLog;
use crate::clock::stats::{self, LaunchRecord};
use crate::clock::xfer_log;

/// When (host time) an operation was issued, and the shape of the whole call it belongs to
/// (its ranks and bytes: the fixed cost per rank and the host-wide bus limits).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Issue {
    pub at: Nanos,
    pub call: CallShape,
    /// The inter-DPU exchange open when it was issued ([`crate::clock::inter_dpu`]): its transfers are
    /// inter-DPU time.
    pub exchange: Option<u32>,
    /// Issued inside [`uncharged`]: the emulator's own access, not placed on the timeline.
    pub uncharged: bool,
}

/// A launch placed on the timeline.
#[derive(Debug, Clone)]
pub struct LaunchEntry {
    pub rank: u32,
    pub issue_ns: Nanos,
    pub start_ns: Nanos,
    pub end_ns: Nanos,
    pub frequency_mhz: u32,
    pub record: LaunchRecord,
}

/// Transfer counters.
#[derive(Debug, Clone, Default)]
pub struct XferTotals {
    /// Rank operations by direction (to, from) and kind (serial, parallel, broadcast).
    pub ops: [[u64; 3]; 2],
    /// Bytes by direction (all DPUs).
    pub bytes: [u64; 2],
    /// Modeled bus time by direction, summed over rank operations.
    pub bus_ns: [u64; 2],
    /// Measured host interleaving time, summed.
    pub interleave_ns: u64,
    /// Transfers that first switched their rank's MRAM back to the host after a launch, by
    /// direction (to, from), and the time those switches took.
    pub mux_switches: [u64; 2],
    pub mux_switch_ns: u64,
    /// Rank operations whose fixed per-call cost is at least half of their duration.
    pub small_ops: u64,
    /// Duration of those operations, summed.
    pub small_ops_ns: u64,
    /// Serial transfers that were part of a run of at least [`SERIAL_RUN`] consecutive serial
    /// transfers of the same size and direction on DPUs of one rank.
    pub serial_in_loops: u64,
    /// Such runs.
    pub serial_loops: u64,
}

/// A run of this many serial transfers in a row counts as "serial transfers in a loop".
pub const SERIAL_RUN: u64 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SerialKey {
    rank: u32,
    dir: Direction,
    len: usize,
}

/// Life of a rank slot: allocation intervals on the host clock.
#[derive(Debug, Clone, Default)]
pub struct RankLife {
    pub intervals: Vec<(Nanos, Option<Nanos>)>,
    pub dpus: u32,
}

/// The machine the report describes (the first allocation's).
#[derive(Debug, Clone)]
pub struct HardwareInfo {
    pub name: String,
    pub frequency_mhz: u32,
    pub revolver_cycles: u32,
    pub dma_read_alpha: u32,
    /// Fixed cost of a transfer call on one rank: [CPU-DPU, DPU-CPU], ns.
    pub bus_latency_ns: [u64; 2],
}

/// Everything the timeline knows.
#[derive(Debug)]
pub struct State {
    pub clock: VirtualClock,
    /// Threads inside an SDK call (made by host code, not by a user callback).
    in_sdk: u32,
    /// Real time with at least one thread inside an SDK call, ns, up to `busy_since`.
    sdk_busy_ns: u64,
    /// Since when `in_sdk` is not 0.
    busy_since: Option<Instant>,
    /// Real time up to which host code is accounted (threads' host code overlaps: it counts
    /// once), with [`State::busy_at`] then.
    counted_until: Option<(Instant, u64)>,
    /// When the last SDK call of any thread ended.
    last_exit: Option<ExitMark>,
    issues: HashMap<u32, VecDeque<Issue>>,
    pub launches: Vec<LaunchEntry>,
    /// Ranks whose MRAM is on the DPUs' side since a launch: their next MRAM transfer pays
    /// the switch back (`[launch] mux_switch_ns`).
    mux_on_dpu: HashSet<u32>,
    pub xfers: XferTotals,
    pub ranks: BTreeMap<u32, RankLife>,
    pub hardware: Option<HardwareInfo>,
    /// The remote path's cost (ranks run by a daemon).
    pub remote: RemoteTotals,
    serial: Option<(SerialKey, u64)>,
    /// SDK calls seen.
    pub sdk_calls: u64,
    /// The start of the first SDK call: host time 0.
    epoch: Option<Instant>,
    /// Exchanges between DPUs ([`crate::clock::inter_dpu`]).
    pub inter_dpu: InterDpuLog,
}

impl State {
    fn new() -> State {
        State {
            clock: VirtualClock::new(),
            in_sdk: 0,
            sdk_busy_ns: 0,
            busy_since: None,
            counted_until: None,
            last_exit: None,
            issues: HashMap::new(),
            launches: Vec::new(),
            mux_on_dpu: HashSet::new(),
            xfers: XferTotals::default(),
            ranks: BTreeMap::new(),
            hardware: None,
            remote: RemoteTotals::default(),
            serial: None,
            sdk_calls: 0,
            epoch: None,
            inter_dpu: InterDpuLog::default(),
        }
    }

    fn end_serial_run(&mut self) {
        if let Some((_, n)) = self.serial.take() {
            if n >= SERIAL_RUN {
                self.xfers.serial_in_loops += n;
                self.xfers.serial_loops += 1;
            }
        }
    }

    fn note_transfer(&mut self, key: Option<SerialKey>) {
        match (key, self.serial) {
            (Some(k), Some((cur, n))) if cur == k => self.serial = Some((cur, n + 1)),
            (Some(k), _) => {
                self.end_serial_run();
                self.serial = Some((k, 1));
            }
            (None, _) => self.end_serial_run(),
        }
    }

    /// Real time with some thread inside an SDK call, from the start up to `t`, ns.
    fn busy_at(&self, t: Instant) -> u64 {
        self.sdk_busy_ns
            + self
                .busy_since
                .map_or(0, |b| t.saturating_duration_since(b).as_nanos() as u64)
    }

    /// Accounts host code from `last` (the end of an SDK call) to `now` (the start of the next
    /// one on the same thread, or the end of the run), less what is accounted already (other
    /// threads' host code in the same real time). The part of it in which other threads were
    /// inside SDK calls counts by the thread's CPU time (see the module's documentation); the
    /// rest by its real time, less its waits for a core. Across threads (a thread's first
    /// call: its host code since the last call of any thread) there are no statistics: only
    /// the real time with no SDK call in progress counts.
    fn host_code(&mut self, last: &ExitMark, now: &HostMark) {
        let (ns, busy_now) = self.host_code_ns(last, now);
        // Inside an exchange between DPUs the program's host code is part of it.
        let phase = self.inter_dpu.host_phase();
        let name = if phase == Phase::Host {
            "host"
        } else {
            "inter-DPU host code"
        };
        self.clock.host_work(ns, phase, name);
        if self.counted_until.is_none_or(|(c, _)| c < now.at) {
            self.counted_until = Some((now.at, busy_now));
        }
    }

    /// Where the host code after `last` not accounted yet starts (real time), with
    /// [`State::busy_at`] then.
    fn unaccounted_since(&self, last: &ExitMark) -> (Instant, u64) {
        match self.counted_until {
            Some((c, b)) if c > last.mark.at => (c, b),
            _ => (last.mark.at, last.busy),
        }
    }

    /// What [`State::host_code`] accounts from `last` to `now`, and [`State::busy_at`] `now`;
    /// accounts nothing. The emulator's work on the thread outside SDK calls
    /// ([`emulator_work`]) is not host code.
    fn host_code_ns(&self, last: &ExitMark, now: &HostMark) -> (Nanos, u64) {
        let (start, busy_start) = self.unaccounted_since(last);
        let wall = now.at.saturating_duration_since(start).as_nanos() as u64;
        let busy_now = self.busy_at(now.at);
        let others = busy_now.saturating_sub(busy_start).min(wall);
        let (cpu, delay) = now.sched_since(&last.mark).unwrap_or((0, 0));
        let ns = (wall - others).saturating_sub(delay) + others.min(cpu);
        let own = if now.thread == last.mark.thread {
            now.own.saturating_sub(last.mark.own)
        } else {
            0
        };
        (ns.saturating_sub(own), busy_now)
    }

    /// Accounts the host time since the last SDK call, and joins every rank: the end of the
    /// run. Idempotent.
    pub fn settle(&mut self) {
        if self.in_sdk == 0 {
            if let Some(last) = self.last_exit {
                let now = HostMark::now();
                self.host_code(&last, &now);
                self.last_exit = Some(ExitMark {
                    mark: now,
                    busy: self.busy_at(now.at),
                });
            }
        }
        let ranks: Vec<u32> = (0..self.clock.nr_ranks()).collect();
        self.clock.join(ranks);
        self.end_serial_run();
    }
}

/// A point of real time on a host thread, to measure the program's host code between SDK
/// calls.
#[derive(Debug, Clone, Copy)]
struct HostMark {
    at: Instant,
    /// The thread (`pthread_self`: usable even in exit handlers, after the thread's locals
    /// are gone).
    thread: libc::pthread_t,
    /// The thread's run-queue delay so far (see [`run_queue_delay_ns`]).
    delay: Option<u64>,
    /// The thread's CPU time so far, ns.
    cpu: u64,
    /// The emulator's work on the thread outside SDK calls so far, ns ([`emulator_work`]).
    own: u64,
}

impl HostMark {
    /// Now, at the end of an SDK call (or of the run): the thread's statistics first (system
    /// calls, the emulator's time), the clock last. The statistics are read only where they
    /// can change the host time ([`sched_stats_needed`]).
    fn now() -> HostMark {
        let stats = sched_stats_needed();
        HostMark {
            delay: if stats { run_queue_delay_ns() } else { None },
            cpu: if stats { thread_cpu_ns() } else { 0 },
            own: own_ns(),
            at: Instant::now(),
            // SAFETY: pthread_self has no preconditions.
            thread: unsafe { libc::pthread_self() },
        }
    }

    /// Now, at the start of an SDK call: the clock first, so that reading the statistics is
    /// not counted as the program's host code. They are read where they can change the host
    /// time, or when the thread's last exit read them (the interval needs both ends).
    fn entering() -> HostMark {
        let at = Instant::now();
        let stats = sched_stats_needed()
            || HOST_LAST_EXIT.with(|c| c.get().is_some_and(|(_, e)| e.mark.delay.is_some()));
        HostMark {
            at,
            delay: if stats { run_queue_delay_ns() } else { None },
            cpu: if stats { thread_cpu_ns() } else { 0 },
            own: own_ns(),
            // SAFETY: pthread_self has no preconditions.
            thread: unsafe { libc::pthread_self() },
        }
    }

    /// The thread's CPU time and run-queue delay from `earlier` to this mark, ns (`None`
    /// across threads, or where the kernel does not tell).
    fn sched_since(&self, earlier: &HostMark) -> Option<(u64, u64)> {
        if self.thread != earlier.thread {
            return None;
        }
        let delay = self.delay?.saturating_sub(earlier.delay?);
        Some((self.cpu.saturating_sub(earlier.cpu), delay))
    }

    /// The host code's time from `earlier` to this mark: the real time, less the time the
    /// thread was ready to run but waited for a core. That wait is taken by the emulator's
    /// own threads (simulating an asynchronous launch on the host's cores, measured to make
    /// host code up to 3x slower on 2 cores) or by other processes; on the real system the
    /// DPUs compute and the host code has its core. Across threads the delays are not
    /// comparable, and the real time is taken as is.
    fn since(&self, earlier: &HostMark) -> Nanos {
        let wall = self.at.saturating_duration_since(earlier.at).as_nanos() as u64;
        match (earlier.delay, self.delay) {
            (Some(a), Some(b)) if self.thread == earlier.thread => {
                wall.saturating_sub(b.saturating_sub(a))
            }
            _ => wall,
        }
    }
}

/// The end of an SDK call: when, and the real time with some thread inside an SDK call so
/// far ([`State::busy_at`]).
#[derive(Debug, Clone, Copy)]
struct ExitMark {
    mark: HostMark,
    busy: u64,
}

/// Which timeline (see [`reset`]) the thread-local marks belong to.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Asynchronous rank work queued or running (operations and non-blocking callbacks, all
/// ranks): while there is some, the emulator's threads compete with the host code for cores.
static BACKGROUND_WORK: AtomicUsize = AtomicUsize::new(0);

/// Host threads that have made SDK calls.
static SDK_THREADS: AtomicUsize = AtomicUsize::new(0);

/// Asynchronous work was queued on a rank (an operation, or a non-blocking callback).
pub(crate) fn background_started() {
    BACKGROUND_WORK.fetch_add(1, Ordering::AcqRel);
}

/// Asynchronous work queued with [`background_started`] is done.
pub(crate) fn background_finished() {
    let _ = BACKGROUND_WORK.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

/// Whether a host mark must read the thread's CPU time and run-queue delay (two system calls,
/// the largest part of a cheap SDK call's cost). They correct the host code's real time for
/// the waits the emulator's own threads cause (asynchronous work) and for other threads'
/// SDK calls. With neither, a single thread's host code between two calls is its real time:
/// without background work no emulator thread competes for its core.
fn sched_stats_needed() -> bool {
    BACKGROUND_WORK.load(Ordering::Acquire) > 0 || SDK_THREADS.load(Ordering::Acquire) > 1
}

/// Time the calling thread has spent runnable but waiting for a CPU, ns (Linux schedstat's
/// second field); `None` where the kernel does not tell.
fn run_queue_delay_ns() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::FileExt;
        thread_local! {
            // Opened once per thread: "thread-self" is resolved when the file is opened.
            static SCHEDSTAT: Option<std::fs::File> =
                std::fs::File::open("/proc/thread-self/schedstat").ok();
        }
        // `try_with`: the exit report runs after the main thread's locals are destroyed.
        SCHEDSTAT
            .try_with(|f| {
                let f = f.as_ref()?;
                let mut buf = [0u8; 96];
                let n = f.read_at(&mut buf, 0).ok()?;
                let text = std::str::from_utf8(&buf[..n]).ok()?;
                text.split_whitespace().nth(1)?.parse().ok()
            })
            .ok()
            .flatten()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Runs `f` on the timeline's state.
pub fn with_state<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut g: MutexGuard<'_, Option<State>> = STATE.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(State::new))
}

thread_local! {
    /// Set while a synchronous call executes a rank operation on this thread.
    static SYNC_ISSUE: Cell<Option<Issue>> = const { Cell::new(None) };
    /// Bytes of the asynchronous call being queued by this thread.
    static CALL_SHAPE: Cell<CallShape> = const { Cell::new(CallShape { ranks: 0, bytes: 0 }) };
    /// True while this thread runs a queued (asynchronous) callback: the host is not waiting
    /// for it, so neither its time nor the synchronous calls it makes move the host clock.
    static IN_QUEUED_CALLBACK: Cell<bool> = const { Cell::new(false) };
    /// Set inside [`uncharged`].
    static UNCHARGED: Cell<bool> = const { Cell::new(false) };
    /// SDK calls this thread is inside (a user callback starts a fresh count of 0).
    static THREAD_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// SDK calls this thread is inside, for the host clock (calls made by user callbacks run
    /// on other threads are not counted; on this thread, they are inside a call).
    static HOST_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// When this thread's last outermost SDK call ended, with the timeline generation.
    static HOST_LAST_EXIT: Cell<Option<(u64, ExitMark)>> = const { Cell::new(None) };
    /// Real time this thread spent inside SDK calls (outermost ones), ns: subtracted from the
    /// real time of user callbacks, because it is the emulator's.
    static THREAD_SDK_NS: Cell<u64> = const { Cell::new(0) };
    /// Where user callback time goes instead of the host clock (see [`collect_callback_time`]).
    static CALLBACK_SINK: Cell<Option<u64>> = const { Cell::new(None) };
    /// Whether this thread is counted in [`SDK_THREADS`].
    static SDK_THREAD_SEEN: Cell<bool> = const { Cell::new(false) };
    /// The emulator's work on this thread outside SDK calls, ns (see [`emulator_work`]).
    static OWN_NS: Cell<u64> = const { Cell::new(0) };
    /// The user callback this thread runs (see [`user_code`]), for [`program_now`].
    static CALLBACK_START: Cell<Option<CallbackStart>> = const { Cell::new(None) };
}

/// The start of a user callback on its thread: when, and the thread's [`THREAD_SDK_NS`] and
/// [`OWN_NS`] then.
#[derive(Debug, Clone, Copy)]
struct CallbackStart {
    at: Instant,
    sdk_ns: u64,
    own_ns: u64,
}

/// The emulator's work on this thread outside SDK calls so far, ns.
fn own_ns() -> u64 {
    OWN_NS.try_with(|c| c.get()).unwrap_or(0)
}

/// The emulator worked `ns` on this thread outside SDK calls (reading the program's virtual
/// clock, [`super::host_clock`]): not the program's host code, nor callback time.
pub fn emulator_work(ns: Nanos) {
    let _ = OWN_NS.try_with(|c| c.set(c.get().saturating_add(ns)));
}

/// Marks the extent of one SDK call (hold it for the call's duration). The host time between
/// the end of the previous call and the start of this one is the program's own host work.
pub struct SdkCall {
    /// Start of the call when it is this thread's outermost one.
    outermost: Option<Instant>,
    /// Its part in the host clock.
    host: HostRole,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HostRole {
    /// Made by a user callback on a thread other than the host code's (a queued,
    /// non-blocking or parallel callback): none (the callback's time is accounted apart).
    None,
    /// Inside another SDK call of the thread.
    Inner,
    /// The thread's outermost call: ends the thread's host code.
    Outermost,
}

/// True on a thread running a user callback for an SDK call of another thread.
fn in_callback_thread() -> bool {
    CALLBACK_SINK.with(|c| c.get().is_some())
}

impl SdkCall {
    /// Enters an SDK call.
    pub fn enter() -> SdkCall {
        if !SDK_THREAD_SEEN.with(|c| c.replace(true)) {
            SDK_THREADS.fetch_add(1, Ordering::AcqRel);
        }
        let now = HostMark::entering();
        let outermost = THREAD_DEPTH.with(|d| {
            let depth = d.get();
            d.set(depth + 1);
            (depth == 0).then_some(now.at)
        });
        let host = if in_callback_thread() {
            HostRole::None
        } else {
            HOST_DEPTH.with(|d| {
                let depth = d.get();
                d.set(depth + 1);
                if depth == 0 {
                    HostRole::Outermost
                } else {
                    HostRole::Inner
                }
            })
        };
        let mine = match host {
            HostRole::Outermost => HOST_LAST_EXIT.with(|c| c.get()),
            _ => None,
        };
        with_state(|s| {
            if host == HostRole::Outermost {
                // The thread's host code since its last call (its first: since anyone's).
                let generation = GENERATION.load(Ordering::Relaxed);
                let mine = mine.filter(|(g, _)| *g == generation).map(|(_, e)| e);
                if let Some(last) = mine.or(s.last_exit) {
                    s.host_code(&last, &now);
                }
                if s.in_sdk == 0 {
                    s.busy_since = Some(now.at);
                }
                s.in_sdk += 1;
            }
            s.sdk_calls += 1;
            s.epoch.get_or_insert(now.at);
        });
        SdkCall { outermost, host }
    }
}

impl Drop for SdkCall {
    fn drop(&mut self) {
        let now = HostMark::now();
        THREAD_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if let Some(start) = self.outermost {
            let ns = now.at.saturating_duration_since(start).as_nanos() as u64;
            THREAD_SDK_NS.with(|t| t.set(t.get() + ns));
        }
        if self.host == HostRole::None {
            return;
        }
        HOST_DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if self.host == HostRole::Outermost {
            let exit = with_state(|s| {
                s.in_sdk = s.in_sdk.saturating_sub(1);
                if s.in_sdk == 0 {
                    if let Some(b) = s.busy_since.take() {
                        s.sdk_busy_ns += now.at.saturating_duration_since(b).as_nanos() as u64;
                    }
                }
                let exit = ExitMark {
                    mark: now,
                    busy: s.busy_at(now.at),
                };
                s.last_exit = Some(exit);
                (GENERATION.load(Ordering::Relaxed), exit)
            });
            HOST_LAST_EXIT.with(|c| c.set(Some(exit)));
        }
    }
}

/// Runs user code called back from inside an SDK call; returns its result and its real
/// duration minus the time it spent in nested SDK calls (the emulator's; what those calls
/// model is on the clock already).
pub(crate) fn user_code<T>(f: impl FnOnce() -> T) -> (T, Nanos) {
    // The callback is outside the SDK: nested calls are outermost calls of this thread.
    let depth = THREAD_DEPTH.with(|d| d.replace(0));
    let sdk_before = THREAD_SDK_NS.with(|t| t.get());
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_DEPTH.with(|d| d.set(self.0));
        }
    }
    let restore = Restore(depth);
    let started = HostMark::now();
    // Where the program's clocks stand in the callback (restored for nested callbacks).
    let outer = CALLBACK_START.with(|c| {
        c.replace(Some(CallbackStart {
            at: started.at,
            sdk_ns: sdk_before,
            own_ns: started.own,
        }))
    });
    struct RestoreStart(Option<CallbackStart>);
    impl Drop for RestoreStart {
        fn drop(&mut self) {
            let _ = CALLBACK_START.try_with(|c| c.set(self.0));
        }
    }
    let restore_start = RestoreStart(outer);
    let out = f();
    let ended = HostMark::now();
    drop(restore_start);
    let elapsed = ended.since(&started);
    drop(restore);
    let nested = THREAD_SDK_NS.with(|t| t.get()).saturating_sub(sdk_before);
    let own = ended.own.saturating_sub(started.own);
    (out, elapsed.saturating_sub(nested).saturating_sub(own))
}

/// What the program's clocks read ([`program_now`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramNow {
    /// No SDK call yet (since the last [`reset`]).
    NotStarted,
    /// The timeline is locked (by another thread for a moment, or by this one, interrupted
    /// by a signal handler): no reading.
    Busy,
    /// `ns` of host time after `epoch`, the start of the first SDK call (host time 0).
    At { epoch: Instant, ns: Nanos },
}

/// The host clock as the program on this thread sees it at `at` (now), without moving it:
///
/// - in host code (outside SDK calls), the host clock plus the host code since the thread's
///   last SDK call (its first: since anyone's) that the next call will account
///   ([`State::host_code`]: the same real time, the same corrections, none counted twice);
/// - in a user callback, the host clock or the end of the callback's ranks' work so far,
///   whichever is later, plus the callback's own time so far (less its SDK calls);
/// - inside an SDK call, the host clock.
///
/// Never blocks (it may run in a signal handler): [`ProgramNow::Busy`] when the timeline is
/// locked. Successive readings can be slightly out of order (the next SDK call's
/// statistics may differ); [`super::host_clock`] makes them monotonic.
pub fn program_now(at: Instant) -> ProgramNow {
    let callback = CALLBACK_START.try_with(|c| c.get()).ok().flatten();
    let depth = HOST_DEPTH.try_with(|d| d.get()).unwrap_or(0);
    let mine = HOST_LAST_EXIT.try_with(|c| c.get()).ok().flatten();
    let g = match STATE.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return ProgramNow::Busy,
    };
    let Some(s) = g.as_ref() else {
        return ProgramNow::NotStarted;
    };
    let Some(epoch) = s.epoch else {
        return ProgramNow::NotStarted;
    };
    let host = s.clock.now();
    let ns = if let Some(cb) = callback {
        let ready = crate::context::with_callback_ranks(|ranks| {
            ranks
                .iter()
                .map(|r| s.clock.rank_ready(*r))
                .max()
                .unwrap_or(0)
        });
        let wall = at.saturating_duration_since(cb.at).as_nanos() as u64;
        let sdk = THREAD_SDK_NS.try_with(|t| t.get()).unwrap_or(cb.sdk_ns);
        let own = own_ns();
        let user = wall
            .saturating_sub(sdk.saturating_sub(cb.sdk_ns))
            .saturating_sub(own.saturating_sub(cb.own_ns));
        host.max(ready) + user
    } else if depth > 0 {
        host
    } else {
        let generation = GENERATION.load(Ordering::Relaxed);
        let mine = mine.filter(|(g, _)| *g == generation).map(|(_, e)| e);
        match mine.or(s.last_exit) {
            // The first SDK call is still running on another thread.
            None => host,
            Some(last) => {
                // The statistics, where the next call's mark will have them too (see
                // HostMark::entering), and the CPU time only where it counts.
                let stats = last.mark.delay.is_some() && last.mark.thread == current_thread();
                let others = stats && {
                    let (start, busy_start) = s.unaccounted_since(&last);
                    let wall = at.saturating_duration_since(start).as_nanos() as u64;
                    s.busy_at(at).saturating_sub(busy_start).min(wall) > 0
                };
                let mark = HostMark {
                    at,
                    thread: current_thread(),
                    delay: if stats { run_queue_delay_ns() } else { None },
                    cpu: if others { thread_cpu_ns() } else { 0 },
                    own: own_ns(),
                };
                host + s.host_code_ns(&last, &mark).0
            }
        }
    };
    ProgramNow::At { epoch, ns }
}

/// The calling thread.
fn current_thread() -> libc::pthread_t {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() }
}

/// Host-side time of user code run inside an SDK call (a callback): on the host clock, or
/// into the sink of [`collect_callback_time`] when this thread has one.
pub(crate) fn callback_ran(ns: Nanos) {
    let collected = CALLBACK_SINK.with(|c| match c.get() {
        Some(t) => {
            c.set(Some(t + ns));
            true
        }
        None => false,
    });
    if !collected {
        with_state(|s| {
            let phase = s.inter_dpu.host_phase();
            s.clock.host_work(ns, phase, "callback");
        });
    }
}

/// Runs `f`, collecting the callback time it reports ([`callback_ran`]) instead of putting
/// it on the host clock; returns it. Callbacks that run concurrently (parallel callbacks)
/// overlap, so their caller charges the longest, not the sum.
pub(crate) fn collect_callback_time<T>(f: impl FnOnce() -> T) -> (T, Nanos) {
    let before = CALLBACK_SINK.with(|c| c.replace(Some(0)));
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALLBACK_SINK.with(|c| c.set(self.0));
        }
    }
    let restore = Restore(before);
    let out = f();
    let ns = CALLBACK_SINK.with(|c| c.get()).unwrap_or(0);
    drop(restore);
    (out, ns)
}

/// A rank (slot `id`, `dpus` DPUs) of a machine of hardware `hw` was allocated.
pub(crate) fn rank_allocated(id: u32, dpus: u32, hw: &HardwareProfile) {
    with_state(|s| {
        let now = s.clock.now();
        if s.hardware.is_none() {
            s.hardware = Some(HardwareInfo {
                name: hw.name.clone(),
                frequency_mhz: hw.dpu.frequency_mhz,
                revolver_cycles: hw.dpu.revolver_cycles,
                dma_read_alpha: hw.dma.read_alpha_cycles,
                bus_latency_ns: [hw.bus_spec().cpu_dpu_call_ns, hw.bus_spec().dpu_cpu_call_ns],
            });
        }
        let life = s.ranks.entry(id).or_default();
        life.intervals.push((now, None));
        life.dpus = life.dpus.max(dpus);
    });
}

/// A rank slot was returned (its set freed).
pub(crate) fn rank_released(slot: u32) {
    with_state(|s| {
        // The rank's last operations end before it is released.
        let ready = s.clock.rank_ready(slot);
        let at = s.clock.now().max(ready);
        // A later allocation of the slot starts with the MRAM on the host's side.
        s.mux_on_dpu.remove(&slot);
        if let Some(life) = s.ranks.get_mut(&slot) {
            if let Some(iv) = life.intervals.last_mut() {
                if iv.1.is_none() {
                    iv.1 = Some(at);
                }
            }
        }
    });
}

/// The issue of a call made now, of shape `call`.
pub(crate) fn issue_now(call: CallShape) -> Issue {
    let uncharged = UNCHARGED.with(|c| c.get());
    with_state(|s| Issue {
        at: s.clock.now(),
        call,
        exchange: s.inter_dpu.current(),
        uncharged,
    })
}

/// Runs `f` (a synchronous execution of a rank operation) with its issue.
pub(crate) fn with_sync_issue<T>(issue: Issue, f: impl FnOnce() -> T) -> T {
    let before = SYNC_ISSUE.with(|c| c.replace(Some(issue)));
    struct Restore(Option<Issue>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SYNC_ISSUE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// Sets the shape of the asynchronous call this thread is queuing.
pub(crate) fn set_call_shape(call: CallShape) {
    CALL_SHAPE.with(|c| c.set(call));
}

/// An operation was queued on a rank: remember when.
pub(crate) fn on_enqueue(rank: u32) {
    let call = CALL_SHAPE.with(|c| c.get());
    with_state(|s| {
        let at = s.clock.now();
        let exchange = s.inter_dpu.current();
        s.issues.entry(rank).or_default().push_back(Issue {
            at,
            call,
            exchange,
            uncharged: false,
        });
    });
}

/// The last queued operation of a rank could not be queued after all.
pub(crate) fn cancel_enqueue(rank: u32) {
    with_state(|s| {
        if let Some(q) = s.issues.get_mut(&rank) {
            q.pop_back();
        }
    });
}

/// Whether the synchronous operation running on this thread was issued inside [`uncharged`].
fn current_issue_uncharged() -> bool {
    SYNC_ISSUE.with(|c| c.get()).is_some_and(|i| i.uncharged)
}

/// The bus time [`finish`] will charge a transfer of `rank` that is about to finish on this
/// thread (its issue looked at, not taken): the bound above which its measured host-side
/// interleaving would count ([`crate::exec::local::interleave::measured_for`]).
pub(crate) fn modeled_xfer_ns(
    rank: u32,
    hw: &HardwareProfile,
    dir: Direction,
    kind: XferKind,
    len: usize,
    dpus: u32,
) -> Nanos {
    let call = match SYNC_ISSUE.with(|c| c.get()) {
        Some(i) => i.call,
        None => with_state(|s| {
            s.issues
                .get(&rank)
                .and_then(|q| q.front())
                .map(|i| i.call)
                .unwrap_or_default()
        }),
    };
    let call = if call.bytes == 0 {
        CallShape {
            ranks: 1,
            bytes: len as u64 * u64::from(dpus),
        }
    } else {
        call
    };
    hw.bus_model()
        .rank_in_call_ns(kind, dir, len as u64, dpus, call)
}

/// The issue of the operation about to run on `rank` on this thread.
fn current_issue(rank: u32) -> Issue {
    if let Some(i) = SYNC_ISSUE.with(|c| c.get()) {
        return i;
    }
    with_state(|s| {
        let now = s.clock.now();
        s.issues
            .get_mut(&rank)
            .and_then(|q| q.pop_front())
            .unwrap_or(Issue {
                at: now,
                call: CallShape::default(),
                exchange: s.inter_dpu.current(),
                uncharged: false,
            })
    })
}

/// Runs `f` on this thread with the synchronous rank operations it makes left off the
/// timeline: the emulator reaching into the emulated memories for a library that models the
/// time of that access itself (the collectives: their host step moves data a bus line at a
/// time and charges the bus model and its measured work, [`crate::clock::inter_dpu`]).
pub fn uncharged<T>(f: impl FnOnce() -> T) -> T {
    let before = UNCHARGED.with(|c| c.replace(true));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            UNCHARGED.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(before);
    f()
}

/// The phase of a launch or a load issued in `issue`: inter-DPU inside an exchange that owns
/// its kernels (a collective's relocation programs), else `phase`.
fn kernel_phase(s: &State, issue: &Issue, phase: Phase) -> Phase {
    match issue.exchange {
        Some(id) if s.inter_dpu.owns_kernels(id) => Phase::InterDpu,
        _ => phase,
    }
}

/// The host waits for `ranks` (the end of a synchronous call, or `dpu_sync`).
pub(crate) fn join(ranks: impl IntoIterator<Item = u32>) {
    if IN_QUEUED_CALLBACK.with(|c| c.get()) {
        // A synchronous call made by a queued callback: the rank's thread waits, the host
        // does not.
        return;
    }
    let ranks: Vec<u32> = ranks.into_iter().collect();
    with_state(|s| {
        s.clock.join(ranks);
    });
}

/// Joins the host with ranks when dropped (the end of a synchronous call, error or not).
pub(crate) struct JoinOnDrop(pub Vec<u32>);

impl Drop for JoinOnDrop {
    fn drop(&mut self) {
        join(std::mem::take(&mut self.0));
    }
}

/// What a rank operation did, as the clock needs it (reported once it has run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpDone {
    /// A program image of `bytes` bytes loaded on `dpus` DPUs.
    Load { bytes: u64, dpus: u32 },
    /// A transfer of `len` bytes per DPU on `dpus` DPUs, whose host-side interleaving took
    /// `host_ns` (real time); `mram`: it accesses MRAM (the first such access after a launch
    /// switches the rank's MRAM back to the host).
    Xfer {
        dir: Direction,
        kind: XferKind,
        len: usize,
        dpus: u32,
        host_ns: Nanos,
        mram: bool,
    },
    /// A launch (its record is in [`stats`], from `stats::record_launch`).
    Launch,
    /// Nothing to place (a callback's time is reported by [`queued_callback`]).
    Other,
}

/// Places a finished operation of rank `rank` (of a machine of hardware `hw`) on the
/// timeline.
pub(crate) fn finish(rank: u32, hw: &HardwareProfile, done: OpDone) {
    if done == OpDone::Other || current_issue_uncharged() {
        // Nothing to place, or the emulator's own access (see `uncharged`).
        return;
    }
    finish_issued(rank, hw, done, current_issue(rank));
}

/// Places a finished operation of rank `rank` that a daemon ran for this process: first the
/// remote path's own cost, `ipc_ns` of real time (messages, copies, the daemon's dispatch;
/// not its DPU simulation), on the rank's timeline from the operation's issue, then the
/// operation as [`finish`] does.
pub(crate) fn finish_remote(rank: u32, hw: &HardwareProfile, done: OpDone, ipc_ns: Nanos) {
    let mut issue = current_issue(rank);
    let phase = match done {
        OpDone::Load { .. } => Phase::AllocLoad,
        OpDone::Xfer {
            dir: Direction::ToDpu,
            ..
        } => Phase::CpuDpu,
        OpDone::Xfer { .. } => Phase::DpuCpu,
        OpDone::Launch => Phase::DpuKernel,
        OpDone::Other => Phase::Host,
    };
    if ipc_ns > 0 {
        with_state(|s| {
            let span = s
                .clock
                .rank_op(rank, issue.at, ipc_ns, phase, "remote path");
            issue.at = span.end;
            s.remote.calls += 1;
            s.remote.ipc_ns[phase as usize] += ipc_ns;
        });
    }
    if done != OpDone::Other {
        finish_issued(rank, hw, done, issue);
    }
}

/// The remote path's cost of work that is not one operation (sending a batch of writes
/// placed on the timeline already): `ns` on rank `rank`'s timeline from now, in `phase`.
pub(crate) fn remote_overhead(rank: u32, phase: Phase, ns: Nanos) {
    if ns == 0 {
        return;
    }
    with_state(|s| {
        let now = s.clock.now();
        s.clock.rank_op(rank, now, ns, phase, "remote path");
        s.remote.calls += 1;
        s.remote.ipc_ns[phase as usize] += ns;
    });
}

/// The remote path's cost, for the report (runs through a daemon only).
#[derive(Debug, Clone, Default)]
pub struct RemoteTotals {
    /// Operations the daemon ran for this process.
    pub calls: u64,
    /// Their remote-path time (real time of the round trip less the daemon's work), ns, by
    /// phase (indexed by `Phase as usize`).
    pub ipc_ns: [u64; 6],
}

/// What a rank is charged for loading a program of `image_bytes` bytes (code, WRAM image,
/// MRAM segments: [`crate::Program::image_bytes`]) on `dpus` of its DPUs: a broadcast of the
/// image. Public so that a library can predict the cost of the loads it would make.
pub fn load_ns(hw: &HardwareProfile, image_bytes: u64, dpus: u32) -> Nanos {
    hw.bus_model()
        .rank_transfer_ns(XferKind::Broadcast, Direction::ToDpu, image_bytes, dpus)
}

/// What a rank is charged for a launch whose slowest DPU ran `max_cycles`, in a call on
/// `call_ranks` ranks: the cycles at the DPUs' frequency and the launch's host-side cost
/// (`[launch]` of the profile: per call, and per rank of the call one after the other).
/// Public so that a library can predict the cost of the launches it would make.
pub fn launch_ns(hw: &HardwareProfile, max_cycles: u64, call_ranks: u32) -> Nanos {
    let mhz = u64::from(hw.dpu.frequency_mhz.max(1));
    let launch = hw.launch_spec();
    let host = launch.fixed_ns + launch.per_rank_ns * u64::from(call_ranks.max(1));
    (max_cycles * 1000).div_ceil(mhz) + host
}

fn finish_issued(rank: u32, hw: &HardwareProfile, done: OpDone, issue: Issue) {
    match done {
        OpDone::Other => {}
        OpDone::Load { bytes, dpus } => {
            let d = load_ns(hw, bytes, dpus);
            with_state(|s| {
                let phase = kernel_phase(s, &issue, Phase::AllocLoad);
                s.clock.rank_op(rank, issue.at, d, phase, "dpu_load");
            });
        }
        OpDone::Xfer {
            dir,
            kind,
            len,
            dpus,
            host_ns: host,
            mram,
        } => {
            let bus = hw.bus_model();
            // The call's fixed cost for each of its ranks, the rank's bytes, at least the
            // host-wide limit of the call's bytes (an operation queued by a callback, with
            // no call shape, is a call on its rank alone).
            let call = if issue.call.bytes == 0 {
                CallShape {
                    ranks: 1,
                    bytes: len as u64 * u64::from(dpus),
                }
            } else {
                issue.call
            };
            let modeled = bus.rank_in_call_ns(kind, dir, len as u64, dpus, call);
            // The first MRAM access after a launch first hands the rank's MRAM back to the
            // host (the SDK switches the mux lazily, before that access's bytes move).
            let mux = if mram && with_state(|s| s.mux_on_dpu.remove(&rank)) {
                hw.launch_spec().mux_switch_ns
            } else {
                0
            };
            let d = mux + modeled.max(host);
            let (phase, name, di) = match (dir, issue.exchange) {
                (Direction::ToDpu, None) => (Phase::CpuDpu, "transfer to DPUs", 0),
                (Direction::FromDpu, None) => (Phase::DpuCpu, "transfer from DPUs", 1),
                // Part of an exchange between DPUs (see `inter_dpu`).
                (Direction::ToDpu, Some(_)) => (Phase::InterDpu, "inter-DPU transfer to DPUs", 0),
                (Direction::FromDpu, Some(_)) => {
                    (Phase::InterDpu, "inter-DPU transfer from DPUs", 1)
                }
            };
            let ki = match kind {
                XferKind::Serial => 0,
                XferKind::Parallel => 1,
                XferKind::Broadcast => 2,
            };
            let serial_key = (kind == XferKind::Serial).then_some(SerialKey { rank, dir, len });
            with_state(|s| {
                s.clock.rank_op(rank, issue.at, d, phase, name);
                let x = &mut s.xfers;
                x.ops[di][ki] += 1;
                x.bytes[di] += len as u64 * u64::from(dpus);
                x.bus_ns[di] += modeled;
                if mux > 0 {
                    x.mux_switches[di] += 1;
                    x.mux_switch_ns += mux;
                }
                if let Some(id) = issue.exchange {
                    s.inter_dpu.add_xfer_bytes(id, len as u64 * u64::from(dpus));
                }
                x.interleave_ns += host;
                if d > 0 && bus.call_fixed_ns(dir, call.ranks) * 2 >= d {
                    x.small_ops += 1;
                    x.small_ops_ns += d;
                }
                s.note_transfer(serial_key);
            });
            xfer_log::record(&xfer_log::XferLine {
                rank,
                issue_ns: issue.at,
                dir,
                kind,
                bytes_per_dpu: len as u64,
                dpus,
                call,
                mux: mux > 0,
                inter_dpu: issue.exchange.is_some(),
                modeled_ns: modeled,
                host_ns: host,
                charged_ns: d,
            });
        }
        OpDone::Launch => {
            let Some(record) = stats::take_launch(rank) else {
                return;
            };
            let d = launch_ns(hw, record.max_cycles, issue.call.ranks);
            with_state(|s| {
                let phase = kernel_phase(s, &issue, Phase::DpuKernel);
                let span = s.clock.rank_op(rank, issue.at, d, phase, "dpu_launch");
                s.mux_on_dpu.insert(rank);
                s.launches.push(LaunchEntry {
                    rank,
                    issue_ns: issue.at,
                    start_ns: span.start,
                    end_ns: span.end,
                    frequency_mhz: hw.dpu.frequency_mhz,
                    record,
                });
                s.note_transfer(None);
            });
        }
    }
}

/// A queued callback of `rank` ran user code for `ns` (real time on the host): the rank's
/// queue is held that long.
pub(crate) fn queued_callback(rank: u32, ns: Nanos) {
    let issue = current_issue(rank);
    with_state(|s| {
        s.clock.rank_op(rank, issue.at, ns, Phase::Host, "callback");
    });
}

/// Runs a queued callback (on a rank's thread, or a non-blocking one on its own thread):
/// keeps it off the host clock; returns the time of its user code.
pub(crate) fn in_queued_callback<T>(f: impl FnOnce() -> T) -> (T, Nanos) {
    let before = IN_QUEUED_CALLBACK.with(|c| c.replace(true));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_QUEUED_CALLBACK.with(|c| c.set(self.0));
        }
    }
    let _r = Restore(before);
    collect_callback_time(f)
}

/// Forgets the timeline: the clock restarts at 0 at the next SDK call, and past launches,
/// transfers and allocations are dropped (for tests, or to measure one region of a program;
/// ranks allocated before are then not known to the report).
pub fn reset() {
    let mut g = STATE.lock().unwrap_or_else(|e| e.into_inner());
    // Every thread's last SDK call belongs to the old timeline.
    GENERATION.fetch_add(1, Ordering::Relaxed);
    *g = Some(State::new());
}
