//! A worker's ranks: the requests of the host program's backend run on local ranks.
//!
//! Each rank is the runtime's [`ServedRank`] (today's in-process engine, reporting what an
//! operation did to the caller instead of a clock): the host program's process keeps the
//! virtual clock and places every operation from the facts this returns. No MPI here.

use crate::lock;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use openpim_collectives::distributed::RankMemory;
use openpim_machine::{map, DpuAddress, SystemConfig};
use openpim_runtime::exec::local::logs::LogAccount;
use openpim_runtime::exec::local::served::{par_map, ServedRank};
use openpim_runtime::exec::mpi::wire::ToWorker;
use openpim_runtime::exec::remote::protocol::{
    RankOutcome, Reply, Request, WireError, WireItem, WireOp, WriteBufs,
};
use openpim_runtime::exec::OpFacts;
use openpim_runtime::{Error, HostPtr, Place, Program, RankOp, Result, XferItem};

/// Buffers broadcast to every worker (`ToWorker::Shared`), by key.
pub type Buffers = HashMap<u128, Arc<Vec<u8>>>;

/// The ranks a worker holds, by slot, and the buffers broadcast to it.
#[derive(Default)]
pub struct Ranks {
    ranks: Mutex<HashMap<u32, Arc<ServedRank>>>,
    kept: Mutex<Buffers>,
    /// The account the ranks' printf logs are charged to, under the program's budget (the
    /// one its `Open` requests carry): all of this worker's ranks share it, as all of a local
    /// run's ranks share the process's.
    logs: Mutex<Option<Arc<LogAccount>>>,
}

/// The keys of the shared buffers `op`'s writes name.
fn shared_keys(op: &WireOp, out: &mut Vec<u128>) {
    match op {
        WireOp::Write {
            bufs: WriteBufs::Shared(keys),
            ..
        } => out.extend_from_slice(keys),
        WireOp::Batch(ops) => ops.iter().for_each(|o| shared_keys(o, out)),
        _ => {}
    }
}

fn error_reply(e: &Error) -> Reply {
    Reply::Error(WireError::from_error(e))
}

impl Ranks {
    /// Keeps a broadcast buffer under `key`.
    pub fn keep(&self, key: u128, bytes: Vec<u8>) {
        lock(&self.kept).insert(key, Arc::new(bytes));
    }

    /// Forgets the buffers kept under `keys`.
    pub fn forget(&self, keys: &[u128]) {
        let mut kept = lock(&self.kept);
        for k in keys {
            kept.remove(k);
        }
    }

    /// The kept buffers that `msg`'s writes name, taken when the message arrives (in the
    /// order of the gateway's messages: a later `Unshare` cannot take them from it).
    pub fn buffers_for(&self, msg: &ToWorker) -> Result<Buffers> {
        let mut keys = Vec::new();
        if let ToWorker::Call(Request::Exec { ops }) = msg {
            ops.iter().for_each(|(_, op)| shared_keys(op, &mut keys));
        } else if let ToWorker::Call(Request::Queue { ops, .. }) = msg {
            ops.iter().for_each(|op| shared_keys(op, &mut keys));
        }
        let kept = lock(&self.kept);
        keys.into_iter()
            .map(|k| {
                kept.get(&k).map(|b| (k, Arc::clone(b))).ok_or_else(|| {
                    Error::Internal(format!(
                        "a write names the broadcast buffer {k:#x}, which this MPI worker does not hold"
                    ))
                })
            })
            .collect()
    }

    /// The account of the program's logs, of `budget` bytes (made at the first `Open`).
    fn log_account(&self, budget: u64) -> Arc<LogAccount> {
        let mut logs = lock(&self.logs);
        match &*logs {
            Some(a) if a.budget() == budget => Arc::clone(a),
            _ => Arc::clone(logs.insert(LogAccount::with_budget(budget))),
        }
    }

    /// Answers one request (`Ping` and `Shutdown` are the caller's: they answer `Unit`).
    pub fn handle(&self, msg: ToWorker) -> Reply {
        self.handle_with(msg, &Buffers::new())
    }

