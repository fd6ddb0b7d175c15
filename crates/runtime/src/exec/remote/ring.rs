//! The request ring: a shared-memory channel beside the socket, one request and its reply at
//! a time, picked up without sleeping.
//!
//! A request through the socket costs each side a send and a receive, and the receive puts
//! the waiting thread to sleep and the other side's `send` wakes it: on a virtual machine a
//! wake-up across cores is an inter-processor interrupt, several microseconds of CPU on each
//! side. The ring is a memory file (sealed like a staging region, [`super::staging`]) the
//! tenant creates at connection and hands to the daemon once: a header of sequence words and
//! two areas, one for a request frame and one for its reply frame (the socket's frame
//! format, [`super::protocol::frame`]). The tenant writes a request and bumps the request
//! sequence; the daemon, which spins a little after each reply before sleeping, sees it,
//! writes the reply and bumps the reply sequence; the tenant, spinning meanwhile, sees that.
//! A side sleeps (on a futex on the word it waits for) only when the other has not answered
//! within the spin, and says so, so that the other wakes it: no system call at all when both
//! are quick.
//!
//! The socket stays for everything else (setup, descriptors, the rank table, requests or
//! replies larger than an area, the requests of a second thread while one uses the ring) and
//! as the fallback (`OPENPIM_REMOTE_RING=0`). The daemon's connection thread waits for both:
//! the tenant rings a doorbell word for every message it sends, on the ring or the socket,
//! and the daemon sleeps on the doorbell, with a timeout after which it looks at the socket
//! anyway (a tenant that died rings nothing).
//!
//! The daemon trusts nothing in the ring: it reads each word once, copies a request out of
//! the shared area before it looks at it ([`take_frame`]), and decodes the copy with the
//! socket's decoder; garbage is a malformed request (the connection ends), never a panic or
//! a read outside the area. The tenant's side trusts the daemon as it does on the socket.
//!
//! Spinning is waiting, not work: the CPU time a thread spends spinning for the other side
//! is left out of the remote path's cost ([`path_cpu_ns`]), as a sleeping wait costs no CPU
//! time (the system calls of a wait that does sleep stay counted).

