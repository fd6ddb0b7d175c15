//! The processes of the MPI job: `openpim worker` is the gateway when it is MPI rank 0, a
//! worker otherwise.
//!
//! Between the gateway and a worker, a message is `[u64 id][body]`: the gateway's requests
//! ([`ToWorker`]) and the workers' replies ([`Reply`]) with the request's id; id 0 is the
//! worker's greeting (`[u32 pid][host]`) and the answers to the heartbeat.

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::sync::mpsc::{channel, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mpi::Threading;
use openpim_collectives::distributed;
use openpim_runtime::exec::mpi::wire::{
    encode_reply, framed_reply, framed_reply_leaving_data, read_frame_after, take_destinations,
    write_frame, CollectiveReply, Destinations, ToWorker, WorkerInfo, BODY_IN_PLACE,
    PROBE_IN_PLACE, SHARE_ALL, WITH_DESTINATIONS,
};
use openpim_runtime::exec::remote::inplace::{self, Target};
use openpim_runtime::exec::remote::protocol::Request;
use openpim_runtime::exec::remote::protocol::{Reply, WireError};
use openpim_runtime::Error;

use crate::order::{slots_of, RankOrder};
use crate::peers::{Mailbox, WorkerPeers};
use crate::relay::{relay_large, Program, ReplyTo};
use crate::serve::Ranks;
use crate::threads::Threads;
use crate::transport::Transport;
use crate::wake::{Backoff, Wakeup, Waking};
use crate::Outgoing;
use crate::{timeout, STOP_WORKER, TIMEOUT_ENV};

/// How often the gateway pings each worker.
const HEARTBEAT: Duration = Duration::from_millis(500);

/// How often the gateway looks at its workers' liveness (a dead one on this machine, a
/// silent one, a ping due).
const LIVENESS_EVERY: Duration = Duration::from_millis(5);

/// Where a program's request starts in [`FromHost::Request`]'s frame.
const BODY_AT: usize = 8;

fn framed(id: u64, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(8 + body.len());
    m.extend_from_slice(&id.to_le_bytes());
    m.extend_from_slice(body);
    m
}

/// A worker's reply to request `id` as its MPI message, a read's data sent from where it was
/// read.
fn reply_message(id: u64, reply: Reply) -> Outgoing {
    let (head, data) = framed_reply_leaving_data(id, reply);
    Outgoing { head, data }
}

fn split(msg: &[u8]) -> Option<(u64, &[u8])> {
    let id = u64::from_le_bytes(msg.get(..8)?.try_into().ok()?);
    Some((id, &msg[8..]))
}

fn host_name() -> String {
    mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into())
}

/// Runs this process's part of the job until the run stops; `socket` is where the gateway
/// listens for the host program.
pub fn run(socket: &str) -> Result<(), String> {
    let timeout = timeout()?;
    let (universe, _) =
        mpi::initialize_with_threading(Threading::Funneled).ok_or("MPI is initialized already")?;
    let mut t = Transport::new(universe.world());
    if t.size() < 2 {
        return Err(
            "an OpenPIM MPI job needs a gateway and at least one worker (start it with `openpim run --mpi N`)".into(),
        );
    }
    let r = if t.rank() == 0 {
        gateway(&mut t, socket, timeout)
    } else {
        if worker(&mut t, timeout) {
            // Another worker died: MPI_Finalize would wait for it (and for the messages sent
            // to it, which never leave), holding up the end of the job. As the gateway does.
            drop(t);
            let _ = std::io::stderr().flush();
            std::process::exit(3);
        }
        Ok(())
    };
    drop(t);
    drop(universe);
    r
}

