//! The daemon's rank manager (policy, quotas, queue, timeout), its checks of crafted
//! requests on the raw socket, and the protocol decoder on garbage.

use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openpim_daemon::lease::Lease;
use openpim_daemon::manager::{Manager, Tenant};
use openpim_daemon::Config;
use openpim_machine::MachineConfig;
use openpim_runtime::exec::remote::protocol::{
    self, read_frame, write_frame, InlineBufs, Reply, Request, WireItem, WireOp, WriteBufs,
};
use openpim_runtime::exec::remote::ring::{Ring, Waited, RING_SIZE};
use openpim_runtime::exec::remote::staging::{send_with_fd, Region};
use openpim_runtime::exec::{HostPtr, RankOp, XferItem};
use openpim_runtime::machine::MramAddr;
use openpim_runtime::{Error, Place};

/// Rank slots are process-wide: tests that create ranks take turns.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn machine(ranks: u32) -> Arc<MachineConfig> {
    Arc::new(
        MachineConfig::from_profile_string(&format!("nrRanks={ranks},nrDpusPerRank=2")).unwrap(),
    )
}

fn tenant(id: u64, uid: u32) -> Tenant {
    Tenant {
        id,
        uid,
        pid: id as u32,
        program: format!("t{id}"),
    }
}

fn config(timeout_ms: u64) -> Config {
    Config {
        alloc_timeout: Duration::from_millis(timeout_ms),
        reuse: Duration::from_millis(300),
        ..Config::default()
    }
}

