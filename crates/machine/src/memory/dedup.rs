//! Deduplication: bytes written identically to many DPUs (a broadcast, the MRAM segments of
//! a program loaded on a set) are stored once, in a memory file (`memfd`), and mapped
//! copy-on-write at each DPU's MRAM offset. The engine still sees one contiguous slice per
//! DPU; the kernel copies a page the first time a DPU (or the host) writes it, so the DPUs
//! stay independent. Only whole pages are shared; the partial pages at both ends are copied.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use super::region::{page_size, MramRegion};

/// Shared mappings alive at most. Each splits its DPU's mapping (up to 2 more kernel mappings);
/// the kernel allows 65,530 per process by default (`vm.max_map_count`), and the rest of the
/// process needs some: beyond this, broadcasts are copied.
const MAX_SHARED_MAPPINGS: usize = 16_384;

/// Shared mappings made and not yet cleared away.
static SHARED_MAPPINGS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Called when a region with `n` shared mappings is cleared.
pub(crate) fn mappings_cleared(n: usize) {
    use std::sync::atomic::Ordering::Relaxed;
    let _ = SHARED_MAPPINGS.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(n)));
}

/// Writes of at least this many bytes are worth sharing (smaller ones are copied: a mapping
/// per DPU costs more than the copy).
pub const DEDUP_MIN_BYTES: usize = 64 << 10;

/// One buffer's bytes in a memory file, laid out so that byte `lead` of the file is the
/// buffer's first byte (`lead` = the MRAM offset within its page).
pub struct SharedBuffer {
    fd: OwnedFd,
    lead: usize,
    /// The bytes as they were stored (for matching a later write of the same buffer).
    copy_of: (usize, usize),
    /// The memory file mapped read-only, to compare a later write's bytes with.
    view: *const u8,
    view_len: usize,
}

// SAFETY: the view is a read-only mapping owned by this value (unmapped in Drop).
unsafe impl Send for SharedBuffer {}
// SAFETY: see Send.
unsafe impl Sync for SharedBuffer {}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new(), unmapped once.
        unsafe {
            libc::munmap(self.view as *mut libc::c_void, self.view_len);
        }
    }
}

impl SharedBuffer {
    /// Stores `src` in a new memory file, starting at byte `lead` (< page size).
    pub fn new(src: &[u8], lead: usize) -> io::Result<SharedBuffer> {
        let name = c"openpim-dedup";
        // SAFETY: memfd_create with a valid C string; the result is checked.
        let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let total = (lead + src.len()).next_multiple_of(page_size());
        // SAFETY: plain syscalls on our own descriptor with a valid buffer.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), total as libc::off_t) != 0 {
                return Err(io::Error::last_os_error());
            }
            let mut done = 0usize;
            while done < src.len() {
                let n = libc::pwrite(
                    fd.as_raw_fd(),
                    src[done..].as_ptr().cast(),
                    src.len() - done,
                    (lead + done) as libc::off_t,
                );
                if n <= 0 {
                    return Err(io::Error::last_os_error());
                }
                done += n as usize;
            }
        }
        // SAFETY: a fresh read-only shared mapping of our memory file; checked below.
        let view = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if view == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedBuffer {
            fd,
            lead,
            copy_of: (src.as_ptr() as usize, src.len()),
            view: view.cast(),
            view_len: total,
        })
    }

    /// True when this buffer holds exactly `src` at `lead` (same host buffer, same bytes).
    fn holds(&self, src: &[u8], lead: usize) -> bool {
        self.lead == lead && self.copy_of == (src.as_ptr() as usize, src.len()) && {
            // SAFETY: lead + len <= view_len by construction (same len as stored).
            let stored = unsafe { std::slice::from_raw_parts(self.view.add(lead), src.len()) };
            stored == src
        }
    }
}

/// The last buffer shared: a broadcast to many ranks is one write per rank, all of the same
/// host buffer; they share one memory file.
static LAST: Mutex<Option<Arc<SharedBuffer>>> = Mutex::new(None);

/// The shared copy of `src` for writes at MRAM offsets `lead` bytes into a page.
pub fn shared_buffer(src: &[u8], lead: usize) -> io::Result<Arc<SharedBuffer>> {
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = last.as_ref().filter(|b| b.holds(src, lead)) {
        return Ok(Arc::clone(b));
    }
    let b = Arc::new(SharedBuffer::new(src, lead)?);
    *last = Some(Arc::clone(&b));
    Ok(b)
}

/// Writes `src` at byte `offset` of `region`, mapping the whole pages from `shared` (made by
/// [`shared_buffer`] for this `src` and `offset % page`) and copying the partial ones.
/// Returns the bytes mapped rather than copied (0 when the region cannot share: then
/// everything was copied).
pub fn write_shared(
    region: &mut MramRegion,
    offset: usize,
    src: &[u8],
    shared: &SharedBuffer,
) -> io::Result<u64> {
    let page = page_size();
    assert_eq!(offset % page, shared.lead, "buffer made for this offset");
    let end = offset + src.len();
    assert!(end <= region.len(), "write inside the region");
    let first = offset.next_multiple_of(page);
    let last = end / page * page;
    if last <= first {
        region.as_mut_slice()[offset..end].copy_from_slice(src);
        return Ok(0);
    }
    let base = offset - shared.lead; // region offset of the memory file's byte 0
    use std::sync::atomic::Ordering::Relaxed;
    if SHARED_MAPPINGS.fetch_add(1, Relaxed) >= MAX_SHARED_MAPPINGS {
        SHARED_MAPPINGS.fetch_sub(1, Relaxed);
        region.as_mut_slice()[offset..end].copy_from_slice(src);
        return Ok(0);
    }
    let mapped = region.map_shared(
        first,
        shared.fd.as_raw_fd(),
        (first - base) as u64,
        last - first,
    );
    match mapped {
        Ok(true) => {
            let mem = region.as_mut_slice();
            mem[offset..first].copy_from_slice(&src[..first - offset]);
            mem[last..end].copy_from_slice(&src[last - offset..]);
            Ok((last - first) as u64)
        }
        // Not shareable here (file-backed) or the kernel refused another mapping (too many
        // mappings; fresh pages were put back): copy, which is always correct.
        Ok(false) => {
            SHARED_MAPPINGS.fetch_sub(1, Relaxed);
            region.as_mut_slice()[offset..end].copy_from_slice(src);
            Ok(0)
        }
        // The region still counts this mapping (it is cleared whole later).
        Err(e) => Err(e),
    }
}