/// A worker: its ranks, each request answered on a thread of its own ([`Threads`]: ranks of
/// different calls run at once; one rank's requests in arrival order: [`RankOrder`]), the heartbeat answered at once; messages from other workers (a
/// collective's lines) go to the mailbox its host steps take them from. Returns whether the
/// gateway reported another worker dead.
fn worker(t: &mut Transport, bound: Duration) -> bool {
    let mut hello = std::process::id().to_le_bytes().to_vec();
    hello.extend_from_slice(host_name().as_bytes());
    t.post(0, &framed(0, &hello));
    let ranks = Arc::new(Ranks::default());
    let mailbox = Arc::new(Mailbox::default());
    let me = t.rank() as u32 - 1;
    // What the request threads send: (destination MPI rank, message).
    let wake = Arc::new(Wakeup::default());
    let (tx, rx) = channel::<(i32, Outgoing)>();
    let tx = Waking::new(tx, Arc::clone(&wake));
    let mut order = RankOrder::default();
    let threads = Arc::new(Threads::default());
    let mut backoff = Backoff::new(wake);
    loop {
        let mut busy = false;
        while let Ok((dest, msg)) = rx.try_recv() {
            t.post_message(dest, msg);
            busy = true;
        }
        t.progress();
        if let Some((src, msg)) = t.try_recv() {
            busy = true;
            let Some((id, body)) = split(&msg) else {
                continue;
            };
            if src != 0 {
                // Another worker's lines for a collective's host step.
                mailbox.deposit(src as u32 - 1, id, body.to_vec());
                continue;
            }
            // (A write's bytes stay in the message: the request holds it until it has run.)
            let msg = Arc::new(msg);
            match ToWorker::decode_shared(&msg, 8) {
                Ok(ToWorker::Ping) => t.post(0, &framed_reply(id, &Reply::Unit)),
                Ok(ToWorker::Shutdown) => break,
                // The bytes follow as the gateway's broadcast, taken now: every worker takes
                // the gateway's broadcasts in the order of its markers.
                Ok(ToWorker::Shared { key, len }) => {
                    let bytes = t.receive_broadcast(0, len as usize);
                    ranks.keep(key, bytes);
                }
                Ok(ToWorker::Unshare { keys }) => {
                    ranks.forget(&keys);
                    t.post(0, &framed_reply(id, &Reply::Unit));
                }
                Ok(ToWorker::PeerDied { worker }) => mailbox.mark_dead(worker),
                Ok(ToWorker::Collective { body }) => {
                    let ranks = Arc::clone(&ranks);
                    let peers = WorkerPeers {
                        me,
                        out: tx.clone(),
                        mailbox: Arc::clone(&mailbox),
                        bound,
                    };
                    std::thread::spawn(move || {
                        // (A malformed step must not end the worker's thread without an
                        // answer: the program would wait for it.)
                        let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            distributed::serve(&body, &*ranks, &peers)
                        }))
                        .unwrap_or_else(|p| {
                            Err(format!(
                                "the host step failed: {}",
                                openpim_runtime::panic_message(&*p)
                            ))
                        });
                        let reply = match served {
                            Ok((body, peer_messages, peer_bytes)) => Reply::Bytes(
                                CollectiveReply {
                                    peer_messages,
                                    peer_bytes,
                                    body,
                                }
                                .encode(),
                            ),
                            Err(why) => Reply::Error(WireError::from_error(&Error::Internal(
                                format!("MPI worker {}: {why}", me + 1),
                            ))),
                        };
                        let _ = peers.out.send((0, framed_reply(id, &reply).into()));
                    });
                }
                Ok(req) => match ranks.buffers_for(&req) {
                    Ok(shared) => {
                        let ranks = Arc::clone(&ranks);
                        let tx = tx.clone();
                        // Taken now, in arrival order: the request runs after the earlier
                        // ones on its ranks (a batch the program did not wait for).
                        let mut turn = order.admit(&slots_of(&req));
                        threads.run(move || {
                            turn.wait();
                            let reply = ranks.handle_with(req, &shared);
                            // The rank's next request may run once this one's reply is on
                            // its way (the turn ends when the thread does).
                            let _ = tx.send((0, reply_message(id, reply)));
                        });
                    }
                    Err(e) => t.post(
                        0,
                        &framed_reply(id, &Reply::Error(WireError::from_error(&e))),
                    ),
                },
                Err(e) => {
                    let e = Error::Internal(format!("malformed request for an MPI worker: {e}"));
                    t.post(
                        0,
                        &framed_reply(id, &Reply::Error(WireError::from_error(&e))),
                    );
                }
            }
        }
        if busy {
            backoff.busy();
        } else {
            backoff.idle();
        }
    }
    drop(ranks);
    // The last replies leave before MPI is finalized (what was sent to other workers does
    // not matter any more: one may be dead, and its messages never leave).
    let end = Instant::now() + Duration::from_secs(5);
    while t.in_flight_to(0) > 0 && Instant::now() < end {
        t.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    mailbox.any_dead()
}

