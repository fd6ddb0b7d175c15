//! The messages of a distributed run: what the host program's backend asks a worker, and
//! the frames between the host program and the gateway.
//!
//! A worker's requests reuse the daemon's protocol ([`crate::exec::remote::protocol`]) for
//! everything that touches a rank (operations, logs, statistics) and add the three things a
//! worker needs besides: a rank to open or close, and the gateway's heartbeat and shutdown.
//! Replies are the daemon's [`Reply`] values.
//!
//! Between the host program and the gateway (a UNIX socket on the host's machine), a frame
//! is `[u32 length of the rest][u64 request id][u32 worker][message]`; the gateway answers
//! `[u32 length of the rest][u64 request id][reply]`. Request id 0 is the gateway's greeting:
//! the worker table ([`WorkerInfo`] lines), sent once when the program connects.

use std::io::{Read, Write};
use std::sync::Arc;

use crate::exec::remote::protocol::{DecodeError, Enc, Reply, Request, WireOp};

/// The tag of an encoded [`ToWorker::Collective`].
const COLLECTIVE_TAG: u8 = 8;

/// A request for a worker.
#[derive(Debug, Clone, PartialEq)]
pub enum ToWorker {
    /// Make rank `slot` with its DPUs `first_dpu..first_dpu + nr_dpus` (all of them from 0,
    /// or this worker's part of a rank split over several workers), for the machine
    /// `profile` describes (the program's whole profile: `UPMEM_PROFILE_BASE` then its own
    /// keys).
    Open {
        slot: u32,
        first_dpu: u32,
        nr_dpus: u32,
        /// The program's printf log budget (`OPENPIM_LOG_BUDGET` as the program read it at
        /// its first allocation), which the worker's ranks' logs are bounded by.
        log_budget: u64,
        profile: String,
    },
    /// Wipe and release rank `slot`.
    Close { slot: u32 },
    /// A rank request of the daemon's protocol (`Exec`, `Log`, `RunStats`).
    Call(Request),
    /// The gateway's heartbeat: the worker answers [`Reply::Unit`] at once.
    Ping,
    /// The run is over: the worker releases its ranks and leaves.
    Shutdown,
    /// Host -> gateway (sent to worker [`SHARE_ALL`]): broadcast `bytes` to every worker,
    /// which keeps them under `key` for writes that name it (`WriteBufs::Shared`).
    Share { key: u128, bytes: Vec<u8> },
    /// Gateway -> worker: the next MPI broadcast from the gateway is `len` bytes to keep
    /// under `key` (no reply).
    Shared { key: u128, len: u64 },
    /// Host -> worker: forget the buffers kept under `keys` (no write in flight names them).
    Unshare { keys: Vec<u128> },
    /// Host -> worker: a collective's host step on the worker's ranks of a set (the
    /// collectives library's request; the workers of the set exchange the lines that cross
    /// between them directly). Answered with [`Reply::Bytes`] of a [`CollectiveReply`].
    Collective { body: Vec<u8> },
    /// Gateway -> worker: worker `worker` (index, 0-based) died; a collective's host step
    /// waiting for its lines fails at once (no reply).
    PeerDied { worker: u32 },
}

/// A worker's answer to [`ToWorker::Collective`]: what it sent the other workers for the step
/// (the report's MPI traffic), and the collectives library's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectiveReply {
    /// Messages and bytes this worker sent to other workers for the step.
    pub peer_messages: u64,
    pub peer_bytes: u64,
    pub body: Vec<u8>,
}

impl CollectiveReply {
    /// The reply's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.body.len());
        out.extend_from_slice(&self.peer_messages.to_le_bytes());
        out.extend_from_slice(&self.peer_bytes.to_le_bytes());
        out.extend_from_slice(&self.body);
        out
    }

    /// A reply from its bytes (`None`: too short).
    pub fn decode(b: &[u8]) -> Option<CollectiveReply> {
        Some(CollectiveReply {
            peer_messages: u64::from_le_bytes(b.get(..8)?.try_into().ok()?),
            peer_bytes: u64::from_le_bytes(b.get(8..16)?.try_into().ok()?),
            body: b[16..].to_vec(),
        })
    }
}

