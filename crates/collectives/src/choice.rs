//! Whether an exchange runs PIM-assisted reordering: the per-call choice of the optimized path,
//! made before the call by the library's cost model (as collective libraries choose an
//! algorithm per message size), never by running the call both ways.
//!
//! The relocation program makes the host step uniform (every chip of a destination line takes
//! the same source line with the same rotation) at a fixed price. With it, the call costs
//!
//! ```text
//!   relocation = load of the relocation program + per run (argument transfer + launch)
//!                + reload of the user's program       (as the runtime charges them)
//!   with       = relocation + max(bus, host work with the uniform plan)
//!   without    =              max(bus, host work with the per-chip gathers)
//! ```
//!
//! and the library runs it when `with < without`. The bus time of the host step is the same
//! both ways (the same lines are read and written). What is predicted and how:
//!
//! - loads, argument transfers and launches: the runtime's own charges
//!   (`timeline::load_ns`, `BusModel::rank_in_call_ns`, `timeline::launch_ns`);
//! - the relocation kernel's cycles: a deterministic function of its arguments (chunk size
//!   and count; a DPU's position in its entangled group changes its divisions' operands). The
//!   engine runs the relocation program once per argument shape on a private DPU memory (not
//!   the user's DPUs, not on the timeline), for each of the 8 positions; the launch is
//!   charged its slowest DPU, so the prediction is the largest of the 8 — the cycles the
//!   launch is then charged;
//! - the host work: measured host work is what the step is charged, so the model prices it
//!   with this process's own measurement of the line kernels, made once per kind of call
//!   (exchange, element type, operator, switches, with or without reordering, chunk length up
//!   to 64 lines) on a calibration plan (a 32 x 2 hypercube, x axis, random lines) and not
//!   charged: host ns per unit of work ([`crate::line::Body::work_units`]). The call's work
//!   is its plan's units per destination rank at that price, placed on the host's cores as
//!   the step's measured pieces are.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use openpim_runtime::machine::{map, CallShape, Direction, HardwareProfile, XferKind};
use openpim_runtime::{timeline, Program};

use crate::cube::{Hypercube, CHIPS, RANK_DPUS};
use crate::elem::{ElemType, ReduceOp};
use crate::error::{Error, Result};
use crate::line::{self, Modulation, Op, Work};
use crate::plan::{self, Exchange, Layout};

/// Bytes of the relocation program's argument block (`relocate_args`: 7 words).
pub(crate) const RELOCATE_ARGS_BYTES: usize = 28;

/// What the model predicts for one exchange that can run the relocation program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// The loads: the relocation program's and the reload of the user's program, ns.
    pub load_ns: u64,
    /// The argument transfers of the runs (their modeled bus time), ns.
    pub args_ns: u64,
    /// The launches of the runs (the kernel's cycles and the launch's host-side cost), ns.
    pub launch_ns: u64,
    /// The kernel's cycles for each run (its slowest DPU).
    pub kernel_cycles: Vec<u64>,
    /// The host step's bus time (the same with and without reordering), ns.
    pub bus_ns: u64,
    /// The host step's estimated host work on the host's cores, with the relocation program
    /// (uniform lines) and without (per-chip gathers), ns.
    pub host_with_ns: u64,
    pub host_without_ns: u64,
}

impl Prediction {
    /// The relocation program's fixed costs: loads, argument transfers, launches, ns.
    pub fn relocation_ns(&self) -> u64 {
        self.load_ns + self.args_ns + self.launch_ns
    }

    /// The call's modeled time with the relocation program, ns.
    pub fn with_ns(&self) -> u64 {
        self.relocation_ns() + self.bus_ns.max(self.host_with_ns)
    }

    /// The call's modeled time without it, ns.
    pub fn without_ns(&self) -> u64 {
        self.bus_ns.max(self.host_without_ns)
    }

    /// Whether the relocation program pays: the call is predicted faster with it.
    pub fn reorder(&self) -> bool {
        self.with_ns() < self.without_ns()
    }
}

