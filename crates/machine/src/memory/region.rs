//! Mappings that hold the emulated memories: [`LazyRegion`] (anonymous, lazily backed) and
//! [`MramRegion`] (one DPU's MRAM, in whichever store holds it).
//!
//! The engine reads and writes a DPU's MRAM as one contiguous slice, so every store keeps
//! that slice contiguous and changes what lies *under* it instead: anonymous pages, pages of a
//! rank file mapped shared, or (deduplication) pages of a shared buffer mapped copy-on-write.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096)
}

/// `mmap` with the result checked against MAP_FAILED.
///
/// # Safety
/// With `MAP_FIXED`, `addr..addr+len` must lie in a mapping the caller owns and no live
/// reference may depend on its current contents being kept.
unsafe fn map(
    addr: *mut u8,
    len: usize,
    flags: libc::c_int,
    fd: RawFd,
    offset: u64,
) -> io::Result<NonNull<u8>> {
    let off = libc::off_t::try_from(offset).map_err(|_| io::Error::other("offset too large"))?;
    // SAFETY: forwarded contract of this function.
    let ptr = unsafe {
        libc::mmap(
            addr.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            off,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))
}

/// A run of mapped bytes. Its owner (LazyRegion, MramRegion) keeps the mapping alive for its
/// own life and hands out slices only through `&self` / `&mut self`, which is what makes them
/// sound.
#[derive(Clone, Copy)]
struct Mapped {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapped {
    fn bytes(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live mapping for the owner's life (see the type); the
        // owner's shared borrow excludes writers.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in bytes; the owner's exclusive borrow gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Anonymous memory reserved with `MAP_NORESERVE`: pages cost nothing until touched and read
/// as zero. Freed with `munmap`.
pub struct LazyRegion {
    m: Mapped,
}

// SAFETY: a LazyRegion exclusively owns its mapping (like a Box<[u8]>); shared references
// only give shared slices, mutable access needs &mut.
unsafe impl Send for LazyRegion {}
// SAFETY: see Send; &LazyRegion only allows reads.
unsafe impl Sync for LazyRegion {}

impl LazyRegion {
    /// Reserves `len` (> 0) zeroed bytes.
    pub fn new(len: usize) -> io::Result<LazyRegion> {
        assert!(len > 0, "LazyRegion of zero bytes");
        // SAFETY: a fresh private anonymous mapping at an address the kernel chooses.
        let ptr = unsafe {
            map(
                std::ptr::null_mut(),
                len,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )?
        };
        Ok(LazyRegion {
            m: Mapped { ptr, len },
        })
    }

    /// Size in bytes (never 0).
    pub fn len(&self) -> usize {
        self.m.len
    }

    /// Always false (regions are never empty).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The whole region.
    pub fn as_slice(&self) -> &[u8] {
        self.m.bytes()
    }

    /// The whole region, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.m.bytes_mut()
    }

    /// Zeroes the region and gives its pages back to the system.
    pub fn clear(&mut self) {
        // SAFETY: the range is exactly our private anonymous mapping; MADV_DONTNEED on such a
        // mapping makes later reads return zero. &mut self means no slice into it is alive.
        let rc =
            unsafe { libc::madvise(self.m.ptr.as_ptr().cast(), self.m.len, libc::MADV_DONTNEED) };
        if rc != 0 {
            // Cannot happen for a valid mapping; fall back to writing zeros.
            self.as_mut_slice().fill(0);
        }
    }
}

impl Drop for LazyRegion {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe the mapping created in new(), unmapped exactly once here.
        unsafe {
            libc::munmap(self.m.ptr.as_ptr().cast(), self.m.len);
        }
    }
}

impl std::fmt::Debug for LazyRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyRegion({} bytes)", self.m.len)
    }
}

