//! The wire protocol between a tenant (`exec::remote`) and the rank-manager daemon.
//!
//! A message is a frame: its length (`u32`, little endian, not counting itself), then the
//! request id (`u64`: the reply carries the request's), a tag (`u8`) and the body. Integers
//! are little endian; byte strings and texts are a `u32` length and the bytes; lists a `u32`
//! count and the items; options a `0`/`1` byte and the value. Requests and replies are enums
//! ([`Request`], [`Reply`]) with one variant per operation.
//!
//! The daemon decodes what any local process sends it: decoding checks every length against
//! the bytes that are really there (a count never makes it allocate more than the frame's
//! size), rejects unknown tags and trailing bytes, and never panics (`tests` and the
//! property test in `crates/daemon/tests` feed it garbage). Whether a request is *allowed*
//! (the rank is the tenant's, the place is inside the memory) is the daemon's check, not
//! the decoder's.

use std::io::{Read, Write};
use std::sync::Arc;

use openpim_machine::{IramAddr, MramAddr, WramAddr};

pub use crate::clock::cpu::thread_cpu_ns;
use crate::clock::stats::{DpuRunStats, LaunchRecord};
use crate::error::{Error, FaultInfo};
use crate::exec::{HostPtr, OpFacts, XferItem};
use crate::xfer::Place;

/// Protocol version: a daemon refuses a tenant of another version.
pub const VERSION: u32 = 6;

/// Largest frame either side accepts (bytes).
pub const MAX_FRAME: usize = 1 << 30;

/// A malformed message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The message ends before a field.
    #[error("message truncated: {needed} more bytes needed at byte {at}")]
    Truncated { at: usize, needed: usize },
    /// A tag no variant has.
    #[error("unknown {what} tag {tag}")]
    BadTag { what: &'static str, tag: u8 },
    /// Bytes left after the message.
    #[error("{0} bytes after the end of the message")]
    Trailing(usize),
    /// A text that is not UTF-8.
    #[error("text field is not UTF-8")]
    BadText,
    /// A number too large for its field.
    #[error("{what} {value} is out of range")]
    OutOfRange { what: &'static str, value: u64 },
    /// A frame longer than the limit.
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    TooLong { len: usize, max: usize },
}

/// One DPU's part of a transfer on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireItem {
    /// DPU index in the rank.
    pub dpu: u32,
    pub place: Place,
    /// Host -> DPU: which of the operation's buffers the DPU gets (DPUs given the same host
    /// buffer share one: a broadcast is sent once). DPU -> host: the item's index.
    pub buf: u32,
}

impl WireItem {
    /// The item as a transfer of the rank's operation, its buffer among `bufs` (the
    /// operation's host buffers, by [`WireItem::buf`]), where the serving side holds them.
    pub fn to_xfer(&self, bufs: &[*mut u8]) -> XferItem {
        XferItem {
            dpu: self.dpu,
            place: self.place,
            buf: HostPtr(bufs[self.buf as usize]),
        }
    }
}

/// One rank's operation on the wire (callbacks never leave the tenant).
#[derive(Debug, Clone, PartialEq)]
pub enum WireOp {
    /// Load a program (its ELF image) on DPUs of the rank.
    Load {
        elf: Vec<u8>,
        origin: Option<String>,
        dpus: Vec<u32>,
    },
    /// Host -> DPU: `len` bytes per item, from buffer `item.buf` of `bufs`.
    Write {
        len: u32,
        items: Vec<WireItem>,
        bufs: WriteBufs,
    },
    /// DPU -> host: `len` bytes per item, in the items' order: in the reply, or with
    /// `staged`, in the rank's staging region from that offset.
    Read {
        len: u32,
        items: Vec<WireItem>,
        staged: Option<u64>,
    },
    /// DPU -> host: `len` bytes per item, written by the daemon straight into the tenant's
    /// buffers at `addrs` (item `k` to `addrs[k]`; in-place transfers, after the tenant's
    /// [`Request::InPlace`] probe succeeded).
    ReadInPlace {
        len: u32,
        items: Vec<WireItem>,
        addrs: Vec<u64>,
    },
    /// Run the DPUs with the programs they have.
    Launch { dpus: Vec<u32> },
    /// Small host -> DPU writes batched by the tenant, run in order (vPIM's request
    /// batching): `Write`s, then possibly one operation of another kind that the batch
    /// rides along with (whose outcome the reply carries).
    Batch(Vec<WireOp>),
}

/// A write's buffers: in the message, in the rank's staging region ([`super::staging`]) at
/// these offsets, in the tenant's own memory at these addresses, which the daemon reads
/// in place (`len` bytes each), or (MPI workers only) buffers broadcast to every worker
/// before, by their keys (`exec::mpi::shared`).
#[derive(Debug, Clone, PartialEq)]
pub enum WriteBufs {
    Inline(InlineBufs),
    Staged(Vec<u64>),
    InPlace(Vec<u64>),
    Shared(Vec<u128>),
}

impl WriteBufs {
    pub fn count(&self) -> usize {
        match self {
            WriteBufs::Inline(b) => b.count(),
            WriteBufs::Staged(o) | WriteBufs::InPlace(o) => o.len(),
            WriteBufs::Shared(k) => k.len(),
        }
    }
}

/// A write's buffers carried in the message: `count` buffers of `len` bytes each. Held in
/// one allocation (a write of many DPUs' buffers costs one allocation and one copy on each
/// side, not one per buffer) that a split rank's parts and a received message's requests
/// share, or in the program's own buffers until the message is encoded
/// ([`InlineBufs::borrowed`]: no copy before the encoding's).
#[derive(Debug, Clone)]
pub struct InlineBufs {
    len: usize,
    count: usize,
    bytes: Held,
}

/// Where an [`InlineBufs`]' bytes are.
#[derive(Debug, Clone)]
enum Held {
    /// In memory shared by every value that picked from it (a copy made for it, or a received
    /// message): buffer `k` from byte `starts[k]` on.
    Memory {
        bytes: Arc<Vec<u8>>,
        starts: Vec<usize>,
    },
    /// In the program's buffers (`len` bytes at each).
    Borrowed(Vec<HostPtr>),
}

impl Held {
    /// `count` buffers of `len` bytes back to back in `bytes` from byte `at` on.
    fn back_to_back(bytes: Arc<Vec<u8>>, at: usize, len: usize, count: usize) -> Held {
        Held::Memory {
            bytes,
            starts: (0..count).map(|k| at + k * len).collect(),
        }
    }
}

/// Equal when their buffers' bytes are, wherever they are held.
impl PartialEq for InlineBufs {
    fn eq(&self, other: &InlineBufs) -> bool {
        self.len == other.len
            && self.count == other.count
            && (0..self.count).all(|k| self.get(k) == other.get(k))
    }
}

impl Eq for InlineBufs {}

