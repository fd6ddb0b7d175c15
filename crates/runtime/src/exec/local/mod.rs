//! The in-process backend: ranks emulated in this process.
//!
//! Each rank ([`rank::LocalRank`]) holds its DPUs' memories and a queue run by its own
//! worker thread; DPUs are simulated on one process-wide thread pool ([`threads`]); a
//! transfer's host-side byte interleaving is performed for real ([`interleave`]); rank slots
//! come from a process-wide pool ([`slots`]).

pub(crate) mod interleave;
pub mod logs;
pub(crate) mod memories;
pub(crate) mod rank;
pub mod served;
pub(crate) mod slots;
pub mod suspend;
pub mod threads;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use openpim_machine::CallShape;
use rayon::prelude::*;

use crate::clock::stats::DpuRunStats;
use crate::clock::timeline;
use crate::error::{merge, Result};
use crate::exec::{call_shape, AllocRequest, Backend, CallbackJob, RankInfo, RankOp, RankStatus};
use crate::program::Program;
use rank::LocalRank;

/// The in-process backend (one per process: [`LocalBackend::shared`]).
#[derive(Default)]
pub struct LocalBackend {
    /// Allocated ranks by slot (queued operations hold their rank too: a freed rank lives
    /// until its queue is done).
    ranks: Mutex<HashMap<u32, Arc<LocalRank>>>,
}

impl LocalBackend {
    /// The process's in-process backend.
    pub fn shared() -> Arc<LocalBackend> {
        static SHARED: OnceLock<Arc<LocalBackend>> = OnceLock::new();
        Arc::clone(SHARED.get_or_init(Arc::default))
    }

    fn rank(&self, id: u32) -> Arc<LocalRank> {
        let ranks = self.ranks.lock().unwrap_or_else(|e| e.into_inner());
        match ranks.get(&id) {
            Some(r) => Arc::clone(r),
            None => panic!("rank {id} is not allocated by the local backend"),
        }
    }
}

/// For the `xfer_kernels` fuzz target: whether every SIMD kernel of this CPU (and the
/// portable one) gives the bus words of the definition when interleaving `bufs` (`(DPU index
/// in the rank, bytes)`; `len` bytes of each are used, each is padded with zeros to `len`)
/// for a rank of `dpus_per_rank` DPUs on `chips` chips; `Err` names the kernel that differs.
#[doc(hidden)]
pub fn check_interleave_kernels(
    len: usize,
    bufs: &mut [(u32, Vec<u8>)],
    dpus_per_rank: u32,
    chips: u32,
    broadcast: bool,
) -> std::result::Result<(), String> {
    for (_, b) in bufs.iter_mut() {
        if b.len() < len {
            b.resize(len, 0);
        }
    }
    interleave::check::kernels_agree(len, bufs, dpus_per_rank, chips, broadcast)
}

/// Number of rank slots currently allocated in this process.
pub fn ranks_in_use() -> usize {
    slots::in_use()
}

impl Backend for LocalBackend {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn start(&self) -> Result<()> {
        // OPENPIM_THREADS is checked and the simulation threads started here, so that a bad
        // setting or a host that cannot start them fails the allocation, not a later call.
        threads::pool().map(|_| ())
    }

    fn alloc(&self, req: &AllocRequest) -> Result<Vec<RankInfo>> {
        let machine = &req.machine;
        let slots = slots::take(machine.nr_ranks, req.ranks, &req.what)?;
        let per_rank = machine.dpus_per_rank;
        let mut ranks = Vec::with_capacity(slots.len());
        for (r, slot) in slots.into_iter().enumerate() {
            let n = match req.dpus {
                Some(n) => per_rank.min(n - r as u32 * per_rank),
                None => per_rank,
            };
            let rank = Arc::new(LocalRank::new(slot, n, Arc::clone(machine))?);
            timeline::rank_allocated(rank.id(), rank.nr_dpus(), &machine.hardware);
            ranks.push(rank);
        }
        let mut table = self.ranks.lock().unwrap_or_else(|e| e.into_inner());
        Ok(ranks
            .into_iter()
            .map(|r| {
                let info = RankInfo {
                    id: r.id(),
                    nr_dpus: r.nr_dpus(),
                };
                table.insert(info.id, r);
                info
            })
            .collect())
    }

