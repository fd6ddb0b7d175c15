//! In-place transfers: the daemon reads a tenant's write buffers and writes its read
//! buffers in the tenant's own memory (`process_vm_readv` / `process_vm_writev`), as the
//! in-process backend reads and writes the program's buffers itself. The tenant then copies
//! nothing; the daemon's copies are its memory work, which the tenant's clock never counts
//! (as the in-process backend's own copies are not counted).
//!
//! The kernel allows it when the daemon may trace the tenant (same user and, under Yama's
//! `ptrace_scope = 1`, a tenant that named the daemon with `PR_SET_PTRACER`; or a daemon
//! with `CAP_SYS_PTRACE`). The tenant asks first ([`probe`]); without it, transfers go
//! through the staging region or the messages. The addresses are the tenant's: the kernel
//! checks them against its mappings, and a bad one is an error for the operation, never a
//! read of anything but that tenant's memory.

use openpim_runtime::{Error, Result};

/// At most this many buffers per system call (the kernel's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// Whether the 8 bytes at `addr` in process `pid` read as `value`.
pub fn probe(pid: u32, addr: u64, value: u64) -> Result<()> {
    let mut got = [0u8; 8];
    read(pid, &mut [(addr, &mut got[..])])?;
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

/// Fills each buffer from the tenant's memory at its address.
pub fn read(pid: u32, bufs: &mut [(u64, &mut [u8])]) -> Result<()> {
    for chunk in bufs.chunks_mut(IOV_MAX) {
        let first = chunk.first().map_or(0, |c| c.0);
        let (local, remote, want) =
            iovecs(chunk.iter_mut().map(|(a, b)| (*a, b.as_mut_ptr(), b.len())));
        // SAFETY: each local iovec covers a buffer this function holds mutably; the kernel
        // checks the remote ones against the tenant's mappings.
        let n = unsafe {
            libc::process_vm_readv(
                pid as libc::pid_t,
                local.as_ptr(),
                local.len() as libc::c_ulong,
                remote.as_ptr(),
                remote.len() as libc::c_ulong,
                0,
            )
        };
        check(n, want, "read", first)?;
    }
    Ok(())
}

/// Writes each buffer into the tenant's memory at its address.
pub fn write(pid: u32, bufs: &[(u64, &[u8])]) -> Result<()> {
    for chunk in bufs.chunks(IOV_MAX) {
        let first = chunk.first().map_or(0, |c| c.0);
        let (local, remote, want) = iovecs(
            chunk
                .iter()
                .map(|(a, b)| (*a, b.as_ptr().cast_mut(), b.len())),
        );
        // SAFETY: the local iovecs cover buffers this function borrows (the kernel only
        // reads them); the remote ones are checked by the kernel against the tenant's
        // mappings.
        let n = unsafe {
            libc::process_vm_writev(
                pid as libc::pid_t,
                local.as_ptr(),
                local.len() as libc::c_ulong,
                remote.as_ptr(),
                remote.len() as libc::c_ulong,
                0,
            )
        };
        check(n, want, "write", first)?;
    }
    Ok(())
}

fn check(n: isize, want: usize, what: &str, first: u64) -> Result<()> {
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Error::System(format!(
            "the daemon cannot {what} the program's buffers in place (first at {first:#x}): {e}; a buffer passed to a transfer is not valid, or set OPENPIM_REMOTE_INPLACE=0"
        )));
    }
    if n as usize != want {
        return Err(Error::System(format!(
            "the daemon could {what} only {n} of {want} bytes of the program's buffers in place (first at {first:#x}): a buffer passed to a transfer is not valid for its length"
        )));
    }
    Ok(())
}
