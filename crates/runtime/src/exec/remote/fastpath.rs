//! The tenant's side of the remote path's optimizations (vPIM's, `docs/sharing.md`):
//!
//! - **write batching**: small host -> DPU writes are copied into a per-rank batch and sent
//!   as one request before the rank's next other operation (a read, launch, load, log, free)
//!   or when the batch is full (64 pages per DPU, as vPIM). Correct because a write is only
//!   observable through the rank's later operations, which flush the batch first. An error
//!   of a batched write (the daemon's; the tenant checked the symbol and bounds already) is
//!   returned by the call that flushes it.
//! - **read-ahead**: small MRAM reads are served from a per-DPU segment fetched earlier.
//!   Unlike vPIM, which fetches 16 pages after every missed read (losing up to 145x on RED's
//!   isolated 256-byte reads), a read fetches more than asked only when it continues the
//!   DPU's previous read which continued the one before (a sequential scan: a read in two
//!   parts is not one), doubling the read-ahead each time up to 16
//!   pages: an isolated tiny read moves only its own bytes. The segment is dropped at the
//!   rank's next write, launch, load or free. A read of many DPUs reads ahead 16 pages in
//!   all at most (the bytes come back in the reply).
//! - **read-across**: the other common pattern of small reads, one DPU after another at
//!   the same place (`DPU_FOREACH` with `dpu_copy_from`: each DPU's result, in MRAM or
//!   WRAM), fetches that place from every DPU of the rank at the second such read (when it
//!   is at most [`PREFETCH_PAGES`] pages in all); the next DPUs' reads are served without a
//!   message. The first read of a place fetches its own bytes only, and so does a read after
//!   a write to the rank (each DPU written then read: no scan). Dropped as the read-ahead
//!   segments are.
//!
//! - **zero-copy**: transfers' bytes go through the rank's shared staging region
//!   ([`super::staging`]) instead of the messages.
//! - **in place**: when the daemon may reach the program's memory (its probe at connection
//!   succeeded), transfers of at least [`IN_PLACE_MIN`] bytes name the program's own
//!   buffers, which the daemon reads or writes itself: the program copies nothing, as in
//!   process. Smaller writes are still batched (copying a few KiB costs less than a
//!   message), and a read that reads ahead still goes through the cache.
//!
//! Each is on by default; `OPENPIM_REMOTE_BATCH=0`, `OPENPIM_REMOTE_PREFETCH=0`,
//! `OPENPIM_REMOTE_ZEROCOPY=0` and `OPENPIM_REMOTE_INPLACE=0` switch them off (the ablation
//! of `bench/remote`).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::exec::remote::protocol::WireOp;
use crate::exec::{RankOp, XferItem};
use crate::xfer::Place;

/// A page, as vPIM counts its buffers.
pub(crate) const PAGE: usize = 4096;
/// Batch capacity per DPU of the rank (vPIM: 64 pages).
pub(crate) const BATCH_PAGES_PER_DPU: usize = 64;
/// Largest read-ahead segment per DPU (vPIM: 16 pages).
pub(crate) const PREFETCH_PAGES: usize = 16;
/// Transfers of at least this many bytes (all buffers) go in place when they can: a
/// message costs the program and the daemon about 10 us of CPU time, which copies about
/// this much on a busy machine (and a fresh staging region's first touches cost 2 us per
/// page more), so smaller writes are cheaper batched.
pub(crate) const IN_PLACE_MIN: usize = 16 * PAGE;

/// Which optimizations are on.
#[derive(Debug, Clone, Copy)]
pub struct Switches {
    pub batch: bool,
    pub prefetch: bool,
    /// Large transfers through the rank's staging region ([`super::staging`]).
    pub zero_copy: bool,
    /// Large transfers straight from and to the program's buffers, when the daemon may.
    pub in_place: bool,
    /// Operations queued on a rank sent together, one message for what the queue holds.
    pub queue: bool,
    /// Synchronous requests and their replies through the connection's shared-memory ring
    /// ([`super::ring`]) instead of the socket.
    pub ring: bool,
}

