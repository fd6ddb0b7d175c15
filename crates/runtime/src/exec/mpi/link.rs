//! The host program's connection to the gateway of a distributed run.
//!
//! Requests carry an id and the worker they are for; any thread may have several in flight
//! (a call fans out to every worker holding one of its ranks, queued operations of
//! different ranks travel at once). A reader thread hands each reply to the request that
//! waits for it. When the gateway goes away (the MPI job ended) or reports a worker dead,
//! the waiting requests, and every later one, fail with [`Error::System`] naming why.

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};

use super::wire::{
    encode_destinations, read_frame, share_prefix, write_frame_with_tail, ToWorker, WorkerInfo,
    BODY_IN_PLACE, EXEC_DELIVERED_TAG, PROBE_IN_PLACE, SHARE_ALL, WITH_DESTINATIONS,
};
use crate::error::{Error, Result};
use crate::exec::remote::inplace;
use crate::exec::remote::peer::SocketWriter;
use crate::exec::remote::protocol::{decode_exec_head, read_exec, RankOutcome, Reply, EXEC_TAG};
use crate::exec::HostPtr;

/// The setting that lets the gateway reach the program's memory (`on`, the default: it reads
/// large requests from there and writes large reads into the program's buffers) or not (`off`:
/// their bytes go through the socket).
pub const IN_PLACE_ENV: &str = "OPENPIM_MPI_INPLACE";

/// Reads of at least this many bytes are offered to the gateway for writing in place (the
/// smaller ones come whole in the reply, which the worker sends in one piece), and requests of
/// at least this many bytes are read by the gateway from this process's memory (a batch of
/// small writes) rather than written to the socket.
const IN_PLACE_MIN: usize = 64 << 10;

