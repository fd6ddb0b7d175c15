//! bench/collectives: each primitive at 1, 4 and 16 ranks, per-DPU sizes from 2 KiB to 2 MiB
//! (at most 256 MiB of data per call: 2 MiB at 1 rank, 1 MiB at 4, 256 KiB at 16),
//! int8 and int32, along x of a (32, R·2, 1) hypercube: the virtual time of one call on the
//! optimized path (reordering chosen per call by the cost model: `auto`) and on the baseline
//! (from the run's inter-DPU records), the speed-up, the wall time of both, whether the call
//! ran the relocation program; then the ablation (reordering never and always — PID-Comm's
//! behaviour —, in-register and cross-domain modulation off) and the geomeans.
//!
//!     cargo run --release -p openpim-collectives --example bench [-- --quick] [--calls FILE]
//!
//! `--calls FILE` writes one line per collective call, in call order (primitive, ranks, bytes
//! per DPU, type, path, modulation off, reordering), so that a reader of the run report
//! (`OPENPIM_REPORT=FILE.json`, written at the end) can name each of its `inter_dpu[]` records:
//! `openpim study collectives` takes its times from there.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::Instant;

use openpim_collectives::plan::Exchange;
use openpim_collectives::{self as coll, Hypercube, OFF_ENV, PATH_ENV, PR_ENV};
use openpim_runtime::{alloc_ranks, inter_dpu, timeline, DpuSet, SymbolRef, MRAM_HEAP_SYMBOL};

