//! DPU sets and the operations on them, with the SDK's semantics.
//!
//! A set is either a list of whole ranks (from allocation, or one rank of it) or a single
//! DPU. Each operation becomes one request per rank ([`RankOp`]) for the backend that runs
//! the ranks ([`crate::exec::Backend`]): synchronous ones wait for the ranks' queued work,
//! then run; asynchronous ones are queued on the ranks, which run their queues in order
//! while other ranks run in parallel.

use std::sync::{Arc, Condvar, Mutex};

use openpim_machine::MachineConfig;

use crate::clock::stats::DpuRunStats;
use crate::clock::timeline;
use crate::context::as_callback_of;
use crate::error::{merge, Error, Result};
use crate::exec::{HostPtr, RankOp, XferItem};
use crate::program::{Program, Symbol};
use crate::sdk::rank::Rank;
use crate::xfer::{check_access, Place, SymbolRef};

/// A set of DPUs.
#[derive(Debug, Clone)]
pub enum DpuSet {
    /// Whole ranks (distinct), in allocation order.
    Ranks(Vec<Arc<Rank>>),
    /// One DPU: its rank and its index in the rank.
    Dpu(Arc<Rank>, u32),
}

/// Launch policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchPolicy {
    /// Return at once; `sync` waits.
    Asynchronous,
    /// Return when every DPU has finished.
    Synchronous,
}

/// Direction of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XferDirection {
    ToDpu,
    FromDpu,
}

/// Options of a transfer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XferFlags {
    /// Keep the prepared buffers after the transfer.
    pub no_reset: bool,
    /// Queue the transfer instead of waiting for it.
    pub asynchronous: bool,
    /// Accepted (ranks always transfer in parallel).
    pub parallel: bool,
}

/// Options of `callback`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallbackFlags {
    /// Queue the callback on the ranks.
    pub asynchronous: bool,
    /// Do not block the ranks' queues while it runs (needs `asynchronous`).
    pub nonblocking: bool,
    /// Call once for the whole set instead of once per rank.
    pub single_call: bool,
    /// Allow the per-rank calls to run concurrently.
    pub parallel: bool,
}

/// What a callback is called for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallbackScope {
    /// The whole set (SINGLE_CALL).
    Whole,
    /// The rank at this index of the set.
    Rank(u32),
}

/// A user callback: returns `Err(code)` for a failure code to report.
pub type Callback = Arc<dyn Fn(CallbackScope) -> std::result::Result<(), u32> + Send + Sync>;

/// Per rank, per-DPU items.
type PerRank<T> = Vec<(Arc<Rank>, Vec<T>)>;

/// Which DPUs of a rank an operation touches.
#[derive(Debug, Clone, Copy)]
enum Sel {
    All,
    One(u32),
}

impl DpuSet {
    /// A set of whole ranks (duplicates removed).
    pub fn from_ranks(mut ranks: Vec<Arc<Rank>>) -> DpuSet {
        let mut seen = std::collections::HashSet::new();
        ranks.retain(|r| seen.insert(Arc::as_ptr(r)));
        DpuSet::Ranks(ranks)
    }

    /// The set of one DPU.
    pub fn dpu(rank: Arc<Rank>, index: u32) -> Result<DpuSet> {
        if index >= rank.nr_dpus() {
            return Err(Error::InvalidDpuSet(format!(
                "rank {} has no DPU {index}",
                rank.id()
            )));
        }
        Ok(DpuSet::Dpu(rank, index))
    }

    fn parts(&self) -> Vec<(&Arc<Rank>, Sel)> {
        match self {
            DpuSet::Ranks(r) => r.iter().map(|r| (r, Sel::All)).collect(),
            DpuSet::Dpu(r, i) => vec![(r, Sel::One(*i))],
        }
    }

    fn indices(rank: &Rank, sel: Sel) -> std::ops::Range<u32> {
        match sel {
            Sel::All => 0..rank.nr_dpus(),
            Sel::One(i) => i..i + 1,
        }
    }

    /// Ranks of the set (the DPU's rank for a single DPU).
    pub fn ranks(&self) -> Vec<Arc<Rank>> {
        self.parts()
            .into_iter()
            .map(|(r, _)| Arc::clone(r))
            .collect()
    }

    /// Number of DPUs.
    pub fn nr_dpus(&self) -> u32 {
        self.parts()
            .iter()
            .map(|(r, s)| Self::indices(r, *s).len() as u32)
            .sum()
    }

    /// Number of ranks (1 for a single DPU).
    pub fn nr_ranks(&self) -> u32 {
        match self {
            DpuSet::Ranks(r) => r.len() as u32,
            DpuSet::Dpu(..) => 1,
        }
    }