use std::cell::Cell;
use std::os::fd::{OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::exec::remote::protocol;
use crate::exec::remote::staging::Region;

/// The ring's size: a header page and two areas.
pub const RING_SIZE: usize = 128 << 10;
const HEADER: usize = 4096;
/// The largest frame (length, id and body) that goes through the ring; larger ones use the
/// socket.
pub const AREA: usize = (RING_SIZE - HEADER) / 2;
const REQUEST_AREA: usize = HEADER;
const REPLY_AREA: usize = HEADER + AREA;

// Header words (u32), each on its own cache line.
/// Bumped by the tenant after every message it sends (ring or socket): the daemon sleeps on it.
const BELL: usize = 0;
/// The ring request's sequence number (the tenant's), and its frame's length.
const REQ_SEQ: usize = 64;
const REQ_LEN: usize = 68;
/// Messages the tenant has sent on the socket.
const SOCK_SEQ: usize = 72;
/// Nonzero while the daemon sleeps (or is about to) on `BELL`.
const DAEMON_SLEEPS: usize = 128;
/// The sequence number of the request last answered, and its reply frame's length
/// ([`ON_SOCKET`]: the reply went on the socket).
const REP_SEQ: usize = 192;
const REP_LEN: usize = 196;
/// Nonzero while the tenant sleeps (or is about to) on `REP_SEQ`.
const TENANT_SLEEPS: usize = 256;

/// A reply length meaning the reply was too large for the area and went on the socket.
pub const ON_SOCKET: u32 = u32::MAX;

/// How long a side spins for the other's message before it sleeps. A short request's round
/// trip through the daemon (decoding, checking, a small transfer's simulation, the reply)
/// takes a few microseconds when nothing else runs.
pub fn spin_time() -> Duration {
    static SPIN: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *SPIN.get_or_init(|| {
        let us = std::env::var("OPENPIM_REMOTE_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(DEFAULT_SPIN_US);
        Duration::from_micros(us.min(1000))
    })
}

const DEFAULT_SPIN_US: u64 = 20;

/// Spinning with the pause hint alone for this long, yielding the core between looks after.
const YIELD_AFTER: Duration = Duration::from_micros(3);

thread_local! {
    /// CPU time this thread has spent spinning for the other side (waiting, not work), and
    /// opening its perf event (the clock's own set-up).
    static SPUN: Cell<u64> = const { Cell::new(0) };
    /// Whether this thread reads its CPU clock through the switch detector (it has used a
    /// ring: its requests seldom switch it out).
    static SWITCH_CLOCK: Cell<bool> = const { Cell::new(false) };
}

/// This thread's CPU time: the kernel's clock, read cheaply between switches once the
/// thread uses a ring ([`crate::clock::cpu::switch_clock_ns`]; the same value either way).
fn cpu_ns() -> u64 {
    if SWITCH_CLOCK.with(Cell::get) {
        crate::clock::cpu::switch_clock_ns()
    } else {
        protocol::thread_cpu_ns()
    }
}

/// The calling thread uses a ring from now on: its CPU clock is read cheaply between
/// switches. The first time, the thread's perf event is opened here, and what that costs
/// (the instrument's own set-up, not the remote path's work) is left out like spinning.
fn uses_ring() {
    if SWITCH_CLOCK.with(|c| c.replace(true)) {
        return;
    }
    let k0 = protocol::thread_cpu_ns();
    crate::clock::cpu::switch_clock_ns();
    let k1 = protocol::thread_cpu_ns();
    SPUN.with(|s| s.set(s.get() + k1.saturating_sub(k0)));
}

/// This thread's CPU time less its spinning: the clock the remote path's cost is measured
/// with on both sides (differences of it).
pub fn path_cpu_ns() -> u64 {
    cpu_ns().saturating_sub(SPUN.with(Cell::get))
}

/// Spins (with the CPU's pause hint) until `done` or `spin` has passed; the CPU time spent
/// is noted as spinning. True when `done`.
fn spin_until(spin: Duration, mut done: impl FnMut() -> bool) -> bool {
    if done() {
        return true;
    }
    if spin.is_zero() {
        return false;
    }
    let cpu0 = cpu_ns();
    let start = Instant::now();
    let mut hit = false;
    'spin: loop {
        for _ in 0..32 {
            std::hint::spin_loop();
            if done() {
                hit = true;
                break 'spin;
            }
        }
        let waited = start.elapsed();
        if waited >= spin {
            break;
        }
        // Past a few microseconds the other side may be waiting for this core (the machine
        // has more runnable threads than cores): let it run.
        if waited >= YIELD_AFTER {
            // SAFETY: no arguments, no memory.
            unsafe { libc::sched_yield() };
        }
    }
    let spent = cpu_ns().saturating_sub(cpu0);
    SPUN.with(|s| s.set(s.get() + spent));
    hit
}

/// Sleeps on `word` while it holds `seen`, `timeout` at most (a process-shared futex).
fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on an aligned u32 of a shared mapping that outlives the call; the
    // kernel compares it with `seen` atomically and sleeps at most `ts`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on an aligned u32 of a shared mapping; wakes one sleeper at most.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1) };
}

/// How a wait for a ring reply ended.
#[derive(Debug, PartialEq)]
pub enum Waited {
    /// The reply's frame.
    Frame(Vec<u8>),
    /// The reply was too large for the ring: it is on the socket.
    OnSocket,
    /// The connection is gone.
    Gone,
}

/// One connection's ring (either side).
pub struct Ring {
    region: Region,
}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ring({} bytes)", self.region.len())
    }
}

impl Ring {
    /// A new ring (the tenant's side); its descriptor goes to the daemon with
    /// [`protocol::Request::Ring`].
    pub fn create() -> Result<Ring> {
        let region = Region::create(RING_SIZE)?;
        region.populate();
        Ok(Ring { region })
    }

    /// Maps the ring a tenant sent (the daemon's side): a sealed memory file of exactly
    /// [`RING_SIZE`] bytes.
    pub fn accept(fd: OwnedFd, size: u64) -> Result<Ring> {
        if size != RING_SIZE as u64 {
            return Err(crate::error::Error::InvalidDpuSet(format!(
                "a request ring of {size} bytes (it has {RING_SIZE})"
            )));
        }
        let region = Region::accept(fd, RING_SIZE)?;
        region.populate();
        Ok(Ring { region })
    }

    pub fn fd(&self) -> RawFd {
        self.region.fd()
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        let p = self.region.at(offset as u64, 4).expect("a header word");
        // SAFETY: inside the mapping (checked), 4-aligned (the mapping is page-aligned and
        // the offsets are multiples of 4), alive as long as `self`.
        unsafe { &*(p as *const AtomicU32) }
    }

