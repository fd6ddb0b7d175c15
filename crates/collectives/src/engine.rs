//! One collective call on a set: checks, the exchange record on the timeline, and the two
//! paths — the optimized one (relocation programs on the DPUs, the host step a line at a
//! time) and the host-mediated baseline (the SDK's transfers and a host-memory loop).

use std::sync::Arc;

use openpim_runtime::exec::mpi::MpiBackend;
use openpim_runtime::inter_dpu::{self, InterDpuCall};
use openpim_runtime::machine::{HardwareProfile, LinkSpec};
use openpim_runtime::{
    timeline, DpuSet, LaunchPolicy, Program, Rank, Symbol, SymbolRef, XferDirection, XferFlags,
    MRAM_HEAP_SYMBOL,
};

use crate::cube::{dpu_of, Comm, Hypercube, CHIPS, RANK_DPUS};
use crate::distributed;
use crate::elem::{reduce_into, ElemType, ReduceOp};
use crate::error::{Error, Result};
use crate::line::{self, cpu_now, Modulation, Window, Work};
use crate::simd::Kernel;

/// Lines of a window per rank for `words` 64-bit words per DPU (a rank's entangled groups).
fn rank_lines(words: usize) -> usize {
    (RANK_DPUS / CHIPS) as usize * words
}
use crate::choice::{self, Prediction, RELOCATE_ARGS_BYTES};
use crate::plan::{self, Exchange, Layout};
use crate::{Options, Reordering};

/// The name of the relocation program's argument block.
pub(crate) const RELOCATE_ARGS: &str = "relocate_args";

/// A set and its hypercube, ready for calls.
pub(crate) struct Ctx<'a> {
    pub set: &'a DpuSet,
    pub cube: &'a Hypercube,
    /// The DPUs by logical id (single-DPU sets).
    dpus: Vec<DpuSet>,
    ranks: Vec<Arc<Rank>>,
    /// The user's program and its MRAM heap (offsets are relative to it).
    program: Arc<Program>,
    heap: Symbol,
    pub opts: Options,
}

/// A region of every DPU: heap offset and length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Region {
    pub at: u32,
    pub len: u32,
}

impl Region {
    fn end(self) -> u64 {
        u64::from(self.at) + u64::from(self.len)
    }

    fn overlaps(self, o: Region) -> bool {
        u64::from(self.at) < o.end() && u64::from(o.at) < self.end()
    }
}

impl<'a> Ctx<'a> {
    pub fn new(set: &'a DpuSet, cube: &'a Hypercube, opts: Options) -> Result<Ctx<'a>> {
        let ranks = set.ranks();
        let program = set.program().ok_or_else(|| {
            Error::invalid(
                "dpu_set",
                "no program is loaded: load yours (dpu_load) before a collective; offsets are relative to its MRAM heap (DPU_MRAM_HEAP_POINTER_NAME)",
            )
        })?;
        let heap = program.symbol(MRAM_HEAP_SYMBOL)?;
        let dpus = (0..cube.nr_dpus())
            .map(|l| {
                let (r, i) = dpu_of(l);
                DpuSet::dpu(Arc::clone(&ranks[r as usize]), i)
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Ctx {
            set,
            cube,
            dpus,
            ranks,
            program,
            heap,
            opts,
        })
    }

