//! Inter-DPU time: exchanges of data between DPUs, which on UPMEM hardware go through the host
//! (read from some DPUs, rearrange or reduce in host memory, write to others) and on a machine
//! with modeled DPU-to-DPU links may use those links.
//!
//! An exchange is a *region* of the timeline opened by [`begin`] and closed by [`end`], always
//! from inside an SDK call (the caller holds a [`super::timeline::SdkCall`], so the program's
//! host code before the region is accounted before it opens). While a region is open:
//!
//! - transfers issued (to and from the DPUs) are inter-DPU time instead of CPU-DPU / DPU-CPU,
//!   on the rank timelines and in the host's waits for them; their bytes are the region's;
//! - the program's host code between SDK calls is inter-DPU time instead of host time;
//! - launches and program loads keep their phases (a DPU kernel is kernel time wherever it
//!   runs; the collectives charge their relocation kernels as they see fit);
//! - a library doing the exchange itself charges its host work ([`host_work`]) and the
//!   modeled links ([`link_ops`]) as inter-DPU time directly.
//!
//! Regions are process-wide (one host program exchanges data for all its threads) and nest:
//! each [`begin`] makes one entry of the report's per-call list, the innermost open one gets
//! the transfer bytes. The phase totals count each nanosecond once whatever the nesting.

use openpim_machine::{Nanos, Phase};

pub use crate::clock::exchanges::{InterDpuCall, InterDpuEntry, InterDpuLog};
use crate::clock::timeline::with_state;

/// Opens an exchange now (call it from inside an SDK call). Returns its index in the log.
pub fn begin(call: InterDpuCall) -> u32 {
    with_state(|s| {
        let id = s.inter_dpu.entries.len();
        s.inter_dpu.entries.push(InterDpuEntry {
            call,
            start_ns: s.clock.now(),
            end_ns: None,
            xfer_bytes: 0,
            link_ns: 0,
        });
        s.inter_dpu.open.push(id);
        id as u32
    })
}

/// Closes the innermost open exchange now; returns it, or `None` when none is open.
pub fn end() -> Option<InterDpuEntry> {
    with_state(|s| {
        let id = s.inter_dpu.open.pop()?;
        let now = s.clock.now();
        let e = &mut s.inter_dpu.entries[id];
        e.end_ns = Some(now);
        Some(e.clone())
    })
}

/// Whether an exchange is open now.
pub fn is_open() -> bool {
    with_state(|s| s.inter_dpu.is_open())
}

/// The host worked `ns` (measured) for an exchange: inter-DPU time on the host timeline.
pub fn host_work(ns: Nanos, name: &'static str) {
    with_state(|s| {
        s.clock.host_work(ns, Phase::InterDpu, name);
    });
}

/// Modeled DPU-to-DPU link activity of a synchronous exchange: `parts` (rank slot, duration)
/// start now on their ranks and the host waits for all of them; inter-DPU time.
pub fn link_ops(parts: &[(u32, Nanos)], name: &'static str) {
    with_state(|s| {
        s.clock.sync_op(parts, Phase::InterDpu, name);
        let total: Nanos = parts.iter().map(|(_, d)| *d).sum();
        if let Some(id) = s.inter_dpu.current() {
            s.inter_dpu.entries[id as usize].link_ns += total;
        }
    });
}

/// A synchronous step of an exchange on several ranks: `parts` (rank slot, duration) start now
/// on their ranks and the host waits for all of them; inter-DPU time (a library's modeled bus
/// work, for instance).
pub fn rank_ops(parts: &[(u32, Nanos)], name: &'static str) {
    with_state(|s| {
        s.clock.sync_op(parts, Phase::InterDpu, name);
    });
}