    // -- The tenant's side.

    /// Writes a request frame (at most [`AREA`] bytes) and rings; the sequence number its
    /// reply will carry.
    pub fn post_request(&self, frame: &[u8]) -> u32 {
        debug_assert!(frame.len() <= AREA);
        uses_ring();
        self.region.put(REQUEST_AREA, frame);
        self.word(REQ_LEN)
            .store(frame.len() as u32, Ordering::Relaxed);
        let seq = self.word(REQ_SEQ).load(Ordering::Relaxed).wrapping_add(1);
        self.word(REQ_SEQ).store(seq, Ordering::Release);
        self.ring_bell();
        seq
    }

    /// Notes a message the tenant has just sent on the socket, and rings.
    pub fn note_socket_send(&self) {
        self.word(SOCK_SEQ).fetch_add(1, Ordering::Release);
        self.ring_bell();
    }

    fn ring_bell(&self) {
        self.word(BELL).fetch_add(1, Ordering::SeqCst);
        if self.word(DAEMON_SLEEPS).load(Ordering::SeqCst) != 0 {
            futex_wake(self.word(BELL));
        }
    }

    /// Waits for the reply to request `seq`. Spins, then sleeps in slices of `slice`,
    /// asking `alive` between them (false: the connection is gone).
    pub fn wait_reply(&self, seq: u32, slice: Duration, mut alive: impl FnMut() -> bool) -> Waited {
        let rep = self.word(REP_SEQ);
        let arrived = || rep.load(Ordering::Acquire) == seq;
        if !spin_until(spin_time(), arrived) {
            loop {
                self.word(TENANT_SLEEPS).store(1, Ordering::SeqCst);
                let now = rep.load(Ordering::SeqCst);
                if now == seq {
                    break;
                }
                futex_wait(rep, now, slice);
                if arrived() {
                    break;
                }
                if !alive() {
                    self.word(TENANT_SLEEPS).store(0, Ordering::SeqCst);
                    return Waited::Gone;
                }
            }
            self.word(TENANT_SLEEPS).store(0, Ordering::SeqCst);
        }
        let len = self.word(REP_LEN).load(Ordering::Relaxed);
        if len == ON_SOCKET {
            return Waited::OnSocket;
        }
        let len = (len as usize).min(AREA);
        let mut frame = vec![0u8; len];
        self.region.get(REPLY_AREA, &mut frame);
        Waited::Frame(frame)
    }

    // -- The daemon's side.

    /// The doorbell's value now: read it before looking for messages, then sleep with
    /// [`Ring::wait_bell`] if there were none.
    pub fn bell(&self) -> u32 {
        self.word(BELL).load(Ordering::SeqCst)
    }

    /// Spins while the doorbell holds `seen`, then sleeps on it `timeout` at most.
    pub fn wait_bell(&self, seen: u32, timeout: Duration) {
        let bell = self.word(BELL);
        if spin_until(spin_time(), || bell.load(Ordering::Acquire) != seen) {
            return;
        }
        self.word(DAEMON_SLEEPS).store(1, Ordering::SeqCst);
        if bell.load(Ordering::SeqCst) == seen {
            futex_wait(bell, seen, timeout);
        }
        self.word(DAEMON_SLEEPS).store(0, Ordering::SeqCst);
    }

    /// Socket messages announced and not yet read (`read`: how many the daemon has read): a
    /// tenant announces each after sending it, so the count can lag, never lead, for an
    /// honest tenant.
    pub fn socket_pending(&self, read: u32) -> bool {
        (self
            .word(SOCK_SEQ)
            .load(Ordering::Acquire)
            .wrapping_sub(read) as i32)
            > 0
    }

    /// The ring's request if one came since `last` (the sequence number last taken, updated):
    /// its id and body, copied out of the shared area and checked, or why it is malformed.
    #[allow(clippy::type_complexity)]
    pub fn take_request(
        &self,
        last: &mut u32,
    ) -> Option<std::result::Result<(u64, Vec<u8>), String>> {
        uses_ring();
        let seq = self.word(REQ_SEQ).load(Ordering::Acquire);
        if seq == *last {
            return None;
        }
        *last = seq;
        let len = self.word(REQ_LEN).load(Ordering::Relaxed);
        // The area is copied once, then only the copy is looked at.
        let mut area = vec![0u8; (len as usize).min(AREA)];
        self.region.get(REQUEST_AREA, &mut area);
        Some(take_frame(len, &area))
    }

