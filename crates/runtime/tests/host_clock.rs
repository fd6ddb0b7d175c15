//! The program's virtual clock (`host_clock`): real before the first SDK call, then the
//! timeline's host clock as the program sees it between calls, without moving it; modeled
//! time shows; the emulator's own work in clock reads is not host code; held across
//! `timeline::reset`; monotonic. One test: the clock and the timeline are process-wide.

use std::time::Duration;

use openpim_runtime::host_clock;
use openpim_runtime::machine::{HostClock, Phase};
use openpim_runtime::timeline::{self, SdkCall};

const MS: i128 = 1_000_000;

fn ns(ts: libc::timespec) -> i128 {
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

fn mono() -> i128 {
    ns(host_clock::read(libc::CLOCK_MONOTONIC).expect("the virtual clock"))
}

fn sdk_call() {
    let _c = SdkCall::enter();
    host_clock::sdk_call();
}

fn host_now() -> u64 {
    timeline::with_state(|s| s.clock.now())
}

#[test]
fn the_program_sees_the_host_clock() {
    if std::env::var_os(host_clock::CLOCK_ENV).is_some() {
        eprintln!("skipped: {} is set", host_clock::CLOCK_ENV);
        return;
    }
    // Before the first SDK call: the real clock (the C side reads it).
    assert!(host_clock::read(libc::CLOCK_MONOTONIC).is_none());
    assert_eq!(host_clock::mode(), HostClock::Virtual);

    timeline::reset();
    sdk_call();
    // Host code: its real time, shown without being accounted.
    let t0 = mono();
    std::thread::sleep(Duration::from_millis(30));
    let t1 = mono();
    assert!(t1 - t0 >= 30 * MS && t1 - t0 < 500 * MS, "{}", t1 - t0);
    let before = host_now();
    for _ in 0..1000 {
        mono();
    }
    assert_eq!(host_now(), before, "reading the clock moves the timeline");
    // The next SDK call accounts what was shown (and the reads' own work is left out).
    sdk_call();
    let t2 = mono();
    assert!(t2 >= t1 && t2 - t1 < 5 * MS, "{}", t2 - t1);
    assert!(i128::from(host_now()) >= 30 * MS);

    // Modeled time of an SDK call shows after it.
    {
        let _c = SdkCall::enter();
        timeline::with_state(|s| s.clock.host_work(7_000_000, Phase::DpuKernel, "kernel"));
    }
    let t3 = mono();
    assert!(t3 - t2 >= 7 * MS && t3 - t2 < 12 * MS, "{}", t3 - t2);

    // The emulator's work outside SDK calls is not host code.
    std::thread::sleep(Duration::from_millis(60));
    timeline::emulator_work(50_000_000);
    let t4 = mono();
    assert!(t4 - t3 >= 10 * MS && t4 - t3 < 50 * MS, "{}", t4 - t3);

    // Other clocks: the same time, a fixed offset.
    let rt = ns(host_clock::read(libc::CLOCK_REALTIME).unwrap());
    let m = mono();
    let rt2 = ns(host_clock::read(libc::CLOCK_REALTIME).unwrap());
    assert!(rt <= rt2 && rt2 - rt < MS);
    let offset = rt - m;
    let real_offset = {
        let mut a = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let mut b = a;
        // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
        unsafe {
            libc::clock_gettime(libc::CLOCK_REALTIME, &mut a);
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut b);
        }
        ns(a) - ns(b)
    };
    assert!(
        (offset - real_offset).abs() < 10 * MS,
        "{offset} {real_offset}"
    );
    assert!(host_clock::read(libc::CLOCK_PROCESS_CPUTIME_ID).is_some()); // clock()
    assert!(host_clock::read(libc::CLOCK_THREAD_CPUTIME_ID).is_none());

    // Across a reset, until the next SDK call: the last reading holds (never backwards).
    let t5 = mono();
    timeline::reset();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(mono(), t5);
    sdk_call();
    assert!(mono() >= t5);

    // Several threads: never backwards.
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let mut last = mono();
                for i in 0..20_000 {
                    if i % 1000 == 0 {
                        sdk_call();
                    }
                    let t = mono();
                    assert!(t >= last);
                    last = t;
                }
            });
        }
    });
}
