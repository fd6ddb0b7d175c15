//! In-place transfers: the daemon reads a tenant's write buffers and writes its read
//! buffers in the tenant's own memory (`process_vm_readv` / `process_vm_writev`), as the
//! in-process backend reads and writes the program's buffers itself. The tenant then copies
//! nothing; the daemon's copies are its memory work, which the tenant's clock never counts
//! (as the in-process backend's own copies are not counted). The gateway of an MPI run does
//! the same with large reads (`exec::mpi`): it writes their bytes, as they arrive from the
//! workers, into the program's buffers instead of the socket.
//!
//! The kernel allows it when the daemon may trace the tenant (same user and, under Yama's
//! `ptrace_scope = 1`, a tenant that named the daemon with `PR_SET_PTRACER`; or a daemon
//! with `CAP_SYS_PTRACE`). The tenant asks first ([`probe`]); without it, transfers go
//! through the staging region or the messages. The addresses are the tenant's: the kernel
//! checks them against its mappings, and a bad one is an error for the operation, never a
//! read of anything but that tenant's memory.
//!
//! The system calls name the tenant by its pid, which the kernel gives to another process
//! once the tenant has exited and been reaped. So the daemon holds a pidfd of the tenant
//! ([`Target`]: the socket's `SO_PEERPIDFD` where the kernel has it, else `pidfd_open` on
//! the pid of `SO_PEERCRED`), and each access checks it first: a pidfd is readable once its
//! process has exited, before its pid can be reaped and reused, so a tenant that is gone is
//! an error for the operation, never an access to the process that got its pid. A read
//! checks again after the call (its bytes are dropped if the tenant went away meanwhile).
//! Where no pidfd can be had, the probe is refused and transfers go through the staging
//! region or the messages. (A `pidfd_open` made after the tenant died and its pid was
//! reused would name another process: the probe, which reads a fresh value the tenant
//! sent, then fails, so such a connection never gets in-place transfers.)

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::{Error, Result};
use crate::exec::remote::protocol::Request;

/// Who makes in-place accesses, as errors name it: the process, and the setting that turns
/// its in-place transfers off.
#[derive(Debug, Clone, Copy)]
pub struct Accessor {
    pub name: &'static str,
    pub switch: &'static str,
}

/// The rank-manager daemon.
pub const DAEMON: Accessor = Accessor {
    name: "the daemon",
    switch: "OPENPIM_REMOTE_INPLACE=0",
};

/// The gateway of an MPI run.
pub const MPI_GATEWAY: Accessor = Accessor {
    name: "the MPI gateway",
    switch: "OPENPIM_MPI_INPLACE=off",
};

/// A tenant's process as in-place transfers reach it: its pid, and a pidfd that says whether
/// the process with that pid is still the tenant.
#[derive(Debug)]
pub struct Target {
    pid: u32,
    pidfd: OwnedFd,
    by: Accessor,
}

impl Target {
    /// The process at the other end of socket `fd`, whose pid is `pid` (from `SO_PEERCRED`):
    /// the socket's own pidfd of it (`SO_PEERPIDFD`, Linux 6.5), else a pidfd opened on the
    /// pid (Linux 5.3); `None` when neither can be had. `by` is who accesses it.
    pub fn of_peer(fd: RawFd, pid: u32, by: Accessor) -> Option<Target> {
        match super::peer::pidfd(fd) {
            Some(pidfd) => Some(Target { pid, pidfd, by }),
            None => Target::of_pid(pid, by),
        }
    }

