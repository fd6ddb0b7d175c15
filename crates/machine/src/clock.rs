//! The virtual clock: one timeline for the host and one per rank, in nanoseconds.
//!
//! Operations hand the clock their modeled (or, for host work, measured) durations; the clock
//! places them on the timelines:
//!
//! - host work advances the host timeline ([`VirtualClock::host_work`]);
//! - an operation on a rank issued by the host at time `t` starts when the rank is free,
//!   `max(t, rank ready)`, and makes the rank busy until it ends ([`VirtualClock::rank_op`]);
//!   the host goes on (asynchronous launches and transfers let ranks run ahead);
//! - a synchronous call, or `dpu_sync`, joins: the host waits until the ranks are done
//!   ([`VirtualClock::join`]). The wait is attributed to what the ranks were doing, so the
//!   host timeline's phases always add up to the total time.
//!
//! ```
//! use openpim_machine::{Phase, VirtualClock};
//! let mut c = VirtualClock::new();
//! c.host_work(100, Phase::Host, "host");
//! c.rank_op(0, c.now(), 1_000, Phase::DpuKernel, "launch"); // asynchronous launch
//! c.host_work(300, Phase::Host, "host");                    // overlaps the kernel
//! c.join([0]);                                              // dpu_sync
//! assert_eq!(c.now(), 1_100);
//! assert_eq!(c.host_phase_ns(Phase::DpuKernel), 700);       // the host waited 700 ns
//! assert_eq!(c.host_phase_ns(Phase::Host), 400);
//! ```

/// Virtual time, nanoseconds.
pub type Nanos = u64;

/// The phases of the literature's time breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// Host -> DPU transfers.
    CpuDpu,
    /// DPU kernels.
    DpuKernel,
    /// Communication between DPUs through the host.
    InterDpu,
    /// DPU -> host transfers.
    DpuCpu,
    /// Host code (the program's own, between SDK calls; and host callbacks).
    Host,
    /// Allocation and program loading.
    AllocLoad,
}

impl Phase {
    /// Every phase, in report order.
    pub const ALL: [Phase; 6] = [
        Phase::CpuDpu,
        Phase::DpuKernel,
        Phase::InterDpu,
        Phase::DpuCpu,
        Phase::Host,
        Phase::AllocLoad,
    ];

    /// Position in [`Phase::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Stable machine name (report keys).
    pub fn key(self) -> &'static str {
        match self {
            Phase::CpuDpu => "cpu_dpu",
            Phase::DpuKernel => "dpu_kernel",
            Phase::InterDpu => "inter_dpu",
            Phase::DpuCpu => "dpu_cpu",
            Phase::Host => "host",
            Phase::AllocLoad => "alloc_load",
        }
    }

    /// Human name (report tables, traces).
    pub fn label(self) -> &'static str {
        match self {
            Phase::CpuDpu => "CPU-DPU",
            Phase::DpuKernel => "DPU kernel",
            Phase::InterDpu => "Inter-DPU",
            Phase::DpuCpu => "DPU-CPU",
            Phase::Host => "Host",
            Phase::AllocLoad => "Alloc/load",
        }
    }
}

/// A stretch of one timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: Nanos,
    pub end: Nanos,
    pub phase: Phase,
    /// What happened (an SDK operation, "host", "wait").
    pub name: &'static str,
}

impl Span {
    /// Length of the span.
    pub fn len(&self) -> Nanos {
        self.end - self.start
    }

    /// True for an empty span.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

/// The spans of one timeline (bounded; per-phase totals are always exact).
#[derive(Debug, Clone, Default)]
pub struct Track {
    spans: Vec<Span>,
    /// Spans not kept because the track was full.
    dropped: u64,
    /// Time per phase.
    totals: [Nanos; 6],
}

impl Track {
    fn push(&mut self, span: Span, limit: usize) {
        if span.is_empty() {
            return;
        }
        self.totals[span.phase.index()] += span.len();
        // Merge with the previous span when contiguous and alike (keeps traces small).
        if let Some(last) = self.spans.last_mut() {
            if last.end == span.start && last.phase == span.phase && last.name == span.name {
                last.end = span.end;
                return;
            }
        }
        if self.spans.len() < limit {
            self.spans.push(span);
        } else {
            self.dropped += 1;
        }
    }

