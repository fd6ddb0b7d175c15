//! What the host clock counts with several host threads, and where queued and non-blocking
//! callbacks go on the virtual timeline (docs/report-schema.md: "queued callbacks hold their
//! rank's timeline, not the host's; non-blocking ones are on no timeline"), against
//! hand-computed expectations. Real sleeps and spins of tens of ms; bounds leave room for
//! a loaded machine but not for the wrong model.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openpim_runtime::machine::Phase;
use openpim_runtime::report;
use openpim_runtime::timeline::{self, SdkCall};
use openpim_runtime::{alloc, CallbackFlags, CallbackScope};

/// The timeline is process-wide: one test at a time.
static LOCK: Mutex<()> = Mutex::new(());

const MS: u64 = 1_000_000;

fn host_ns() -> u64 {
    timeline::with_state(|s| s.clock.host_phase_ns(Phase::Host))
}

fn sdk_call() {
    let _c = SdkCall::enter();
}

/// Computes (on the CPU) for `d` of this thread's CPU time.
fn spin_cpu(d: Duration) {
    let cpu = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    };
    let start = cpu();
    let mut x = 1u64;
    while cpu() - start < d {
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
    }
    std::hint::black_box(x);
}

#[test]
fn host_code_of_a_thread_counts_while_another_is_inside_an_sdk_call() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    timeline::reset();
    sdk_call(); // the timeline starts
    let (entered_tx, entered_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    std::thread::scope(|s| {
        // A long SDK call: 100 ms of the worker's host code inside it, then 150 ms more.
        // Its time is the emulator's.
        s.spawn(move || {
            let _c = SdkCall::enter();
            entered_tx.send(()).unwrap();
            done_rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(150));
        });
        // Host code on another thread meanwhile: 100 ms of CPU between two SDK calls.
        s.spawn(move || {
            entered_rx.recv().unwrap();
            sdk_call();
            spin_cpu(Duration::from_millis(100));
            sdk_call();
            done_tx.send(()).unwrap();
        });
        // The main thread waits for both, between SDK calls: it waits for the long call.
    });
    sdk_call();
    let host = host_ns();
    // The worker's 100 ms count; the main thread's wait (250 ms) and the long call do not.
    // (Before the SDK-call depth was per thread, the 100 ms were lost: ~0.)
    assert!(
        (95 * MS..180 * MS).contains(&host),
        "host {:.1} ms, want ~100",
        host as f64 / 1e6
    );
}

#[test]
fn host_code_of_parallel_threads_counts_once() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    timeline::reset();
    sdk_call();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                sdk_call();
                spin_cpu(Duration::from_millis(100));
                sdk_call();
            });
        }
    });
    sdk_call();
    let host = host_ns();
    // Two threads ran host code side by side, 100 ms of CPU each: ~100 ms, not 200 (their
    // waits for a core, if the machine is busy, do not count).
    assert!(
        (80 * MS..160 * MS).contains(&host),
        "host {:.1} ms, want ~100",
        host as f64 / 1e6
    );
}

#[test]
fn a_single_thread_counts_its_real_time_between_calls() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    timeline::reset();
    sdk_call();
    // Host code that sleeps counts (real time), as before: at least the sleep, and no more
    // than the real time between the two calls (a busy machine may wake the thread late;
    // that lateness is real time too, and counts).
    let before = std::time::Instant::now();
    std::thread::sleep(Duration::from_millis(30));
    let between = before.elapsed().as_nanos() as u64;
    sdk_call();
    let host = host_ns();
    assert!(
        (30 * MS..between + 5 * MS).contains(&host),
        "host {:.1} ms, the real time between the calls {:.1} ms",
        host as f64 / 1e6,
        between as f64 / 1e6
    );
    // After a reset the clock restarts at the next call: the time before it is not counted.
    std::thread::sleep(Duration::from_millis(20));
    timeline::reset();
    sdk_call();
    assert_eq!(host_ns(), 0);
}

fn sleeper(ms: u64, ran: Arc<Mutex<Vec<u64>>>) -> openpim_runtime::Callback {
    Arc::new(move |_scope: CallbackScope| {
        std::thread::sleep(Duration::from_millis(ms));
        ran.lock().unwrap().push(ms);
        Ok(())
    })
}

