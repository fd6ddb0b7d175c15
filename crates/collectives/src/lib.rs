//! Collective communication between DPUs, compatible with PID-Comm (ISCA'24): a hypercube
//! model of the DPUs, eight primitives, and the paper's three techniques modeled on the
//! emulated machine — PIM-assisted reordering (relocation programs run on the DPUs,
//! `dpu/relocate.c`), in-register modulation and cross-domain modulation (the host step a
//! 64-byte bus line at a time, [`line`]) — beside a host-mediated baseline behind the same
//! calls. libdpu exports them as `<pidcomm.h>`; `docs/collectives.md` is the user's guide.
//!
//! Every call is one exchange on the virtual timeline (`openpim_runtime::inter_dpu`): its time
//! is inter-DPU time, with its primitive, axes, bytes and path in the run report.

mod choice;
pub mod cube;
pub mod distributed;
pub mod elem;
mod engine;
pub mod error;
pub mod line;
pub mod plan;
pub mod simd;

use openpim_runtime::DpuSet;

pub use choice::Prediction;
pub use cube::Hypercube;
pub use elem::{ElemType, ReduceOp};
use engine::{Ctx, ExchangeCall, Region};
pub use error::{Error, Result};
use plan::Exchange;

/// Whether the optimized path runs PIM-assisted reordering (the relocation program) where an
/// exchange has one to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reordering {
    /// Per call, where the cost model predicts the call faster with it (`choice`): the
    /// default, and a departure from PID-Comm, which always runs it.
    Auto,
    /// Always (PID-Comm's behaviour).
    Always,
    /// Never (the ablation's `-pr`).
    Never,
}

/// Which path a call takes, and which techniques the optimized path uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The host-mediated baseline instead of the optimized path.
    pub baseline: bool,
    /// PIM-assisted reordering (relocation programs).
    pub reordering: Reordering,
    /// In-register modulation (no staging in host memory).
    pub in_register: bool,
    /// Cross-domain modulation (rotations instead of byte transposes).
    pub cross_domain: bool,
}

/// Environment variable: `optimized` (default) or `baseline`.
pub const PATH_ENV: &str = "OPENPIM_COLLECTIVES_PATH";
/// Environment variable: techniques switched off, comma-separated among `pr`, `im`, `cm`
/// (`pr` is [`PR_ENV`]`=never`).
pub const OFF_ENV: &str = "OPENPIM_COLLECTIVES_OFF";
/// Environment variable: `auto` (default), `always` or `never` — whether the optimized path
/// runs PIM-assisted reordering ([`Reordering`]).
pub const PR_ENV: &str = "OPENPIM_COLLECTIVES_PR";

impl Default for Options {
    fn default() -> Options {
        Options {
            baseline: false,
            reordering: Reordering::Auto,
            in_register: true,
            cross_domain: true,
        }
    }
}

impl Options {
    /// From [`PATH_ENV`], [`PR_ENV`] and [`OFF_ENV`] (read at each call: a program can
    /// switch).
    pub fn from_env() -> Result<Options> {
        let mut o = Options::default();
        match std::env::var(PATH_ENV).ok().as_deref() {
            None | Some("") | Some("optimized") => {}
            Some("baseline") => o.baseline = true,
            Some(v) => {
                return Err(Error::invalid(
                    PATH_ENV,
                    format!("\"{v}\": optimized or baseline"),
                ))
            }
        }
        let pr = std::env::var(PR_ENV).ok();
        match pr.as_deref() {
            None | Some("") | Some("auto") => {}
            Some("always") => o.reordering = Reordering::Always,
            Some("never") => o.reordering = Reordering::Never,
            Some(v) => {
                return Err(Error::invalid(
                    PR_ENV,
                    format!("\"{v}\": auto (the cost model chooses per call), always or never"),
                ))
            }
        }
        if let Ok(off) = std::env::var(OFF_ENV) {
            for t in off.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                match t {
                    "pr" if o.reordering == Reordering::Always => {
                        return Err(Error::invalid(
                            OFF_ENV,
                            format!("\"pr\" switches reordering off, but {PR_ENV} is \"always\": set one of them"),
                        ))
                    }
                    "pr" => o.reordering = Reordering::Never,
                    "im" => o.in_register = false,
                    "cm" => o.cross_domain = false,
                    _ => {
                        return Err(Error::invalid(
                            OFF_ENV,
                            format!("\"{t}\": the techniques are pr, im and cm (comma-separated)"),
                        ))
                    }
                }
            }
        }
        Ok(o)
    }

    /// The path's name in reports: `baseline`, `optimized`, or `optimized -pr -cm` ...
    /// `reorder`: whether the call runs the relocation program, where it has one to run;
    /// a choice of the cost model ends in ` (auto)` (`optimized -pr (auto)`).
    pub fn path_name(&self, reorder: Option<bool>) -> String {
        if self.baseline {
            return "baseline".into();
        }
        let mut s = String::from("optimized");
        let pr = match reorder {
            Some(r) => r,
            None => self.reordering != Reordering::Never,
        };
        for (on, name) in [
            (pr, " -pr"),
            (self.in_register, " -im"),
            (self.cross_domain, " -cm"),
        ] {
            if !on {
                s.push_str(name);
            }
        }
        if reorder.is_some() && self.reordering == Reordering::Auto {
            s.push_str(" (auto)");
        }
        s
    }
}