impl InlineBufs {
    /// Copies of `bufs`, each `len` bytes (`None`: one of another length).
    pub fn of<'b>(len: usize, bufs: impl IntoIterator<Item = &'b [u8]>) -> Option<InlineBufs> {
        let mut bytes = Vec::new();
        let mut count = 0;
        for b in bufs {
            if b.len() != len {
                return None;
            }
            bytes.extend_from_slice(b);
            count += 1;
        }
        Some(InlineBufs {
            len,
            count,
            bytes: Held::back_to_back(Arc::new(bytes), 0, len, count),
        })
    }

    /// Copies of the `len` bytes at each of `srcs`.
    ///
    /// # Safety
    /// Every pointer of `srcs` must be valid for reads of `len` bytes.
    pub unsafe fn copied(len: usize, srcs: &[*mut u8]) -> InlineBufs {
        let mut bytes = Vec::with_capacity(len * srcs.len());
        for p in srcs {
            // SAFETY: the caller's contract.
            bytes.extend_from_slice(unsafe { std::slice::from_raw_parts(p.cast_const(), len) });
        }
        InlineBufs {
            len,
            count: srcs.len(),
            bytes: Held::back_to_back(Arc::new(bytes), 0, len, srcs.len()),
        }
    }

    /// The `len` bytes at each of `srcs`, read where they are when they are needed (encoded,
    /// or written by a local rank).
    ///
    /// # Safety
    /// Every pointer of `srcs` must stay valid for reads of `len` bytes, and its bytes
    /// unchanged, as long as the value or any clone of it lives.
    pub unsafe fn borrowed(len: usize, srcs: &[*mut u8]) -> InlineBufs {
        InlineBufs {
            len,
            count: srcs.len(),
            bytes: Held::Borrowed(srcs.iter().map(|p| HostPtr(*p)).collect()),
        }
    }

    /// The bytes of each buffer.
    pub fn len_each(&self) -> usize {
        self.len
    }

    /// How many buffers.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Buffer `k` (`k < count`).
    pub fn get(&self, k: usize) -> &[u8] {
        match &self.bytes {
            Held::Memory { bytes, starts } => &bytes[starts[k]..starts[k] + self.len],
            // SAFETY: `borrowed`'s contract: valid for `len` bytes while `self` lives.
            Held::Borrowed(p) => unsafe { std::slice::from_raw_parts(p[k].0, self.len) },
        }
    }

    /// Buffers `picked`, in that order, held where these are (no copy).
    pub fn pick(&self, picked: &[usize]) -> InlineBufs {
        let bytes = match &self.bytes {
            Held::Memory { bytes, starts } => Held::Memory {
                bytes: Arc::clone(bytes),
                starts: picked.iter().map(|k| starts[*k]).collect(),
            },
            Held::Borrowed(p) => Held::Borrowed(picked.iter().map(|k| p[*k]).collect()),
        };
        InlineBufs {
            len: self.len,
            count: picked.len(),
            bytes,
        }
    }

    /// Where each buffer starts, to be read only (valid while `self` lives).
    pub fn ptrs(&self) -> Vec<*mut u8> {
        match &self.bytes {
            Held::Memory { bytes, starts } => starts
                .iter()
                .map(|s| bytes[*s..].as_ptr().cast_mut())
                .collect(),
            Held::Borrowed(p) => p.iter().map(|p| p.0).collect(),
        }
    }

    /// The buffers' bytes, back to back, at the end of `out`.
    fn encode_into(&self, out: &mut Vec<u8>) {
        out.reserve(self.len * self.count);
        if let Held::Memory { bytes, starts } = &self.bytes {
            // Back to back already (a write whole, or a part's run of buffers): one copy.
            let first = starts.first().copied().unwrap_or(0);
            if starts
                .iter()
                .enumerate()
                .all(|(k, s)| *s == first + k * self.len)
            {
                out.extend_from_slice(&bytes[first..first + self.len * self.count]);
                return;
            }
        }
        for k in 0..self.count {
            out.extend_from_slice(self.get(k));
        }
    }
}

/// A tenant's request.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// The first request of a connection: the protocol version and the tenant's program.
    Hello { version: u32, program: String },
    /// `dpu_alloc` / `dpu_alloc_ranks`: `profile` gives the run options (the daemon's
    /// machine keys win); `ranks`/`dpus` as in [`crate::exec::AllocRequest`].
    Alloc {
        profile: String,
        ranks: Option<u32>,
        dpus: Option<u32>,
        what: String,
    },
    /// Release a rank.
    Free { rank: u32 },
    /// One operation per rank (distinct ranks), run in parallel.
    Exec { ops: Vec<(u32, WireOp)> },
    /// Operations queued on one rank (`DPU_ASYNCHRONOUS`), run in order, each whatever the
    /// outcome of the ones before (as a rank's queue runs them in process): one message for
    /// what the rank's queue held when it was sent. The reply is an [`Reply::Exec`] with one
    /// outcome per operation, in order.
    Queue { rank: u32, ops: Vec<WireOp> },
    /// Whether the rank's last launch faulted.
    Status { rank: u32 },
    /// One DPU's log.
    Log { rank: u32, dpu: u32 },
    /// Statistics of the last launch of DPUs `first..first + count`.
    RunStats { rank: u32, first: u32, count: u32 },
    /// The rank table (for `openpim pool`).
    Pool,
    /// The rank's staging region from now on: a memory file of `size` bytes whose
    /// descriptor comes with this message (`SCM_RIGHTS`).
    Staging { rank: u32, size: u64 },
    /// Whether the daemon can reach this tenant's memory in place (`process_vm_readv`): it
    /// reads the 8 bytes at `addr` and answers [`Reply::Unit`] when they are `value`, an
    /// error otherwise (then transfers go through the staging region or the messages).
    InPlace { addr: u64, value: u64 },
    /// The connection's request ring from now on ([`super::ring`]): a memory file of `size`
    /// bytes whose descriptor comes with this message (`SCM_RIGHTS`).
    Ring { size: u64 },
}

/// One rank's outcome in an [`Reply::Exec`].
#[derive(Debug, Clone, PartialEq)]
pub struct RankOutcome {
    pub result: Result<(), WireError>,
    pub facts: OpFacts,
    /// A read's bytes, item after item.
    pub data: Vec<u8>,
}

/// An error crossing the wire: the runtime's error, rebuilt on the other side with the same
/// variant (so the same SDK error code) and the same message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub tag: u8,
    pub fields: Vec<String>,
}

/// A rank of the pool, as `openpim pool` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PoolRank {
    pub rank: u32,
    /// `NAAV`, `ALLO` or `NANA`.
    pub state: String,
    pub uid: Option<u32>,
    pub pid: Option<u32>,
    pub program: String,
    /// Seconds since the state began.
    pub since_ms: u64,
    pub bytes_moved: u64,
    pub launches: u64,
    /// Time held with nothing running on it nor moving to it, ms.
    pub idle_ms: u64,
    pub wipes: u64,
}

/// The daemon's reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The daemon's machine: the profile keys that fix it (`hardware=..,nrRanks=..`).
    Hello {
        machine: String,
    },
    /// Allocated ranks: (slot, DPUs in use).
    Ranks(Vec<(u32, u32)>),
    /// Done, nothing to say.
    Unit,
    /// Per rank of the request, in order. `ipc_ns`: the daemon's CPU time on the remote
    /// path of this request (reading and decoding it, encoding the reply), which the tenant's
    /// clock counts; `emu_ns`: its real time running the operations (the DPU simulation and
    /// memory work), which it does not.
    Exec {
        ipc_ns: u64,
        emu_ns: u64,
        outcomes: Vec<RankOutcome>,
    },
    Status {
        faulted: bool,
    },
    Bytes(Vec<u8>),
    Stats(Vec<Option<DpuRunStats>>),
    Pool(Vec<PoolRank>),
    Error(WireError),
}

// ------------------------------------------------------------------------------------------
// Encoding.

/// A message being encoded.
#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).unwrap_or(u32::MAX));
    }
    fn bytes(&mut self, b: &[u8]) {
        self.len(b.len());
        self.0.extend_from_slice(b);
    }
    fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }
    fn opt_u32(&mut self, v: Option<u32>) {
        match v {
            Some(v) => {
                self.u8(1);
                self.u32(v);
            }
            None => self.u8(0),
        }
    }
    fn opt_str(&mut self, v: Option<&str>) {
        match v {
            Some(v) => {
                self.u8(1);
                self.str(v);
            }
            None => self.u8(0),
        }
    }
    fn opt_u64(&mut self, v: Option<u64>) {
        match v {
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
            None => self.u8(0),
        }
    }
    fn u32s(&mut self, v: &[u32]) {
        self.len(v.len());
        for x in v {
            self.u32(*x);
        }
    }
    fn u64s(&mut self, v: &[u64]) {
        self.len(v.len());
        for x in v {
            self.u64(*x);
        }
    }
    fn place(&mut self, p: Place) {
        let (tag, a) = match p {
            Place::Wram(a) => (0, a.0),
            Place::Mram(a) => (1, a.0),
            Place::Iram(a) => (2, a.0),
        };
        self.u8(tag);
        self.u32(a);
    }
    fn items(&mut self, items: &[WireItem]) {
        self.len(items.len());
        for i in items {
            self.u32(i.dpu);
            self.place(i.place);
            self.u32(i.buf);
        }
    }
    fn ops(&mut self, ops: &[WireOp]) {
        self.len(ops.len());
        for op in ops {
            op.encode(self);
        }
    }
    fn error(&mut self, e: &WireError) {
        self.u8(e.tag);
        self.len(e.fields.len());
        for f in &e.fields {
            self.str(f);
        }
    }
    fn stats(&mut self, s: &DpuRunStats) {
        for v in [
            s.cycles,
            s.instructions,
            u64::from(s.tasklets),
            s.dma_bytes,
            s.dma_requests,
            s.dma_busy_cycles,
            s.sleep_cycles,
            s.dma_wait_cycles,
            s.runnable_cycles,
            s.dma_quirks,
        ] {
            self.u64(v);
        }
    }
    fn launch(&mut self, r: &LaunchRecord) {
        self.u32(r.rank);
        self.u32(r.dpus);
        self.u32(r.faults);
        self.u32(r.tasklets);
        for v in [
            r.max_cycles,
            r.total_cycles,
            r.total_instructions,
            r.modeled_seconds.to_bits(),
            r.total_tasklets,
            r.dma_bytes,
            r.dma_requests,
            r.dma_busy_cycles,
            r.sleep_cycles,
            r.dma_wait_cycles,
            r.runnable_cycles,
            r.tasklet_cycles,
            r.dma_quirks,
        ] {
            self.u64(v);
        }
        self.opt_str(r.dma_quirk_example.as_deref());
        self.u64(r.waiting_dpus);
        self.opt_str(r.waiting_example.as_deref());
    }
}

