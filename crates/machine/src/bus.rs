//! The host <-> PIM bus model: how long a transfer between host memory and the DPUs' memories
//! takes on the emulated server.
//!
//! The real system moves data with the host CPU: it writes (or reads) the PIM DIMMs over the
//! DDR4 bus, each 64-bit bus word spread byte-wise over the 8 chips of a rank. The model is
//! parametric, its parameters published figures (the `[bus]` section of the hardware profile;
//! `docs/fidelity.md` gives every source):
//!
//! - every SDK call has a fixed cost per direction: `cpu_dpu_call_ns` / `dpu_cpu_call_ns` for a
//!   call on one rank (the SDK's host-side work: entry, transfer matrix, MRAM access, cache
//!   maintenance), and `cpu_dpu_call_rank_ns` / `dpu_cpu_call_rank_ns` more for each further
//!   rank it addresses, paid before its bytes move: `F + (R − 1)·p` for `R` ranks;
//! - on one rank, `n` bytes to (or from) each of `k` DPUs take `n / b1 + n·(k−1)·c`: one DPU
//!   alone streams at the published single-DPU rate `b1`, and each further DPU of the rank
//!   adds a shared cost `c` per byte, such that a full rank of `D` DPUs reaches the published
//!   full-rank bandwidth `B`: `c = (D/B − 1/b1) / (D − 1)`. The rank bandwidth `k·n / t` grows
//!   with `k` and saturates towards `1/c`;
//! - broadcast (one buffer to every DPU) has its own full-rank figure;
//! - the ranks of one call transfer in parallel, but the host saturates: all ranks together
//!   move at most `B · g(R) / g(1)` (with `g(R) = base + step · min(R, max_ranks)`, the shape
//!   of a published multi-rank fit, and `B` the kind's one-rank figure), and never more
//!   than the host's memory channels (`host_channels × channel_gbps`).
//!
//! Bandwidths are in GB/s = 10^9 bytes per second = bytes per nanosecond.
//!
//! ```
//! use openpim_machine::{BusModel, BusSpec, Direction, XferKind};
//! let bus = BusModel::new(&BusSpec::upmem_default(), 64);
//! // 32 MB to one DPU: 72 us + 32e6 B / 0.33 B/ns (beyond the host's cache)
//! let t = bus.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, 32_000_000, 1);
//! assert_eq!(t, 72_000 + 96_969_697);
//! // 1 MB fits the host's cache: 1.97 times faster
//! let t = bus.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, 1_000_000, 1);
//! assert_eq!(t, 72_000 + 1_538_225);
//! ```

use serde::Deserialize;

/// The `[bus]` section of a hardware profile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusSpec {
    /// Fixed cost of a host -> DPU call on one rank, nanoseconds.
    pub cpu_dpu_call_ns: u64,
    /// Fixed cost of a DPU -> host call on one rank, nanoseconds.
    pub dpu_cpu_call_ns: u64,
    /// What each further rank a host -> DPU call addresses adds to its fixed cost, ns.
    pub cpu_dpu_call_rank_ns: u64,
    /// What each further rank a DPU -> host call addresses adds to its fixed cost, ns.
    pub dpu_cpu_call_rank_ns: u64,
    /// Host -> one DPU, GB/s.
    pub cpu_dpu_serial_gbps: f64,
    /// One DPU -> host, GB/s.
    pub dpu_cpu_serial_gbps: f64,
    /// Host -> all DPUs of a rank in parallel (aggregate), GB/s.
    pub cpu_dpu_rank_gbps: f64,
    /// All DPUs of a rank -> host in parallel (aggregate), GB/s.
    pub dpu_cpu_rank_gbps: f64,
    /// One buffer broadcast to all DPUs of a rank (bytes delivered, aggregate), GB/s.
    pub broadcast_rank_gbps: f64,
    /// Host-wide saturation with ranks: `g(R) = base + step · min(R, max_ranks)`; a call on
    /// `R` ranks moves at most `g(R) / g(1)` times the one-rank figure of its kind.
    pub rank_scaling_base_gbps: f64,
    /// See `rank_scaling_base_gbps`.
    pub rank_scaling_step_gbps: f64,
    /// See `rank_scaling_base_gbps`.
    pub rank_scaling_max_ranks: f64,
    /// Memory channels of the host that carry PIM DIMMs.
    pub host_channels: u32,
    /// Peak bandwidth of one memory channel, GB/s.
    pub channel_gbps: f64,
    /// What each DPU a call addresses adds to its fixed cost, host -> DPU, ns (a serial copy
    /// addresses one DPU). Absent: 0.
    #[serde(default)]
    pub cpu_dpu_call_dpu_ns: u64,
    /// What each DPU a call addresses adds to its fixed cost, DPU -> host, ns. Absent: 0.
    #[serde(default)]
    pub dpu_cpu_call_dpu_ns: u64,
    /// Programs' full-rank host -> DPU rate as a fraction of `cpu_dpu_rank_gbps` (the
    /// published figure is a repeated microbenchmark; see the profile). Absent: 1.
    #[serde(default = "one")]
    pub cpu_dpu_rank_fraction: f64,
    /// Programs' full-rank DPU -> host rate as a fraction of `dpu_cpu_rank_gbps` (the
    /// published figure is a repeated microbenchmark as well). Absent: 1.
    #[serde(default = "one")]
    pub dpu_cpu_rank_fraction: f64,
    /// The host's last-level cache, bytes: a host -> DPU call whose source bytes fit in it
    /// moves `cpu_dpu_cached_speedup` times faster. Absent or 0: no such speedup.
    #[serde(default)]
    pub host_cache_bytes: u64,
    /// See `host_cache_bytes`. Absent: 1.
    #[serde(default = "one")]
    pub cpu_dpu_cached_speedup: f64,
    /// Replaced by `cpu_dpu_call_ns` and `dpu_cpu_call_ns`; accepted only to say so.
    #[serde(default)]
    pub call_latency_ns: Option<u64>,
}

