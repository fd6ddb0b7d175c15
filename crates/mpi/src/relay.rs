//! How the gateway hands a worker's large reply to the program.
//!
//! A reply larger than a message's first piece (a read's data: [`crate::transport`] sends it
//! in pieces from the buffers the worker read it into) is never held whole by the gateway. Its
//! pieces pass through one buffer of the gateway's, kept from reply to reply, on their way
//! either
//! - **into the program's buffers**, when the program named them with its request
//!   ([`Destinations`]) and the gateway can write into its memory (the program's probe at
//!   connection succeeded: `process_vm_writev`, [`inplace`]); the program then gets the
//!   reply's head alone ([`EXEC_DELIVERED_TAG`]), or
//! - **through the socket**, as one frame whose data the program's reader places in its
//!   buffers as it reads them.
//!
//! In place, each byte is copied twice on this machine (the worker's buffer into the gateway's
//! by MPI, that into the program's by the kernel) where the socket copies it three times and
//! moves it at the socket's speed.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};

use openpim_runtime::exec::mpi::wire::{
    encode_reply, write_frame, write_frame_head, Destinations, EXEC_DELIVERED_TAG,
};
use openpim_runtime::exec::remote::inplace::{self, Target};
use openpim_runtime::exec::remote::protocol::{decode_exec_head, Reply, WireError, EXEC_TAG};
use openpim_runtime::Error;

use crate::lock;
use crate::transport::{Arriving, Transport};

/// A connection of the host program: its socket, and its process where the gateway can reach
/// its memory.
pub struct Program {
    pub stream: Arc<Mutex<UnixStream>>,
    pub target: Option<Arc<Target>>,
}

/// Where a reply goes: the program's connection, the request's id there, and where the
/// program wants the request's read data.
pub struct ReplyTo<'a> {
    pub program: &'a Program,
    pub id: u64,
    pub places: Option<&'a Destinations>,
}

/// Relays the large reply `a` (its first piece's body after the gateway's id: `body`) to
/// `to`, taking its other pieces from the transport through `scratch`; without `to` (the
/// program is gone, the request unknown) the pieces are taken and dropped.
pub fn relay_large(
    t: &mut Transport,
    a: &Arriving,
    body: &[u8],
    to: Option<ReplyTo<'_>>,
    scratch: &mut Vec<u8>,
) {
    let Some(to) = to else {
        t.receive_rest(a, scratch, |_| {});
        return;
    };
    let mut s = lock(&to.program.stream);
    if let Some((mut placing, head_end)) = to
        .program
        .target
        .as_deref()
        .zip(to.places)
        .and_then(|(target, places)| Placing::plan(target, places, body))
    {
        placing.put(&body[head_end..]);
        t.receive_rest(a, scratch, |piece| placing.put(piece));
        let _ = match placing.finish() {
            Ok(()) => {
                let mut head = Vec::with_capacity(head_end);
                head.push(EXEC_DELIVERED_TAG);
                head.extend_from_slice(&body[1..head_end]);
                write_frame(&mut *s, to.id, &[], &head)
            }
            Err(e) => {
                let r = encode_reply(&Reply::Error(WireError::from_error(&e)));
                write_frame(&mut *s, to.id, &[], &r)
            }
        };
        return;
    }
    let mut ok = write_frame_head(&mut *s, to.id, body, a.total - 8).is_ok();
    t.receive_rest(a, scratch, |piece| {
        if ok {
            ok = s.write_all(piece).is_ok();
        }
    });
    if ok {
        let _ = s.flush();
    }
}

/// A reply's read data on its way into the program's buffers: the buffers in order, and how
/// far they are filled.
struct Placing<'a> {
    target: &'a Target,
    places: Vec<(u64, u64)>,
    next: usize,
    filled: u64,
    failed: Option<Error>,
}

impl<'a> Placing<'a> {
    /// The placing of the data of the reply whose first piece is `body`, and where its head
    /// ends in `body`; `None` when it cannot go in place (not a reply of reads, its head not
    /// whole in the first piece, an outcome with data and no buffers of its length): it
    /// then goes through the socket.
    fn plan(target: &'a Target, places: &Destinations, body: &[u8]) -> Option<(Self, usize)> {
        if body.first() != Some(&EXEC_TAG) {
            return None;
        }
        let (head, used) = decode_exec_head(&body[1..]).ok()?;
        let head_end = 1 + used;
        let mut flat = Vec::new();
        for (k, (result, _, len)) in head.outcomes.iter().enumerate() {
            if *len == 0 {
                continue;
            }
            let bufs = places.get(k)?;
            if result.is_err() || bufs.iter().map(|b| b.1).sum::<u64>() != *len {
                return None;
            }
            flat.extend(bufs.iter().filter(|b| b.1 > 0));
        }
        let placing = Placing {
            target,
            places: flat,
            next: 0,
            filled: 0,
            failed: None,
        };
        Some((placing, head_end))
    }

    /// Writes the next `bytes` of the data where they go (after a failure, drops them).
    fn put(&mut self, mut bytes: &[u8]) {
        if self.failed.is_some() || bytes.is_empty() {
            return;
        }
        let mut parts = Vec::new();
        while !bytes.is_empty() {
            let Some(&(addr, len)) = self.places.get(self.next) else {
                self.failed = Some(Error::Internal(
                    "an MPI worker's reply holds more read data than its outcomes say".into(),
                ));
                return;
            };
            let n = ((len - self.filled) as usize).min(bytes.len());
            parts.push((addr + self.filled, &bytes[..n]));
            bytes = &bytes[n..];
            self.filled += n as u64;
            if self.filled == len {
                self.next += 1;
                self.filled = 0;
            }
        }
        if let Err(e) = inplace::write(self.target, &parts) {
            self.failed = Some(e);
        }
    }

    /// Whether every buffer was filled, or why not.
    fn finish(self) -> Result<(), Error> {
        match self.failed {
            Some(e) => Err(e),
            None if self.next < self.places.len() => Err(Error::Internal(
                "an MPI worker's reply holds less read data than its outcomes say".into(),
            )),
            None => Ok(()),
        }
    }
}
