//! Where the emulated MRAM lives: the [`MramStore`] trait, the profile keys that choose a
//! store (`memory=`, `memoryBudget=`, `persist=`) and what every store counts.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use thiserror::Error;

use super::region::MramRegion;

/// The `memory=` profile key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// Anonymous memory, allocated on first touch (the default).
    Anon,
    /// Sparse per-rank files under a directory, mapped in (App Direct).
    File(PathBuf),
    /// The same files behind a bounded DRAM budget (Memory Mode).
    Cached(PathBuf),
}

impl StoreSpec {
    /// Parses `anon`, `file:DIR` or `cached:DIR`.
    pub fn parse(value: &str) -> Option<StoreSpec> {
        if value == "anon" {
            return Some(StoreSpec::Anon);
        }
        let (kind, dir) = value.split_once(':')?;
        if dir.is_empty() {
            return None;
        }
        match kind {
            "file" => Some(StoreSpec::File(dir.into())),
            "cached" => Some(StoreSpec::Cached(dir.into())),
            _ => None,
        }
    }

    /// The store's directory, if it has one.
    pub fn dir(&self) -> Option<&std::path::Path> {
        match self {
            StoreSpec::Anon => None,
            StoreSpec::File(d) | StoreSpec::Cached(d) => Some(d),
        }
    }
}

impl fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreSpec::Anon => f.write_str("anon"),
            StoreSpec::File(d) => write!(f, "file:{}", d.display()),
            StoreSpec::Cached(d) => write!(f, "cached:{}", d.display()),
        }
    }
}

/// The persistence horizon (`persist=`): when file-backed MRAM is made durable. Ordered:
/// each horizon flushes at its own points and at those of the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Persist {
    /// Never explicitly (the kernel writes back when it likes).
    Never,
    /// At `dpu_free` and at exit (the default of file-backed stores).
    #[default]
    End,
    /// After every launch, and at the end.
    Launch,
    /// After every host transfer to the DPUs, every launch, and at the end.
    Transfer,
}

impl Persist {
    /// Parses `never`, `end`, `launch` or `transfer`.
    pub fn parse(value: &str) -> Option<Persist> {
        Some(match value {
            "never" => Persist::Never,
            "end" => Persist::End,
            "launch" => Persist::Launch,
            "transfer" => Persist::Transfer,
            _ => return None,
        })
    }

    /// The key's value.
    pub fn name(self) -> &'static str {
        match self {
            Persist::Never => "never",
            Persist::End => "end",
            Persist::Launch => "launch",
            Persist::Transfer => "transfer",
        }
    }

    /// True when this horizon flushes at `point`.
    pub fn flushes_at(self, point: Persist) -> bool {
        point != Persist::Never && self >= point
    }
}

