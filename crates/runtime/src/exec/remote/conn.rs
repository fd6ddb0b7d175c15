//! A tenant's connection to the daemon: one UNIX socket per process, requests from any
//! thread, replies matched by id.
//!
//! Several threads of the tenant (the host thread, the ranks' queue workers) have requests in
//! flight at once, so that the daemon serves different ranks in parallel. The waiting threads
//! read the replies themselves: one of them at a time (the leader) reads the socket and hands
//! the replies that are not its own to their threads; when its own arrives another waiting
//! thread takes over. A program with one request in flight (the usual case) thus reads its
//! reply on the thread that waits for it, without a hand-off between threads. When the daemon
//! goes away (stopped, crashed), every waiting call and every later one fails with a system
//! error naming the socket: a tenant never hangs on a dead daemon.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, Result};
use crate::exec::remote::peer::SocketWriter;
use crate::exec::remote::protocol::{self, Reply, Request};
use crate::exec::remote::ring::{self, Ring, Waited};
use crate::exec::remote::staging;

struct Pending {
    /// Replies read by a leader for other threads, by request id.
    replies: HashMap<u64, Reply>,
    /// Whether a thread is reading the socket.
    leader: bool,
    /// Threads waiting on `arrived` (waking none is a system call saved per request).
    waiting: usize,
    /// Why the connection is gone, once it is.
    closed: Option<String>,
}

