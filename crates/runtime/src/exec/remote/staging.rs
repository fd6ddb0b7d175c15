//! The remote path's zero-copy transfers: a shared staging region per rank.
//!
//! Large transfers do not travel in the socket's messages (a copy into the socket and out of
//! it on each side, plus fresh buffers to fault in). The tenant creates a memory file
//! (`memfd`) per rank it holds, sealed against shrinking, maps it, and hands its descriptor
//! to the daemon once with `SCM_RIGHTS`; the daemon maps it too. A write's bytes are copied
//! from the program's buffers into the region once and the daemon's rank reads them in
//! place; a read's bytes are written by the daemon's rank into the region and copied once
//! into the program's buffers. The message only names offsets.
//!
//! The region is a staging area, not a rank's memory: a tenant never maps MRAM, and the
//! daemon checks every offset against the region's size before it touches it. The seals
//! (no shrinking, no growing, no new seals) mean a tenant cannot truncate the file under the
//! daemon's mapping (which would fault the daemon).

use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::error::{Error, Result};

/// Largest staging region (bytes): a transfer bigger than this travels in the messages.
pub const MAX_STAGING: usize = 1 << 30;
/// Smallest region created (bytes); regions grow by doubling.
const MIN_STAGING: usize = 1 << 20;
/// Descriptors a connection may have received and not used yet (more are closed).
const MAX_QUEUED_FDS: usize = 4;

/// A mapped staging region.
pub struct Region {
    fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; the region's users copy through raw pointers
// and order their accesses with the protocol's messages.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Region({} bytes)", self.len)
    }
}

fn os_error(what: &str) -> Error {
    Error::System(format!("{what}: {}", std::io::Error::last_os_error()))
}

/// The size a region must have to hold `bytes`, having `current` bytes now.
pub fn grown_size(current: usize, bytes: usize) -> usize {
    let page = 1 << 16;
    bytes
        .max(current.saturating_mul(2))
        .max(MIN_STAGING)
        .div_ceil(page)
        .saturating_mul(page)
}

impl Region {
    /// A new sealed memory file of `len` bytes, mapped (the tenant's side).
    pub fn create(len: usize) -> Result<Region> {
        let name = c"openpim-staging";
        // SAFETY: a valid C string; the result is checked.
        let raw = unsafe {
            libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        if raw < 0 {
            return Err(os_error("cannot create the daemon's staging memory"));
        }
        // SAFETY: `raw` is a new descriptor this function owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let size = libc::off_t::try_from(len)
            .map_err(|_| Error::System(format!("staging region of {len} bytes is too large")))?;
        // SAFETY: plain calls on an open descriptor; results checked.
        unsafe {
            if libc::ftruncate(fd.as_raw_fd(), size) != 0 {
                return Err(os_error("cannot size the daemon's staging memory"));
            }
            let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
            if libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) != 0 {
                return Err(os_error("cannot seal the daemon's staging memory"));
            }
        }
        Region::map(fd, len)
    }

