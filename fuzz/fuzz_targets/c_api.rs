//! The SDK's C API: random sequences of calls through the functions libdpu exports to C
//! (`dpu_alloc`, `dpu_load_from_memory`, `dpu_get_symbol`, `dpu_copy_to/from[_symbol]`,
//! `dpu_prepare_xfer` + `dpu_push_xfer`, `dpu_broadcast_to`, `dpu_push_sg_xfer`,
//! `dpu_launch` sync/async, `dpu_sync`, `dpu_callback`, `dpulog_read_for_dpu`, `dpu_free`, and calls on freed sets),
//! on whole sets and on single DPUs from `DPU_FOREACH`.
//!
//! Every call must return an SDK code or succeed — never `DPU_ERR_INTERNAL` (a caught panic)
//! — and the code must be the one the SDK's rules give whenever the harness can tell it.
//! A model of what each DPU's memories must hold (per byte: known value or unknown) follows
//! every call: written bytes, the kernel's effect at each launch (fuzz/programs/api_kernel.c)
//! and its printf output, and is checked by every read.
#![no_main]

use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicU32, Ordering};

use dpu::types::{err::*, DpuError, DpuSetT, DpuSymbolT, GetBlockT, SgBlockInfo, DPU_SET_DPU};
use libfuzzer_sys::fuzz_target;

/// The kernel, built by fuzz/programs/Makefile.
static KERNEL: &[u8] = include_bytes!("../programs/api_kernel.dpu");
/// 2 ranks of 4 DPUs: small memories, several ranks.
const PROFILE: &str = "nrRanks=2,nrDpusPerRank=4";
const RANKS: u32 = 2;
const PER_RANK: u32 = 4;
/// The kernel faults on this parameter.
const FAULT_PARAM: u32 = 0xDEAD;

/// The kernel's host symbols and their sizes; index = region in the model.
const SYMBOLS: [(&str, usize); 6] = [
    ("param", 4),
    ("launches", 4),
    ("wbuf", 256),
    ("wout", 256),
    ("min", 2048),
    ("mout", 2048),
];
const PARAM: usize = 0;
const LAUNCHES: usize = 1;
const WBUF: usize = 2;
const WOUT: usize = 3;
const MIN: usize = 4;
const MOUT: usize = 5;

/// Names that are not modelled regions: other host-reachable symbols and unknown names.
const OTHER_NAMES: [&str; 4] = ["__sys_used_mram_end", "main", "nosuch", ""];

/// The input, read front to back; zeros once exhausted.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | u16::from(self.u8()) << 8
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | u32::from(self.u16()) << 16
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|i| self.u8() ^ i as u8).collect()
    }
    fn done(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Clone, PartialEq, Debug)]
enum Prog {
    None,
    Kernel,
    /// A mutated or patched program, or one we lost track of: nothing is predicted.
    Unknown,
    /// Not known whether any program is loaded: a DPU without one was perhaps loaded by a
    /// call whose outcome the model cannot tell (a freed handle whose address a live set
    /// reuses, an earlier asynchronous error). A launch may also say "no program".
    Lost,
}

impl Prog {
    /// What a DPU holds after a call that may or may not have loaded a program on it.
    fn after_unknown_call(&self) -> Prog {
        match self {
            // Still perhaps without a program.
            Prog::None | Prog::Lost => Prog::Lost,
            Prog::Kernel | Prog::Unknown => Prog::Unknown,
        }
    }
}

/// What one DPU must hold: per modelled region, per byte, the value when known.
#[derive(Clone)]
struct DpuModel {
    prog: Prog,
    mem: Vec<Vec<Option<u8>>>,
    /// The printf output of the last launch, when known.
    log: Option<Vec<u8>>,
}

impl DpuModel {
    fn fresh() -> DpuModel {
        DpuModel {
            prog: Prog::None,
            mem: SYMBOLS.iter().map(|(_, n)| vec![None; *n]).collect(),
            log: Some(Vec::new()),
        }
    }
    fn forget(&mut self) {
        for r in &mut self.mem {
            r.fill(None);
        }
        self.log = None;
    }
    fn param(&self) -> Option<u32> {
        let p = &self.mem[PARAM];
        Some(u32::from_le_bytes([p[0]?, p[1]?, p[2]?, p[3]?]))
    }
    /// The kernel's effect on this DPU; `Some(faulted)` when known.
    fn launch(&mut self) -> Option<bool> {
        if self.prog != Prog::Kernel {
            self.forget();
            return None;
        }
        let Some(param) = self.param() else {
            // Whether it faults, and what it computes, is unknown.
            self.mem[LAUNCHES].fill(None);
            self.mem[WOUT].fill(None);
            self.mem[MOUT].fill(None);
            self.log = None;
            return None;
        };
        if param == FAULT_PARAM {
            self.log = Some(Vec::new());
            return Some(true);
        }
        let add = param as u8;
        for i in 0..SYMBOLS[MOUT].1 {
            self.mem[MOUT][i] = self.mem[MIN][i].map(|b| b.wrapping_add(add));
        }
        for i in 0..SYMBOLS[WOUT].1 {
            self.mem[WOUT][i] = self.mem[WBUF][i].map(|b| b ^ 0x5a);
        }
        let l = &self.mem[LAUNCHES];
        let next = match (l[0], l[1], l[2], l[3]) {
            (Some(a), Some(b), Some(c), Some(d)) => Some(
                u32::from_le_bytes([a, b, c, d])
                    .wrapping_add(1)
                    .to_le_bytes(),
            ),
            _ => None,
        };
        for k in 0..4 {
            self.mem[LAUNCHES][k] = next.map(|n| n[k]);
        }
        self.log = Some(format!("param {param}\n").into_bytes());
        Some(false)
    }
}