/// The switches of this process (from the environment, read once).
pub fn switches() -> Switches {
    static S: OnceLock<Switches> = OnceLock::new();
    *S.get_or_init(|| {
        let on = |var: &str| std::env::var(var).map_or(true, |v| v.trim() != "0");
        Switches {
            batch: on("OPENPIM_REMOTE_BATCH"),
            prefetch: on("OPENPIM_REMOTE_PREFETCH"),
            zero_copy: on("OPENPIM_REMOTE_ZEROCOPY"),
            in_place: on("OPENPIM_REMOTE_INPLACE"),
            queue: on("OPENPIM_REMOTE_QUEUE"),
            ring: on("OPENPIM_REMOTE_RING"),
        }
    })
}

/// True for a write small enough to batch (not IRAM: IRAM writes change the program mirror;
/// with `in_place`, not one that goes in place: see [`in_place_bytes`]).
pub(crate) fn batchable(op: &RankOp, in_place: bool) -> bool {
    match op {
        RankOp::Write { len, items } => {
            switches().batch
                && *len <= BATCH_PAGES_PER_DPU * PAGE
                && !items.iter().any(|i| matches!(i.place, Place::Iram(_)))
                && !(in_place && in_place_bytes(*len, items))
        }
        _ => false,
    }
}

/// True when a transfer of `len` bytes per item is large enough to go in place (a
/// broadcast's buffer counts once).
pub(crate) fn in_place_bytes(len: usize, items: &[XferItem]) -> bool {
    let mut bufs: Vec<*mut u8> = items.iter().map(|i| i.buf.0).collect();
    bufs.sort_unstable();
    bufs.dedup();
    len.saturating_mul(bufs.len()) >= IN_PLACE_MIN
}

/// A rank's batch of writes.
#[derive(Default)]
pub(crate) struct Batch {
    pub ops: Vec<WireOp>,
    pub bytes: usize,
    /// CPU time spent copying the writes' bytes (remote-path cost, counted at the flush).
    pub copy_ns: u64,
}

impl Batch {
    /// True once the batch holds what `nr_dpus` DPUs' buffers hold.
    pub(crate) fn full(&self, nr_dpus: u32) -> bool {
        self.bytes >= Batch::capacity(nr_dpus)
    }

    /// Bytes a rank of `nr_dpus` DPUs batches at most.
    pub(crate) fn capacity(nr_dpus: u32) -> usize {
        BATCH_PAGES_PER_DPU * PAGE * nr_dpus.max(1) as usize
    }
}

/// What a read needs from the daemon, after the cache.
pub(crate) enum ReadPlan {
    /// Every item is in the cache.
    Hit,
    /// Fetch `len` bytes per item (at least the read's own).
    Fetch { len: usize },
    /// A one-DPU read at the place the previous one-DPU read read on another DPU: fetch it
    /// from every DPU of the rank.
    Across,
}

/// The memory of a place, and its address.
fn mem_of(p: Place) -> (u8, u32) {
    match p {
        Place::Wram(a) => (0, a.0),
        Place::Mram(a) => (1, a.0),
        Place::Iram(a) => (2, a.0),
    }
}

/// A DPU's read-ahead state.
#[derive(Default, Clone)]
struct DpuSegment {
    /// MRAM address and bytes of the cached segment.
    start: u32,
    data: Vec<u8>,
    /// Where the DPU's last read ended, and the read-ahead it used.
    last_end: Option<u32>,
    ahead: usize,
    /// Reads in a row that each continued the one before.
    streak: u32,
}

/// A rank's read-ahead cache, per DPU.
#[derive(Default)]
pub(crate) struct ReadCache {
    dpus: HashMap<u32, DpuSegment>,
    /// Read-across segments: per DPU, places (memory, address) and their bytes, at most
    /// [`SINGLES`], the latest last.
    across: HashMap<u32, Vec<(u8, u32, Vec<u8>)>>,
    /// The rank's last one-DPU reads of distinct places (their place, length and DPU),
    /// the latest last: reads of a few places per DPU interleave (`DPU_FOREACH` reading
    /// two results of each DPU).
    singles: Vec<(Place, usize, u32)>,
}