fn one() -> f64 {
    1.0
}

impl BusSpec {
    /// The figures of the built-in `upmem-v1a` profile (used when a profile file has no
    /// `[bus]` section).
    pub fn upmem_default() -> BusSpec {
        BusSpec {
            cpu_dpu_call_ns: 72_000,
            dpu_cpu_call_ns: 108_000,
            cpu_dpu_call_rank_ns: 8_500,
            dpu_cpu_call_rank_ns: 10_500,
            cpu_dpu_serial_gbps: 0.33,
            dpu_cpu_serial_gbps: 0.12,
            cpu_dpu_rank_gbps: 6.68,
            dpu_cpu_rank_gbps: 4.74,
            broadcast_rank_gbps: 16.88,
            rank_scaling_base_gbps: 5.042768,
            rank_scaling_step_gbps: 0.258673,
            rank_scaling_max_ranks: 31.536102,
            host_channels: 10,
            channel_gbps: 19.2,
            cpu_dpu_call_dpu_ns: 0,
            dpu_cpu_call_dpu_ns: 1_100,
            cpu_dpu_rank_fraction: 0.437,
            dpu_cpu_rank_fraction: 1.0,
            host_cache_bytes: 11 << 20,
            cpu_dpu_cached_speedup: 1.97,
            call_latency_ns: None,
        }
    }

    /// Checks that the numbers make a model: positive bandwidths, and full-rank figures no
    /// larger than `dpus_per_rank` single-DPU streams (the shared cost cannot be negative).
    pub fn validate(&self, dpus_per_rank: u32) -> Result<(), String> {
        if self.call_latency_ns.is_some() {
            return Err("bus.call_latency_ns was replaced by bus.cpu_dpu_call_ns and bus.dpu_cpu_call_ns (fixed cost of a call per rank, each direction; docs/fidelity.md)".into());
        }
        let positive = [
            ("bus.cpu_dpu_serial_gbps", self.cpu_dpu_serial_gbps),
            ("bus.dpu_cpu_serial_gbps", self.dpu_cpu_serial_gbps),
            ("bus.cpu_dpu_rank_gbps", self.cpu_dpu_rank_gbps),
            ("bus.dpu_cpu_rank_gbps", self.dpu_cpu_rank_gbps),
            ("bus.broadcast_rank_gbps", self.broadcast_rank_gbps),
            ("bus.rank_scaling_base_gbps", self.rank_scaling_base_gbps),
            ("bus.channel_gbps", self.channel_gbps),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} = {v}: bandwidths must be positive (GB/s)"));
            }
        }
        if !(self.rank_scaling_step_gbps.is_finite() && self.rank_scaling_step_gbps >= 0.0) {
            return Err(format!(
                "bus.rank_scaling_step_gbps = {}: must be >= 0 (GB/s per rank)",
                self.rank_scaling_step_gbps
            ));
        }
        if !(self.rank_scaling_max_ranks.is_finite() && self.rank_scaling_max_ranks >= 1.0) {
            return Err(format!(
                "bus.rank_scaling_max_ranks = {}: must be >= 1",
                self.rank_scaling_max_ranks
            ));
        }
        for (name, v) in [
            ("bus.cpu_dpu_rank_fraction", self.cpu_dpu_rank_fraction),
            ("bus.dpu_cpu_rank_fraction", self.dpu_cpu_rank_fraction),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} = {v}: must be > 0"));
            }
        }
        if !(self.cpu_dpu_cached_speedup.is_finite() && self.cpu_dpu_cached_speedup >= 1.0) {
            return Err(format!(
                "bus.cpu_dpu_cached_speedup = {}: must be >= 1 (bytes in the host's cache move no slower)",
                self.cpu_dpu_cached_speedup
            ));
        }
        if self.host_channels == 0 {
            return Err("bus.host_channels must be > 0".into());
        }
        let d = f64::from(dpus_per_rank);
        let pairs = [
            (
                "bus.cpu_dpu_rank_gbps",
                self.cpu_dpu_rank_gbps * self.cpu_dpu_rank_fraction,
                "bus.cpu_dpu_serial_gbps",
                self.cpu_dpu_serial_gbps,
            ),
            (
                "bus.dpu_cpu_rank_gbps",
                self.dpu_cpu_rank_gbps * self.dpu_cpu_rank_fraction,
                "bus.dpu_cpu_serial_gbps",
                self.dpu_cpu_serial_gbps,
            ),
            (
                "bus.broadcast_rank_gbps",
                self.broadcast_rank_gbps,
                "bus.cpu_dpu_serial_gbps",
                self.cpu_dpu_serial_gbps,
            ),
        ];
        for (rank_name, rank, serial_name, serial) in pairs {
            if rank > d * serial * (1.0 + 1e-9) {
                return Err(format!(
                    "{rank_name} = {rank} exceeds {dpus_per_rank} DPUs x {serial_name} = {}: a rank cannot be faster than all its DPUs streaming at the single-DPU rate",
                    d * serial
                ));
            }
        }
        Ok(())
    }
}