struct LiveSet {
    c: DpuSetT,
    /// Single-DPU sets from DPU_FOREACH.
    dpus: Vec<DpuSetT>,
    model: Vec<DpuModel>,
    /// Ranks it holds.
    ranks: u32,
    /// Host symbols of the last program loaded on the whole set, by `dpu_get_symbol`.
    symbols: Vec<DpuSymbolT>,
    /// Asynchronous work may end with this error at the next `dpu_sync` (a fault, a callback's
    /// code).
    pending_errors: Vec<DpuError>,
    /// Buffers of queued transfers (kept until `dpu_sync`) and, for reads, what they must
    /// then hold.
    pending_reads: Vec<PendingRead>,
    pending_writes: Vec<Box<[u8]>>,
}

/// An asynchronous read's buffer and what it must hold once synced (per byte, when known).
type PendingRead = (Box<[u8]>, Vec<Option<u8>>);

enum Slot {
    Live(LiveSet),
    Freed(DpuSetT, Vec<DpuSetT>),
}

struct CallbackState {
    calls: AtomicU32,
    ret: DpuError,
}

unsafe extern "C" fn count_calls(_set: DpuSetT, _index: u32, args: *mut c_void) -> DpuError {
    // SAFETY: `args` is the harness's CallbackState, alive until every set is synced.
    let st = unsafe { &*(args as *const CallbackState) };
    st.calls.fetch_add(1, Ordering::SeqCst);
    st.ret
}

/// The blocks of a scatter-gather transfer: DPU `i`'s buffer `bufs[i]`, cut at `cuts`.
struct SgBlocks {
    bufs: Vec<Box<[u8]>>,
    cuts: Vec<usize>,
}

unsafe extern "C" fn sg_block(
    info: *mut SgBlockInfo,
    dpu: u32,
    block: u32,
    args: *mut c_void,
) -> bool {
    // SAFETY: `args` is the harness's SgBlocks, alive during the (synchronous) transfer.
    let st = unsafe { &mut *(args as *mut SgBlocks) };
    let b = block as usize;
    let Some(buf) = st.bufs.get_mut(dpu as usize) else {
        return false;
    };
    if b + 1 >= st.cuts.len() {
        return false;
    }
    let (from, to) = (st.cuts[b], st.cuts[b + 1]);
    // SAFETY: `from..to` lies inside the buffer (the cuts end at its length); `info` is the
    // runtime's.
    unsafe {
        (*info).addr = buf.as_mut_ptr().add(from);
        (*info).length = (to - from) as u32;
    }
    true
}

/// `C_API_TRACE=1` prints every checked call and its code (to replay a crash input by hand).
static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

fn check(what: &str, rc: DpuError, allowed: &[DpuError]) {
    if *TRACE.get_or_init(|| std::env::var_os("C_API_TRACE").is_some()) {
        eprintln!("c_api: {what} -> {rc} (allowed {allowed:?})");
    }
    assert_ne!(
        rc, DPU_ERR_INTERNAL,
        "{what}: DPU_ERR_INTERNAL (a caught panic)"
    );
    assert!(
        rc <= DPU_ERR_SG_NOT_MRAM_SYMBOL || allowed.contains(&rc),
        "{what}: {rc} is not an SDK code"
    );
    if !allowed.is_empty() {
        assert!(
            allowed.contains(&rc),
            "{what}: returned {rc}, expected one of {allowed:?}"
        );
    }
}

fn ptr_of(s: &DpuSetT) -> usize {
    // SAFETY: both union members are pointers; reading either as an address is fine.
    unsafe {
        if s.kind == DPU_SET_DPU {
            s.u.dpu as usize
        } else {
            s.u.list.ranks as usize
        }
    }
}

/// What a named access to `len` bytes at `off` must return, with the region, on DPUs
/// running the kernel (None when unpredictable).
fn named_access(
    name: &str,
    off: u32,
    len: usize,
    symbols: &[DpuSymbolT],
) -> Option<(DpuError, Option<usize>)> {
    let Some(region) = SYMBOLS.iter().position(|(n, _)| *n == name) else {
        return match name {
            "nosuch" | "" => Some((DPU_ERR_UNKNOWN_SYMBOL, None)),
            _ => None,
        };
    };
    let size = SYMBOLS[region].1 as u64;
    if u64::from(off) + len as u64 > size {
        return Some((DPU_ERR_INVALID_SYMBOL_ACCESS, None));
    }
    let address = u64::from(symbols.get(region)?.address) + u64::from(off);
    if address < 0x0800_0000 && (address % 4 != 0 || !len.is_multiple_of(4)) {
        return Some((DPU_ERR_INVALID_WRAM_ACCESS, None));
    }
    Some((DPU_OK, Some(region)))
}