/// A connection to the daemon.
pub(crate) struct Conn {
    path: String,
    writer: Mutex<SocketWriter>,
    reader: Mutex<BufReader<UnixStream>>,
    pending: Mutex<Pending>,
    /// Signalled when a reply arrives for another thread, or the leader steps down.
    arrived: Condvar,
    next_id: AtomicU64,
    /// The machine keys the daemon announced.
    pub machine: String,
    /// Whether the daemon reads and writes this program's buffers in place
    /// ([`Conn::probe_in_place`]).
    pub in_place: bool,
    /// The shared-memory ring for short synchronous requests ([`ring`]), and who uses it
    /// (one request at a time: the other threads' go on the socket meanwhile).
    ring: Option<Ring>,
    ring_user: Mutex<()>,
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
        let mut conn = Conn {
            path: path.to_string(),
            writer: Mutex::new(SocketWriter(stream)),
            reader: Mutex::new(BufReader::new(reader)),
            pending: Mutex::new(Pending {
                replies: HashMap::new(),
                leader: false,
                waiting: 0,
                closed: None,
            }),
            arrived: Condvar::new(),
            next_id: AtomicU64::new(1),
            machine: String::new(),
            in_place: false,
            ring: None,
            ring_user: Mutex::new(()),
        };
        let program = std::env::args().next().unwrap_or_default();
        match conn.call(&Request::Hello {
            version: protocol::VERSION,
            program,
        })? {
            Reply::Hello { machine } => conn.machine = machine,
            other => return Err(unexpected(&other)),
        }
        if crate::exec::remote::fastpath::switches().ring {
            // Without a ring (no memory file, an older daemon's refusal) every request
            // goes on the socket. First, so that the in-place probe goes through it.
            conn.ring = Ring::create().ok().filter(|r| {
                let req = Request::Ring {
                    size: ring::RING_SIZE as u64,
                };
                matches!(conn.call_with_fd(&req, r.fd()), Ok(Reply::Unit))
            });
        }
        conn.in_place = crate::exec::remote::fastpath::switches().in_place && conn.probe_in_place();
        Ok(conn)
    }

    /// Asks the daemon whether it can reach this process's memory (`process_vm_readv`):
    /// under Yama's `ptrace_scope = 1` the process first names the daemon (the socket's
    /// peer) as the one process that may trace it (`PR_SET_PTRACER`). False when the
    /// daemon cannot (another user, a stricter scope): transfers then copy their bytes.
    fn probe_in_place(&self) -> bool {
        let fd = lock(&self.writer).0.as_raw_fd();
        match super::inplace::probe_request(fd) {
            Some((req, _value)) => matches!(self.call(&req), Ok(Reply::Unit)),
            None => false,
        }
    }

    /// Sends a request and waits for its reply; a daemon error becomes the runtime's error.
    /// (The caller measures what the call costs it: the CPU clock is read by system calls,
    /// one pair per operation.)
    pub(crate) fn call(&self, req: &Request) -> Result<Reply> {
        self.call_sending(req, None)
    }

    /// [`Conn::call`] with descriptor `fd` attached to the request (a staging region).
    pub(crate) fn call_with_fd(&self, req: &Request, fd: RawFd) -> Result<Reply> {
        self.call_sending(req, Some(fd))
    }

    fn call_sending(&self, req: &Request, fd: Option<RawFd>) -> Result<Reply> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if let Some(why) = &lock(&self.pending).closed {
            return Err(self.gone(why));
        }
        let frame = protocol::frame(id, |e| req.encode(e))
            .map_err(|e| Error::System(format!("cannot encode a request: {e}")))?;
        if let Some(ring) = &self.ring {
            if fd.is_none() && frame.len() <= ring::AREA && rides_ring(req) {
                if let Ok(_user) = self.ring_user.try_lock() {
                    return self.call_ring(ring, id, &frame);
                }
            }
        }
        let sent = {
            let mut w = lock(&self.writer);
            match fd {
                None => w.write_all(&frame),
                Some(fd) => staging::send_with_fd(&w.0, &frame, fd),
            }
        };
        if let Err(e) = sent {
            return Err(self.gone(&e.to_string()));
        }
        if let Some(ring) = &self.ring {
            ring.note_socket_send();
        }
        match self.wait(id)? {
            Reply::Error(w) => Err(w.to_error()),
            r => Ok(r),
        }
    }

    /// A request through the ring: posted, its reply waited for (spinning, then sleeping in
    /// slices between which the socket is looked at: a daemon gone away closes it).
    fn call_ring(&self, ring: &Ring, id: u64, frame: &[u8]) -> Result<Reply> {
        let seq = ring.post_request(frame);
        // The daemon wakes a sleeping thread when the connection ends; the slice bounds the
        // wait when it could not (it crashed, or was killed).
        let waited = ring.wait_reply(seq, std::time::Duration::from_secs(1), || self.alive());
        let reply = match waited {
            Waited::Gone => {
                let why = lock(&self.pending).closed.clone();
                return Err(self.gone(why.as_deref().unwrap_or("the daemon stopped")));
            }
            // Too large for the ring: on the socket.
            Waited::OnSocket => self.wait(id)?,
            Waited::Frame(bytes) => match protocol::read_frame(&mut &bytes[..], usize::MAX) {
                Ok(Some((rid, body))) if rid == id => Reply::decode(&body).map_err(|e| {
                    Error::Internal(format!("malformed reply from the daemon: {e}"))
                })?,
                _ => {
                    return Err(Error::Internal(
                        "the daemon answered another request in the ring".into(),
                    ))
                }
            },
        };
        match reply {
            Reply::Error(w) => Err(w.to_error()),
            r => Ok(r),
        }
    }

    /// False once the connection is known closed, or the daemon's end of the socket is
    /// (a daemon stopped or gone shuts it; a thread reading the socket notes it in
    /// `closed`).
    fn alive(&self) -> bool {
        if lock(&self.pending).closed.is_some() {
            return false;
        }
        let mut p = libc::pollfd {
            fd: lock(&self.writer).0.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        };
        // SAFETY: one valid pollfd, no waiting.
        let n = unsafe { libc::poll(&mut p, 1, 0) };
        n <= 0 || p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) == 0
    }

    /// Waits for reply `id`: reads the socket while no other thread does, else waits to be
    /// handed the reply (or to take over the reading).
    fn wait(&self, id: u64) -> Result<Reply> {
        let mut p = lock(&self.pending);
        loop {
            if let Some(r) = p.replies.remove(&id) {
                return Ok(r);
            }
            if let Some(why) = &p.closed {
                return Err(self.gone(why));
            }
            if p.leader {
                p.waiting += 1;
                p = self.arrived.wait(p).unwrap_or_else(|e| e.into_inner());
                p.waiting -= 1;
                continue;
            }
            p.leader = true;
            drop(p);
            let read = protocol::read_frame(&mut *lock(&self.reader), usize::MAX);
            p = lock(&self.pending);
            p.leader = false;
            let mine = match read {
                Ok(Some((rid, body))) => match Reply::decode(&body) {
                    Ok(reply) if rid == id => Some(reply),
                    Ok(reply) => {
                        p.replies.insert(rid, reply);
                        None
                    }
                    Err(e) => {
                        p.closed = Some(format!("malformed reply: {e}"));
                        None
                    }
                },
                Ok(None) => {
                    p.closed = Some("the daemon stopped".to_string());
                    None
                }
                Err(e) => {
                    p.closed = Some(e.to_string());
                    None
                }
            };
            // A reply for another thread, or the reading to take over.
            if p.waiting > 0 {
                self.arrived.notify_all();
            }
            if let Some(r) = mine {
                return Ok(r);
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

/// Whether a request takes the ring when it is free: all but those that set the connection
/// up (before the ring exists, or carrying a descriptor) and the rank table.
fn rides_ring(req: &Request) -> bool {
    !matches!(
        req,
        Request::Hello { .. } | Request::Staging { .. } | Request::Ring { .. } | Request::Pool
    )
}

/// A reply of the wrong kind (a daemon bug or a version mismatch).
pub(crate) fn unexpected(r: &Reply) -> Error {
    let what = format!("{r:?}");
    let short: String = what.chars().take(80).collect();
    Error::Internal(format!("unexpected reply from the daemon: {short}"))
}