/// A write of at most this many bytes per DPU travels batched with the rank's next operation
/// (`exec::mpi`); larger writes of one buffer to several DPUs go as broadcast buffers
/// (`exec::mpi::shared`).
pub(crate) const BATCH_BYTES_PER_DPU: usize = 64 << 10;

/// The worker a [`ToWorker::Share`] is sent to: the gateway broadcasts it to all of them.
pub const SHARE_ALL: u32 = u32::MAX - 1;

/// The worker a program's in-place probe ([`crate::exec::remote::inplace::probe_request`]) is
/// sent to: the gateway answers it itself.
pub const PROBE_IN_PLACE: u32 = u32::MAX - 2;

/// Set in the worker index of a request whose frame ends with [`Destinations`]: where the
/// reply's read data goes in the program's memory.
pub const WITH_DESTINATIONS: u32 = 1 << 30;

/// Set in the worker index of a request whose frame holds, instead of the request, where the
/// request is in the program's memory (`u64` address, `u64` length): the gateway reads it
/// from there (a batch of small writes, kept by the program until the reply has come).
pub const BODY_IN_PLACE: u32 = 1 << 29;

/// The tag that replaces [`EXEC_TAG`](crate::exec::remote::protocol::EXEC_TAG) in a reply
/// whose read data the gateway wrote into the program's buffers itself: the reply is the
/// [`Reply::Exec`]'s head alone (each outcome's data length kept, no data behind it).
pub const EXEC_DELIVERED_TAG: u8 = 200;

/// Where a request's read data goes in the program's memory: for each outcome of the reply,
/// its buffers (address, length) one after the other; none for an outcome without data.
pub type Destinations = Vec<Vec<(u64, u64)>>;

