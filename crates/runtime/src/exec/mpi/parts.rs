//! A rank split over several MPI workers: each worker holds a contiguous part of its DPUs.
//!
//! An allocation of fewer ranks than the run has workers would leave workers idle (a rank
//! lives on one worker): a program that runs on one rank would use one worker's cores. So an
//! allocation of at most half as many ranks as there are workers splits each rank's DPUs into
//! parts, one per worker ([`parts_of`]). Every rank operation is cut into one operation per part, each naming its
//! part's DPUs from 0 ([`split`]), and the parts' outcomes are joined into the outcome the
//! whole rank would have given ([`join`]): the first error in DPU order (DPU faults counted
//! together) and one launch record, the sums and maxima a whole rank's launch sums and
//! maximises; a read's bytes go from each part's reply into the program's buffers of that
//! part's items ([`Cut::take_read`]). The clock never sees the parts: it
//! places the rank's operation from the joined facts, as for a whole rank.

use crate::clock::stats::LaunchRecord;
use crate::error::{merge, Error};
use crate::exec::remote::protocol::{RankOutcome, WireError, WireItem, WireOp, WriteBufs};
use crate::exec::OpFacts;

/// The environment variable that turns the splitting off (`off`) or on (`on`, the default).
pub const SPLIT_ENV: &str = "OPENPIM_MPI_SPLIT";

/// A worker's part of a rank: DPUs `first..first + count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub worker: u32,
    pub first: u32,
    pub count: u32,
}

impl Part {
    /// Whether DPU `dpu` of the rank is in this part.
    pub fn holds(&self, dpu: u32) -> bool {
        dpu >= self.first && dpu - self.first < self.count
    }

    /// The DPUs of `dpus` this part holds, numbered from its first; `None` if none.
    fn mine(&self, dpus: &[u32]) -> Option<Vec<u32>> {
        let mine: Vec<u32> = dpus
            .iter()
            .filter(|d| self.holds(**d))
            .map(|d| d - self.first)
            .collect();
        (!mine.is_empty()).then_some(mine)
    }
}

/// Whether `OPENPIM_MPI_SPLIT` lets allocations split ranks; an unknown value is an error
/// naming the valid ones.
pub fn splitting_allowed() -> Result<bool, Error> {
    match std::env::var(SPLIT_ENV).as_deref() {
        Err(_) | Ok("") | Ok("on") => Ok(true),
        Ok("off") => Ok(false),
        Ok(other) => Err(Error::System(format!(
            "{SPLIT_ENV}={other}: expected `on` (split the ranks of an allocation smaller than the workers, the default) or `off`"
        ))),
    }
}

/// The parts of a rank (`nr_dpus` DPUs, home worker `home`: its slot's) of an allocation of
/// `ranks` ranks on `workers` workers: one part on the home worker, or, when `split` and the
/// allocation has at most half as many ranks as there are workers, `workers / ranks` parts
/// (at most one per DPU) on workers `home`, `home + ranks`, `home + 2 ranks`, ... (mod
/// `workers`): distinct for one rank, and the allocation's ranks, whose homes are
/// consecutive, together use every worker once.
pub fn parts_of(home: u32, nr_dpus: u32, ranks: u32, workers: u32, split: bool) -> Vec<Part> {
    let k = if split && ranks > 0 {
        (workers / ranks).clamp(1, nr_dpus.max(1))
    } else {
        1
    };
    (0..k)
        .map(|j| Part {
            worker: (home + j * ranks) % workers.max(1),
            // Sizes differ by at most one DPU, the larger parts first.
            first: j * (nr_dpus / k) + j.min(nr_dpus % k),
            count: nr_dpus / k + u32::from(j < nr_dpus % k),
        })
        .collect()
}

/// A rank operation cut into one operation per part (`None`: nothing for that part), with,
/// for a read (or a batch ending with one), the indices of the items each part reads, in its
/// order: where each part's bytes go.
pub struct Cut {
    pub ops: Vec<Option<WireOp>>,
    /// The worker of each part.
    pub workers: Vec<u32>,
    read: Option<(usize, Vec<Vec<usize>>)>,
}

