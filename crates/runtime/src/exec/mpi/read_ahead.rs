//! Small reads served from bytes fetched earlier: the remote backend's read-ahead cache
//! (`exec::remote::fastpath::ReadCache`: a DPU's sequential scan of MRAM fetches more than it
//! asks, doubling; one-DPU reads of one place across the DPUs fetch that place from the whole
//! rank at the second), used by a rank whose workers are a round trip away. PrIM NW reads its
//! results row by row, 40 synchronous reads of 168 bytes per DPU per diagonal: each one a
//! round trip through the gateway, where a local run copies from MRAM.
//!
//! Invisible to the program and to the virtual clock: a read is charged as its own bytes,
//! whether it was fetched, fetched ahead or served from the cache (the clock's facts come from
//! the program's operation, never from what was sent: `MpiRank::complete`); the cache holds
//! only what the DPUs' memories hold, dropped at the rank's next operation of any other kind
//! (a write, batched or not, a launch, a load, a collective) and at any queued operation.

use crate::exec::local::rank::Pending;
use crate::exec::remote::fastpath::{ReadCache, ReadPlan};
use crate::exec::{HostPtr, RankOp, XferItem};
use crate::xfer::Place;

/// The most bytes one read fetches in all (its own and those ahead, over all its DPUs): up
/// to 4 KiB per DPU of a 64-DPU rank; a reply this large is written into the fetch's buffer
/// by the gateway in place.
pub(super) const READ_AHEAD_BYTES: usize = 256 << 10;

/// How a read goes, given the cache.
pub(super) enum Route {
    /// Every item's bytes are in the cache: served without a message.
    Hit(RankOp),
    /// Sent as it is.
    Send(RankOp),
    /// Sent as a larger read into a buffer of the cache's ([`Fetching::op`]).
    Fetch(Box<Fetching>),
}

/// A read that brings more than the program asked for: the program's read, and what is
/// fetched (`fetch` bytes per fetched item, into `data`).
pub(super) struct Fetching {
    len: usize,
    items: Vec<XferItem>,
    fetch: usize,
    /// A read across DPUs: the place, fetched from every DPU of the rank.
    across: Option<Place>,
    data: Vec<u8>,
    fetched: Vec<XferItem>,
}

/// The route of `op` on a rank of `nr_dpus` DPUs: only reads go through the cache; any other
/// operation drops it.
pub(super) fn route(cache: &mut ReadCache, op: RankOp, nr_dpus: u32) -> Route {
    let RankOp::Read { len, items } = op else {
        cache.invalidate();
        return Route::Send(op);
    };
    let plan = cache.plan_within(len, &items, nr_dpus, READ_AHEAD_BYTES);
    let (fetch, across) = match plan {
        Some(ReadPlan::Hit) => return Route::Hit(RankOp::Read { len, items }),
        Some(ReadPlan::Fetch { len: fetch }) if fetch > len => (fetch, None),
        Some(ReadPlan::Across) => (len, Some(items[0].place)),
        Some(ReadPlan::Fetch { .. }) => {
            // Its own bytes only: noted for the next read's plan.
            cache.note(len, &items);
            return Route::Send(RankOp::Read { len, items });
        }
        None => return Route::Send(RankOp::Read { len, items }),
    };
    let dpus: Vec<(u32, Place)> = match across {
        Some(place) => (0..nr_dpus).map(|d| (d, place)).collect(),
        None => items.iter().map(|i| (i.dpu, i.place)).collect(),
    };
    let mut data = vec![0u8; fetch * dpus.len()];
    let base = data.as_mut_ptr();
    let fetched = dpus
        .into_iter()
        .enumerate()
        .map(|(k, (dpu, place))| XferItem {
            dpu,
            place,
            // (Inside `data`, whose heap buffer does not move with the box.)
            buf: HostPtr(base.wrapping_add(k * fetch)),
        })
        .collect();
    Route::Fetch(Box::new(Fetching {
        len,
        items,
        fetch,
        across,
        data,
        fetched,
    }))
}

impl Fetching {
    /// What is sent: the larger read, into the fetch's buffer.
    pub(super) fn op(&self) -> RankOp {
        RankOp::Read {
            len: self.fetch,
            items: self.fetched.clone(),
        }
    }

    /// What the clock charges: the program's read.
    pub(super) fn pending(&self) -> Pending {
        Pending::of(&RankOp::Read {
            len: self.len,
            items: self.items.clone(),
        })
    }

    /// The fetched bytes (arrived in the fetch's buffer) into the program's buffers and the
    /// cache.
    ///
    /// # Safety
    /// Every item's buffer of the program's read is valid for writes of its length.
    pub(super) unsafe fn land(self, cache: &mut ReadCache) {
        match self.across {
            Some(place) => {
                cache.keep_across(self.len, place, &self.data);
                // SAFETY: the caller's contract; every DPU's bytes are in the cache now.
                unsafe { cache.serve(self.len, &self.items) };
            }
            None => {
                for (i, chunk) in self.items.iter().zip(self.data.chunks(self.fetch)) {
                    // SAFETY: the caller's contract.
                    let dst = unsafe { std::slice::from_raw_parts_mut(i.buf.0, self.len) };
                    dst.copy_from_slice(&chunk[..self.len]);
                }
                cache.keep(self.len, self.fetch, &self.items, &self.data);
            }
        }
    }
}
