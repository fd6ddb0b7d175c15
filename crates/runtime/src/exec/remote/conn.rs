//! A tenant's connection to the daemon: one UNIX socket per process, requests from any
//! thread, replies matched by id.
//!
//! Several threads of the tenant (the host thread, the ranks' queue workers) have requests in
//! flight at once, so that the daemon serves different ranks in parallel; a reader thread
//! hands each reply to the thread waiting for it. When the daemon goes away (stopped,
//! crashed), every waiting call and every later one fails with a system error naming the
//! socket: a tenant never hangs on a dead daemon.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};

use crate::clock::cpu::thread_cpu_ns;
use crate::error::{Error, Result};
use crate::exec::remote::protocol::{self, Reply, Request};

/// A reply with the reader thread's CPU time reading and decoding it.
type Waiters = HashMap<u64, mpsc::Sender<(Reply, u64)>>;

struct Pending {
    waiters: Waiters,
    /// Why the connection is gone, once it is.
    closed: Option<String>,
}

/// A connection to the daemon.
pub(crate) struct Conn {
    path: String,
    writer: Mutex<BufWriter<UnixStream>>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    /// The machine keys the daemon announced.
    pub machine: String,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Conn {
    /// Connects to the daemon at `path` and says hello.
    pub(crate) fn connect(path: &str) -> Result<Conn> {
        let stream = UnixStream::connect(path).map_err(|e| {
            Error::System(format!(
                "cannot connect to the OpenPIM daemon at {path}: {e}; start it with `openpim daemon --socket {path}`, or unset OPENPIM_SERVER / server= to run in process"
            ))
        })?;
        let reader = stream
            .try_clone()
            .map_err(|e| Error::System(format!("cannot use the daemon's socket {path}: {e}")))?;
        let pending = Arc::new(Mutex::new(Pending {
            waiters: HashMap::new(),
            closed: None,
        }));
        let p2 = Arc::clone(&pending);
        std::thread::Builder::new()
            .name("openpim-daemon-replies".into())
            .spawn(move || read_replies(reader, p2))
            .map_err(|e| Error::System(format!("cannot start a thread: {e}")))?;
        let mut conn = Conn {
            path: path.to_string(),
            writer: Mutex::new(BufWriter::new(stream)),
            pending,
            next_id: AtomicU64::new(1),
            machine: String::new(),
        };
        let program = std::env::args().next().unwrap_or_default();
        match conn.call(&Request::Hello {
            version: protocol::VERSION,
            program,
        })? {
            Reply::Hello { machine } => conn.machine = machine,
            other => return Err(unexpected(&other)),
        }
        Ok(conn)
    }

    /// Sends a request and waits for its reply; a daemon error becomes the runtime's error.
    pub(crate) fn call(&self, req: &Request) -> Result<Reply> {
        self.call_timed(req).map(|(r, _)| r)
    }

    /// [`Conn::call`], with the CPU time the call cost this process (encoding and sending
    /// the request on this thread, receiving and decoding the reply on the reader thread).
    pub(crate) fn call_timed(&self, req: &Request) -> Result<(Reply, u64)> {
        let cpu0 = thread_cpu_ns();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        {
            let mut p = lock(&self.pending);
            if let Some(why) = &p.closed {
                return Err(self.gone(why));
            }
            p.waiters.insert(id, tx);
        }
        let sent = {
            let mut w = lock(&self.writer);
            protocol::write_frame(&mut *w, id, |e| req.encode(e)).and_then(|()| w.flush())
        };
        if let Err(e) = sent {
            lock(&self.pending).waiters.remove(&id);
            return Err(self.gone(&e.to_string()));
        }
        match rx.recv() {
            Ok((Reply::Error(w), _)) => Err(w.to_error()),
            Ok((r, reader_ns)) => Ok((r, reader_ns + thread_cpu_ns().saturating_sub(cpu0))),
            Err(_) => {
                let why = lock(&self.pending).closed.clone().unwrap_or_default();
                Err(self.gone(&why))
            }
        }
    }

    fn gone(&self, why: &str) -> Error {
        Error::System(format!(
            "the OpenPIM daemon at {} closed the connection ({why}); the ranks this program held are released: restart the daemon, then the program",
            self.path
        ))
    }
}

/// A reply of the wrong kind (a daemon bug or a version mismatch).
pub(crate) fn unexpected(r: &Reply) -> Error {
    let what = format!("{r:?}");
    let short: String = what.chars().take(80).collect();
    Error::Internal(format!("unexpected reply from the daemon: {short}"))
}

fn read_replies(stream: UnixStream, pending: Arc<Mutex<Pending>>) {
    let mut r = BufReader::new(stream);
    let why = loop {
        let cpu0 = thread_cpu_ns();
        match protocol::read_frame(&mut r, usize::MAX) {
            Ok(Some((id, body))) => match Reply::decode(&body) {
                Ok(reply) => {
                    let tx = lock(&pending).waiters.remove(&id);
                    if let Some(tx) = tx {
                        let _ = tx.send((reply, thread_cpu_ns().saturating_sub(cpu0)));
                    }
                }
                Err(e) => break format!("malformed reply: {e}"),
            },
            Ok(None) => break "the daemon stopped".to_string(),
            Err(e) => break e.to_string(),
        }
    };
    let mut p = lock(&pending);
    p.closed = Some(why);
    // Dropping the senders wakes every waiting call with an error.
    p.waiters.clear();
}
