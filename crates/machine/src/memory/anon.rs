//! `memory=anon`: MRAM in anonymous host memory, allocated on first write (the default).
//!
//! Pages cost nothing until written and pages written identically to many DPUs can be
//! shared (deduplication). What it cannot do is hold more than the host has: the kernel
//! would kill the process (the OOM killer) on the write that runs out. So every operation is
//! admitted against the memory the host can give now ([`host_available`]) and refused with
//! an SDK error when it could not fit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::region::MramRegion;
use super::store::{
    Access, Admission, MramStore, Persist, StoreCounters, StoreError, StoreSpec, StoreStats,
};

/// Memory left to the rest of the system when admitting MRAM writes: below this the
/// host is about to swap or kill.
const HOST_RESERVE: u64 = 256 << 20;

/// Environment variable capping the memory MRAM may take (bytes or `4G`), for hosts that
/// do not say (no cgroup limit) and for tests.
pub const HOST_MEMORY_ENV: &str = "OPENPIM_HOST_MEMORY";

/// Anonymous MRAM.
pub struct AnonStore {
    mram_bytes: usize,
    counters: StoreCounters,
    /// The host's available memory, read at most every few milliseconds (reading
    /// /proc/meminfo at every DPU of every operation would cost more than the check saves):
    /// when it was read (`coarse_ms`; 0: never) and what it was.
    cache_at: AtomicU64,
    cache_bytes: AtomicU64,
    /// Address and length of every region handed out, to measure what is resident (the
    /// runtime keeps regions mapped for the process's life; `mincore` on a range that was
    /// unmapped meanwhile just fails and counts nothing).
    handed_out: Mutex<Vec<(usize, usize)>>,
}

impl AnonStore {
    pub fn new(mram_bytes: u64) -> AnonStore {
        AnonStore {
            mram_bytes: mram_bytes as usize,
            counters: StoreCounters::default(),
            cache_at: AtomicU64::new(0),
            cache_bytes: AtomicU64::new(0),
            handed_out: Mutex::new(Vec::new()),
        }
    }

    fn available(&self) -> u64 {
        let now = coarse_ms();
        let at = self.cache_at.load(Ordering::Acquire);
        if at != 0 && now.wrapping_sub(at) < CACHE_MS {
            return self.cache_bytes.load(Ordering::Relaxed);
        }
        // (Two threads may both read it: the later store wins, either is fresh.)
        let v = host_available();
        self.cache_bytes.store(v, Ordering::Relaxed);
        self.cache_at.store(now.max(1), Ordering::Release);
        v
    }
}

/// How long a reading of the host's available memory is used, ms.
const CACHE_MS: u64 = 5;

/// A monotonic clock in milliseconds that costs a few nanoseconds (`CLOCK_MONOTONIC_COARSE`,
/// ticking every few ms): it is asked at every DPU of every MRAM write, where a precise
/// clock's ~25 ns per reading was a tenth of a small transfer's host-side cost.
fn coarse_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Memory the host can give this process now: the smallest of the kernel's `MemAvailable`,
/// the room left under the process's cgroup limit, and `OPENPIM_HOST_MEMORY` minus what the
/// process already holds.
pub fn host_available() -> u64 {
    let mut avail = meminfo_available().unwrap_or(u64::MAX);
    if let Some(room) = cgroup_room() {
        avail = avail.min(room);
    }
    if let Some(cap) = std::env::var(HOST_MEMORY_ENV)
        .ok()
        .and_then(|v| super::store::parse_size(&v))
    {
        // PSS: a deduplicated page counts once, not once per DPU that maps it (as RSS would).
        let used = proportional_bytes().unwrap_or(0);
        avail = avail.min(cap.saturating_sub(used));
    }
    avail
}

/// Proportional set size of this process (`/proc/self/smaps_rollup`).
fn proportional_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = s.lines().find(|l| l.starts_with("Pss:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn meminfo_available() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Room under the cgroup (v2) memory limit of this process, if it has one.
fn cgroup_room() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let max: u64 = std::fs::read_to_string(dir.join("memory.max"))
        .ok()?
        .trim()
        .parse()
        .ok()?; // "max" (no limit) does not parse
    let current: u64 = std::fs::read_to_string(dir.join("memory.current"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(max.saturating_sub(current))
}

impl MramStore for AnonStore {
    fn spec(&self) -> StoreSpec {
        StoreSpec::Anon
    }

    fn map_rank(&self, rank: u32, nr_dpus: u32) -> Result<Vec<MramRegion>, StoreError> {
        let regions = (0..nr_dpus)
            .map(|d| {
                MramRegion::anon(self.mram_bytes, (rank, d)).map_err(|e| StoreError::Io {
                    path: "anonymous memory".into(),
                    what: "cannot reserve address space for MRAM",
                    source: e,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.handed_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(
                regions
                    .iter()
                    .map(|r| (r.as_slice().as_ptr() as usize, r.len())),
            );
        Ok(regions)
    }

    fn keeps_contents(&self) -> bool {
        false
    }

    fn deduplicates(&self) -> bool {
        true
    }

    fn admit(&self, region: &MramRegion, access: Access) -> Result<Admission<'_>, StoreError> {
        if matches!(access, Access::Read { .. }) {
            // Reading untouched anonymous pages maps the shared zero page: no memory.
            return Ok(Admission::free());
        }
        let needed = access.bytes(region.len());
        let available = self.available();
        if available < needed.saturating_add(HOST_RESERVE) {
            return Err(StoreError::HostMemory {
                needed: needed.div_ceil(1 << 20),
                available: available.saturating_sub(HOST_RESERVE) >> 20,
            });
        }
        Ok(Admission::free())
    }

    fn persist(&self, _point: Persist, _regions: &[&MramRegion]) -> Result<(), StoreError> {
        Ok(())
    }

    fn persist_all(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn stats(&self) -> StoreStats {
        use std::sync::atomic::Ordering::Relaxed;
        StoreStats {
            store: "anon".into(),
            resident: self
                .handed_out
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|(p, l)| super::region::resident_in(*p as *mut u8, *l))
                .sum(),
            dedup_bytes: self.counters.dedup_bytes.load(Relaxed),
            ..StoreStats::default()
        }
    }

    fn counters(&self) -> &StoreCounters {
        &self.counters
    }
}
