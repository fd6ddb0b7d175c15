//! The host program's clocks on the virtual timeline.
//!
//! A program timing its phases with `gettimeofday` or `clock_gettime` would see the
//! emulator's time (interpreting DPU code) where the hardware takes the modeled time. So the
//! clocks the program reads show the timeline's host clock instead: real host time between
//! SDK calls plus the modeled time of what the SDK calls did ([`super::timeline`]).
//!
//! - Epoch: the first SDK call (host time 0). Before it the clocks are real; at it they go on
//!   from the real time, continuously.
//! - Virtual `CLOCK_MONOTONIC` = the real monotonic time at the epoch + the host time
//!   ([`timeline::program_now`]); every other virtual clock is it plus a fixed offset taken
//!   at the epoch (`CLOCK_REALTIME`, `CLOCK_MONOTONIC_RAW`, `CLOCK_BOOTTIME`, `CLOCK_TAI`, the
//!   `_COARSE` and `_ALARM` variants; and what `clock()` returns: the process CPU time at the
//!   epoch + the host time since). CPU-time clocks are not virtual.
//! - Monotonic per process: a reading is never below one shown before, on any thread.
//! - `OPENPIM_CLOCK=real|virtual` (environment, wins) or the profile key `clock=` of the
//!   process's first allocation choose; virtual by default.
//!
//! The C side is `sdk/host/vclock.c` (`libopenpim_vclock.so`, linked into programs by
//! `dpu-pkg-config --libs dpu`): it defines the C library's clock functions for the program
//! only (by symbol version) and asks libdpu's `openpim_virtual_clock` ([`read`]).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use openpim_machine::{HostClock, SystemConfig};

use crate::clock::timeline::{self, ProgramNow};
use crate::error::{Error, Result};

/// Environment variable choosing the program's clocks: `virtual` (default) or `real`.
pub const CLOCK_ENV: &str = "OPENPIM_CLOCK";

/// Real readings of the clocks at the epoch, ns.
#[derive(Debug)]
struct Base {
    /// When (the readings are taken right after it).
    at: Instant,
    monotonic: i128,
    realtime: i128,
    raw: i128,
    boottime: i128,
    tai: i128,
    process_cpu: i128,
}

impl Base {
    fn now() -> Base {
        let at = Instant::now();
        let monotonic = real_ns(libc::CLOCK_MONOTONIC).unwrap_or(0);
        let or_mono = |c| real_ns(c).unwrap_or(monotonic);
        Base {
            at,
            monotonic,
            realtime: or_mono(libc::CLOCK_REALTIME),
            raw: or_mono(libc::CLOCK_MONOTONIC_RAW),
            boottime: or_mono(libc::CLOCK_BOOTTIME),
            tai: or_mono(libc::CLOCK_TAI),
            process_cpu: real_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0),
        }
    }
}

/// A real clock, ns (the C library's: libdpu's own references bind to it, not to vclock's).
fn real_ns(clock: libc::clockid_t) -> Option<i128> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec))
}

static BASE: OnceLock<Base> = OnceLock::new();

/// The highest virtual monotonic time shown, ns (0: none).
static LAST: AtomicU64 = AtomicU64::new(0);

/// The clocks chosen at the first allocation (0: not yet).
static MODE: AtomicU8 = AtomicU8::new(0);
const VIRTUAL: u8 = 1;
const REAL: u8 = 2;

/// `OPENPIM_CLOCK`, read once: `Err` with the message for a bad value.
fn env_setting() -> &'static std::result::Result<Option<HostClock>, String> {
    static ENV: OnceLock<std::result::Result<Option<HostClock>, String>> = OnceLock::new();
    ENV.get_or_init(|| match std::env::var(CLOCK_ENV) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => HostClock::parse(v.trim()).map(Some).ok_or_else(|| {
            format!("{CLOCK_ENV}='{v}' is neither 'virtual' (the host program's clocks show the virtual timeline, the default) nor 'real' (the wall clock)")
        }),
        Err(_) => Err(format!("{CLOCK_ENV} is not valid UTF-8: use 'virtual' or 'real'")),
    })
}

/// Called at every SDK call, after the timeline has seen it: the first takes the real clocks
/// (the epoch's readings) and reads `OPENPIM_CLOCK`.
pub fn sdk_call() {
    if BASE.get().is_some() {
        return;
    }
    let _ = env_setting();
    let base = BASE.get_or_init(Base::now);
    // Nothing shown from now on is below the epoch (see `read` when the timeline is busy).
    LAST.fetch_max(base.monotonic.max(0) as u64, Ordering::AcqRel);
}