/// `d` as it ends a request's frame: the outcomes, each its buffers, then the length of all
/// that (a `u32`), so that the gateway finds it from the frame's end.
pub fn encode_destinations(d: &Destinations) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + d.iter().map(|b| 4 + 16 * b.len()).sum::<usize>());
    out.extend_from_slice(&(d.len() as u32).to_le_bytes());
    for bufs in d {
        out.extend_from_slice(&(bufs.len() as u32).to_le_bytes());
        for (addr, len) in bufs {
            out.extend_from_slice(&addr.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
    }
    let n = out.len() as u32;
    out.extend_from_slice(&n.to_le_bytes());
    out
}

/// Takes the [`Destinations`] off the end of `frame` (whose request starts at `from`), which
/// is left with the request alone; `None` when they are malformed (the frame is then left as
/// it was).
pub fn take_destinations(frame: &mut Vec<u8>, from: usize) -> Option<Destinations> {
    let end = frame.len().checked_sub(4)?;
    if end < from {
        return None;
    }
    let n = u32::from_le_bytes(frame[end..].try_into().ok()?) as usize;
    let start = end.checked_sub(n).filter(|s| *s >= from)?;
    let mut b = &frame[start..end];
    let mut next = |k: usize| -> Option<&[u8]> {
        let (h, t) = (b.get(..k)?, b.get(k..)?);
        b = t;
        Some(h)
    };
    let word = |x: &[u8]| u64::from_le_bytes(x.try_into().expect("8 bytes"));
    let half = |x: &[u8]| u32::from_le_bytes(x.try_into().expect("4 bytes")) as usize;
    let outcomes = half(next(4)?);
    let mut d = Vec::with_capacity(outcomes.min(n / 4));
    for _ in 0..outcomes {
        let count = half(next(4)?);
        let mut bufs = Vec::with_capacity(count.min(n / 16));
        for _ in 0..count {
            bufs.push((word(next(8)?), word(next(8)?)));
        }
        d.push(bufs);
    }
    if !b.is_empty() {
        return None;
    }
    frame.truncate(start);
    Some(d)
}

/// The bytes of a [`ToWorker::Share`] before its buffer's (so that it can be written without
/// copying the buffer into a message).
pub fn share_prefix(key: u128) -> [u8; 17] {
    let mut p = [5u8; 17];
    p[1..].copy_from_slice(&key.to_le_bytes());
    p
}

impl ToWorker {
    /// The message's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            ToWorker::Open {
                slot,
                first_dpu,
                nr_dpus,
                log_budget,
                profile,
            } => {
                out.push(0);
                out.extend_from_slice(&slot.to_le_bytes());
                out.extend_from_slice(&first_dpu.to_le_bytes());
                out.extend_from_slice(&nr_dpus.to_le_bytes());
                out.extend_from_slice(&log_budget.to_le_bytes());
                out.extend_from_slice(profile.as_bytes());
            }
            ToWorker::Close { slot } => {
                out.push(1);
                out.extend_from_slice(&slot.to_le_bytes());
            }
            ToWorker::Call(req) => {
                let mut e = Enc(vec![2]);
                req.encode(&mut e);
                out = e.0;
            }
            ToWorker::Ping => out.push(3),
            ToWorker::Shutdown => out.push(4),
            ToWorker::Share { key, bytes } => {
                out.extend_from_slice(&share_prefix(*key));
                out.extend_from_slice(bytes);
            }
            ToWorker::Shared { key, len } => {
                out.push(6);
                out.extend_from_slice(&key.to_le_bytes());
                out.extend_from_slice(&len.to_le_bytes());
            }
            ToWorker::Unshare { keys } => {
                out.push(7);
                for k in keys {
                    out.extend_from_slice(&k.to_le_bytes());
                }
            }
            ToWorker::Collective { body } => {
                out.push(COLLECTIVE_TAG);
                out.extend_from_slice(body);
            }
            ToWorker::PeerDied { worker } => {
                out.push(9);
                out.extend_from_slice(&worker.to_le_bytes());
            }
        }
        out
    }

    /// Whether an encoded message is a [`ToWorker::Collective`] (looked at by the gateway,
    /// which relays messages without decoding them).
    pub fn is_collective(encoded: &[u8]) -> bool {
        encoded.first() == Some(&COLLECTIVE_TAG)
    }

    /// The kind of request, as the report's MPI traffic names it.
    pub fn kind(&self) -> &'static str {
        match self {
            ToWorker::Open { .. } => "open",
            ToWorker::Close { .. } => "close",
            ToWorker::Call(Request::Exec { ops }) => match ops.first() {
                Some((_, op)) => op_kind(op),
                None => "stats",
            },
            ToWorker::Call(Request::Queue { .. }) => "queued operations",
            ToWorker::Call(Request::Log { .. }) => "log",
            ToWorker::Call(_) => "stats",
            ToWorker::Ping => "ping",
            ToWorker::Shutdown => "shutdown",
            ToWorker::Share { .. } | ToWorker::Shared { .. } => "shared buffer",
            ToWorker::Unshare { .. } => "unshare",
            ToWorker::Collective { .. } => "collective",
            ToWorker::PeerDied { .. } => "peer died",
        }
    }

    /// A message from `msg[from..]`, a write's inline buffers kept as ranges of `msg` (not
    /// copied out of it).
    pub fn decode_shared(msg: &Arc<Vec<u8>>, from: usize) -> Result<ToWorker, DecodeError> {
        match msg.get(from) {
            Some(2) => Ok(ToWorker::Call(Request::decode_shared(msg, from + 1)?)),
            _ => ToWorker::decode(msg.get(from..).unwrap_or_default()),
        }
    }

    /// A message from its bytes.
    pub fn decode(buf: &[u8]) -> Result<ToWorker, DecodeError> {
        let u32_at = |at: usize| -> Result<u32, DecodeError> {
            let b = buf.get(at..at + 4).ok_or(DecodeError::Truncated {
                at,
                needed: at + 4 - buf.len().min(at + 4),
            })?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let u128_at = |at: usize| -> Result<u128, DecodeError> {
            let b = buf.get(at..at + 16).ok_or(DecodeError::Truncated {
                at,
                needed: at + 16 - buf.len().min(at + 16),
            })?;
            Ok(u128::from_le_bytes(b.try_into().expect("16 bytes")))
        };
        match buf.first() {
            Some(0) => Ok(ToWorker::Open {
                slot: u32_at(1)?,
                first_dpu: u32_at(5)?,
                nr_dpus: u32_at(9)?,
                log_budget: u64::from(u32_at(13)?) | (u64::from(u32_at(17)?) << 32),
                profile: String::from_utf8(buf.get(21..).unwrap_or_default().to_vec())
                    .map_err(|_| DecodeError::BadText)?,
            }),
            Some(1) => Ok(ToWorker::Close { slot: u32_at(1)? }),
            Some(2) => Ok(ToWorker::Call(Request::decode(&buf[1..])?)),
            Some(3) => Ok(ToWorker::Ping),
            Some(4) => Ok(ToWorker::Shutdown),
            Some(5) => Ok(ToWorker::Share {
                key: u128_at(1)?,
                bytes: buf[17..].to_vec(),
            }),
            Some(6) => Ok(ToWorker::Shared {
                key: u128_at(1)?,
                len: u64::from(u32_at(17)?) | (u64::from(u32_at(21)?) << 32),
            }),
            Some(7) => {
                let keys = &buf[1..];
                if !keys.len().is_multiple_of(16) {
                    return Err(DecodeError::Truncated {
                        at: buf.len(),
                        needed: 16 - keys.len() % 16,
                    });
                }
                Ok(ToWorker::Unshare {
                    keys: keys
                        .chunks(16)
                        .map(|c| u128::from_le_bytes(c.try_into().expect("16 bytes")))
                        .collect(),
                })
            }
            Some(&COLLECTIVE_TAG) => Ok(ToWorker::Collective {
                body: buf[1..].to_vec(),
            }),
            Some(9) => Ok(ToWorker::PeerDied { worker: u32_at(1)? }),
            Some(&tag) => Err(DecodeError::BadTag {
                what: "worker message",
                tag,
            }),
            None => Err(DecodeError::Truncated { at: 0, needed: 1 }),
        }
    }
}