    fn free(&self, rank: u32) {
        let r = self
            .ranks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&rank);
        // Dropped outside the table's lock: the slot is released here unless queued
        // operations still hold the rank.
        drop(r);
    }

    fn execute(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let pool = threads::pool()?;
        let mut ops: Vec<(Arc<LocalRank>, RankOp)> = ops
            .into_iter()
            .map(|(id, op)| (self.rank(id), op))
            .collect();
        for (r, _) in &ops {
            r.wait_idle();
        }
        ops.sort_by_key(|(r, _)| r.id());
        // Virtual time: the ranks' operations are issued now; the host waits for them.
        let shape = CallShape {
            ranks: ops.len() as u32,
            bytes: ops.iter().map(|(_, op)| op.xfer_bytes()).sum(),
        };
        let issue = timeline::issue_now(shape);
        let ids: Vec<u32> = ops.iter().map(|(r, _)| r.id()).collect();
        let _join = timeline::JoinOnDrop(ids);
        if ops.len() == 1 {
            let (r, op) = ops.pop().expect("one op");
            return timeline::with_sync_issue(issue, || r.execute(op));
        }
        // Lock every rank (in slot order: no deadlock between threads), then execute.
        let (ranks, ops): (Vec<Arc<LocalRank>>, Vec<RankOp>) = ops.into_iter().unzip();
        let mut guards: Vec<_> = ranks.iter().map(|r| r.lock_state()).collect();
        let work: Vec<_> = guards
            .iter_mut()
            .zip(ranks.iter())
            .zip(ops)
            .map(|((g, r), op)| (r, &mut **g, op))
            .collect();
        let results: Vec<Result<()>> = pool.install(|| {
            work.into_par_iter()
                .map(|(r, st, op)| timeline::with_sync_issue(issue, || r.execute_locked(st, op)))
                .collect()
        });
        merge(results)
    }

    fn enqueue(&self, ops: Vec<(u32, RankOp)>) -> Result<()> {
        // The call's shape applies to the operations queued here only; reset it so that work
        // queued later by another path does not inherit it.
        timeline::set_call_shape(call_shape(&ops));
        let queued = ops
            .into_iter()
            .try_for_each(|(id, op)| self.rank(id).enqueue(op));
        timeline::set_call_shape(Default::default());
        queued
    }

    fn spawn_detached(&self, rank: u32, job: CallbackJob, ranks: Vec<u32>) -> Result<()> {
        self.rank(rank).spawn_detached(job, ranks)
    }

    fn wait_idle(&self, rank: u32) {
        self.rank(rank).wait_idle();
    }

    fn sync(&self, rank: u32) -> Result<()> {
        self.rank(rank).sync()
    }

    fn status(&self, rank: u32) -> RankStatus {
        let r = self.rank(rank);
        RankStatus {
            idle: r.is_idle(),
            faulted: r.faulted(),
        }
    }

    fn polled_status(&self, rank: u32, ran_past: &dyn Fn(u64) -> bool) -> RankStatus {
        let r = self.rank(rank);
        let idle = r.settle(ran_past);
        RankStatus {
            idle,
            faulted: r.faulted(),
        }
    }

    fn programs(&self, rank: u32, first: u32, count: u32) -> Vec<Option<Arc<Program>>> {
        let r = self.rank(rank);
        let meta = r.lock_meta();
        meta.programs[first as usize..(first + count) as usize].to_vec()
    }

    fn log(&self, rank: u32, dpu: u32) -> Result<Vec<u8>> {
        self.rank(rank).log_of(dpu)
    }

    fn run_stats(&self, rank: u32, first: u32, count: u32) -> Vec<Option<DpuRunStats>> {
        let r = self.rank(rank);
        let st = r.lock_state();
        st.dpus[first as usize..(first + count) as usize]
            .iter()
            .map(|d| d.stats)
            .collect()
    }
}

impl std::fmt::Debug for LocalBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalBackend")
    }
}
