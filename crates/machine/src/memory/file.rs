//! `memory=file:DIR`: each rank's MRAM in a sparse file under DIR, mapped shared into the
//! process (App Direct: the contents survive the process).
//!
//! Layout of DIR:
//! - `store.openpim`: a text header with the machine geometry the store was made for and a
//!   checksum of it; a store opened with another geometry is refused;
//! - `store.lock`: locked (`flock`) by the one process using the store, holding its pid;
//! - `rank-NNNN.mram`: one per rank slot used, `dpus_per_rank x mram_bytes` long, sparse
//!   (pages never written take no disk); DPU `d`'s MRAM at `d x mram_bytes`.
//!
//! Writes go to the page cache through the mapping; the persistence horizon decides when
//! they are made durable (`msync`).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::checksum::crc32;
use super::region::{FileMapping, MramRegion};
use super::store::{
    Access, Admission, MramStore, Persist, StoreCounters, StoreError, StoreSpec, StoreStats,
};

/// What a store is made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub mram_bytes: u64,
    pub dpus_per_rank: u32,
    pub ranks: u32,
    /// The hardware profile's name.
    pub hardware: String,
}

impl Geometry {
    /// The geometry of a resolved machine.
    pub fn of(machine: &crate::MachineConfig) -> Geometry {
        Geometry {
            mram_bytes: u64::from(machine.hardware.memory.mram_bytes),
            dpus_per_rank: machine.dpus_per_rank,
            ranks: machine.nr_ranks,
            hardware: machine.hardware.name.clone(),
        }
    }

    fn describe(&self) -> String {
        format!(
            "ranks of {} DPUs x {} MiB of MRAM",
            self.dpus_per_rank,
            self.mram_bytes >> 20,
        )
    }

    fn to_lines(&self) -> String {
        format!(
            "openpim-mram-store 1\nmram_bytes={}\ndpus_per_rank={}\nranks={}\nhardware={}\n",
            self.mram_bytes, self.dpus_per_rank, self.ranks, self.hardware
        )
    }

    fn from_lines(s: &str) -> Option<Geometry> {
        let mut lines = s.lines();
        if lines.next()? != "openpim-mram-store 1" {
            return None;
        }
        let mut kv = HashMap::new();
        for l in lines {
            let (k, v) = l.split_once('=')?;
            kv.insert(k, v);
        }
        Some(Geometry {
            mram_bytes: kv.get("mram_bytes")?.parse().ok()?,
            dpus_per_rank: kv.get("dpus_per_rank")?.parse().ok()?,
            ranks: kv.get("ranks")?.parse().ok()?,
            hardware: kv.get("hardware")?.to_string(),
        })
    }
}

/// Name of the header file.
pub const HEADER_FILE: &str = "store.openpim";
/// Name of the lock file.
pub const LOCK_FILE: &str = "store.lock";

/// File-backed MRAM.
pub struct FileStore {
    dir: PathBuf,
    geometry: Geometry,
    persist: Persist,
    /// Held (locked) for the store's life.
    _lock: File,
    ranks: Mutex<HashMap<u32, Arc<FileMapping>>>,
    pub(crate) counters: StoreCounters,
}

fn io_err<'a>(
    path: &'a Path,
    what: &'static str,
) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