struct Harness {
    slots: Vec<Slot>,
    /// Boxed: the runtime keeps each state's address (a callback argument) while the vector
    /// grows.
    #[allow(clippy::vec_box)]
    callbacks: Vec<Box<CallbackState>>,
    profile: CString,
}

impl Harness {
    fn live(&self) -> impl Iterator<Item = &LiveSet> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Live(l) => Some(l),
            Slot::Freed(..) => None,
        })
    }

    fn ranks_in_use(&self) -> u32 {
        self.live().map(|l| l.ranks).sum()
    }

    fn alloc(&mut self, inp: &mut Input) {
        if self.slots.len() >= 4 {
            return;
        }
        let n = match inp.u8() % 12 {
            0 => 0,
            9 => 9,
            10 => u32::MAX, // DPU_ALLOCATE_ALL
            k => u32::from(k).min(8),
        };
        let mut c = DpuSetT::empty();
        // SAFETY: a valid profile string and output pointer.
        let rc = unsafe { dpu::dpu_alloc(n, self.profile.as_ptr(), &mut c) };
        let free_ranks = RANKS - self.ranks_in_use();
        let (want_dpus, want_ranks) = if n == u32::MAX {
            (free_ranks * PER_RANK, free_ranks)
        } else {
            (n, n.div_ceil(PER_RANK))
        };
        let ok = want_dpus > 0 && want_dpus <= RANKS * PER_RANK && want_ranks <= free_ranks;
        check(
            "dpu_alloc",
            rc,
            &[if ok { DPU_OK } else { DPU_ERR_ALLOCATION }],
        );
        if rc != DPU_OK {
            return;
        }
        let mut nr = 0u32;
        // SAFETY: a set returned by dpu_alloc, a valid output pointer.
        check(
            "dpu_get_nr_dpus",
            unsafe { dpu::dpu_get_nr_dpus(c, &mut nr) },
            &[DPU_OK],
        );
        assert_eq!(nr, want_dpus, "dpu_get_nr_dpus");
        // DPU_FOREACH.
        let mut dpus = Vec::new();
        // SAFETY: the iterator functions take the address of a live set.
        unsafe {
            let mut it = dpu::dpu_set_dpu_iterator_from(&mut c);
            while it.has_next {
                dpus.push(it.next);
                dpu::dpu_set_dpu_iterator_next(&mut it);
            }
        }
        assert_eq!(
            dpus.len() as u32,
            want_dpus,
            "DPU_FOREACH visits every DPU once"
        );
        self.slots.push(Slot::Live(LiveSet {
            c,
            dpus,
            model: vec![DpuModel::fresh(); want_dpus as usize],
            ranks: want_ranks,
            symbols: Vec::new(),
            pending_errors: Vec::new(),
            pending_reads: Vec::new(),
            pending_writes: Vec::new(),
        }));
    }

    /// Picks a slot; for a live set also a target: the whole set or one of its DPUs.
    fn pick(&mut self, inp: &mut Input) -> Option<(usize, Option<usize>)> {
        if self.slots.is_empty() {
            return None;
        }
        let s = inp.u8() as usize % self.slots.len();
        let n = match &self.slots[s] {
            Slot::Live(l) => l.dpus.len(),
            Slot::Freed(_, d) => d.len(),
        };
        let t = inp.u8() as usize % (n + 1);
        Some((s, (t < n).then_some(t)))
    }

    /// The live sets a freed handle's address now belongs to (the set itself or one of its
    /// DPUs): a call through the freed handle acts on them.
    fn aliases(&self, h: &DpuSetT) -> Vec<usize> {
        let p = ptr_of(h);
        (0..self.slots.len())
            .filter(|&i| match &self.slots[i] {
                Slot::Live(l) => ptr_of(&l.c) == p || l.dpus.iter().any(|d| ptr_of(d) == p),
                Slot::Freed(..) => false,
            })
            .collect()
    }

    /// The handle of a target, and the expected code for a set-level call on a freed set.
    fn handle(&self, s: usize, t: Option<usize>) -> (DpuSetT, bool) {
        match &self.slots[s] {
            Slot::Live(l) => (t.map_or(l.c, |i| l.dpus[i]), true),
            Slot::Freed(c, d) => {
                let h = t.map_or(*c, |i| d[i]);
                (h, false)
            }
        }
    }

    /// Checks a call on a freed set: `DPU_ERR_INVALID_DPU_SET` unless its address was reused.
    fn check_freed(&mut self, what: &str, h: &DpuSetT, rc: DpuError) {
        let aliases = self.aliases(h);
        if aliases.is_empty() {
            return check(what, rc, &[DPU_ERR_INVALID_DPU_SET]);
        }
        check(what, rc, &[]);
        // The call may have changed a live set the model tracks: forget what it holds.
        for i in aliases {
            if let Slot::Live(l) = &mut self.slots[i] {
                for m in &mut l.model {
                    m.forget();
                    m.prog = m.prog.after_unknown_call();
                }
                l.pending_errors.extend([DPU_ERR_DPU_FAULT, DPU_ERR_SYSTEM]);
            }
        }
    }

    fn targets(l: &LiveSet, t: Option<usize>) -> std::ops::Range<usize> {
        match t {
            Some(i) => i..i + 1,
            None => 0..l.model.len(),
        }
    }

    fn load(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let kind = inp.u8() % 4;
        let mut bytes = KERNEL.to_vec();
        match kind {
            0 | 1 => {}
            2 => {
                // A few mutated bytes: still an ELF, maybe a different program.
                for _ in 0..1 + inp.u8() % 4 {
                    let at = inp.u32() as usize % bytes.len();
                    bytes[at] ^= inp.u8() | 1;
                }
            }
            _ => {
                let n = inp.u8() as usize;
                bytes = inp.bytes(n);
            }
        }
        let mut program: *mut c_void = std::ptr::null_mut();
        // SAFETY: a buffer of bytes.len() bytes; a valid output pointer.
        let rc =
            unsafe { dpu::dpu_load_from_memory(h, bytes.as_mut_ptr(), bytes.len(), &mut program) };
        if !live {
            return self.check_freed("dpu_load_from_memory", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let mut allowed = l.pending_errors.clone();
        allowed.push(DPU_OK);
        match kind {
            0 | 1 => check("dpu_load_from_memory (kernel)", rc, &allowed),
            _ => check("dpu_load_from_memory", rc, &[]),
        }
        for i in Self::targets(l, t) {
            let m = &mut l.model[i];
            if rc == DPU_OK {
                m.forget();
                m.prog = if kind <= 1 {
                    Prog::Kernel
                } else {
                    Prog::Unknown
                };
            } else if l.pending_errors.contains(&rc) {
                // An earlier asynchronous error: whether this load happened is not known.
                m.forget();
                m.prog = m.prog.after_unknown_call();
            }
        }
        if rc == DPU_OK && kind <= 1 {
            // The program's host symbols, as dpu_get_symbol gives them.
            let mut syms = Vec::new();
            for (name, size) in SYMBOLS {
                let c = CString::new(name).expect("no NUL");
                let mut sym = DpuSymbolT {
                    address: 0,
                    size: 0,
                };
                // SAFETY: a program handle from dpu_load_from_memory; valid pointers.
                let rc = unsafe { dpu::dpu_get_symbol(program, c.as_ptr(), &mut sym) };
                check("dpu_get_symbol", rc, &[DPU_OK]);
                assert_eq!(sym.size as usize, size, "size of {name}");
                syms.push(sym);
            }
            l.symbols = syms;
        }
    }

    /// `dpu_copy_to`, `dpu_broadcast_to` or a prepared `dpu_push_xfer` to the DPUs, by name.
    fn write(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let how = inp.u8() % 3;
        let asynchronous = inp.u8().is_multiple_of(4);
        let name_i = inp.u8() as usize % (SYMBOLS.len() + OTHER_NAMES.len());
        let name = SYMBOLS
            .get(name_i)
            .map(|s| s.0)
            .unwrap_or_else(|| OTHER_NAMES[name_i - SYMBOLS.len()]);
        let (off, len) = offset_and_length(inp);
        let cname = CString::new(name).expect("no NUL");
        let mut per_dpu: Vec<Box<[u8]>> = Vec::new();
        let data: Box<[u8]> = inp.bytes(len).into_boxed_slice();
        let flags = if asynchronous { 2 } else { 0 };
        // SAFETY (all three): buffers of `len` bytes, kept alive until the transfer ran (for
        // asynchronous ones: until the set's next dpu_sync, by `pending_writes`).
        let rc = unsafe {
            match how {
                0 => dpu::dpu_copy_to(h, cname.as_ptr(), off, data.as_ptr().cast(), len),
                1 => {
                    dpu::dpu_broadcast_to(h, cname.as_ptr(), off, data.as_ptr().cast(), len, flags)
                }
                _ => {
                    let n = match &self.slots[s] {
                        Slot::Live(l) => Self::targets(l, t).len(),
                        Slot::Freed(..) => 1,
                    };
                    // Each DPU gets its own bytes (the data, shifted by its index).
                    per_dpu = (0..n)
                        .map(|i| data.iter().map(|x| x.wrapping_add(i as u8)).collect())
                        .collect();
                    prepare_and_push(h, &mut per_dpu, 0, &cname, off, len, flags, live)
                }
            }
        };
        if !live {
            return self.check_freed("write on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let range = Self::targets(l, t);
        let progs: Vec<Prog> = range.clone().map(|i| l.model[i].prog.clone()).collect();
        let expected = if progs.iter().all(|p| *p == Prog::Kernel) {
            named_access(name, off, len, &l.symbols)
        } else if progs.iter().all(|p| *p == Prog::None) && !name.is_empty() {
            Some((DPU_ERR_NO_PROGRAM_LOADED, None))
        } else {
            None
        };
        // A fault or callback error of earlier asynchronous work may surface here.
        let mut allowed: Vec<DpuError> = l.pending_errors.clone();
        match expected {
            Some((code, _)) => allowed.push(code),
            None => allowed.clear(),
        }
        check("write to the DPUs", rc, &allowed);
        if rc != DPU_OK {
            if l.pending_errors.contains(&rc) {
                // An earlier asynchronous error: whether this write happened is not known.
                for i in range {
                    l.model[i].forget();
                }
            }
            return;
        }
        for (k, i) in range.enumerate() {
            let m = &mut l.model[i];
            match expected {
                Some((_, Some(region))) => {
                    let src = if how == 2 { &per_dpu[k] } else { &data };
                    for (j, b) in src.iter().enumerate() {
                        m.mem[region][off as usize + j] = Some(*b);
                    }
                }
                Some((_, None)) => {}
                None => m.forget(),
            }
            if name == "main" {
                // An IRAM write patches the program.
                m.prog = Prog::Unknown;
                m.forget();
            }
        }
        if asynchronous && how != 0 {
            l.pending_writes.push(data);
            l.pending_writes.extend(per_dpu);
        }
    }

    /// `dpu_copy_from` (one DPU) or a prepared `dpu_push_xfer` from the DPUs, by name;
    /// checked against the model.
    fn read(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let push = inp.u8().is_multiple_of(2);
        let asynchronous = push && inp.u8().is_multiple_of(4);
        let name_i = inp.u8() as usize % (SYMBOLS.len() + OTHER_NAMES.len());
        let name = SYMBOLS
            .get(name_i)
            .map(|s| s.0)
            .unwrap_or_else(|| OTHER_NAMES[name_i - SYMBOLS.len()]);
        let (off, len) = offset_and_length(inp);
        let cname = CString::new(name).expect("no NUL");
        let n = match &self.slots[s] {
            Slot::Live(l) => Self::targets(l, t).len(),
            Slot::Freed(..) => 1,
        };
        let mut bufs: Vec<Box<[u8]>> = (0..n)
            .map(|_| vec![0xEEu8; len].into_boxed_slice())
            .collect();
        // SAFETY: buffers of `len` bytes, alive until the transfer ran (pending_reads).
        let rc = unsafe {
            if push {
                let flags = if asynchronous { 2 } else { 0 };
                prepare_and_push(h, &mut bufs, 1, &cname, off, len, flags, live)
            } else {
                dpu::dpu_copy_from(h, cname.as_ptr(), off, bufs[0].as_mut_ptr().cast(), len)
            }
        };
        if !live {
            return self.check_freed("read on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let range = Self::targets(l, t);
        let progs: Vec<Prog> = range.clone().map(|i| l.model[i].prog.clone()).collect();
        let mut expected = if progs.iter().all(|p| *p == Prog::Kernel) {
            named_access(name, off, len, &l.symbols)
        } else if progs.iter().all(|p| *p == Prog::None) && !name.is_empty() {
            Some((DPU_ERR_NO_PROGRAM_LOADED, None))
        } else {
            None
        };
        if !push && range.len() != 1 {
            expected = Some((DPU_ERR_INVALID_DPU_SET, None));
        }
        let mut allowed: Vec<DpuError> = l.pending_errors.clone();
        match expected {
            Some((code, _)) => allowed.push(code),
            None => allowed.clear(),
        }
        check("read from the DPUs", rc, &allowed);
        if rc != DPU_OK {
            return;
        }
        let Some((_, Some(region))) = expected else {
            if asynchronous {
                // Queued: the buffers must live until the transfer ran (the next dpu_sync).
                for buf in bufs {
                    l.pending_reads.push((buf, Vec::new()));
                }
            }
            return;
        };
        for (k, i) in range.enumerate() {
            let want: Vec<Option<u8>> =
                l.model[i].mem[region][off as usize..off as usize + len].to_vec();
            let buf = std::mem::take(&mut bufs[k]);
            if asynchronous {
                l.pending_reads.push((buf, want));
            } else {
                compare(&buf, &want, name, i);
            }
        }
    }

    fn launch(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        if live && inp.u8().is_multiple_of(3) {
            // Set the parameter first (mostly a harmless one, sometimes the faulting one).
            let Slot::Live(l) = &mut self.slots[s] else {
                unreachable!()
            };
            let range = Self::targets(l, t);
            if range.clone().all(|i| l.model[i].prog == Prog::Kernel) {
                let p: u32 = if inp.u8().is_multiple_of(8) {
                    FAULT_PARAM
                } else {
                    u32::from(inp.u8())
                };
                let c = CString::new("param").expect("no NUL");
                // SAFETY: 4 readable bytes.
                let rc = unsafe {
                    dpu::dpu_copy_to(h, c.as_ptr(), 0, p.to_le_bytes().as_ptr().cast(), 4)
                };
                let mut allowed = l.pending_errors.clone();
                allowed.push(DPU_OK);
                check("dpu_copy_to param", rc, &allowed);
                if rc == DPU_OK {
                    for i in range {
                        for (k, b) in p.to_le_bytes().into_iter().enumerate() {
                            l.model[i].mem[PARAM][k] = Some(b);
                        }
                    }
                }
            }
        }
        let policy = match inp.u8() % 5 {
            0 | 1 => 1, // DPU_SYNCHRONOUS
            2 | 3 => 0, // DPU_ASYNCHRONOUS
            _ => 7,     // invalid
        };
        let rc = dpu::dpu_launch(h, policy);
        if !live {
            return self.check_freed("dpu_launch on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let range = Self::targets(l, t);
        if policy == 7 {
            return check(
                "dpu_launch (bad policy)",
                rc,
                &[DPU_ERR_INVALID_LAUNCH_POLICY],
            );
        }
        let progs: Vec<Prog> = range.clone().map(|i| l.model[i].prog.clone()).collect();
        if progs.contains(&Prog::None) {
            let mut allowed = l.pending_errors.clone();
            allowed.push(DPU_ERR_NO_PROGRAM_LOADED);
            if progs.iter().any(|p| *p != Prog::None) {
                allowed.clear();
            }
            check("dpu_launch without a program", rc, &allowed);
            if rc == DPU_OK {
                for i in range {
                    l.model[i].forget();
                }
            }
            return;
        }
        let mut faults = Vec::new();
        for i in range.clone() {
            faults.push(l.model[i].launch());
        }
        let maybe_fault = faults.iter().any(|f| *f != Some(false));
        let surely_fault = faults.contains(&Some(true));
        let mut allowed = l.pending_errors.clone();
        if progs.contains(&Prog::Lost) {
            allowed.push(DPU_ERR_NO_PROGRAM_LOADED);
        }
        if policy == 1 {
            if surely_fault {
                allowed.push(DPU_ERR_DPU_FAULT);
            } else if maybe_fault {
                allowed.extend([DPU_OK, DPU_ERR_DPU_FAULT]);
            } else {
                allowed.push(DPU_OK);
            }
        } else {
            allowed.push(DPU_OK);
            if maybe_fault {
                l.pending_errors.push(DPU_ERR_DPU_FAULT);
            }
        }
        check("dpu_launch", rc, &allowed);
    }

    fn sync(&mut self, inp: &mut Input) {
        let Some((s, _)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, None);
        let rc = dpu::dpu_sync(h);
        if !live {
            return self.check_freed("dpu_sync on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let mut allowed = std::mem::take(&mut l.pending_errors);
        allowed.push(DPU_OK);
        check("dpu_sync", rc, &allowed);
        l.pending_writes.clear();
        for (i, (buf, want)) in std::mem::take(&mut l.pending_reads).into_iter().enumerate() {
            compare(&buf, &want, "an asynchronous read", i);
        }
    }

    fn callback(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let flags = match inp.u8() % 9 {
            8 => 0x30,
            k => u32::from(k),
        } | if inp.u8().is_multiple_of(2) { 8 } else { 0 };
        let ret = if inp.u8().is_multiple_of(4) {
            DPU_ERR_SYSTEM
        } else {
            DPU_OK
        };
        let st = Box::new(CallbackState {
            calls: AtomicU32::new(0),
            ret,
        });
        let args = &*st as *const CallbackState as *mut c_void;
        self.callbacks.push(st);
        // SAFETY: the callback and its args live until the end of the input (after every
        // set was freed, which syncs it).
        let rc = unsafe { dpu::dpu_callback(h, Some(count_calls), args, flags) };
        if !live {
            return self.check_freed("dpu_callback on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let mut allowed = l.pending_errors.clone();
        let asynchronous = flags & 1 != 0;
        if flags & !0xf != 0 {
            allowed.push(DPU_ERR_INVALID_LAUNCH_POLICY);
        } else if flags & 2 != 0 && !asynchronous {
            allowed.push(DPU_ERR_NONBLOCKING_SYNC_CALLBACK);
        } else if asynchronous {
            allowed.push(DPU_OK);
            if ret != DPU_OK {
                l.pending_errors.push(ret);
            }
        } else {
            allowed.push(ret);
        }
        check("dpu_callback", rc, &allowed);
        let st = self.callbacks.last().expect("pushed");
        if rc == ret && !asynchronous && flags & !0xf == 0 {
            assert!(
                st.calls.load(Ordering::SeqCst) >= 1,
                "a synchronous callback ran"
            );
        }
        let _ = t;
    }

    /// `dpu_push_sg_xfer` both ways, by name, with each DPU's bytes cut into blocks.
    fn scatter_gather(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let to_dpu = inp.u8().is_multiple_of(2);
        let name_i = inp.u8() as usize % (SYMBOLS.len() + OTHER_NAMES.len());
        let name = SYMBOLS
            .get(name_i)
            .map(|s| s.0)
            .unwrap_or_else(|| OTHER_NAMES[name_i - SYMBOLS.len()]);
        let (off, len) = offset_and_length(inp);
        let flags = match inp.u8() % 8 {
            0 => 4, // DPU_SG_XFER_DISABLE_LENGTH_CHECK
            1 => 2, // DPU_SG_XFER_ASYNC
            2 => 1, // not a flag
            _ => 0,
        };
        // The blocks hold `len` bytes, or sometimes a few more or less.
        let total = match inp.u8() % 6 {
            0 => len + 8,
            1 => len.saturating_sub(4),
            _ => len,
        };
        let mut cuts: Vec<usize> = (0..inp.u8() % 4)
            .map(|_| inp.u16() as usize % (total + 1))
            .collect();
        cuts.push(0);
        cuts.push(total);
        cuts.sort_unstable();
        let n = match &self.slots[s] {
            Slot::Live(l) => Self::targets(l, t).len(),
            Slot::Freed(..) => 1,
        };
        let data = inp.bytes(total);
        let mut blocks = SgBlocks {
            bufs: (0..n)
                .map(|i| data.iter().map(|x| x.wrapping_add(i as u8)).collect())
                .collect(),
            cuts,
        };
        let mut gb = GetBlockT {
            f: Some(sg_block),
            args: (&mut blocks as *mut SgBlocks).cast(),
            args_size: std::mem::size_of::<SgBlocks>(),
        };
        let cname = CString::new(name).expect("no NUL");
        // SAFETY: the block function hands out slices of `blocks`, alive for this call (the
        // scatter-gather transfer runs synchronously).
        let rc = unsafe {
            dpu::dpu_push_sg_xfer(
                h,
                u32::from(!to_dpu),
                cname.as_ptr(),
                off,
                len,
                &mut gb,
                flags,
            )
        };
        if !live {
            return self.check_freed("dpu_push_sg_xfer on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let range = Self::targets(l, t);
        let progs: Vec<Prog> = range.clone().map(|i| l.model[i].prog.clone()).collect();
        let region = SYMBOLS.iter().position(|(n, _)| *n == name);
        let expected: Option<(DpuError, Option<usize>)> = if flags & 1 != 0 {
            Some((DPU_ERR_INVALID_MEMORY_TRANSFER, None))
        } else if progs.iter().all(|p| *p == Prog::None) {
            Some((DPU_ERR_NO_PROGRAM_LOADED, None))
        } else if !progs.iter().all(|p| *p == Prog::Kernel) {
            None
        } else {
            match (name, region) {
                ("nosuch" | "", _) => Some((DPU_ERR_UNKNOWN_SYMBOL, None)),
                ("main", _) => Some((DPU_ERR_SG_NOT_MRAM_SYMBOL, None)),
                (_, Some(r)) if r < MIN => Some((DPU_ERR_SG_NOT_MRAM_SYMBOL, None)),
                (_, Some(_)) if flags & 4 == 0 && total != len => {
                    Some((DPU_ERR_SG_LENGTH_MISMATCH, None))
                }
                (_, Some(r)) if u64::from(off) + total as u64 > SYMBOLS[r].1 as u64 => {
                    Some((DPU_ERR_INVALID_SYMBOL_ACCESS, None))
                }
                (_, Some(r)) => Some((DPU_OK, Some(r))),
                _ => None,
            }
        };
        let mut allowed = l.pending_errors.clone();
        match expected {
            Some((code, _)) => allowed.push(code),
            None => allowed.clear(),
        }
        check("dpu_push_sg_xfer", rc, &allowed);
        let Some((DPU_OK, Some(region))) = expected.filter(|_| rc == DPU_OK) else {
            if rc != DPU_OK && expected.is_none_or(|(code, _)| code != rc) {
                // Stopped part-way, maybe after some DPUs: what they hold is not known.
                for i in range {
                    l.model[i].forget();
                }
            }
            return;
        };
        for (k, i) in range.enumerate() {
            let at = off as usize;
            if to_dpu {
                for (j, b) in blocks.bufs[k].iter().enumerate() {
                    l.model[i].mem[region][at + j] = Some(*b);
                }
            } else {
                let want = l.model[i].mem[region][at..at + total].to_vec();
                compare(&blocks.bufs[k], &want, "a scatter-gather read", i);
            }
        }
    }

    fn log(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let mut ptr: *mut libc::c_char = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        // SAFETY: open_memstream with valid output pointers; the stream is closed below.
        let stream = unsafe { libc::open_memstream(&mut ptr, &mut size) };
        assert!(!stream.is_null());
        let dpu_ptr = dpu::dpu_from_set(h);
        // SAFETY: a stream from open_memstream; a DPU pointer (or NULL) from dpu_from_set.
        let rc = unsafe { dpu::dpulog_read_for_dpu(dpu_ptr, stream) };
        // SAFETY: closing the stream makes `ptr`/`size` the bytes written; freed below.
        let text = unsafe {
            libc::fclose(stream);
            let v = std::slice::from_raw_parts(ptr as *const u8, size).to_vec();
            libc::free(ptr.cast());
            v
        };
        if !live {
            return self.check_freed("dpulog_read_for_dpu on a freed set", &h, rc);
        }
        let Slot::Live(l) = &mut self.slots[s] else {
            unreachable!()
        };
        let Some(i) = t else {
            // A whole set is not a DPU: dpu_from_set gives NULL.
            assert!(dpu_ptr.is_null());
            return check("dpulog_read_for_dpu(NULL)", rc, &[DPU_ERR_INVALID_DPU_SET]);
        };
        let mut allowed = l.pending_errors.clone();
        allowed.push(DPU_OK);
        check("dpulog_read_for_dpu", rc, &allowed);
        if rc == DPU_OK {
            if let Some(want) = &l.model[i].log {
                assert_eq!(
                    String::from_utf8_lossy(&text),
                    String::from_utf8_lossy(want),
                    "the log of DPU {i}"
                );
            }
        }
    }

    fn free(&mut self, inp: &mut Input) {
        let Some((s, t)) = self.pick(inp) else { return };
        let (h, live) = self.handle(s, t);
        let rc = dpu::dpu_free(h);
        if !live {
            let aliases = self.aliases(&h);
            self.check_freed("dpu_free of a freed set", &h, rc);
            if rc == DPU_OK {
                // The freed handle's address was a live set's: that set is freed now.
                for i in aliases {
                    let is_set =
                        matches!(&self.slots[i], Slot::Live(l) if ptr_of(&l.c) == ptr_of(&h));
                    if is_set {
                        let Slot::Live(l) =
                            std::mem::replace(&mut self.slots[i], Slot::Freed(h, Vec::new()))
                        else {
                            unreachable!()
                        };
                        self.slots[i] = Slot::Freed(l.c, l.dpus);
                    }
                }
            }
            return;
        }
        if t.is_some() {
            // A DPU of a set is not what dpu_alloc returned.
            return check("dpu_free of one DPU", rc, &[DPU_ERR_INVALID_DPU_SET]);
        }
        check("dpu_free", rc, &[DPU_OK]);
        let Slot::Live(l) = std::mem::replace(&mut self.slots[s], Slot::Freed(h, Vec::new()))
        else {
            unreachable!()
        };
        // Freeing waits for queued work: asynchronous reads are done.
        for (i, (buf, want)) in l.pending_reads.iter().enumerate() {
            compare(buf, want, "an asynchronous read before dpu_free", i);
        }
        self.slots[s] = Slot::Freed(l.c, l.dpus);
    }

    fn finish(&mut self) {
        for slot in &mut self.slots {
            if let Slot::Live(l) = slot {
                check("dpu_free at the end", dpu::dpu_free(l.c), &[DPU_OK]);
            }
        }
        self.slots.clear();
        self.callbacks.clear();
    }
}

/// `DPU_FOREACH` with `dpu_prepare_xfer` of `bufs[i]` for the i-th DPU of `h`, then
/// `dpu_push_xfer` in direction `dir`. When the push did not take them, the prepared buffers
/// are cleared (the SDK's contract: they stay referenced until a push takes them, and the
/// harness is about to free them).
///
/// # Safety
/// Every buffer holds `len` bytes and lives until the transfer ran (for asynchronous flags:
/// until the set's next `dpu_sync`).
#[allow(clippy::too_many_arguments)]
unsafe fn prepare_and_push(
    h: DpuSetT,
    bufs: &mut [Box<[u8]>],
    dir: u32,
    name: &CString,
    off: u32,
    len: usize,
    flags: u32,
    live: bool,
) -> DpuError {
    // SAFETY: the caller's contract; the iterator functions take a set value's address.
    unsafe {
        let mut it = dpu::dpu_set_dpu_iterator_from(&mut { h });
        let mut rc = DPU_OK;
        for b in bufs.iter_mut() {
            if !it.has_next {
                break;
            }
            let r = dpu::dpu_prepare_xfer(it.next, b.as_mut_ptr().cast());
            if r != DPU_OK {
                rc = r;
            }
            dpu::dpu_set_dpu_iterator_next(&mut it);
        }
        if rc == DPU_OK || !live {
            rc = dpu::dpu_push_xfer(h, dir, name.as_ptr(), off, len, flags);
        }
        if rc != DPU_OK && live {
            dpu::dpu_prepare_xfer(h, std::ptr::null_mut());
        }
        rc
    }
}

fn compare(buf: &[u8], want: &[Option<u8>], what: &str, dpu: usize) {
    for (j, (got, w)) in buf.iter().zip(want).enumerate() {
        if let Some(w) = w {
            assert_eq!(
                got, w,
                "{what}: byte {j} of DPU {dpu} is {got:#x}, the model says {w:#x}"
            );
        }
    }
}

/// Mostly in-range and aligned offsets and lengths, sometimes anything.
fn offset_and_length(inp: &mut Input) -> (u32, usize) {
    match inp.u8() % 8 {
        0 => (inp.u32(), inp.u16() as usize),
        1 => (u32::from(inp.u16()), inp.u16() as usize % 4096),
        k => {
            let off = u32::from(inp.u8()) * if k % 2 == 0 { 4 } else { 8 };
            let len = (inp.u8() as usize % 64) * 4;
            (off, len)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    std::env::set_var("OPENPIM_QUIET", "1");
    let mut h = Harness {
        slots: Vec::new(),
        callbacks: Vec::new(),
        profile: CString::new(PROFILE).expect("no NUL"),
    };
    let mut inp = Input(data);
    for _ in 0..48 {
        if inp.done() {
            break;
        }
        match inp.u8() % 11 {
            10 => h.scatter_gather(&mut inp),
            0 => h.alloc(&mut inp),
            1 => h.load(&mut inp),
            2 | 3 => h.write(&mut inp),
            4 | 5 => h.read(&mut inp),
            6 => h.launch(&mut inp),
            7 => {
                h.sync(&mut inp);
                h.callback(&mut inp);
            }
            8 => h.log(&mut inp),
            _ => h.free(&mut inp),
        }
    }
    h.finish();
});
