//! Who is at the other end of a UNIX socket: both sides of the remote path ask (the daemon to
//! identify a tenant and reach its process, the tenant to let the daemon read its buffers in
//! place); and writing to it without SIGPIPE.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// A socket's sending side: `send` with `MSG_NOSIGNAL`, so that a peer gone away (the daemon,
/// the MPI gateway) is an error for the call, not a SIGPIPE that kills the program (a library
/// in a C program cannot rely on the signal being ignored).
pub(crate) struct SocketWriter(pub(crate) UnixStream);

impl Write for SocketWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // SAFETY: `buf` is valid for reads of its length; the socket is open.
        let n = unsafe {
            libc::send(
                self.0.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(n as usize)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A `SOL_SOCKET` option of socket `fd` whose value is a `T`, or `None` when the call fails.
fn option<T: Copy>(fd: RawFd, name: libc::c_int, empty: T) -> Option<T> {
    let mut value = empty;
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` and `len` are valid for writes of the sizes given; the caller's fd is open.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            name,
            (&mut value as *mut T).cast(),
            &mut len,
        )
    };
    (r == 0 && len as usize == std::mem::size_of::<T>()).then_some(value)
}

/// The peer's `(uid, pid)` from `SO_PEERCRED`, or `None` when the call fails (the pid is 0
/// when the peer is in a pid namespace the caller cannot see).
pub fn credentials(fd: RawFd) -> Option<(u32, u32)> {
    let empty = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    option(fd, libc::SO_PEERCRED, empty).map(|c| (c.uid, c.pid as u32))
}

/// A pidfd of the process that connected (`SO_PEERPIDFD`, Linux 6.5), or `None` where the
/// kernel has no such option.
pub fn pidfd(fd: RawFd) -> Option<OwnedFd> {
    let raw = option::<libc::c_int>(fd, libc::SO_PEERPIDFD, -1).filter(|&f| f >= 0)?;
    // SAFETY: the kernel just gave this descriptor to us.
    Some(unsafe { OwnedFd::from_raw_fd(raw) })
}
