//! Messages of any size between the processes of the MPI job, never blocking the sender.
//!
//! Every MPI call of a process is made by its one MPI thread (the library is initialized
//! `MPI_THREAD_FUNNELED`). A message is sent as non-blocking sends of at most [`CHUNK`]
//! bytes, the first one starting with the message's length; MPI keeps the order of messages
//! between two processes, so the receiver takes the rest of a message from its sender once
//! it has seen its first chunk. Sends never block: two processes sending each other large
//! messages at once cannot deadlock. A large message the sender owns
//! ([`Transport::post_owned`]) is not copied: its first send carries the length alone and
//! the next one the buffer itself, which the receiver takes as its message without copying
//! it either. A message made of a head and large buffers ([`Outgoing`], a worker's reply with
//! a read's data) is sent from those buffers in pieces of at most [`STREAM_PIECE`] bytes, which
//! a receiver may take one at a time into a buffer of its own ([`Transport::receive_rest`]):
//! the gateway relays a large read to the program without ever holding all of it.

use std::sync::Arc;

use mpi::datatype::Equivalence;

use crate::Outgoing;
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{Destination, MatchedReceiveVec, Root, Source};

/// The largest piece of a message one MPI send carries (counts are 32-bit).
const CHUNK: usize = 1 << 30;

/// Messages up to this size are copied behind their length (one send); larger ones the
/// sender owns are sent from their buffer.
const COPIED: usize = 64 << 10;

/// The largest piece of an [`Outgoing`]'s buffers one send carries: what the receiver of a
/// streamed message holds at a time.
pub const STREAM_PIECE: usize = 4 << 20;

/// A send in flight and the buffer it reads (dropped once the send is complete).
struct InFlight {
    request: Request<'static, [u8], StaticScope>,
    buf: Arc<Vec<u8>>,
    dest: i32,
}

/// A message whose first piece has arrived: its sender, its length and the bytes of that
/// piece; the rest ([`Transport::receive_rest`]) follows from the same sender.
pub struct Arriving {
    pub src: i32,
    pub total: usize,
    pub first: Vec<u8>,
}

impl Arriving {
    /// Whether the first piece is the whole message.
    pub fn is_whole(&self) -> bool {
        self.first.len() >= self.total
    }
}

/// A broadcast this process (the root) has started: its ticket, request and buffer.
struct Broadcasting {
    ticket: u64,
    request: Request<'static, [u8], StaticScope>,
    buf: *mut [u8],
}

/// The process's MPI messages.
pub struct Transport {
    world: SimpleCommunicator,
    sending: Vec<InFlight>,
    broadcasting: Vec<Broadcasting>,
    next_ticket: u64,
    /// Bytes and messages sent so far.
    pub sent: (u64, u64),
}