/// Direction of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Host -> DPUs (CPU-DPU).
    ToDpu,
    /// DPUs -> host (DPU-CPU).
    FromDpu,
}

impl Direction {
    fn index(self) -> usize {
        match self {
            Direction::ToDpu => 0,
            Direction::FromDpu => 1,
        }
    }
}

/// How a transfer uses the bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum XferKind {
    /// One DPU per call (`dpu_copy_to`/`dpu_copy_from` on a DPU).
    Serial,
    /// A buffer per DPU, DPUs of a rank together (`dpu_prepare_xfer` + `dpu_push_xfer`).
    Parallel,
    /// One buffer to every DPU (`dpu_broadcast_to`, `dpu_copy_to` on a set).
    Broadcast,
}

impl XferKind {
    /// Lower-case name for reports.
    pub fn name(self) -> &'static str {
        match self {
            XferKind::Serial => "serial",
            XferKind::Parallel => "parallel",
            XferKind::Broadcast => "broadcast",
        }
    }
}

/// One SDK call's shape: how many ranks it addresses and the bytes it moves over all of them
/// (for the fixed cost per rank and the host-wide limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallShape {
    /// Ranks the call addresses (at least 1 counts).
    pub ranks: u32,
    /// Bytes over all ranks (delivered bytes for a broadcast).
    pub bytes: u64,
}

/// The bus model of one hardware profile, in nanoseconds and bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct BusModel {
    /// Fixed cost of a call on one rank: [to DPU, from DPU].
    latency_ns: [u64; 2],
    /// What each further rank of a call adds to its fixed cost: [to DPU, from DPU].
    rank_latency_ns: [u64; 2],
    /// What each DPU of a rank's part of a call adds to its fixed cost: [to DPU, from DPU].
    dpu_latency_ns: [u64; 2],
    /// Host -> DPU calls whose source bytes are at most this many move `cached_speedup`
    /// times faster (0: never).
    cache_bytes: u64,
    cached_speedup: f64,
    /// ns per byte of one DPU's stream: [to DPU, from DPU].
    serial_ns_per_byte: [f64; 2],
    /// Shared per-byte cost of a rank: [to DPU, from DPU, broadcast].
    shared_ns_per_byte: [f64; 3],
    /// One full rank's bandwidth: [to DPU, from DPU, broadcast], GB/s.
    rank_gbps: [f64; 3],
    /// `g(R) = base + step · min(R, max)`: (base, step, max).
    scaling: (f64, f64, f64),
    /// GB/s of the whole host (all channels).
    channels_gbps: f64,
}

