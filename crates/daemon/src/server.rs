//! The daemon's socket: tenants connect, are identified by their peer credentials, and send
//! requests ([`openpim_runtime::exec::remote::protocol`]) that are checked against the ranks
//! they hold and the memories' bounds before they run.
//!
//! One thread per connection reads requests. A tenant holding one rank is served on that
//! thread (no hand-off to another thread per request). A tenant holding several has each
//! single-rank request run on that rank's worker thread, so that requests for different
//! ranks run in parallel (`parallel = false` runs everything on the connection's thread); a
//! request on several ranks runs them in parallel on the simulation pool. When a connection ends (the process exits, is killed, or just
//! closes it) its ranks are released and wiped; at shutdown every connection is closed, so
//! tenants get an error instead of waiting.

use std::collections::HashMap;
use std::io::BufReader;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use openpim_machine::map;
use openpim_runtime::exec::local::served::{self, ServedRank, StopCheck};
use openpim_runtime::exec::remote::protocol::{
    self, RankOutcome, Reply, Request, WireError, WireItem, WireOp, WriteBufs,
};
use openpim_runtime::exec::remote::ring::{path_cpu_ns as thread_cpu_ns, Ring};
use openpim_runtime::exec::remote::staging::{FdReader, Region};
use openpim_runtime::exec::remote::tenant_machine;
use openpim_runtime::exec::{HostPtr, OpFacts, RankOp, XferItem};
use openpim_runtime::{Error, Program, Result};

use crate::lease::Lease;
use crate::log;
use crate::manager::{Granted, Manager, Tenant, Usage};
use openpim_runtime::exec::remote::inplace::{self, Target};