/// The kind of an operation (a batch: the operation its writes ride along with, marked).
fn op_kind(op: &WireOp) -> &'static str {
    match op {
        WireOp::Load { .. } => "load",
        WireOp::Write { items, bufs, .. } if items.len() > 1 && bufs.count() == 1 => "broadcast",
        WireOp::Write { .. } => "write",
        WireOp::Launch { .. } => "launch",
        // Small writes that waited for the rank's next operation, and that operation.
        WireOp::Batch(ops) => match ops.last().map_or("write", op_kind) {
            "load" => "load+batched writes",
            "launch" => "launch+batched writes",
            "read" => "read+batched writes",
            "broadcast" => "broadcast+batched writes",
            _ => "batched writes",
        },
        WireOp::Read { .. } | WireOp::ReadInPlace { .. } => "read",
    }
}

/// A reply's bytes.
pub fn encode_reply(reply: &Reply) -> Vec<u8> {
    let mut e = Enc::default();
    reply.encode(&mut e);
    e.0
}

/// A worker's reply as its MPI message: the request's id, then the reply, encoded in place
/// (a read's bytes copied once, not encoded and then copied behind the id).
pub fn framed_reply(id: u64, reply: &Reply) -> Vec<u8> {
    let mut e = Enc(id.to_le_bytes().to_vec());
    reply.encode(&mut e);
    e.0
}

/// [`framed_reply`], an [`Reply::Exec`]'s data left where it is: the message is the returned
/// head followed by the returned buffers (a read's bytes are sent from the buffers the worker
/// read them into).
pub fn framed_reply_leaving_data(id: u64, reply: Reply) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut e = Enc(id.to_le_bytes().to_vec());
    let data = reply.encode_leaving_data(&mut e);
    (e.0, data)
}

/// One worker of the run, as the gateway's greeting describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerInfo {
    /// The worker's rank in the MPI job (the gateway is rank 0).
    pub mpi_rank: u32,
    /// The machine it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: u32,
}

impl WorkerInfo {
    /// The greeting's line for this worker.
    pub fn line(&self) -> String {
        format!("{}\t{}\t{}", self.mpi_rank, self.pid, self.host)
    }

    /// A worker from its greeting line.
    pub fn parse(line: &str) -> Option<WorkerInfo> {
        let mut f = line.splitn(3, '\t');
        Some(WorkerInfo {
            mpi_rank: f.next()?.parse().ok()?,
            pid: f.next()?.parse().ok()?,
            host: f.next()?.to_string(),
        })
    }

    /// How messages name the worker.
    pub fn describe(&self) -> String {
        format!(
            "MPI worker {} (pid {} on {})",
            self.mpi_rank, self.pid, self.host
        )
    }
}