impl BusModel {
    /// The model for `spec` on ranks of `dpus_per_rank` DPUs.
    pub fn new(spec: &BusSpec, dpus_per_rank: u32) -> BusModel {
        let d = f64::from(dpus_per_rank.max(1));
        let shared = |rank: f64, serial: f64| {
            if d <= 1.0 {
                0.0
            } else {
                ((d / rank - 1.0 / serial) / (d - 1.0)).max(0.0)
            }
        };
        let cpu_dpu_rank = spec.cpu_dpu_rank_gbps * spec.cpu_dpu_rank_fraction;
        let dpu_cpu_rank = spec.dpu_cpu_rank_gbps * spec.dpu_cpu_rank_fraction;
        BusModel {
            latency_ns: [spec.cpu_dpu_call_ns, spec.dpu_cpu_call_ns],
            rank_latency_ns: [spec.cpu_dpu_call_rank_ns, spec.dpu_cpu_call_rank_ns],
            dpu_latency_ns: [spec.cpu_dpu_call_dpu_ns, spec.dpu_cpu_call_dpu_ns],
            cache_bytes: spec.host_cache_bytes,
            cached_speedup: spec.cpu_dpu_cached_speedup,
            serial_ns_per_byte: [
                1.0 / spec.cpu_dpu_serial_gbps,
                1.0 / spec.dpu_cpu_serial_gbps,
            ],
            shared_ns_per_byte: [
                shared(cpu_dpu_rank, spec.cpu_dpu_serial_gbps),
                shared(dpu_cpu_rank, spec.dpu_cpu_serial_gbps),
                shared(spec.broadcast_rank_gbps, spec.cpu_dpu_serial_gbps),
            ],
            rank_gbps: [cpu_dpu_rank, dpu_cpu_rank, spec.broadcast_rank_gbps],
            scaling: (
                spec.rank_scaling_base_gbps,
                spec.rank_scaling_step_gbps,
                spec.rank_scaling_max_ranks,
            ),
            channels_gbps: f64::from(spec.host_channels) * spec.channel_gbps,
        }
    }

    /// Fixed cost of a call on one rank in direction `dir`, ns.
    pub fn call_latency_ns(&self, dir: Direction) -> u64 {
        self.latency_ns[dir.index()]
    }

    /// Fixed cost of a call on `ranks` ranks in direction `dir` (at least one counts), ns.
    pub fn call_fixed_ns(&self, dir: Direction, ranks: u32) -> u64 {
        let d = dir.index();
        self.latency_ns[d] + u64::from(ranks.max(1) - 1) * self.rank_latency_ns[d]
    }

    /// Index of the one-rank figure of a transfer (`rank_gbps`, `shared_ns_per_byte`).
    fn figure(kind: XferKind, dir: Direction) -> usize {
        match (kind, dir) {
            (XferKind::Broadcast, Direction::ToDpu) => 2,
            _ => dir.index(),
        }
    }

    /// Whether a call's host-side bytes fit the host's last-level cache, so that they move at
    /// the cached rate: host -> DPU only (the CPU reads the program's buffer and writes the
    /// DIMMs; a DPU -> host call writes a buffer, no faster from cache), and only when all its
    /// source bytes fit — a call streaming more than the cache from its start finds none of
    /// them there (each byte is evicted before the stream comes back to it, as in a repeated
    /// benchmark), so the knee is a step. `host_bytes`: the bytes the host reads (one buffer
    /// for a broadcast or a serial copy, every DPU's buffer for a parallel push).
    pub fn is_cached(&self, dir: Direction, host_bytes: u64) -> bool {
        dir == Direction::ToDpu && self.cache_bytes > 0 && host_bytes <= self.cache_bytes
    }

    /// The host bytes a call reads for [`BusModel::is_cached`]: one buffer for a broadcast
    /// or a serial copy, all the call's bytes for a parallel push.
    fn host_bytes(kind: XferKind, bytes_per_dpu: u64, call_bytes: u64) -> u64 {
        match kind {
            XferKind::Parallel => call_bytes.max(bytes_per_dpu),
            XferKind::Serial | XferKind::Broadcast => bytes_per_dpu,
        }
    }

    /// The DPUs of a rank that a call's per-DPU fixed cost counts (one for a serial copy).
    fn counted_dpus(kind: XferKind, dpus: u32) -> u64 {
        match kind {
            XferKind::Serial => 1,
            _ => u64::from(dpus),
        }
    }

    /// Fixed cost of one rank's part of a call: the call's ([`BusModel::call_fixed_ns`]) and
    /// the rank's DPUs' share (the SDK prepares and polls each DPU it addresses), ns.
    pub fn rank_fixed_ns(&self, kind: XferKind, dir: Direction, dpus: u32, ranks: u32) -> u64 {
        self.call_fixed_ns(dir, ranks)
            + Self::counted_dpus(kind, dpus) * self.dpu_latency_ns[dir.index()]
    }