/// `op` cut along `parts`. A whole rank's operation goes as it is.
pub fn split(op: WireOp, parts: &[Part]) -> Cut {
    let mut cut = if let [whole] = parts {
        debug_assert_eq!(whole.first, 0);
        let read = read_items(&op).map(|(len, n)| (len, vec![(0..n).collect()]));
        Cut {
            read,
            ..Cut::plain(vec![Some(op)])
        }
    } else {
        cut(op, parts)
    };
    cut.workers = parts.iter().map(|p| p.worker).collect();
    cut
}

impl Cut {
    /// For a read (or a batch ending with one) of some bytes per item: those bytes, and the
    /// items each part's outcome carries, in its order (indices into the operation's items).
    /// The caller has the bytes delivered where they go: [`join`] then joins no data.
    pub fn take_read(&mut self) -> Option<(usize, Vec<Vec<usize>>)> {
        match &self.read {
            Some((len, _)) if *len > 0 => self.read.take(),
            _ => None,
        }
    }
}

/// A read's bytes per item and its number of items (the last operation's, for a batch).
fn read_items(op: &WireOp) -> Option<(usize, usize)> {
    match op {
        WireOp::Read { len, items, .. } => Some((*len as usize, items.len())),
        WireOp::Batch(ops) => ops.last().and_then(read_items),
        _ => None,
    }
}

fn cut(op: WireOp, parts: &[Part]) -> Cut {
    let n = parts.len();
    match op {
        WireOp::Load { elf, origin, dpus } => Cut::plain(
            parts
                .iter()
                .map(|p| {
                    p.mine(&dpus).map(|mine| WireOp::Load {
                        elf: elf.clone(),
                        origin: origin.clone(),
                        dpus: mine,
                    })
                })
                .collect(),
        ),
        WireOp::Write { len, items, bufs } => Cut::plain(
            parts
                .iter()
                .map(|p| {
                    let mine: Vec<&WireItem> = items.iter().filter(|i| p.holds(i.dpu)).collect();
                    (!mine.is_empty()).then(|| write_part(len, &mine, &bufs, p.first))
                })
                .collect(),
        ),
        WireOp::Read { len, items, staged } => {
            let mut taken = vec![Vec::new(); n];
            let ops = parts
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    let mine: Vec<WireItem> = items
                        .iter()
                        .enumerate()
                        .filter(|(_, i)| p.holds(i.dpu))
                        .map(|(at, i)| {
                            taken[k].push(at);
                            WireItem {
                                dpu: i.dpu - p.first,
                                place: i.place,
                                buf: taken[k].len() as u32 - 1,
                            }
                        })
                        .collect();
                    (!mine.is_empty()).then_some(WireOp::Read {
                        len,
                        items: mine,
                        staged,
                    })
                })
                .collect();
            Cut {
                ops,
                workers: Vec::new(),
                read: Some((len as usize, taken)),
            }
        }
        WireOp::Launch { dpus } => Cut::plain(
            parts
                .iter()
                .map(|p| p.mine(&dpus).map(|dpus| WireOp::Launch { dpus }))
                .collect(),
        ),
        WireOp::Batch(ops) => {
            // Each part runs its share of the operations in order; the outcome the batch
            // answers with is the last operation's, so the last one's cut decides the join.
            let mut per_part: Vec<Vec<WireOp>> = vec![Vec::new(); n];
            let mut last = Cut::plain(vec![None; n]);
            for op in ops {
                last = cut(op, parts);
                for (k, o) in last.ops.iter_mut().enumerate() {
                    per_part[k].extend(o.take());
                }
            }
            Cut {
                ops: per_part
                    .into_iter()
                    .map(|ops| (!ops.is_empty()).then_some(WireOp::Batch(ops)))
                    .collect(),
                ..last
            }
        }
        // The MPI backend sends neither (the workers refuse them); kept whole for part 0,
        // whose worker refuses it with its own message.
        other @ WireOp::ReadInPlace { .. } => {
            let mut ops = vec![None; n];
            ops[0] = Some(other);
            Cut::plain(ops)
        }
    }
}