/// What the model needs to know of the machine and the call.
pub(crate) struct Inputs<'a> {
    pub hw: &'a HardwareProfile,
    pub cube: &'a Hypercube,
    /// DPUs of each rank of the set.
    pub rank_dpus: Vec<u32>,
    pub user_program: &'a Program,
    pub relocation: &'a Arc<Program>,
    pub x: Exchange,
    pub comm: crate::cube::Comm,
    pub total: u32,
    /// Bytes per DPU the host step reads and writes.
    pub read: u32,
    pub written: u32,
    pub modulation: Modulation,
    /// The host step's bus time, ns (`engine::Ctx::host_step_bus_ns`).
    pub bus_ns: u64,
}

/// The prediction for a call whose layout with reordering is `layout` (not the default).
pub(crate) fn predict(i: &Inputs<'_>, layout: Layout) -> Result<Prediction> {
    let n = i.cube.group_size(i.comm);
    let chunk = i.x.chunk_bytes(i.total, n);
    let nr_chunks = i.total / chunk;
    let ranks = i.rank_dpus.len() as u32;
    let nr_dpus: u32 = i.rank_dpus.iter().sum();
    // The runs: before the host step (rotate) and after it (unrotate).
    let mut modes = Vec::new();
    if layout.rotated_source {
        modes.push(1);
    }
    if layout.rotated_dest {
        modes.push(2);
    }
    let bus = i.hw.bus_model();
    let slowest = |f: &dyn Fn(u32) -> u64| i.rank_dpus.iter().map(|d| f(*d)).max().unwrap_or(0);
    let mut load_ns = slowest(&|d| timeline::load_ns(i.hw, i.relocation.image_bytes(), d));
    let (mut args_ns, mut launch_ns) = (0, 0);
    let args_call = CallShape {
        ranks,
        bytes: (RELOCATE_ARGS_BYTES as u64) * u64::from(nr_dpus),
    };
    let mut kernel_cycles = Vec::new();
    for mode in modes {
        let cycles = relocation_cycles(i.hw, i.relocation, chunk, nr_chunks, mode)?;
        kernel_cycles.push(cycles);
        args_ns += slowest(&|d| {
            bus.rank_in_call_ns(
                XferKind::Parallel,
                Direction::ToDpu,
                RELOCATE_ARGS_BYTES as u64,
                d,
                args_call,
            )
        });
        launch_ns += timeline::launch_ns(i.hw, cycles, ranks);
    }
    load_ns += slowest(&|d| timeline::load_ns(i.hw, i.user_program.image_bytes(), d));
    let cores = i.hw.host_spec().cores;
    let host = |layout: Layout| -> u64 {
        let rate = host_rate(i.x, i.modulation, layout, chunk / 8);
        let ops = plan::build(
            i.x,
            i.cube,
            i.comm,
            i.total,
            layout,
            (i.read / 8) as usize,
            (i.written / 8) as usize,
        );
        // A rank's window holds its entangled groups' lines of the destination.
        let rank_lines = (RANK_DPUS / CHIPS) as usize * (i.written / 8) as usize;
        let src_lines = u64::from(i.read / 8) * u64::from(i.cube.nr_dpus() / CHIPS);
        estimate(&ops, &rate, rank_lines, ranks, src_lines).on_cores(cores)
    };
    Ok(Prediction {
        load_ns,
        args_ns,
        launch_ns,
        kernel_cycles,
        bus_ns: i.bus_ns,
        host_with_ns: host(layout),
        host_without_ns: host(Layout::default()),
    })
}

/// The host price of a kind of call: ns per unit of work of the host step
/// ([`line::Body::work_units`]), and, without in-register modulation, ns per source line of
/// the staging in host memory.
#[derive(Debug, Clone, Copy, PartialEq)]
struct HostRate {
    ns_per_unit: f64,
    stage_ns_per_line: f64,
}

/// The predicted measured work of a plan: its units per destination rank (a rank's window
/// holds `rank_lines` lines; an op given to several ranks is computed by each, as
/// [`line::run`] does), and the staging of the source lines, in pieces as [`line::run`] cuts
/// them.
fn estimate(ops: &[Op], rate: &HostRate, rank_lines: usize, ranks: u32, src_lines: u64) -> Work {
    let mut units = vec![0u64; ranks as usize];
    for op in ops {
        let mut seen: Vec<usize> = Vec::new();
        for d in &op.dst {
            let r = d / rank_lines.max(1);
            if !seen.contains(&r) {
                seen.push(r);
                if let Some(u) = units.get_mut(r) {
                    *u += op.words as u64 * op.body.work_units();
                }
            }
        }
    }
    let compute: Vec<u64> = units
        .iter()
        .map(|u| (*u as f64 * rate.ns_per_unit).round() as u64)
        .collect();
    if rate.stage_ns_per_line == 0.0 {
        return Work {
            phases: vec![compute],
        };
    }
    // The source lines of the set, in one piece per rank.
    let per_piece = src_lines.div_ceil(u64::from(ranks.max(1)));
    let staging = vec![(per_piece as f64 * rate.stage_ns_per_line).round() as u64; ranks as usize];
    Work {
        phases: vec![staging, compute],
    }
}