/// Parses a size: bytes, or a number with K/M/G/T (binary multiples; `KiB`, `MB`, ... too).
///
/// ```
/// use openpim_machine::parse_size;
/// assert_eq!(parse_size("512M"), Some(512 << 20));
/// assert_eq!(parse_size("4GiB"), Some(4 << 30));
/// assert_eq!(parse_size("100"), Some(100));
/// assert_eq!(parse_size("lots"), None);
/// ```
pub fn parse_size(value: &str) -> Option<u64> {
    let v = value.trim();
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(digits);
    let n: u64 = num.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// Errors of a backing store. Each names the file or directory and says what to do.
#[derive(Debug, Error)]
pub enum StoreError {
    /// The store directory cannot be created or used.
    #[error("MRAM store {path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// Another process holds the store.
    #[error("MRAM store {path} is in use by another process ({holder}); one process at a time may use a store: wait for it to end or choose another directory")]
    Locked { path: PathBuf, holder: String },
    /// The store was made for another machine.
    #[error("MRAM store {path} was created for {recorded}, not for this run's {requested}; use another directory, or the profile it was made with")]
    Geometry {
        path: PathBuf,
        recorded: String,
        requested: String,
    },
    /// A store file is damaged (checksum, size).
    #[error("MRAM store file {path} is damaged: {what}; it cannot be used (restore it from a copy or delete the store directory to start empty)")]
    Corrupt { path: PathBuf, what: String },
    /// The disk has no room for MRAM being written.
    #[error("MRAM store {path}: the disk is full ({needed} more bytes of MRAM could not be given a place on it); free disk space or use another directory")]
    DiskFull { path: PathBuf, needed: u64 },
    /// The host cannot give the memory an operation needs.
    #[error("the host is out of memory for MRAM: this operation needs up to {needed} MiB more, the host can give {available} MiB; use fewer DPUs or less MRAM, or keep MRAM on disk with memory=cached:DIR,memoryBudget=SIZE (docs/memory.md)")]
    HostMemory { needed: u64, available: u64 },
    /// An allocation asked for another store than the one the process uses.
    #[error("this process's MRAM is in memory={current} (fixed by its first allocation); an allocation cannot ask for memory={wanted}: use one store per process")]
    Mixed { current: String, wanted: String },
    /// Writing MRAM back to its file failed.
    #[error("MRAM store {path}: writing MRAM to the disk failed: {source}")]
    Flush {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Counters every store keeps (for the report's host section).
#[derive(Debug, Default)]
pub struct StoreCounters {
    /// Bytes that deduplication did not store (shared pages mapped instead of copied).
    pub dedup_bytes: AtomicU64,
    /// Explicit flushes (regions made durable).
    pub flushes: AtomicU64,
    /// Wall time of those flushes.
    pub flush_ns: AtomicU64,
    /// Regions written back and dropped to keep within the budget.
    pub evictions: AtomicU64,
    /// Wall time of those evictions.
    pub evict_ns: AtomicU64,
}

impl StoreCounters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A snapshot of a store's state, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// The store (`anon`, `file:DIR`, `cached:DIR`).
    pub store: String,
    /// The persistence horizon (file-backed stores).
    pub persist: Option<&'static str>,
    /// The budget of `cached`.
    pub budget: Option<u64>,
    /// MRAM bytes resident in memory now (mapped regions; page cache for files).
    pub resident: u64,
    /// Largest resident figure seen at an admission (cached: the budget check's figure).
    pub peak_resident: u64,
    pub dedup_bytes: u64,
    pub flushes: u64,
    pub flush_ns: u64,
    pub evictions: u64,
    pub evict_ns: u64,
}

/// What an operation is about to do to a region (for the budget and the host-memory check).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The host writes `len` bytes at `offset`.
    Write { offset: usize, len: usize },
    /// The host reads `len` bytes at `offset`.
    Read { offset: usize, len: usize },
    /// A launch: the DPU may touch all of its MRAM.
    Launch,
}

impl Access {
    /// Bytes the access may bring into memory (rounded out to whole pages at both ends).
    pub fn bytes(self, region_len: usize) -> u64 {
        let page = super::region::page_size();
        match self {
            Access::Write { len, .. } | Access::Read { len, .. } => {
                (len + 2 * page).min(region_len) as u64
            }
            Access::Launch => region_len as u64,
        }
    }

    /// The page-aligned byte range `start..end` of the region a host transfer touches;
    /// None for a launch (which may touch all of it).
    pub fn pages(self, region_len: usize) -> Option<(usize, usize)> {
        let page = super::region::page_size();
        match self {
            Access::Write { offset, len } | Access::Read { offset, len } => {
                let start = (offset / page * page).min(region_len);
                let end = offset
                    .saturating_add(len)
                    .div_ceil(page)
                    .saturating_mul(page)
                    .min(region_len);
                Some((start, end))
            }
            Access::Launch => None,
        }
    }
}

/// Permission to touch a region, given by [`MramStore::admit`]; the store settles its
/// accounting when it is dropped.
pub struct Admission<'a> {
    settle: Option<Box<dyn FnOnce() + 'a>>,
}

impl<'a> Admission<'a> {
    /// An admission with nothing to settle.
    pub fn free() -> Admission<'a> {
        Admission { settle: None }
    }

    pub(crate) fn with(settle: impl FnOnce() + 'a) -> Admission<'a> {
        Admission {
            settle: Some(Box::new(settle)),
        }
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.settle.take() {
            f();
        }
    }
}

/// A backing store for the MRAM of the emulated ranks (one per process, chosen by the first
/// allocation's profile).
pub trait MramStore: Send + Sync {
    /// The store's profile value.
    fn spec(&self) -> StoreSpec;

    /// The MRAM regions of `nr_dpus` DPUs of rank slot `rank`, each `mram_bytes` long.
    fn map_rank(&self, rank: u32, nr_dpus: u32) -> Result<Vec<MramRegion>, StoreError>;

    /// True when MRAM contents outlive `dpu_free` (file-backed stores): freeing a rank then
    /// keeps its MRAM instead of clearing it.
    fn keeps_contents(&self) -> bool;

    /// True when broadcasts may map shared pages copy-on-write into regions.
    fn deduplicates(&self) -> bool;

    /// Called before an operation touches a region: checks that the host (or the budget, or
    /// the disk) can take it, making room if the store can. The store's accounting is
    /// settled when the admission is dropped, after the access.
    fn admit(&self, region: &MramRegion, access: Access) -> Result<Admission<'_>, StoreError>;

    /// Makes `regions` durable if the store's horizon says so at `point` (`Transfer` after a
    /// host transfer, `Launch` after a launch, `End` at `dpu_free`/exit).
    fn persist(&self, point: Persist, regions: &[&MramRegion]) -> Result<(), StoreError>;

    /// Makes everything durable that the horizon wants durable at the end (exit).
    fn persist_all(&self) -> Result<(), StoreError>;

    /// The store's counters and current state.
    fn stats(&self) -> StoreStats;

    /// The counters the runtime adds to (deduplicated bytes).
    fn counters(&self) -> &StoreCounters;
}

/// The process's MRAM store, opened by its first allocation, with the `memory=` value that
/// asked for it (before `{pid}` was expanded).
static PROCESS_STORE: std::sync::OnceLock<(StoreSpec, Arc<dyn MramStore>)> =
    std::sync::OnceLock::new();

/// The process's store, if an allocation has opened one.
pub fn process_store() -> Option<Arc<dyn MramStore>> {
    PROCESS_STORE.get().map(|(_, s)| Arc::clone(s))
}

/// The process's store, opened for `machine` on first use (returns it and whether this call
/// opened it). A later allocation without `memory=` uses it; one that asks for another store
/// is refused: the MRAM of the ranks that exist lives in this one.
pub fn open_process_store(
    machine: &crate::MachineConfig,
) -> Result<(Arc<dyn MramStore>, bool), StoreError> {
    let check = |(spec, s): &(StoreSpec, Arc<dyn MramStore>)| match &machine.config.memory {
        Some(wanted) if wanted != spec => Err(StoreError::Mixed {
            current: spec.to_string(),
            wanted: wanted.to_string(),
        }),
        _ => Ok((Arc::clone(s), false)),
    };
    if let Some(s) = PROCESS_STORE.get() {
        return check(s);
    }
    static OPENING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = OPENING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = PROCESS_STORE.get() {
        return check(s);
    }
    let spec = machine.config.memory.clone().unwrap_or(StoreSpec::Anon);
    let opened = open_store(&machine.config, &super::file::Geometry::of(machine))?;
    let (_, s) = PROCESS_STORE.get_or_init(|| (spec, opened));
    Ok((Arc::clone(s), true))
}

/// A store directory with `{pid}` replaced by this process's id: one store per process for
/// programs that start copies of themselves (each needs a store of its own).
pub fn expand_dir(dir: &std::path::Path) -> PathBuf {
    let s = dir.to_string_lossy();
    if s.contains("{pid}") {
        PathBuf::from(s.replace("{pid}", &std::process::id().to_string()))
    } else {
        dir.to_path_buf()
    }
}

/// Opens the store a resolved configuration asks for.
pub fn open_store(
    config: &crate::SystemConfig,
    geometry: &super::file::Geometry,
) -> Result<Arc<dyn MramStore>, StoreError> {
    let persist = config.persist.unwrap_or_default();
    Ok(match config.memory.clone().unwrap_or(StoreSpec::Anon) {
        StoreSpec::Anon => Arc::new(super::anon::AnonStore::new(geometry.mram_bytes)),
        StoreSpec::File(dir) => Arc::new(super::file::FileStore::open(
            &expand_dir(&dir),
            geometry,
            persist,
        )?),
        StoreSpec::Cached(dir) => {
            let file = super::file::FileStore::open(&expand_dir(&dir), geometry, persist)?;
            let budget = config.memory_budget.unwrap_or(u64::MAX);
            Arc::new(super::cached::CachedStore::new(file, budget))
        }
    })
}

/// One line for `openpim info`: where MRAM lives.
pub fn describe_store(config: &crate::SystemConfig) -> String {
    let spec = config.memory.clone().unwrap_or(StoreSpec::Anon);
    match spec {
        StoreSpec::Anon => {
            "MRAM backing: anon (host memory, allocated on first write; see docs/memory.md)".into()
        }
        StoreSpec::File(_) => format!(
            "MRAM backing: {spec} (sparse per-rank files, kept after the run), persist={}",
            config.persist.unwrap_or_default().name()
        ),
        StoreSpec::Cached(_) => format!(
            "MRAM backing: {spec} (per-rank files behind a DRAM budget of {} MiB), persist={}",
            config.memory_budget.unwrap_or(0) >> 20,
            config.persist.unwrap_or_default().name()
        ),
    }
}
