//! The calling thread's CPU time: how the clock tells a thread's own work from its waits.
//!
//! [`thread_cpu_ns`] is the kernel's thread CPU clock (`CLOCK_THREAD_CPUTIME_ID`), a system
//! call: about 1.5 us on a virtual machine with the usual mitigations, more than a request
//! of the remote path through its ring costs. [`switch_clock_ns`] gives the same value
//! cheaply to a thread that is seldom switched out: a thread that has not been switched out
//! since it last read the kernel's clock has run all along, so its CPU time has grown by
//! exactly the monotonic time elapsed, which the vDSO gives in tens of nanoseconds. Whether
//! the thread has been switched out is free to tell: the kernel rewrites the page of a perf
//! event that follows the thread (a "dummy" software event, counting nothing) each time it
//! switches the thread out or in, bumping the page's sequence word. So the thread reads the
//! system call only after a switch (it slept, blocked, or was preempted), as an anchor, and
//! in between takes the anchor plus the monotonic time since. A preemption, however short,
//! is a switch, and sends the next read to the kernel. Where perf events are not allowed
//! (`perf_event_paranoid` 3 and above, a seccomp filter) every read is the system call.
//!
//! The event has a price: each switch of the thread costs the kernel about 0.5 us more of
//! the thread's CPU time (measured on the development machine), so only the threads whose
//! stretches seldom switch use it (the remote path's ring, [`crate::exec::remote::ring`]).
//! The monotonic time between two switches also counts the interrupts the thread's core
//! handled meanwhile (and a hypervisor's steal of the virtual CPU), which the kernel's clock
//! leaves out where it accounts them apart: microseconds per second at most.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// CPU time of the calling thread, ns (the kernel's clock, a system call).
pub fn thread_cpu_ns() -> u64 {
    kernel_thread_cpu_ns()
}

/// CPU time of the calling thread, ns: the same value as [`thread_cpu_ns`], read by system
/// call only after the thread was switched out (the first call opens the thread's event).
pub fn switch_clock_ns() -> u64 {
    let generation = FORK_GENERATION.load(Ordering::Relaxed);
    SWITCHES
        .try_with(|s| {
            let mut s = s.borrow_mut();
            if s.generation != generation {
                // A forked child: the event follows the parent's thread.
                *s = Switches::open(generation);
            }
            s.read()
        })
        .unwrap_or_else(|_| kernel_thread_cpu_ns())
}