/// Whether [`IN_PLACE_ENV`] lets the gateway reach the program's memory; an unknown value is
/// an error naming the valid ones.
pub fn in_place_allowed() -> Result<bool> {
    match std::env::var(IN_PLACE_ENV).as_deref() {
        Err(_) | Ok("") | Ok("on") => Ok(true),
        Ok("off") => Ok(false),
        Ok(other) => Err(Error::System(format!(
            "{IN_PLACE_ENV}={other}: expected `on` (the MPI gateway reads large requests from the program's memory and writes large reads into its buffers, the default) or `off` (through the socket)"
        ))),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the data of a request's read outcomes goes: for outcome `k` of its reply, the
/// buffers it fills one after the other (`None`: into the outcome, as for any other reply).
/// The program's own buffers, so that a read's bytes go from the socket straight where the
/// program wants them: no copy of the reply is ever held.
pub(crate) type Delivery = Vec<Option<Vec<(HostPtr, usize)>>>;

/// A request waiting for its reply.
struct Waiter {
    /// Where the reply goes.
    tx: Sender<Result<Reply>>,
    /// The request's kind and size (the report's MPI traffic).
    kind: &'static str,
    size: u64,
    /// Where its read data goes.
    into: Delivery,
    /// The request's bytes when the gateway reads them from this process's memory itself:
    /// kept until the reply has come (by then the gateway has read them).
    _body: Option<Vec<u8>>,
}

type Waiting = HashMap<u64, Waiter>;

/// A message's bytes: borrowed for the time of the call, or the message's own (which the
/// gateway may then read in place).
enum Body<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

/// A connection to the gateway.
pub(crate) struct Link {
    writer: Mutex<SocketWriter>,
    waiting: Arc<Mutex<Waiting>>,
    /// Why the link is unusable (the gateway gone), once it is.
    broken: Arc<Mutex<Option<String>>>,
    next: AtomicU64,
    /// The run's workers, in the order the gateway listed them.
    pub(crate) workers: Vec<WorkerInfo>,
    /// Whether the gateway can write into this process's memory (its probe succeeded):
    /// large reads then tell it where their bytes go.
    in_place: bool,
}

/// A reply still to come.
pub(crate) struct Pending(Receiver<Result<Reply>>);

impl Pending {
    /// Waits for the reply; an error reply is the error it carries.
    pub(crate) fn wait(self) -> Result<Reply> {
        match self.0.recv() {
            Ok(Ok(Reply::Error(w))) => Err(w.to_error()),
            Ok(r) => r,
            Err(_) => Err(Error::System(
                "the MPI gateway's connection closed with a request unanswered".into(),
            )),
        }
    }
}

impl Link {
    /// Connects to the gateway at `path` and reads its worker table.
    pub(crate) fn connect(path: &str) -> Result<Link> {
        let stream = UnixStream::connect(path).map_err(|e| {
            Error::System(format!(
                "cannot reach the MPI gateway at {path} ({e}); OPENPIM_MPI is set by `openpim run --mpi N`: start the program that way"
            ))
        })?;
        let mut reader = stream
            .try_clone()
            .map_err(|e| Error::System(format!("MPI gateway connection: {e}")))?;
        let workers = match read_frame(&mut reader) {
            Ok(Some((0, table))) => String::from_utf8_lossy(&table)
                .lines()
                .filter_map(WorkerInfo::parse)
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        if workers.is_empty() {
            return Err(Error::System(format!(
                "the MPI gateway at {path} sent no worker table (is it an OpenPIM gateway of this version?)"
            )));
        }
        let waiting: Arc<Mutex<Waiting>> = Arc::default();
        let broken: Arc<Mutex<Option<String>>> = Arc::default();
        {
            let waiting = Arc::clone(&waiting);
            let broken = Arc::clone(&broken);
            std::thread::Builder::new()
                .name("openpim-mpi-link".into())
                .spawn(move || read_replies(reader, &waiting, &broken))
                .map_err(|e| Error::System(format!("cannot start a thread: {e}")))?;
        }
        let mut link = Link {
            writer: Mutex::new(SocketWriter(stream)),
            waiting,
            broken,
            next: AtomicU64::new(1),
            workers,
            in_place: false,
        };
        link.in_place = in_place_allowed()? && link.probe_in_place();
        Ok(link)
    }

    /// Asks the gateway whether it can write into this process's memory
    /// ([`inplace::probe_request`]).
    fn probe_in_place(&self) -> bool {
        let fd = lock(&self.writer).0.as_raw_fd();
        let Some((req, _value)) = inplace::probe_request(fd) else {
            return false;
        };
        let mut e = crate::exec::remote::protocol::Enc::default();
        req.encode(&mut e);
        let body = Body::Borrowed(&e.0);
        // (Answered by the gateway: no MPI traffic, no kind.)
        let sent = self.send_parts(PROBE_IN_PLACE, "", &[], body, &[], Vec::new());
        matches!(sent.and_then(Pending::wait), Ok(Reply::Unit))
    }

    /// Sends `msg` to worker `worker` (index in the table); its reply comes later.
    pub(crate) fn send(&self, worker: u32, msg: &ToWorker) -> Result<Pending> {
        let body = Body::Owned(msg.encode());
        self.send_parts(worker, msg.kind(), &[], body, &[], Vec::new())
    }

    /// [`Link::send`], the reply's read data delivered into the buffers `into` names.
    ///
    /// # Safety
    /// Every buffer of `into` must be valid for writes of its length, and neither read nor
    /// written by anyone else, until the reply has come (the returned [`Pending`] waited for,
    /// or dropped after the link broke).
    pub(crate) unsafe fn send_into(
        &self,
        worker: u32,
        msg: &ToWorker,
        into: Delivery,
    ) -> Result<Pending> {
        // Where a large read's bytes go, for the gateway to write them there itself.
        let bytes: usize = into.iter().flatten().flatten().map(|b| b.1).sum();
        if self.in_place && bytes >= IN_PLACE_MIN {
            let places = into
                .iter()
                .map(|d| {
                    d.iter()
                        .flatten()
                        .map(|(p, l)| (p.0 as u64, *l as u64))
                        .collect()
                })
                .collect();
            let tail = encode_destinations(&places);
            let to = worker | WITH_DESTINATIONS;
            let body = Body::Owned(msg.encode());
            return self.send_parts(to, msg.kind(), &[], body, &tail, into);
        }
        self.send_parts(
            worker,
            msg.kind(),
            &[],
            Body::Owned(msg.encode()),
            &[],
            into,
        )
    }

    /// Asks the gateway to broadcast `bytes` to every worker, kept under `key` (the message
    /// [`ToWorker::Share`], written without copying the bytes).
    pub(crate) fn send_share(&self, key: u128, bytes: &[u8]) -> Result<Pending> {
        self.send_parts(
            SHARE_ALL,
            "shared buffer",
            &share_prefix(key),
            Body::Borrowed(bytes),
            &[],
            Vec::new(),
        )
    }

    /// Sends the message `prefix` + `body` of kind `kind` to worker `worker`, `tail` after it
    /// in the frame (for the gateway). A large body of its own without a prefix is read by
    /// the gateway from this process's memory when it can: the frame then carries where it
    /// is.
    fn send_parts(
        &self,
        worker: u32,
        kind: &'static str,
        prefix: &[u8],
        body: Body<'_>,
        tail: &[u8],
        into: Delivery,
    ) -> Result<Pending> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        let mut worker = worker;
        // Where the gateway reads the body, which the waiter keeps (moving a `Vec` does not
        // move its bytes).
        let mut at = [0u8; 16];
        let mut kept = None;
        let own: Vec<u8>;
        let (body, size): (&[u8], usize) = match body {
            Body::Owned(b) if self.in_place && prefix.is_empty() && b.len() >= IN_PLACE_MIN => {
                at[..8].copy_from_slice(&(b.as_ptr() as u64).to_le_bytes());
                at[8..].copy_from_slice(&(b.len() as u64).to_le_bytes());
                worker |= BODY_IN_PLACE;
                let size = b.len();
                kept = Some(b);
                (&at, size)
            }
            Body::Owned(b) => {
                own = b;
                (&own, prefix.len() + own.len())
            }
            Body::Borrowed(b) => (b, prefix.len() + b.len()),
        };
        {
            // Registered under the broken flag's lock: a reader that fails the waiting
            // requests either sees this one or has set the flag first.
            let broken = lock(&self.broken);
            if let Some(why) = broken.as_ref() {
                return Err(Error::System(why.clone()));
            }
            let waiter = Waiter {
                tx,
                kind,
                size: size as u64,
                into,
                _body: kept,
            };
            lock(&self.waiting).insert(id, waiter);
        }
        let mut head = worker.to_le_bytes().to_vec();
        head.extend_from_slice(prefix);
        let written = write_frame_with_tail(&mut *lock(&self.writer), id, &head, body, tail);
        if let Err(e) = written {
            lock(&self.waiting).remove(&id);
            let why = lock(&self.broken)
                .clone()
                .unwrap_or_else(|| format!("cannot write to the MPI gateway: {e}"));
            return Err(Error::System(why));
        }
        Ok(Pending(rx))
    }

    /// Sends `msg` to worker `worker` and waits for its reply.
    pub(crate) fn call(&self, worker: u32, msg: &ToWorker) -> Result<Reply> {
        self.send(worker, msg)?.wait()
    }
}

/// The reader thread: replies to their requests until the gateway closes the connection,
/// then every waiting request fails.
fn read_replies(reader: UnixStream, waiting: &Mutex<Waiting>, broken: &Mutex<Option<String>>) {
    // Frames are read in parts (the head, then each read's data straight into its buffers).
    let mut reader = std::io::BufReader::with_capacity(64 << 10, reader);
    let why = loop {
        match read_reply(&mut reader, waiting) {
            Ok(Some(())) => {}
            Ok(None) => {
                break "the MPI gateway closed the connection: the MPI job ended (a worker died, or mpirun was stopped); see mpirun's messages above".to_string()
            }
            Err(e) => break format!("the MPI gateway's connection failed: {e}"),
        }
    };
    let mut b = lock(broken);
    *b = Some(why.clone());
    for (_, w) in lock(waiting).drain() {
        let _ = w.tx.send(Err(Error::System(why.clone())));
    }
}

/// Reads one reply and hands it to its request (`None`: the gateway closed the connection
/// between frames). An [`Reply::Exec`] whose request named buffers for its read data is
/// read with its data placed there ([`read_exec`]); any other reply is read whole.
fn read_reply(r: &mut impl std::io::Read, waiting: &Mutex<Waiting>) -> std::io::Result<Option<()>> {
    let Some((id, len)) = super::wire::read_frame_head(r)? else {
        return Ok(None);
    };
    let entry = lock(waiting).remove(&id);
    let malformed = |e: &dyn std::fmt::Display| {
        Error::Internal(format!("malformed reply from the MPI gateway: {e}"))
    };
    let mut tag = [0u8; 1];
    if len > 0 {
        r.read_exact(&mut tag)?;
    }
    // Read data the gateway wrote in place (not in the frame).
    let mut in_place = 0;
    let reply = match entry.as_ref() {
        Some(Waiter { into, .. })
            if len > 0 && tag[0] == EXEC_TAG && into.iter().any(Option::is_some) =>
        {
            let mut sink = |k: usize, _len: u64| {
                into.get(k)
                    .and_then(Option::as_ref)
                    .map(|bufs| bufs.iter().map(|(p, l)| (p.0, *l)).collect())
            };
            // SAFETY: `send_into`'s contract: the buffers are the request's until its reply
            // has come, which is this one.
            unsafe { read_exec(r, len - 1, &mut sink) }?.map_err(|e| malformed(&e))
        }
        Some(Waiter { into, .. }) if len > 0 && tag[0] == EXEC_DELIVERED_TAG => {
            let mut head = vec![0u8; len - 1];
            r.read_exact(&mut head)?;
            delivered(&head, into)
                .map(|(reply, bytes)| {
                    in_place = bytes;
                    reply
                })
                .map_err(|e| malformed(&e))
        }
        _ => {
            let mut body = vec![0u8; len];
            if let Some(first) = body.first_mut() {
                *first = tag[0];
                r.read_exact(&mut body[1..])?;
            }
            Reply::decode(&body).map_err(|e| malformed(&e))
        }
    };
    if let Some(w) = entry {
        if !w.kind.is_empty() {
            crate::clock::report::count_mpi_message(w.kind, w.size, len as u64);
        }
        if in_place > 0 {
            crate::clock::report::count_mpi_in_place(w.kind, in_place);
        }
        let _ = w.tx.send(reply);
    }
    Ok(Some(()))
}

/// The reply whose head is `head` and whose read data the gateway wrote into the buffers of
/// `into` itself, and the bytes it wrote: each outcome with data must have had buffers of
/// exactly its length.
fn delivered(head: &[u8], into: &Delivery) -> std::result::Result<(Reply, u64), String> {
    let (h, used) = decode_exec_head(head).map_err(|e| e.to_string())?;
    if used != head.len() {
        return Err(format!(
            "{} bytes after the reply's head",
            head.len() - used
        ));
    }
    let mut outcomes = Vec::with_capacity(h.outcomes.len());
    let mut bytes = 0;
    for (k, (result, facts, len)) in h.outcomes.into_iter().enumerate() {
        bytes += len;
        let room: usize = into
            .get(k)
            .into_iter()
            .flatten()
            .flatten()
            .map(|b| b.1)
            .sum();
        if len > 0 && (result.is_err() || room as u64 != len) {
            return Err(format!(
                "outcome {k}'s {len} bytes said to be in place where {room} bytes of buffers were given"
            ));
        }
        outcomes.push(RankOutcome {
            result,
            facts,
            data: Vec::new(),
        });
    }
    let reply = Reply::Exec {
        ipc_ns: h.ipc_ns,
        emu_ns: h.emu_ns,
        outcomes,
    };
    Ok((reply, bytes))
}