/// The callback spans of the rank's timeline.
fn callback_spans(rank: u32) -> Vec<(u64, u64)> {
    timeline::with_state(|s| {
        s.clock
            .rank_track(rank)
            .map(|t| {
                t.spans()
                    .iter()
                    .filter(|sp| sp.name == "callback")
                    .map(|sp| (sp.start, sp.end))
                    .collect()
            })
            .unwrap_or_default()
    })
}

#[test]
fn queued_callbacks_hold_their_rank_not_the_host() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    timeline::reset();
    let set = {
        let _c = SdkCall::enter();
        alloc(Some(1), "nrRanks=1,nrDpusPerRank=1").unwrap()
    };
    let rank = set.ranks()[0].id();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let flags = CallbackFlags {
        asynchronous: true,
        ..Default::default()
    };
    // Two queued callbacks, 60 ms then 40 ms, issued at host time ~0; the host works 20 ms,
    // then waits for the rank.
    for ms in [60, 40] {
        let _c = SdkCall::enter();
        set.callback(sleeper(ms, Arc::clone(&ran)), flags).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    {
        let _c = SdkCall::enter();
        set.sync().unwrap();
    }
    assert_eq!(*ran.lock().unwrap(), [60, 40]);
    // By hand: the rank runs [0, 60] then [60, 100] (one after the other, from their issue);
    // the host's 20 ms overlap them; the sync makes the host wait until 100 ms. Everything
    // is host-phase time (the host waited for callbacks): total = host = ~100 ms, not 120.
    // (The track merges the two adjacent spans: one from the first's start to the second's
    // end; had the second not waited for the first, it would end at ~60 ms.)
    let spans = callback_spans(rank);
    let (s0, e1) = (spans[0].0, spans[spans.len() - 1].1);
    assert!(s0 < 5 * MS, "{spans:?}");
    assert!((100 * MS..115 * MS).contains(&(e1 - s0)), "{spans:?}");
    let busy: u64 = spans.iter().map(|(s, e)| e - s).sum();
    assert_eq!(busy, e1 - s0, "back to back: {spans:?}");
    let r = report::report();
    assert_eq!(r.total_ns, e1.max(r.total_ns));
    assert!(r.total_ns - e1 < 5 * MS, "total {} vs {e1}", r.total_ns);
    assert_eq!(r.phases.host_ns, r.total_ns, "{:?}", r.phases);
    assert!((100 * MS..115 * MS).contains(&r.ranks[0].busy.host_ns));
    drop(set);
}

#[test]
fn nonblocking_callbacks_are_on_no_timeline() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    timeline::reset();
    let set = {
        let _c = SdkCall::enter();
        alloc(Some(1), "nrRanks=1,nrDpusPerRank=1").unwrap()
    };
    let rank = set.ranks()[0].id();
    let ran = Arc::new(Mutex::new(Vec::new()));
    let flags = CallbackFlags {
        asynchronous: true,
        nonblocking: true,
        ..Default::default()
    };
    // A 100 ms non-blocking callback; the host works 20 ms, then syncs (which really waits
    // for the callback: inside the SDK call, the emulator's time).
    {
        let _c = SdkCall::enter();
        set.callback(sleeper(100, Arc::clone(&ran)), flags).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    {
        let _c = SdkCall::enter();
        set.sync().unwrap();
    }
    assert_eq!(*ran.lock().unwrap(), [100]);
    // By hand: the callback holds neither the rank (its queue only starts it: 0 ns) nor the
    // host: the run is the host's 20 ms.
    let spans = callback_spans(rank);
    assert!(spans.iter().all(|(s, e)| e - s < MS), "{spans:?}");
    let r = report::report();
    assert!(
        (20 * MS..35 * MS).contains(&r.total_ns),
        "total {:.1} ms, want ~20",
        r.total_ns as f64 / 1e6
    );
    assert_eq!(r.phases.host_ns, r.total_ns);
    assert!(r.ranks[0].busy.host_ns < MS);
    drop(set);
}
