//! What the C pointers point to, and the registry that validates them.
//!
//! `struct dpu_rank_t *` points to a [`CRank`], `struct dpu_t *` to a [`CDpu`] inside its
//! rank's boxed array; both are owned by the set `dpu_alloc` returned (an [`OwnedSet`]) and
//! keep their addresses until `dpu_free`. Every pointer coming from C is checked against the
//! registry before use, so a freed or forged set is an error, not a crash.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

use openpim_runtime::{DpuSet, Program};

use crate::objects::{CDpu, CRank, RankLock};
use crate::types::{err, DpuError, DpuSetT, DPU_SET_DPU, DPU_SET_RANKS};

/// A set returned by `dpu_alloc`: the rank pointer array C sees and the ranks it points to.
pub struct OwnedSet {
    pub array: Box<[*mut CRank]>,
    pub ranks: Vec<Box<CRank>>,
}

// SAFETY: the raw pointers of an OwnedSet point into its own boxes (stable addresses); the
// registry only moves the owner between threads, it never shares mutable access.
unsafe impl Send for OwnedSet {}
// SAFETY: shared access to an OwnedSet only reads its pointers (never writes through them).
unsafe impl Sync for OwnedSet {}
#[derive(Default)]
struct Registry {
    /// Owned sets by the address of their rank pointer array.
    sets: HashMap<usize, OwnedSet>,
    /// Live CRank addresses.
    ranks: HashSet<usize>,
    /// Live CDpu arrays: start address -> end address (exclusive).
    dpus: BTreeMap<usize, usize>,
    /// Rank pointer arrays of freed sets, nulled and kept for the next sets of the same
    /// size: a C program may still hold (and iterate) a freed set, whose array pointer must
    /// then lead to null ranks, not to freed memory (found by the c_api fuzz target). Their
    /// number is bounded by the most sets alive at once.
    /// (Held as sets without ranks.)
    retired: Vec<OwnedSet>,
}

static REGISTRY: RwLock<Option<Registry>> = RwLock::new(None);

fn with_read<T>(f: impl FnOnce(&Registry) -> T) -> T {
    let g = REGISTRY.read().unwrap_or_else(|e| e.into_inner());
    match g.as_ref() {
        Some(r) => f(r),
        None => f(&Registry::default()),
    }
}

fn with_write<T>(f: impl FnOnce(&mut Registry) -> T) -> T {
    let mut g = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Registry::default))
}

/// Registers a freshly allocated runtime set and returns its C view.
pub fn register(set: &DpuSet) -> DpuSetT {
    let mut ranks: Vec<Box<CRank>> = Vec::new();
    for rank in set.ranks() {
        let mut crank = Box::new(CRank {
            rank,
            dpus: Box::new([]),
            lock: RankLock::default(),
            description: OnceLock::new(),
        });
        let p: *const CRank = &*crank;
        crank.dpus = (0..crank.rank.nr_dpus())
            .map(|index| CDpu { crank: p, index })
            .collect();
        ranks.push(crank);
    }
    let pointers: Vec<*mut CRank> = ranks.iter_mut().map(|r| &mut **r as *mut CRank).collect();
    with_write(|reg| {
        let mut array: Box<[*mut CRank]> = match reg
            .retired
            .iter()
            .position(|a| a.array.len() == pointers.len())
        {
            Some(i) => reg.retired.swap_remove(i).array,
            None => pointers.clone().into_boxed_slice(),
        };
        array.copy_from_slice(&pointers);
        let c = DpuSetT::ranks(array.len() as u32, array.as_mut_ptr());
        for r in &ranks {
            reg.ranks.insert(&**r as *const CRank as usize);
            let start = r.dpus.as_ptr() as usize;
            reg.dpus
                .insert(start, start + r.dpus.len() * std::mem::size_of::<CDpu>());
        }
        reg.sets
            .insert(array.as_ptr() as usize, OwnedSet { array, ranks });
        c
    })
}

/// Removes an owned set (by its rank array and rank count) from the registry; `None` when
/// `ranks`/`nr_ranks` is not exactly a set returned by `dpu_alloc` (for instance the first
/// rank of a multi-rank set, which shares the array's address).
pub fn unregister(ranks: *mut *mut CRank, nr_ranks: u32) -> Option<OwnedSet> {
    with_write(|reg| {
        let key = ranks as usize;
        if reg.sets.get(&key)?.array.len() != nr_ranks as usize {
            return None;
        }
        let owned = reg.sets.remove(&key)?;
        Some(reg.retire(owned))
    })
}

/// Removes the one-rank set holding `rank` (made by `dpu_get_rank_of_type`, or a one-rank
/// `dpu_alloc`) from the registry; `None` when `rank` is not alone in a set of its own.
pub fn unregister_single_rank(rank: *const CRank) -> Option<OwnedSet> {
    with_write(|reg| {
        let key = reg
            .sets
            .iter()
            .find(|(_, s)| s.ranks.len() == 1 && std::ptr::eq(&*s.ranks[0], rank))
            .map(|(k, _)| *k)?;
        let owned = reg.sets.remove(&key)?;
        Some(reg.retire(owned))
    })
}

impl Registry {
    /// Forgets a set's ranks and DPUs and keeps its rank array, nulled (`retired`); returns
    /// the set (its ranks) for the caller to drop.
    fn retire(&mut self, mut owned: OwnedSet) -> OwnedSet {
        for r in &owned.ranks {
            self.ranks.remove(&(&**r as *const CRank as usize));
            self.dpus.remove(&(r.dpus.as_ptr() as usize));
        }
        let mut array = std::mem::take(&mut owned.array);
        array.fill(std::ptr::null_mut());
        self.retired.push(OwnedSet {
            array,
            ranks: Vec::new(),
        });
        owned
    }
}