    /// [`Ranks::handle`], with the shared buffers its writes name ([`Ranks::buffers_for`]).
    pub fn handle_with(&self, msg: ToWorker, shared: &Buffers) -> Reply {
        match msg {
            ToWorker::Open {
                slot,
                first_dpu,
                nr_dpus,
                log_budget,
                profile,
            } => {
                // A slot opened again replaces its rank (wiped first).
                drop(lock(&self.ranks).remove(&slot));
                let made = SystemConfig::parse_with_base(None, &profile)
                    .and_then(|c| c.resolve())
                    .map_err(Error::Profile)
                    // (The program measures its transfers' host-side work itself.)
                    .and_then(|m| ServedRank::part(slot, first_dpu, nr_dpus, Arc::new(m)))
                    .map(ServedRank::without_host_timing);
                match made {
                    Ok(r) => {
                        r.charge_logs_to(self.log_account(log_budget));
                        lock(&self.ranks).insert(slot, Arc::new(r));
                        Reply::Unit
                    }
                    Err(e) => error_reply(&e),
                }
            }
            ToWorker::Close { slot } => {
                drop(lock(&self.ranks).remove(&slot));
                Reply::Unit
            }
            ToWorker::Call(req) => self.call(req, shared),
            ToWorker::Shared { .. } | ToWorker::Share { .. } => {
                Reply::Error(WireError::from_error(&Error::Internal(
                    "a broadcast buffer is taken by the worker's MPI thread".into(),
                )))
            }
            ToWorker::Unshare { keys } => {
                self.forget(&keys);
                Reply::Unit
            }
            ToWorker::Ping | ToWorker::Shutdown | ToWorker::PeerDied { .. } => Reply::Unit,
            ToWorker::Collective { .. } => Reply::Error(WireError::from_error(&Error::Internal(
                "a collective's host step is run by the worker's MPI thread's helpers".into(),
            ))),
        }
    }

    /// The rank at `slot`, with the place of `len` bytes at MRAM address `addr` of its DPUs
    /// (collectives need whole ranks of 64 DPUs).
    fn rank_region(&self, slot: u32, addr: u32, len: u32) -> Result<(Arc<ServedRank>, Place)> {
        let r = self.rank(slot)?;
        if r.nr_dpus() != 64 {
            return Err(Error::Internal(format!(
                "a collective on rank slot {slot} of {} DPUs (whole ranks of 64 only)",
                r.nr_dpus()
            )));
        }
        match DpuAddress::classify(addr) {
            DpuAddress::Mram(a) if u64::from(a.0) + u64::from(len) <= u64::from(map::MRAM_SIZE) => {
                Ok((r, Place::Mram(a)))
            }
            _ => Err(Error::Internal(format!(
                "a collective's region at {addr:#x} ({len} bytes) is not in MRAM"
            ))),
        }
    }

    fn rank(&self, slot: u32) -> Result<Arc<ServedRank>> {
        lock(&self.ranks).get(&slot).cloned().ok_or_else(|| {
            Error::Internal(format!("rank slot {slot} is not open on this MPI worker"))
        })
    }

    fn call(&self, req: Request, shared: &Buffers) -> Reply {
        match req {
            Request::Exec { ops } => {
                let ranks: Result<Vec<(Arc<ServedRank>, WireOp)>> = ops
                    .into_iter()
                    .map(|(slot, op)| Ok((self.rank(slot)?, op)))
                    .collect();
                let ranks = match ranks {
                    Ok(r) => r,
                    Err(e) => return error_reply(&e),
                };
                // The ranks of one call run in parallel, as in process.
                let outcomes = if ranks.len() == 1 {
                    ranks
                        .into_iter()
                        .map(|(r, op)| run_wire(&r, op, shared))
                        .collect()
                } else {
                    match par_map(ranks, |(r, op)| run_wire(&r, op, shared)) {
                        Ok(o) => o,
                        Err(e) => return error_reply(&e),
                    }
                };
                Reply::Exec {
                    ipc_ns: 0,
                    emu_ns: 0,
                    outcomes,
                }
            }
            Request::Queue { rank, ops } => match self.rank(rank) {
                // In order, each whatever the outcome of the ones before.
                Ok(r) => Reply::Exec {
                    ipc_ns: 0,
                    emu_ns: 0,
                    outcomes: ops.into_iter().map(|op| run_wire(&r, op, shared)).collect(),
                },
                Err(e) => error_reply(&e),
            },
            Request::Log { rank, dpu } => match self.rank(rank).and_then(|r| r.log(dpu)) {
                Ok(b) => Reply::Bytes(b),
                Err(e) => error_reply(&e),
            },
            Request::RunStats { rank, first, count } => match self.rank(rank) {
                Ok(r) => Reply::Stats(r.run_stats(first, count)),
                Err(e) => error_reply(&e),
            },
            other => error_reply(&Error::Internal(format!(
                "an MPI worker does not serve {other:?}"
            ))),
        }
    }
}