/// One-DPU reads remembered for the read-across.
const SINGLES: usize = 8;

impl ReadCache {
    /// Drops every segment (the rank's memory may have changed).
    pub(crate) fn invalidate(&mut self) {
        self.dpus.clear();
        self.across.clear();
        // Reads separated by a write are not a scan across DPUs (`DPU_FOREACH` writing then
        // reading each DPU): fetching the rank at each would move more than they read.
        self.singles.clear();
    }

    /// The read-across bytes of `len` bytes at `place` of `dpu`, if cached.
    fn across_hit(&self, dpu: u32, place: Place, len: usize) -> Option<&[u8]> {
        let (mem, a) = mem_of(place);
        self.across
            .get(&dpu)?
            .iter()
            .rev()
            .find_map(|(m, start, data)| {
                let off = a.checked_sub(*start)? as usize;
                (*m == mem && off + len <= data.len()).then(|| &data[off..off + len])
            })
    }

    /// How to serve a read of `len` bytes per item, on a rank of `nr_dpus` DPUs, through the
    /// daemon (`OPENPIM_REMOTE_PREFETCH`, at most [`PREFETCH_PAGES`] pages per read); notes
    /// the read for the next one's plan.
    pub(crate) fn plan(
        &mut self,
        len: usize,
        items: &[XferItem],
        nr_dpus: u32,
    ) -> Option<ReadPlan> {
        let cap = if switches().prefetch {
            PREFETCH_PAGES * PAGE
        } else {
            0
        };
        self.plan_within(len, items, nr_dpus, cap)
    }

    /// [`ReadCache::plan`] with at most `cap` bytes fetched per read in all (none: no
    /// read-ahead, the read goes as it is).
    pub(crate) fn plan_within(
        &mut self,
        len: usize,
        items: &[XferItem],
        nr_dpus: u32,
        cap: usize,
    ) -> Option<ReadPlan> {
        if len == 0 || len > cap {
            return None;
        }
        if let [i] = items {
            // Another DPU read this place last: this one continues a read across DPUs.
            let last = self
                .singles
                .iter()
                .position(|&(p, l, _)| p == i.place && l == len)
                .map(|k| self.singles.remove(k));
            if self.singles.len() == SINGLES {
                self.singles.remove(0);
            }
            self.singles.push((i.place, len, i.dpu));
            if self.across_hit(i.dpu, i.place, len).is_some() {
                return Some(ReadPlan::Hit);
            }
            if last.is_some_and(|(_, _, d)| d != i.dpu)
                && nr_dpus > 1
                && len * nr_dpus as usize <= cap
                && !matches!(i.place, Place::Iram(_))
            {
                return Some(ReadPlan::Across);
            }
        }
        let mut hit = true;
        let mut sequential = true;
        let mut ahead = 0usize;
        for i in items {
            let Place::Mram(a) = i.place else {
                return None;
            };
            let seg = self.dpus.get(&i.dpu);
            let inside = seg.is_some_and(|s| {
                a.0 >= s.start && a.0 as usize + len <= s.start as usize + s.data.len()
            });
            hit &= inside;
            // A scan is a third read in a row: one read in two parts is not one.
            match seg.and_then(|s| s.last_end.map(|e| (e, s.ahead, s.streak))) {
                Some((end, prev, streak)) if end == a.0 && streak >= 1 => {
                    ahead = ahead.max(prev.max(len) * 2)
                }
                _ => sequential = false,
            }
        }
        if hit {
            return Some(ReadPlan::Hit);
        }
        // vPIM's 16 pages per DPU, but at most `cap` in all for a read of many DPUs: the
        // bytes come back in the reply, copied on both sides.
        let limit = (cap / items.len().max(1)).max(len);
        let len_fetch = if sequential {
            ahead.clamp(len, limit)
        } else {
            len
        };
        // Never past the end of MRAM.
        let room = items
            .iter()
            .map(|i| match i.place {
                Place::Mram(a) => openpim_machine::map::MRAM_SIZE as usize - a.0 as usize,
                _ => len,
            })
            .min()
            .unwrap_or(len);
        Some(ReadPlan::Fetch {
            len: len_fetch.min(room).max(len),
        })
    }