/// A message being decoded.
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    /// The message `buf` is part of, from `buf`'s first byte on: a write's inline buffers
    /// are then kept as ranges of it rather than copied out ([`Request::decode_shared`]).
    shared: Option<(&'a Arc<Vec<u8>>, usize)>,
}

type DResult<T> = Result<T, DecodeError>;

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8]) -> Dec<'a> {
        Dec {
            buf,
            pos: 0,
            shared: None,
        }
    }
    fn take(&mut self, n: usize) -> DResult<&'a [u8]> {
        let left = self.buf.len() - self.pos;
        if n > left {
            return Err(DecodeError::Truncated {
                at: self.pos,
                needed: n - left,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> DResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> DResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> DResult<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A `u64` field holding a `u32` value.
    fn u32_in_u64(&mut self, what: &'static str) -> DResult<u32> {
        let value = self.u64()?;
        u32::try_from(value).map_err(|_| DecodeError::OutOfRange { what, value })
    }
    fn bool(&mut self) -> DResult<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            tag => Err(DecodeError::BadTag { what: "bool", tag }),
        }
    }
    /// A count of items each at least `min` bytes long: never more than the bytes left allow.
    fn count(&mut self, min: usize) -> DResult<usize> {
        let n = self.u32()? as usize;
        let left = self.buf.len() - self.pos;
        if n.saturating_mul(min.max(1)) > left {
            return Err(DecodeError::Truncated {
                at: self.pos,
                needed: n.saturating_mul(min.max(1)) - left,
            });
        }
        Ok(n)
    }
    /// A data length (`u64`) that the bytes left can hold.
    fn data_len(&self, len: u64) -> DResult<usize> {
        let left = self.buf.len() - self.pos;
        match usize::try_from(len) {
            Ok(n) if n <= left => Ok(n),
            _ => Err(DecodeError::Truncated {
                at: self.pos,
                needed: usize::try_from(len).unwrap_or(usize::MAX) - left,
            }),
        }
    }
    fn bytes(&mut self) -> DResult<Vec<u8>> {
        let n = self.count(1)?;
        Ok(self.take(n)?.to_vec())
    }
    fn str(&mut self) -> DResult<String> {
        String::from_utf8(self.bytes()?).map_err(|_| DecodeError::BadText)
    }
    fn opt_u32(&mut self) -> DResult<Option<u32>> {
        Ok(if self.bool()? {
            Some(self.u32()?)
        } else {
            None
        })
    }
    fn opt_str(&mut self) -> DResult<Option<String>> {
        Ok(if self.bool()? {
            Some(self.str()?)
        } else {
            None
        })
    }
    fn opt_u64(&mut self) -> DResult<Option<u64>> {
        Ok(if self.bool()? {
            Some(self.u64()?)
        } else {
            None
        })
    }
    fn u32s(&mut self) -> DResult<Vec<u32>> {
        let n = self.count(4)?;
        (0..n).map(|_| self.u32()).collect()
    }
    fn u64s(&mut self) -> DResult<Vec<u64>> {
        let n = self.count(8)?;
        (0..n).map(|_| self.u64()).collect()
    }
    fn place(&mut self) -> DResult<Place> {
        let tag = self.u8()?;
        let a = self.u32()?;
        match tag {
            0 => Ok(Place::Wram(WramAddr(a))),
            1 => Ok(Place::Mram(MramAddr(a))),
            2 => Ok(Place::Iram(IramAddr(a))),
            tag => Err(DecodeError::BadTag { what: "place", tag }),
        }
    }
    fn items(&mut self) -> DResult<Vec<WireItem>> {
        let n = self.count(13)?;
        (0..n)
            .map(|_| {
                Ok(WireItem {
                    dpu: self.u32()?,
                    place: self.place()?,
                    buf: self.u32()?,
                })
            })
            .collect()
    }
    fn error(&mut self) -> DResult<WireError> {
        let tag = self.u8()?;
        let n = self.count(4)?;
        let fields = (0..n).map(|_| self.str()).collect::<DResult<_>>()?;
        Ok(WireError { tag, fields })
    }
    fn stats(&mut self) -> DResult<DpuRunStats> {
        Ok(DpuRunStats {
            cycles: self.u64()?,
            instructions: self.u64()?,
            tasklets: self.u32_in_u64("tasklet count")?,
            dma_bytes: self.u64()?,
            dma_requests: self.u64()?,
            dma_busy_cycles: self.u64()?,
            sleep_cycles: self.u64()?,
            dma_wait_cycles: self.u64()?,
            runnable_cycles: self.u64()?,
            dma_quirks: self.u64()?,
            // The daemon's runs have no debugger.
            stepped: false,
        })
    }
    fn launch(&mut self) -> DResult<LaunchRecord> {
        Ok(LaunchRecord {
            rank: self.u32()?,
            dpus: self.u32()?,
            faults: self.u32()?,
            tasklets: self.u32()?,
            max_cycles: self.u64()?,
            total_cycles: self.u64()?,
            total_instructions: self.u64()?,
            modeled_seconds: f64::from_bits(self.u64()?),
            total_tasklets: self.u64()?,
            dma_bytes: self.u64()?,
            dma_requests: self.u64()?,
            dma_busy_cycles: self.u64()?,
            sleep_cycles: self.u64()?,
            dma_wait_cycles: self.u64()?,
            runnable_cycles: self.u64()?,
            tasklet_cycles: self.u64()?,
            dma_quirks: self.u64()?,
            dma_quirk_example: self.opt_str()?,
            waiting_dpus: self.u64()?,
            waiting_example: self.opt_str()?,
            stepped_dpus: 0,
        })
    }
    fn end(&self) -> DResult<()> {
        match self.buf.len() - self.pos {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }
}

impl WireOp {
    fn encode(&self, e: &mut Enc) {
        match self {
            WireOp::Load { elf, origin, dpus } => {
                e.u8(0);
                e.bytes(elf);
                e.opt_str(origin.as_deref());
                e.u32s(dpus);
            }
            WireOp::Write { len, items, bufs } => {
                e.u8(1);
                e.u32(*len);
                e.items(items);
                match bufs {
                    WriteBufs::Inline(bufs) => {
                        // The count, then the buffers' bytes (each `len`: no lengths).
                        e.u8(0);
                        e.len(bufs.count());
                        bufs.encode_into(&mut e.0);
                    }
                    WriteBufs::Staged(offsets) => {
                        e.u8(1);
                        e.u64s(offsets);
                    }
                    WriteBufs::InPlace(addrs) => {
                        e.u8(2);
                        e.u64s(addrs);
                    }
                    WriteBufs::Shared(keys) => {
                        e.u8(3);
                        let halves: Vec<u64> = keys
                            .iter()
                            .flat_map(|k| [*k as u64, (*k >> 64) as u64])
                            .collect();
                        e.u64s(&halves);
                    }
                }
            }
            WireOp::Read { len, items, staged } => {
                e.u8(2);
                e.u32(*len);
                e.items(items);
                e.opt_u64(*staged);
            }
            WireOp::Launch { dpus } => {
                e.u8(3);
                e.u32s(dpus);
            }
            WireOp::Batch(ops) => {
                e.u8(4);
                e.ops(ops);
            }
            WireOp::ReadInPlace { len, items, addrs } => {
                e.u8(5);
                e.u32(*len);
                e.items(items);
                e.u64s(addrs);
            }
        }
    }

    fn decode(d: &mut Dec<'_>) -> DResult<WireOp> {
        Ok(match d.u8()? {
            0 => WireOp::Load {
                elf: d.bytes()?,
                origin: d.opt_str()?,
                dpus: d.u32s()?,
            },
            1 => {
                let len = d.u32()?;
                let items = d.items()?;
                let bufs = match d.u8()? {
                    0 => {
                        // No more buffers than items: each buffer is some item's.
                        let count = d.u32()? as usize;
                        if count > items.len() {
                            return Err(DecodeError::OutOfRange {
                                what: "write buffers (more than the write's items)",
                                value: count as u64,
                            });
                        }
                        let at = d.pos;
                        let bytes = d.take(count * len as usize)?;
                        let bytes = match d.shared {
                            Some((msg, from)) => {
                                Held::back_to_back(Arc::clone(msg), from + at, len as usize, count)
                            }
                            None => {
                                Held::back_to_back(Arc::new(bytes.to_vec()), 0, len as usize, count)
                            }
                        };
                        WriteBufs::Inline(InlineBufs {
                            len: len as usize,
                            count,
                            bytes,
                        })
                    }
                    1 => WriteBufs::Staged(d.u64s()?),
                    2 => WriteBufs::InPlace(d.u64s()?),
                    3 => {
                        let halves = d.u64s()?;
                        if !halves.len().is_multiple_of(2) {
                            return Err(DecodeError::BadTag {
                                what: "shared buffer keys",
                                tag: 3,
                            });
                        }
                        WriteBufs::Shared(
                            halves
                                .chunks(2)
                                .map(|h| u128::from(h[0]) | (u128::from(h[1]) << 64))
                                .collect(),
                        )
                    }
                    tag => {
                        return Err(DecodeError::BadTag {
                            what: "buffers",
                            tag,
                        })
                    }
                };
                WireOp::Write { len, items, bufs }
            }
            2 => WireOp::Read {
                len: d.u32()?,
                items: d.items()?,
                staged: d.opt_u64()?,
            },
            3 => WireOp::Launch { dpus: d.u32s()? },
            4 => {
                let n = d.count(5)?;
                let ops = (0..n)
                    .map(|k| match WireOp::decode(d)? {
                        op @ WireOp::Write { .. } => Ok(op),
                        WireOp::Batch(_) => Err(DecodeError::BadTag {
                            what: "batched operation",
                            tag: 4,
                        }),
                        op if k + 1 == n => Ok(op),
                        _ => Err(DecodeError::BadTag {
                            what: "batched operation before the last",
                            tag: 1,
                        }),
                    })
                    .collect::<DResult<_>>()?;
                WireOp::Batch(ops)
            }
            5 => WireOp::ReadInPlace {
                len: d.u32()?,
                items: d.items()?,
                addrs: d.u64s()?,
            },
            tag => {
                return Err(DecodeError::BadTag {
                    what: "operation",
                    tag,
                })
            }
        })
    }
}

impl Request {
    /// The request's body (tag and fields).
    pub fn encode(&self, e: &mut Enc) {
        match self {
            Request::Hello { version, program } => {
                e.u8(0);
                e.u32(*version);
                e.str(program);
            }
            Request::Alloc {
                profile,
                ranks,
                dpus,
                what,
            } => {
                e.u8(1);
                e.str(profile);
                e.opt_u32(*ranks);
                e.opt_u32(*dpus);
                e.str(what);
            }
            Request::Free { rank } => {
                e.u8(2);
                e.u32(*rank);
            }
            Request::Exec { ops } => {
                e.u8(3);
                e.len(ops.len());
                for (rank, op) in ops {
                    e.u32(*rank);
                    op.encode(e);
                }
            }
            Request::Status { rank } => {
                e.u8(4);
                e.u32(*rank);
            }
            Request::Log { rank, dpu } => {
                e.u8(5);
                e.u32(*rank);
                e.u32(*dpu);
            }
            Request::RunStats { rank, first, count } => {
                e.u8(6);
                e.u32(*rank);
                e.u32(*first);
                e.u32(*count);
            }
            Request::Pool => e.u8(7),
            Request::Staging { rank, size } => {
                e.u8(8);
                e.u32(*rank);
                e.u64(*size);
            }
            Request::InPlace { addr, value } => {
                e.u8(9);
                e.u64(*addr);
                e.u64(*value);
            }
            Request::Queue { rank, ops } => {
                e.u8(10);
                e.u32(*rank);
                e.ops(ops);
            }
            Request::Ring { size } => {
                e.u8(11);
                e.u64(*size);
            }
        }
    }

    /// Decodes a request body (all of `buf`).
    pub fn decode(buf: &[u8]) -> DResult<Request> {
        Request::decode_from(Dec::new(buf))
    }

    /// Decodes a request body, `msg[from..]`, keeping a write's inline buffers as ranges of
    /// `msg` (no copy of them).
    pub fn decode_shared(msg: &Arc<Vec<u8>>, from: usize) -> DResult<Request> {
        let mut d = Dec::new(msg.get(from..).unwrap_or_default());
        d.shared = Some((msg, from));
        Request::decode_from(d)
    }

    fn decode_from(mut d: Dec<'_>) -> DResult<Request> {
        let r = match d.u8()? {
            0 => Request::Hello {
                version: d.u32()?,
                program: d.str()?,
            },
            1 => Request::Alloc {
                profile: d.str()?,
                ranks: d.opt_u32()?,
                dpus: d.opt_u32()?,
                what: d.str()?,
            },
            2 => Request::Free { rank: d.u32()? },
            3 => {
                let n = d.count(5)?;
                let ops = (0..n)
                    .map(|_| Ok((d.u32()?, WireOp::decode(&mut d)?)))
                    .collect::<DResult<_>>()?;
                Request::Exec { ops }
            }
            4 => Request::Status { rank: d.u32()? },
            5 => Request::Log {
                rank: d.u32()?,
                dpu: d.u32()?,
            },
            6 => Request::RunStats {
                rank: d.u32()?,
                first: d.u32()?,
                count: d.u32()?,
            },
            7 => Request::Pool,
            8 => Request::Staging {
                rank: d.u32()?,
                size: d.u64()?,
            },
            9 => Request::InPlace {
                addr: d.u64()?,
                value: d.u64()?,
            },
            10 => {
                let rank = d.u32()?;
                let n = d.count(5)?;
                let ops = (0..n)
                    .map(|_| WireOp::decode(&mut d))
                    .collect::<DResult<_>>()?;
                Request::Queue { rank, ops }
            }
            11 => Request::Ring { size: d.u64()? },
            tag => {
                return Err(DecodeError::BadTag {
                    what: "request",
                    tag,
                })
            }
        };
        d.end()?;
        Ok(r)
    }
}

impl Reply {
    /// The reply's body (tag and fields).
    pub fn encode(&self, e: &mut Enc) {
        match self {
            Reply::Hello { machine } => {
                e.u8(0);
                e.str(machine);
            }
            Reply::Ranks(r) => {
                e.u8(1);
                e.len(r.len());
                for (id, n) in r {
                    e.u32(*id);
                    e.u32(*n);
                }
            }
            Reply::Unit => e.u8(2),
            Reply::Exec {
                ipc_ns,
                emu_ns,
                outcomes,
            } => {
                encode_exec_head(e, *ipc_ns, *emu_ns, outcomes);
                for o in outcomes {
                    e.0.extend_from_slice(&o.data);
                }
            }
            Reply::Status { faulted } => {
                e.u8(4);
                e.u8(u8::from(*faulted));
            }
            Reply::Bytes(b) => {
                e.u8(5);
                e.bytes(b);
            }
            Reply::Stats(s) => {
                e.u8(6);
                e.len(s.len());
                for x in s {
                    match x {
                        Some(x) => {
                            e.u8(1);
                            e.stats(x);
                        }
                        None => e.u8(0),
                    }
                }
            }
            Reply::Pool(ranks) => {
                e.u8(7);
                e.len(ranks.len());
                for r in ranks {
                    e.u32(r.rank);
                    e.str(&r.state);
                    e.opt_u32(r.uid);
                    e.opt_u32(r.pid);
                    e.str(&r.program);
                    e.u64(r.since_ms);
                    e.u64(r.bytes_moved);
                    e.u64(r.launches);
                    e.u64(r.idle_ms);
                    e.u64(r.wipes);
                }
            }
            Reply::Error(w) => {
                e.u8(8);
                e.error(w);
            }
        }
    }

    /// Decodes a reply body (all of `buf`).
    pub fn decode(buf: &[u8]) -> DResult<Reply> {
        let mut d = Dec::new(buf);
        let r = match d.u8()? {
            0 => Reply::Hello { machine: d.str()? },
            1 => {
                let n = d.count(8)?;
                Reply::Ranks(
                    (0..n)
                        .map(|_| Ok((d.u32()?, d.u32()?)))
                        .collect::<DResult<_>>()?,
                )
            }
            2 => Reply::Unit,
            EXEC_TAG => {
                let fixed = d.take(EXEC_FIXED)?.try_into().expect("EXEC_FIXED bytes");
                let head = ExecHead::decode(fixed, |n| d.take(n))?;
                let mut outcomes = Vec::with_capacity(head.outcomes.len());
                for (result, facts, len) in head.outcomes {
                    let len = d.data_len(len)?;
                    outcomes.push(RankOutcome {
                        result,
                        facts,
                        data: d.take(len)?.to_vec(),
                    });
                }
                Reply::Exec {
                    ipc_ns: head.ipc_ns,
                    emu_ns: head.emu_ns,
                    outcomes,
                }
            }
            4 => Reply::Status { faulted: d.bool()? },
            5 => Reply::Bytes(d.bytes()?),
            6 => {
                let n = d.count(1)?;
                Reply::Stats(
                    (0..n)
                        .map(|_| Ok(if d.bool()? { Some(d.stats()?) } else { None }))
                        .collect::<DResult<_>>()?,
                )
            }
            7 => {
                let n = d.count(50)?;
                Reply::Pool(
                    (0..n)
                        .map(|_| {
                            Ok(PoolRank {
                                rank: d.u32()?,
                                state: d.str()?,
                                uid: d.opt_u32()?,
                                pid: d.opt_u32()?,
                                program: d.str()?,
                                since_ms: d.u64()?,
                                bytes_moved: d.u64()?,
                                launches: d.u64()?,
                                idle_ms: d.u64()?,
                                wipes: d.u64()?,
                            })
                        })
                        .collect::<DResult<_>>()?,
                )
            }
            8 => Reply::Error(d.error()?),
            tag => return Err(DecodeError::BadTag { what: "reply", tag }),
        };
        d.end()?;
        Ok(r)
    }
}

// ------------------------------------------------------------------------------------------
// Frames.

/// One frame's bytes: its length, `id` and the body `encode` writes (built in one buffer,
/// sent with one system call and no further copy).
pub fn frame(id: u64, encode: impl FnOnce(&mut Enc)) -> std::io::Result<Vec<u8>> {
    let mut e = Enc(Vec::with_capacity(64));
    e.0.extend_from_slice(&[0u8; 4]);
    e.u64(id);
    encode(&mut e);
    let len = u32::try_from(e.0.len() - 4)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "message too large"))?;
    e.0[..4].copy_from_slice(&len.to_le_bytes());
    Ok(e.0)
}