    /// The DPUs of the set, in order, as single-DPU sets.
    pub fn dpus(&self) -> Vec<DpuSet> {
        self.parts()
            .into_iter()
            .flat_map(|(r, s)| Self::indices(r, s).map(move |i| DpuSet::Dpu(Arc::clone(r), i)))
            .collect()
    }

    /// The machine the set belongs to.
    pub fn machine(&self) -> Option<&Arc<MachineConfig>> {
        self.parts().first().map(|(r, _)| r.machine())
    }

    /// A description of the set's machine (`dpu_get_profile_description`).
    pub fn profile_description(&self) -> String {
        self.machine().map(|m| m.describe()).unwrap_or_default()
    }

    fn wait_idle(&self) {
        for (r, _) in self.parts() {
            r.wait_idle();
        }
    }

    /// Runs one operation per rank synchronously, ranks in parallel.
    fn run_sync(&self, ops: Vec<(Arc<Rank>, RankOp)>) -> Result<()> {
        let Some(backend) = ops.first().map(|(r, _)| Arc::clone(r.backend())) else {
            return Ok(());
        };
        // The ranks' handles are held until the call returns.
        let mut held = Vec::with_capacity(ops.len());
        let requests = ops
            .into_iter()
            .map(|(r, op)| {
                let id = r.id();
                held.push(r);
                (id, op)
            })
            .collect();
        let result = backend.execute(requests);
        drop(held);
        result
    }

    /// Runs per-rank operations, synchronously or queued.
    fn submit(&self, ops: Vec<(Arc<Rank>, RankOp)>, asynchronous: bool) -> Result<()> {
        if asynchronous {
            let Some(backend) = ops.first().map(|(r, _)| Arc::clone(r.backend())) else {
                return Ok(());
            };
            backend.enqueue(ops.into_iter().map(|(r, op)| (r.id(), op)).collect())
        } else {
            self.run_sync(ops)
        }
    }

    /// Checks that every DPU of the set has a program; returns them per rank.
    fn programs(&self) -> Result<PerRank<(u32, Arc<Program>)>> {
        let mut out = Vec::new();
        for (r, sel) in self.parts() {
            let range = Self::indices(r, sel);
            let programs = r.programs(range.clone());
            let mut v = Vec::new();
            for i in range.clone() {
                match &programs[(i - range.start) as usize] {
                    Some(p) => v.push((i, Arc::clone(p))),
                    None => {
                        return Err(Error::NoProgramLoaded(format!(
                            "DPU {i} of rank {}",
                            r.id()
                        )))
                    }
                }
            }
            out.push((Arc::clone(r), v));
        }
        Ok(out)
    }

    /// Resolves a symbol on every DPU of the set and checks the access.
    fn places(&self, sym: SymbolRef<'_>, offset: u32, len: usize) -> Result<PerRank<(u32, Place)>> {
        match sym {
            SymbolRef::Symbol(s) => {
                let place = check_access(s, &sym.describe(), offset, len)?;
                Ok(self
                    .parts()
                    .into_iter()
                    .map(|(r, sel)| {
                        (
                            Arc::clone(r),
                            Self::indices(r, sel).map(|i| (i, place)).collect(),
                        )
                    })
                    .collect())
            }
            SymbolRef::Name(name) => {
                let mut cache: Option<(*const Program, Place)> = None;
                let mut out = Vec::new();
                for (r, sel) in self.parts() {
                    let range = Self::indices(r, sel);
                    let programs = r.programs(range.clone());
                    let mut v = Vec::new();
                    for i in range.clone() {
                        let prog =
                            programs[(i - range.start) as usize]
                                .as_ref()
                                .ok_or_else(|| {
                                    Error::NoProgramLoaded(format!("DPU {i} of rank {}", r.id()))
                                })?;
                        let place = match cache {
                            Some((p, place)) if p == Arc::as_ptr(prog) => place,
                            _ => {
                                let place = check_access(prog.symbol(name)?, name, offset, len)?;
                                cache = Some((Arc::as_ptr(prog), place));
                                place
                            }
                        };
                        v.push((i, place));
                    }
                    out.push((Arc::clone(r), v));
                }
                Ok(out)
            }
        }
    }

    // ----- programs -------------------------------------------------------------------

    /// Loads a program file on every DPU of the set.
    pub fn load_file(&self, path: &str) -> Result<Arc<Program>> {
        let program = Arc::new(Program::from_file(path)?);
        self.load(Arc::clone(&program))?;
        Ok(program)
    }

    /// Loads a program from ELF bytes on every DPU of the set.
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<Arc<Program>> {
        let program = Arc::new(Program::from_bytes(bytes)?);
        self.load(Arc::clone(&program))?;
        Ok(program)
    }

