//! Who is at the other end of a UNIX socket: both sides of the remote path ask (the daemon to
//! identify a tenant, the tenant to let the daemon read its buffers in place).

use std::os::fd::RawFd;

/// The peer's `(uid, pid)` from `SO_PEERCRED`, or `None` when the call fails (the pid is 0
/// when the peer is in a pid namespace the caller cannot see).
pub fn credentials(fd: RawFd) -> Option<(u32, u32)> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given; the caller's fd is open.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    (r == 0).then_some((cred.uid, cred.pid as u32))
}