/// Writes one frame: `id` and the body `encode` writes.
pub fn write_frame(
    w: &mut impl Write,
    id: u64,
    encode: impl FnOnce(&mut Enc),
) -> std::io::Result<()> {
    w.write_all(&frame(id, encode)?)
}

/// An [`Reply::Exec`] up to its outcomes' data: the tag, `ipc_ns`, `emu_ns`, the length of
/// the outcomes' heads and the heads (each with its data's length).
fn encode_exec_head(e: &mut Enc, ipc_ns: u64, emu_ns: u64, outcomes: &[RankOutcome]) {
    // `ipc_ns` first: `write_reply` patches it once the reply is encoded. Then the length of
    // the outcomes' heads, the heads (each with its data's length); the outcomes' data follow
    // one after the other: a reader can place a read's bytes straight where they go
    // ([`read_exec`]).
    e.u8(EXEC_TAG);
    e.u64(ipc_ns);
    e.u64(emu_ns);
    let at = e.0.len();
    e.u32(0);
    e.len(outcomes.len());
    for o in outcomes {
        match &o.result {
            Ok(()) => e.u8(0),
            Err(w) => {
                e.u8(1);
                e.error(w);
            }
        }
        e.u64(o.facts.host_ns);
        match &o.facts.launch {
            Some(l) => {
                e.u8(1);
                e.launch(l);
            }
            None => e.u8(0),
        }
        e.u64(o.data.len() as u64);
    }
    let heads = u32::try_from(e.0.len() - at - 4).unwrap_or(u32::MAX);
    e.0[at..at + 4].copy_from_slice(&heads.to_le_bytes());
}