    /// Loads an already parsed program on every DPU of the set (always synchronous).
    pub fn load(&self, program: Arc<Program>) -> Result<()> {
        let ops = self
            .parts()
            .into_iter()
            .map(|(r, sel)| {
                (
                    Arc::clone(r),
                    RankOp::Load {
                        program: Arc::clone(&program),
                        dpus: Self::indices(r, sel).collect(),
                    },
                )
            })
            .collect();
        self.run_sync(ops)
    }

    /// The program loaded on the set's first DPU.
    pub fn program(&self) -> Option<Arc<Program>> {
        let parts = self.parts();
        let (r, sel) = parts.first()?;
        let first = Self::indices(r, *sel).start;
        r.programs(first..first + 1).pop().flatten()
    }

    // ----- transfers ------------------------------------------------------------------

    /// Copies `data` to the symbol (at `offset`) of every DPU of the set (`dpu_copy_to`).
    pub fn copy_to(&self, sym: SymbolRef<'_>, offset: u32, data: &[u8]) -> Result<()> {
        // SAFETY: `data` outlives this synchronous call and is only read.
        unsafe { self.broadcast_raw(sym, offset, data.as_ptr(), data.len(), false) }
    }

    /// Copies from the symbol of a single DPU into `out` (`dpu_copy_from`).
    pub fn copy_from(&self, sym: SymbolRef<'_>, offset: u32, out: &mut [u8]) -> Result<()> {
        if self.nr_dpus() != 1 {
            return Err(Error::InvalidDpuSet(format!(
                "dpu_copy_from reads one DPU, but the set has {} DPUs; use DPU_FOREACH to pick one, or dpu_prepare_xfer + dpu_push_xfer",
                self.nr_dpus()
            )));
        }
        let len = out.len();
        let places = self.places(sym, offset, len)?;
        let buf = HostPtr(out.as_mut_ptr());
        let ops = places
            .into_iter()
            .map(|(r, v)| {
                let items = v
                    .into_iter()
                    .map(|(dpu, place)| XferItem { dpu, place, buf })
                    .collect();
                (r, RankOp::Read { len, items })
            })
            .collect();
        self.run_sync(ops)
    }

    /// Copies `len` bytes at `src` to every DPU of the set, optionally queued
    /// (`dpu_broadcast_to`).
    ///
    /// # Safety
    /// `src` must be valid for reads of `len` bytes until the transfer has run: until this
    /// call returns, or, when `asynchronous`, until the next `sync` of the set.
    pub unsafe fn broadcast_raw(
        &self,
        sym: SymbolRef<'_>,
        offset: u32,
        src: *const u8,
        len: usize,
        asynchronous: bool,
    ) -> Result<()> {
        let places = self.places(sym, offset, len)?;
        let buf = HostPtr(src.cast_mut());
        let ops = places
            .into_iter()
            .map(|(r, v)| {
                let items = v
                    .into_iter()
                    .map(|(dpu, place)| XferItem { dpu, place, buf })
                    .collect();
                (r, RankOp::Write { len, items })
            })
            .collect();
        self.submit(ops, asynchronous)
    }

    /// Remembers `buf` as the transfer buffer of every DPU of the set (`dpu_prepare_xfer`);
    /// a null `buf` un-prepares the DPUs.
    ///
    /// # Safety
    /// `buf` must stay valid for the length of every later `push_xfer` that uses it.
    pub unsafe fn prepare_xfer(&self, buf: *mut u8) {
        for (r, sel) in self.parts() {
            let mut prepared = r.lock_prepared();
            for i in Self::indices(r, sel) {
                prepared[i as usize] = if buf.is_null() {
                    None
                } else {
                    Some(HostPtr(buf))
                };
            }
        }
    }

    /// Transfers between each DPU's prepared buffer and the symbol (`dpu_push_xfer`); DPUs
    /// without a prepared buffer are skipped. Clears the prepared buffers unless `no_reset`.
    ///
    /// # Safety
    /// Every prepared buffer must be valid for `len` bytes (reads for `ToDpu`, writes for
    /// `FromDpu`, not accessed by the caller meanwhile) until the transfer has run: until this
    /// call returns, or, when asynchronous, until the next `sync` of the set.
    pub unsafe fn push_xfer(
        &self,
        dir: XferDirection,
        sym: SymbolRef<'_>,
        offset: u32,
        len: usize,
        flags: XferFlags,
    ) -> Result<()> {
        let places = self.places(sym, offset, len)?;
        let mut ops = Vec::with_capacity(places.len());
        for (r, v) in places {
            let mut prepared = r.lock_prepared();
            let mut items = Vec::with_capacity(v.len());
            for (dpu, place) in v {
                if let Some(buf) = prepared[dpu as usize] {
                    items.push(XferItem { dpu, place, buf });
                }
                if !flags.no_reset {
                    prepared[dpu as usize] = None;
                }
            }
            drop(prepared);
            if !items.is_empty() {
                let op = match dir {
                    XferDirection::ToDpu => RankOp::Write { len, items },
                    XferDirection::FromDpu => RankOp::Read { len, items },
                };
                ops.push((r, op));
            }
        }
        self.submit(ops, flags.asynchronous)
    }