/// What the gateway knows of a worker.
struct Peer {
    info: WorkerInfo,
    /// When it last answered anything.
    seen: Instant,
    pinged: Option<Instant>,
    dead: Option<String>,
}

/// A request of the host program in flight: its connection, its id there, its worker.
struct InFlight {
    conn: u64,
    id: u64,
    worker: u32,
    /// A collective's host step: the program's requests to every worker holding its ranks
    /// are one collective, doomed when one of those workers dies.
    collective: bool,
    /// Where the program wants the request's read data, if it named the places.
    places: Option<Destinations>,
}

/// What the gateway's socket threads hand to its MPI thread.
enum FromHost {
    Connected(u64, Program),
    /// The request's body is `frame[BODY_AT..]`; the bytes before it are free for the
    /// gateway's own id (the message relayed to the worker is `frame` itself: no copy).
    Request {
        conn: u64,
        id: u64,
        worker: u32,
        frame: Vec<u8>,
        places: Option<Destinations>,
    },
    /// A request the gateway could not take (its bytes in the program's memory unreadable).
    Refused {
        conn: u64,
        id: u64,
        why: Error,
    },
    Closed(u64),
    Stop,
}

/// The gateway: the workers' greetings, then the socket for the host program, then requests
/// relayed to the workers and replies back, the workers watched by a heartbeat.
fn gateway(t: &mut Transport, socket: &str, timeout: Duration) -> Result<(), String> {
    let n = t.size() as u32 - 1;
    let mut peers: Vec<Option<Peer>> = (0..n).map(|_| None).collect();
    let start = Instant::now();
    let wake = Arc::new(Wakeup::default());
    let mut backoff = Backoff::new(Arc::clone(&wake));
    while peers.iter().any(Option::is_none) {
        if start.elapsed() > timeout {
            let missing: Vec<String> = peers
                .iter()
                .enumerate()
                .filter(|(_, p)| p.is_none())
                .map(|(k, _)| (k + 1).to_string())
                .collect();
            return Err(format!(
                "MPI workers {} did not start within {:.0} s ({TIMEOUT_ENV})",
                missing.join(", "),
                timeout.as_secs_f64()
            ));
        }
        match t.try_recv() {
            Some((src, msg)) if src >= 1 && (src as u32) <= n => {
                if let Some((0, b)) = split(&msg) {
                    if b.len() >= 4 {
                        peers[src as usize - 1] = Some(Peer {
                            info: WorkerInfo {
                                mpi_rank: src as u32,
                                pid: u32::from_le_bytes(b[..4].try_into().expect("4")),
                                host: String::from_utf8_lossy(&b[4..]).into_owned(),
                            },
                            seen: Instant::now(),
                            pinged: None,
                            dead: None,
                        });
                    }
                }
            }
            _ => backoff.idle(),
        }
    }
    let mut peers: Vec<Peer> = peers.into_iter().map(|p| p.expect("greeted")).collect();
    let table: String = peers.iter().map(|p| p.info.line() + "\n").collect();
    let my_host = host_name();

    let _ = std::fs::remove_file(socket);
    let listener =
        UnixListener::bind(socket).map_err(|e| format!("cannot listen on {socket}: {e}"))?;
    let (tx, rx) = channel::<FromHost>();
    let tx = Waking::new(tx, wake);
    {
        let tx = tx.clone();
        let table = table.clone();
        std::thread::spawn(move || accept(listener, &table, &tx));
    }

    let mut conns: HashMap<u64, Program> = HashMap::new();
    let mut in_flight: HashMap<u64, InFlight> = HashMap::new();
    // The host's shares being broadcast, by the transport's ticket.
    let mut sharing: HashMap<u64, InFlight> = HashMap::new();
    let mut next_id: u64 = 1;
    let reply_to = |conns: &HashMap<u64, Program>, f: &InFlight, body: &[u8]| {
        if let Some(c) = conns.get(&f.conn) {
            let mut s = c.stream.lock().unwrap_or_else(|e| e.into_inner());
            let _ = write_frame(&mut *s, f.id, &[], body);
        }
    };
    // Where the pieces of a large reply pass through on their way to the program.
    let mut relay: Vec<u8> = Vec::new();
    let mut stopping = false;
    let mut last_check = Instant::now();
    while !stopping {
        let mut busy = false;
        loop {
            match rx.try_recv() {
                Ok(FromHost::Connected(c, s)) => {
                    conns.insert(c, s);
                }
                Ok(FromHost::Closed(c)) => {
                    conns.remove(&c);
                }
                Ok(FromHost::Refused { conn, id, why }) => {
                    let f = InFlight {
                        conn,
                        id,
                        worker: 0,
                        collective: false,
                        places: None,
                    };
                    let r = Reply::Error(WireError::from_error(&why));
                    reply_to(&conns, &f, &encode_reply(&r));
                }
                Ok(FromHost::Stop) | Err(TryRecvError::Disconnected) => {
                    stopping = true;
                    break;
                }
                Ok(FromHost::Request {
                    conn,
                    id,
                    worker: PROBE_IN_PLACE,
                    frame,
                    ..
                }) => {
                    // Whether the gateway can write into the program's memory.
                    let f = InFlight {
                        conn,
                        id,
                        worker: PROBE_IN_PLACE,
                        collective: false,
                        places: None,
                    };
                    let target = conns.get(&conn).and_then(|c| c.target.as_ref());
                    let answer = match (Request::decode(&frame[BODY_AT..]), target) {
                        (Ok(Request::InPlace { addr, value }), Some(t)) => {
                            inplace::probe(t, addr, value)
                        }
                        (Ok(Request::InPlace { .. }), None) => Err(Error::System(
                            "the MPI gateway cannot reach the program's process (no pidfd)".into(),
                        )),
                        _ => Err(Error::Internal("malformed in-place probe".into())),
                    };
                    let r = match answer {
                        Ok(()) => Reply::Unit,
                        Err(e) => Reply::Error(WireError::from_error(&e)),
                    };
                    reply_to(&conns, &f, &encode_reply(&r));
                }
                Ok(FromHost::Request {
                    conn,
                    id,
                    worker: SHARE_ALL,
                    frame,
                    ..
                }) => {
                    let body = &frame[BODY_AT..];
                    // A buffer for every worker: one MPI broadcast, announced to each first.
                    busy = true;
                    let f = InFlight {
                        conn,
                        id,
                        worker: SHARE_ALL,
                        collective: false,
                        places: None,
                    };
                    let refuse =
                        |why: Error| encode_reply(&Reply::Error(WireError::from_error(&why)));
                    let key = body
                        .get(1..17)
                        .filter(|_| body[0] == 5)
                        .map(|k| u128::from_le_bytes(k.try_into().expect("16 bytes")));
                    let len = body.len().saturating_sub(17);
                    if let Some(p) = peers.iter().find(|p| p.dead.is_some()) {
                        let why = p.dead.clone().unwrap_or_default();
                        reply_to(&conns, &f, &refuse(Error::System(why)));
                    } else if let (Some(key), true) = (key, len < i32::MAX as usize) {
                        let marker = ToWorker::Shared {
                            key,
                            len: len as u64,
                        };
                        for p in &peers {
                            t.post(p.info.mpi_rank as i32, &framed(0, &marker.encode()));
                        }
                        let ticket = t.start_broadcast(frame.into_boxed_slice(), BODY_AT + 17);
                        sharing.insert(ticket, f);
                    } else {
                        let e = Error::Internal(format!(
                            "malformed or oversized ({len} bytes) buffer to share with the MPI workers"
                        ));
                        reply_to(&conns, &f, &refuse(e));
                    }
                }
                Ok(FromHost::Request {
                    conn,
                    id,
                    worker,
                    mut frame,
                    places,
                }) => {
                    busy = true;
                    let f = InFlight {
                        conn,
                        id,
                        worker,
                        collective: ToWorker::is_collective(&frame[BODY_AT..]),
                        places,
                    };
                    match peers.get(worker as usize) {
                        None => {
                            let e = Error::Internal(format!("no MPI worker {worker}"));
                            let r = encode_reply(&Reply::Error(WireError::from_error(&e)));
                            reply_to(&conns, &f, &r);
                        }
                        Some(Peer {
                            dead: Some(why), ..
                        }) => {
                            let e = Error::System(why.clone());
                            let r = encode_reply(&Reply::Error(WireError::from_error(&e)));
                            reply_to(&conns, &f, &r);
                        }
                        Some(p) => {
                            let g = next_id;
                            next_id += 1;
                            // The message is `g` then the body: the frame itself.
                            frame[..BODY_AT].copy_from_slice(&g.to_le_bytes());
                            t.post_owned(p.info.mpi_rank as i32, frame);
                            in_flight.insert(g, f);
                        }
                    }
                }
                Err(TryRecvError::Empty) => break,
            }
        }
        t.progress();
        for ticket in t.finished_broadcasts() {
            if let Some(f) = sharing.remove(&ticket) {
                reply_to(&conns, &f, &encode_reply(&Reply::Unit));
            }
        }
        busy |= !sharing.is_empty();
        while let Some(a) = t.try_recv_first() {
            busy = true;
            let Some((g, body)) = split(&a.first) else {
                t.receive_rest(&a, &mut relay, |_| {});
                continue;
            };
            if let Some(p) = peers.get_mut(a.src as usize - 1) {
                p.seen = Instant::now();
                if g == 0 {
                    p.pinged = None;
                }
            }
            let f = in_flight.remove(&g);
            if a.is_whole() {
                if let Some(f) = f {
                    reply_to(&conns, &f, body);
                }
                continue;
            }
            // A large reply (a read's data): relayed piece by piece as the pieces arrive.
            let to = f.as_ref().and_then(|f| {
                Some(ReplyTo {
                    program: conns.get(&f.conn)?,
                    id: f.id,
                    places: f.places.as_ref(),
                })
            });
            relay_large(t, &a, body, to, &mut relay);
        }
        // The heartbeat, and a worker of this machine that is gone is seen at once (within
        // a few ms: the checks are system calls, not made on every turn of a busy loop).
        let now = Instant::now();
        let check = now.duration_since(last_check) >= LIVENESS_EVERY;
        if check {
            last_check = now;
        }
        let mut died: Vec<u32> = Vec::new();
        for (k, p) in peers.iter_mut().enumerate() {
            if p.dead.is_some() || !check {
                continue;
            }
            let gone_here = p.info.host == my_host && process_gone(p.info.pid);
            let silent = p.pinged.is_some_and(|at| now.duration_since(at) > timeout);
            if gone_here || silent {
                let why = format!(
                    "{} {}; its ranks are lost (the rest of the run cannot use them)",
                    p.info.describe(),
                    if gone_here {
                        "died".to_string()
                    } else {
                        format!(
                            "stopped answering for {:.0} s ({TIMEOUT_ENV})",
                            timeout.as_secs_f64()
                        )
                    }
                );
                eprintln!("openpim: {why}");
                if p.info.host == my_host && !gone_here {
                    // A silent worker of this machine is ended: the run no longer uses it, and
                    // the job could not end while it lives.
                    // SAFETY: a signal to a process of this job, by its pid.
                    unsafe { libc::kill(p.info.pid as libc::pid_t, libc::SIGKILL) };
                }
                p.dead = Some(why.clone());
                died.push(k as u32);
                let e = Error::System(why);
                let r = encode_reply(&Reply::Error(WireError::from_error(&e)));
                // Its requests fail, and so do the other workers' parts of a collective it
                // took part in: a living worker may be stuck in MPI on the dead one's lines
                // (OpenMPI's shared-memory copy from a process that is gone can hang), and
                // the program must not wait for the heartbeat's bound to hear of the death.
                let doomed: Vec<u64> = in_flight
                    .values()
                    .filter(|f| f.worker == k as u32 && f.collective)
                    .map(|f| f.conn)
                    .collect();
                let lost: Vec<u64> = in_flight
                    .iter()
                    .filter(|(_, f)| {
                        f.worker == k as u32 || (f.collective && doomed.contains(&f.conn))
                    })
                    .map(|(g, _)| *g)
                    .collect();
                for g in lost {
                    if let Some(f) = in_flight.remove(&g) {
                        reply_to(&conns, &f, &r);
                    }
                }
                // A broadcast with a dead participant never completes (its request stays
                // with the transport); no other starts after a death.
                for (_, f) in sharing.drain() {
                    reply_to(&conns, &f, &r);
                }
                continue;
            }
            if p.pinged.is_none() && now.duration_since(p.seen) > HEARTBEAT {
                p.pinged = Some(now);
                t.post(p.info.mpi_rank as i32, &framed(0, &ToWorker::Ping.encode()));
            }
        }
        // The living workers learn of a death: a collective's host step waiting for the dead
        // one's lines fails at once.
        for w in died {
            for p in peers.iter().filter(|p| p.dead.is_none()) {
                let msg = ToWorker::PeerDied { worker: w };
                t.post(p.info.mpi_rank as i32, &framed(0, &msg.encode()));
            }
        }
        if busy {
            backoff.busy();
        } else {
            backoff.idle();
        }
    }
    for p in &peers {
        if p.dead.is_none() {
            t.post(
                p.info.mpi_rank as i32,
                &framed(0, &ToWorker::Shutdown.encode()),
            );
        }
    }
    let end = Instant::now() + Duration::from_secs(5);
    while t.in_flight() > 0 && Instant::now() < end {
        t.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = std::fs::remove_file(socket);
    if peers.iter().any(|p| p.dead.is_some()) {
        // A living worker may be stuck in MPI on the dead one's message (OpenMPI's
        // shared-memory copy from a process that is gone can hang): it would not end on the
        // shutdown, and the job would last until the launcher's patience ran out. The living
        // workers of this machine get a moment to end, then are ended.
        let local: Vec<u32> = peers
            .iter()
            .filter(|p| p.dead.is_none() && p.info.host == my_host)
            .map(|p| p.info.pid)
            .collect();
        let end = Instant::now() + STUCK_WORKER_GRACE;
        while Instant::now() < end && local.iter().any(|&pid| !process_gone(pid)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for pid in local.into_iter().filter(|&pid| !process_gone(pid)) {
            eprintln!("openpim: MPI worker (pid {pid}) did not end after another one died: ended");
            // SAFETY: a signal to a process of this job, by its pid.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        // MPI_Finalize waits for every process of the job; one is dead.
        let _ = std::io::stderr().flush();
        std::process::exit(3);
    }
    Ok(())
}

/// Accepts the host program's connections (and the launcher's stop request).
fn accept(listener: UnixListener, table: &str, tx: &Waking<FromHost>) {
    let mut next: u64 = 1;
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        if write_frame(&mut stream, 0, &[], table.as_bytes()).is_err() {
            continue;
        }
        let Ok(mut reader) = stream.try_clone() else {
            continue;
        };
        let conn = next;
        next += 1;
        // The program's process, for writing large reads into its buffers (where the kernel
        // lets this process: the program's probe says).
        let fd = stream.as_raw_fd();
        let target = openpim_runtime::exec::remote::peer::credentials(fd)
            .and_then(|(_, pid)| Target::of_peer(fd, pid, inplace::MPI_GATEWAY))
            .map(Arc::new);
        let program = Program {
            stream: Arc::new(Mutex::new(stream)),
            target: target.clone(),
        };
        if tx.send(FromHost::Connected(conn, program)).is_err() {
            return;
        }
        let tx = tx.clone();
        std::thread::spawn(move || {
            // The frame's rest (the worker, then the request) lands 4 bytes in, so that the
            // worker's 4 bytes and these make room for the gateway's id before the request.
            while let Ok(Some((id, mut frame))) = read_frame_after(&mut reader, BODY_AT - 4) {
                if frame.len() < BODY_AT {
                    break;
                }
                let mut worker =
                    u32::from_le_bytes(frame[BODY_AT - 4..BODY_AT].try_into().expect("4"));
                if worker == STOP_WORKER {
                    let _ = tx.send(FromHost::Stop);
                    break;
                }
                // (The special workers, SHARE_ALL and PROBE_IN_PLACE, have every bit set.)
                let mut places = None;
                if worker < PROBE_IN_PLACE && worker & WITH_DESTINATIONS != 0 {
                    worker &= !WITH_DESTINATIONS;
                    // Malformed places: the read comes through the socket.
                    places = take_destinations(&mut frame, BODY_AT);
                }
                if worker < PROBE_IN_PLACE && worker & BODY_IN_PLACE != 0 {
                    worker &= !BODY_IN_PLACE;
                    match body_from_program(&frame, target.as_deref()) {
                        Ok(f) => frame = f,
                        Err(why) => {
                            let _ = tx.send(FromHost::Refused { conn, id, why });
                            continue;
                        }
                    }
                }
                if tx
                    .send(FromHost::Request {
                        conn,
                        id,
                        worker,
                        frame,
                        places,
                    })
                    .is_err()
                {
                    break;
                }
            }
            let _ = tx.send(FromHost::Closed(conn));
        });
    }
}

/// How long the living workers of this machine have to end after the shutdown of a job in which
/// a worker died.
const STUCK_WORKER_GRACE: Duration = Duration::from_secs(2);

/// Whether the process `pid` of this machine has ended: it no longer exists, or it is a zombie
/// (ended, not yet reaped by its parent: a worker killed with -9 stays one until OpenMPI's
/// daemon reaps it, which under load took long enough for the heartbeat's bound to end the
/// run first).
fn process_gone(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    // "PID (COMM) STATE ...": the state follows the last ')' (the command may hold one).
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X")
    })
}