/// The worker (index in the worker table, 0-based) that holds rank slot `slot` when there
/// are `workers` of them: slots go round the workers, so that an allocation of consecutive
/// slots spreads over all of them.
pub fn worker_of_slot(slot: u32, workers: u32) -> u32 {
    slot % workers.max(1)
}

/// Frames longer than this are refused (a corrupt length).
const MAX_FRAME: usize = 1 << 34;

/// Writes one frame: `[u32 length][u64 id][head][body]` (`head`: the worker index on the
/// program's side, nothing on the gateway's). Lengths beyond 4 GiB use a `u32::MAX` marker
/// followed by a `u64` length.
pub fn write_frame(w: &mut impl Write, id: u64, head: &[u8], body: &[u8]) -> std::io::Result<()> {
    write_frame_with_tail(w, id, head, body, &[])
}

/// [`write_frame`] with `tail` after the body.
pub fn write_frame_with_tail(
    w: &mut impl Write,
    id: u64,
    head: &[u8],
    body: &[u8],
    tail: &[u8],
) -> std::io::Result<()> {
    write_frame_head(w, id, head, head.len() + body.len() + tail.len())?;
    w.write_all(body)?;
    w.write_all(tail)?;
    w.flush()
}

/// Writes the start of a frame whose rest (after the id) is `len` bytes, of which `head`
/// comes first; the caller writes the other `len - head.len()` bytes.
pub fn write_frame_head(
    w: &mut impl Write,
    id: u64,
    head: &[u8],
    len: usize,
) -> std::io::Result<()> {
    let len = 8 + len;
    let mut hdr = Vec::with_capacity(24 + head.len());
    match u32::try_from(len) {
        Ok(l) if l != u32::MAX => hdr.extend_from_slice(&l.to_le_bytes()),
        _ => {
            hdr.extend_from_slice(&u32::MAX.to_le_bytes());
            hdr.extend_from_slice(&(len as u64).to_le_bytes());
        }
    }
    hdr.extend_from_slice(&id.to_le_bytes());
    hdr.extend_from_slice(head);
    w.write_all(&hdr)
}

/// Reads one frame: its id and the rest; `None` at the end of the stream.
pub fn read_frame(r: &mut impl Read) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    read_frame_after(r, 0)
}

/// [`read_frame`], the rest placed after `room` bytes of the buffer (zero), which the caller
/// may fill with a header of its own instead of copying the rest into a new buffer.
pub fn read_frame_after(r: &mut impl Read, room: usize) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    let Some((id, len)) = read_frame_head(r)? else {
        return Ok(None);
    };
    let mut rest = vec![0u8; room + len];
    r.read_exact(&mut rest[room..])?;
    Ok(Some((id, rest)))
}