fn aligned(param: &'static str, v: u32) -> Result<()> {
    if !v.is_multiple_of(8) {
        return Err(Error::invalid(
            param,
            format!("{v}: MRAM offsets and sizes are multiples of 8 bytes"),
        ));
    }
    Ok(())
}

/// The arguments of an exchange primitive as the C interface gives them.
struct Args<'a> {
    comm: &'a str,
    total: u32,
    start: u32,
    target: u32,
    buffer: u32,
    size: u32,
    reduce_type: u32,
}

/// Checks an exchange's arguments against the set and the hypercube; its call.
fn checked_call(
    ctx: &Ctx<'_>,
    cube: &Hypercube,
    x: Exchange,
    a: &Args<'_>,
) -> Result<ExchangeCall> {
    let c = cube.parse_comm(a.comm)?;
    let ty = ElemType::from_size(a.size)?;
    let op = ReduceOp::from_code(a.reduce_type)?;
    let n = cube.group_size(c);
    for (p, v) in [
        ("start_offset", a.start),
        ("target_offset", a.target),
        ("buffer_offset", a.buffer),
    ] {
        aligned(p, v)?;
    }
    let total = a.total;
    let unit = if x == Exchange::AllReduce { 8 } else { 8 * n };
    if total == 0 || !total.is_multiple_of(unit) {
        let why = if unit == 8 {
            "whole 64-bit words".to_string()
        } else {
            format!("{n} chunks, one per DPU of a group, of whole 64-bit words")
        };
        return Err(Error::invalid(
            "total_data_size",
            format!("{total}: must be a non-zero multiple of {unit} bytes ({why})"),
        ));
    }
    let chunk = total / n;
    let src_len = if x == Exchange::AllGather {
        chunk
    } else {
        total
    };
    let dst_len = if x == Exchange::ReduceScatter {
        chunk
    } else {
        total
    };
    let scratch_at = a
        .start
        .checked_add(a.buffer)
        .ok_or_else(|| Error::invalid("buffer_offset", "start_offset + buffer_offset overflows"))?;
    let call = ExchangeCall {
        x,
        comm: c,
        total,
        source: Region {
            at: a.start,
            len: src_len,
        },
        scratch: Region {
            at: scratch_at,
            len: total,
        },
        target: Region {
            at: a.target,
            len: dst_len,
        },
        ty,
        op,
    };
    ctx.check_regions(&[
        ("start_offset", call.source),
        ("target_offset", call.target),
        ("buffer_offset", call.scratch),
    ])?;
    Ok(call)
}

/// The primitives that exchange data between DPUs, with their checks.
fn exchange_call(
    set: &DpuSet,
    cube: &Hypercube,
    name: &str,
    x: Exchange,
    a: &Args<'_>,
) -> Result<()> {
    let opts = Options::from_env()?;
    let ctx = Ctx::new(set, cube, opts)?;
    let call = checked_call(&ctx, cube, x, a)?;
    let bytes = u64::from(a.total) * u64::from(cube.nr_dpus());
    // Links the profile describes carry what they cover (the library's path; the baseline
    // is how a program exchanges data without the library: through the host).
    if let Some(links) = ctx.links_for(call.comm).filter(|_| !opts.baseline) {
        return engine::exchange(name, a.comm, bytes, engine::links_path(&links), || {
            engine::over_links(&ctx, &call, &links)
        });
    }
    // Decided before the call, from the model (`choice`): the record names the path taken.
    let reorder = if opts.baseline {
        None
    } else {
        ctx.reorders(&call)?
    };
    engine::exchange(name, a.comm, bytes, opts.path_name(reorder), || {
        if opts.baseline {
            engine::baseline(&ctx, &call)
        } else {
            engine::optimized(&ctx, &call, reorder.unwrap_or(false))
        }
    })
}