/// The kernel's thread CPU clock (a system call).
fn kernel_thread_cpu_ns() -> u64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn monotonic_ns() -> u64 {
    clock(libc::CLOCK_MONOTONIC)
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Bumped in a forked child (the perf events of the parent's threads follow those threads).
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

extern "C" fn forked_child() {
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    static SWITCHES: RefCell<Switches> = RefCell::new(Switches::open(FORK_GENERATION.load(Ordering::Relaxed)));
}

/// Offset of the sequence word `lock` in `struct perf_event_mmap_page` (after `version` and
/// `compat_version`).
const LOCK_OFFSET: usize = 8;

/// A thread's switch detector and its last anchor.
struct Switches {
    /// The perf event's page (mapped read-only), or none: every read is the system call.
    page: Option<(std::os::fd::OwnedFd, *mut libc::c_void, usize)>,
    generation: u64,
    /// The page's sequence word, the kernel's CPU clock and the monotonic clock at the last
    /// anchor (`seq` odd: no anchor).
    seq: u32,
    cpu: u64,
    mono: u64,
}

impl Switches {
    fn open(generation: u64) -> Switches {
        static AT_FORK: std::sync::Once = std::sync::Once::new();
        AT_FORK.call_once(|| {
            // SAFETY: registers a handler that only bumps an atomic.
            unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
        });
        Switches {
            page: open_switch_page(),
            generation,
            seq: 1,
            cpu: 0,
            mono: 0,
        }
    }

    fn seq(&self) -> Option<u32> {
        let (_, page, _) = self.page.as_ref()?;
        // SAFETY: the page is mapped for the thread's life and `lock` is an aligned u32 in
        // it, which the kernel updates (read as an atomic).
        let word = unsafe { &*((*page as *const u8).add(LOCK_OFFSET) as *const AtomicU32) };
        Some(word.load(Ordering::Acquire))
    }

    fn read(&mut self) -> u64 {
        let Some(before) = self.seq() else {
            return kernel_thread_cpu_ns();
        };
        if before == self.seq && before % 2 == 0 {
            let mono = monotonic_ns();
            // A switch between the first look and the monotonic read would put time off
            // the core in it: look again.
            if self.seq() == Some(before) {
                return self.cpu + mono.saturating_sub(self.mono);
            }
        }
        // Switched out since the last anchor (or none yet): a new one. The monotonic clock
        // is read on both sides of the kernel's and its midpoint taken, so that the anchor's
        // error is under half a system call either way.
        let mono0 = monotonic_ns();
        let cpu = kernel_thread_cpu_ns();
        let mono1 = monotonic_ns();
        let after = self.seq();
        if after == Some(before) && before % 2 == 0 {
            self.seq = before;
            self.cpu = cpu;
            self.mono = mono0 + (mono1 - mono0) / 2;
        } else {
            self.seq = 1;
        }
        cpu
    }
}

impl Drop for Switches {
    fn drop(&mut self) {
        if let Some((_, page, len)) = self.page.take() {
            // SAFETY: the mapping made in `open_switch_page`, unmapped once (the descriptor
            // closes with the tuple).
            unsafe { libc::munmap(page, len) };
        }
    }
}

/// A dummy software perf event following the calling thread, and its page mapped: the page's
/// sequence word changes whenever the thread is switched out or in.
fn open_switch_page() -> Option<(std::os::fd::OwnedFd, *mut libc::c_void, usize)> {
    use std::os::fd::FromRawFd;
    if std::env::var_os("OPENPIM_CPU_CLOCK_SYSCALL").is_some_and(|v| v == "1") {
        return None;
    }
    // struct perf_event_attr, PERF_ATTR_SIZE_VER0 (64 bytes) is all we set: type, size,
    // config and the flags word.
    let mut attr = [0u8; 64];
    const PERF_TYPE_SOFTWARE: u32 = 1;
    const PERF_COUNT_SW_DUMMY: u64 = 9;
    attr[0..4].copy_from_slice(&PERF_TYPE_SOFTWARE.to_ne_bytes());
    attr[4..8].copy_from_slice(&64u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&PERF_COUNT_SW_DUMMY.to_ne_bytes());
    // Flags (offset 40): exclude_kernel (bit 5) and exclude_hv (bit 6), which unprivileged
    // users need under perf_event_paranoid 2.
    let flags: u64 = (1 << 5) | (1 << 6);
    attr[40..48].copy_from_slice(&flags.to_ne_bytes());
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    // SAFETY: perf_event_open reads `attr` (64 bytes, its size field says so); pid 0 and cpu
    // -1 follow the calling thread on any CPU; no group.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor the kernel just gave, owned here.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int) };
    // SAFETY: sysconf has no preconditions.
    let len = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    use std::os::fd::AsRawFd;
    // SAFETY: maps the event's first page read-only; checked below.
    let page = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if page == libc::MAP_FAILED {
        return None;
    }
    Some((fd, page, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cheap reads agree with the kernel's clock over busy work, sleeps (a switch) and
    /// a burst of reads.
    #[test]
    fn follows_the_kernel_clock() {
        let spin = |n: u64| {
            let mut x = 0u64;
            for i in 0..n {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            x
        };
        // The first read opens the thread's event.
        switch_clock_ns();
        for round in 0..20 {
            let k0 = kernel_thread_cpu_ns();
            let c0 = switch_clock_ns();
            spin(200_000);
            if round % 3 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            let c1 = switch_clock_ns();
            let k1 = kernel_thread_cpu_ns();
            // The cheap stretch lies inside the kernel's (up to the error of an anchor).
            assert!(c1 >= c0, "the clock went back: {c0} -> {c1}");
            let (cheap, kernel) = (c1 - c0, k1 - k0);
            assert!(
                cheap.abs_diff(kernel) <= 20_000 + kernel / 10,
                "round {round}: counted {cheap} ns, the kernel's clock says {kernel} ns"
            );
        }
        // A sleep is not CPU time.
        let c0 = switch_clock_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let c1 = switch_clock_ns();
        assert!(c1 - c0 < 5_000_000, "a 20 ms sleep counted {} ns", c1 - c0);
    }
}