    /// Duration of a call on one rank moving `bytes_per_dpu` to/from each of `dpus` DPUs,
    /// fixed cost included, ns. A serial transfer is a one-DPU transfer (`dpus` is taken as 1).
    /// Zero bytes cost nothing.
    pub fn rank_transfer_ns(
        &self,
        kind: XferKind,
        dir: Direction,
        bytes_per_dpu: u64,
        dpus: u32,
    ) -> u64 {
        if bytes_per_dpu == 0 || dpus == 0 {
            return 0;
        }
        let call_bytes = bytes_per_dpu * Self::counted_dpus(kind, dpus);
        let cached = self.is_cached(dir, Self::host_bytes(kind, bytes_per_dpu, call_bytes));
        self.rank_fixed_ns(kind, dir, dpus, 1)
            + self.rank_bytes_ns(kind, dir, bytes_per_dpu, dpus, cached)
    }

    /// The bytes' part of a rank's transfer (no fixed cost), ns.
    fn rank_bytes_ns(
        &self,
        kind: XferKind,
        dir: Direction,
        bytes_per_dpu: u64,
        dpus: u32,
        cached: bool,
    ) -> u64 {
        let extra = match kind {
            XferKind::Serial => 0.0,
            _ => f64::from(dpus.saturating_sub(1)),
        };
        let n = bytes_per_dpu as f64;
        let t = n * self.serial_ns_per_byte[dir.index()]
            + n * extra * self.shared_ns_per_byte[Self::figure(kind, dir)];
        let t = if cached { t / self.cached_speedup } else { t };
        t.ceil() as u64
    }

    /// The most a call on `ranks` ranks can move per ns over all of them (GB/s): the kind's
    /// one-rank figure times `g(ranks) / g(1)`, at most the host's memory channels.
    pub fn host_limit_gbps(&self, kind: XferKind, dir: Direction, ranks: u32) -> f64 {
        let (base, step, max) = self.scaling;
        let g = |r: f64| base + step * r.min(max);
        let r = f64::from(ranks.max(1));
        let scaled = self.rank_gbps[Self::figure(kind, dir)] * g(r) / g(1.0);
        scaled.min(self.channels_gbps)
    }

    /// Host-wide lower bound of a call, ns: its fixed cost ([`BusModel::call_fixed_ns`]),
    /// then all its bytes at [`BusModel::host_limit_gbps`] (faster by the cached speedup
    /// when the call's bytes fit the host's cache). Zero bytes cost nothing.
    pub fn host_bound_ns(&self, kind: XferKind, dir: Direction, call: CallShape) -> u64 {
        self.bound_ns(kind, dir, call, self.is_cached(dir, call.bytes))
    }

    fn bound_ns(&self, kind: XferKind, dir: Direction, call: CallShape, cached: bool) -> u64 {
        if call.bytes == 0 {
            return 0;
        }
        let ranks = call.ranks.max(1);
        let fixed = self.call_fixed_ns(dir, ranks);
        let speedup = if cached { self.cached_speedup } else { 1.0 };
        let rate = self.host_limit_gbps(kind, dir, ranks) * speedup;
        fixed + (call.bytes as f64 / rate).ceil() as u64
    }

    /// Duration of one rank's part of a call, ns: the call's fixed cost (paid before any
    /// rank's bytes move) and the rank's DPUs' share of it, then the rank's own bytes, but at
    /// least the call's host-wide bound ([`BusModel::host_bound_ns`]). Zero bytes cost
    /// nothing.
    pub fn rank_in_call_ns(
        &self,
        kind: XferKind,
        dir: Direction,
        bytes_per_dpu: u64,
        dpus: u32,
        call: CallShape,
    ) -> u64 {
        if bytes_per_dpu == 0 || dpus == 0 {
            return 0;
        }
        let ranks = call.ranks.max(1);
        let cached = self.is_cached(dir, Self::host_bytes(kind, bytes_per_dpu, call.bytes));
        let own = self.rank_fixed_ns(kind, dir, dpus, ranks)
            + self.rank_bytes_ns(kind, dir, bytes_per_dpu, dpus, cached);
        own.max(self.bound_ns(kind, dir, call, cached))
    }