    /// Copies a hit into the items' buffers and notes the reads.
    ///
    /// # Safety
    /// Every item's buffer is valid for writes of `len` bytes.
    pub(crate) unsafe fn serve(&mut self, len: usize, items: &[XferItem]) {
        for i in items {
            if let Some(bytes) = self.across_hit(i.dpu, i.place, len) {
                // SAFETY: the caller's contract.
                let dst = unsafe { std::slice::from_raw_parts_mut(i.buf.0, len) };
                dst.copy_from_slice(bytes);
                continue;
            }
            let (Place::Mram(a), Some(seg)) = (i.place, self.dpus.get_mut(&i.dpu)) else {
                continue;
            };
            let off = (a.0 - seg.start) as usize;
            // SAFETY: the caller's contract.
            let dst = unsafe { std::slice::from_raw_parts_mut(i.buf.0, len) };
            dst.copy_from_slice(&seg.data[off..off + len]);
            seg.streak = if seg.last_end == Some(a.0) {
                seg.streak + 1
            } else {
                0
            };
            seg.last_end = Some(a.0 + len as u32);
        }
    }

    /// Notes a read of `len` bytes per item served without the cache (in place): where
    /// each DPU's read ended, for the next read's read-ahead.
    pub(crate) fn note(&mut self, len: usize, items: &[XferItem]) {
        for i in items {
            let Place::Mram(a) = i.place else { continue };
            let seg = self.dpus.entry(i.dpu).or_default();
            seg.streak = if seg.last_end == Some(a.0) {
                seg.streak + 1
            } else {
                0
            };
            seg.ahead = len;
            seg.start = a.0;
            seg.data.clear();
            seg.last_end = Some(a.0 + len as u32);
        }
    }

    /// Keeps what a read-across fetch brought: `len` bytes at `place` of DPUs
    /// `0..data.len() / len`, in order.
    pub(crate) fn keep_across(&mut self, len: usize, place: Place, data: &[u8]) {
        let (mem, a) = mem_of(place);
        for (dpu, chunk) in data.chunks(len.max(1)).enumerate() {
            let segs = self.across.entry(dpu as u32).or_default();
            if segs.len() == SINGLES {
                segs.remove(0);
            }
            segs.push((mem, a, chunk.to_vec()));
        }
    }