/// A rank file mapped shared in one piece; DPUs' regions are views into it. Kept mapped for
/// the process's life by its store (views stay valid whatever happens to the rank).
pub(crate) struct FileMapping {
    pub ptr: NonNull<u8>,
    pub len: usize,
    pub file: std::fs::File,
    /// Offset of the mapping in the file.
    pub offset: u64,
}

// SAFETY: the mapping is only reached through MramRegion views, whose access rules are
// those of LazyRegion (shared reads, exclusive writes through &mut).
unsafe impl Send for FileMapping {}
// SAFETY: see Send.
unsafe impl Sync for FileMapping {}

impl FileMapping {
    /// Maps `len` bytes of `file` from `offset`, shared (writes go to the file).
    pub fn new(file: std::fs::File, offset: u64, len: usize) -> io::Result<FileMapping> {
        // SAFETY: a fresh shared mapping of our own file at an address the kernel chooses.
        let ptr = unsafe {
            map(
                std::ptr::null_mut(),
                len,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                offset,
            )?
        };
        // The engine's accesses are scattered over MRAM; read-around would fill the cache
        // with neighbours (other DPUs' pages) that nobody asked for.
        // SAFETY: advice on our own fresh mapping; it does not change contents.
        unsafe { libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_RANDOM) };
        Ok(FileMapping {
            ptr,
            len,
            file,
            offset,
        })
    }
}

impl Drop for FileMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping created in new(), unmapped once; its views are gone by then
        // (their store owns this mapping and outlives them).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// What lies under one DPU's MRAM slice.
enum Backing {
    /// Its own anonymous mapping (unmapped on drop).
    Anon {
        /// Shared (deduplicated) mappings over it, copy-on-write: clearing must replace them,
        /// as `MADV_DONTNEED` would bring back the shared bytes, not zeros.
        shares: usize,
    },
    /// A view of a rank file's mapping (the store keeps the mapping).
    File {
        mapping: Arc<FileMapping>,
        /// Offset of this view inside the mapping.
        at: usize,
    },
}

/// One DPU's MRAM: a contiguous slice over the store's pages.
pub struct MramRegion {
    m: Mapped,
    backing: Backing,
    /// Written since it was last made durable.
    dirty: AtomicBool,
    /// Rank slot and DPU index (what the store knows the region by).
    pub(crate) key: (u32, u32),
}

// SAFETY: as LazyRegion: shared references give shared slices; writes need &mut. Views of a
// file mapping never overlap (one per DPU).
unsafe impl Send for MramRegion {}
// SAFETY: see Send.
unsafe impl Sync for MramRegion {}

impl MramRegion {
    /// A fresh anonymous region of `len` bytes (zero, nothing resident).
    pub fn anon(len: usize, key: (u32, u32)) -> io::Result<MramRegion> {
        let lazy = LazyRegion::new(len)?;
        let ptr = lazy.m.ptr;
        std::mem::forget(lazy); // the region now owns the mapping (unmapped in Drop)
        Ok(MramRegion {
            m: Mapped { ptr, len },
            backing: Backing::Anon { shares: 0 },
            dirty: AtomicBool::new(false),
            key,
        })
    }