/// What the cost model predicts for an exchange on the optimized path with the switches of
/// the environment (`in_register`, `cross_domain`): `None` where the exchange has no
/// relocation program to run (AllReduce, or no x axis with whole entangled groups). The same
/// checks as the call; nothing moves. `auto` runs the relocation program exactly when
/// [`Prediction::reorder`] says so.
#[allow(clippy::too_many_arguments)]
pub fn predict_reordering(
    set: &DpuSet,
    cube: &Hypercube,
    x: Exchange,
    comm: &str,
    total: u32,
    start: u32,
    target: u32,
    buffer: u32,
    size: u32,
    reduce_type: u32,
) -> Result<Option<Prediction>> {
    let opts = Options::from_env()?;
    let ctx = Ctx::new(set, cube, opts)?;
    let a = Args {
        comm,
        total,
        start,
        target,
        buffer,
        size,
        reduce_type,
    };
    let call = checked_call(&ctx, cube, x, &a)?;
    let layout = plan::reordering(x, cube, call.comm);
    if layout == plan::Layout::default() {
        return Ok(None);
    }
    ctx.predict(&call, layout).map(Some)
}

/// The bus time of an optimized host step that reads `read_per_dpu` and writes
/// `written_per_dpu` bytes on every DPU of the set (the line rates: "Paths and their costs"
/// in docs/collectives.md): what the step is charged when its measured host work is shorter.
pub fn host_step_bus_ns(
    set: &DpuSet,
    cube: &Hypercube,
    read_per_dpu: u64,
    written_per_dpu: u64,
) -> Result<u64> {
    let ctx = Ctx::new(set, cube, Options::default())?;
    Ok(ctx.host_step_bus_ns(read_per_dpu, written_per_dpu))
}

/// AllReduce: every member's `[target, +total)` = the reduction of its group's
/// `[start, +total)`.
#[allow(clippy::too_many_arguments)]
pub fn all_reduce(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    target: u32,
    buffer: u32,
    size: u32,
    reduce_type: u32,
) -> Result<()> {
    exchange_call(
        set,
        cube,
        "all_reduce",
        Exchange::AllReduce,
        &Args {
            comm,
            total,
            start,
            target,
            buffer,
            size,
            reduce_type,
        },
    )
}

/// ReduceScatter (sum): member r's `[target, +total/N)` = the sum of chunk r of its group.
#[allow(clippy::too_many_arguments)]
pub fn reduce_scatter(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    target: u32,
    buffer: u32,
    size: u32,
) -> Result<()> {
    exchange_call(
        set,
        cube,
        "reduce_scatter",
        Exchange::ReduceScatter,
        &Args {
            comm,
            total,
            start,
            target,
            buffer,
            size,
            reduce_type: 0,
        },
    )
}

/// AlltoAll: chunk j of member r's target = chunk r of member j's source.
pub fn alltoall(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    target: u32,
    buffer: u32,
) -> Result<()> {
    exchange_call(
        set,
        cube,
        "alltoall",
        Exchange::AlltoAll,
        &Args {
            comm,
            total,
            start,
            target,
            buffer,
            size: 1,
            reduce_type: 0,
        },
    )
}

/// AllGather: every member's target = its group's `total/N`-byte sources, by rank.
pub fn allgather(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    target: u32,
    buffer: u32,
) -> Result<()> {
    exchange_call(
        set,
        cube,
        "allgather",
        Exchange::AllGather,
        &Args {
            comm,
            total,
            start,
            target,
            buffer,
            size: 1,
            reduce_type: 0,
        },
    )
}

fn host_buffers(param: &'static str, host: &[&mut [u8]], count: usize, len: usize) -> Result<()> {
    if host.len() != count || host.iter().any(|h| h.len() != len) {
        return Err(Error::invalid(
            param,
            format!("{count} host buffers of {len} bytes are needed"),
        ));
    }
    Ok(())
}