    /// Sustained bandwidth (GB/s) of a large transfer of `bytes_per_dpu` to `dpus` DPUs of
    /// one rank, as a benchmark measures it (bytes moved / time).
    pub fn rank_bandwidth_gbps(
        &self,
        kind: XferKind,
        dir: Direction,
        bytes_per_dpu: u64,
        dpus: u32,
    ) -> f64 {
        let t = self.rank_transfer_ns(kind, dir, bytes_per_dpu, dpus);
        let k = if kind == XferKind::Serial { 1 } else { dpus };
        if t == 0 {
            0.0
        } else {
            (bytes_per_dpu * u64::from(k)) as f64 / t as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The published figures alone: no size-following constants (the hand-computed checks
    /// below are of the published part of the model).
    fn published_spec() -> BusSpec {
        BusSpec {
            cpu_dpu_call_dpu_ns: 0,
            dpu_cpu_call_dpu_ns: 0,
            cpu_dpu_rank_fraction: 1.0,
            dpu_cpu_rank_fraction: 1.0,
            host_cache_bytes: 0,
            cpu_dpu_cached_speedup: 1.0,
            ..BusSpec::upmem_default()
        }
    }

    fn model() -> BusModel {
        BusModel::new(&published_spec(), 64)
    }

    fn default_model() -> BusModel {
        BusModel::new(&BusSpec::upmem_default(), 64)
    }

    #[test]
    fn cached_pushes_are_faster_by_the_speedup_and_the_knee_is_a_step() {
        let m = default_model();
        let p = model();
        let bytes =
            |n: u64| m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, n, 16) - 72_000;
        let published =
            |n: u64| p.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, n, 16) - 72_000;
        // 16 DPUs x 512 KiB = 8 MiB fits the 11 MiB cache: faster than out of the cache by
        // the speedup, against the same form with the rank fraction applied.
        let out = BusModel::new(
            &BusSpec {
                host_cache_bytes: 0,
                ..BusSpec::upmem_default()
            },
            64,
        );
        let out_bytes =
            out.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 512 << 10, 16) - 72_000;
        let ratio = out_bytes as f64 / bytes(512 << 10) as f64;
        assert!((ratio - 1.97).abs() < 0.01, "{ratio}");
        // Just past the cache (16 x 736 KiB = 11.5 MiB): no byte is cached, and per byte a
        // call there is slower than one just inside.
        let inside = bytes(704 << 10) as f64 / f64::from(704 << 10);
        let outside = bytes(736 << 10) as f64 / f64::from(736 << 10);
        assert!(outside > 1.9 * inside, "{inside} {outside}");
        // Out of the cache, a full rank runs at the fraction of the published figure.
        let full = m.rank_bandwidth_gbps(XferKind::Parallel, Direction::ToDpu, 32 << 20, 64);
        assert!((full - 6.68 * 0.437).abs() < 0.01, "{full}");
        // A single DPU's 32 MB (beyond the cache) keeps the published rate.
        let one = m.rank_bandwidth_gbps(XferKind::Serial, Direction::ToDpu, 32 << 20, 1);
        assert!((one - 0.33).abs() < 0.01, "{one}");
        // Reads are never cached, and keep the published figures (the programs' fraction of
        // the rank rate is 1 for reads: fitted, it did not carry over to vPIM's rows).
        let rd = m.rank_bandwidth_gbps(XferKind::Parallel, Direction::FromDpu, 32 << 20, 64);
        assert!((rd - 4.74).abs() < 0.01, "{rd}");
        let rd1 = m.rank_bandwidth_gbps(XferKind::Serial, Direction::FromDpu, 32 << 20, 1);
        assert!((rd1 - 0.12).abs() < 0.001, "{rd1}");
        assert!(!m.is_cached(Direction::FromDpu, 8));
        // The published model is the same form with neutral constants.
        assert!(published(512 << 10) > bytes(512 << 10));
    }