    /// The kept spans, in time order.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Spans dropped because the track was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Time spent in `phase`.
    pub fn phase_ns(&self, phase: Phase) -> Nanos {
        self.totals[phase.index()]
    }

    /// Total busy time.
    pub fn busy_ns(&self) -> Nanos {
        self.totals.iter().sum()
    }
}

#[derive(Debug, Clone, Default)]
struct RankClock {
    ready: Nanos,
    track: Track,
    last_phase: Option<Phase>,
}

/// The host timeline and one timeline per rank (indexed by rank slot).
#[derive(Debug, Clone)]
pub struct VirtualClock {
    host: Nanos,
    host_track: Track,
    ranks: Vec<RankClock>,
    span_limit: usize,
}

impl Default for VirtualClock {
    fn default() -> Self {
        VirtualClock::new()
    }
}

impl VirtualClock {
    /// Default number of spans kept per timeline.
    pub const DEFAULT_SPAN_LIMIT: usize = 200_000;

    /// A clock at time 0.
    pub fn new() -> VirtualClock {
        VirtualClock::with_span_limit(Self::DEFAULT_SPAN_LIMIT)
    }

    /// A clock that keeps at most `limit` spans per timeline (totals stay exact).
    pub fn with_span_limit(limit: usize) -> VirtualClock {
        VirtualClock {
            host: 0,
            host_track: Track::default(),
            ranks: Vec::new(),
            span_limit: limit,
        }
    }

    /// The host's current time.
    pub fn now(&self) -> Nanos {
        self.host
    }

    fn rank_mut(&mut self, rank: u32) -> &mut RankClock {
        let i = rank as usize;
        if self.ranks.len() <= i {
            self.ranks.resize_with(i + 1, RankClock::default);
        }
        &mut self.ranks[i]
    }

    /// When `rank` has finished everything it was given.
    pub fn rank_ready(&self, rank: u32) -> Nanos {
        self.ranks.get(rank as usize).map_or(0, |r| r.ready)
    }

    /// Number of rank timelines (highest rank slot seen + 1).
    pub fn nr_ranks(&self) -> u32 {
        self.ranks.len() as u32
    }

    /// The host's timeline.
    pub fn host_track(&self) -> &Track {
        &self.host_track
    }

    /// A rank's timeline (`None` if the rank never did anything).
    pub fn rank_track(&self, rank: u32) -> Option<&Track> {
        self.ranks.get(rank as usize).map(|r| &r.track)
    }

    /// Host time attributed to `phase` (the host phases add up to [`VirtualClock::now`]).
    pub fn host_phase_ns(&self, phase: Phase) -> Nanos {
        self.host_track.phase_ns(phase)
    }

    /// The host works for `d` (its own code, or the host share of an SDK call).
    pub fn host_work(&mut self, d: Nanos, phase: Phase, name: &'static str) -> Span {
        let span = Span {
            start: self.host,
            end: self.host + d,
            phase,
            name,
        };
        self.host = span.end;
        self.host_track.push(span, self.span_limit);
        span
    }

    /// An operation of `d` on `rank`, issued by the host at `issue`: it starts when the rank
    /// is free and the host has issued it. The host does not wait (see [`VirtualClock::join`]).
    pub fn rank_op(
        &mut self,
        rank: u32,
        issue: Nanos,
        d: Nanos,
        phase: Phase,
        name: &'static str,
    ) -> Span {
        let limit = self.span_limit;
        let r = self.rank_mut(rank);
        let start = issue.max(r.ready);
        let span = Span {
            start,
            end: start + d,
            phase,
            name,
        };
        r.ready = span.end;
        r.last_phase = Some(phase);
        r.track.push(span, limit);
        span
    }