/// A collective's host step reads and writes the worker's ranks directly (the program's
/// process holds their operation locks meanwhile).
impl RankMemory for Ranks {
    fn read(&self, slot: u32, addr: u32, len: u32) -> std::result::Result<Vec<Vec<u8>>, String> {
        let (r, place) = self
            .rank_region(slot, addr, len)
            .map_err(|e| e.to_string())?;
        let mut data = vec![vec![0u8; len as usize]; r.nr_dpus() as usize];
        let items = data
            .iter_mut()
            .enumerate()
            .map(|(d, b)| XferItem {
                dpu: d as u32,
                place,
                buf: HostPtr(b.as_mut_ptr()),
            })
            .collect();
        // (`data` outlives the synchronous read.)
        r.run(RankOp::Read {
            len: len as usize,
            items,
        })
        .0
        .map_err(|e| e.to_string())?;
        Ok(data)
    }

    fn write(
        &self,
        slot: u32,
        addr: u32,
        len: u32,
        bufs: &[Vec<u8>],
    ) -> std::result::Result<(), String> {
        let (r, place) = self
            .rank_region(slot, addr, len)
            .map_err(|e| e.to_string())?;
        if bufs.len() != r.nr_dpus() as usize || bufs.iter().any(|b| b.len() != len as usize) {
            return Err("a collective's write of the wrong shape".into());
        }
        let items = bufs
            .iter()
            .enumerate()
            .map(|(d, b)| XferItem {
                dpu: d as u32,
                place,
                buf: HostPtr(b.as_ptr().cast_mut()),
            })
            .collect();
        // (A write only reads its buffers, which outlive it.)
        r.run(RankOp::Write {
            len: len as usize,
            items,
        })
        .0
        .map_err(|e| e.to_string())
    }
}

fn failed(e: &Error) -> RankOutcome {
    RankOutcome {
        result: Err(WireError::from_error(e)),
        facts: OpFacts::default(),
        data: Vec::new(),
    }
}

/// Checks that a transfer's items name DPUs of the rank and buffers of the message.
fn check_items(items: &[WireItem], nr_dpus: u32, nr_bufs: usize) -> Result<()> {
    for i in items {
        if i.dpu >= nr_dpus || i.buf as usize >= nr_bufs {
            return Err(Error::Internal(format!(
                "malformed transfer item for an MPI worker: DPU {} of {nr_dpus}, buffer {} of {nr_bufs}",
                i.dpu, i.buf
            )));
        }
    }
    Ok(())
}

/// Runs a write of `len` bytes per item, item `i` from `ptrs[i.buf]` (checked by
/// `check_items`; each valid for `len` bytes until this returns).
fn write_from(
    served: &ServedRank,
    len: u32,
    items: &[WireItem],
    ptrs: &[*mut u8],
) -> (Result<()>, OpFacts) {
    let items = items.iter().map(|i| i.to_xfer(ptrs)).collect();
    served.run(RankOp::Write {
        len: len as usize,
        items,
    })
}