/// An allocation with `config`: a bad `OPENPIM_CLOCK` fails it; the first one fixes the
/// clocks (`OPENPIM_CLOCK`, else its profile's `clock=`, else virtual). Later ones cannot
/// change them (the clocks would jump).
pub(crate) fn configure(config: &SystemConfig) -> Result<()> {
    let env = env_setting().clone().map_err(Error::System)?;
    let chosen = match env.or(config.clock).unwrap_or(HostClock::Virtual) {
        HostClock::Virtual => VIRTUAL,
        HostClock::Real => REAL,
    };
    let _ = MODE.compare_exchange(0, chosen, Ordering::AcqRel, Ordering::Acquire);
    Ok(())
}

/// What the program's clocks show now (before the first allocation: `OPENPIM_CLOCK`, else
/// virtual).
pub fn mode() -> HostClock {
    match MODE.load(Ordering::Acquire) {
        VIRTUAL => HostClock::Virtual,
        REAL => HostClock::Real,
        _ => match env_setting() {
            Ok(Some(c)) => *c,
            _ => HostClock::Virtual,
        },
    }
}

/// The virtual reading of `clock` (`CLOCK_PROCESS_CPUTIME_ID` stands for `clock()`, see the
/// module's documentation), or `None` where the program gets the real clock: clocks that
/// are not virtual, `OPENPIM_CLOCK=real`, before the first SDK call.
pub fn read(clock: libc::clockid_t) -> Option<libc::timespec> {
    let base = BASE.get()?;
    let offset = match clock {
        libc::CLOCK_MONOTONIC | libc::CLOCK_MONOTONIC_COARSE => 0,
        libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE | libc::CLOCK_REALTIME_ALARM => {
            base.realtime - base.monotonic
        }
        libc::CLOCK_MONOTONIC_RAW => base.raw - base.monotonic,
        libc::CLOCK_BOOTTIME | libc::CLOCK_BOOTTIME_ALARM => base.boottime - base.monotonic,
        libc::CLOCK_TAI => base.tai - base.monotonic,
        libc::CLOCK_PROCESS_CPUTIME_ID => base.process_cpu - base.monotonic,
        _ => return None,
    };
    if mode() == HostClock::Real {
        return None;
    }
    let at = Instant::now();
    let mut now = timeline::program_now(at);
    // Another thread holds the timeline for a moment (this one, if a signal handler
    // interrupted it: then the last reading stands).
    for _ in 0..64 {
        if now != ProgramNow::Busy {
            break;
        }
        std::hint::spin_loop();
        now = timeline::program_now(at);
    }
    let shown = match now {
        ProgramNow::At { epoch, ns } => {
            let epoch_ns = if epoch >= base.at {
                base.monotonic + epoch.duration_since(base.at).as_nanos() as i128
            } else {
                base.monotonic - base.at.duration_since(epoch).as_nanos() as i128
            };
            let m = (epoch_ns + i128::from(ns)).clamp(0, i128::from(u64::MAX)) as u64;
            LAST.fetch_max(m, Ordering::AcqRel).max(m)
        }
        // After `timeline::reset` until the next SDK call, or busy: the last reading.
        ProgramNow::NotStarted | ProgramNow::Busy => LAST.load(Ordering::Acquire),
    };
    timeline::emulator_work(at.elapsed().as_nanos() as u64);
    let ns = i128::from(shown) + offset;
    Some(libc::timespec {
        tv_sec: ns.div_euclid(1_000_000_000) as libc::time_t,
        tv_nsec: ns.rem_euclid(1_000_000_000) as libc::c_long,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(ts: libc::timespec) -> i128 {
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    }

    #[test]
    fn env_values() {
        assert_eq!(HostClock::parse("real"), Some(HostClock::Real));
        assert_eq!(HostClock::parse("virtual"), Some(HostClock::Virtual));
        assert_eq!(HostClock::parse("wall"), None);
    }

    #[test]
    fn clocks_share_one_virtual_time() {
        let _call = timeline::SdkCall::enter();
        sdk_call();
        drop(_call);
        if mode() == HostClock::Real {
            return;
        }
        let mono = read(libc::CLOCK_MONOTONIC).expect("virtual after an SDK call");
        let rt = read(libc::CLOCK_REALTIME).unwrap();
        let base = BASE.get().unwrap();
        // The same host time (or a later one) with the epoch's offset.
        let d = ns(rt) - ns(mono) - (base.realtime - base.monotonic);
        assert!((0..1_000_000_000).contains(&d), "{d}");
        // Monotonic.
        let mut last = ns(mono);
        for _ in 0..1000 {
            let t = ns(read(libc::CLOCK_MONOTONIC).unwrap());
            assert!(t >= last);
            last = t;
        }
        // CPU-time clocks are not virtual.
        assert!(read(libc::CLOCK_THREAD_CPUTIME_ID).is_none());
    }
}