/// Reads a frame's length and id: the id and the length of the rest, which the caller reads;
/// `None` at the end of the stream.
pub fn read_frame_head(r: &mut impl Read) -> std::io::Result<Option<(u64, usize)>> {
    let mut l = [0u8; 4];
    match r.read_exact(&mut l) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut len = u32::from_le_bytes(l) as usize;
    if len == u32::MAX as usize {
        let mut l8 = [0u8; 8];
        r.read_exact(&mut l8)?;
        len = u64::from_le_bytes(l8) as usize;
    }
    if !(8..=MAX_FRAME).contains(&len) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("frame of {len} bytes"),
        ));
    }
    let mut id = [0u8; 8];
    r.read_exact(&mut id)?;
    Ok(Some((u64::from_le_bytes(id), len - 8)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        for m in [
            ToWorker::Open {
                slot: 3,
                first_dpu: 32,
                nr_dpus: 32,
                log_budget: 5 << 30,
                profile: "nrRanks=4,hardware=upmem-v1a".into(),
            },
            ToWorker::Close { slot: 7 },
            ToWorker::Call(Request::Log { rank: 2, dpu: 5 }),
            ToWorker::Ping,
            ToWorker::Shutdown,
            ToWorker::Share {
                key: u128::MAX - 3,
                bytes: vec![1, 2, 3],
            },
            ToWorker::Shared {
                key: 5 << 70,
                len: 1 << 40,
            },
            ToWorker::Unshare {
                keys: vec![1, u128::MAX],
            },
            ToWorker::Collective {
                body: vec![9, 8, 7],
            },
            ToWorker::PeerDied { worker: 3 },
        ] {
            assert_eq!(ToWorker::decode(&m.encode()).unwrap(), m);
        }
        assert!(ToWorker::decode(&[10]).is_err());
        let r = CollectiveReply {
            peer_messages: 3,
            peer_bytes: 1 << 33,
            body: vec![1, 2],
        };
        assert_eq!(CollectiveReply::decode(&r.encode()), Some(r));
        assert_eq!(CollectiveReply::decode(&[0; 15]), None);
        assert!(ToWorker::decode(&[0, 1]).is_err());
        assert!(ToWorker::decode(&[]).is_err());
        assert!(
            ToWorker::decode(&[5, 1, 2]).is_err(),
            "a share without its key"
        );
        assert!(ToWorker::decode(&[7, 1]).is_err(), "a partial key");
    }

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, 42, &7u32.to_le_bytes(), b"hello").unwrap();
        write_frame(&mut buf, 43, &[], b"").unwrap();
        let mut r = &buf[..];
        let (id, rest) = read_frame(&mut r).unwrap().unwrap();
        assert_eq!((id, &rest[4..]), (42, &b"hello"[..]));
        assert_eq!(read_frame(&mut r).unwrap().unwrap(), (43, Vec::new()));
        assert!(read_frame(&mut r).unwrap().is_none());
        // With room before the rest (the gateway writes its own id there).
        let mut r = &buf[..];
        let (id, rest) = read_frame_after(&mut r, 4).unwrap().unwrap();
        assert_eq!(
            (id, &rest[..4], &rest[4..8], &rest[8..]),
            (42, &[0u8; 4][..], &7u32.to_le_bytes()[..], &b"hello"[..])
        );
    }

    #[test]
    fn a_framed_reply_is_the_id_then_the_reply() {
        let r = Reply::Bytes(vec![1, 2, 3]);
        let mut want = 7u64.to_le_bytes().to_vec();
        want.extend(encode_reply(&r));
        assert_eq!(framed_reply(7, &r), want);
    }

    /// A reply framed with its data left apart is, put back together, the reply framed whole;
    /// a frame written as its head and then the rest is the frame written at once.
    #[test]
    fn a_reply_framed_apart_is_the_reply_framed_whole() {
        use crate::exec::remote::protocol::RankOutcome;
        use crate::exec::OpFacts;
        let outcome = |data: Vec<u8>, host_ns| RankOutcome {
            result: Ok(()),
            facts: OpFacts {
                host_ns,
                launch: None,
            },
            data,
        };
        let replies = [
            Reply::Exec {
                ipc_ns: 5,
                emu_ns: 6,
                outcomes: vec![
                    outcome(vec![1; 100_000], 3),
                    outcome(Vec::new(), 4),
                    outcome(vec![9, 8], 0),
                ],
            },
            Reply::Bytes(vec![1, 2, 3]),
            Reply::Unit,
        ];
        for r in replies {
            let whole = framed_reply(11, &r);
            let (mut head, data) = framed_reply_leaving_data(11, r.clone());
            if let Reply::Exec { outcomes, .. } = &r {
                assert_eq!(data.len(), outcomes.len());
            } else {
                assert!(data.is_empty());
            }
            for d in data {
                head.extend(d);
            }
            assert_eq!(head, whole);

            let mut at_once = Vec::new();
            write_frame(&mut at_once, 3, &[7, 7], &whole).unwrap();
            let mut in_parts = Vec::new();
            write_frame_head(&mut in_parts, 3, &[7, 7], 2 + whole.len()).unwrap();
            in_parts.extend_from_slice(&whole);
            assert_eq!(in_parts, at_once);
            let (id, rest) = read_frame(&mut &at_once[..]).unwrap().unwrap();
            assert_eq!((id, rest.len()), (3, 2 + whole.len()));
        }
    }

    #[test]
    fn slots_go_round_the_workers() {
        let w: Vec<u32> = (0..4).map(|s| worker_of_slot(s, 2)).collect();
        assert_eq!(w, [0, 1, 0, 1]);
        let info = WorkerInfo {
            mpi_rank: 2,
            host: "node-a".into(),
            pid: 99,
        };
        assert_eq!(WorkerInfo::parse(&info.line()), Some(info));
    }
}
