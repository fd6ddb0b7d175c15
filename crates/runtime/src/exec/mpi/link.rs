//! The host program's connection to the gateway of a distributed run.
//!
//! Requests carry an id and the worker they are for; any thread may have several in flight
//! (a call fans out to every worker holding one of its ranks, queued operations of
//! different ranks travel at once). A reader thread hands each reply to the request that
//! waits for it. When the gateway goes away (the MPI job ended) or reports a worker dead,
//! the waiting requests, and every later one, fail with [`Error::System`] naming why.

use std::collections::HashMap;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};

use super::wire::{read_frame, share_prefix, write_frame, ToWorker, WorkerInfo, SHARE_ALL};
use crate::error::{Error, Result};
use crate::exec::remote::protocol::{read_exec, Reply, EXEC_TAG};
use crate::exec::HostPtr;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the data of a request's read outcomes goes: for outcome `k` of its reply, the
/// buffers it fills one after the other (`None`: into the outcome, as for any other reply).
/// The program's own buffers, so that a read's bytes go from the socket straight where the
/// program wants them: no copy of the reply is ever held.
pub(crate) type Delivery = Vec<Option<Vec<(HostPtr, usize)>>>;

/// A request waiting for its reply: where the reply goes, the request's kind and size (the
/// report's MPI traffic), where its read data goes.
type Waiting = HashMap<u64, (Sender<Result<Reply>>, &'static str, u64, Delivery)>;

/// A connection to the gateway.
pub(crate) struct Link {
    writer: Mutex<UnixStream>,
    waiting: Arc<Mutex<Waiting>>,
    /// Why the link is unusable (the gateway gone), once it is.
    broken: Arc<Mutex<Option<String>>>,
    next: AtomicU64,
    /// The run's workers, in the order the gateway listed them.
    pub(crate) workers: Vec<WorkerInfo>,
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
        Ok(Link {
            writer: Mutex::new(stream),
            waiting,
            broken,
            next: AtomicU64::new(1),
            workers,
        })
    }

    /// Sends `msg` to worker `worker` (index in the table); its reply comes later.
    pub(crate) fn send(&self, worker: u32, msg: &ToWorker) -> Result<Pending> {
        self.send_parts(worker, msg.kind(), &[], &msg.encode(), Vec::new())
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
        self.send_parts(worker, msg.kind(), &[], &msg.encode(), into)
    }

    /// Asks the gateway to broadcast `bytes` to every worker, kept under `key` (the message
    /// [`ToWorker::Share`], written without copying the bytes).
    pub(crate) fn send_share(&self, key: u128, bytes: &[u8]) -> Result<Pending> {
        self.send_parts(
            SHARE_ALL,
            "shared buffer",
            &share_prefix(key),
            bytes,
            Vec::new(),
        )
    }

    /// Sends the message `prefix` + `body` of kind `kind` to worker `worker`.
    fn send_parts(
        &self,
        worker: u32,
        kind: &'static str,
        prefix: &[u8],
        body: &[u8],
        into: Delivery,
    ) -> Result<Pending> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        let size = (prefix.len() + body.len()) as u64;
        {
            // Registered under the broken flag's lock: a reader that fails the waiting
            // requests either sees this one or has set the flag first.
            let broken = lock(&self.broken);
            if let Some(why) = broken.as_ref() {
                return Err(Error::System(why.clone()));
            }
            lock(&self.waiting).insert(id, (tx, kind, size, into));
        }
        let mut head = worker.to_le_bytes().to_vec();
        head.extend_from_slice(prefix);
        let written = write_frame(&mut *lock(&self.writer), id, &head, body);
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
    for (_, (tx, ..)) in lock(waiting).drain() {
        let _ = tx.send(Err(Error::System(why.clone())));
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
    let reply = match entry.as_ref() {
        Some((.., into)) if len > 0 && tag[0] == EXEC_TAG && into.iter().any(Option::is_some) => {
            let mut sink = |k: usize, _len: u64| {
                into.get(k)
                    .and_then(Option::as_ref)
                    .map(|bufs| bufs.iter().map(|(p, l)| (p.0, *l)).collect())
            };
            // SAFETY: `send_into`'s contract: the buffers are the request's until its reply
            // has come, which is this one.
            unsafe { read_exec(r, len - 1, &mut sink) }?.map_err(|e| malformed(&e))
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
    if let Some((tx, kind, out, _)) = entry {
        crate::clock::report::count_mpi_message(kind, out, len as u64);
        let _ = tx.send(reply);
    }
    Ok(Some(()))
}