fn invalid() -> DpuError {
    err::DPU_ERR_INVALID_DPU_SET
}

fn check_rank(reg: &Registry, p: *const CRank) -> Result<&'static CRank, DpuError> {
    if p.is_null() || !reg.ranks.contains(&(p as usize)) {
        return Err(invalid());
    }
    // SAFETY: the registry holds only addresses of live boxed CRanks (removed before they
    // are dropped in dpu_free); the reference is used only while the C caller keeps the set
    // alive, as the SDK's API requires of it.
    Ok(unsafe { &*p })
}

fn check_dpu(reg: &Registry, p: *const CDpu) -> Result<&'static CDpu, DpuError> {
    let a = p as usize;
    let ok = !p.is_null()
        && reg
            .dpus
            .range(..=a)
            .next_back()
            .is_some_and(|(start, end)| {
                a < *end && (a - start).is_multiple_of(std::mem::size_of::<CDpu>())
            });
    if !ok {
        return Err(invalid());
    }
    // SAFETY: `p` lies on an element boundary inside a live CDpu array of the registry (see
    // check_rank for the lifetime argument).
    Ok(unsafe { &*p })
}

/// The `n` rank pointers of a C set's list at `p`: inside an owned set's array (the set
/// itself, or a one-rank set made by the rank iterator) they must lie within it; a freed
/// set's array holds none; anything else is the caller's own array (`dpu_set_from_rank(&r)`)
/// and is read as the SDK's API promises it is. The pointers are then checked one by one.
fn rank_array(reg: &Registry, p: *mut *mut CRank, n: u32) -> Result<Vec<*mut CRank>, DpuError> {
    let a = p as usize;
    let width = std::mem::size_of::<*mut CRank>();
    let inside = |array: &[*mut CRank]| {
        let start = array.as_ptr() as usize;
        (a >= start && a < start + std::mem::size_of_val(array)).then(|| (a - start) / width)
    };
    for set in reg.sets.values() {
        if let Some(first) = inside(&set.array) {
            if !(a - set.array.as_ptr() as usize).is_multiple_of(width) {
                return Err(invalid());
            }
            let slice = set
                .array
                .get(first..first + n as usize)
                .ok_or_else(invalid)?;
            return Ok(slice.to_vec());
        }
    }
    if reg.retired.iter().any(|r| inside(&r.array).is_some()) {
        return Err(invalid());
    }
    // SAFETY: not an array of ours: the caller's `n` rank pointers (SDK contract).
    Ok((0..n as usize).map(|i| unsafe { *p.add(i) }).collect())
}

/// The rank behind a checked `struct dpu_rank_t *`.
pub fn rank_ref(p: *const CRank) -> Result<&'static CRank, DpuError> {
    with_read(|reg| check_rank(reg, p))
}

/// The DPU behind a checked `struct dpu_t *`.
pub fn dpu_ref(p: *const CDpu) -> Result<&'static CDpu, DpuError> {
    with_read(|reg| check_dpu(reg, p))
}

/// The ranks a C set names (checked), with the DPU index for a single-DPU set.
pub fn c_ranks(set: &DpuSetT) -> Result<(Vec<&'static CRank>, Option<u32>), DpuError> {
    with_read(|reg| match set.kind {
        DPU_SET_RANKS => {
            // SAFETY: kind RANKS says the `list` member is the active one.
            let list = unsafe { set.u.list };
            if list.nr_ranks == 0 {
                return Ok((Vec::new(), None));
            }
            if list.ranks.is_null() {
                return Err(invalid());
            }
            // A freed set's array is never read as live ranks (found by the c_api fuzz
            // target: DPU_FOREACH and every set call on a freed set read freed memory).
            let array = rank_array(reg, list.ranks, list.nr_ranks)?;
            let mut out = Vec::with_capacity(array.len());
            for p in array {
                out.push(check_rank(reg, p)?);
            }
            Ok((out, None))
        }
        DPU_SET_DPU => {
            // SAFETY: kind DPU says the `dpu` member is the active one.
            let d = check_dpu(reg, unsafe { set.u.dpu })?;
            Ok((vec![check_rank(reg, d.crank)?], Some(d.index)))
        }
        _ => Err(invalid()),
    })
}

/// Converts a C set into a runtime set.
pub fn to_runtime(set: &DpuSetT) -> Result<DpuSet, DpuError> {
    let (ranks, dpu) = c_ranks(set)?;
    Ok(match dpu {
        Some(i) => DpuSet::Dpu(Arc::clone(&ranks[0].rank), i),
        None => DpuSet::from_ranks(ranks.iter().map(|r| Arc::clone(&r.rank)).collect()),
    })
}

/// Programs handed to C as `struct dpu_program_t *` (by address; weak, so that reloading
/// frees old programs).
static PROGRAMS: Mutex<Vec<(usize, Weak<Program>)>> = Mutex::new(Vec::new());

/// Registers a program and returns its C handle.
pub fn program_handle(p: &Arc<Program>) -> *mut std::ffi::c_void {
    let addr = Arc::as_ptr(p) as usize;
    let mut progs = PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
    progs.retain(|(_, w)| w.strong_count() > 0);
    if !progs.iter().any(|(a, _)| *a == addr) {
        progs.push((addr, Arc::downgrade(p)));
    }
    addr as *mut std::ffi::c_void
}

/// The program behind a C handle, if it is still loaded somewhere.
pub fn program_from_handle(h: *const std::ffi::c_void) -> Option<Arc<Program>> {
    let progs = PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
    progs
        .iter()
        .find(|(a, _)| *a == h as usize)
        .and_then(|(_, w)| w.upgrade())
}