/// The key of a host price: the exchange, the modulation, whether reordered, chunk lines
/// (up to 64: longer chunks cost the same per line).
type RateKey = (Exchange, ElemType, ReduceOp, bool, bool, bool, u32);

/// Chunk lines beyond which the price per line no longer changes (the per-op overheads are
/// spread over enough lines); calibrations of longer chunks use this many.
const RATE_CHUNK_LINES: u32 = 64;

/// Destination lines a calibration measures at least (in repeats of its plan).
const CALIBRATION_LINES: usize = 16_384;

/// The host price of a kind of call, measured once per process (not charged).
fn host_rate(x: Exchange, m: Modulation, layout: Layout, chunk_lines: u32) -> HostRate {
    static RATES: OnceLock<Mutex<HashMap<RateKey, HostRate>>> = OnceLock::new();
    let reordered = layout != Layout::default();
    let lines = chunk_lines.clamp(1, RATE_CHUNK_LINES);
    let key = (
        x,
        m.ty,
        m.op,
        m.in_register,
        m.cross_domain,
        reordered,
        lines,
    );
    let rates = RATES.get_or_init(Default::default);
    if let Some(r) = rates.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return *r;
    }
    let r = calibrate(x, m, reordered, lines);
    rates
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, r);
    r
}

/// Measures the host step of a one-rank calibration (a 32 x 2 hypercube, the x axis, chunks
/// of `chunk_lines` lines, random lines): the median of 5 measurements, each of at least
/// [`CALIBRATION_LINES`] destination lines.
fn calibrate(x: Exchange, m: Modulation, reordered: bool, chunk_lines: u32) -> HostRate {
    let cube = Hypercube::new(&[32, 2, 1], 64, true).expect("a valid calibration shape");
    let comm = [true, false, false];
    let n = cube.group_size(comm);
    let total = n * 8 * chunk_lines;
    let chunk = x.chunk_bytes(total, n);
    let read = if x == Exchange::AllGather {
        chunk
    } else {
        total
    };
    let written = if x == Exchange::ReduceScatter {
        chunk
    } else {
        total
    };
    let layout = if reordered {
        plan::reordering(x, &cube, comm)
    } else {
        Layout::default()
    };
    let (rw, ww) = ((read / 8) as usize, (written / 8) as usize);
    let ops = plan::build(x, &cube, comm, total, layout, rw, ww);
    let egs = (cube.nr_dpus() / CHIPS) as usize;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let src: Vec<u64> = (0..8 * rw * egs)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        })
        .collect();
    let mut dst = vec![0u64; 8 * ww * egs];
    let units: u64 = ops
        .iter()
        .map(|o| o.words as u64 * o.body.work_units())
        .sum();
    let dest_lines = ww * egs;
    let repeats = CALIBRATION_LINES.div_ceil(dest_lines.max(1));
    let mut compute = Vec::new();
    let mut staging = Vec::new();
    for _ in 0..5 {
        let (mut c, mut s) = (0u64, 0u64);
        for _ in 0..repeats {
            let w = line::run(&ops, &src, &mut dst, &m, ww * egs);
            let phases = &w.phases;
            c += phases.last().map_or(0, |p| p.iter().sum());
            if phases.len() > 1 {
                s += phases[0].iter().sum::<u64>();
            }
        }
        compute.push(c);
        staging.push(s);
    }
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64
    };
    let per = (repeats as u64).max(1) as f64;
    HostRate {
        ns_per_unit: median(&mut compute) / per / units.max(1) as f64,
        stage_ns_per_line: if m.in_register {
            0.0
        } else {
            median(&mut staging) / per / (rw * egs).max(1) as f64
        },
    }
}