    /// Checks that `regions` (name, region) fit in MRAM and that the scratch region overlaps
    /// none of the others.
    pub fn check_regions(&self, regions: &[(&'static str, Region)]) -> Result<()> {
        for (name, r) in regions {
            if r.end() > u64::from(self.heap.size) {
                return Err(Error::invalid(
                    name,
                    format!(
                        "the region [{}, {}) past the MRAM heap's {} bytes (offsets are relative to the heap of the loaded program)",
                        r.at,
                        r.end(),
                        self.heap.size
                    ),
                ));
            }
        }
        for (i, (a, ra)) in regions.iter().enumerate() {
            for (b, rb) in &regions[i + 1..] {
                let scratch = *a == "buffer_offset" || *b == "buffer_offset";
                let same = ra.at == rb.at;
                if ra.len > 0 && rb.len > 0 && ra.overlaps(*rb) && (scratch || !same) {
                    return Err(Error::invalid(
                        if scratch { "buffer_offset" } else { b },
                        format!(
                            "{a} [{}, {}) and {b} [{}, {}) overlap; the scratch region must be apart from both, and the target is the source or apart from it",
                            ra.at,
                            ra.end(),
                            rb.at,
                            rb.end()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Moves `len` bytes between `ptrs[l]` (one per logical DPU) and heap offset `at`; charged
    /// on the timeline unless `uncharged` (the emulator's own access).
    ///
    /// # Safety
    /// Each pointer is valid for `len` bytes (writable when reading from the DPUs) until the
    /// call returns; pointers may repeat only when writing to the DPUs.
    unsafe fn xfer(
        &self,
        dir: XferDirection,
        at: u32,
        len: u32,
        ptrs: &[*mut u8],
        uncharged: bool,
    ) -> Result<()> {
        let run = || -> Result<()> {
            for (d, p) in self.dpus.iter().zip(ptrs) {
                // SAFETY: valid for `len` bytes until the synchronous push returns (the
                // caller's contract).
                unsafe { d.prepare_xfer(*p) };
            }
            // SAFETY: as above; the transfer is synchronous.
            unsafe {
                self.set.push_xfer(
                    dir,
                    SymbolRef::Symbol(self.heap),
                    at,
                    len as usize,
                    XferFlags::default(),
                )?
            };
            Ok(())
        };
        if uncharged {
            timeline::uncharged(run)
        } else {
            run()
        }
    }

    pub fn read(&self, r: Region, uncharged: bool) -> Result<Vec<Vec<u8>>> {
        let mut bufs = vec![vec![0u8; r.len as usize]; self.dpus.len()];
        let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        // SAFETY: one buffer of `r.len` bytes per DPU, alive across the call.
        unsafe { self.xfer(XferDirection::FromDpu, r.at, r.len, &ptrs, uncharged)? };
        Ok(bufs)
    }

    pub fn write(&self, r: Region, bufs: Vec<Vec<u8>>, uncharged: bool) -> Result<()> {
        let which: Vec<usize> = (0..bufs.len()).collect();
        self.write_shared(r, &bufs, &which, uncharged)
    }

    /// Writes `bufs[which[l]]` to DPU `l` (several DPUs may share a buffer, as a program writes
    /// one reduced vector to every member of a group).
    pub fn write_shared(
        &self,
        r: Region,
        bufs: &[Vec<u8>],
        which: &[usize],
        uncharged: bool,
    ) -> Result<()> {
        let ptrs: Vec<*mut u8> = which.iter().map(|i| bufs[*i].as_ptr().cast_mut()).collect();
        debug_assert!(bufs.iter().all(|b| b.len() == r.len as usize));
        // SAFETY: `r.len` bytes each, alive across the call, only read (to the DPUs).
        unsafe { self.xfer(XferDirection::ToDpu, r.at, r.len, &ptrs, uncharged) }
    }

    /// The region in the rank windows' layout (emulator work: not on the timeline).
    pub fn read_window(&self, r: Region) -> Result<Window> {
        let bufs = self.read(r, true)?;
        Ok(to_window(&bufs, r.len as usize))
    }

    pub fn write_window(&self, r: Region, win: &Window) -> Result<()> {
        self.write(r, from_window(win, self.dpus.len(), r.len as usize), true)
    }

    /// Runs an exchange's host step: the plan for `layout` from the `src` region into the
    /// `dst` region, with the line arithmetic of [`line::run`]; returns its measured work,
    /// one piece per rank (not charged here). In process the windows are read from and
    /// written to the ranks (emulator work, off the timeline); in a distributed run the
    /// workers holding the ranks run it beside them ([`crate::distributed`]), so that the
    /// exchange's bytes never travel to this process.
    pub fn host_step(
        &self,
        c: &ExchangeCall,
        layout: Layout,
        src: Region,
        dst: Region,
        m: Modulation,
    ) -> Result<Work> {
        if let Some(mpi) = self.ranks[0].mpi_backend() {
            // A rank split over several workers (an allocation smaller than the workers)
            // runs its step here: the plan gives each worker whole ranks.
            let slots: Vec<u32> = self.ranks.iter().map(|r| r.id()).collect();
            if distributed::in_workers()? && mpi.ranks_whole(&slots) {
                return self.host_step_on_workers(mpi, c, layout, src, dst, m);
            }
        }
        let ops = plan::build(
            c.x,
            self.cube,
            c.comm,
            c.total,
            layout,
            (src.len / 8) as usize,
            (dst.len / 8) as usize,
        );
        let from = self.read_window(src)?;
        let mut to = vec![0u64; (dst.len as usize / 8) * 8 * (self.dpus.len() / 8)];
        let work = line::run(&ops, &from, &mut to, &m, rank_lines((dst.len / 8) as usize));
        self.write_window(dst, &to)?;
        Ok(work)
    }

    /// [`Ctx::host_step`] in the MPI workers: one request per worker of the set.
    fn host_step_on_workers(
        &self,
        mpi: &MpiBackend,
        c: &ExchangeCall,
        layout: Layout,
        src: Region,
        dst: Region,
        m: Modulation,
    ) -> Result<Work> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let step = distributed::Step {
            id: (u64::from(std::process::id()) << 32)
                | u64::from(NEXT.fetch_add(1, Ordering::Relaxed)),
            x: c.x,
            cube: self.cube.clone(),
            comm: c.comm,
            total: c.total,
            layout,
            m,
            src: (self.heap.address + src.at, src.len),
            dst: (self.heap.address + dst.at, dst.len),
            slots: self.ranks.iter().map(|r| r.id()).collect(),
            nr_workers: mpi.nr_workers()?,
        };
        let mut work = Work::default();
        for (w, answer) in mpi.collective(&step.slots, &step.encode())? {
            distributed::merge_work(&mut work, &answer)
                .map_err(|why| Error::Worker { worker: w + 1, why })?;
        }
        Ok(work)
    }

    /// Runs the relocation program on every DPU: chunks of `src` to `dst` by `mode`.
    fn relocate(
        &self,
        src: Region,
        dst: Region,
        chunk: u32,
        nr_chunks: u32,
        mode: u32,
    ) -> Result<()> {
        let program = relocation_program()?;
        // Loaded once per call (AlltoAll runs it before and after the host step).
        let loaded = self
            .set
            .program()
            .is_some_and(|p| Arc::ptr_eq(&p, &program));
        if !loaded {
            self.set.load(Arc::clone(&program))?;
        }
        let base = self.heap.address;
        let mut args: Vec<Vec<u8>> = (0..self.cube.nr_dpus())
            .map(|l| {
                [
                    base + src.at,
                    base + dst.at,
                    chunk,
                    nr_chunks,
                    mode,
                    l % CHIPS,
                    CHIPS,
                ]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
            })
            .collect();
        for (d, b) in self.dpus.iter().zip(args.iter_mut()) {
            // SAFETY: RELOCATE_ARGS_BYTES each, alive until the synchronous push returns.
            unsafe { d.prepare_xfer(b.as_mut_ptr()) };
        }
        // SAFETY: as above.
        unsafe {
            self.set.push_xfer(
                XferDirection::ToDpu,
                SymbolRef::Name(RELOCATE_ARGS),
                0,
                RELOCATE_ARGS_BYTES,
                XferFlags::default(),
            )?
        };
        self.set.launch(LaunchPolicy::Synchronous)?;
        Ok(())
    }

    /// `data` to every DPU's region (the SDK's broadcast).
    pub fn broadcast(&self, r: Region, data: &[u8]) -> Result<()> {
        self.set.copy_to(SymbolRef::Symbol(self.heap), r.at, data)?;
        Ok(())
    }

    /// Loads the user's program back after relocation programs ran (its heap, where the data
    /// is, is untouched: the relocation program has no MRAM data of its own).
    fn restore_program(&self) -> Result<()> {
        self.set.load(Arc::clone(&self.program))?;
        Ok(())
    }

    /// The profile's host cores (`[host] cores`).
    fn host_cores(&self) -> u32 {
        self.ranks[0].machine().hardware.host_spec().cores
    }

    /// Charges the optimized host step: the lines it reads and writes on every rank at the
    /// line rates, or its measured host work when longer — the work's pieces (one per rank)
    /// each on its own core of the profile's host (`[host] cores`), as PID-Comm runs its host
    /// step on host threads.
    fn charge_host_step(&self, read_per_dpu: u64, written_per_dpu: u64, work: &Work) {
        let measured_ns = work.on_cores(self.host_cores());
        let d = self
            .host_step_bus_ns(read_per_dpu, written_per_dpu)
            .max(measured_ns);
        let parts: Vec<(u32, u64)> = self.ranks.iter().map(|r| (r.id(), d)).collect();
        inter_dpu::rank_ops(&parts, "collective host step");
    }

    /// The bus time of a host step that reads and writes these bytes on every DPU: each
    /// rank's lines at the line rates, at least the host-wide limit of all of them.
    pub(crate) fn host_step_bus_ns(&self, read_per_dpu: u64, written_per_dpu: u64) -> u64 {
        let hw = self.hardware();
        let rates = LineRates::of(hw, self.ranks.len() as u32);
        let per_rank = |dpus: u64| {
            let rd = read_per_dpu * dpus;
            let wr = written_per_dpu * dpus;
            (rd, wr)
        };
        let mut total_r = 0u64;
        let mut total_w = 0u64;
        let mut parts: Vec<(u32, u64)> = Vec::new();
        for r in &self.ranks {
            let (rd, wr) = per_rank(u64::from(r.nr_dpus()));
            total_r += rd;
            total_w += wr;
            parts.push((r.id(), rates.rank_ns(rd, wr)));
        }
        let host_wide = rates.host_wide_ns(total_r, total_w);
        parts
            .iter()
            .map(|(_, d)| *d)
            .max()
            .unwrap_or(0)
            .max(host_wide)
    }

    /// The machine's hardware profile.
    pub(crate) fn hardware(&self) -> &HardwareProfile {
        &self.ranks[0].machine().hardware
    }

    /// Whether this exchange runs the relocation program: `None` where it has none to run
    /// (no x axis with whole entangled groups, AllReduce), else the switch's answer, or the
    /// cost model's in `auto` (`crate::choice`).
    pub(crate) fn reorders(&self, c: &ExchangeCall) -> Result<Option<bool>> {
        let layout = plan::reordering(c.x, self.cube, c.comm);
        if layout == Layout::default() {
            return Ok(None);
        }
        Ok(Some(match self.opts.reordering {
            Reordering::Always => true,
            Reordering::Never => false,
            Reordering::Auto => self.predict(c, layout)?.reorder(),
        }))
    }

    /// The cost model's prediction for this exchange with the relocation `layout`.
    pub(crate) fn predict(&self, c: &ExchangeCall, layout: Layout) -> Result<Prediction> {
        let relocation = relocation_program()?;
        let inputs = choice::Inputs {
            hw: self.hardware(),
            cube: self.cube,
            rank_dpus: self.ranks.iter().map(|r| r.nr_dpus()).collect(),
            user_program: &self.program,
            relocation: &relocation,
            x: c.x,
            comm: c.comm,
            total: c.total,
            read: c.source.len,
            written: c.target.len,
            modulation: Modulation {
                in_register: self.opts.in_register,
                cross_domain: self.opts.cross_domain,
                ty: c.ty,
                op: c.op,
            },
            bus_ns: self.host_step_bus_ns(u64::from(c.source.len), u64::from(c.target.len)),
        };
        choice::predict(&inputs, layout)
    }
}

impl Ctx<'_> {
    /// The profile's DPU-to-DPU links, when they cover every group of `comm`: each group
    /// inside one chip (`chip`: same rank, same chip), one rank, or one group of ranks.
    pub fn links_for(&self, comm: Comm) -> Option<LinkSpec> {
        let links = self.ranks[0].machine().hardware.links.clone()?;
        let domain = |l: u32| -> u64 {
            match links.scope.as_str() {
                "chip" => u64::from(l / 64) * 8 + u64::from(l % CHIPS),
                "rank" => u64::from(l / 64),
                _ => u64::from(l / (64 * links.ranks_per_group)),
            }
        };
        let covered = self
            .cube
            .groups(comm)
            .iter()
            .all(|g| g.iter().all(|l| domain(*l) == domain(g[0])));
        covered.then_some(links)
    }
}

/// The path's name in reports for an exchange over links.
pub(crate) fn links_path(l: &LinkSpec) -> String {
    format!("links ({}, {} GB/s)", l.scope, l.link_gbps)
}

/// An exchange over the modeled DPU-to-DPU links: every DPU sends what the exchange needs
/// over its own link, all links at once — a ring for the reductions (`2(N-1)/N` of the data
/// for AllReduce, `(N-1)/N` for ReduceScatter), `(N-1)/N` for AlltoAll and AllGather — at the
/// profile's link bandwidth. The data moves as the exchange defines (the emulator's work);
/// the DPUs' reduction arithmetic is not modeled (the links' time only).
pub(crate) fn over_links(ctx: &Ctx<'_>, c: &ExchangeCall, links: &LinkSpec) -> Result<()> {
    let n = u64::from(ctx.cube.group_size(c.comm));
    let total = u64::from(c.total);
    let per_dpu = match c.x {
        Exchange::AllReduce => 2 * (n - 1) * total / n,
        _ => (n - 1) * total / n,
    };
    let m = Modulation {
        in_register: true,
        cross_domain: true,
        ty: c.ty,
        op: c.op,
    };
    // The data moves as the host step would move it (its work is not what the links cost).
    ctx.host_step(c, Layout::default(), c.source, c.target, m)?;
    let ns = (per_dpu as f64 / links.link_gbps).ceil() as u64;
    let parts: Vec<(u32, u64)> = ctx.ranks.iter().map(|r| (r.id(), ns)).collect();
    inter_dpu::link_ops(&parts, "DPU-to-DPU links");
    Ok(())
}

/// The bus rates of the optimized host step, which streams 64-byte lines between the rank
/// windows without the SDK's per-DPU byte transpose and host buffers: writes at the SDK's
/// broadcast rate (its rank write path without per-DPU data), reads at that rate scaled by the
/// SDK's measured read/write ratio of parallel transfers (an estimate: no published
/// line-read figure), each call's fixed cost per rank and direction, and the host-wide
/// saturation with ranks of the bus model (`docs/collectives.md`, "Costs").
struct LineRates {
    write_gbps: f64,
    read_gbps: f64,
    read_call_ns: u64,
    write_call_ns: u64,
    /// Host-wide limit of the call's ranks, GB/s, for writes and reads.
    host_write_gbps: f64,
    host_read_gbps: f64,
}

impl LineRates {
    fn of(hw: &HardwareProfile, ranks: u32) -> LineRates {
        let bus = &hw.bus_spec();
        // The call's fixed cost as the bus model charges an SDK call on these ranks.
        let model = hw.bus_model();
        let write = bus.broadcast_rank_gbps;
        let read = write * bus.dpu_cpu_rank_gbps / bus.cpu_dpu_rank_gbps;
        let g = |r: f64| {
            bus.rank_scaling_base_gbps
                + bus.rank_scaling_step_gbps * r.min(bus.rank_scaling_max_ranks)
        };
        let scale = g(f64::from(ranks.max(1))) / g(1.0);
        let channels = f64::from(bus.host_channels) * bus.channel_gbps;
        LineRates {
            write_gbps: write,
            read_gbps: read,
            read_call_ns: model.call_fixed_ns(openpim_runtime::machine::Direction::FromDpu, ranks),
            write_call_ns: model.call_fixed_ns(openpim_runtime::machine::Direction::ToDpu, ranks),
            host_write_gbps: (write * scale).min(channels),
            host_read_gbps: (read * scale).min(channels),
        }
    }

    fn rank_ns(&self, read: u64, written: u64) -> u64 {
        let mut t = 0.0;
        if read > 0 {
            t += self.read_call_ns as f64 + read as f64 / self.read_gbps;
        }
        if written > 0 {
            t += self.write_call_ns as f64 + written as f64 / self.write_gbps;
        }
        t.ceil() as u64
    }

    fn host_wide_ns(&self, read: u64, written: u64) -> u64 {
        (read as f64 / self.host_read_gbps + written as f64 / self.host_write_gbps).ceil() as u64
    }
}

/// Where the relocation program is: `OPENPIM_COLLECTIVES_DIR`, else the SDK's build folder.
pub(crate) fn relocation_program() -> Result<Arc<Program>> {
    use std::sync::OnceLock;
    static CACHE: OnceLock<std::result::Result<Arc<Program>, String>> = OnceLock::new();
    let dir = std::env::var("OPENPIM_COLLECTIVES_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../build/collectives").into());
    let path = format!("{dir}/relocate");
    CACHE
        .get_or_init(|| {
            Program::from_file(&path)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|why| Error::Relocation { path, why })
}

/// Per-DPU buffers (by logical id) -> lines.
pub(crate) fn to_window(bufs: &[Vec<u8>], len: usize) -> Window {
    let words = len / 8;
    let egs = bufs.len() / 8;
    let mut win = vec![0u64; egs * words * 8];
    for e in 0..egs {
        for w in 0..words {
            let line = &mut win[8 * (e * words + w)..8 * (e * words + w) + 8];
            for c in 0..8 {
                let word = &bufs[8 * e + c][8 * w..8 * w + 8];
                for (l, lane) in line.iter_mut().enumerate() {
                    *lane |= u64::from(word[l]) << (8 * c);
                }
            }
        }
    }
    win
}

/// Lines -> per-DPU buffers.
pub(crate) fn from_window(win: &Window, nr_dpus: usize, len: usize) -> Vec<Vec<u8>> {
    let words = len / 8;
    let mut bufs = vec![vec![0u8; len]; nr_dpus];
    for e in 0..nr_dpus / 8 {
        for w in 0..words {
            let line = &win[8 * (e * words + w)..8 * (e * words + w) + 8];
            for (c, buf) in bufs[8 * e..8 * e + 8].iter_mut().enumerate() {
                for (l, lane) in line.iter().enumerate() {
                    buf[8 * w + l] = (lane >> (8 * c)) as u8;
                }
            }
        }
    }
    bufs
}

/// Runs `f` as one exchange on the timeline.
pub(crate) fn exchange<T>(
    primitive: &str,
    comm: &str,
    bytes: u64,
    path: String,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    inter_dpu::begin(InterDpuCall {
        primitive: primitive.into(),
        label: String::new(),
        axes: comm.into(),
        bytes,
        path,
        owns_kernels: true,
    });
    let out = f();
    inter_dpu::end();
    out
}

/// The arguments of an exchange between DPUs.
pub(crate) struct ExchangeCall {
    pub x: Exchange,
    pub comm: Comm,
    pub total: u32,
    pub source: Region,
    pub scratch: Region,
    pub target: Region,
    pub ty: ElemType,
    pub op: ReduceOp,
}

/// The optimized path of an exchange, with the relocation program when `reorder`.
pub(crate) fn optimized(ctx: &Ctx<'_>, c: &ExchangeCall, reorder: bool) -> Result<()> {
    let o = ctx.opts;
    let layout = if reorder {
        plan::reordering(c.x, ctx.cube, c.comm)
    } else {
        Layout::default()
    };
    let n = ctx.cube.group_size(c.comm);
    let chunk = c.x.chunk_bytes(c.total, n);
    // Where the host step reads and writes (see docs/collectives.md, "Paths").
    let (host_src, host_dst, post) = match (layout.rotated_source, layout.rotated_dest) {
        (true, true) => (
            c.scratch,
            c.source.with_len(c.total),
            Some(c.source.with_len(c.total)),
        ),
        (false, true) => (c.source, c.scratch, Some(c.scratch)),
        (true, false) => (c.scratch, c.target, None),
        (false, false) => (c.source, c.target, None),
    };
    if layout.rotated_source {
        ctx.relocate(c.source, c.scratch, chunk, c.total / chunk, 1)?;
    }
    let m = Modulation {
        in_register: o.in_register,
        cross_domain: o.cross_domain,
        ty: c.ty,
        op: c.op,
    };
    let work = ctx.host_step(c, layout, host_src, host_dst, m)?;
    ctx.charge_host_step(u64::from(host_src.len), u64::from(host_dst.len), &work);
    if let Some(from) = post {
        ctx.relocate(from, c.target, chunk, c.total / chunk, 2)?;
    }
    if layout.rotated_source || layout.rotated_dest {
        ctx.restore_program()?;
    }
    Ok(())
}

impl Region {
    fn with_len(self, len: u32) -> Region {
        Region { at: self.at, len }
    }
}

/// A group's result buffers in a piece of the baseline: (group, buffers of its members, or
/// its one shared buffer).
type GroupOut<'a> = (usize, Vec<&'a mut Vec<u8>>);

/// A rank's part of the baseline's gather or scatter: its DPUs' buffers, its entangled
/// groups' host buffers.
type RankBuffers<'a, 'b> = (&'a mut [Vec<u8>], &'a mut [&'b mut [u8]]);

/// The host-mediated baseline of an exchange: every DPU's source to host memory (the SDK's
/// parallel transfer), the result computed there, written back.
pub(crate) fn baseline(ctx: &Ctx<'_>, c: &ExchangeCall) -> Result<()> {
    let src = ctx.read(c.source, false)?;
    let n = ctx.cube.group_size(c.comm) as usize;
    let chunk = c.x.chunk_bytes(c.total, n as u32) as usize;
    let groups = ctx.cube.groups(c.comm);
    // The program's result buffers, allocated and touched before its loop (a program keeps
    // them across calls): one per DPU, or one per group for an AllReduce, whose members are
    // all written from their group's.
    let shared = c.x == Exchange::AllReduce;
    let count = if shared { groups.len() } else { ctx.dpus.len() };
    let mut out = vec![vec![0xa5u8; c.target.len as usize]; count];
    let mut which: Vec<usize> = (0..ctx.dpus.len()).collect();
    if shared {
        for (g, members) in groups.iter().enumerate() {
            for &d in members {
                which[d as usize] = g;
            }
        }
    }
    // The program's loop runs on the host's cores as the optimized host step does: one piece
    // per rank (of each group's first member), each piece its groups' result buffers.
    let mut slots: Vec<Option<&mut Vec<u8>>> = out.iter_mut().map(Some).collect();
    let mut pieces: Vec<Vec<GroupOut<'_>>> = (0..ctx.ranks.len()).map(|_| Vec::new()).collect();
    for (g, members) in groups.iter().enumerate() {
        let outs: Vec<&mut Vec<u8>> = if shared {
            vec![slots[g].take().expect("one group, one buffer")]
        } else {
            members
                .iter()
                .map(|&d| slots[d as usize].take().expect("groups are disjoint"))
                .collect()
        };
        pieces[members[0] as usize / RANK_DPUS as usize].push((g, outs));
    }
    let pieces = line::in_parallel(pieces, |piece| {
        let start_cpu = cpu_now();
        for (g, mut outs) in piece {
            let m: Vec<usize> = groups[g].iter().map(|l| *l as usize).collect();
            match c.x {
                Exchange::AlltoAll | Exchange::AllGather => {
                    for (r, out) in outs.iter_mut().enumerate() {
                        let from = if c.x == Exchange::AlltoAll {
                            r * chunk
                        } else {
                            0
                        };
                        for (j, &s) in m.iter().enumerate() {
                            out[j * chunk..(j + 1) * chunk]
                                .copy_from_slice(&src[s][from..from + chunk]);
                        }
                    }
                }
                Exchange::ReduceScatter => {
                    for (r, acc) in outs.iter_mut().enumerate() {
                        acc.copy_from_slice(&src[m[0]][r * chunk..(r + 1) * chunk]);
                        for &s in &m[1..] {
                            reduce_into(acc, &src[s][r * chunk..(r + 1) * chunk], c.ty, c.op);
                        }
                    }
                }
                Exchange::AllReduce => {
                    let acc = &mut outs[0];
                    acc.copy_from_slice(&src[m[0]]);
                    for &s in &m[1..] {
                        reduce_into(acc, &src[s], c.ty, c.op);
                    }
                }
            }
        }
        cpu_now().saturating_sub(start_cpu)
    });
    let work = Work {
        phases: vec![pieces],
    };
    inter_dpu::host_work(work.on_cores(ctx.host_cores()), "collective host work");
    ctx.write_shared(c.target, &out, &which, false)
}

/// Reduce to the host: `host[g]` = the group's reduced vector, natural order.
pub(crate) fn reduce_to_host(
    ctx: &Ctx<'_>,
    comm: Comm,
    source: Region,
    ty: ElemType,
    op: ReduceOp,
    host: &mut [&mut [u8]],
) -> Result<()> {
    let groups = ctx.cube.groups(comm);
    if ctx.opts.baseline {
        let src = ctx.read(source, false)?;
        // On the host's cores, one piece per rank (of each group's first member).
        let mut pieces: Vec<Vec<(usize, &mut [u8])>> =
            (0..ctx.ranks.len()).map(|_| Vec::new()).collect();
        for (g, out) in host.iter_mut().enumerate() {
            pieces[groups[g][0] as usize / RANK_DPUS as usize].push((g, &mut **out));
        }
        let pieces = line::in_parallel(pieces, |piece| {
            let start = cpu_now();
            for (g, out) in piece {
                let members = &groups[g];
                out.copy_from_slice(&src[members[0] as usize]);
                for &s in &members[1..] {
                    reduce_into(out, &src[s as usize], ty, op);
                }
            }
            cpu_now().saturating_sub(start)
        });
        let work = Work {
            phases: vec![pieces],
        };
        inter_dpu::host_work(work.on_cores(ctx.host_cores()), "collective host work");
        return Ok(());
    }
    // The AllReduce host step into a host-side window, then each group's vector from it.
    let words = (source.len / 8) as usize;
    let ops = plan::build(
        Exchange::AllReduce,
        ctx.cube,
        comm,
        source.len,
        Layout::default(),
        words,
        words,
    );
    let src = ctx.read_window(source)?;
    let mut dst = vec![0u64; src.len()];
    let m = Modulation {
        in_register: ctx.opts.in_register,
        cross_domain: ctx.opts.cross_domain,
        ty,
        op,
    };
    let work = line::run(&ops, &src, &mut dst, &m, rank_lines(words));
    // The reduced vectors to the host buffers (host memory: measured whole), by the rank of
    // each group's first member (whose reduced line is read), one piece per rank.
    let nr_ranks = ctx.ranks.len();
    let mut per_rank: Vec<Vec<(usize, &mut [u8])>> = (0..nr_ranks).map(|_| Vec::new()).collect();
    for (g, out) in host.iter_mut().enumerate() {
        let l = groups[g][0] as usize;
        per_rank[l / RANK_DPUS as usize].push((l, &mut **out));
    }
    let dst = &dst;
    let kernel = Kernel::best();
    let copy = line::in_parallel(per_rank, |outs| {
        let start = cpu_now();
        for (l, out) in outs {
            let (e, c) = (l / 8, l % 8);
            let lines = &dst[8 * e * words..8 * (e + 1) * words];
            line::chip_words(kernel, lines, c, &mut out[..8 * words]);
        }
        cpu_now().saturating_sub(start)
    });
    let work = work.then(Work { phases: vec![copy] });
    ctx.charge_host_step(u64::from(source.len), 0, &work);
    Ok(())
}

/// Gather to the host (`to_host`) or scatter from it: `host[e]` holds entangled group `e`'s
/// region word-interleaved (bytes `64w + 8c ..` = word `w` of its chip `c`).
pub(crate) fn gather_scatter(
    ctx: &Ctx<'_>,
    region: Region,
    host: &mut [&mut [u8]],
    to_host: bool,
) -> Result<()> {
    let words = (region.len / 8) as usize;
    if ctx.opts.baseline {
        // The SDK's transfers, each DPU's words interleaved by the host.
        // The program's buffers, allocated and touched before its loop.
        let mut bufs = if to_host {
            ctx.read(region, false)?
        } else {
            vec![vec![0xa5u8; region.len as usize]; ctx.dpus.len()]
        };
        // On the host's cores, one piece per rank (its entangled groups).
        let egs = (RANK_DPUS / CHIPS) as usize;
        let pieces: Vec<RankBuffers<'_, '_>> =
            bufs.chunks_mut(8 * egs).zip(host.chunks_mut(egs)).collect();
        let pieces = line::in_parallel(pieces, |(bufs, host)| {
            let start = cpu_now();
            for (e, h) in host.iter_mut().enumerate() {
                for c in 0..8 {
                    let b = &mut bufs[8 * e + c];
                    for w in 0..words {
                        let (hw, bw) = (64 * w + 8 * c, 8 * w);
                        if to_host {
                            h[hw..hw + 8].copy_from_slice(&b[bw..bw + 8]);
                        } else {
                            b[bw..bw + 8].copy_from_slice(&h[hw..hw + 8]);
                        }
                    }
                }
            }
            cpu_now().saturating_sub(start)
        });
        let work = Work {
            phases: vec![pieces],
        };
        inter_dpu::host_work(work.on_cores(ctx.host_cores()), "collective host work");
        if !to_host {
            ctx.write(region, bufs, false)?;
        }
        return Ok(());
    }
    // Lines straight between the windows and the host buffers: one transpose per line, one
    // piece per rank (its entangled groups).
    // The window stands for the ranks' memory (emulator work, touched before the timing).
    let mut win = if to_host {
        ctx.read_window(region)?
    } else {
        vec![u64::MAX; words * 8 * host.len()]
    };
    let egs = (RANK_DPUS / CHIPS) as usize;
    let pieces: Vec<(&mut [u64], &mut [&mut [u8]])> = win
        .chunks_mut(8 * words * egs)
        .zip(host.chunks_mut(egs))
        .collect();
    let kernel = Kernel::best();
    let pieces = line::in_parallel(pieces, |(win, host)| {
        let start = cpu_now();
        for (lines, h) in win.chunks_mut(8 * words).zip(host.iter_mut()) {
            line::transpose_lines(kernel, lines, &mut h[..64 * words], to_host);
        }
        cpu_now().saturating_sub(start)
    });
    let work = Work {
        phases: vec![pieces],
    };
    if to_host {
        ctx.charge_host_step(u64::from(region.len), 0, &work);
    } else {
        ctx.write_window(region, &win)?;
        ctx.charge_host_step(0, u64::from(region.len), &work);
    }
    Ok(())
}
