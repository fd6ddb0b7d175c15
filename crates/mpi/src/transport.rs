//! Messages of any size between the processes of the MPI job, never blocking the sender.
//!
//! Every MPI call of a process is made by its one MPI thread (the library is initialized
//! `MPI_THREAD_FUNNELED`). A message is sent as non-blocking sends of at most [`CHUNK`]
//! bytes, the first one starting with the message's length; MPI keeps the order of messages
//! between two processes, so the receiver takes the rest of a message from its sender once
//! it has seen its first chunk. Sends never block: two processes sending each other large
//! messages at once cannot deadlock.

use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{Destination, MatchedReceiveVec, Source};

/// The largest piece of a message one MPI send carries (counts are 32-bit).
const CHUNK: usize = 1 << 30;

/// A send in flight and the buffer it reads (freed once the send is complete).
struct InFlight {
    request: Request<'static, [u8], StaticScope>,
    buf: *mut [u8],
}

/// The process's MPI messages.
pub struct Transport {
    world: SimpleCommunicator,
    sending: Vec<InFlight>,
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
        self.post_chunk(dest, first.into_boxed_slice());
        for chunk in msg[head..].chunks(CHUNK) {
            self.post_chunk(dest, chunk.to_vec().into_boxed_slice());
        }
    }

    fn post_chunk(&mut self, dest: i32, chunk: Box<[u8]>) {
        let buf: *mut [u8] = Box::into_raw(chunk);
        // SAFETY: `buf` comes from Box::into_raw and is freed only in `progress`, after its
        // send has completed: it lives as long as the request reads it.
        let slice: &'static [u8] = unsafe { &*buf };
        let request = self
            .world
            .process_at_rank(dest)
            .immediate_send(StaticScope, slice);
        self.sending.push(InFlight { request, buf });
    }

    /// Lets the sends in flight progress and frees the buffers of the finished ones.
    pub fn progress(&mut self) {
        let mut still = Vec::with_capacity(self.sending.len());
        for f in self.sending.drain(..) {
            match f.request.test() {
                Ok(_) => {
                    // SAFETY: the send is complete; the buffer came from Box::into_raw and
                    // nothing else refers to it.
                    drop(unsafe { Box::from_raw(f.buf) });
                }
                Err(request) => still.push(InFlight {
                    request,
                    buf: f.buf,
                }),
            }
        }
        self.sending = still;
    }

    /// Sends still in flight.
    pub fn in_flight(&self) -> usize {
        self.sending.len()
    }

    /// The next message that has arrived, from any process: its sender and bytes.
    pub fn try_recv(&mut self) -> Option<(i32, Vec<u8>)> {
        let probed = self.world.any_process().immediate_matched_probe()?;
        let src = probed.1.source_rank();
        let (first, _) = probed.matched_receive_vec::<u8>();
        if first.len() < 8 {
            return Some((src, Vec::new()));
        }
        let total = u64::from_le_bytes(first[..8].try_into().expect("8 bytes")) as usize;
        let mut data = first;
        data.drain(..8);
        while data.len() < total {
            let probed = self.world.process_at_rank(src).matched_probe();
            let (chunk, _) = probed.matched_receive_vec::<u8>();
            data.extend_from_slice(&chunk);
        }
        Some((src, data))
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        // Buffers of sends that never completed (a dead peer) are leaked rather than freed
        // under MPI's feet.
        for f in self.sending.drain(..) {
            std::mem::forget(f.request);
        }
    }
}