    /// Keeps what a fetch of `fetched` bytes per item brought (`data`, item after item).
    pub(crate) fn keep(&mut self, len: usize, fetched: usize, items: &[XferItem], data: &[u8]) {
        for (i, chunk) in items.iter().zip(data.chunks(fetched.max(1))) {
            let Place::Mram(a) = i.place else { continue };
            let seg = self.dpus.entry(i.dpu).or_default();
            let sequential = seg.last_end == Some(a.0);
            seg.streak = if sequential { seg.streak + 1 } else { 0 };
            seg.ahead = if sequential { fetched } else { len };
            seg.start = a.0;
            seg.data = chunk.to_vec();
            seg.last_end = Some(a.0 + len as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::HostPtr;
    use openpim_machine::MramAddr;

    fn item(dpu: u32, addr: u32, buf: &mut [u8]) -> XferItem {
        XferItem {
            dpu,
            place: Place::Mram(MramAddr(addr)),
            buf: HostPtr(buf.as_mut_ptr()),
        }
    }

    #[test]
    fn isolated_reads_fetch_only_their_bytes_sequential_ones_read_ahead() {
        let mut c = ReadCache::default();
        let mut b = [0u8; 256];
        let it = [item(0, 1 << 20, &mut b)];
        // An isolated 256-byte read: 256 bytes, no more.
        let Some(ReadPlan::Fetch { len }) = c.plan(256, &it, 1) else {
            panic!()
        };
        assert_eq!(len, 256);
        c.keep(256, len, &it, &[7u8; 256]);
        // The next one continues it: still its own bytes (a read in two parts is no scan).
        let it1 = [item(0, (1 << 20) + 256, &mut b)];
        assert!(matches!(
            c.plan(256, &it1, 1),
            Some(ReadPlan::Fetch { len: 256 })
        ));
        c.note(256, &it1);
        // The third in a row: read-ahead of twice as much, doubling up to 16 pages.
        let it2 = [item(0, (1 << 20) + 512, &mut b)];
        let Some(ReadPlan::Fetch { len }) = c.plan(256, &it2, 1) else {
            panic!()
        };
        assert_eq!(len, 512);
        c.keep(256, len, &it2, &[8u8; 512]);
        // ... which the read after it finds in the cache.
        let it3 = [item(0, (1 << 20) + 768, &mut b)];
        assert!(matches!(c.plan(256, &it3, 1), Some(ReadPlan::Hit)));
        // SAFETY: `b` is 256 bytes.
        unsafe { c.serve(256, &it3) };
        assert_eq!(b, [8u8; 256]);
        // An unrelated read elsewhere: its own bytes only; invalidation drops the segment.
        let it4 = [item(0, 64, &mut b)];
        assert!(matches!(
            c.plan(256, &it4, 1),
            Some(ReadPlan::Fetch { len: 256 })
        ));
        c.invalidate();
        assert!(matches!(
            c.plan(256, &it3, 1),
            Some(ReadPlan::Fetch { len: 256 })
        ));
    }

    #[test]
    fn reads_of_one_place_across_dpus_fetch_the_rank_once() {
        use openpim_machine::WramAddr;
        let mut c = ReadCache::default();
        let mut b = [0u8; 4];
        let one = |dpu: u32, place: Place, b: &mut [u8]| XferItem {
            dpu,
            place,
            buf: HostPtr(b.as_mut_ptr()),
        };
        let res = Place::Wram(WramAddr(64));
        let other = Place::Mram(MramAddr(0));
        // DPU 0 reads two places: their own bytes (WRAM outside the cache).
        assert!(c.plan(4, &[one(0, res, &mut b)], 4).is_none());
        assert!(matches!(
            c.plan(4, &[one(0, other, &mut b)], 4),
            Some(ReadPlan::Fetch { len: 4 })
        ));
        // DPU 1 reads the first place: the whole rank's, once.
        assert!(matches!(
            c.plan(4, &[one(1, res, &mut b)], 4),
            Some(ReadPlan::Across)
        ));
        let data: Vec<u8> = (0..16).collect();
        c.keep_across(4, res, &data);
        // DPU 1's second place also goes across; both are then cached for DPUs 2 and 3.
        assert!(matches!(
            c.plan(4, &[one(1, other, &mut b)], 4),
            Some(ReadPlan::Across)
        ));
        c.keep_across(4, other, &[9u8; 16]);
        assert!(matches!(
            c.plan(4, &[one(3, res, &mut b)], 4),
            Some(ReadPlan::Hit)
        ));
        // SAFETY: `b` is 4 bytes.
        unsafe { c.serve(4, &[one(3, res, &mut b)]) };
        assert_eq!(b, [12, 13, 14, 15]);
        // A shorter read inside a cached place is served too; too much in all (64 DPUs x
        // 8 KiB) is not fetched across.
        assert!(matches!(
            c.plan(2, &[one(2, res, &mut b)], 4),
            Some(ReadPlan::Hit)
        ));
        let mut big = vec![0u8; 8192];
        let _ = c.plan(8192, &[one(0, other, &mut big)], 64);
        assert!(matches!(
            c.plan(8192, &[one(1, other, &mut big)], 64),
            Some(ReadPlan::Fetch { len: 8192 })
        ));
        // Invalidation drops the cached places.
        c.invalidate();
        assert!(!matches!(
            c.plan(4, &[one(2, other, &mut b)], 4),
            Some(ReadPlan::Hit)
        ));
    }
}