fn states(m: &Manager) -> String {
    m.table()
        .iter()
        .map(|r| r.state.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn wait_all_free(m: &Manager) {
    let end = Instant::now() + Duration::from_secs(10);
    while !m.all_free() {
        assert!(
            Instant::now() < end,
            "ranks never came back: {:?}",
            m.table()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn round_robin_reuse_by_the_same_process_and_wipe_for_others() {
    let _g = serial();
    let mc = machine(3);
    let m = Manager::new(config(200), &mc);
    let a = tenant(1, 100);
    let got = m.alloc(&a, Some(1), None, "1 rank", &mc).unwrap();
    assert_eq!(got[0].rank, 0);
    assert_eq!(states(&m), "ALLO NAAV NAAV");
    // Round-robin: the next allocation starts after the last rank given.
    let b = tenant(2, 100);
    assert_eq!(
        m.alloc(&b, Some(1), None, "1 rank", &mc).unwrap()[0].rank,
        1
    );
    // A leaves: its rank waits for it (NANA), and A gets it back without a wipe.
    let served = got[0].lease.resident().unwrap();
    drop(got);
    m.release(1, 0, false);
    assert_eq!(m.table()[0].state, "NANA");
    let again = m.alloc(&a, Some(1), None, "1 rank", &mc).unwrap();
    assert_eq!(again[0].rank, 0);
    assert!(
        Arc::ptr_eq(&again[0].lease.resident().unwrap(), &served),
        "same process: the same rank, unwiped"
    );
    assert_eq!(m.table()[0].wipes, 0);
    drop((again, served));
    // Another process gets a wiped rank: B's next allocation skips A's released rank.
    m.release(1, 0, false);
    let c = tenant(3, 100);
    assert_eq!(
        m.alloc(&c, Some(1), None, "1 rank", &mc).unwrap()[0].rank,
        2
    );
    m.release_all(2);
    m.release_all(3);
    m.release_all(1);
    wait_all_free(&m);
    assert!(m.table().iter().all(|r| r.wipes >= 1 || r.rank == 2));
}

#[test]
fn fifo_queue_timeout_and_quota() {
    let _g = serial();
    let mc = machine(2);
    let m = Manager::new(
        Config {
            default_quota: Some(2),
            quotas: [(7, 1)].into_iter().collect(),
            ..config(3000)
        },
        &mc,
    );
    let holder = tenant(1, 100);
    let held = m.alloc(&holder, None, None, "all ranks", &mc).unwrap();
    assert_eq!(held.len(), 2);
    // Quota: user 7 may hold one rank; asking for two fails at once.
    let t0 = Instant::now();
    let e = m
        .alloc(&tenant(9, 7), Some(2), None, "2 ranks", &mc)
        .err()
        .unwrap();
    assert!(matches!(e, Error::Allocation { .. }), "{e}");
    assert!(e.to_string().contains("quota"), "{e}");
    assert!(t0.elapsed() < Duration::from_millis(500));
    // Two waiters, queued in order; the first one is served first when a rank frees.
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for (k, id) in [(0, 10u64), (1, 11u64)] {
        let (m2, mc2, order2) = (Arc::clone(&m), Arc::clone(&mc), Arc::clone(&order));
        waiters.push(std::thread::spawn(move || {
            let got = m2.alloc(&tenant(id, 200), Some(1), None, "1 rank", &mc2);
            order2.lock().unwrap().push(id);
            if let Ok(got) = got {
                std::thread::sleep(Duration::from_millis(100));
                let rank = got[0].rank;
                drop(got);
                m2.release(id, rank, true);
            }
        }));
        // Make the arrival order certain.
        std::thread::sleep(Duration::from_millis(50 + k * 50));
    }
    drop(held);
    m.release(1, 0, true);
    for w in waiters {
        w.join().unwrap();
    }
    assert_eq!(
        *order.lock().unwrap(),
        vec![10, 11],
        "first come, first served"
    );
    // The timeout, on a fresh manager (the ranks' slots are this process's: give them back).
    m.release_all(1);
    wait_all_free(&m);
    drop(m);
    let m2 = Manager::new(config(300), &mc);
    let all = m2.alloc(&tenant(1, 100), None, None, "all", &mc).unwrap();
    let t0 = Instant::now();
    let e = m2
        .alloc(&tenant(2, 100), Some(1), None, "1 rank", &mc)
        .err()
        .unwrap();
    let waited = t0.elapsed();
    assert!(e.to_string().contains("0.3 s"), "{e}");
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    drop(all);
    m2.release_all(1);
    wait_all_free(&m2);
}

/// Writes `bytes` at MRAM 0 of DPU 0 of a lease's rank, or reads them back.
fn mram_io(m: &Arc<Manager>, lease: &Arc<Lease>, bytes: &mut [u8], write: bool) {
    let active = m.enter(lease).unwrap();
    let items = vec![XferItem {
        dpu: 0,
        place: Place::Mram(MramAddr(0)),
        buf: HostPtr(bytes.as_mut_ptr()),
    }];
    let len = bytes.len();
    let op = if write {
        RankOp::Write { len, items }
    } else {
        RankOp::Read { len, items }
    };
    let (r, _) = active.served.run(op);
    r.unwrap();
}

#[test]
fn oversubscription_suspends_an_idle_tenant_and_resumes_it_bit_identically() {
    let _g = serial();
    let dir = format!("/tmp/openpim-suspend-test-{}", std::process::id());
    let _cleanup = tempdir::Dir(dir.clone());
    let mc = machine(1);
    let (idle, min_run) = (Duration::from_millis(150), Duration::from_millis(300));
    let m = Manager::new(
        Config {
            suspend_dir: Some(dir.clone().into()),
            suspend_idle: idle,
            suspend_min_run: min_run,
            ..config(5000)
        },
        &mc,
    );
    std::fs::create_dir_all(&dir).unwrap();
    // A holds the only rank and leaves data in MRAM.
    let a = m
        .alloc(&tenant(1, 100), Some(1), None, "1 rank", &mc)
        .unwrap();
    let a = Arc::clone(&a[0].lease);
    let mut pattern: Vec<u8> = (0..3 * 4096 + 100).map(|i| (i * 7 % 251) as u8).collect();
    mram_io(&m, &a, &mut pattern, true);
    // B asks while A is idle: it waits no longer than the policy says, gets the slot, A is
    // suspended (SUSP in the pool view, its file in the directory).
    let t0 = Instant::now();
    let b = m
        .alloc(&tenant(2, 100), Some(1), None, "1 rank", &mc)
        .unwrap();
    let waited = t0.elapsed();
    assert!(
        waited < min_run + idle + Duration::from_secs(2),
        "B waited {waited:?}"
    );
    assert_eq!(b[0].rank, 0);
    assert!(a.is_suspended());
    let table = m.table();
    assert_eq!(table.len(), 2, "{table:?}");
    assert_eq!((table[0].state.as_str(), table[0].pid), ("ALLO", Some(2)));
    assert_eq!((table[1].state.as_str(), table[1].pid), ("SUSP", Some(1)));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    assert_eq!(m.suspend_stats().count, 1);
    // B's rank was wiped: it does not see A's data.
    let b = Arc::clone(&b[0].lease);
    let mut seen = vec![0xffu8; pattern.len()];
    mram_io(&m, &b, &mut seen, false);
    assert!(seen.iter().all(|x| *x == 0), "B sees A's data");
    // A uses its rank again: it waits until B has run its minimum and is idle, B is
    // suspended, A comes back with its data.
    let mut back = vec![0u8; pattern.len()];
    mram_io(&m, &a, &mut back, false);
    assert_eq!(back, pattern, "A's MRAM after suspension");
    assert!(!a.is_suspended() && b.is_suspended());
    assert_eq!(m.resume_stats().count, 1);
    assert_eq!(m.suspend_stats().count, 2);
    // Freeing a suspended lease removes its file; the manager ends with every rank free.
    m.free(&b, false);
    m.free(&a, true);
    m.release_all(1);
    m.release_all(2);
    wait_all_free(&m);
    assert_eq!(m.table().len(), 1, "no suspended rank left");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

/// A daemon on a temporary socket, served by this test process.
struct Daemon {
    path: String,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempdir::Dir,
}

mod tempdir {
    pub struct Dir(pub String);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn start_daemon(ranks: u32) -> Daemon {
    let dir = format!("/tmp/openpim-daemon-test-{}", std::process::id());
    let _ = std::fs::create_dir_all(&dir);
    let path = format!("{dir}/d.sock");
    let config = Config {
        socket: path.clone(),
        ranks: Some(ranks),
        alloc_timeout: Duration::from_millis(200),
        ..Config::default()
    };
    let thread = std::thread::spawn(move || openpim_daemon::run(config).unwrap());
    for _ in 0..200 {
        if UnixStream::connect(&path).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Daemon {
        path,
        thread: Some(thread),
        _dir: tempdir::Dir(dir),
    }
}

/// A raw client: frames by hand, no runtime backend.
struct Raw {
    w: UnixStream,
    r: BufReader<UnixStream>,
    id: u64,
}

impl Raw {
    fn connect(d: &Daemon) -> Raw {
        let s = UnixStream::connect(&d.path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut raw = Raw {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
            id: 0,
        };
        let hello = raw.call(&Request::Hello {
            version: protocol::VERSION,
            program: "raw".into(),
        });
        assert!(matches!(hello, Reply::Hello { .. }), "{hello:?}");
        raw
    }

    fn call(&mut self, req: &Request) -> Reply {
        self.send(req, None)
    }

    /// Allocates one rank; its slot.
    fn alloc_one(&mut self) -> u32 {
        match self.call(&Request::Alloc {
            profile: String::new(),
            ranks: Some(1),
            dpus: None,
            what: "1 rank".into(),
        }) {
            Reply::Ranks(r) => r[0].0,
            other => panic!("no rank: {other:?}"),
        }
    }

    /// A request with a descriptor attached (a staging region).
    fn send(&mut self, req: &Request, fd: Option<std::os::fd::RawFd>) -> Reply {
        self.id += 1;
        let mut frame = Vec::new();
        write_frame(&mut frame, self.id, |e| req.encode(e)).unwrap();
        match fd {
            Some(fd) => send_with_fd(&self.w, &frame, fd).unwrap(),
            None => self.w.write_all(&frame).unwrap(),
        }
        self.w.flush().unwrap();
        let (id, body) = read_frame(&mut self.r, usize::MAX).unwrap().unwrap();
        assert_eq!(id, self.id);
        Reply::decode(&body).unwrap()
    }

    fn error(&mut self, req: &Request) -> Error {
        match self.call(req) {
            Reply::Error(w) => w.to_error(),
            Reply::Exec { outcomes, .. } => outcomes[0].result.clone().unwrap_err().to_error(),
            r => panic!("expected an error, got {r:?}"),
        }
    }
}

fn write_op(rank: u32, dpu: u32, addr: u32, len: u32) -> Request {
    Request::Exec {
        ops: vec![(
            rank,
            WireOp::Write {
                len,
                items: vec![WireItem {
                    dpu,
                    place: Place::Mram(MramAddr(addr)),
                    buf: 0,
                }],
                bufs: WriteBufs::Inline(
                    InlineBufs::of(len as usize, [&vec![0xAB; len as usize][..]]).unwrap(),
                ),
            },
        )],
    }
}

fn read_op(rank: u32, addr: u32, len: u32) -> Request {
    Request::Exec {
        ops: vec![(
            rank,
            WireOp::Read {
                len,
                items: vec![WireItem {
                    dpu: 0,
                    place: Place::Mram(MramAddr(addr)),
                    buf: 0,
                }],
                staged: None,
            },
        )],
    }
}

#[test]
fn crafted_requests_on_the_raw_socket_are_refused() {
    let _g = serial();
    let d = start_daemon(2);
    let mut a = Raw::connect(&d);
    let mut b = Raw::connect(&d);
    // Nothing held yet: every rank is refused.
    for rank in [0, 1, 7, u32::MAX] {
        let e = a.error(&write_op(rank, 0, 0, 8));
        assert!(matches!(e, Error::InvalidDpuSet(_)), "{e}");
        assert!(
            e.to_string().contains("not allocated to this program"),
            "{e}"
        );
    }
    let rank_a = a.alloc_one();
    assert!(matches!(
        a.call(&write_op(rank_a, 0, 1 << 20, 8)),
        Reply::Exec { .. }
    ));
    // B cannot read, write, log or free A's rank.
    assert!(matches!(
        b.error(&read_op(rank_a, 1 << 20, 8)),
        Error::InvalidDpuSet(_)
    ));
    assert!(matches!(
        b.error(&write_op(rank_a, 0, 0, 8)),
        Error::InvalidDpuSet(_)
    ));
    assert!(matches!(
        b.error(&Request::Log {
            rank: rank_a,
            dpu: 0
        }),
        Error::InvalidDpuSet(_)
    ));
    assert!(matches!(
        b.call(&Request::Free { rank: rank_a }),
        Reply::Unit
    ));
    let Reply::Exec { outcomes, .. } = a.call(&read_op(rank_a, 1 << 20, 8)) else {
        panic!()
    };
    assert_eq!(
        outcomes[0].data,
        vec![0xAB; 8],
        "B's free did nothing to A's rank"
    );
    // Out of bounds: past MRAM's end, a DPU outside the rank, a buffer index past the list.
    let e = a.error(&write_op(rank_a, 0, (64 << 20) - 4, 8));
    assert!(matches!(e, Error::InvalidMramAccess { .. }), "{e}");
    let e = a.error(&write_op(rank_a, 64, 0, 8));
    assert!(matches!(e, Error::InvalidDpuSet(_)), "{e}");
    let bad_buf = Request::Exec {
        ops: vec![(
            rank_a,
            WireOp::Write {
                len: 8,
                items: vec![WireItem {
                    dpu: 0,
                    place: Place::Mram(MramAddr(0)),
                    buf: 3,
                }],
                bufs: WriteBufs::Inline(InlineBufs::of(8, [&[0u8; 8][..]]).unwrap()),
            },
        )],
    };
    assert!(matches!(a.error(&bad_buf), Error::Internal(_)));
    // Garbage ends B's connection only; A and new tenants are still served.
    b.w.write_all(&[9, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 99])
        .unwrap();
    b.w.flush().unwrap();
    assert!(read_frame(&mut b.r, usize::MAX)
        .map(|f| f.is_none())
        .unwrap_or(true));
    assert!(matches!(
        a.call(&read_op(rank_a, 1 << 20, 8)),
        Reply::Exec { .. }
    ));
    let mut c = Raw::connect(&d);
    let Reply::Ranks(rc) = c.call(&Request::Alloc {
        profile: String::new(),
        ranks: Some(1),
        dpus: None,
        what: "1 rank".into(),
    }) else {
        panic!("no rank for c")
    };
    assert_ne!(rc[0].0, rank_a);
    // A disconnects: its rank is wiped; C, freeing its own and allocating both, reads zeros.
    drop(a);
    assert!(matches!(
        c.call(&Request::Free { rank: rc[0].0 }),
        Reply::Unit
    ));
    std::thread::sleep(Duration::from_millis(400));
    let Reply::Ranks(both) = c.call(&Request::Alloc {
        profile: String::new(),
        ranks: Some(2),
        dpus: None,
        what: "2 ranks".into(),
    }) else {
        panic!("no ranks")
    };
    assert_eq!(both.len(), 2);
    let Reply::Exec { outcomes, .. } = c.call(&read_op(rank_a, 1 << 20, 8)) else {
        panic!()
    };
    assert_eq!(outcomes[0].data, vec![0; 8], "A's data is gone");
    // Give every rank back before the next test makes ranks in this process.
    drop(c);
    let mut d = d;
    let mut probe = Raw::connect(&d);
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let Reply::Pool(table) = probe.call(&Request::Pool) else {
            panic!("no pool")
        };
        if table.iter().all(|r| r.state == "NAAV") {
            break;
        }
        assert!(Instant::now() < end, "ranks not returned: {table:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(probe);
    staging_regions_carry_transfers_and_are_checked(&d);
    in_place_transfers_need_the_probe(&d);
    the_request_ring_serves_and_survives_garbage(&d);
    openpim_daemon::server::request_stop();
    d.thread.take().unwrap().join().unwrap();
}

/// A small deterministic generator (xorshift), so that failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Valid messages of every kind, to mutate.
fn seeds() -> Vec<Vec<u8>> {
    let reqs = [
        Request::Hello {
            version: 1,
            program: "x".into(),
        },
        Request::Alloc {
            profile: "maxCycles=5".into(),
            ranks: Some(1),
            dpus: Some(3),
            what: "3 DPUs".into(),
        },
        write_op(1, 2, 3, 4),
        read_op(0, 8, 16),
        Request::Exec {
            ops: vec![
                (
                    0,
                    WireOp::Load {
                        elf: vec![0x7f, b'E', b'L', b'F'],
                        origin: Some("a".into()),
                        dpus: vec![0, 1],
                    },
                ),
                (1, WireOp::Launch { dpus: vec![3] }),
            ],
        },
        Request::RunStats {
            rank: 0,
            first: 0,
            count: 9,
        },
        Request::Pool,
    ];
    reqs.iter()
        .map(|r| {
            let mut e = protocol::Enc::default();
            r.encode(&mut e);
            e.0
        })
        .collect()
}

/// The decoders never panic, whatever the bytes: random messages, and valid ones with bytes
/// flipped, inserted, removed or cut. `FUZZ_SECONDS` runs it longer (`make fuzz-remote`).
#[test]
fn decoders_never_panic_on_garbage() {
    let seconds: u64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let seeds = seeds();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let start = Instant::now();
    let mut n = 0u64;
    loop {
        let mut msg = if rng.next().is_multiple_of(4) {
            let len = (rng.next() % 64) as usize;
            (0..len).map(|_| rng.next() as u8).collect::<Vec<u8>>()
        } else {
            seeds[(rng.next() % seeds.len() as u64) as usize].clone()
        };
        for _ in 0..(rng.next() % 4) {
            if msg.is_empty() {
                break;
            }
            let at = (rng.next() % msg.len() as u64) as usize;
            match rng.next() % 4 {
                0 => msg[at] = rng.next() as u8,
                1 => msg.insert(at, rng.next() as u8),
                2 => {
                    msg.remove(at);
                }
                _ => msg.truncate(at),
            }
        }
        let _ = Request::decode(&msg);
        let _ = Reply::decode(&msg);
        let mut framed = (msg.len() as u32).to_le_bytes().to_vec();
        framed.extend_from_slice(&msg);
        let _ = read_frame(&mut framed.as_slice(), 1 << 20);
        n += 1;
        if n >= 200_000 && start.elapsed().as_secs() >= seconds {
            break;
        }
    }
    if seconds > 0 {
        eprintln!(
            "fuzzed {n} messages in {:.0} s",
            start.elapsed().as_secs_f64()
        );
    }
}

/// Zero-copy transfers through a staging region on the raw socket: bytes written from the
/// region come back through it; offsets outside the region, a region request without its
/// descriptor, or a file that could shrink under the daemon are refused. (Run by the test
/// above, on its daemon: a process serves one daemon at a time.)
fn staging_regions_carry_transfers_and_are_checked(d: &Daemon) {
    let mut a = Raw::connect(d);
    let rank = a.alloc_one();
    let staged_write = |offset: u64| Request::Exec {
        ops: vec![(
            rank,
            WireOp::Write {
                len: 8,
                items: vec![WireItem {
                    dpu: 1,
                    place: Place::Mram(MramAddr(4096)),
                    buf: 0,
                }],
                bufs: WriteBufs::Staged(vec![offset]),
            },
        )],
    };
    // No region yet: refused, and so is a region request without a descriptor.
    let e = a.error(&staged_write(0));
    assert!(matches!(e, Error::InvalidDpuSet(_)), "{e}");
    let e = a.error(&Request::Staging {
        rank,
        size: 1 << 16,
    });
    assert!(e.to_string().contains("without its memory file"), "{e}");
    // A file that is not sealed against shrinking is refused.
    let exe = std::fs::File::open("/proc/self/exe").unwrap();
    let len = exe.metadata().unwrap().len();
    let reply = a.send(
        &Request::Staging { rank, size: len },
        Some(std::os::fd::AsRawFd::as_raw_fd(&exe)),
    );
    assert!(matches!(reply, Reply::Error(_)), "{reply:?}");
    // A sealed memory file: the write's bytes are read from it, the read's land in it.
    let region = Region::create(1 << 16).unwrap();
    let reply = a.send(
        &Request::Staging {
            rank,
            size: 1 << 16,
        },
        Some(region.fd()),
    );
    assert!(matches!(reply, Reply::Unit), "{reply:?}");
    region.put(512, &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(matches!(a.call(&staged_write(512)), Reply::Exec { .. }));
    let e = a.error(&staged_write((1 << 16) - 4));
    assert!(matches!(e, Error::InvalidDpuSet(_)), "{e}");
    let staged_read = |offset: u64| Request::Exec {
        ops: vec![(
            rank,
            WireOp::Read {
                len: 8,
                items: vec![WireItem {
                    dpu: 1,
                    place: Place::Mram(MramAddr(4096)),
                    buf: 0,
                }],
                staged: Some(offset),
            },
        )],
    };
    let Reply::Exec { outcomes, .. } = a.call(&staged_read(1024)) else {
        panic!("read refused")
    };
    assert!(outcomes[0].result.is_ok() && outcomes[0].data.is_empty());
    let mut got = [0u8; 8];
    region.get(1024, &mut got);
    assert_eq!(got, [1, 2, 3, 4, 5, 6, 7, 8]);
    let e = a.error(&staged_read(u64::MAX - 3));
    assert!(matches!(e, Error::InvalidDpuSet(_)), "{e}");
}

/// In-place transfers on the raw socket: refused before the tenant's probe succeeded (a
/// wrong value fails it); after it, a write's bytes are read from the tenant's buffer and a
/// read's land in the tenant's buffer; a buffer the tenant does not have is an error of the
/// operation. (The raw client is this process, which the daemon's thread may read.)
fn in_place_transfers_need_the_probe(d: &Daemon) {
    let mut a = Raw::connect(d);
    let rank = a.alloc_one();
    let src = [0x5Au8; 64];
    let mut dst = vec![0u8; 64];
    let item = WireItem {
        dpu: 2,
        place: Place::Mram(MramAddr(8192)),
        buf: 0,
    };
    let write = |addr: u64| Request::Exec {
        ops: vec![(
            rank,
            WireOp::Write {
                len: 64,
                items: vec![item],
                bufs: WriteBufs::InPlace(vec![addr]),
            },
        )],
    };
    let read = |addr: u64| Request::Exec {
        ops: vec![(
            rank,
            WireOp::ReadInPlace {
                len: 64,
                items: vec![item],
                addrs: vec![addr],
            },
        )],
    };
    let e = a.error(&write(src.as_ptr() as u64));
    assert!(e.to_string().contains("in-place probe"), "{e}");
    let e = a.error(&read(dst.as_mut_ptr() as u64));
    assert!(e.to_string().contains("in-place probe"), "{e}");
    let value = Box::new(0x1234_5678_9abc_def1u64);
    let addr = &*value as *const u64 as u64;
    let wrong = a.call(&Request::InPlace {
        addr,
        value: *value + 1,
    });
    assert!(matches!(wrong, Reply::Error(_)), "{wrong:?}");
    let right = a.call(&Request::InPlace {
        addr,
        value: *value,
    });
    assert!(matches!(right, Reply::Unit), "{right:?}");
    let Reply::Exec { outcomes, .. } = a.call(&write(src.as_ptr() as u64)) else {
        panic!("write refused")
    };
    assert!(outcomes[0].result.is_ok(), "{outcomes:?}");
    let Reply::Exec { outcomes, .. } = a.call(&read(dst.as_mut_ptr() as u64)) else {
        panic!("read refused")
    };
    assert!(outcomes[0].result.is_ok() && outcomes[0].data.is_empty());
    // SAFETY: the daemon wrote `dst` before replying; read it as memory that changed.
    let got = unsafe { std::ptr::read_volatile(dst.as_ptr() as *const [u8; 64]) };
    assert_eq!(got, [0x5A; 64]);
    // An address with nothing mapped: the operation's error, the connection still served.
    let e = a.error(&read(8));
    assert!(matches!(e, Error::System(_)), "{e}");
    let e = a.error(&write(8));
    assert!(matches!(e, Error::System(_)), "{e}");
    let Reply::Exec { outcomes, .. } = a.call(&read(dst.as_mut_ptr() as u64)) else {
        panic!("read refused")
    };
    assert!(outcomes[0].result.is_ok());
}

/// Makes a request ring and hands it to the daemon on `raw`'s connection (accepted).
fn hand_ring(raw: &mut Raw) -> Ring {
    let ring = Ring::create().unwrap();
    let reply = raw.send(
        &Request::Ring {
            size: RING_SIZE as u64,
        },
        Some(ring.fd()),
    );
    assert!(matches!(reply, Reply::Unit), "{reply:?}");
    ring
}

/// A request through `ring`; its reply (`None`: the connection `raw` is gone).
fn ring_call(raw: &mut Raw, ring: &Ring, req: &Request) -> Option<Reply> {
    raw.id += 1;
    let frame = protocol::frame(raw.id, |e| req.encode(e)).unwrap();
    ring_post(raw, ring, &frame)
}

/// Posts raw bytes as a ring request; the reply (`None`: the daemon closed the connection).
fn ring_post(raw: &mut Raw, ring: &Ring, frame: &[u8]) -> Option<Reply> {
    let seq = ring.post_request(frame);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&raw.w);
    let alive = || {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no waiting.
        unsafe { libc::poll(&mut p, 1, 0) == 0 }
    };
    match ring.wait_reply(seq, Duration::from_millis(20), alive) {
        Waited::Frame(bytes) => {
            let (id, body) = read_frame(&mut &bytes[..], usize::MAX).unwrap().unwrap();
            assert_eq!(id, raw.id);
            Some(Reply::decode(&body).unwrap())
        }
        Waited::OnSocket => {
            let (id, body) = read_frame(&mut raw.r, usize::MAX).unwrap().unwrap();
            assert_eq!(id, raw.id);
            Some(Reply::decode(&body).unwrap())
        }
        Waited::Gone => None,
    }
}

/// The request ring on the raw socket: a ring of the wrong size or without its descriptor is
/// refused; requests through it are served (a reply too large for it comes on the socket),
/// the socket still serves the rest; garbage written into the ring ends that connection
/// only, with its rank released, and the daemon keeps serving the others.
fn the_request_ring_serves_and_survives_garbage(d: &Daemon) {
    let mut a = Raw::connect(d);
    let rank = a.alloc_one();
    let e = a.error(&Request::Ring {
        size: RING_SIZE as u64,
    });
    assert!(e.to_string().contains("without its memory file"), "{e}");
    let wrong = Region::create(1 << 16).unwrap();
    let reply = a.send(&Request::Ring { size: 1 << 16 }, Some(wrong.fd()));
    assert!(matches!(reply, Reply::Error(_)), "{reply:?}");
    let ring = hand_ring(&mut a);
    // A write and a read through the ring; a read too large for it answered on the socket.
    let w = ring_call(&mut a, &ring, &write_op(rank, 0, 1 << 20, 64));
    assert!(matches!(w, Some(Reply::Exec { .. })), "{w:?}");
    let Some(Reply::Exec { outcomes, .. }) = ring_call(&mut a, &ring, &read_op(rank, 1 << 20, 64))
    else {
        panic!("the read through the ring failed")
    };
    assert_eq!(outcomes[0].data, vec![0xAB; 64]);
    let big = 1 << 17;
    let Some(Reply::Exec { outcomes, .. }) = ring_call(&mut a, &ring, &read_op(rank, 0, big))
    else {
        panic!("the large read failed")
    };
    assert_eq!(outcomes[0].data.len(), big as usize);
    // The socket still serves (a raw client does not ring for it: the daemon looks anyway).
    assert!(matches!(
        a.call(&Request::Status { rank }),
        Reply::Status { .. }
    ));
    // A tenant writing garbage into its ring: its connection ends, its rank is released.
    let mut b = Raw::connect(d);
    let b_rank = b.alloc_one();
    let b_ring = hand_ring(&mut b);
    assert!(ring_post(&mut b, &b_ring, &[0xFF; 40]).is_none());
    // The other tenant is still served, and b's rank went back to the manager.
    let w = ring_call(&mut a, &ring, &write_op(rank, 1, 64, 8));
    assert!(matches!(w, Some(Reply::Exec { .. })), "{w:?}");
    let mut c = Raw::connect(d);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.call(&Request::Pool) {
            Reply::Pool(table) if table.iter().any(|r| r.rank == b_rank && r.state != "ALLO") => {
                break
            }
            _ if Instant::now() > deadline => {
                panic!("the garbage writer's rank {b_rank} was not released")
            }
            _ => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}