impl FileStore {
    /// Opens (creating if needed) the store in `dir` for `geometry`, locking it.
    pub fn open(
        dir: &Path,
        geometry: &Geometry,
        persist: Persist,
    ) -> Result<FileStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir, "cannot create the directory"))?;
        let lock_path = dir.join(LOCK_FILE);
        let mut lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io_err(&lock_path, "cannot open the lock file"))?;
        // SAFETY: flock on a file we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut holder = String::new();
            let _ = lock.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => "a process".to_string(),
                pid => format!("pid {pid}"),
            };
            return Err(StoreError::Locked {
                path: dir.to_path_buf(),
                holder,
            });
        }
        lock.set_len(0)
            .and_then(|_| write!(lock, "{}", std::process::id()))
            .map_err(io_err(&lock_path, "cannot write the lock file"))?;

        let header = dir.join(HEADER_FILE);
        match std::fs::read_to_string(&header) {
            Ok(text) => {
                let (body, sum) =
                    text.rsplit_once("checksum=")
                        .ok_or_else(|| StoreError::Corrupt {
                            path: header.clone(),
                            what: "no checksum line".into(),
                        })?;
                let want = format!("{:08x}", crc32(body.as_bytes()));
                if sum.trim() != want {
                    return Err(StoreError::Corrupt {
                        path: header.clone(),
                        what: format!(
                            "checksum {} does not match its contents ({want})",
                            sum.trim()
                        ),
                    });
                }
                let recorded = Geometry::from_lines(body).ok_or_else(|| StoreError::Corrupt {
                    path: header.clone(),
                    what: "unreadable header".into(),
                })?;
                // The shape of the stored data: MRAM per DPU and DPUs per rank. (How many
                // ranks a run uses is not: rank files are made as they are first used.)
                if recorded.mram_bytes != geometry.mram_bytes
                    || recorded.dpus_per_rank != geometry.dpus_per_rank
                {
                    return Err(StoreError::Geometry {
                        path: dir.to_path_buf(),
                        recorded: recorded.describe(),
                        requested: geometry.describe(),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let body = geometry.to_lines();
                let text = format!("{body}checksum={:08x}\n", crc32(body.as_bytes()));
                write_durably(&header, text.as_bytes())
                    .map_err(io_err(&header, "cannot write the store header"))?;
            }
            Err(e) => return Err(io_err(&header, "cannot read the store header")(e)),
        }
        Ok(FileStore {
            dir: dir.to_path_buf(),
            geometry: geometry.clone(),
            persist,
            _lock: lock,
            ranks: Mutex::new(HashMap::new()),
            counters: StoreCounters::default(),
        })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The persistence horizon.
    pub fn horizon(&self) -> Persist {
        self.persist
    }

    /// Path of a rank's file.
    pub fn rank_path(&self, rank: u32) -> PathBuf {
        self.dir.join(format!("rank-{rank:04}.mram"))
    }

    fn rank_mapping(&self, rank: u32) -> Result<Arc<FileMapping>, StoreError> {
        let mut ranks = self.ranks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = ranks.get(&rank) {
            return Ok(Arc::clone(m));
        }
        let path = self.rank_path(rank);
        let len = self.geometry.mram_bytes * u64::from(self.geometry.dpus_per_rank);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_err(&path, "cannot open the rank file"))?;
        let size = file
            .metadata()
            .map_err(io_err(&path, "cannot read the rank file's size"))?
            .len();
        if size == 0 {
            file.set_len(len)
                .map_err(io_err(&path, "cannot size the rank file"))?;
        } else if size != len {
            return Err(StoreError::Corrupt {
                path,
                what: format!("it holds {size} bytes, a rank of this store holds {len} (truncated or from another store)"),
            });
        }
        let mapping = Arc::new(
            FileMapping::new(file, 0, len as usize)
                .map_err(io_err(&path, "cannot map the rank file"))?,
        );
        ranks.insert(rank, Arc::clone(&mapping));
        Ok(mapping)
    }

    /// Writes back and drops the resident pages of `ptr..ptr+len` of rank `rank`'s file.
    pub(crate) fn evict(&self, rank: u32, ptr: *mut u8, len: usize) -> std::io::Result<()> {
        let mapping = self
            .ranks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&rank)
            .cloned()
            .ok_or_else(|| std::io::Error::other("rank not mapped"))?;
        mapping.evict(ptr, len)
    }

    /// Makes the given regions durable, counting the flushes.
    pub(crate) fn flush(&self, regions: &[&MramRegion]) -> Result<(), StoreError> {
        let start = Instant::now();
        let mut n = 0;
        for r in regions {
            match r.flush() {
                Ok(true) => n += 1,
                Ok(false) => {}
                Err(source) => {
                    return Err(StoreError::Flush {
                        path: self.rank_path(r.key.0),
                        source,
                    })
                }
            }
        }
        if n > 0 {
            StoreCounters::add(&self.counters.flushes, n);
            StoreCounters::add(&self.counters.flush_ns, start.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    /// Checks that a host write can be given disk blocks (so the write cannot fault).
    pub(crate) fn reserve_disk(
        &self,
        region: &MramRegion,
        access: Access,
    ) -> Result<(), StoreError> {
        let full = |needed: u64| StoreError::DiskFull {
            path: self.dir.clone(),
            needed,
        };
        match access {
            Access::Write { offset, len } => region.allocate(offset, len).map_err(|e| {
                if e.raw_os_error() == Some(libc::ENOSPC) {
                    full(len as u64)
                } else {
                    StoreError::Io {
                        path: self.rank_path(region.key.0),
                        what: "cannot allocate disk blocks for MRAM",
                        source: e,
                    }
                }
            }),
            Access::Launch => {
                // A launch may write anywhere in MRAM: the disk must have room for it.
                let room = disk_room(&self.dir).unwrap_or(u64::MAX);
                if room < region.len() as u64 {
                    return Err(full(region.len() as u64));
                }
                Ok(())
            }
            Access::Read { .. } => Ok(()),
        }
    }

    pub(crate) fn stats_base(&self, store: String) -> StoreStats {
        let c = &self.counters;
        StoreStats {
            store,
            persist: Some(self.persist.name()),
            resident: self.resident(),
            dedup_bytes: c.dedup_bytes.load(Ordering::Relaxed),
            flushes: c.flushes.load(Ordering::Relaxed),
            flush_ns: c.flush_ns.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            evict_ns: c.evict_ns.load(Ordering::Relaxed),
            ..StoreStats::default()
        }
    }

    /// Bytes of the store's files in the page cache.
    fn resident(&self) -> u64 {
        let ranks = self.ranks.lock().unwrap_or_else(|e| e.into_inner());
        ranks
            .values()
            .map(|m| super::region::resident_in(m.ptr.as_ptr(), m.len))
            .sum()
    }
}

/// Free bytes on the file system of `dir`.
fn disk_room(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct; c is a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

/// Writes a small file durably: a temporary file, fsync, rename.
pub(crate) fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

impl MramStore for FileStore {
    fn spec(&self) -> StoreSpec {
        StoreSpec::File(self.dir.clone())
    }

    fn map_rank(&self, rank: u32, nr_dpus: u32) -> Result<Vec<MramRegion>, StoreError> {
        let mapping = self.rank_mapping(rank)?;
        let len = self.geometry.mram_bytes as usize;
        Ok((0..nr_dpus)
            .map(|d| MramRegion::file_view(Arc::clone(&mapping), d as usize * len, len, (rank, d)))
            .collect())
    }

    fn keeps_contents(&self) -> bool {
        true
    }

    fn deduplicates(&self) -> bool {
        false
    }

    fn admit(&self, region: &MramRegion, access: Access) -> Result<Admission<'_>, StoreError> {
        self.reserve_disk(region, access)?;
        Ok(Admission::free())
    }

    fn persist(&self, point: Persist, regions: &[&MramRegion]) -> Result<(), StoreError> {
        if self.persist.flushes_at(point) {
            self.flush(regions)?;
        }
        Ok(())
    }

    fn persist_all(&self) -> Result<(), StoreError> {
        if !self.persist.flushes_at(Persist::End) {
            return Ok(());
        }
        let ranks: Vec<(u32, Arc<FileMapping>)> = self
            .ranks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (*k, Arc::clone(v)))
            .collect();
        let start = Instant::now();
        for (rank, m) in &ranks {
            m.file.sync_data().map_err(|source| StoreError::Flush {
                path: self.rank_path(*rank),
                source,
            })?;
        }
        if !ranks.is_empty() {
            StoreCounters::add(&self.counters.flushes, ranks.len() as u64);
            StoreCounters::add(&self.counters.flush_ns, start.elapsed().as_nanos() as u64);
        }
        Ok(())
    }

    fn stats(&self) -> StoreStats {
        self.stats_base(self.spec().to_string())
    }

    fn counters(&self) -> &StoreCounters {
        &self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(dpus: u32) -> Geometry {
        Geometry {
            mram_bytes: 1 << 20,
            dpus_per_rank: dpus,
            ranks: 2,
            hardware: "test".into(),
        }
    }

    #[test]
    fn contents_survive_reopen_and_other_geometry_and_second_user_are_refused() {
        let dir = std::env::temp_dir().join(format!("openpim-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let s = FileStore::open(&dir, &geometry(4), Persist::Launch).unwrap();
            let second = FileStore::open(&dir, &geometry(4), Persist::Launch);
            assert!(matches!(second, Err(StoreError::Locked { .. })));
            let mut r = s.map_rank(1, 4).unwrap();
            r[2].as_mut_slice()[4096..4100].copy_from_slice(&[1, 2, 3, 4]);
            s.persist(Persist::Transfer, &[&r[2]]).unwrap(); // not at this horizon
            assert_eq!(s.stats().flushes, 0);
            s.persist(Persist::Launch, &[&r[2], &r[1]]).unwrap(); // only r[2] is dirty
            assert_eq!(s.stats().flushes, 1);
        }
        let other = FileStore::open(&dir, &geometry(8), Persist::End);
        assert!(
            matches!(other, Err(StoreError::Geometry { .. })),
            "{:?}",
            other.err()
        );
        let s = FileStore::open(&dir, &geometry(4), Persist::End).unwrap();
        let r = s.map_rank(1, 4).unwrap();
        assert_eq!(&r[2].as_slice()[4096..4100], &[1, 2, 3, 4]);
        assert!(r[1].as_slice().iter().all(|b| *b == 0));
        let meta = std::fs::metadata(s.rank_path(1)).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert!(meta.blocks() * 512 < 1 << 20, "the rank file is sparse");
        drop(r);
        drop(s);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