/// Runs one operation on a rank (`shared`: the broadcast buffers its writes may name).
fn run_wire(served: &ServedRank, op: WireOp, shared: &Buffers) -> RankOutcome {
    let mut data = Vec::new();
    let nr_dpus = served.nr_dpus();
    let (result, facts) = match op {
        WireOp::Load { elf, origin, dpus } => {
            if let Some(d) = dpus.iter().find(|d| **d >= nr_dpus) {
                return failed(&Error::Internal(format!("load on DPU {d} of {nr_dpus}")));
            }
            match Program::parse(origin, &elf) {
                Ok(p) => served.run(RankOp::Load {
                    program: Arc::new(p),
                    dpus,
                }),
                Err(e) => (Err(e), OpFacts::default()),
            }
        }
        WireOp::Write {
            len,
            items,
            bufs: WriteBufs::Inline(bufs),
        } => {
            if let Err(e) = check_items(&items, nr_dpus, bufs.count()) {
                return failed(&e);
            }
            if bufs.len_each() != len as usize {
                return failed(&Error::Internal("write buffer of the wrong size".into()));
            }
            let ptrs = bufs.ptrs();
            // (`bufs` lives until the write has run.)
            write_from(served, len, &items, &ptrs)
        }
        WireOp::Write {
            len,
            items,
            bufs: WriteBufs::Shared(keys),
        } => {
            if let Err(e) = check_items(&items, nr_dpus, keys.len()) {
                return failed(&e);
            }
            let mut bufs = Vec::with_capacity(keys.len());
            for k in &keys {
                match shared.get(k) {
                    Some(b) if b.len() == len as usize => bufs.push(Arc::clone(b)),
                    _ => {
                        return failed(&Error::Internal(format!(
                            "broadcast buffer {k:#x} missing or not of {len} bytes"
                        )))
                    }
                }
            }
            // (A write only reads its buffers; `bufs` lives until it has run.)
            let ptrs: Vec<*mut u8> = bufs.iter().map(|b| b.as_ptr().cast_mut()).collect();
            write_from(served, len, &items, &ptrs)
        }
        WireOp::Read {
            len,
            items,
            staged: None,
        } => {
            if let Err(e) = check_items(&items, nr_dpus, items.len()) {
                return failed(&e);
            }
            let len = len as usize;
            data = vec![0u8; len * items.len()];
            let base = data.as_mut_ptr();
            let items = items
                .iter()
                .enumerate()
                .map(|(k, i)| XferItem {
                    dpu: i.dpu,
                    place: i.place,
                    // SAFETY: k < items.len(), so k * len is inside `data`.
                    buf: HostPtr(unsafe { base.add(k * len) }),
                })
                .collect();
            served.run(RankOp::Read { len, items })
        }
        WireOp::Launch { dpus } => {
            let programs = served.programs(0, nr_dpus);
            let mut with = Vec::with_capacity(dpus.len());
            for d in dpus {
                match programs.get(d as usize).cloned().flatten() {
                    Some(p) => with.push((d, p)),
                    None => {
                        let d = d + served.first_dpu();
                        return failed(&Error::NoProgramLoaded(format!("DPU {d} of the rank")));
                    }
                }
            }
            served.run(RankOp::Launch { dpus: with })
        }
        WireOp::Batch(ops) => {
            // In order; the first error stops the batch. The outcome is the last operation's
            // (the one the batched writes rode along with).
            let mut last = None;
            for op in ops {
                let o = run_wire(served, op, shared);
                let failed = o.result.is_err();
                last = Some(o);
                if failed {
                    break;
                }
            }
            return last.unwrap_or(RankOutcome {
                result: Ok(()),
                facts: OpFacts::default(),
                data: Vec::new(),
            });
        }
        other => (
            Err(Error::Internal(format!(
                "an MPI worker does not run {}",
                match other {
                    WireOp::ReadInPlace { .. } => "in-place reads",
                    _ => "staged transfers",
                }
            ))),
            OpFacts::default(),
        ),
    };
    RankOutcome {
        result: result.map_err(|e| WireError::from_error(&e)),
        facts,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_closes_and_refuses_unknown_slots() {
        let ranks = Ranks::default();
        let open = ToWorker::Open {
            slot: 1,
            first_dpu: 0,
            nr_dpus: 4,
            log_budget: 1 << 20,
            profile: "nrRanks=2,nrDpusPerRank=4".into(),
        };
        assert_eq!(ranks.handle(open), Reply::Unit);
        let stats = ranks.handle(ToWorker::Call(Request::RunStats {
            rank: 1,
            first: 0,
            count: 4,
        }));
        assert_eq!(stats, Reply::Stats(vec![None; 4]));
        assert_eq!(ranks.handle(ToWorker::Close { slot: 1 }), Reply::Unit);
        let gone = ranks.handle(ToWorker::Call(Request::Log { rank: 1, dpu: 0 }));
        let Reply::Error(e) = gone else {
            panic!("{gone:?}")
        };
        assert!(e.to_error().to_string().contains("not open"), "{e:?}");
        let bad = ranks.handle(ToWorker::Open {
            slot: 0,
            first_dpu: 0,
            nr_dpus: 4,
            log_budget: 1 << 20,
            profile: "hardware=no-such-profile".into(),
        });
        assert!(matches!(bad, Reply::Error(_)), "{bad:?}");
    }

    #[test]
    fn a_part_of_a_split_rank_names_its_dpus_as_the_rank_does() {
        let ranks = Ranks::default();
        // (Slot 3: the slots are the process's, and the other test takes slot 1.)
        let open = |first_dpu: u32, nr_dpus: u32| ToWorker::Open {
            slot: 3,
            first_dpu,
            nr_dpus,
            log_budget: 1 << 20,
            profile: "nrRanks=4,nrDpusPerRank=4".into(),
        };
        // DPUs 2 and 3 of rank 3, indexed 0 and 1 here.
        assert_eq!(ranks.handle(open(2, 2)), Reply::Unit);
        let launch = ranks.handle(ToWorker::Call(Request::Exec {
            ops: vec![(3, WireOp::Launch { dpus: vec![1] })],
        }));
        let Reply::Exec { outcomes, .. } = launch else {
            panic!("{launch:?}")
        };
        let e = outcomes[0]
            .result
            .clone()
            .unwrap_err()
            .to_error()
            .to_string();
        assert!(e.contains("DPU 3 of the rank"), "{e}");
        // A part past the rank's DPUs is refused.
        assert!(matches!(ranks.handle(open(3, 2)), Reply::Error(_)));
    }
}