impl Reply {
    /// Encodes the reply as [`Reply::encode`] does, except that an [`Reply::Exec`]'s outcomes'
    /// data is returned rather than appended (the encoding is then `e` followed by the
    /// returned buffers, in order): a large read is sent from the buffer it was read into.
    pub fn encode_leaving_data(self, e: &mut Enc) -> Vec<Vec<u8>> {
        match self {
            Reply::Exec {
                ipc_ns,
                emu_ns,
                outcomes,
            } => {
                encode_exec_head(e, ipc_ns, emu_ns, &outcomes);
                outcomes.into_iter().map(|o| o.data).collect()
            }
            other => {
                other.encode(e);
                Vec::new()
            }
        }
    }
}

/// Writes a reply; an [`Reply::Exec`]'s `ipc_ns` becomes `spent_ns` (the CPU time the
/// request cost before) plus the CPU time of encoding the reply.
pub fn write_reply(
    w: &mut impl Write,
    id: u64,
    reply: &Reply,
    spent_ns: u64,
) -> std::io::Result<()> {
    let start = thread_cpu_ns();
    let mut bytes = frame(id, |e| reply.encode(e))?;
    if let Reply::Exec { .. } = reply {
        // After the length (4), the id (8) and the tag (1).
        let ipc = spent_ns + thread_cpu_ns().saturating_sub(start);
        bytes[13..21].copy_from_slice(&ipc.to_le_bytes());
    }
    w.write_all(&bytes)
}

/// The tag of an encoded [`Reply::Exec`].
pub const EXEC_TAG: u8 = 3;
/// The bytes of an [`Reply::Exec`] after its tag and before its outcomes' heads: `ipc_ns`,
/// `emu_ns` and the heads' length.
pub const EXEC_FIXED: usize = 20;

/// An [`Reply::Exec`] without its outcomes' data: each outcome's result, facts and the
/// length of its data.
pub struct ExecHead {
    pub ipc_ns: u64,
    pub emu_ns: u64,
    pub outcomes: Vec<(Result<(), WireError>, OpFacts, u64)>,
}

impl ExecHead {
    /// Decodes the head from its fixed fields and `take(n)`, which gives the next `n` bytes
    /// (the heads' length is in the fixed fields).
    fn decode<'b>(
        fixed: [u8; EXEC_FIXED],
        take: impl FnOnce(usize) -> DResult<&'b [u8]>,
    ) -> DResult<ExecHead> {
        let mut f = Dec::new(&fixed);
        let ipc_ns = f.u64()?;
        let emu_ns = f.u64()?;
        let heads = take(f.u32()? as usize)?;
        let mut d = Dec::new(heads);
        let n = d.count(18)?;
        let outcomes = (0..n)
            .map(|_| {
                let result = if d.bool()? { Err(d.error()?) } else { Ok(()) };
                let host_ns = d.u64()?;
                let launch = if d.bool()? { Some(d.launch()?) } else { None };
                Ok((result, OpFacts { host_ns, launch }, d.u64()?))
            })
            .collect::<DResult<_>>()?;
        d.end()?;
        Ok(ExecHead {
            ipc_ns,
            emu_ns,
            outcomes,
        })
    }
}