/// Reduce (sum) to the host: `host[g]` = group g's reduced `total` bytes, natural order
/// (groups in the order of their coordinates on the axes not in `comm`).
#[allow(clippy::too_many_arguments)]
pub fn reduce(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    buffer: u32,
    size: u32,
    host: &mut [&mut [u8]],
) -> Result<()> {
    let opts = Options::from_env()?;
    let ctx = Ctx::new(set, cube, opts)?;
    let c = cube.parse_comm(comm)?;
    let ty = ElemType::from_size(size)?;
    aligned("start_offset", start)?;
    aligned("buffer_offset", buffer)?;
    if total == 0 {
        return Err(Error::invalid("total_data_size", "0: nothing to reduce"));
    }
    aligned("total_data_size", total)?;
    let source = Region {
        at: start,
        len: total,
    };
    ctx.check_regions(&[("start_offset", source)])?;
    let groups = (cube.nr_dpus() / cube.group_size(c)) as usize;
    host_buffers("host_buffer", host, groups, total as usize)?;
    let bytes = u64::from(total) * u64::from(cube.nr_dpus());
    engine::exchange("reduce", comm, bytes, opts.path_name(None), || {
        engine::reduce_to_host(&ctx, c, source, ty, ReduceOp::Sum, host)
    })
}

#[allow(clippy::too_many_arguments)]
fn gather_scatter(
    set: &DpuSet,
    cube: &Hypercube,
    name: &str,
    comm: &str,
    total: u32,
    start: u32,
    host: &mut [&mut [u8]],
    to_host: bool,
) -> Result<()> {
    let opts = Options::from_env()?;
    let ctx = Ctx::new(set, cube, opts)?;
    let c = cube.parse_comm(comm)?;
    if !to_host && !c[0] {
        return Err(Error::invalid(
            "comm",
            format!("\"{comm}\": scatter needs the x axis in the communicator (PID-Comm's layout is not defined otherwise)"),
        ));
    }
    aligned("start_offset", start)?;
    if total == 0 {
        return Err(Error::invalid("total_data_size", "0: nothing to move"));
    }
    aligned("total_data_size", total)?;
    let region = Region {
        at: start,
        len: total,
    };
    ctx.check_regions(&[("start_offset", region)])?;
    host_buffers(
        "host_buffer",
        host,
        (cube.nr_dpus() / 8) as usize,
        8 * total as usize,
    )?;
    let bytes = u64::from(total) * u64::from(cube.nr_dpus());
    engine::exchange(name, comm, bytes, opts.path_name(None), || {
        engine::gather_scatter(&ctx, region, host, to_host)
    })
}

/// Gather to the host: `host[e]` (one per entangled group of 8 DPUs, `8·total` bytes) holds
/// their `[start, +total)` word-interleaved: bytes `64w + 8c ..` = word w of DPU `8e + c`.
pub fn gather(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    host: &mut [&mut [u8]],
) -> Result<()> {
    gather_scatter(set, cube, "gather", comm, total, start, host, true)
}

/// Scatter from the host: the mirror of [`gather`].
pub fn scatter(
    set: &DpuSet,
    cube: &Hypercube,
    comm: &str,
    total: u32,
    start: u32,
    host: &mut [&mut [u8]],
) -> Result<()> {
    gather_scatter(set, cube, "scatter", comm, total, start, host, false)
}

/// Broadcast: every DPU's `[target, +len)` = `data` (the SDK's broadcast on both paths).
pub fn broadcast(set: &DpuSet, cube: &Hypercube, target: u32, data: &[u8]) -> Result<()> {
    let opts = Options::from_env()?;
    let ctx = Ctx::new(set, cube, opts)?;
    aligned("target_offset", target)?;
    let len = u32::try_from(data.len())
        .map_err(|_| Error::invalid("total_data_size", "larger than MRAM"))?;
    if len == 0 {
        return Err(Error::invalid("total_data_size", "0: nothing to broadcast"));
    }
    aligned("total_data_size", len)?;
    let region = Region { at: target, len };
    ctx.check_regions(&[("target_offset", region)])?;
    let bytes = u64::from(len) * u64::from(cube.nr_dpus());
    engine::exchange("broadcast", "", bytes, "sdk broadcast".into(), || {
        ctx.broadcast(region, data)
    })
}