impl Cut {
    fn plain(ops: Vec<Option<WireOp>>) -> Cut {
        Cut {
            ops,
            workers: Vec::new(),
            read: None,
        }
    }
}

/// The items of a write that fall in a part, with only the buffers they use, renumbered.
fn write_part(len: u32, mine: &[&WireItem], bufs: &WriteBufs, first: u32) -> WireOp {
    let mut used: Vec<u32> = Vec::new();
    let items = mine
        .iter()
        .map(|i| {
            let buf = match used.iter().position(|b| *b == i.buf) {
                Some(at) => at,
                None => {
                    used.push(i.buf);
                    used.len() - 1
                }
            };
            WireItem {
                dpu: i.dpu - first,
                place: i.place,
                buf: buf as u32,
            }
        })
        .collect();
    let pick = |b: u32| b as usize;
    let bufs = match bufs {
        WriteBufs::Inline(v) => {
            WriteBufs::Inline(v.pick(&used.iter().map(|b| pick(*b)).collect::<Vec<_>>()))
        }
        WriteBufs::Shared(v) => WriteBufs::Shared(used.iter().map(|b| v[pick(*b)]).collect()),
        WriteBufs::Staged(v) => WriteBufs::Staged(used.iter().map(|b| v[pick(*b)]).collect()),
        WriteBufs::InPlace(v) => WriteBufs::InPlace(used.iter().map(|b| v[pick(*b)]).collect()),
    };
    WireOp::Write { len, items, bufs }
}