/// Set by SIGTERM/SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Asks a running [`serve`] to stop (as SIGTERM does).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the connection on socket `fd` is closed: by the other end, or shut down by the
/// daemon (checked without waiting).
fn hung_up(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout does not block.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// The peer's (uid, pid) from SO_PEERCRED.
fn peer_credentials(s: &UnixStream) -> Option<(u32, u32)> {
    openpim_runtime::exec::remote::peer::credentials(s.as_raw_fd())
}

/// The transfer items of a read whose DPUs' bytes go one after the other from `base`, `len`
/// bytes each.
///
/// # Safety
/// `base` must be valid for writes of `items.len() * len` bytes while the items are used.
unsafe fn read_items(items: &[protocol::WireItem], base: *mut u8, len: usize) -> Vec<XferItem> {
    items
        .iter()
        .enumerate()
        .map(|(k, i)| XferItem {
            dpu: i.dpu,
            place: i.place,
            // SAFETY: k < items.len(), so k * len is inside what the caller vouches for.
            buf: HostPtr(unsafe { base.add(k * len) }),
        })
        .collect()
}

/// The program a pid runs (its command name), for the rank table.
fn program_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Runs the daemon on `listener` until SIGTERM/SIGINT or [`request_stop`].
pub fn serve(listener: UnixListener, manager: Arc<Manager>) -> Result<()> {
    // SAFETY: installing a handler that only stores to an atomic is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::System(format!("cannot poll the daemon's socket: {e}")))?;
    let conns: Arc<Mutex<HashMap<u64, UnixStream>>> = Arc::default();
    let mut next_id = 1u64;
    let metrics_every = Duration::from_secs(1);
    let mut last_metrics = Instant::now() - metrics_every;
    while !STOP.load(Ordering::SeqCst) {
        if let Some(path) = &manager.config().metrics_file {
            if last_metrics.elapsed() >= metrics_every {
                crate::metrics::write_file(path, &manager);
                last_metrics = Instant::now();
            }
        }
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                let Some((uid, pid)) = peer_credentials(&stream) else {
                    log!("refused a connection: no peer credentials");
                    continue;
                };
                if let Some(allow) = &manager.config().allow_uids {
                    if !allow.contains(&uid) {
                        log!("refused pid {pid}: uid {uid} is not in allow_uids");
                        continue;
                    }
                }
                let tenant = Tenant {
                    id: next_id,
                    uid,
                    pid,
                    program: program_of(pid),
                };
                next_id += 1;
                // A pidfd of the tenant now, while the connection is fresh (in-place
                // transfers check it before each access).
                let peer = Target::of_peer(stream.as_raw_fd(), pid, inplace::DAEMON);
                if let Ok(c) = stream.try_clone() {
                    lock(&conns).insert(tenant.id, c);
                }
                let (m, cs) = (Arc::clone(&manager), Arc::clone(&conns));
                let spawned = std::thread::Builder::new()
                    .name(format!("openpim-tenant-{}", tenant.id))
                    .spawn(move || {
                        let id = tenant.id;
                        Connection::new(tenant, m, peer).run(stream);
                        lock(&cs).remove(&id);
                    });
                if let Err(e) = spawned {
                    log!("cannot serve a connection: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => log!("accept failed: {e}"),
        }
    }
    log!(
        "stopping: closing {} tenant connections",
        lock(&conns).len()
    );
    manager.close();
    for c in lock(&conns).values() {
        let _ = c.shutdown(std::net::Shutdown::Both);
    }
    // Let the connections release their ranks.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !lock(&conns).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The connection's sending side: each reply is one buffer written with one system call
/// (no buffering layer: nothing to copy into it, nothing to flush).
type Writer = Arc<Mutex<UnixStream>>;

/// A rank this connection holds (resident or, oversubscribed, suspended: its lease knows).
struct Held {
    lease: Arc<Lease>,
    nr_dpus: u32,
    /// The rank's worker (parallel handling).
    worker: Option<mpsc::Sender<Job>>,
    /// The rank's staging region, once the tenant sent one (zero-copy transfers).
    staging: Option<Arc<Region>>,
}

/// One tenant's connection.
struct Connection {
    tenant: Tenant,
    manager: Arc<Manager>,
    held: HashMap<u32, Held>,
    /// The tenant's process as in-place transfers reach it (a pidfd of it; `None` where the
    /// kernel gives none: no in-place transfers).
    peer: Option<Arc<Target>>,
    /// The tenant's process once its in-place probe succeeded ([`inplace`]): its
    /// transfers may name buffers in its memory.
    in_place: Option<Arc<Target>>,
    /// True once the tenant is gone (or the daemon stops): its launches stop there.
    gone: StopCheck,
    /// The connection thread's CPU clock when its last counted stretch ended (after an
    /// operation's simulation, or after a request that is not an operation's).
    mark: u64,
    /// Remote-path CPU time measured but not reported yet (requests that are not an
    /// operation's, and the reply before them).
    carry: u64,
    /// The tenant's request ring, once it sent one ([`openpim_runtime::exec::remote::ring`]).
    ring: Option<Arc<Ring>>,
}

/// Where a request came from, and so where its reply goes.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Socket,
    /// The ring, with the request's sequence number.
    Ring(u32),
}

/// What the connection thread serves next.
enum Next {
    /// A frame is to be read on the socket.
    Socket,
    /// The ring's request (id and body), or why it is malformed.
    Ring(std::result::Result<(u64, Vec<u8>), String>),
}

/// How long the connection thread sleeps on the ring's doorbell before it looks at the
/// socket anyway (a tenant that died rings nothing; a daemon that stops shuts the socket):
/// from the first to the last, doubling while nothing comes, so that an idle tenant costs a
/// wake-up a second at most (each one's CPU time is the next operation's cost, as the
/// sleeping it ends) and a dead one is noticed within a second.
const BELL_TIMEOUT_FIRST: Duration = Duration::from_millis(50);
const BELL_TIMEOUT_LAST: Duration = Duration::from_secs(1);

/// Whether the socket has bytes or an end to read (without waiting).
fn readable(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd; a zero timeout does not block.
    unsafe { libc::poll(&mut p, 1, 0) > 0 }
}

/// Sends a reply. `spent_ns`: for a reply made on a rank's worker, the CPU time the
/// request cost the connection's thread, to which [`protocol::write_reply`] adds the
/// encoding's; `None` for a reply whose `ipc_ns` is set already (or has none).
fn send(w: &Writer, id: u64, reply: &Reply, spent_ns: Option<u64>) {
    let mut w = lock(w);
    let _ = match spent_ns {
        Some(spent) => protocol::write_reply(&mut *w, id, reply, spent),
        None => protocol::write_frame(&mut *w, id, |e| reply.encode(e)),
    };
}

/// Sends a reply where its request came from: on the socket, or in the ring (`ring`: the
/// ring and the request's sequence number), where a reply too large for it goes on the
/// socket and the ring says so. `spent_ns` as for [`send`].
///
/// A failed operation's reply is not put in the ring once the connection is closed: a launch
/// stopped because the tenant is gone or the daemon stops ends with the engine's `Stopped`
/// fault, which is no program's (a tenant still waiting reads the closed socket instead, as
/// it would on the socket).
fn answer(
    w: &Writer,
    ring: Option<(&Ring, u32)>,
    gone: &StopCheck,
    id: u64,
    reply: &Reply,
    spent_ns: Option<u64>,
) {
    let Some((ring, seq)) = ring else {
        return send(w, id, reply, spent_ns);
    };
    let failed = match reply {
        Reply::Exec { outcomes, .. } => outcomes.iter().any(|o| o.result.is_err()),
        Reply::Error(_) => true,
        _ => false,
    };
    if failed && gone() {
        return;
    }
    let mut frame = Vec::new();
    let made = match spent_ns {
        Some(spent) => protocol::write_reply(&mut frame, id, reply, spent),
        None => protocol::write_frame(&mut frame, id, |e| reply.encode(e)),
    };
    if made.is_err() || !ring.post_reply(seq, &frame) {
        send(w, id, reply, spent_ns);
        ring.replied_on_socket(seq);
    }
}

fn error_reply(e: &Error) -> Reply {
    Reply::Error(WireError::from_error(e))
}

impl Connection {
    fn new(tenant: Tenant, manager: Arc<Manager>, peer: Option<Target>) -> Connection {
        Connection {
            tenant,
            manager,
            held: HashMap::new(),
            peer: peer.map(Arc::new),
            in_place: None,
            gone: Arc::new(|| false),
            mark: 0,
            carry: 0,
            ring: None,
        }
    }

    fn run(mut self, stream: UnixStream) {
        let t = &self.tenant;
        log!(
            "tenant {} connected: uid {}, pid {}, {}",
            t.id,
            t.uid,
            t.pid,
            t.program
        );
        let writer: Writer = match stream.try_clone() {
            Ok(s) => Arc::new(Mutex::new(s)),
            Err(_) => return,
        };
        // A launch running for this tenant stops within a few milliseconds of simulation
        // once its end of the connection is closed (it exited, or was killed): the rank is
        // then wiped and given to the next tenant instead of finishing a launch nobody
        // waits for. So does one running when the daemon stops, which shuts the connection
        // down first (the tenant then reads the end of the connection, not a fault). The
        // check holds its own descriptor of the socket (a worker may still be running a
        // launch when this thread has closed its own).
        if let Ok(s) = stream.try_clone() {
            let fd = OwnedFd::from(s);
            self.gone = Arc::new(move || hung_up(&fd));
        }
        let poll_fd = stream.try_clone().ok().map(OwnedFd::from);
        let mut reader = BufReader::new(FdReader::new(stream));
        let mut hello = false;
        // The ring's last request taken, and the socket messages read (for the tenant's
        // count of those it sent).
        let mut ring_last = 0u32;
        let mut socket_read = 0u32;
        self.mark = thread_cpu_ns();
        let why = loop {
            let mut timeout = BELL_TIMEOUT_FIRST;
            let next = match &self.ring {
                None => Next::Socket,
                Some(ring) => loop {
                    let bell = ring.bell();
                    if !reader.buffer().is_empty() || ring.socket_pending(socket_read) {
                        break Next::Socket;
                    }
                    if let Some(taken) = ring.take_request(&mut ring_last) {
                        break Next::Ring(taken);
                    }
                    ring.wait_bell(bell, timeout);
                    if ring.bell() == bell {
                        if poll_fd.as_ref().is_none_or(readable) {
                            break Next::Socket;
                        }
                        timeout = (timeout * 2).min(BELL_TIMEOUT_LAST);
                    }
                },
            };
            let (id, body, via) = match next {
                Next::Socket => match protocol::read_frame(&mut reader, protocol::MAX_FRAME) {
                    Ok(Some((id, body))) => {
                        socket_read = socket_read.wrapping_add(1);
                        (id, body, Via::Socket)
                    }
                    Ok(None) => break "disconnected".to_string(),
                    Err(e) => break format!("connection error: {e}"),
                },
                Next::Ring(Ok((id, body))) => (id, body, Via::Ring(ring_last)),
                Next::Ring(Err(why)) => break format!("malformed request: {why}"),
            };
            let req = match Request::decode(&body) {
                Ok(r) => r,
                Err(e) => break format!("malformed request: {e}"),
            };
            if !hello {
                match req {
                    Request::Hello { version, .. } if version == protocol::VERSION => {
                        hello = true;
                        send(
                            &writer,
                            id,
                            &Reply::Hello {
                                machine: self.manager.config().machine_keys(),
                            },
                            None,
                        );
                        self.mark = thread_cpu_ns();
                        continue;
                    }
                    Request::Hello { version, .. } => {
                        let e = Error::System(format!(
                            "the daemon speaks protocol {} and this program's libdpu {version}: use the same OpenPIM build for both",
                            protocol::VERSION
                        ));
                        send(&writer, id, &error_reply(&e), None);
                        break "protocol version mismatch".into();
                    }
                    _ => break "first request was not a hello".into(),
                }
            }
            // A staging region's or the ring's descriptor came with its request's bytes.
            let fd = match (&req, via) {
                (Request::Staging { .. } | Request::Ring { .. }, Via::Socket) => {
                    reader.get_mut().take_fd()
                }
                _ => None,
            };
            // A new ring counts the tenant's socket messages from zero.
            let new_ring = matches!(req, Request::Ring { .. });
            self.handle(id, req, fd, &writer, via);
            if new_ring {
                socket_read = 0;
                ring_last = 0;
            }
        };
        // A tenant thread sleeping in the ring for a reply that will not come wakes and
        // finds the connection closed.
        if let (Some(ring), Some(fd)) = (&self.ring, &poll_fd) {
            // SAFETY: shuts down this connection's socket (an open descriptor of it).
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
            ring.wake_tenant();
        }
        let held: Vec<u32> = self.held.keys().copied().collect();
        // Workers end when their channel closes; the ranks go back to the manager (a
        // suspended one's file is removed).
        for (_, h) in self.held.drain() {
            self.manager.free(&h.lease, true);
        }
        self.manager.release_all(self.tenant.id);
        log!(
            "tenant {} (pid {}) gone ({why}); released ranks {:?}",
            self.tenant.id,
            self.tenant.pid,
            held
        );
    }

    fn handle(
        &mut self,
        id: u64,
        req: Request,
        fd: Option<std::os::fd::OwnedFd>,
        writer: &Writer,
        via: Via,
    ) {
        // The remote path's cost, as the daemon reports it: its CPU time on this thread
        // outside the DPU simulation (receiving and decoding requests, checking them,
        // encoding and sending replies), one clock pair per operation: the clock is read
        // before and after each operation's simulation, and the stretch between two
        // operations (the previous reply, this request) is reported with the second.
        // Requests that are not an operation's (allocation, logs, statistics, the rank
        // table) are measured apart and not counted, only the stretch before them is.
        let counted = matches!(
            req,
            Request::Exec { .. }
                | Request::Queue { .. }
                | Request::Staging { .. }
                | Request::InPlace { .. }
        );
        if !counted {
            let now = thread_cpu_ns();
            self.carry += now.saturating_sub(self.mark);
        }
        let reply = match req {
            Request::Hello { .. } => Reply::Hello {
                machine: self.manager.config().machine_keys(),
            },
            Request::Alloc {
                profile,
                ranks,
                dpus,
                what,
            } => match self.alloc(&profile, ranks, dpus, &what, writer) {
                Ok(r) => Reply::Ranks(r),
                Err(e) => error_reply(&e),
            },
            Request::Free { rank } => {
                if let Some(h) = self.held.remove(&rank) {
                    self.manager.free(&h.lease, false);
                    log!("tenant {} freed rank {rank}", self.tenant.id);
                }
                Reply::Unit
            }
            Request::Exec { ops } => {
                if let Err(e) = self.check_exec(&ops) {
                    error_reply(&e)
                } else if ops.len() == 1 && self.on_worker(ops[0].0) {
                    let (rank, op) = ops.into_iter().next().expect("one op");
                    match self.hand_to_worker(id, rank, vec![op], via) {
                        None => return,
                        Some(reply) => reply,
                    }
                } else {
                    // One rank (or a request on several): served here, without handing
                    // the request to another thread.
                    let now = thread_cpu_ns();
                    let ipc = std::mem::take(&mut self.carry) + now.saturating_sub(self.mark);
                    let reply = self.exec_here(ops, ipc);
                    self.mark = thread_cpu_ns();
                    reply
                }
            }
            Request::Queue { rank, ops } => {
                let checked = self
                    .held
                    .get(&rank)
                    .ok_or_else(|| not_held(rank))
                    .and_then(|h| {
                        ops.iter().try_for_each(|op| {
                            check_op(op, h.nr_dpus, h.staging.as_deref(), self.in_place.is_some())
                        })
                    });
                if let Err(e) = checked {
                    error_reply(&e)
                } else if self.on_worker(rank) {
                    match self.hand_to_worker(id, rank, ops, via) {
                        None => return,
                        Some(reply) => reply,
                    }
                } else {
                    let now = thread_cpu_ns();
                    let ipc = std::mem::take(&mut self.carry) + now.saturating_sub(self.mark);
                    let start = Instant::now();
                    let h = &self.held[&rank];
                    let outcomes = run_in_order(
                        &self.manager,
                        &h.lease,
                        h.staging.as_deref(),
                        self.in_place.as_deref(),
                        &self.gone,
                        ops,
                    );
                    let reply = Reply::Exec {
                        ipc_ns: ipc,
                        emu_ns: start.elapsed().as_nanos() as u64,
                        outcomes,
                    };
                    self.mark = thread_cpu_ns();
                    reply
                }
            }
            Request::Status { rank } => match self.enter(rank) {
                Ok(a) => Reply::Status {
                    faulted: a.served.faulted(),
                },
                Err(e) => error_reply(&e),
            },
            Request::Log { rank, dpu } => match self.enter(rank) {
                Ok(a) => match a.served.log(dpu) {
                    Ok(bytes) => Reply::Bytes(bytes),
                    Err(e) => error_reply(&e),
                },
                Err(e) => error_reply(&e),
            },
            Request::RunStats { rank, first, count } => match self.enter(rank) {
                Ok(a) => Reply::Stats(a.served.run_stats(first, count)),
                Err(e) => error_reply(&e),
            },
            Request::Pool => Reply::Pool(self.manager.table()),
            Request::Staging { rank, size } => match self.staging(rank, size, fd) {
                Ok(()) => Reply::Unit,
                Err(e) => error_reply(&e),
            },
            Request::InPlace { addr, value } => {
                let probed = match &self.peer {
                    Some(peer) => inplace::probe(peer, addr, value),
                    None => Err(Error::System(
                        "in-place transfers need a pidfd of the program, which this kernel does not give (Linux 5.3 or later); transfers use the staging region".into(),
                    )),
                };
                match probed {
                    Ok(()) => {
                        self.in_place = self.peer.clone();
                        Reply::Unit
                    }
                    Err(e) => error_reply(&e),
                }
            }
            Request::Ring { size } => match fd {
                Some(fd) => match Ring::accept(fd, size) {
                    Ok(ring) => {
                        self.ring = Some(Arc::new(ring));
                        Reply::Unit
                    }
                    Err(e) => error_reply(&e),
                },
                None => error_reply(&Error::InvalidDpuSet(
                    "a ring request came without its memory file's descriptor".into(),
                )),
            },
        };
        let ring = match (via, &self.ring) {
            (Via::Ring(seq), Some(ring)) => Some((&**ring, seq)),
            _ => None,
        };
        answer(writer, ring, &self.gone, id, &reply, None);
        if !counted {
            self.mark = thread_cpu_ns();
        }
    }

    /// Whether a (checked) request on `rank` alone runs on the rank's worker: a tenant with
    /// several ranks has each rank's requests run there, so that its ranks run in parallel.
    fn on_worker(&self, rank: u32) -> bool {
        self.held.len() > 1 && self.held.get(&rank).is_some_and(|h| h.worker.is_some())
    }

    /// Hands a request's operations on `rank` to the rank's worker, which replies; `None`
    /// once handed, else the reply to send (the worker is gone).
    fn hand_to_worker(&mut self, id: u64, rank: u32, ops: Vec<WireOp>, via: Via) -> Option<Reply> {
        let now = thread_cpu_ns();
        let spent = std::mem::take(&mut self.carry) + now.saturating_sub(self.mark);
        self.mark = now;
        let h = &self.held[&rank];
        let w = h.worker.as_ref()?;
        // The region checked is the one the operations use, whatever the tenant sends next.
        let ring = match (via, &self.ring) {
            (Via::Ring(seq), Some(ring)) => Some((Arc::clone(ring), seq)),
            _ => None,
        };
        match w.send((
            id,
            ops,
            spent,
            h.staging.clone(),
            self.in_place.clone(),
            ring,
        )) {
            Ok(()) => None,
            Err(_) => Some(error_reply(&Error::Internal(
                "the rank's worker is gone".into(),
            ))),
        }
    }

    /// Starts an operation on a rank this tenant holds (resuming it if it was suspended).
    fn enter(&self, rank: u32) -> Result<crate::lease::Active> {
        let h = self.held.get(&rank).ok_or_else(|| not_held(rank))?;
        self.manager.enter(&h.lease)
    }

    fn alloc(
        &mut self,
        profile: &str,
        ranks: Option<u32>,
        dpus: Option<u32>,
        what: &str,
        writer: &Writer,
    ) -> Result<Vec<(u32, u32)>> {
        let machine = Arc::new(tenant_machine(
            profile,
            &self.manager.config().machine_keys(),
        )?);
        let ranks = match ranks {
            Some(n) if n == 0 || n > machine.nr_ranks => {
                return Err(Error::Allocation {
                    requested: what.into(),
                    reason: format!("the machine has {} ranks", machine.nr_ranks),
                })
            }
            Some(n) => Some(n),
            None => None,
        };
        if let Some(d) = dpus {
            let max = u64::from(ranks.unwrap_or(0)) * u64::from(machine.dpus_per_rank);
            if d == 0 || u64::from(d) > max {
                return Err(Error::Allocation {
                    requested: what.into(),
                    reason: format!("{d} DPUs do not fit the ranks asked for"),
                });
            }
        }
        let granted = self
            .manager
            .alloc(&self.tenant, ranks, dpus, what, &machine)?;
        let mut out = Vec::new();
        for Granted {
            rank,
            nr_dpus,
            lease,
        } in granted
        {
            out.push((rank, nr_dpus));
            let worker = if self.manager.config().parallel {
                Some(spawn_worker(
                    rank,
                    Arc::clone(&lease),
                    Arc::clone(&self.manager),
                    Arc::clone(writer),
                    Arc::clone(&self.gone),
                ))
            } else {
                None
            };
            self.held.insert(
                rank,
                Held {
                    lease,
                    nr_dpus,
                    worker,
                    staging: None,
                },
            );
        }
        log!(
            "tenant {} (pid {}) allocated ranks {:?}",
            self.tenant.id,
            self.tenant.pid,
            out.iter().map(|(r, _)| *r).collect::<Vec<_>>()
        );
        Ok(out)
    }

    /// Maps the staging region a tenant sent for one of its ranks.
    fn staging(&mut self, rank: u32, size: u64, fd: Option<std::os::fd::OwnedFd>) -> Result<()> {
        let h = self.held.get_mut(&rank).ok_or_else(|| not_held(rank))?;
        let fd = fd.ok_or_else(|| {
            Error::InvalidDpuSet(
                "a staging request came without its memory file's descriptor".into(),
            )
        })?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        h.staging = Some(Arc::new(Region::accept(fd, size)?));
        Ok(())
    }

    /// Every operation on a rank this tenant holds, once per rank, inside the rank's DPUs
    /// and memories.
    fn check_exec(&self, ops: &[(u32, WireOp)]) -> Result<()> {
        let mut seen = Vec::new();
        for (rank, op) in ops {
            let h = self.held.get(rank).ok_or_else(|| not_held(*rank))?;
            if seen.contains(rank) {
                return Err(Error::InvalidDpuSet(format!(
                    "rank {rank} appears twice in one request"
                )));
            }
            seen.push(*rank);
            check_op(op, h.nr_dpus, h.staging.as_deref(), self.in_place.is_some())?;
        }
        Ok(())
    }

    /// Runs a request's operations on this thread (a request on several ranks: in parallel
    /// on the simulation pool); `ipc_ns` is the remote path's cost the reply reports.
    fn exec_here(&self, ops: Vec<(u32, WireOp)>, ipc_ns: u64) -> Reply {
        let start = Instant::now();
        // Every rank resident (resumed if need be) before any runs.
        let work: Vec<(Result<crate::lease::Active>, &Held, WireOp)> = ops
            .into_iter()
            .map(|(r, op)| (self.enter(r), &self.held[&r], op))
            .collect();
        let run = |(active, h, op): (Result<crate::lease::Active>, &Held, WireOp)| match active {
            Ok(a) => Rank {
                served: &a.served,
                usage: &h.lease.usage,
                staging: h.staging.as_deref(),
                target: self.in_place.as_deref(),
                gone: &self.gone,
            }
            .run(op),
            Err(e) => failed(&e),
        };
        let outcomes: Vec<RankOutcome> = if work.len() > 1 {
            let n = work.len();
            served::par_map(work, run).unwrap_or_else(|e| (0..n).map(|_| failed(&e)).collect())
        } else {
            work.into_iter().map(run).collect()
        };
        Reply::Exec {
            ipc_ns,
            emu_ns: start.elapsed().as_nanos() as u64,
            outcomes,
        }
    }
}

fn failed(e: &Error) -> RankOutcome {
    RankOutcome {
        result: Err(WireError::from_error(e)),
        facts: OpFacts::default(),
        data: Vec::new(),
    }
}

fn not_held(rank: u32) -> Error {
    Error::InvalidDpuSet(format!(
        "rank {rank} is not allocated to this program (the daemon refuses requests on ranks a program does not hold)"
    ))
}

/// Checks one operation against the rank's DPUs, the memories' sizes, the rank's staging
/// region and whether the tenant's buffers may be named in place.
fn check_op(op: &WireOp, nr_dpus: u32, staging: Option<&Region>, in_place: bool) -> Result<()> {
    let dpu_ok = |d: u32| {
        if d < nr_dpus {
            Ok(())
        } else {
            Err(Error::InvalidDpuSet(format!(
                "DPU {d} is outside the rank's {nr_dpus} DPUs"
            )))
        }
    };
    let items_ok = |len: u32, items: &[WireItem], nbufs: Option<usize>| -> Result<()> {
        for i in items {
            dpu_ok(i.dpu)?;
            check_place(i.place, len)?;
            if let Some(n) = nbufs {
                if i.buf as usize >= n {
                    return Err(Error::Internal(format!(
                        "transfer item names buffer {} of {n}",
                        i.buf
                    )));
                }
            }
        }
        Ok(())
    };
    // `n` buffers of `len` bytes from `offset` inside the staging region.
    let staged_ok = |offset: u64, len: u64| -> Result<()> {
        match staging.and_then(|r| r.at(offset, len)) {
            Some(_) => Ok(()),
            None => Err(Error::InvalidDpuSet(format!(
                "{len} bytes at offset {offset} are outside the rank's staging region ({} bytes)",
                staging.map_or(0, Region::len)
            ))),
        }
    };
    let in_place_ok = || {
        if in_place {
            Ok(())
        } else {
            Err(Error::InvalidDpuSet(
                "an in-place transfer from a program whose in-place probe did not succeed".into(),
            ))
        }
    };
    match op {
        WireOp::Batch(ops) => ops
            .iter()
            .try_for_each(|op| check_op(op, nr_dpus, staging, in_place)),
        WireOp::Load { dpus, .. } | WireOp::Launch { dpus } => {
            dpus.iter().try_for_each(|d| dpu_ok(*d))
        }
        WireOp::Write { len, items, bufs } => {
            items_ok(*len, items, Some(bufs.count()))?;
            match bufs {
                WriteBufs::Inline(bufs) => {
                    if bufs.len_each() != *len as usize {
                        return Err(Error::Internal(format!(
                            "transfer buffer of {} bytes for a transfer of {len}",
                            bufs.len_each()
                        )));
                    }
                }
                WriteBufs::Staged(offsets) => offsets
                    .iter()
                    .try_for_each(|o| staged_ok(*o, u64::from(*len)))?,
                WriteBufs::InPlace(_) => in_place_ok()?,
                WriteBufs::Shared(_) => {
                    return Err(Error::Internal(
                        "shared buffers are sent to MPI workers, not to a daemon".into(),
                    ))
                }
            }
            Ok(())
        }
        WireOp::ReadInPlace { len, items, addrs } => {
            in_place_ok()?;
            items_ok(*len, items, None)?;
            if addrs.len() != items.len() {
                return Err(Error::Internal(format!(
                    "an in-place read of {} items names {} buffers",
                    items.len(),
                    addrs.len()
                )));
            }
            Ok(())
        }
        WireOp::Read { len, items, staged } => {
            items_ok(*len, items, None)?;
            let total = u64::from(*len) * items.len() as u64;
            if let Some(offset) = staged {
                staged_ok(*offset, total)?;
            } else if total > protocol::MAX_FRAME as u64 {
                return Err(Error::InvalidDpuSet(format!(
                    "a read of {total} bytes in one request is more than the daemon's limit of {} bytes",
                    protocol::MAX_FRAME
                )));
            }
            Ok(())
        }
    }
}

/// A place and a length inside the memory (what `xfer::check_access` made sure of in the
/// tenant; a crafted request is checked again here).
fn check_place(place: openpim_runtime::Place, len: u32) -> Result<()> {
    use openpim_runtime::Place;
    let (addr, size, what) = match place {
        Place::Wram(a) => (a.0, map::WRAM_SIZE, "WRAM"),
        Place::Mram(a) => (a.0, map::MRAM_SIZE, "MRAM"),
        Place::Iram(a) => (a.0, map::IRAM_SIZE, "IRAM"),
    };
    if u64::from(addr) + u64::from(len) > u64::from(size) {
        let reason = format!("outside the {size} bytes of {what}");
        let (address, len) = (u64::from(addr), u64::from(len));
        return Err(match place {
            Place::Wram(_) => Error::InvalidWramAccess {
                address,
                len,
                reason,
            },
            Place::Mram(_) => Error::InvalidMramAccess {
                address,
                len,
                reason,
            },
            Place::Iram(_) => Error::InvalidIramAccess {
                address,
                len,
                reason,
            },
        });
    }
    Ok(())
}

/// The tenant's process for an in-place transfer (checked: the probe succeeded).
fn in_place_target(t: Option<&Target>) -> Result<&Target> {
    t.ok_or_else(|| Error::Internal("an in-place transfer without a successful probe".into()))
}

/// A held rank as an operation runs on it.
struct Rank<'a> {
    served: &'a ServedRank,
    usage: &'a Usage,
    staging: Option<&'a Region>,
    /// The tenant's process, when its buffers may be named in place.
    target: Option<&'a Target>,
    /// Whether the tenant is gone (its launches stop).
    gone: &'a StopCheck,
}

impl Rank<'_> {
    /// Runs one checked operation.
    fn run(&self, op: WireOp) -> RankOutcome {
        let Rank { served, usage, .. } = *self;
        let t = Instant::now();
        // A batch's operations count their own time.
        let batch = matches!(op, WireOp::Batch(_));
        let mut data = Vec::new();
        let (result, facts) = match op {
            WireOp::Batch(ops) => {
                // In order; the first error stops the batch (the tenant reports it). The
                // outcome is the last operation's (the one the batch rode along with).
                let mut facts = OpFacts::default();
                let mut result = Ok(());
                for op in ops {
                    let o = self.run(op);
                    // A faulting launch's statistics go back with its error.
                    facts = o.facts;
                    data = o.data;
                    if let Err(e) = o.result {
                        result = Err(e.to_error());
                        break;
                    }
                }
                (result, facts)
            }
            WireOp::Load { elf, origin, dpus } => match Program::parse(origin, &elf) {
                Ok(p) => served.run(RankOp::Load {
                    program: Arc::new(p),
                    dpus,
                }),
                Err(e) => (Err(e), OpFacts::default()),
            },
            WireOp::Write {
                len,
                items,
                mut bufs,
            } => {
                // In-place buffers are read from the tenant's memory first (the daemon's
                // memory work, as the in-process backend reads the program's buffers).
                let mut fetched: Vec<u8> = Vec::new();
                if let WriteBufs::InPlace(addrs) = &bufs {
                    let n = len as usize;
                    fetched = vec![0u8; n * addrs.len()];
                    let mut parts: Vec<(u64, &mut [u8])> = addrs
                        .iter()
                        .copied()
                        .zip(fetched.chunks_mut(n.max(1)))
                        .collect();
                    if let Err(e) =
                        in_place_target(self.target).and_then(|t| inplace::read(t, &mut parts))
                    {
                        return failed(&e);
                    }
                }
                let ptrs: Vec<*mut u8> = match &mut bufs {
                    WriteBufs::Inline(b) => b.ptrs(),
                    WriteBufs::InPlace(addrs) => (0..addrs.len())
                        // SAFETY: k * len is inside `fetched` (addrs.len() * len bytes).
                        .map(|k| unsafe { fetched.as_mut_ptr().add(k * len as usize) })
                        .collect(),
                    // (Refused by `check_op`.)
                    WriteBufs::Shared(_) => Vec::new(),
                    // Checked inside the region (`check_op`), which this operation holds.
                    WriteBufs::Staged(offsets) => offsets
                        .iter()
                        .map(|o| {
                            self.staging
                                .and_then(|r| r.at(*o, u64::from(len)))
                                .expect("checked")
                        })
                        .collect(),
                };
                let items = items.iter().map(|i| i.to_xfer(&ptrs)).collect::<Vec<_>>();
                usage
                    .bytes
                    .fetch_add(u64::from(len) * items.len() as u64, Ordering::Relaxed);
                // The buffers live (in `bufs`) until the operation has run.
                let r = served.run(RankOp::Write {
                    len: len as usize,
                    items,
                });
                drop(bufs);
                drop(fetched);
                r
            }
            WireOp::Read { len, items, staged } => {
                let len = len as usize;
                let total = (len * items.len()) as u64;
                let base = match staged.and_then(|o| self.staging?.at(o, total)) {
                    Some(p) => p,
                    None => {
                        data = vec![0u8; len * items.len()];
                        data.as_mut_ptr()
                    }
                };
                // SAFETY: `data` or the region's checked part has items.len() * len bytes.
                let items = unsafe { read_items(&items, base, len) };
                usage
                    .bytes
                    .fetch_add((len * items.len()) as u64, Ordering::Relaxed);
                served.run(RankOp::Read { len, items })
            }
            WireOp::ReadInPlace { len, items, addrs } => {
                let len = len as usize;
                let mut buf = vec![0u8; len * items.len()];
                let base = buf.as_mut_ptr();
                // SAFETY: `buf` has items.len() * len bytes.
                let xfer = unsafe { read_items(&items, base, len) };
                usage
                    .bytes
                    .fetch_add((len * items.len()) as u64, Ordering::Relaxed);
                let (r, f) = served.run(RankOp::Read { len, items: xfer });
                let r = r.and_then(|()| {
                    let parts: Vec<(u64, &[u8])> =
                        addrs.iter().copied().zip(buf.chunks(len.max(1))).collect();
                    in_place_target(self.target).and_then(|t| inplace::write(t, &parts))
                });
                (r, f)
            }
            WireOp::Launch { dpus } => {
                usage.launches.fetch_add(1, Ordering::Relaxed);
                let programs = served.programs(0, served.nr_dpus());
                let mut with = Vec::with_capacity(dpus.len());
                let mut missing = None;
                for d in dpus {
                    match programs.get(d as usize).cloned().flatten() {
                        Some(p) => with.push((d, p)),
                        None => missing = missing.or(Some(d)),
                    }
                }
                match missing {
                    Some(d) => (
                        Err(Error::NoProgramLoaded(format!("DPU {d} of the rank"))),
                        OpFacts::default(),
                    ),
                    None => {
                        served.run_stoppable(RankOp::Launch { dpus: with }, Arc::clone(self.gone))
                    }
                }
            }
        };
        if !batch {
            usage
                .busy_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        RankOutcome {
            result: result.map_err(|e| WireError::from_error(&e)),
            facts,
            data,
        }
    }
}

/// A request for a rank's worker: its id, its operations (run in order), the CPU time it cost
/// so far, the staging region it was checked against, the tenant's pid when it may be
/// reached in place.
type Job = (
    u64,
    Vec<WireOp>,
    u64,
    Option<Arc<Region>>,
    Option<Arc<Target>>,
    Option<(Arc<Ring>, u32)>,
);

/// Runs a rank's operations in order, each whatever the outcome of the ones before (a
/// rank that cannot be entered fails them all).
fn run_in_order(
    manager: &Arc<Manager>,
    lease: &Arc<Lease>,
    staging: Option<&Region>,
    target: Option<&Target>,
    gone: &StopCheck,
    ops: Vec<WireOp>,
) -> Vec<RankOutcome> {
    match manager.enter(lease) {
        Ok(a) => {
            let rank = Rank {
                served: &a.served,
                usage: &lease.usage,
                staging,
                target,
                gone,
            };
            ops.into_iter().map(|op| rank.run(op)).collect()
        }
        Err(e) => ops.iter().map(|_| failed(&e)).collect(),
    }
}

/// A rank's worker: runs the connection's single-rank requests in order, replies itself.
fn spawn_worker(
    rank: u32,
    lease: Arc<Lease>,
    manager: Arc<Manager>,
    writer: Writer,
    gone: StopCheck,
) -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>();
    let _ = std::thread::Builder::new()
        .name(format!("openpim-served-rank-{rank}"))
        .spawn(move || {
            while let Ok((id, ops, spent, staging, target, ring)) = rx.recv() {
                let start = Instant::now();
                let outcomes = run_in_order(
                    &manager,
                    &lease,
                    staging.as_deref(),
                    target.as_deref(),
                    &gone,
                    ops,
                );
                let reply = Reply::Exec {
                    ipc_ns: 0,
                    emu_ns: start.elapsed().as_nanos() as u64,
                    outcomes,
                };
                let ring = ring.as_ref().map(|(r, seq)| (&**r, *seq));
                answer(&writer, ring, &gone, id, &reply, Some(spent));
            }
        });
    tx
}