    /// Maps a region a tenant sent (the daemon's side): it must be a memory file of exactly
    /// `len` bytes that can no longer shrink.
    pub fn accept(fd: OwnedFd, len: usize) -> Result<Region> {
        if len == 0 || len > MAX_STAGING {
            return Err(Error::InvalidDpuSet(format!(
                "a staging region of {len} bytes (at most {MAX_STAGING})"
            )));
        }
        // SAFETY: fstat and fcntl on an open descriptor into a zeroed struct; checked.
        let (st, seals) = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd.as_raw_fd(), &mut st) != 0 {
                return Err(os_error("cannot inspect a staging region"));
            }
            (st, libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS))
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_size as u64 != len as u64 {
            return Err(Error::InvalidDpuSet(format!(
                "the staging region is not a memory file of {len} bytes"
            )));
        }
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(Error::InvalidDpuSet(
                "the staging region is not sealed against shrinking".into(),
            ));
        }
        Region::map(fd, len)
    }

    fn map(fd: OwnedFd, len: usize) -> Result<Region> {
        // SAFETY: a new shared mapping of an open file of `len` bytes; checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(os_error("cannot map a staging region"));
        }
        Ok(Region {
            fd,
            ptr: ptr.cast(),
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Faults the whole mapping in now, writable (`MADV_POPULATE_WRITE`, Linux 5.14; a no-op
    /// before): for a region used from its first byte on every request (the request ring),
    /// whose first touches are the connection's set-up, not one operation's.
    pub fn populate(&self) {
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        // SAFETY: advice on this region's own mapping; it changes no contents.
        unsafe { libc::madvise(self.ptr.cast(), self.len, MADV_POPULATE_WRITE) };
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The address of byte `offset`, when `offset + len` is inside the region.
    pub fn at(&self, offset: u64, len: u64) -> Option<*mut u8> {
        let end = offset.checked_add(len)?;
        // SAFETY: `offset` is inside the mapping (checked above).
        (end <= self.len as u64).then(|| unsafe { self.ptr.add(offset as usize) })
    }

    /// Copies `src` into the region at `offset` (the caller reserved the room).
    pub fn put(&self, offset: usize, src: &[u8]) {
        let dst = self
            .at(offset as u64, src.len() as u64)
            .expect("room reserved");
        // SAFETY: `dst` has `src.len()` bytes inside the mapping; the region is not a Rust
        // object `src` could overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }

    /// Copies `dst.len()` bytes at `offset` out of the region.
    pub fn get(&self, offset: usize, dst: &mut [u8]) {
        let src = self.at(offset as u64, dst.len() as u64).expect("inside");
        // SAFETY: as in `put`.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping this region made; nothing refers to it any more.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Writes `bytes` (one whole frame) on `stream` with descriptor `fd` attached.
pub fn send_with_fd(stream: &UnixStream, bytes: &[u8], fd: RawFd) -> std::io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: a zeroed msghdr pointing at live buffers; the control message is filled in
    // through the CMSG macros inside `control`.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
        libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // The descriptor went with the first bytes; the rest of the frame follows.
    let mut at = sent as usize;
    while at < bytes.len() {
        // SAFETY: the rest of `bytes`, valid for reads; the socket is open.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                bytes[at..].as_ptr().cast(),
                bytes.len() - at,
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
            continue;
        }
        at += n as usize;
    }
    Ok(())
}

/// A socket reader that keeps the descriptors that arrive with the bytes (the daemon's
/// side), in order, at most a few.
pub struct FdReader {
    stream: UnixStream,
    fds: VecDeque<OwnedFd>,
}

impl FdReader {
    pub fn new(stream: UnixStream) -> FdReader {
        FdReader {
            stream,
            fds: VecDeque::new(),
        }
    }

    /// The oldest descriptor received and not taken yet.
    pub fn take_fd(&mut self) -> Option<OwnedFd> {
        self.fds.pop_front()
    }
}

impl Read for FdReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let per = std::mem::size_of::<RawFd>() as u32;
        // SAFETY: pure computation.
        let space = unsafe { libc::CMSG_SPACE(per * MAX_QUEUED_FDS as u32) } as usize;
        let mut control = vec![0u8; space];
        // SAFETY: a zeroed msghdr pointing at live buffers; the control messages the kernel
        // wrote are walked with the CMSG macros inside `control`'s length.
        unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = space as _;
            let n = libc::recvmsg(self.stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<RawFd>();
                    let count =
                        ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / per as usize;
                    for k in 0..count {
                        let fd = OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(k)));
                        // Beyond the few a well-behaved tenant has in flight: closed (drop).
                        if self.fds.len() < MAX_QUEUED_FDS {
                            self.fds.push_back(fd);
                        }
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
            Ok(n as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_and_its_descriptor_cross_a_socket() {
        let (a, b) = UnixStream::pair().unwrap();
        let region = Region::create(1 << 16).unwrap();
        region.put(100, b"hello");
        send_with_fd(&a, b"frame", region.fd()).unwrap();
        let mut r = FdReader::new(b);
        let mut got = [0u8; 5];
        r.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"frame");
        let other = Region::accept(r.take_fd().unwrap(), 1 << 16).unwrap();
        let mut out = [0u8; 5];
        other.get(100, &mut out);
        assert_eq!(&out, b"hello");
        // Outside the region: no address.
        assert!(other.at((1 << 16) - 2, 4).is_none());
        assert!(other.at(u64::MAX, 2).is_none());
    }

    #[test]
    fn unsealed_or_wrong_sized_files_are_refused() {
        let region = Region::create(1 << 16).unwrap();
        // SAFETY: dup of an open descriptor, owned by the new OwnedFd.
        let dup = || unsafe { OwnedFd::from_raw_fd(libc::dup(region.fd())) };
        assert!(Region::accept(dup(), 1 << 17).is_err());
        assert!(Region::accept(dup(), 0).is_err());
        let f = std::fs::File::open("/proc/self/exe").unwrap();
        let len = f.metadata().unwrap().len() as usize;
        assert!(Region::accept(OwnedFd::from(f), len).is_err());
    }
}