/// The frame of a request whose bytes are in the program's memory (`frame` holds where:
/// [`BODY_IN_PLACE`]): read from there, behind room for the gateway's id.
fn body_from_program(frame: &[u8], target: Option<&Target>) -> Result<Vec<u8>, Error> {
    let Some(target) = target else {
        return Err(Error::System(
            "the MPI gateway cannot reach the program's process to read a request (no pidfd)"
                .into(),
        ));
    };
    let at = frame
        .get(BODY_AT..)
        .filter(|b| b.len() == 16)
        .ok_or_else(|| Error::Internal("malformed request in the program's memory".into()))?;
    let addr = u64::from_le_bytes(at[..8].try_into().expect("8 bytes"));
    let len = u64::from_le_bytes(at[8..].try_into().expect("8 bytes")) as usize;
    // (A length no memory can hold is the request's error, not the gateway's end.)
    let mut body = Vec::new();
    body.try_reserve_exact(BODY_AT.saturating_add(len))
        .map_err(|e| {
            Error::System(format!(
                "the MPI gateway cannot hold a request of {len} bytes: {e}"
            ))
        })?;
    body.resize(BODY_AT + len, 0);
    inplace::read(target, &mut [(addr, &mut body[BODY_AT..])])?;
    Ok(body)
}