    #[test]
    fn a_read_pays_its_dpus_share_of_the_fixed_cost() {
        let m = default_model();
        // 8 bytes from 1, 16 and 64 DPUs of a rank: 108 us + 1.1 us per DPU (and the bytes).
        let t = |k: u32| {
            m.rank_in_call_ns(
                XferKind::Parallel,
                Direction::FromDpu,
                8,
                k,
                call(1, 8 * u64::from(k)),
            )
        };
        assert!(t(1) >= 109_100 && t(1) < 109_300, "{}", t(1));
        assert!(t(64) - t(16) >= 48 * 1_100, "{} {}", t(16), t(64));
        // A serial copy addresses one DPU whatever the set's size.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Serial, Direction::FromDpu, 8, 64),
            m.rank_transfer_ns(XferKind::Serial, Direction::FromDpu, 8, 1)
        );
        // Writes: no per-DPU cost (the fit gives none).
        assert_eq!(
            m.rank_fixed_ns(XferKind::Parallel, Direction::ToDpu, 64, 1),
            72_000
        );
        assert_eq!(
            m.rank_fixed_ns(XferKind::Parallel, Direction::FromDpu, 64, 1),
            108_000 + 64 * 1_100
        );
    }

    fn call(ranks: u32, bytes: u64) -> CallShape {
        CallShape { ranks, bytes }
    }

    #[test]
    fn serial_one_dpu_hand_computed() {
        let m = model();
        // 32 MiB to one DPU at 0.33 B/ns: 33554432 / 0.33 = 101680097 ns (+72000, the fixed
        // cost of a CPU-DPU call on one rank).
        let n = 32 << 20;
        assert_eq!(
            m.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, n, 1),
            72_000 + 101_680_097
        );
        // A parallel transfer to one DPU is the same.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, n, 1),
            72_000 + 101_680_097
        );
        // DPU-CPU at 0.12 B/ns: 33554432 / 0.12 = 279620266.67 -> 279620267, and its own
        // fixed cost, 108000.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Serial, Direction::FromDpu, n, 1),
            108_000 + 279_620_267
        );
        // Serial ignores the DPU count (one DPU per call).
        assert_eq!(
            m.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, n, 64),
            m.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, n, 1)
        );
        // Nothing to move costs nothing.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 0, 64),
            0
        );
        assert_eq!(m.call_latency_ns(Direction::ToDpu), 72_000);
        assert_eq!(m.call_latency_ns(Direction::FromDpu), 108_000);
    }

    #[test]
    fn small_transfers_cost_their_fixed_cost() {
        let m = model();
        // 64 bytes to each of 64 DPUs of one rank: 72000 + 64/0.33 + 63 * 64 * c, with
        // c = (64/6.68 - 1/0.33) / 63 = 0.10397675 ns/B: 193.94 + 419.23 = 613.17 -> 614.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 64, 64),
            72_000 + 614
        );
        // 128 bytes from each of 64 DPUs: 108000 + 128/0.12 + 63 * 128 * c', with
        // c' = (64/4.74 - 1/0.12) / 63 = 0.08204407 ns/B: 1066.67 + 661.60 = 1728.27 -> 1729.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Parallel, Direction::FromDpu, 128, 64),
            108_000 + 1_729
        );
    }

    #[test]
    fn full_rank_reaches_published_figures() {
        let m = model();
        let n = 32 << 20;
        let bw = |k, d| m.rank_bandwidth_gbps(k, d, n, 64);
        assert!((bw(XferKind::Parallel, Direction::ToDpu) - 6.68).abs() < 0.01);
        assert!((bw(XferKind::Parallel, Direction::FromDpu) - 4.74).abs() < 0.01);
        assert!((bw(XferKind::Broadcast, Direction::ToDpu) - 16.88).abs() < 0.02);
        // One DPU in parallel mode is the serial rate.
        let one = m.rank_bandwidth_gbps(XferKind::Parallel, Direction::ToDpu, n, 1);
        assert!((one - 0.33).abs() < 0.01, "{one}");
    }

    #[test]
    fn rank_bandwidth_grows_and_saturates_with_dpus() {
        let m = model();
        let n = 1 << 20;
        let mut last = 0.0;
        for k in [1, 2, 4, 8, 16, 32, 64] {
            let b = m.rank_bandwidth_gbps(XferKind::Parallel, Direction::ToDpu, n, k);
            assert!(b > last, "{k}: {b} <= {last}");
            last = b;
        }
        // Hand computed: c = (64/6.68 - 1/0.33) / 63 = (9.5808383 - 3.0303030) / 63
        //   = 0.10397675 ns/B; 8 DPUs of 1 MiB: 72000 + 1048576/0.33 + 7*1048576*0.10397675
        //   = 72000 + 3177503.0 + 763192.6 -> 72000 + 3940696 = 4012696 ns.
        let t = m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 1 << 20, 8);
        assert_eq!(t, 4_012_696);
        // Parallel beats serial for many DPUs: 64 serial calls vs one push.
        let serial: u64 = 64 * m.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, 1 << 20, 1);
        let parallel = m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 1 << 20, 64);
        assert!(serial > 15 * parallel, "{serial} vs {parallel}");
    }

    #[test]
    fn fixed_cost_grows_with_the_ranks_of_a_call() {
        let m = model();
        // 8 bytes to each of the 64 DPUs of 32 ranks: 72000 + 31 * 8500 = 335500 ns before
        // the bytes (the published 32-rank intercept is 335 us); the bytes: 8/0.33 + 63*8*c =
        // 24.24 + 52.40 -> 77 on the rank, 16384 B / 16.63 GB/s -> 986 host-wide.
        let c = call(32, 32 * 64 * 8);
        assert_eq!(
            m.rank_in_call_ns(XferKind::Parallel, Direction::ToDpu, 8, 64, c),
            335_500 + 986
        );
        // Reading: 108000 + 31 * 10500 = 433500 (the mean of three 32-rank figures).
        assert!(m.rank_in_call_ns(XferKind::Parallel, Direction::FromDpu, 8, 64, c) >= 433_500);
        assert_eq!(m.call_fixed_ns(Direction::FromDpu, 32), 433_500);
        assert_eq!(m.call_fixed_ns(Direction::FromDpu, 1), 108_000);
        assert_eq!(m.call_fixed_ns(Direction::ToDpu, 0), 72_000);
        // A call on one rank is the rank's own transfer.
        assert_eq!(
            m.rank_in_call_ns(
                XferKind::Parallel,
                Direction::ToDpu,
                64,
                64,
                call(1, 64 * 64)
            ),
            m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 64, 64)
        );
        // Nothing to move costs nothing.
        assert_eq!(
            m.rank_in_call_ns(XferKind::Parallel, Direction::ToDpu, 0, 64, call(4, 0)),
            0
        );
    }

    #[test]
    fn host_saturates_with_ranks() {
        let m = model();
        // g(R) = 5.042768 + 0.258673 * min(R, 31.536102); g(1) = 5.301441.
        // One rank: exactly the rank's own figure.
        let w1 = m.host_limit_gbps(XferKind::Parallel, Direction::ToDpu, 1);
        assert!((w1 - 6.68).abs() < 1e-9, "{w1}");
        // 4 ranks: g(4) = 6.077460, 6.68 * 6.077460 / 5.301441 = 7.6578 GB/s.
        let w4 = m.host_limit_gbps(XferKind::Parallel, Direction::ToDpu, 4);
        assert!((w4 - 7.6578).abs() < 1e-3, "{w4}");
        // Plateau from 31.5 ranks: g = 13.200306, 6.68 * 2.48995 = 16.633 GB/s for writes,
        // 4.74 * 2.48995 = 11.802 GB/s for reads, 16.88 * 2.48995 = 42.03 for broadcast.
        for (kind, dir, want) in [
            (XferKind::Parallel, Direction::ToDpu, 16.633),
            (XferKind::Parallel, Direction::FromDpu, 11.802),
            (XferKind::Broadcast, Direction::ToDpu, 42.030),
        ] {
            let at32 = m.host_limit_gbps(kind, dir, 32);
            let at40 = m.host_limit_gbps(kind, dir, 40);
            assert!((at32 - want).abs() < 1e-3, "{kind:?} {dir:?}: {at32}");
            assert_eq!(at32, at40);
        }
        // 4 full ranks of 1 MiB per DPU: each rank alone takes 72000 + 3 * 8500 + 64 MiB /
        // 6.68 = 97500 + 10046238, but the host moves the 256 MiB at 7.6578 GB/s:
        // 97500 + 268435456 / 7.657811 = 97500 + 35053811 ns.
        let c = call(4, (4 * 64) << 20);
        let t = m.rank_in_call_ns(XferKind::Parallel, Direction::ToDpu, 1 << 20, 64, c);
        assert_eq!(t, 97_500 + 35_053_811);
        assert_eq!(t, m.host_bound_ns(XferKind::Parallel, Direction::ToDpu, c));
        // One full rank is not limited by the host.
        let one = call(1, 64 << 20);
        assert_eq!(
            m.rank_in_call_ns(XferKind::Parallel, Direction::ToDpu, 1 << 20, 64, one),
            72_000 + 10_046_238
        );
    }

    #[test]
    fn host_channels_cap_the_scaling() {
        // A host with a single 10 GB/s channel: below the rank scaling from 2 ranks on
        // (6.68 * g(2)/g(1) = 7.006; at 4 ranks 7.658 -> still below 10; at 16 ranks 11.57
        // -> capped at 10).
        let spec = BusSpec {
            host_channels: 1,
            channel_gbps: 10.0,
            ..published_spec()
        };
        let m = BusModel::new(&spec, 64);
        assert!((m.host_limit_gbps(XferKind::Parallel, Direction::ToDpu, 4) - 7.6578).abs() < 1e-3);
        assert_eq!(
            m.host_limit_gbps(XferKind::Parallel, Direction::ToDpu, 16),
            10.0
        );
    }

    #[test]
    fn validation() {
        let ok = BusSpec::upmem_default();
        assert!(ok.validate(64).is_ok());
        let mut bad = ok.clone();
        bad.cpu_dpu_rank_gbps = 100.0;
        let e = bad.validate(64).unwrap_err();
        assert!(e.contains("cpu_dpu_rank_gbps"), "{e}");
        let mut zero = ok.clone();
        zero.channel_gbps = 0.0;
        assert!(zero.validate(64).unwrap_err().contains("channel_gbps"));
        let mut nochan = ok.clone();
        nochan.host_channels = 0;
        assert!(nochan.validate(64).is_err());
        let mut step = ok.clone();
        step.rank_scaling_step_gbps = -0.1;
        assert!(step
            .validate(64)
            .unwrap_err()
            .contains("rank_scaling_step_gbps"));
        let mut max = ok.clone();
        max.rank_scaling_max_ranks = 0.5;
        assert!(max
            .validate(64)
            .unwrap_err()
            .contains("rank_scaling_max_ranks"));
        let mut old = ok;
        old.call_latency_ns = Some(3000);
        let e = old.validate(64).unwrap_err();
        assert!(e.contains("cpu_dpu_call_ns"), "{e}");
    }
}