/// The relocation kernel's cycles for `nr_chunks` chunks of `chunk` bytes in `mode`: the
/// engine runs the relocation program on a private DPU memory (not on the timeline), once per
/// position in the entangled group; the slowest. Cached per argument shape and timing.
pub(crate) fn relocation_cycles(
    hw: &HardwareProfile,
    program: &Program,
    chunk: u32,
    nr_chunks: u32,
    mode: u32,
) -> Result<u64> {
    type Key = (u32, u32, u32, String);
    static CYCLES: OnceLock<Mutex<HashMap<Key, u64>>> = OnceLock::new();
    let timing = hw.timing(None);
    let key = (chunk, nr_chunks, mode, format!("{timing:?}"));
    let cache = CYCLES.get_or_init(Default::default);
    if let Some(c) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(*c);
    }
    let args = program.symbol(crate::engine::RELOCATE_ARGS)?;
    let total = chunk as usize * nr_chunks as usize;
    let fail = |why: String| Error::Relocation {
        path: program.origin().unwrap_or("relocate").to_string(),
        why,
    };
    let mut slowest = 0;
    for chip in 0..CHIPS {
        let mut wram = vec![0u8; map::WRAM_SIZE as usize];
        let image = program.wram_image();
        wram[..image.len()].copy_from_slice(image);
        if let Some(at) = program.clocks_per_sec_address() {
            let hz = hw.dpu.frequency_mhz.saturating_mul(1_000_000);
            wram[at as usize..at as usize + 4].copy_from_slice(&hz.to_le_bytes());
        }
        let words = [
            map::MRAM_BASE,
            map::MRAM_BASE + total as u32,
            chunk,
            nr_chunks,
            mode,
            chip,
            CHIPS,
        ];
        for (k, w) in words.iter().enumerate() {
            let at = args.address as usize + 4 * k;
            wram[at..at + 4].copy_from_slice(&w.to_le_bytes());
        }
        let mut mram = vec![0u8; 2 * total];
        let out = openpim_engine::run(
            program.decoded(),
            program.boot_info(),
            openpim_engine::DpuMemory {
                wram: &mut wram,
                mram: &mut mram,
            },
            &timing,
        );
        if let Some(f) = out.fault {
            return Err(fail(format!(
                "the cost model's run of it faulted: {}",
                f.describe(program.decoded())
            )));
        }
        slowest = slowest.max(out.cycles);
    }
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, slowest);
    Ok(slowest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(relocation: u64, bus: u64, with: u64, without: u64) -> Prediction {
        Prediction {
            load_ns: relocation,
            args_ns: 0,
            launch_ns: 0,
            kernel_cycles: vec![],
            bus_ns: bus,
            host_with_ns: with,
            host_without_ns: without,
        }
    }

    #[test]
    fn reordering_pays_only_what_it_saves_above_the_bus() {
        // Host-bound without it, and the saving is more than its cost: reorder.
        assert!(p(100, 1_000, 900, 2_000).reorder());
        // The same saving, a dearer relocation: not.
        assert!(!p(1_500, 1_000, 900, 2_000).reorder());
        // Bus-bound both ways: nothing to save, whatever the host work.
        assert!(!p(1, 1_000, 10, 999).reorder());
        // Only the part above the bus counts: 1,200 - 1,000 saved, for 300.
        assert!(!p(300, 1_000, 100, 1_200).reorder());
        assert!(p(150, 1_000, 100, 1_200).reorder());
        assert_eq!(p(150, 1_000, 100, 1_200).with_ns(), 1_150);
        assert_eq!(p(150, 1_000, 100, 1_200).without_ns(), 1_200);
    }

    #[test]
    fn work_is_the_plans_units_per_destination_rank() {
        use crate::line::Body;
        let ops = vec![
            Op {
                dst: vec![0, 16, 40],
                words: 4,
                body: Body::Copy { src: 0, rot: 1 },
            },
            Op {
                dst: vec![36],
                words: 2,
                body: Body::Reduce {
                    terms: vec![(0, 1), (8, 2), (16, 4)],
                },
            },
        ];
        let rate = HostRate {
            ns_per_unit: 10.0,
            stage_ns_per_line: 0.0,
        };
        // Rank 0 holds lines 0..32 (the copy once), rank 1 the copy and the reduction.
        let w = estimate(&ops, &rate, 32, 2, 64);
        assert_eq!(w.phases, vec![vec![40, 40 + 60]]);
    }
}