/// An [`Reply::Exec`]'s head from the start of its bytes after the tag (its fixed fields and
/// outcomes' heads; the outcomes' data may follow), and the bytes the head takes.
pub fn decode_exec_head(b: &[u8]) -> DResult<(ExecHead, usize)> {
    let fixed: [u8; EXEC_FIXED] =
        b.get(..EXEC_FIXED)
            .and_then(|f| f.try_into().ok())
            .ok_or(DecodeError::Truncated {
                at: 1,
                needed: EXEC_FIXED.saturating_sub(b.len()),
            })?;
    let rest = &b[EXEC_FIXED..];
    let mut used = EXEC_FIXED;
    let head = ExecHead::decode(fixed, |n| {
        used += n;
        rest.get(..n).ok_or(DecodeError::Truncated {
            at: 1 + EXEC_FIXED,
            needed: n - rest.len(),
        })
    })?;
    Ok((head, used))
}

/// Where a streamed [`Reply::Exec`]'s outcome `k` of `len` bytes of data goes: into the
/// outcome's `data` (`None`), or straight into these buffers, one after the other (their
/// lengths must add up to `len`).
pub type DataSink<'s> = dyn FnMut(usize, u64) -> Option<Vec<(*mut u8, usize)>> + 's;

/// Reads the rest of an [`Reply::Exec`] (everything after its tag, `budget` bytes) from `r`,
/// each successful outcome's data where `sink` says: the reply's bytes are never held
/// whole. An outcome whose data went to `sink`'s buffers has an empty `data`. The outer
/// `Err` is the stream's failure; the inner one a malformed reply (a data length other than
/// the sink's, or than the budget left), after which the rest of the budget has been read and
/// dropped so that the next frame can be read.
///
/// # Safety
/// Every buffer `sink` returns must be valid for writes of its length, and not be read or
/// written by anyone else until this returns.
pub unsafe fn read_exec(
    r: &mut impl Read,
    budget: usize,
    sink: &mut DataSink<'_>,
) -> std::io::Result<DResult<Reply>> {
    let mut left = budget;
    let read_n = |r: &mut dyn Read, buf: &mut [u8], left: &mut usize| -> std::io::Result<bool> {
        if buf.len() > *left {
            return Ok(false);
        }
        r.read_exact(buf)?;
        *left -= buf.len();
        Ok(true)
    };
    let mut fixed = [0u8; EXEC_FIXED];
    let mut heads = Vec::new();
    let head = if read_n(r, &mut fixed, &mut left)? {
        let heads_len = u32::from_le_bytes(fixed[16..20].try_into().expect("4 bytes")) as usize;
        heads.resize(heads_len.min(left), 0);
        if read_n(r, &mut heads, &mut left)? {
            ExecHead::decode(fixed, |_| Ok(&heads[..]))
        } else {
            Err(DecodeError::Truncated {
                at: 1 + EXEC_FIXED,
                needed: heads_len - left,
            })
        }
    } else {
        Err(DecodeError::Truncated {
            at: 1,
            needed: EXEC_FIXED - left,
        })
    };
    let mut outcomes = Vec::new();
    let mut failed = None;
    if let Ok(head) = &head {
        for (k, (result, facts, len)) in head.outcomes.iter().enumerate() {
            let fits = usize::try_from(*len).ok().filter(|n| *n <= left);
            let Some(n) = fits else {
                let needed = usize::try_from(*len).map_or(usize::MAX, |n| n - left);
                failed = Some(DecodeError::Truncated {
                    at: budget - left,
                    needed,
                });
                break;
            };
            let mut data = Vec::new();
            match if result.is_ok() { sink(k, *len) } else { None } {
                Some(bufs) => {
                    if bufs.iter().map(|b| b.1).sum::<usize>() != n {
                        failed = Some(DecodeError::OutOfRange {
                            what: "read data length",
                            value: *len,
                        });
                        break;
                    }
                    for (p, l) in bufs {
                        // SAFETY: the caller's contract.
                        let dst = unsafe { std::slice::from_raw_parts_mut(p, l) };
                        read_n(r, dst, &mut left)?;
                    }
                }
                None => {
                    data.resize(n, 0);
                    read_n(r, &mut data, &mut left)?;
                }
            }
            outcomes.push(RankOutcome {
                result: result.clone(),
                facts: facts.clone(),
                data,
            });
        }
    }
    // Whatever is left of the frame (a malformed reply's rest) is dropped.
    std::io::copy(&mut r.take(left as u64), &mut std::io::sink())?;
    if failed.is_none() && left > 0 {
        failed = Some(DecodeError::Trailing(left));
    }
    Ok(match (head, failed) {
        (Err(e), _) | (Ok(_), Some(e)) => Err(e),
        (Ok(h), None) => Ok(Reply::Exec {
            ipc_ns: h.ipc_ns,
            emu_ns: h.emu_ns,
            outcomes,
        }),
    })
}

/// Reads one frame: its id and body. `Ok(None)` at a clean end of the stream (between
/// frames).
pub fn read_frame(r: &mut impl Read, max: usize) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len < 8 || len > max {
        let e = DecodeError::TooLong { len, max };
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
    }
    let mut id = [0u8; 8];
    r.read_exact(&mut id)?;
    let mut body = vec![0u8; len - 8];
    r.read_exact(&mut body)?;
    Ok(Some((u64::from_le_bytes(id), body)))
}

// ------------------------------------------------------------------------------------------
// Errors across the wire.