impl Transport {
    /// Over `MPI_COMM_WORLD`, errors returned rather than fatal (a dead peer is the caller's
    /// to handle).
    pub fn new(world: SimpleCommunicator) -> Transport {
        // SAFETY: plain MPI calls on the world communicator and a predefined handler, from
        // the thread that initialized MPI.
        unsafe {
            mpi::ffi::MPI_Comm_set_errhandler(
                mpi::ffi::RSMPI_COMM_WORLD,
                mpi::ffi::RSMPI_ERRORS_RETURN,
            );
        }
        Transport {
            world,
            sending: Vec::new(),
            broadcasting: Vec::new(),
            next_ticket: 0,
            sent: (0, 0),
        }
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> i32 {
        self.world.rank()
    }

    /// Processes in the job.
    pub fn size(&self) -> i32 {
        self.world.size()
    }

    /// Starts sending `msg` to process `dest`.
    pub fn post(&mut self, dest: i32, msg: &[u8]) {
        self.sent.0 += msg.len() as u64;
        self.sent.1 += 1;
        let mut first = Vec::with_capacity(8 + msg.len().min(CHUNK - 8));
        first.extend_from_slice(&(msg.len() as u64).to_le_bytes());
        let head = msg.len().min(CHUNK - 8);
        first.extend_from_slice(&msg[..head]);
        self.post_buffer(dest, Arc::new(first), CHUNK);
        for chunk in msg[head..].chunks(CHUNK) {
            self.post_buffer(dest, Arc::new(chunk.to_vec()), CHUNK);
        }
    }

    /// Starts sending `msg` to process `dest`, from its own buffer when it is large (kept
    /// until the send is complete) rather than a copy.
    pub fn post_owned(&mut self, dest: i32, msg: Vec<u8>) {
        if msg.len() <= COPIED || msg.len() > CHUNK {
            return self.post(dest, &msg);
        }
        self.sent.0 += msg.len() as u64;
        self.sent.1 += 1;
        let len = (msg.len() as u64).to_le_bytes().to_vec();
        self.post_buffer(dest, Arc::new(len), CHUNK);
        self.post_buffer(dest, Arc::new(msg), CHUNK);
    }

    /// Starts sending `msg`: its head, then its buffers, the large ones from where they are,
    /// in pieces of at most [`STREAM_PIECE`] bytes.
    pub fn post_message(&mut self, dest: i32, msg: Outgoing) {
        let total = msg.head.len() + msg.data.iter().map(Vec::len).sum::<usize>();
        if msg.data.is_empty() {
            return self.post_owned(dest, msg.head);
        }
        self.sent.0 += total as u64;
        self.sent.1 += 1;
        let mut first = Vec::with_capacity(8 + msg.head.len());
        first.extend_from_slice(&(total as u64).to_le_bytes());
        first.extend_from_slice(&msg.head);
        // Small buffers travel copied together (a small message is one send); a large one goes
        // from its own.
        let mut copied = first;
        for d in msg.data {
            if d.len() <= COPIED && copied.len() + d.len() <= STREAM_PIECE {
                copied.extend_from_slice(&d);
                continue;
            }
            if !copied.is_empty() {
                self.post_buffer(dest, Arc::new(std::mem::take(&mut copied)), CHUNK);
            }
            if d.len() <= COPIED {
                copied = d;
            } else {
                self.post_buffer(dest, Arc::new(d), STREAM_PIECE);
            }
        }
        if !copied.is_empty() {
            self.post_buffer(dest, Arc::new(copied), CHUNK);
        }
    }

    /// Starts sending `buf` in sends of at most `piece` bytes (an empty buffer is one empty
    /// send); the sends keep it until they are complete.
    fn post_buffer(&mut self, dest: i32, buf: Arc<Vec<u8>>, piece: usize) {
        let len = buf.len();
        let mut at = 0;
        loop {
            let end = (at + piece).min(len);
            // SAFETY: the bytes belong to `buf`, which the send keeps (in `sending`) and
            // nobody changes; it is dropped only in `progress`, after the send has completed,
            // or leaked with a send that never completes.
            let slice: &'static [u8] =
                unsafe { std::slice::from_raw_parts(buf.as_ptr().add(at), end - at) };
            let request = self
                .world
                .process_at_rank(dest)
                .immediate_send(StaticScope, slice);
            self.sending.push(InFlight {
                request,
                buf: Arc::clone(&buf),
                dest,
            });
            at = end;
            if at >= len {
                break;
            }
        }
    }

    /// Lets the sends in flight progress and frees the buffers of the finished ones.
    pub fn progress(&mut self) {
        let mut still = Vec::with_capacity(self.sending.len());
        for f in self.sending.drain(..) {
            match f.request.test() {
                // (The send is complete: its share of the buffer goes.)
                Ok(_) => drop(f.buf),
                Err(request) => still.push(InFlight {
                    request,
                    buf: f.buf,
                    dest: f.dest,
                }),
            }
        }
        self.sending = still;
    }

    /// Starts broadcasting `buf[from..]` (at most 2 GiB - 1) from this process to every
    /// other one of the job (`MPI_Ibcast` with this process as the root); returns its ticket
    /// for [`Transport::finished_broadcasts`]. Each other process must take it with
    /// [`Transport::receive_broadcast`], in the order the broadcasts were started.
    pub fn start_broadcast(&mut self, buf: Box<[u8]>, from: usize) -> u64 {
        let buf: *mut [u8] = Box::into_raw(buf);
        // SAFETY: `buf` comes from Box::into_raw and is freed only in `finished_broadcasts`,
        // after the broadcast has completed (or leaked with it).
        let slice: &'static mut [u8] = unsafe { &mut (&mut *buf)[from..] };
        let request = self
            .world
            .process_at_rank(self.rank())
            .immediate_broadcast_into(StaticScope, slice);
        let ticket = self.next_ticket;
        self.next_ticket += 1;
        self.broadcasting.push(Broadcasting {
            ticket,
            request,
            buf,
        });
        ticket
    }

    /// The tickets of the broadcasts this process started that have completed since the
    /// last call (their buffers freed).
    pub fn finished_broadcasts(&mut self) -> Vec<u64> {
        let mut done = Vec::new();
        let mut still = Vec::with_capacity(self.broadcasting.len());
        for b in self.broadcasting.drain(..) {
            match b.request.test() {
                Ok(_) => {
                    // SAFETY: complete; the buffer came from Box::into_raw (as in `progress`).
                    drop(unsafe { Box::from_raw(b.buf) });
                    done.push(b.ticket);
                }
                Err(request) => still.push(Broadcasting {
                    ticket: b.ticket,
                    request,
                    buf: b.buf,
                }),
            }
        }
        self.broadcasting = still;
        done
    }

    /// Broadcasts started here and not complete.
    pub fn broadcasts_in_flight(&self) -> usize {
        self.broadcasting.len()
    }

    /// Takes the next broadcast of process `root`: `len` bytes (blocking until they are here).
    /// (As `MPI_Ibcast`, waited for: a blocking `MPI_Bcast` does not match the root's
    /// non-blocking one.)
    pub fn receive_broadcast(&mut self, root: i32, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        mpi::request::scope(|scope| {
            self.world
                .process_at_rank(root)
                .immediate_broadcast_into(scope, &mut buf[..])
                .wait();
        });
        buf
    }

    /// Sends still in flight.
    pub fn in_flight(&self) -> usize {
        self.sending.len()
    }

    /// Sends to process `dest` still in flight.
    pub fn in_flight_to(&self, dest: i32) -> usize {
        self.sending.iter().filter(|f| f.dest == dest).count()
    }

    /// The first piece of the next message that has arrived, from any process (of a message
    /// sent from its own buffer, that buffer).
    pub fn try_recv_first(&mut self) -> Option<Arriving> {
        let probed = self.world.any_process().immediate_matched_probe()?;
        let src = probed.1.source_rank();
        let (mut first, _) = probed.matched_receive_vec::<u8>();
        if first.len() < 8 {
            return Some(Arriving {
                src,
                total: 0,
                first: Vec::new(),
            });
        }
        let total = u64::from_le_bytes(first[..8].try_into().expect("8 bytes")) as usize;
        first.drain(..8);
        if first.is_empty() && total > 0 {
            // A message sent from its own buffer (`post_owned`): its length alone, then the
            // buffer, taken as it came.
            let probed = self.world.process_at_rank(src).matched_probe();
            first = probed.matched_receive_vec::<u8>().0;
        }
        Some(Arriving { src, total, first })
    }

    /// Takes the rest of the message `a` from its sender, piece by piece into `into` (grown
    /// as needed, never shrunk: a buffer kept from message to message is touched once),
    /// handing each piece to `each`.
    pub fn receive_rest(&mut self, a: &Arriving, into: &mut Vec<u8>, mut each: impl FnMut(&[u8])) {
        let mut got = a.first.len();
        while got < a.total {
            let (msg, status) = self.world.process_at_rank(a.src).matched_probe();
            let n = status.count(u8::equivalent_datatype()).max(0) as usize;
            if into.len() < n {
                into.resize(n, 0);
            }
            msg.matched_receive_into(&mut into[..n]);
            each(&into[..n]);
            got += n.max(1);
        }
    }

    /// The next message that has arrived, from any process: its sender and bytes.
    pub fn try_recv(&mut self) -> Option<(i32, Vec<u8>)> {
        let a = self.try_recv_first()?;
        let mut data = a.first;
        while data.len() < a.total {
            let probed = self.world.process_at_rank(a.src).matched_probe();
            data.extend_from_slice(&probed.matched_receive_vec::<u8>().0);
        }
        Some((a.src, data))
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        // Buffers of sends that never completed (a dead peer) are leaked rather than freed
        // under MPI's feet.
        for f in self.sending.drain(..) {
            std::mem::forget(f.request);
            std::mem::forget(f.buf);
        }
        for b in self.broadcasting.drain(..) {
            std::mem::forget(b.request);
        }
    }
}
