//! The host <-> PIM bus model: how long a transfer between host memory and the DPUs' memories
//! takes on the emulated server.
//!
//! The real system moves data with the host CPU: it writes (or reads) the PIM DIMMs over the
//! DDR4 bus, each 64-bit bus word spread byte-wise over the 8 chips of a rank. The model is
//! parametric, its parameters published figures (the `[bus]` section of the hardware profile):
//!
//! - one SDK call costs a fixed `call_latency`;
//! - on one rank, a transfer of `n` bytes to (or from) each of `k` DPUs takes
//!   `latency + n / b1 + n·(k−1)·c`: one DPU alone streams at the published single-DPU rate
//!   `b1`, and each further DPU of the rank adds a shared cost `c` per byte, such that a full
//!   rank of `D` DPUs reaches the published full-rank bandwidth `B`:
//!   `c = (D/B − 1/b1) / (D − 1)`. The rank bandwidth `k·n / t` grows with `k` and saturates
//!   towards `1/c`;
//! - broadcast (one buffer to every DPU) has its own full-rank figure;
//! - ranks transfer in parallel; all ranks of one call together are limited by the host's
//!   memory channels (`host_channels × channel_gbps`).
//!
//! Bandwidths are in GB/s = 10^9 bytes per second = bytes per nanosecond.
//!
//! ```
//! use openpim_machine::{BusModel, BusSpec, Direction, XferKind};
//! let bus = BusModel::new(&BusSpec::upmem_default(), 64);
//! // 1 MB to one DPU: 3 us + 1e6 B / 0.33 B/ns
//! let t = bus.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, 1_000_000, 1);
//! assert_eq!(t, 3_000 + 3_030_304);
//! ```

use serde::Deserialize;

/// The `[bus]` section of a hardware profile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusSpec {
    /// Fixed cost of one transfer call, nanoseconds.
    pub call_latency_ns: u64,
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
    /// Memory channels of the host that carry PIM DIMMs.
    pub host_channels: u32,
    /// Peak bandwidth of one memory channel, GB/s.
    pub channel_gbps: f64,
}

impl BusSpec {
    /// The figures of the built-in `upmem-v1a` profile (used when a profile file has no
    /// `[bus]` section).
    pub fn upmem_default() -> BusSpec {
        BusSpec {
            call_latency_ns: 3000,
            cpu_dpu_serial_gbps: 0.33,
            dpu_cpu_serial_gbps: 0.12,
            cpu_dpu_rank_gbps: 6.68,
            dpu_cpu_rank_gbps: 4.74,
            broadcast_rank_gbps: 16.88,
            host_channels: 10,
            channel_gbps: 19.2,
        }
    }