impl WireError {
    /// The wire form of a runtime error.
    pub fn from_error(e: &Error) -> WireError {
        let s = |v: &str| v.to_string();
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "\u{0}".into());
        let (tag, fields): (u8, Vec<String>) = match e {
            Error::Profile(c) => (0, vec![c.to_string()]),
            Error::Allocation { requested, reason } => (1, vec![s(requested), s(reason)]),
            Error::System(m) => (2, vec![s(m)]),
            Error::InvalidDpuSet(m) => (3, vec![s(m)]),
            Error::ElfNoSuchFile { path, source } => (4, vec![s(path), source.to_string()]),
            Error::ElfInvalidFile { origin, reason } => (5, vec![opt(origin), s(reason)]),
            Error::IramOverflow {
                origin,
                needed,
                capacity,
            } => (
                6,
                vec![opt(origin), needed.to_string(), capacity.to_string()],
            ),
            Error::WramOverflow {
                origin,
                needed,
                capacity,
                stacks,
            } => {
                let mut f = vec![opt(origin), needed.to_string(), capacity.to_string()];
                if let Some((n, b)) = stacks {
                    f.push(n.to_string());
                    f.push(b.to_string());
                }
                (7, f)
            }
            Error::TooManyTasklets { origin, nr, max } => {
                (8, vec![opt(origin), nr.to_string(), max.to_string()])
            }
            Error::NoProgramLoaded(m) => (9, vec![s(m)]),
            Error::UnknownSymbol { name } => (10, vec![s(name)]),
            Error::InvalidSymbolAccess {
                symbol,
                offset,
                len,
                size,
            } => (
                11,
                vec![
                    s(symbol),
                    offset.to_string(),
                    len.to_string(),
                    size.to_string(),
                ],
            ),
            // The three memories' access errors: the same fields, one tag each.
            Error::InvalidWramAccess {
                address,
                len,
                reason,
            }
            | Error::InvalidIramAccess {
                address,
                len,
                reason,
            }
            | Error::InvalidMramAccess {
                address,
                len,
                reason,
            } => {
                let tag = match e {
                    Error::InvalidWramAccess { .. } => 12,
                    Error::InvalidIramAccess { .. } => 13,
                    _ => 14,
                };
                (tag, vec![address.to_string(), len.to_string(), s(reason)])
            }
            Error::DpuFault { first, count } => (
                15,
                vec![
                    first.rank.to_string(),
                    first.dpu.to_string(),
                    first.tasklet.to_string(),
                    first.pc.to_string(),
                    opt(&first.function),
                    first.message.clone(),
                    count.to_string(),
                ],
            ),
            Error::CallbackFailed { code } => (16, vec![code.to_string()]),
            Error::NonblockingSyncCallback => (17, vec![]),
            Error::Internal(m) => (18, vec![s(m)]),
            Error::Memory(m) => (19, vec![s(m)]),
            Error::Checkpoint(m) => (20, vec![s(m)]),
            Error::LogBufferTooSmall {
                rank,
                dpu,
                written,
                capacity,
            } => (
                21,
                vec![
                    rank.to_string(),
                    dpu.to_string(),
                    written.to_string(),
                    capacity.to_string(),
                ],
            ),
        };
        WireError { tag, fields }
    }

    /// The runtime error this stands for; a malformed one is an internal error that says so.
    pub fn to_error(&self) -> Error {
        self.rebuild().unwrap_or_else(|| {
            Error::Internal(format!(
                "the daemon sent a malformed error (tag {}, {} fields)",
                self.tag,
                self.fields.len()
            ))
        })
    }

    fn rebuild(&self) -> Option<Error> {
        let f = &self.fields;
        let s = |i: usize| f.get(i).cloned();
        let n64 = |i: usize| f.get(i)?.parse::<u64>().ok();
        let n32 = |i: usize| f.get(i)?.parse::<u32>().ok();
        let opt = |i: usize| f.get(i).map(|v| (v != "\u{0}").then(|| v.clone()));
        Some(match self.tag {
            // The daemon's parse of the tenant's profile; the tenant parsed it first, so this
            // is rare: the message is kept, as a hardware-profile error.
            0 => Error::Profile(openpim_machine::ConfigError::Hardware(s(0)?)),
            1 => Error::Allocation {
                requested: s(0)?,
                reason: s(1)?,
            },
            2 => Error::System(s(0)?),
            3 => Error::InvalidDpuSet(s(0)?),
            4 => Error::ElfNoSuchFile {
                path: s(0)?,
                source: std::io::Error::other(s(1)?),
            },
            5 => Error::ElfInvalidFile {
                origin: opt(0)?,
                reason: s(1)?,
            },
            6 => Error::IramOverflow {
                origin: opt(0)?,
                needed: n64(1)?,
                capacity: n64(2)?,
            },
            7 => Error::WramOverflow {
                origin: opt(0)?,
                needed: n64(1)?,
                capacity: n64(2)?,
                stacks: match (n32(3), n64(4)) {
                    (Some(n), Some(b)) => Some((n, b)),
                    _ => None,
                },
            },
            8 => Error::TooManyTasklets {
                origin: opt(0)?,
                nr: n32(1)?,
                max: n32(2)?,
            },
            9 => Error::NoProgramLoaded(s(0)?),
            10 => Error::UnknownSymbol { name: s(0)? },
            11 => Error::InvalidSymbolAccess {
                symbol: s(0)?,
                offset: n32(1)?,
                len: n64(2)?,
                size: n32(3)?,
            },
            tag @ 12..=14 => {
                let (address, len, reason) = (n64(0)?, n64(1)?, s(2)?);
                match tag {
                    12 => Error::InvalidWramAccess {
                        address,
                        len,
                        reason,
                    },
                    13 => Error::InvalidIramAccess {
                        address,
                        len,
                        reason,
                    },
                    _ => Error::InvalidMramAccess {
                        address,
                        len,
                        reason,
                    },
                }
            }
            15 => Error::DpuFault {
                first: Box::new(FaultInfo {
                    rank: n32(0)?,
                    dpu: n32(1)?,
                    tasklet: n32(2)?,
                    pc: n32(3)?,
                    function: opt(4)?,
                    message: s(5)?,
                }),
                count: n64(6)? as usize,
            },
            16 => Error::CallbackFailed { code: n32(0)? },
            17 => Error::NonblockingSyncCallback,
            18 => Error::Internal(s(0)?),
            19 => Error::Memory(s(0)?),
            20 => Error::Checkpoint(s(0)?),
            21 => Error::LogBufferTooSmall {
                rank: n32(0)?,
                dpu: n32(1)?,
                written: n64(2)?,
                capacity: n32(3)?,
            },
            _ => return None,
        })
    }
}

impl WireOp {
    /// A load's message: the program's ELF and where it came from, for `dpus`.
    pub(crate) fn load(program: &crate::program::Program, dpus: &[u32]) -> WireOp {
        WireOp::Load {
            elf: program.elf().to_vec(),
            origin: program.origin().map(str::to_string),
            dpus: dpus.to_vec(),
        }
    }
}

/// A write's items on the wire, DPUs given the same host buffer sharing one (a broadcast
/// is sent once): the items, and the distinct buffers in the order the items number them.
pub(crate) fn write_items_of(items: &[crate::exec::XferItem]) -> (Vec<WireItem>, Vec<*mut u8>) {
    let mut srcs: Vec<*mut u8> = Vec::new();
    let wire_items = items
        .iter()
        .map(|i| {
            let buf = srcs.iter().position(|p| *p == i.buf.0).unwrap_or_else(|| {
                srcs.push(i.buf.0);
                srcs.len() - 1
            });
            WireItem {
                dpu: i.dpu,
                place: i.place,
                buf: buf as u32,
            }
        })
        .collect();
    (wire_items, srcs)
}