fn user_program() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = std::env::temp_dir().join(format!("openpim-coll-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = dir.join("user.c");
    let out = dir.join("user.dpu");
    std::fs::write(&c, "int main(void) { return 0; }\n").unwrap();
    let ok = Command::new(root.join("sdk/bin/dpu-upmem-dpurte-clang"))
        .args(["-DNR_TASKLETS=1", "-O2", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap()
        .success();
    assert!(ok, "the DPU compiler failed");
    out
}

const PRIMS: [&str; 8] = [
    "all_reduce",
    "reduce_scatter",
    "alltoall",
    "allgather",
    "reduce",
    "gather",
    "scatter",
    "broadcast",
];

/// Bytes per DPU the optimized host step of a primitive reads and writes (x axis, groups of
/// `n`).
fn step_bytes(prim: &str, size: u32, n: u32) -> (u64, u64) {
    let (t, c) = (u64::from(size), u64::from(size / n));
    match prim {
        "reduce_scatter" => (t, c),
        "allgather" => (c, t),
        "reduce" | "gather" => (t, 0),
        "scatter" => (0, t),
        _ => (t, t),
    }
}

/// The optimized call's host step against its bus time: the call less the relocation
/// program's modeled costs when it ran, over the step's bus time (1.00: bus-bound; the
/// relocation's argument transfer may be charged a few microseconds more than modeled).
#[allow(clippy::too_many_arguments)]
fn step_over_bus(
    set: &DpuSet,
    cube: &Hypercube,
    prim: &str,
    size: u32,
    elem: u32,
    optimized_ns: u64,
    path: &str,
) -> f64 {
    let (read, written) = step_bytes(prim, size, cube.axes[0]);
    let bus = coll::host_step_bus_ns(set, cube, read, written).unwrap();
    let mut step = optimized_ns;
    if reordered(path) == "yes" {
        std::env::remove_var(OFF_ENV);
        let x = match prim {
            "reduce_scatter" => Exchange::ReduceScatter,
            "alltoall" => Exchange::AlltoAll,
            _ => Exchange::AllGather,
        };
        let buffer = 2 * size + 4096;
        let p = coll::predict_reordering(set, cube, x, "100", size, 0, size, buffer, elem, 0)
            .unwrap()
            .unwrap();
        step = step.saturating_sub(p.relocation_ns());
    }
    step as f64 / bus as f64
}

/// The calls made so far, one CSV line each (for `--calls`).
static CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// One call: (virtual ns, wall ns, the path of its record).
#[allow(clippy::too_many_arguments)]
fn run(
    set: &DpuSet,
    cube: &Hypercube,
    prim: &str,
    size: u32,
    elem: u32,
    path: &str,
    off: &str,
    pr: &str,
) -> (u64, u64, String) {
    std::env::set_var(PATH_ENV, path);
    std::env::set_var(OFF_ENV, off);
    std::env::set_var(PR_ENV, pr);
    let n = cube.nr_dpus();
    let groups = n / cube.axes[0];
    let buffer = 2 * size + 4096;
    let mut host: Vec<Vec<u8>> = Vec::new();
    let mut hb = |count: u32, len: u32| {
        host = vec![vec![1u8; len as usize]; count as usize];
    };
    match prim {
        "reduce" => hb(groups, size),
        "gather" | "scatter" => hb(n / 8, 8 * size),
        _ => {}
    }
    let mut refs: Vec<&mut [u8]> = host.iter_mut().map(|v| v.as_mut_slice()).collect();
    let data = vec![3u8; size as usize];
    let before = timeline::with_state(|s| s.inter_dpu.entries.len());
    let t = Instant::now();
    let r = match prim {
        "all_reduce" => coll::all_reduce(set, cube, "100", size, 0, 0, buffer, elem, 0),
        "reduce_scatter" => coll::reduce_scatter(set, cube, "100", size, 0, size, buffer, elem),
        "alltoall" => coll::alltoall(set, cube, "100", size, 0, size, buffer),
        "allgather" => coll::allgather(set, cube, "100", size, 0, size, buffer),
        "reduce" => coll::reduce(set, cube, "100", size, 0, buffer, elem, &mut refs),
        "gather" => coll::gather(set, cube, "100", size, 0, &mut refs),
        "scatter" => coll::scatter(set, cube, "100", size, 0, &mut refs),
        _ => coll::broadcast(set, cube, 0, &data),
    };
    let wall = t.elapsed().as_nanos() as u64;
    r.unwrap_or_else(|e| panic!("{prim}: {e}"));
    let e = timeline::with_state(|s| s.inter_dpu.entries[before].clone());
    assert!(!inter_dpu::is_open());
    let ranks = n / 64;
    CALLS.lock().unwrap().push(format!(
        "{prim},{ranks},{size},{},{path},{off},{pr}",
        if elem == 1 { "int8" } else { "int32" }
    ));
    (e.end_ns.unwrap() - e.start_ns, wall, e.call.path)
}

/// Whether a path ran the relocation program (`-` where the call has none to run).
fn reordered(path: &str) -> &'static str {
    if !path.ends_with("(auto)") {
        "-"
    } else if path.contains("-pr") {
        "no"
    } else {
        "yes"
    }
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len().max(1) as f64).exp()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let calls_file = args
        .iter()
        .position(|a| a == "--calls")
        .map(|i| match args.get(i + 1) {
            Some(f) => f.clone(),
            None => {
                eprintln!("bench: --calls needs a file name");
                std::process::exit(2)
            }
        });
    std::env::set_var("OPENPIM_QUIET", "1");
    let program = user_program();
    let rank_counts: &[u32] = if quick { &[1, 4] } else { &[1, 4, 16] };
    let sizes: &[u32] = if quick {
        &[2 << 10, 64 << 10]
    } else {
        &[2 << 10, 32 << 10, 256 << 10, 1 << 20, 2 << 20]
    };
    println!("virtual time of one call, x axis (group of 32 DPUs), optimized vs baseline");
    println!("(optimized: reordering as the cost model chooses per call; PR: whether it ran;");
    println!(" step/bus: the optimized host step over its bus time, 1.00 = bus-bound)");
    println!(
        "{:<15} {:>5} {:>9} {:>5} {:>12} {:>12} {:>8} {:>10} {:>10} {:>4} {:>8}",
        "primitive",
        "ranks",
        "bytes/DPU",
        "type",
        "optimized",
        "baseline",
        "speed-up",
        "wall opt",
        "wall base",
        "PR",
        "step/bus"
    );
    let mut speedups = Vec::new();
    let mut bus_bound = 0;
    // The speed-up with reordering always run (PID-Comm's behaviour), every case.
    let mut speedups_always = Vec::new();
    let mut ablation: Vec<(String, [f64; 5])> = Vec::new();
    for &ranks in rank_counts {
        let set = alloc_ranks(Some(ranks), "").unwrap();
        set.load_file(program.to_str().unwrap()).unwrap();
        let heap = set.program().unwrap().symbol(MRAM_HEAP_SYMBOL).unwrap();
        let cube = Hypercube::new(&[32, 2 * ranks, 1], 64 * ranks, true).unwrap();
        for &size in sizes {
            // The data of all DPUs is held several times by the emulator (MRAM, the windows):
            // at most 256 MiB per call here (the machine's memory and time).
            if u64::from(size) * 64 * u64::from(ranks) > 256 << 20 {
                continue;
            }
            set.copy_to(SymbolRef::Symbol(heap), 0, &vec![1u8; size as usize])
                .unwrap();
            for prim in PRIMS {
                for elem in [1u32, 4] {
                    if elem == 4
                        && matches!(
                            prim,
                            "alltoall" | "allgather" | "gather" | "scatter" | "broadcast"
                        )
                    {
                        continue; // no arithmetic: the type does not matter
                    }
                    let (vo, wo, po) = run(&set, &cube, prim, size, elem, "optimized", "", "");
                    let (vb, wb, _) = run(&set, &cube, prim, size, elem, "baseline", "", "");
                    let s = vb as f64 / vo as f64;
                    let sb = if prim == "broadcast" {
                        "-".to_string()
                    } else {
                        let r = step_over_bus(&set, &cube, prim, size, elem, vo, &po);
                        if r <= 1.005 {
                            bus_bound += 1;
                        }
                        format!("{r:.2}")
                    };
                    println!(
                        "{:<15} {:>5} {:>9} {:>5} {:>9.3} ms {:>9.3} ms {:>7.2}x {:>7.0} ms {:>7.0} ms {:>4} {:>8}",
                        prim, ranks, size, if elem == 1 { "int8" } else { "int32" }, vo as f64 / 1e6, vb as f64 / 1e6, s, wo as f64 / 1e6, wb as f64 / 1e6, reordered(&po), sb
                    );
                    let exchange = matches!(
                        prim,
                        "all_reduce" | "reduce_scatter" | "alltoall" | "allgather"
                    );
                    let mut always = s;
                    if exchange {
                        // Slowdowns against the optimized path as chosen: reordering never,
                        // always, then each modulation off.
                        let mut row = [0.0; 5];
                        for (i, (off, pr)) in
                            [("", "never"), ("", "always"), ("im", ""), ("cm", "")]
                                .iter()
                                .enumerate()
                        {
                            row[i] = run(&set, &cube, prim, size, elem, "optimized", off, pr).0
                                as f64
                                / vo as f64;
                        }
                        always = s / row[1];
                        row[4] = s;
                        ablation.push((
                            format!(
                                "{prim} R{ranks} {size}B {}",
                                if elem == 1 { "int8" } else { "int32" }
                            ),
                            row,
                        ));
                    }
                    if prim != "broadcast" {
                        speedups.push(s);
                        speedups_always.push(always);
                    }
                }
            }
        }
    }
    println!(
        "\ngeomean speed-up over the baseline (all primitives but broadcast, {} cases): {:.2}x",
        speedups.len(),
        geomean(&speedups)
    );
    println!(
        "  with reordering always run (PID-Comm's behaviour, OPENPIM_COLLECTIVES_PR=always): {:.2}x",
        geomean(&speedups_always)
    );
    println!(
        "  optimized host step bus-bound (step/bus <= 1.005) in {bus_bound} of {} cases",
        speedups.len()
    );
    println!(
        "\nablation: slowdown of the optimized path (reordering chosen per call) with reordering"
    );
    println!("never or always run, or one modulation off (x1.00 = no effect)");
    println!(
        "{:<36} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "case", "-PR", "always", "-IM", "-CM", "vs base"
    );
    for (name, r) in &ablation {
        println!(
            "{:<36} {:>7.2}x {:>7.2}x {:>7.2}x {:>7.2}x {:>9.2}x",
            name, r[0], r[1], r[2], r[3], r[4]
        );
    }
    let col = |i: usize| geomean(&ablation.iter().map(|(_, r)| r[i]).collect::<Vec<_>>());
    println!(
        "{:<36} {:>7.2}x {:>7.2}x {:>7.2}x {:>7.2}x {:>9.2}x",
        "geomean",
        col(0),
        col(1),
        col(2),
        col(3),
        col(4)
    );
    if let Some(f) = calls_file {
        let mut text = String::from("primitive,ranks,bytes,type,path,off,pr\n");
        for line in CALLS.lock().unwrap().iter() {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&f, text).unwrap_or_else(|e| panic!("cannot write {f}: {e}"));
    }
    // The run report (OPENPIM_REPORT), as an SDK program writes it at its exit.
    openpim_runtime::report::write_requested_outputs();
}