    /// Checks that the numbers make a model: positive bandwidths, and full-rank figures no
    /// larger than `dpus_per_rank` single-DPU streams (the shared cost cannot be negative).
    pub fn validate(&self, dpus_per_rank: u32) -> Result<(), String> {
        let positive = [
            ("bus.cpu_dpu_serial_gbps", self.cpu_dpu_serial_gbps),
            ("bus.dpu_cpu_serial_gbps", self.dpu_cpu_serial_gbps),
            ("bus.cpu_dpu_rank_gbps", self.cpu_dpu_rank_gbps),
            ("bus.dpu_cpu_rank_gbps", self.dpu_cpu_rank_gbps),
            ("bus.broadcast_rank_gbps", self.broadcast_rank_gbps),
            ("bus.channel_gbps", self.channel_gbps),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} = {v}: bandwidths must be positive (GB/s)"));
            }
        }
        if self.host_channels == 0 {
            return Err("bus.host_channels must be > 0".into());
        }
        let d = f64::from(dpus_per_rank);
        let pairs = [
            (
                "bus.cpu_dpu_rank_gbps",
                self.cpu_dpu_rank_gbps,
                "bus.cpu_dpu_serial_gbps",
                self.cpu_dpu_serial_gbps,
            ),
            (
                "bus.dpu_cpu_rank_gbps",
                self.dpu_cpu_rank_gbps,
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

/// The bus model of one hardware profile, in nanoseconds and bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct BusModel {
    latency_ns: u64,
    /// ns per byte of one DPU's stream: [to DPU, from DPU].
    serial_ns_per_byte: [f64; 2],
    /// Shared per-byte cost of a rank: [to DPU, from DPU, broadcast].
    shared_ns_per_byte: [f64; 3],
    /// ns per byte of the whole host (all channels).
    host_ns_per_byte: f64,
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
        BusModel {
            latency_ns: spec.call_latency_ns,
            serial_ns_per_byte: [
                1.0 / spec.cpu_dpu_serial_gbps,
                1.0 / spec.dpu_cpu_serial_gbps,
            ],
            shared_ns_per_byte: [
                shared(spec.cpu_dpu_rank_gbps, spec.cpu_dpu_serial_gbps),
                shared(spec.dpu_cpu_rank_gbps, spec.dpu_cpu_serial_gbps),
                shared(spec.broadcast_rank_gbps, spec.cpu_dpu_serial_gbps),
            ],
            host_ns_per_byte: 1.0 / (f64::from(spec.host_channels) * spec.channel_gbps),
        }
    }

    /// Fixed cost of one call, ns.
    pub fn call_latency_ns(&self) -> u64 {
        self.latency_ns
    }

    /// Duration on one rank of a transfer of `bytes_per_dpu` to/from each of `dpus` DPUs, ns.
    /// A serial transfer is a one-DPU transfer (`dpus` is taken as 1). Zero bytes cost nothing.
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
        let extra = match kind {
            XferKind::Serial => 0.0,
            _ => f64::from(dpus - 1),
        };
        let d = match dir {
            Direction::ToDpu => 0,
            Direction::FromDpu => 1,
        };
        let shared = match (kind, dir) {
            (XferKind::Broadcast, Direction::ToDpu) => self.shared_ns_per_byte[2],
            _ => self.shared_ns_per_byte[d],
        };
        let n = bytes_per_dpu as f64;
        let t = n * self.serial_ns_per_byte[d] + n * extra * shared;
        self.latency_ns + t.ceil() as u64
    }

    /// Duration of one call whose ranks transfer in parallel: the slowest rank, but at least
    /// the host's channels' time for all the bytes (`rank_ns`: each rank's own duration;
    /// `total_bytes`: bytes over all ranks).
    pub fn call_ns(&self, rank_ns: &[u64], total_bytes: u64) -> u64 {
        let slowest = rank_ns.iter().copied().max().unwrap_or(0);
        if total_bytes == 0 {
            return slowest;
        }
        let host = self.latency_ns + (total_bytes as f64 * self.host_ns_per_byte).ceil() as u64;
        slowest.max(host)
    }

    /// Host-wide lower bound of a call moving `total_bytes`, ns (latency included).
    pub fn host_bound_ns(&self, total_bytes: u64) -> u64 {
        if total_bytes == 0 {
            return 0;
        }
        self.latency_ns + (total_bytes as f64 * self.host_ns_per_byte).ceil() as u64
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

    fn model() -> BusModel {
        BusModel::new(&BusSpec::upmem_default(), 64)
    }

    #[test]
    fn serial_one_dpu_hand_computed() {
        let m = model();
        // 32 MiB to one DPU at 0.33 B/ns: 33554432 / 0.33 = 101680097 ns (+3000).
        let n = 32 << 20;
        assert_eq!(
            m.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, n, 1),
            3000 + 101_680_097
        );
        // A parallel transfer to one DPU is the same.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, n, 1),
            3000 + 101_680_097
        );
        // DPU-CPU at 0.12 B/ns: 33554432 / 0.12 = 279620266.67 -> 279620267.
        assert_eq!(
            m.rank_transfer_ns(XferKind::Serial, Direction::FromDpu, n, 1),
            3000 + 279_620_267
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
        //   = 0.10397675 ns/B; 8 DPUs of 1 MiB: 3000 + 1048576/0.33 + 7*1048576*0.10397675
        //   = 3000 + 3177503.0 + 763192.6 = 3943695.6 -> 3943696 ns.
        let t = m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 1 << 20, 8);
        assert_eq!(t, 3_943_696);
        // Parallel beats serial for many DPUs: 64 serial calls vs one push.
        let serial: u64 = 64 * m.rank_transfer_ns(XferKind::Serial, Direction::ToDpu, 1 << 20, 1);
        let parallel = m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, 1 << 20, 64);
        assert!(serial > 15 * parallel, "{serial} vs {parallel}");
    }

    #[test]
    fn host_channels_cap_many_ranks() {
        let m = model();
        // 40 ranks x 64 DPUs x 1 MiB in parallel: each rank alone 6.68 GB/s, 267 GB/s in
        // total, but the host's 10 x 19.2 = 192 GB/s bound the call.
        let n = 1u64 << 20;
        let per_rank = m.rank_transfer_ns(XferKind::Parallel, Direction::ToDpu, n, 64);
        let ranks = vec![per_rank; 40];
        let total = 40 * 64 * n;
        let t = m.call_ns(&ranks, total);
        assert_eq!(t, 3000 + (total as f64 / 192.0).ceil() as u64);
        assert!(t > per_rank);
        // Two ranks are not limited by the host.
        assert_eq!(m.call_ns(&ranks[..2], 2 * 64 * n), per_rank);
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
        let mut nochan = ok;
        nochan.host_channels = 0;
        assert!(nochan.validate(64).is_err());
    }
}