    /// Answers the ring's request `seq` with `frame`; false when the frame is larger than
    /// the area (then send it on the socket and call [`Ring::replied_on_socket`]).
    pub fn post_reply(&self, seq: u32, frame: &[u8]) -> bool {
        if frame.len() > AREA {
            return false;
        }
        self.region.put(REPLY_AREA, frame);
        self.word(REP_LEN)
            .store(frame.len() as u32, Ordering::Relaxed);
        self.publish_reply(seq);
        true
    }

    /// Tells the tenant that request `seq`'s reply went on the socket.
    pub fn replied_on_socket(&self, seq: u32) {
        self.word(REP_LEN).store(ON_SOCKET, Ordering::Relaxed);
        self.publish_reply(seq);
    }

    /// Wakes a tenant thread sleeping for a reply (the connection is ending: it then finds
    /// the socket closed).
    pub fn wake_tenant(&self) {
        futex_wake(self.word(REP_SEQ));
    }

    fn publish_reply(&self, seq: u32) {
        self.word(REP_SEQ).store(seq, Ordering::SeqCst);
        if self.word(TENANT_SLEEPS).load(Ordering::SeqCst) != 0 {
            futex_wake(self.word(REP_SEQ));
        }
    }
}

/// A request frame as the daemon copied it out of the ring (`len`: the length word it read,
/// `area`: its copy of the request area, `len` bytes at most): the frame's id and body, or
/// why it is not one frame of `len` bytes.
pub fn take_frame(len: u32, area: &[u8]) -> std::result::Result<(u64, Vec<u8>), String> {
    let len = len as usize;
    if len > area.len() {
        return Err(format!(
            "a ring request of {len} bytes (the area holds {})",
            area.len()
        ));
    }
    let mut bytes = &area[..len];
    match protocol::read_frame(&mut bytes, AREA) {
        Ok(Some(frame)) if bytes.is_empty() => Ok(frame),
        Ok(Some(_)) => Err("a ring request with bytes after its frame".into()),
        Ok(None) => Err("an empty ring request".into()),
        Err(e) => Err(format!("a malformed ring request: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::remote::protocol::Request;

    #[test]
    fn a_request_goes_through_and_garbage_is_refused() {
        let tenant = Ring::create().expect("a ring");
        // SAFETY: the ring's descriptor is open while `tenant` lives.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(tenant.fd()) }
            .try_clone_to_owned()
            .expect("dup");
        let daemon = Ring::accept(fd, RING_SIZE as u64).expect("accepted");
        let mut last = 0;
        assert!(daemon.take_request(&mut last).is_none());
        let frame = protocol::frame(7, |e| Request::Status { rank: 3 }.encode(e)).expect("frame");
        let seq = tenant.post_request(&frame);
        let (id, body) = daemon
            .take_request(&mut last)
            .expect("a request")
            .expect("well formed");
        assert_eq!(id, 7);
        assert_eq!(Request::decode(&body), Ok(Request::Status { rank: 3 }));
        assert!(daemon.take_request(&mut last).is_none());
        assert!(daemon.post_reply(seq, b"reply"));
        assert_eq!(
            tenant.wait_reply(seq, Duration::from_millis(10), || true),
            Waited::Frame(b"reply".to_vec())
        );
        // A length past the area, a frame shorter than its length, trailing bytes.
        tenant.word(REQ_LEN).store(u32::MAX, Ordering::Relaxed);
        tenant.word(REQ_SEQ).fetch_add(1, Ordering::Release);
        assert!(daemon.take_request(&mut last).expect("one").is_err());
        assert!(take_frame(4, &[200, 0, 0, 0]).is_err());
        let mut long = frame.clone();
        long.push(0);
        assert!(take_frame(long.len() as u32, &long).is_err());
        assert_eq!(
            take_frame(frame.len() as u32, &frame).map(|(id, _)| id),
            Ok(7)
        );
        // A reply too large for the area goes on the socket.
        assert!(!daemon.post_reply(seq + 1, &vec![0; AREA + 1]));
        daemon.replied_on_socket(seq + 1);
        assert_eq!(
            tenant.wait_reply(seq + 1, Duration::from_millis(10), || true),
            Waited::OnSocket
        );
        // A daemon that never answers: the wait ends when the connection is gone.
        assert_eq!(
            tenant.wait_reply(seq + 2, Duration::from_millis(1), || false),
            Waited::Gone
        );
    }
}