    /// A view of `len` bytes at `at` in a rank file's mapping.
    pub(crate) fn file_view(
        mapping: Arc<FileMapping>,
        at: usize,
        len: usize,
        key: (u32, u32),
    ) -> MramRegion {
        assert!(at + len <= mapping.len, "view inside its mapping");
        // SAFETY: in bounds of the mapping (asserted).
        let ptr = unsafe { NonNull::new_unchecked(mapping.ptr.as_ptr().add(at)) };
        MramRegion {
            m: Mapped { ptr, len },
            backing: Backing::File { mapping, at },
            dirty: AtomicBool::new(false),
            key,
        }
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.m.len
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The bytes (the mapping is owned, or kept by the store's FileMapping this holds).
    pub fn as_slice(&self) -> &[u8] {
        self.m.bytes()
    }

    /// The bytes, mutably (marks the region dirty).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.dirty.store(true, Ordering::Relaxed);
        self.m.bytes_mut()
    }

    /// True when backed by a file.
    pub fn is_file(&self) -> bool {
        matches!(self.backing, Backing::File { .. })
    }

    /// Zeroes the region: anonymous pages are dropped (or replaced, where shared pages were
    /// mapped), file pages are punched out of the file (the file stays sparse).
    pub fn clear(&mut self) -> io::Result<()> {
        match &mut self.backing {
            Backing::Anon { shares } => {
                if *shares > 0 {
                    // SAFETY: replaces our own mapping's range; &mut self: no slice alive.
                    unsafe {
                        map(
                            self.m.ptr.as_ptr(),
                            self.m.len,
                            libc::MAP_PRIVATE
                                | libc::MAP_ANONYMOUS
                                | libc::MAP_NORESERVE
                                | libc::MAP_FIXED,
                            -1,
                            0,
                        )?
                    };
                    super::dedup::mappings_cleared(*shares);
                    *shares = 0;
                } else {
                    // SAFETY: our private anonymous mapping; later reads give zeros.
                    let rc = unsafe {
                        libc::madvise(self.m.ptr.as_ptr().cast(), self.m.len, libc::MADV_DONTNEED)
                    };
                    if rc != 0 {
                        self.as_mut_slice().fill(0);
                    }
                }
                Ok(())
            }
            Backing::File { mapping, at } => {
                let off = libc::off_t::try_from(mapping.offset + *at as u64)
                    .map_err(|_| io::Error::other("offset too large"))?;
                let len = libc::off_t::try_from(self.m.len)
                    .map_err(|_| io::Error::other("length too large"))?;
                // SAFETY: fallocate on our own open file; punching a hole zeroes the range in
                // the file and in every mapping of it.
                let rc = unsafe {
                    libc::fallocate(
                        mapping.file.as_raw_fd(),
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        off,
                        len,
                    )
                };
                if rc != 0 {
                    // A file system without holes: write the zeros.
                    self.as_mut_slice().fill(0);
                }
                self.dirty.store(true, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Maps `pages` pages of the shared buffer `fd` (from its byte `fd_offset`) at this
    /// region's byte `offset`, copy-on-write. Anonymous regions only; both offsets
    /// page-aligned. Returns false (nothing changed) for a file-backed region.
    pub fn map_shared(
        &mut self,
        offset: usize,
        fd: RawFd,
        fd_offset: u64,
        bytes: usize,
    ) -> io::Result<bool> {
        let Backing::Anon { shares } = &mut self.backing else {
            return Ok(false);
        };
        let page = page_size();
        assert!(
            offset.is_multiple_of(page)
                && fd_offset.is_multiple_of(page as u64)
                && bytes.is_multiple_of(page),
            "page-aligned shared mapping"
        );
        assert!(
            offset + bytes <= self.m.len,
            "shared mapping inside the region"
        );
        *shares += 1;
        // SAFETY: replaces a page-aligned range of our own anonymous mapping (in bounds,
        // asserted) with a private mapping of the shared buffer; &mut self: no slice alive.
        let mapped = unsafe {
            map(
                self.m.ptr.as_ptr().add(offset),
                bytes,
                libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_NORESERVE,
                fd,
                fd_offset,
            )
        };
        if mapped.is_ok() {
            return Ok(true);
        }
        // A failed MAP_FIXED may have unmapped the range: put fresh anonymous pages back (the
        // caller copies the bytes in), so the slice stays whole. If even that fails, `shares`
        // stays counted, so that clearing the region maps all of it anew.
        // SAFETY: as above, the same range of our own mapping.
        unsafe {
            map(
                self.m.ptr.as_ptr().add(offset),
                bytes,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
                -1,
                0,
            )?
        };
        *shares -= 1;
        Ok(false)
    }

    /// Makes the region durable if it was written since the last time (`msync`). Returns
    /// true when something was flushed.
    pub fn flush(&self) -> io::Result<bool> {
        if !self.is_file() || !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(false);
        }
        // SAFETY: msync on our own live mapping range (page-aligned: views start at
        // multiples of the MRAM size).
        let rc = unsafe { libc::msync(self.m.ptr.as_ptr().cast(), self.m.len, libc::MS_SYNC) };
        if rc != 0 {
            self.dirty.store(true, Ordering::Relaxed);
            return Err(io::Error::last_os_error());
        }
        Ok(true)
    }

    /// Marks the region written (the engine writes through the slice given by
    /// `as_mut_slice`, which already does; this is for writes through raw views).
    pub fn mark_dirty(&self) {
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Bytes of the region resident in memory (page cache for files), by `mincore`.
    pub fn resident(&self) -> u64 {
        resident_in(self.m.ptr.as_ptr(), self.m.len)
    }

    /// Makes sure the file has blocks for `offset..offset+len` of this region, so that a
    /// write through the mapping cannot hit a full disk (which the kernel reports with
    /// SIGBUS, killing the process). No-op for anonymous regions.
    pub(crate) fn allocate(&self, offset: usize, len: usize) -> io::Result<()> {
        let Backing::File { mapping, at } = &self.backing else {
            return Ok(());
        };
        if len == 0 {
            return Ok(());
        }
        let off = (mapping.offset + (*at + offset) as u64) as libc::off_t;
        // SAFETY: fallocate on our own file, inside its size (KEEP_SIZE).
        let rc = unsafe {
            libc::fallocate(
                mapping.file.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                off,
                len as libc::off_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            // File systems without fallocate: nothing to reserve with.
            if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Drop for MramRegion {
    fn drop(&mut self) {
        if let Backing::Anon { .. } = self.backing {
            // SAFETY: the anonymous mapping this region owns, unmapped once.
            unsafe {
                libc::munmap(self.m.ptr.as_ptr().cast(), self.m.len);
            }
        }
    }
}

impl std::fmt::Debug for MramRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_file() { "file" } else { "anon" };
        write!(f, "MramRegion({kind}, {} bytes)", self.m.len)
    }
}

impl FileMapping {
    /// Writes back and drops the resident pages of `ptr..ptr+len` inside this mapping. Safe
    /// while other threads use the range: its contents stay in the file, later accesses fault
    /// them back in.
    pub(crate) fn evict(&self, ptr: *mut u8, len: usize) -> io::Result<()> {
        let at = (ptr as usize)
            .checked_sub(self.ptr.as_ptr() as usize)
            .filter(|at| at + len <= self.len)
            .ok_or_else(|| io::Error::other("range outside the rank's mapping"))?;
        // SAFETY: msync/madvise on a range of our own live shared file mapping (checked to be
        // inside it); MADV_DONTNEED on a shared file mapping only unmaps pages, whose
        // contents stay in the page cache and the file.
        unsafe {
            if libc::msync(ptr.cast(), len, libc::MS_SYNC) != 0 {
                return Err(io::Error::last_os_error());
            }
            libc::madvise(ptr.cast(), len, libc::MADV_DONTNEED);
            libc::posix_fadvise(
                self.file.as_raw_fd(),
                (self.offset + at as u64) as libc::off_t,
                len as libc::off_t,
                libc::POSIX_FADV_DONTNEED,
            );
        }
        Ok(())
    }
}

/// Resident bytes of a mapped range (`mincore`); 0 when the kernel refuses.
pub(crate) fn resident_in(ptr: *mut u8, len: usize) -> u64 {
    let page = page_size();
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: ptr..ptr+len is a live mapping (caller's contract through MramRegion), vec has
    // one byte per page.
    let rc = unsafe { libc::mincore(ptr.cast(), len, vec.as_mut_ptr()) };
    if rc != 0 {
        return 0;
    }
    vec.iter().filter(|b| **b & 1 != 0).count() as u64 * page as u64
}