    /// Safe per-DPU transfer for Rust users: `bufs[i]` goes to the i-th DPU of the set.
    pub fn push_to(&self, sym: SymbolRef<'_>, offset: u32, bufs: &[&[u8]]) -> Result<()> {
        let dpus = self.dpus();
        if bufs.len() != dpus.len() {
            return Err(Error::InvalidDpuSet(format!(
                "{} buffers for {} DPUs",
                bufs.len(),
                dpus.len()
            )));
        }
        for (d, b) in dpus.iter().zip(bufs) {
            d.copy_to(sym, offset, b)?;
        }
        Ok(())
    }

    // ----- launches -------------------------------------------------------------------

    /// Runs every DPU of the set (`dpu_launch`).
    pub fn launch(&self, policy: LaunchPolicy) -> Result<()> {
        let ops = self
            .programs()?
            .into_iter()
            .map(|(r, dpus)| (r, RankOp::Launch { dpus }))
            .collect();
        self.submit(ops, policy == LaunchPolicy::Asynchronous)
    }

    /// Waits for every queued operation of the set; returns the first asynchronous error.
    pub fn sync(&self) -> Result<()> {
        let results = self.parts().into_iter().map(|(r, _)| r.sync()).collect();
        timeline::join(self.parts().into_iter().map(|(r, _)| r.id()));
        merge(results)
    }

    /// `(done, fault)`: nothing queued or running; the last launch faulted on some rank.
    pub fn status(&self) -> (bool, bool) {
        let parts = self.parts();
        let done = parts.iter().all(|(r, _)| r.is_idle());
        let fault = parts.iter().any(|(r, _)| r.faulted());
        (done, fault)
    }

    /// `(done, fault)` as a program polling the set (`dpu_status`) sees them at its present
    /// on the virtual timeline: a rank is done when everything queued on it has run and ended
    /// by now; it faulted when its last launch faulted and has ended by now. So how many
    /// times a program polls before the answer changes, and the virtual time that its waits
    /// in between add up to, follow the modeled time of the work, not how long the emulator
    /// took to simulate it (the wait for the simulation is the emulator's time).
    pub fn polled_status(&self) -> (bool, bool) {
        let now = timeline::with_state(|s| s.clock.now());
        let ready = |id: u32| timeline::with_state(|s| s.clock.rank_ready(id));
        let (mut done, mut fault) = (true, false);
        for (r, _) in self.parts() {
            let id = r.id();
            let hw = &r.machine().hardware;
            // The running launch starts no earlier than the end of what the rank did before
            // it, and lasts at least the cycles simulated so far.
            let ran_past = |cycles: u64| ready(id) + timeline::launch_ns(hw, cycles, 1) > now;
            let st = r.backend().polled_status(id, &ran_past);
            let ended = ready(id) <= now;
            done &= st.idle && ended;
            fault |= st.faulted && ended;
        }
        (done, fault)
    }

    /// The rank and index of the DPU of a one-DPU set (the DPU a log header or an id names).
    pub fn single_dpu(&self) -> Result<(&Arc<Rank>, u32)> {
        match self {
            DpuSet::Dpu(r, i) => Ok((r, *i)),
            DpuSet::Ranks(rs) if self.nr_dpus() == 1 => Ok((&rs[0], 0)),
            _ => Err(Error::InvalidDpuSet(format!(
                "a DPU id belongs to one DPU, but the set has {} DPUs; use DPU_FOREACH",
                self.nr_dpus()
            ))),
        }
    }

    /// The log (printf output) of the single DPU's last launch.
    pub fn log(&self) -> Result<Vec<u8>> {
        match self {
            DpuSet::Dpu(r, i) => {
                r.wait_idle();
                r.log_of(*i)
            }
            DpuSet::Ranks(rs) if self.nr_dpus() == 1 => {
                rs[0].wait_idle();
                rs[0].log_of(0)
            }
            _ => Err(Error::InvalidDpuSet(format!(
                "the log is read from one DPU, but the set has {} DPUs; use DPU_FOREACH",
                self.nr_dpus()
            ))),
        }
    }

    /// Statistics of the last launch of each DPU of the set, in order.
    pub fn last_run_stats(&self) -> Vec<Option<DpuRunStats>> {
        self.wait_idle();
        let mut out = Vec::new();
        for (r, sel) in self.parts() {
            out.extend(r.run_stats(Self::indices(r, sel)));
        }
        out
    }