    /// The host waits until every rank of `ranks` is done. Returns how long it waited. The
    /// wait is attributed, on the host timeline, to the phases of the operations of the rank
    /// that finishes last.
    pub fn join(&mut self, ranks: impl IntoIterator<Item = u32>) -> Nanos {
        let mut last: Option<(u32, Nanos)> = None;
        for r in ranks {
            let ready = self.rank_ready(r);
            if last.is_none_or(|(_, t)| ready > t) {
                last = Some((r, ready));
            }
        }
        let Some((rank, until)) = last else {
            return 0;
        };
        if until <= self.host {
            return 0;
        }
        let from = self.host;
        let pieces = self.attribute(rank, from, until);
        for (start, end, phase) in pieces {
            let span = Span {
                start,
                end,
                phase,
                name: "wait",
            };
            self.host_track.push(span, self.span_limit);
        }
        self.host = until;
        until - from
    }

    /// Splits `[from, until)` by the phases of `rank`'s spans (earlier first); parts not
    /// covered by a kept span take the rank's last phase.
    fn attribute(&self, rank: u32, from: Nanos, until: Nanos) -> Vec<(Nanos, Nanos, Phase)> {
        let r = &self.ranks[rank as usize];
        let fallback = r.last_phase.unwrap_or(Phase::DpuKernel);
        let mut out: Vec<(Nanos, Nanos, Phase)> = Vec::new();
        let mut cursor = from;
        // Spans are in time order; only those ending after `from` matter, and they are at the
        // end of the track.
        let spans = r.track.spans();
        let first = spans.partition_point(|s| s.end <= from);
        for s in &spans[first..] {
            if s.start >= until {
                break;
            }
            let a = s.start.max(cursor);
            let b = s.end.min(until);
            if a > cursor {
                out.push((cursor, a, fallback));
            }
            if b > a {
                out.push((a, b, s.phase));
                cursor = b;
            }
        }
        if cursor < until {
            out.push((cursor, until, fallback));
        }
        out
    }