/// A transfer's items on the wire, buffers numbered in order (a read's reply order).
pub(crate) fn wire_items_of(items: &[crate::exec::XferItem]) -> Vec<WireItem> {
    items
        .iter()
        .enumerate()
        .map(|(k, i)| WireItem {
            dpu: i.dpu,
            place: i.place,
            buf: k as u32,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v` decodes back from its encoding, and every strict prefix of that is an error,
    /// never a panic.
    fn roundtrip<T: PartialEq + std::fmt::Debug>(
        v: T,
        encode: impl Fn(&T, &mut Enc),
        decode: impl Fn(&[u8]) -> DResult<T>,
    ) {
        let mut e = Enc::default();
        encode(&v, &mut e);
        assert_eq!(decode(&e.0).unwrap(), v);
        for cut in 0..e.0.len() {
            assert!(decode(&e.0[..cut]).is_err(), "prefix of {cut} bytes");
        }
    }

    fn roundtrip_request(r: Request) {
        roundtrip(r, Request::encode, Request::decode);
    }

    #[test]
    fn requests_roundtrip_and_prefixes_fail() {
        roundtrip_request(Request::Hello {
            version: VERSION,
            program: "host".into(),
        });
        roundtrip_request(Request::Alloc {
            profile: "maxCycles=9".into(),
            ranks: Some(2),
            dpus: None,
            what: "2 ranks".into(),
        });
        roundtrip_request(Request::Exec {
            ops: vec![
                (
                    3,
                    WireOp::Write {
                        len: 4,
                        items: vec![WireItem {
                            dpu: 1,
                            place: Place::Mram(MramAddr(8)),
                            buf: 0,
                        }],
                        bufs: WriteBufs::Inline(InlineBufs::of(4, [&[1u8, 2, 3, 4][..]]).unwrap()),
                    },
                ),
                (
                    6,
                    WireOp::Read {
                        len: 8,
                        items: vec![],
                        staged: Some(64),
                    },
                ),
                (4, WireOp::Launch { dpus: vec![0, 1] }),
                (
                    5,
                    WireOp::Batch(vec![
                        WireOp::Write {
                            len: 1,
                            items: vec![],
                            bufs: WriteBufs::Staged(vec![0, 4096]),
                        },
                        WireOp::Write {
                            len: 2,
                            items: vec![],
                            bufs: WriteBufs::InPlace(vec![0x7fff_0000]),
                        },
                        WireOp::Write {
                            len: 3,
                            items: vec![],
                            bufs: WriteBufs::Shared(vec![u128::MAX - 5, 7 << 64 | 9]),
                        },
                        WireOp::ReadInPlace {
                            len: 8,
                            items: vec![WireItem {
                                dpu: 2,
                                place: Place::Mram(MramAddr(16)),
                                buf: 0,
                            }],
                            addrs: vec![0x5555_0000],
                        },
                    ]),
                ),
            ],
        });
        roundtrip_request(Request::Queue {
            rank: 1,
            ops: vec![
                WireOp::Launch { dpus: vec![0, 3] },
                WireOp::Read {
                    len: 8,
                    items: vec![WireItem {
                        dpu: 3,
                        place: Place::Wram(WramAddr(64)),
                        buf: 0,
                    }],
                    staged: None,
                },
            ],
        });
        roundtrip_request(Request::InPlace {
            addr: 0x7fff_1234,
            value: 42,
        });
        roundtrip_request(Request::Ring { size: 1 << 17 });
        roundtrip_request(Request::Staging {
            rank: 2,
            size: 1 << 20,
        });
        roundtrip_request(Request::RunStats {
            rank: 1,
            first: 0,
            count: 64,
        });
    }

    #[test]
    fn errors_keep_variant_and_message() {
        let errors = [
            Error::Allocation {
                requested: "4 DPUs".into(),
                reason: "none free".into(),
            },
            Error::UnknownSymbol { name: "x".into() },
            Error::WramOverflow {
                origin: Some("a.dpu".into()),
                needed: 70000,
                capacity: 65536,
                stacks: Some((16, 4096)),
            },
            Error::DpuFault {
                first: Box::new(FaultInfo {
                    rank: 1,
                    dpu: 2,
                    tasklet: 3,
                    pc: 4,
                    function: None,
                    message: "boom".into(),
                }),
                count: 5,
            },
            Error::NonblockingSyncCallback,
            Error::LogBufferTooSmall {
                rank: 1,
                dpu: 2,
                written: 3,
                capacity: 4,
            },
        ];
        for e in errors {
            let w = WireError::from_error(&e);
            let mut enc = Enc::default();
            Reply::Error(w.clone()).encode(&mut enc);
            let Reply::Error(back) = Reply::decode(&enc.0).unwrap() else {
                panic!("not an error");
            };
            let e2 = back.to_error();
            assert_eq!(e2.to_string(), e.to_string());
            assert_eq!(
                std::mem::discriminant(&e2),
                std::mem::discriminant(&e),
                "{e}"
            );
        }
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        // Exec with a count of 2^32-1 operations in a 9-byte message.
        let mut m = vec![3u8];
        m.extend_from_slice(&u32::MAX.to_le_bytes());
        m.extend_from_slice(&[0; 4]);
        assert!(matches!(
            Request::decode(&m),
            Err(DecodeError::Truncated { .. })
        ));
    }

    /// A write's inline buffers: one buffer per item at most, and exactly their bytes.
    #[test]
    fn inline_buffers_are_bounded_by_the_items() {
        let item = WireItem {
            dpu: 0,
            place: Place::Mram(MramAddr(0)),
            buf: 0,
        };
        let op = |count: usize| WireOp::Write {
            len: 2,
            items: vec![item; 2],
            bufs: WriteBufs::Inline({
                let bufs: Vec<[u8; 2]> = (0..count).map(|k| [k as u8; 2]).collect();
                InlineBufs::of(2, bufs.iter().map(|b| &b[..])).unwrap()
            }),
        };
        let enc = |op: &WireOp| {
            let mut e = Enc::default();
            Request::Exec {
                ops: vec![(0, op.clone())],
            }
            .encode(&mut e);
            e.0
        };
        let two = op(2);
        let Request::Exec { ops } = Request::decode(&enc(&two)).unwrap() else {
            panic!("not an Exec")
        };
        let WireOp::Write {
            bufs: WriteBufs::Inline(b),
            ..
        } = &ops[0].1
        else {
            panic!("not a write")
        };
        assert_eq!((b.count(), b.get(1)), (2, &[1u8, 1][..]));
        assert!(matches!(
            Request::decode(&enc(&op(3))),
            Err(DecodeError::OutOfRange { .. })
        ));
        // The program's buffers, borrowed until encoding, picked as a part's are.
        let mut a = [5u8, 6];
        let mut b = [7u8, 8];
        // SAFETY: `a` and `b` outlive `borrowed` and its picks, unchanged meanwhile.
        let borrowed = unsafe { InlineBufs::borrowed(2, &[a.as_mut_ptr(), b.as_mut_ptr()]) };
        let picked = borrowed.pick(&[1]);
        assert_eq!((picked.count(), picked.get(0)), (1, &[7u8, 8][..]));
        let mut e = Enc::default();
        Request::Exec {
            ops: vec![(
                0,
                WireOp::Write {
                    len: 2,
                    items: vec![item],
                    bufs: WriteBufs::Inline(picked),
                },
            )],
        }
        .encode(&mut e);
        let Request::Exec { ops } = Request::decode(&e.0).unwrap() else {
            panic!("not an Exec")
        };
        assert_eq!(
            ops[0].1,
            WireOp::Write {
                len: 2,
                items: vec![item],
                bufs: WriteBufs::Inline(InlineBufs::of(2, [&[7u8, 8][..]]).unwrap()),
            }
        );
        // Decoded from a shared message: the same buffers, kept in the message.
        let mut framed = vec![0xEE; 3];
        framed.extend_from_slice(&e.0);
        let msg = Arc::new(framed);
        let Request::Exec { ops: shared } = Request::decode_shared(&msg, 3).unwrap() else {
            panic!("not an Exec")
        };
        assert_eq!(shared, ops);
        let WireOp::Write {
            bufs: WriteBufs::Inline(b),
            ..
        } = shared[0].1.clone()
        else {
            panic!("not a write")
        };
        assert_eq!(
            b.ptrs()[0].cast_const(),
            msg[msg.len() - 2..].as_ptr(),
            "not copied"
        );
        assert!(
            InlineBufs::of(2, [&[1u8][..]]).is_none(),
            "a buffer of another length"
        );
    }

    fn exec_reply() -> Reply {
        Reply::Exec {
            ipc_ns: 7,
            emu_ns: 9,
            outcomes: vec![
                RankOutcome {
                    result: Ok(()),
                    facts: OpFacts::default(),
                    data: vec![1, 2, 3, 4, 5, 6],
                },
                RankOutcome {
                    result: Err(WireError::from_error(&Error::System("gone".into()))),
                    facts: OpFacts::default(),
                    data: Vec::new(),
                },
                RankOutcome {
                    result: Ok(()),
                    facts: OpFacts::default(),
                    data: vec![9, 9],
                },
            ],
        }
    }

    #[test]
    fn exec_replies_roundtrip() {
        roundtrip(exec_reply(), Reply::encode, Reply::decode);
    }

    /// A streamed reply puts an outcome's data where the sink says, leaves the others'
    /// in the outcome, and a length other than the sink's fails the reply but not the
    /// stream (the next frame is read as such).
    #[test]
    fn exec_replies_stream_into_buffers() {
        let mut e = Enc::default();
        exec_reply().encode(&mut e);
        let body = &e.0[1..];
        let mut stream = body.to_vec();
        stream.extend_from_slice(b"next");
        let mut dst = [[0u8; 2]; 3];
        let ptrs: Vec<(*mut u8, usize)> = dst.iter_mut().map(|d| (d.as_mut_ptr(), 2)).collect();
        let mut r = stream.as_slice();
        let mut asked = Vec::new();
        let mut sink = |k: usize, len: u64| {
            asked.push((k, len));
            (k == 0).then(|| ptrs.clone())
        };
        // SAFETY: `dst` outlives the call and nothing else touches it.
        let got = unsafe { read_exec(&mut r, body.len(), &mut sink) }
            .unwrap()
            .unwrap();
        assert_eq!(asked, [(0, 6), (2, 2)], "error outcomes are not offered");
        assert_eq!(dst, [[1, 2], [3, 4], [5, 6]]);
        let mut want = exec_reply();
        if let Reply::Exec { outcomes, .. } = &mut want {
            outcomes[0].data.clear();
        }
        assert_eq!(got, want);
        assert_eq!(r, b"next");
        // A sink of the wrong length.
        let mut r = stream.as_slice();
        let mut short = |_: usize, _: u64| Some(ptrs[..1].to_vec());
        // SAFETY: as above.
        let got = unsafe { read_exec(&mut r, body.len(), &mut short) }.unwrap();
        assert!(got.is_err());
        assert_eq!(r, b"next");
        // A budget shorter than the reply.
        let mut r = stream.as_slice();
        // SAFETY: as above.
        let got = unsafe { read_exec(&mut r, body.len() - 1, &mut short) }.unwrap();
        assert!(got.is_err());
        assert_eq!(r, b"\x09next", "exactly the budget is read");
    }

    #[test]
    fn frames_roundtrip_and_limit() {
        let mut buf = Vec::new();
        write_frame(&mut buf, 42, |e| Request::Pool.encode(e)).unwrap();
        let (id, body) = read_frame(&mut buf.as_slice(), MAX_FRAME).unwrap().unwrap();
        assert_eq!((id, Request::decode(&body).unwrap()), (42, Request::Pool));
        assert!(read_frame(&mut buf.as_slice(), 8).is_err());
        assert!(read_frame(&mut [].as_slice(), 8).unwrap().is_none());
    }
}