    /// The process `pid` now, through `pidfd_open`; `None` where the kernel has no pidfds or
    /// no such process exists.
    pub fn of_pid(pid: u32, by: Accessor) -> Option<Target> {
        if pid == 0 {
            return None;
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: the kernel just gave this descriptor to us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        Some(Target { pid, pidfd, by })
    }

    /// Ok while the tenant has not exited (its pid is still its own).
    fn alive(&self) -> Result<()> {
        let mut p = libc::pollfd {
            fd: self.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; a zero timeout does not block.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        if n == 0 {
            return Ok(());
        }
        Err(Error::System(format!(
            "in-place transfer refused: the program (pid {}) has exited",
            self.pid
        )))
    }
}

/// At most this many buffers per system call (the kernel's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// Whether the 8 bytes at `addr` in the tenant read as `value`.
pub fn probe(target: &Target, addr: u64, value: u64) -> Result<()> {
    let mut got = [0u8; 8];
    read(target, &mut [(addr, &mut got[..])])?;
    if u64::from_le_bytes(got) == value {
        Ok(())
    } else {
        Err(Error::System(format!(
            "in-place transfers: the probe at {addr:#x} read another value"
        )))
    }
}

/// The local and remote I/O vectors of one system call over `parts` (address in the tenant,
/// local buffer, length), and the bytes they cover.
fn iovecs(
    parts: impl Iterator<Item = (u64, *mut u8, usize)>,
) -> (Vec<libc::iovec>, Vec<libc::iovec>, usize) {
    let mut local = Vec::new();
    let mut remote = Vec::new();
    let mut want = 0;
    for (addr, buf, len) in parts {
        local.push(libc::iovec {
            iov_base: buf.cast(),
            iov_len: len,
        });
        remote.push(libc::iovec {
            iov_base: addr as usize as *mut libc::c_void,
            iov_len: len,
        });
        want += len;
    }
    (local, remote, want)
}

/// `process_vm_readv` or `process_vm_writev`.
type VmCall = unsafe extern "C" fn(
    libc::pid_t,
    *const libc::iovec,
    libc::c_ulong,
    *const libc::iovec,
    libc::c_ulong,
    libc::c_ulong,
) -> libc::ssize_t;

/// `f` between this process's `local` buffers and process `pid`'s `remote` ones.
///
/// # Safety
/// As `f`'s: the local iovecs cover memory of this process valid for the access.
unsafe fn vm_call(f: VmCall, pid: u32, local: &[libc::iovec], remote: &[libc::iovec]) -> isize {
    // SAFETY: the caller's contract; the lengths are the slices'.
    unsafe {
        f(
            pid as libc::pid_t,
            local.as_ptr(),
            local.len() as libc::c_ulong,
            remote.as_ptr(),
            remote.len() as libc::c_ulong,
            0,
        )
    }
}

/// Fills each buffer from the tenant's memory at its address.
pub fn read(target: &Target, bufs: &mut [(u64, &mut [u8])]) -> Result<()> {
    let pid = target.pid;
    target.alive()?;
    for chunk in bufs.chunks_mut(IOV_MAX) {
        let first = chunk.first().map_or(0, |c| c.0);
        let (local, remote, want) =
            iovecs(chunk.iter_mut().map(|(a, b)| (*a, b.as_mut_ptr(), b.len())));
        // SAFETY: each local iovec covers a buffer this function holds mutably; the kernel
        // checks the remote ones against the tenant's mappings.
        let n = unsafe { vm_call(libc::process_vm_readv, pid, &local, &remote) };
        check(n, want, "read", first, target.by)?;
    }
    // The bytes are the tenant's only if it was still there after the reads.
    target.alive()
}

/// Writes each buffer into the tenant's memory at its address.
pub fn write(target: &Target, bufs: &[(u64, &[u8])]) -> Result<()> {
    let pid = target.pid;
    for chunk in bufs.chunks(IOV_MAX) {
        target.alive()?;
        let first = chunk.first().map_or(0, |c| c.0);
        let (local, remote, want) = iovecs(
            chunk
                .iter()
                .map(|(a, b)| (*a, b.as_ptr().cast_mut(), b.len())),
        );
        // SAFETY: the local iovecs cover buffers this function borrows (the kernel only
        // reads them); the remote ones are checked by the kernel against the tenant's
        // mappings.
        let n = unsafe { vm_call(libc::process_vm_writev, pid, &local, &remote) };
        check(n, want, "write", first, target.by)?;
    }
    Ok(())
}

fn check(n: isize, want: usize, what: &str, first: u64, by: Accessor) -> Result<()> {
    let who = by.name;
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::System(format!(
            "{who} cannot {what} the program's buffers in place (first at {first:#x}): {e}; a buffer passed to a transfer is not valid, or set {}",
            by.switch
        )));
    }
    if n as usize != want {
        return Err(Error::System(format!(
            "{who} could {what} only {n} of {want} bytes of the program's buffers in place (first at {first:#x}): a buffer passed to a transfer is not valid for its length"
        )));
    }
    Ok(())
}

/// The program's side of the probe: lets the process at the other end of socket `fd` (the
/// daemon, the MPI gateway) trace this one where Yama's `ptrace_scope = 1` requires it
/// (`PR_SET_PTRACER`), and returns the request that asks it whether it can read this
/// process's memory, with the value it must find (kept alive until the answer has come).
/// `None` when the peer's pid cannot be had.
pub fn probe_request(fd: RawFd) -> Option<(Request, Box<u64>)> {
    let peer_pid = match super::peer::credentials(fd) {
        Some((_, pid)) if pid > 0 => pid,
        _ => return None,
    };
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    if scope == Some(1) {
        // SAFETY: PR_SET_PTRACER takes a pid and changes nothing else.
        unsafe { libc::prctl(libc::PR_SET_PTRACER, peer_pid as libc::c_ulong, 0, 0, 0) };
    }
    // A value the peer could not know without reading it: the time, mixed.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let value = Box::new(nanos.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let req = Request::InPlace {
        addr: &*value as *const u64 as u64,
        value: *value,
    };
    Some((req, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_a_live_process() {
        let me = Target::of_pid(std::process::id(), DAEMON).expect("pidfd_open works here");
        let value: u64 = 0x1234_5678_9abc_def1;
        probe(&me, &value as *const u64 as u64, value).unwrap();
        let mut dst = [0u8; 8];
        write(&me, &[(dst.as_mut_ptr() as u64, &value.to_le_bytes()[..])]).unwrap();
        assert_eq!(u64::from_le_bytes(dst), value);
        // Through a socket's peer (our own process at both ends).
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let peer = Target::of_peer(a.as_raw_fd(), std::process::id(), MPI_GATEWAY).unwrap();
        probe(&peer, &value as *const u64 as u64, value).unwrap();
    }

    #[test]
    fn refuses_a_process_that_has_exited() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let t = Target::of_pid(child.id(), DAEMON).unwrap();
        assert!(t.alive().is_ok());
        child.kill().unwrap();
        child.wait().unwrap();
        // Its pid may belong to anyone now: nothing is read or written.
        let mut got = [0u8; 8];
        let e = read(&t, &mut [(0x1000, &mut got[..])]).unwrap_err();
        assert!(e.to_string().contains("has exited"), "{e}");
        let e = write(&t, &[(0x1000, &got[..])]).unwrap_err();
        assert!(e.to_string().contains("has exited"), "{e}");
        let e = probe(&t, 0x1000, 1).unwrap_err();
        assert!(e.to_string().contains("has exited"), "{e}");
    }
}