    /// A synchronous call: the operations `parts` (rank, duration) start when the host issues
    /// them (now) and their ranks are free; the host waits for all of them.
    pub fn sync_op(&mut self, parts: &[(u32, Nanos)], phase: Phase, name: &'static str) -> Nanos {
        let issue = self.host;
        for (r, d) in parts {
            self.rank_op(*r, issue, *d, phase, name);
        }
        self.join(parts.iter().map(|(r, _)| *r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(c: &VirtualClock) -> Nanos {
        Phase::ALL.iter().map(|p| c.host_phase_ns(*p)).sum()
    }

    #[test]
    fn synchronous_sequence() {
        // host 10, sync transfer 100 on ranks 0 and 1 (rank 1 takes 150), sync launch 1000/800,
        // sync read 50: host = 10 + 150 + 1000 + 50.
        let mut c = VirtualClock::new();
        c.host_work(10, Phase::Host, "host");
        c.sync_op(&[(0, 100), (1, 150)], Phase::CpuDpu, "push");
        assert_eq!(c.now(), 160);
        c.sync_op(&[(0, 1000), (1, 800)], Phase::DpuKernel, "launch");
        assert_eq!(c.now(), 1160);
        // Rank 1 finished its launch at 960 but started at 160 (it waited for the host).
        assert_eq!(c.rank_ready(1), 960);
        c.sync_op(&[(0, 50)], Phase::DpuCpu, "read");
        assert_eq!(c.now(), 1210);
        assert_eq!(c.host_phase_ns(Phase::Host), 10);
        assert_eq!(c.host_phase_ns(Phase::CpuDpu), 150);
        assert_eq!(c.host_phase_ns(Phase::DpuKernel), 1000);
        assert_eq!(c.host_phase_ns(Phase::DpuCpu), 50);
        assert_eq!(total(&c), c.now());
        assert_eq!(c.rank_track(1).unwrap().busy_ns(), 150 + 800);
    }

    #[test]
    fn asynchronous_overlap() {
        // Async launch of 1000 at t=0, host works 400, async read of 100 queued behind the
        // launch, host works 200 more, then sync: the rank ends at 1100.
        let mut c = VirtualClock::new();
        c.rank_op(0, c.now(), 1000, Phase::DpuKernel, "launch");
        c.host_work(400, Phase::Host, "host");
        let read = c.rank_op(0, c.now(), 100, Phase::DpuCpu, "read");
        assert_eq!((read.start, read.end), (1000, 1100));
        c.host_work(200, Phase::Host, "host");
        let waited = c.join([0]);
        assert_eq!(waited, 500);
        assert_eq!(c.now(), 1100);
        // The wait [600, 1100) splits into 400 of kernel and 100 of read.
        assert_eq!(c.host_phase_ns(Phase::Host), 600);
        assert_eq!(c.host_phase_ns(Phase::DpuKernel), 400);
        assert_eq!(c.host_phase_ns(Phase::DpuCpu), 100);
        assert_eq!(total(&c), c.now());
        // Joining again costs nothing.
        assert_eq!(c.join([0]), 0);
    }

    #[test]
    fn ranks_run_in_parallel_and_join_waits_for_the_last() {
        let mut c = VirtualClock::new();
        c.rank_op(0, 0, 300, Phase::DpuKernel, "launch");
        c.rank_op(3, 0, 700, Phase::DpuKernel, "launch");
        c.host_work(100, Phase::Host, "host");
        assert_eq!(c.join([0, 3]), 600);
        assert_eq!(c.now(), 700);
        assert_eq!(c.nr_ranks(), 4);
        assert_eq!(c.rank_ready(2), 0);
        // An op issued now on rank 0 (free since 300) starts now.
        let s = c.rank_op(0, c.now(), 10, Phase::CpuDpu, "push");
        assert_eq!(s.start, 700);
    }

    #[test]
    fn serial_transfers_are_sequential_on_the_host() {
        // Four serial copies of 100 each, synchronous: 400; one parallel push of 130: 130.
        let mut serial = VirtualClock::new();
        for _ in 0..4 {
            serial.sync_op(&[(0, 100)], Phase::CpuDpu, "copy");
        }
        let mut parallel = VirtualClock::new();
        parallel.sync_op(&[(0, 130)], Phase::CpuDpu, "push");
        assert_eq!(serial.now(), 400);
        assert_eq!(parallel.now(), 130);
    }

    #[test]
    fn span_limit_keeps_totals_exact() {
        let mut c = VirtualClock::with_span_limit(2);
        for i in 0..10 {
            let phase = if i % 2 == 0 {
                Phase::Host
            } else {
                Phase::CpuDpu
            };
            c.host_work(5, phase, "x");
        }
        assert_eq!(c.host_track().spans().len(), 2);
        assert_eq!(c.host_track().dropped(), 8);
        assert_eq!(total(&c), 50);
        // Adjacent alike spans merge.
        let mut m = VirtualClock::new();
        m.host_work(5, Phase::Host, "host");
        m.host_work(5, Phase::Host, "host");
        assert_eq!(m.host_track().spans().len(), 1);
        assert_eq!(m.host_track().spans()[0].len(), 10);
    }

    #[test]
    fn wait_beyond_kept_spans_uses_the_last_phase() {
        let mut c = VirtualClock::with_span_limit(1);
        c.rank_op(0, 0, 10, Phase::CpuDpu, "push");
        c.rank_op(0, 0, 90, Phase::DpuKernel, "launch"); // dropped span
        c.join([0]);
        assert_eq!(c.host_phase_ns(Phase::CpuDpu), 10);
        assert_eq!(c.host_phase_ns(Phase::DpuKernel), 90);
    }
}