/// The whole rank's outcome from its parts' (`None`: a part that was sent nothing). A read's
/// bytes are not joined: the link delivers each part's into the program's buffers
/// ([`Cut::take_read`]).
pub fn join(mut outcomes: Vec<Option<RankOutcome>>) -> RankOutcome {
    if let [whole] = outcomes.as_mut_slice() {
        // A whole rank's outcome is the rank's (a read's bytes are in the items' order
        // already, and not copied again).
        if let Some(o) = whole.take() {
            return o;
        }
    }
    let mut results = Vec::new();
    let mut host_ns = 0;
    let mut launch: Option<LaunchRecord> = None;
    for o in outcomes.into_iter().flatten() {
        // A launch that faulted has its record too (the faults counted in it).
        host_ns = host_ns.max(o.facts.host_ns);
        if let Some(r) = o.facts.launch {
            match &mut launch {
                Some(l) => l.join(&r),
                None => launch = Some(r),
            }
        }
        if let Err(w) = o.result {
            results.push(Err(w.to_error()));
        }
    }
    RankOutcome {
        result: merge(results).map_err(|e| WireError::from_error(&e)),
        facts: OpFacts { host_ns, launch },
        data: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::remote::protocol::InlineBufs;
    use crate::xfer::Place;

    fn inline(bufs: &[&[u8]]) -> WriteBufs {
        WriteBufs::Inline(InlineBufs::of(bufs[0].len(), bufs.iter().copied()).unwrap())
    }

    fn item(dpu: u32, buf: u32) -> WireItem {
        WireItem {
            dpu,
            place: Place::Mram(openpim_machine::MramAddr(0)),
            buf,
        }
    }

    #[test]
    fn an_allocation_smaller_than_the_workers_splits_its_ranks_over_all_of_them() {
        // One rank on 2 workers: halves.
        let p = parts_of(0, 64, 1, 2, true);
        assert_eq!(
            p,
            vec![
                Part {
                    worker: 0,
                    first: 0,
                    count: 32
                },
                Part {
                    worker: 1,
                    first: 32,
                    count: 32
                }
            ]
        );
        // Two ranks on 4 workers: each in two, the four parts on four workers.
        let a = parts_of(0, 64, 2, 4, true);
        let b = parts_of(1, 64, 2, 4, true);
        let mut ws: Vec<u32> = a.iter().chain(&b).map(|p| p.worker).collect();
        ws.sort_unstable();
        assert_eq!(ws, vec![0, 1, 2, 3]);
        // Uneven: 5 DPUs in 3 parts of 2, 2, 1; never more parts than DPUs.
        let c = parts_of(1, 5, 1, 3, true);
        assert_eq!(
            c.iter().map(|p| (p.first, p.count)).collect::<Vec<_>>(),
            vec![(0, 2), (2, 2), (4, 1)]
        );
        assert_eq!(parts_of(0, 1, 1, 4, true).len(), 1);
        // Not split: as many ranks as workers or more, or turned off.
        assert_eq!(
            parts_of(3, 64, 4, 2, true),
            vec![Part {
                worker: 1,
                first: 0,
                count: 64
            }]
        );
        assert_eq!(parts_of(0, 64, 1, 2, false).len(), 1);
    }

    #[test]
    fn a_write_reaches_each_part_with_its_own_dpus_and_buffers() {
        let parts = parts_of(0, 4, 1, 2, true);
        let op = WireOp::Write {
            len: 2,
            items: vec![item(0, 0), item(1, 1), item(2, 1), item(3, 2)],
            bufs: inline(&[&[1, 1], &[2, 2], &[3, 3]]),
        };
        let cut = split(op, &parts);
        assert_eq!(
            cut.ops[1],
            Some(WireOp::Write {
                len: 2,
                items: vec![item(0, 0), item(1, 1)],
                bufs: inline(&[&[2, 2], &[3, 3]]),
            })
        );
        // A launch of DPU 1 only goes to part 0.
        let cut = split(WireOp::Launch { dpus: vec![1] }, &parts);
        assert_eq!(cut.ops, vec![Some(WireOp::Launch { dpus: vec![1] }), None]);
    }

    #[test]
    fn a_read_comes_back_in_the_items_order_and_faults_count_together() {
        let parts = parts_of(0, 4, 1, 2, true);
        let op = WireOp::Read {
            len: 1,
            items: vec![item(3, 0), item(0, 1), item(2, 2)],
            staged: None,
        };
        let cut = split(op, &parts);
        let ok = |data: Vec<u8>| {
            Some(RankOutcome {
                result: Ok(()),
                facts: OpFacts::default(),
                data,
            })
        };
        // Part 0 reads DPU 0 (item 1); part 1 reads DPUs 3 and 2 (items 0 and 2): where
        // each part's bytes go.
        let mut cut = cut;
        assert_eq!(cut.take_read(), Some((1, vec![vec![1], vec![0, 2]])));
        let joined = join(vec![ok(Vec::new()), ok(Vec::new())]);
        assert!(joined.result.is_ok());
        let fault = |dpu: u32| {
            Some(RankOutcome {
                result: Err(WireError::from_error(&Error::DpuFault {
                    first: Box::new(crate::error::FaultInfo {
                        rank: 0,
                        dpu,
                        tasklet: 0,
                        pc: 0,
                        function: None,
                        message: "fault".into(),
                    }),
                    count: 1,
                })),
                facts: OpFacts::default(),
                data: Vec::new(),
            })
        };
        // A launch's faults on both parts.
        let joined = join(vec![fault(1), fault(2)]);
        match joined.result.map_err(|w| w.to_error()) {
            Err(Error::DpuFault { first, count }) => assert_eq!((first.dpu, count), (1, 2)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn launch_records_join_as_one_rank_s() {
        let rec = |dpus: u32, max: u64, quirk: Option<&str>| LaunchRecord {
            dpus,
            max_cycles: max,
            total_cycles: max * u64::from(dpus),
            total_instructions: 7,
            tasklets: dpus,
            modeled_seconds: max as f64,
            dma_quirk_example: quirk.map(String::from),
            ..LaunchRecord::default()
        };
        let mut a = rec(2, 100, None);
        a.join(&rec(3, 250, Some("DPU 4")));
        assert_eq!(
            (a.dpus, a.max_cycles, a.total_cycles, a.total_instructions),
            (5, 250, 950, 14)
        );
        assert_eq!((a.tasklets, a.modeled_seconds), (3, 250.0));
        assert_eq!(a.dma_quirk_example.as_deref(), Some("DPU 4"));
    }
}