    // ----- callbacks ------------------------------------------------------------------

    /// Calls `cb` once per rank (or once for the whole set with `single_call`), now or queued
    /// on the ranks (`dpu_callback`).
    pub fn callback(&self, cb: Callback, flags: CallbackFlags) -> Result<()> {
        if flags.nonblocking && !flags.asynchronous {
            return Err(Error::NonblockingSyncCallback);
        }
        let ranks = self.ranks();
        let ids: Vec<u32> = ranks.iter().map(|r| r.id()).collect();
        let call = |cb: &Callback, scope: CallbackScope| {
            // User code on the host: real time, less its nested SDK calls (queued callbacks
            // count on their rank, parallel ones as the longest).
            let (r, ns) = timeline::user_code(|| cb(scope));
            timeline::callback_ran(ns);
            r.map_err(|code| Error::CallbackFailed { code })
        };
        if !flags.asynchronous {
            self.wait_idle();
            if flags.single_call {
                return as_callback_of(&ids, || call(&cb, CallbackScope::Whole));
            }
            if flags.parallel && ranks.len() > 1 {
                let mut longest = 0;
                let results: Vec<Result<()>> = std::thread::scope(|s| {
                    let handles: Vec<_> = (0..ranks.len() as u32)
                        .map(|i| {
                            let cb = &cb;
                            let id = ids[i as usize];
                            s.spawn(move || {
                                timeline::collect_callback_time(|| {
                                    as_callback_of(&[id], || call(cb, CallbackScope::Rank(i)))
                                })
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| match h.join() {
                            Ok((r, ns)) => {
                                longest = longest.max(ns);
                                r
                            }
                            Err(_) => Err(Error::Internal("callback panicked".into())),
                        })
                        .collect()
                });
                // The callbacks ran side by side: the host waited for the longest.
                timeline::callback_ran(longest);
                return merge(results);
            }
            for i in 0..ranks.len() as u32 {
                as_callback_of(&[ids[i as usize]], || call(&cb, CallbackScope::Rank(i)))?;
            }
            return Ok(());
        }
        if !flags.single_call {
            for (i, r) in ranks.iter().enumerate() {
                let cb = Arc::clone(&cb);
                let scope = CallbackScope::Rank(i as u32);
                if flags.nonblocking {
                    let rank = Arc::clone(r);
                    let id = r.id();
                    r.enqueue(RankOp::Callback(Box::new(move || {
                        rank.spawn_detached(Box::new(move || call(&cb, scope)), vec![id])
                    })))?;
                } else {
                    r.enqueue(RankOp::Callback(Box::new(move || call(&cb, scope))))?;
                }
            }
            return Ok(());
        }
        // Asynchronous single call: every rank's queue reaches the callback; the last one to
        // arrive calls it; a blocking callback holds every rank's queue until it returns.
        let latch = Arc::new(Latch {
            state: Mutex::new((ranks.len(), false)),
            cv: Condvar::new(),
        });
        for r in ranks.iter() {
            let latch = Arc::clone(&latch);
            let cb = Arc::clone(&cb);
            let ids = ids.clone();
            let rank = Arc::clone(r);
            let nonblocking = flags.nonblocking;
            r.enqueue(RankOp::Callback(Box::new(move || {
                let last = {
                    let mut s = latch.state.lock().unwrap_or_else(|e| e.into_inner());
                    s.0 -= 1;
                    s.0 == 0
                };
                if last {
                    let result = if nonblocking {
                        rank.spawn_detached(Box::new(move || call(&cb, CallbackScope::Whole)), ids)
                    } else {
                        as_callback_of(&ids, || call(&cb, CallbackScope::Whole))
                    };
                    let mut s = latch.state.lock().unwrap_or_else(|e| e.into_inner());
                    s.1 = true;
                    latch.cv.notify_all();
                    result
                } else {
                    let mut s = latch.state.lock().unwrap_or_else(|e| e.into_inner());
                    while !s.1 {
                        s = latch.cv.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                    Ok(())
                }
            })))?;
        }
        Ok(())
    }
}

struct Latch {
    /// (ranks still to arrive, callback done)
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

/// Looks up a symbol of a program (`dpu_get_symbol`).
pub fn get_symbol(program: &Program, name: &str) -> Result<Symbol> {
    program.symbol(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{alloc_lock, build_fixture, Fixture};
    use std::sync::atomic::{AtomicU32, Ordering};

    fn loaded(n: u32, profile: &str) -> Option<(std::sync::MutexGuard<'static, ()>, DpuSet)> {
        let g = alloc_lock();
        let bytes = build_fixture(&Fixture::default())?;
        let set = crate::sdk::system::alloc(Some(n), profile).unwrap();
        set.load_bytes(&bytes).unwrap();
        Some((g, set))
    }

    fn words(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn no_program_errors() {
        let _g = alloc_lock();
        let set = crate::sdk::system::alloc(Some(2), "nrRanks=2").unwrap();
        assert!(matches!(
            set.launch(LaunchPolicy::Synchronous),
            Err(Error::NoProgramLoaded(_))
        ));
        assert!(matches!(
            set.copy_to(SymbolRef::Name("input"), 0, &[0; 4]),
            Err(Error::NoProgramLoaded(_))
        ));
        // A raw symbol needs no program.
        let sym = Symbol {
            address: 0x0800_0000,
            size: 16,
        };
        set.copy_to(SymbolRef::Symbol(sym), 0, &[5; 16]).unwrap();
        let mut out = [0u8; 16];
        set.dpus()[1]
            .copy_from(SymbolRef::Symbol(sym), 0, &mut out)
            .unwrap();
        assert_eq!(out, [5; 16]);
    }

    #[test]
    fn copy_to_from_and_rules() {
        let Some((_g, set)) = loaded(3, "nrRanks=2,nrDpusPerRank=2") else {
            return;
        };
        assert_eq!(set.nr_ranks(), 2);
        let data = words(&[1, 2, 3, 4]);
        set.copy_to(SymbolRef::Name("input"), 8, &data).unwrap();
        for d in set.dpus() {
            let mut out = vec![0u8; 16];
            d.copy_from(SymbolRef::Name("input"), 8, &mut out).unwrap();
            assert_eq!(out, data);
            // Initial value of a __host variable.
            let mut r = [0u8; 8];
            d.copy_from(SymbolRef::Name("result"), 0, &mut r).unwrap();
            assert_eq!(u64::from_le_bytes(r), 7);
            // Initialised MRAM.
            let mut m = [0u8; 4];
            d.copy_from(SymbolRef::Name("mbuf"), 0, &mut m).unwrap();
            assert_eq!(m, [1, 2, 3, 0]);
        }
        let mut out = vec![0u8; 16];
        assert!(matches!(
            set.copy_from(SymbolRef::Name("input"), 0, &mut out),
            Err(Error::InvalidDpuSet(_))
        ));
        assert!(matches!(
            set.copy_to(SymbolRef::Name("input"), 60, &data),
            Err(Error::InvalidSymbolAccess { .. })
        ));
        assert!(matches!(
            set.copy_to(SymbolRef::Name("input"), 2, &data),
            Err(Error::InvalidWramAccess { .. })
        ));
        assert!(matches!(
            set.copy_to(SymbolRef::Name("input"), 0, &[1, 2, 3]),
            Err(Error::InvalidWramAccess { .. })
        ));
        assert!(matches!(
            set.copy_to(SymbolRef::Name("nope"), 0, &data),
            Err(Error::UnknownSymbol { .. })
        ));
        assert!(matches!(
            set.copy_to(SymbolRef::Name("plain_wram"), 0, &data),
            Err(Error::UnknownSymbol { .. })
        ));
        // MRAM: any alignment; the heap symbol spans the rest of MRAM.
        set.copy_to(SymbolRef::Name("mbuf"), 3, &[7, 7, 7]).unwrap();
        let top = openpim_machine::map::MRAM_SIZE - 8;
        let heap = set
            .program()
            .unwrap()
            .symbol(crate::MRAM_HEAP_SYMBOL)
            .unwrap();
        let off = top - (heap.address - openpim_machine::map::MRAM_BASE);
        set.copy_to(SymbolRef::Name(crate::MRAM_HEAP_SYMBOL), off, &[9; 8])
            .unwrap();
        assert!(set
            .copy_to(SymbolRef::Name(crate::MRAM_HEAP_SYMBOL), off, &[9; 9])
            .is_err());
        // IRAM: read the code; 8-byte rule.
        let mut code = [0u8; 8];
        set.dpus()[0]
            .copy_from(
                SymbolRef::Symbol(Symbol {
                    address: 0x8000_0000,
                    size: 8,
                }),
                0,
                &mut code,
            )
            .unwrap();
        assert_eq!(&code[..4], &set.program().unwrap().text()[..4]);
        let mut bad = [0u8; 4];
        assert!(matches!(
            set.dpus()[0].copy_from(
                SymbolRef::Symbol(Symbol {
                    address: 0x8000_0000,
                    size: 8
                }),
                0,
                &mut bad
            ),
            Err(Error::InvalidIramAccess { .. })
        ));
    }

    #[test]
    fn prepare_push_broadcast() {
        let Some((_g, set)) = loaded(5, "nrRanks=3,nrDpusPerRank=2") else {
            return;
        };
        let mut bufs: Vec<Vec<u8>> = (0..5u32).map(|i| words(&[i, i * 10])).collect();
        for (d, b) in set.dpus().iter().zip(bufs.iter_mut()) {
            // SAFETY: the buffers outlive the synchronous push below.
            unsafe { d.prepare_xfer(b.as_mut_ptr()) };
        }
        // SAFETY: prepared buffers are valid for 8 bytes.
        unsafe {
            set.push_xfer(
                XferDirection::ToDpu,
                SymbolRef::Name("input"),
                0,
                8,
                XferFlags::default(),
            )
        }
        .unwrap();
        let mut back: Vec<Vec<u8>> = vec![vec![0u8; 8]; 5];
        for (d, b) in set.dpus().iter().zip(back.iter_mut()) {
            // SAFETY: as above.
            unsafe { d.prepare_xfer(b.as_mut_ptr()) };
        }
        let flags = XferFlags {
            no_reset: true,
            ..XferFlags::default()
        };
        // SAFETY: as above.
        unsafe {
            set.push_xfer(
                XferDirection::FromDpu,
                SymbolRef::Name("input"),
                0,
                8,
                flags,
            )
        }
        .unwrap();
        assert_eq!(back, bufs);
        // Buffers kept (NO_RESET): push again after clearing.
        for b in back.iter_mut() {
            b.fill(0);
        }
        // SAFETY: as above.
        unsafe {
            set.push_xfer(
                XferDirection::FromDpu,
                SymbolRef::Name("input"),
                0,
                8,
                XferFlags::default(),
            )
        }
        .unwrap();
        assert_eq!(back, bufs);
        // Now reset: a push transfers nothing.
        for b in back.iter_mut() {
            b.fill(0);
        }
        // SAFETY: nothing is prepared.
        unsafe {
            set.push_xfer(
                XferDirection::FromDpu,
                SymbolRef::Name("input"),
                0,
                8,
                XferFlags::default(),
            )
        }
        .unwrap();
        assert!(back.iter().all(|b| b.iter().all(|x| *x == 0)));
        // Broadcast, asynchronous, then sync.
        let src = words(&[42, 43]);
        // SAFETY: `src` lives until after sync.
        unsafe { set.broadcast_raw(SymbolRef::Name("input"), 8, src.as_ptr(), 8, true) }.unwrap();
        set.sync().unwrap();
        for d in set.dpus() {
            let mut out = [0u8; 8];
            d.copy_from(SymbolRef::Name("input"), 8, &mut out).unwrap();
            assert_eq!(out.to_vec(), src);
        }
        // Same buffer prepared on the whole set.
        let mut shared = words(&[5, 6]);
        // SAFETY: lives through the push.
        unsafe {
            set.prepare_xfer(shared.as_mut_ptr());
            set.push_xfer(
                XferDirection::ToDpu,
                SymbolRef::Name("input"),
                0,
                8,
                XferFlags::default(),
            )
        }
        .unwrap();
        let mut out = [0u8; 8];
        set.dpus()[4]
            .copy_from(SymbolRef::Name("input"), 0, &mut out)
            .unwrap();
        assert_eq!(out.to_vec(), shared);
    }

    #[test]
    fn async_order_and_callbacks() {
        let Some((_g, set)) = loaded(4, "nrRanks=2,nrDpusPerRank=2") else {
            return;
        };
        let a = words(&[1; 16]);
        let b = words(&[2; 16]);
        // SAFETY: a and b live until sync.
        unsafe {
            set.broadcast_raw(SymbolRef::Name("input"), 0, a.as_ptr(), 64, true)
                .unwrap();
            set.broadcast_raw(SymbolRef::Name("input"), 0, b.as_ptr(), 64, true)
                .unwrap();
        }
        let calls = Arc::new(AtomicU32::new(0));
        let c = Arc::clone(&calls);
        let probe = set.clone();
        let cb: Callback = Arc::new(move |scope| {
            // Inside an async callback, a synchronous transfer on the same ranks must work.
            if let CallbackScope::Rank(i) = scope {
                let d = probe.ranks()[i as usize].clone();
                let mut out = [0u8; 4];
                DpuSet::Dpu(d, 0)
                    .copy_from(SymbolRef::Name("input"), 0, &mut out)
                    .map_err(|_| 99u32)?;
                if out != [2, 0, 0, 0] {
                    return Err(98);
                }
            }
            c.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        set.callback(
            Arc::clone(&cb),
            CallbackFlags {
                asynchronous: true,
                ..Default::default()
            },
        )
        .unwrap();
        set.sync().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        set.callback(
            Arc::clone(&cb),
            CallbackFlags {
                asynchronous: true,
                single_call: true,
                ..Default::default()
            },
        )
        .unwrap();
        set.sync().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        set.callback(Arc::clone(&cb), CallbackFlags::default())
            .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 5);
        set.callback(
            Arc::clone(&cb),
            CallbackFlags {
                parallel: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 7);
        set.callback(
            Arc::clone(&cb),
            CallbackFlags {
                asynchronous: true,
                nonblocking: true,
                ..Default::default()
            },
        )
        .unwrap();
        set.sync().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 9);
        assert!(matches!(
            set.callback(
                Arc::clone(&cb),
                CallbackFlags {
                    nonblocking: true,
                    ..Default::default()
                }
            ),
            Err(Error::NonblockingSyncCallback)
        ));
        let failing: Callback = Arc::new(|_| Err(7));
        assert!(matches!(
            set.callback(Arc::clone(&failing), CallbackFlags::default()),
            Err(Error::CallbackFailed { code: 7 })
        ));
        set.callback(
            failing,
            CallbackFlags {
                asynchronous: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(matches!(set.sync(), Err(Error::CallbackFailed { code: 7 })));
        set.sync().unwrap();
        assert_eq!(set.status(), (true, false));
    }

    #[test]
    fn a_polled_launch_is_busy_until_its_modeled_end_not_the_emulations() {
        // The fixture's program loops for ever: the launch ends at the cycle limit, far past
        // the host's present. A poll must answer "busy" as soon as the simulation has passed
        // the present, not wait for the launch's end; once it has ended (virtually), "done"
        // with the fault.
        let _g = alloc_lock();
        let Some(bytes) = build_fixture(&Fixture::default()) else {
            return;
        };
        let now = timeline::with_state(|s| s.clock.now());
        // Cycles at 350 MHz up to the present, four times over, plus room for progress reports.
        let limit = now * 35 / 100 * 4 + 64 * openpim_engine::STOP_CHECK_CYCLES;
        let set = crate::sdk::system::alloc(Some(1), &format!("maxCycles={limit}")).unwrap();
        set.load_bytes(&bytes).unwrap();
        set.launch(LaunchPolicy::Asynchronous).unwrap();
        assert_eq!(set.polled_status(), (false, false));
        assert!(
            !set.status().0,
            "the poll waited for the whole launch ({limit} cycles) instead of answering once \
             its simulation had passed the present"
        );
        assert!(matches!(set.sync(), Err(Error::DpuFault { .. })));
        assert_eq!(set.polled_status(), (true, true));
    }

    #[test]
    fn per_rank_callbacks_can_make_synchronous_calls_on_the_whole_set() {
        // Each rank's (blocking, asynchronous) callback copies to, and syncs, the whole set:
        // each waits for the other rank, whose queue is blocked in its own callback. This
        // must not deadlock.
        let Some((_g, set)) = loaded(4, "nrRanks=2,nrDpusPerRank=2") else {
            return;
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let worker_set = set.clone();
        let worker = std::thread::spawn(move || {
            let whole = worker_set.clone();
            let cb: Callback = Arc::new(move |scope| {
                let CallbackScope::Rank(i) = scope else {
                    return Err(97);
                };
                whole
                    .copy_to(SymbolRef::Name("input"), 4 * i, &(i + 10).to_le_bytes())
                    .map_err(|_| 99u32)?;
                whole.sync().map_err(|_| 98u32)
            });
            let flags = CallbackFlags {
                asynchronous: true,
                ..Default::default()
            };
            let r = worker_set
                .callback(Arc::clone(&cb), flags)
                .and_then(|()| worker_set.sync())
                .and_then(|()| worker_set.callback(cb, CallbackFlags::default()));
            let _ = tx.send(r.is_ok());
        });
        let done = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(done, Ok(true), "deadlock (or failure) in the callbacks");
        // The thread holds the set (and the callback its clone) until it ends: joined, so
        // that the ranks are free for the next test when this one's allocation lock is released.
        worker.join().expect("the callbacks' thread");
        for d in set.dpus() {
            let mut out = [0u8; 8];
            d.copy_from(SymbolRef::Name("input"), 0, &mut out).unwrap();
            assert_eq!(out, words(&[10, 11])[..]);
        }
    }

    #[test]
    fn threads_share_sets() {
        let Some((_g, set)) = loaded(8, "nrRanks=4,nrDpusPerRank=2") else {
            return;
        };
        let dpus = set.dpus();
        std::thread::scope(|s| {
            for (i, d) in dpus.iter().enumerate() {
                s.spawn(move || {
                    for k in 0..50u32 {
                        let v = words(&[i as u32, k]);
                        d.copy_to(SymbolRef::Name("input"), 0, &v).unwrap();
                        let mut out = vec![0u8; 8];
                        d.copy_from(SymbolRef::Name("input"), 0, &mut out).unwrap();
                        assert_eq!(out, v);
                    }
                });
            }
        });
    }
}
