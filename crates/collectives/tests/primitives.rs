//! Every primitive against a CPU computation, element by element: shapes (PID-Comm's and the
//! small-x ones), communicators of 1 to 3 axes, element types, operators, both paths and each
//! technique switched off, on 64 and 256 emulated DPUs. The data is pushed and read in the
//! hypercube's order (logical DPU `L`, as DPU_FOREACH_ENTANGLED_GROUP walks). Needs the DPU
//! toolchain and the relocation program (`make build`); skips with a note without them.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use openpim_collectives::cube::dpu_of;
use openpim_collectives::{self as coll, Hypercube, OFF_ENV, PATH_ENV, PR_ENV};
use openpim_runtime::{alloc, DpuSet, Symbol, SymbolRef, MRAM_HEAP_SYMBOL};

static LOCK: Mutex<()> = Mutex::new(());

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A user program (its heap is where the data lives), compiled once.
fn user_program() -> Option<PathBuf> {
    let shim = root().join("sdk/bin/dpu-upmem-dpurte-clang");
    if !root().join("build/collectives/relocate").exists() {
        eprintln!("skipping: build/collectives/relocate missing (make build)");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("openpim-coll-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join("user.dpu");
    if out.exists() {
        return Some(out);
    }
    let c = dir.join("user.c");
    std::fs::write(
        &c,
        "#include <defs.h>\n__host int touched;\nint main(void) { touched = 1; return 0; }\n",
    )
    .ok()?;
    let ok = Command::new(shim)
        .args(["-DNR_TASKLETS=1", "-O2", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .ok()?
        .success();
    ok.then_some(out)
}

struct Machine {
    set: DpuSet,
    dpus: Vec<DpuSet>,
    heap: Symbol,
}

fn machine(nr: u32, program: &std::path::Path) -> Machine {
    let set = alloc(Some(nr), "").unwrap();
    set.load_file(program.to_str().unwrap()).unwrap();
    let ranks = set.ranks();
    let dpus = (0..nr)
        .map(|l| {
            let (r, i) = dpu_of(l);
            DpuSet::dpu(Arc::clone(&ranks[r as usize]), i).unwrap()
        })
        .collect();
    let heap = set.program().unwrap().symbol(MRAM_HEAP_SYMBOL).unwrap();
    Machine { set, dpus, heap }
}

impl Machine {
    fn push(&self, at: u32, data: &[Vec<u8>]) {
        for (d, v) in self.dpus.iter().zip(data) {
            d.copy_to(SymbolRef::Symbol(self.heap), at, v).unwrap();
        }
    }

    fn pull(&self, at: u32, len: usize) -> Vec<Vec<u8>> {
        self.dpus
            .iter()
            .map(|d| {
                let mut v = vec![0u8; len];
                d.copy_from(SymbolRef::Symbol(self.heap), at, &mut v)
                    .unwrap();
                v
            })
            .collect()
    }
}

fn data(nr: u32, len: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..nr)
        .map(|_| {
            (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        })
        .collect()
}

/// The CPU's reduction of element-size `size` little-endian integers.
fn cpu_reduce(acc: &mut [u8], src: &[u8], size: usize, max: bool) {
    for (a, b) in acc.chunks_exact_mut(size).zip(src.chunks_exact(size)) {
        let mut x = [0u8; 8];
        let mut y = [0u8; 8];
        x[..size].copy_from_slice(a);
        y[..size].copy_from_slice(b);
        let shift = 64 - 8 * size as u32;
        let (xi, yi) = (
            (i64::from_le_bytes(x) << shift) >> shift,
            (i64::from_le_bytes(y) << shift) >> shift,
        );
        let r = if max { xi.max(yi) } else { xi.wrapping_add(yi) };
        a.copy_from_slice(&r.to_le_bytes()[..size]);
    }
}

/// Groups of a communicator by rank, from the coordinates (independent of the library).
fn groups(axes: [u32; 3], comm: [bool; 3]) -> Vec<Vec<usize>> {
    let nr = axes.iter().product::<u32>() as usize;
    let mut map: std::collections::BTreeMap<Vec<u32>, Vec<(u32, usize)>> = Default::default();
    for l in 0..nr {
        let c = [
            l as u32 % axes[0],
            (l as u32 / axes[0]) % axes[1],
            l as u32 / (axes[0] * axes[1]),
        ];
        let key: Vec<u32> = (0..3).rev().filter(|i| !comm[*i]).map(|i| c[i]).collect();
        let (mut r, mut s) = (0, 1);
        for i in 0..3 {
            if comm[i] {
                r += c[i] * s;
                s *= axes[i];
            }
        }
        map.entry(key).or_default().push((r, l));
    }
    map.into_values()
        .map(|mut v| {
            v.sort();
            v.into_iter().map(|(_, l)| l).collect()
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Prim {
    AllReduce { max: bool },
    ReduceScatter,
    AlltoAll,
    AllGather,
}

/// Runs one exchange primitive and checks every DPU's target (and that the bytes around the
/// named regions are untouched).
#[allow(clippy::too_many_arguments)]
fn check(
    m: &Machine,
    axes: &[u32],
    comm: &str,
    prim: Prim,
    size: usize,
    chunk: usize,
    seed: u64,
    env: Env,
) {
    let mut ax = [1u32; 3];
    ax[..axes.len()].copy_from_slice(axes);
    let cube = Hypercube::new(axes, m.dpus.len() as u32, true).unwrap();
    let cm: [bool; 3] = std::array::from_fn(|i| comm.as_bytes().get(i) == Some(&b'1'));
    let n: usize = (0..3).filter(|i| cm[*i]).map(|i| ax[i] as usize).product();
    let total = chunk * n;
    let nr = m.dpus.len() as u32;
    let (start, target, buffer) = (
        4096u32,
        4096 + 2 * total as u32 + 64,
        8 * total as u32 + 256,
    );
    let src_len = if matches!(prim, Prim::AllGather) {
        chunk
    } else {
        total
    };
    let src = data(nr, src_len, seed);
    // A guard pattern over everything, then the sources.
    let span = (start + buffer) as usize + total + 128;
    let guard = data(nr, span, seed ^ 0xabcd);
    m.push(0, &guard);
    m.push(start, &src);
    set_env(env);
    let r = match prim {
        Prim::AllReduce { max } => coll::all_reduce(
            &m.set,
            &cube,
            comm,
            total as u32,
            start,
            target,
            buffer,
            size as u32,
            max as u32,
        ),
        Prim::ReduceScatter => coll::reduce_scatter(
            &m.set,
            &cube,
            comm,
            total as u32,
            start,
            target,
            buffer,
            size as u32,
        ),
        Prim::AlltoAll => coll::alltoall(&m.set, &cube, comm, total as u32, start, target, buffer),
        Prim::AllGather => {
            coll::allgather(&m.set, &cube, comm, total as u32, start, target, buffer)
        }
    };
    clear_env();
    r.unwrap_or_else(|e| panic!("{prim:?} {axes:?} {comm}: {e}"));
    let dst_len = if matches!(prim, Prim::ReduceScatter) {
        chunk
    } else {
        total
    };
    let mut want = vec![Vec::new(); nr as usize];
    for g in groups(ax, cm) {
        for (r, &d) in g.iter().enumerate() {
            want[d] = match prim {
                Prim::AllReduce { max } => {
                    let mut acc = src[g[0]].clone();
                    for &s in &g[1..] {
                        cpu_reduce(&mut acc, &src[s], size, max);
                    }
                    acc
                }
                Prim::ReduceScatter => {
                    let mut acc = src[g[0]][r * chunk..(r + 1) * chunk].to_vec();
                    for &s in &g[1..] {
                        cpu_reduce(&mut acc, &src[s][r * chunk..(r + 1) * chunk], size, false);
                    }
                    acc
                }
                Prim::AlltoAll => g
                    .iter()
                    .flat_map(|&s| src[s][r * chunk..(r + 1) * chunk].to_vec())
                    .collect(),
                Prim::AllGather => g.iter().flat_map(|&s| src[s].clone()).collect(),
            };
        }
    }
    let got = m.pull(target, dst_len);
    for l in 0..nr as usize {
        assert!(
            got[l] == want[l],
            "{prim:?} {axes:?} comm {comm} size {size} path {env:?}: DPU {l} differs"
        );
    }
    // Outside the source, scratch and target: the guard pattern.
    let all = m.pull(0, span);
    for (l, v) in all.iter().enumerate() {
        for (i, b) in v.iter().enumerate() {
            let i32_ = i as u32;
            let named = (i32_ >= start && i32_ < start + src_len as u32)
                || (i32_ >= start + buffer && i32_ < start + buffer + total as u32)
                || (i32_ >= target && i32_ < target + dst_len as u32);
            assert!(named || *b == guard[l][i], "{prim:?} {axes:?} {comm} {env:?}: DPU {l} byte {i} outside the named buffers changed");
        }
    }
}

/// A path: `OPENPIM_COLLECTIVES_PATH`, `_OFF`, `_PR`.
type Env = (&'static str, &'static str, &'static str);

/// The optimized path as the cost model chooses (the default), the baseline, reordering
/// forced on (PID-Comm's behaviour) and off, and each technique off.
const PATHS: [Env; 6] = [
    ("optimized", "", ""),
    ("baseline", "", ""),
    ("optimized", "", "always"),
    ("optimized", "pr", ""),
    ("optimized", "im", ""),
    ("optimized", "cm", ""),
];

fn set_env(env: Env) {
    std::env::set_var(PATH_ENV, env.0);
    std::env::set_var(OFF_ENV, env.1);
    std::env::set_var(PR_ENV, env.2);
}

fn clear_env() {
    for v in [PATH_ENV, OFF_ENV, PR_ENV] {
        std::env::remove_var(v);
    }
}

fn comms(dims: usize) -> Vec<String> {
    (1..(1 << dims))
        .map(|m: u32| {
            (0..dims)
                .map(|i| if m >> i & 1 == 1 { '1' } else { '0' })
                .collect()
        })
        .collect()
}

#[test]
fn every_primitive_shape_and_path_at_64_dpus() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    let m = machine(64, &p);
    let mut seed = 1;
    for axes in [
        &[8u32, 8, 1][..],
        &[16, 4],
        &[64],
        &[4, 16],
        &[2, 4, 8],
        &[2, 2, 16],
        &[1, 8, 8],
    ] {
        for comm in comms(axes.len()) {
            for (pi, prim) in [
                Prim::AllReduce { max: false },
                Prim::AllReduce { max: true },
                Prim::ReduceScatter,
                Prim::AlltoAll,
                Prim::AllGather,
            ]
            .into_iter()
            .enumerate()
            {
                for (k, env) in PATHS.iter().enumerate() {
                    // Types rotate over the cases; int8 and int32 on every path.
                    let size = [1, 4, 2, 8][(seed as usize + k + pi) % 4];
                    check(&m, axes, &comm, prim, size, 16, seed, *env);
                    seed += 1;
                }
            }
        }
    }
}

#[test]
fn large_chunks_and_256_dpus() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    let m = machine(256, &p);
    let mut seed = 1000;
    for axes in [&[16u32, 16][..], &[2, 4, 32], &[256]] {
        for comm in comms(axes.len()) {
            for prim in [
                Prim::AllReduce { max: false },
                Prim::ReduceScatter,
                Prim::AlltoAll,
                Prim::AllGather,
            ] {
                for env in [PATHS[0], PATHS[1], PATHS[2], PATHS[3]] {
                    for size in [1, 4] {
                        // 2 KiB blocks of the relocation program and tails.
                        let chunk = if comm == "100" { 2056 } else { 24 };
                        check(&m, axes, &comm, prim, size, chunk, seed, env);
                        seed += 1;
                    }
                }
            }
        }
    }
}

/// `auto` runs the relocation program exactly where the cost model predicts the call faster
/// with it, `always` and `never` force it, and every one gives the CPU reference's bytes
/// (`check`); the model's loads, launches and kernel cycles are what the runtime charges.
#[test]
fn reordering_is_the_cost_models_choice() {
    use coll::plan::Exchange;
    use openpim_runtime::{launch_history, timeline};
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    // A fresh timeline: the spans of this test's calls are all kept.
    timeline::reset();
    let m = machine(64, &p);
    let rank = m.set.ranks()[0].id();
    let axes = [32u32, 2, 1];
    let cube = Hypercube::new(&axes, 64, true).unwrap();
    let mut seed = 9000;
    // (primitive, element size, chunk bytes): 256 bytes per DPU, then 64 KiB.
    for (prim, x, size, chunk) in [
        (Prim::AlltoAll, Exchange::AlltoAll, 1, 8),
        (Prim::ReduceScatter, Exchange::ReduceScatter, 4, 8),
        (Prim::AllGather, Exchange::AllGather, 1, 8),
        (Prim::ReduceScatter, Exchange::ReduceScatter, 4, 2048),
        (Prim::ReduceScatter, Exchange::ReduceScatter, 1, 2048),
        (Prim::AlltoAll, Exchange::AlltoAll, 1, 2048),
        (Prim::AllGather, Exchange::AllGather, 1, 2048),
    ] {
        let total = 32 * chunk;
        // check's regions.
        let (start, target, buffer) = (4096, 4096 + 2 * total + 64, 8 * total + 256);
        clear_env();
        let pred = coll::predict_reordering(
            &m.set, &cube, x, "100", total, start, target, buffer, size, 0,
        )
        .unwrap()
        .expect("the x axis with whole entangled groups has a relocation program to run");
        let what = format!("{x:?} {total} B/DPU int{}: {pred:?}", 8 * size);
        if chunk == 8 {
            // Small calls: the relocation program's fixed costs alone are more than the
            // whole call without it.
            assert!(pred.relocation_ns() > pred.without_ns(), "{what}");
            assert!(!pred.reorder(), "{what}");
        }
        if x == Exchange::ReduceScatter && chunk == 2048 {
            // A large reduction: the per-chip gathers of 32 members (256 words extracted
            // per destination line, against 32 lines reduced with the relocation program)
            // cost the host more than the relocation does.
            assert!(
                pred.host_without_ns > pred.host_with_ns + pred.relocation_ns(),
                "{what}"
            );
            assert!(pred.reorder(), "{what}");
        }
        for (env, reorder, path) in [
            (
                PATHS[0],
                pred.reorder(),
                if pred.reorder() {
                    "optimized (auto)"
                } else {
                    "optimized -pr (auto)"
                },
            ),
            (PATHS[2], true, "optimized"),
            (PATHS[3], false, "optimized -pr"),
        ] {
            let before = timeline::with_state(|s| s.inter_dpu.entries.len());
            let launches = launch_history().len();
            check(
                &m,
                &axes,
                "100",
                prim,
                size as usize,
                chunk as usize,
                seed,
                env,
            );
            seed += 1;
            let e = timeline::with_state(|s| s.inter_dpu.entries[before].clone());
            assert_eq!(e.call.path, path, "{env:?} {what}");
            let runs = &launch_history()[launches..];
            if !reorder {
                assert!(runs.is_empty(), "{env:?} {what}");
                continue;
            }
            // The kernel's cycles, the loads and launches: as the runtime charged them.
            let cycles: Vec<u64> = runs.iter().map(|r| r.max_cycles).collect();
            assert_eq!(cycles, pred.kernel_cycles, "{env:?} {what}");
            let spans =
                timeline::with_state(|s| s.clock.rank_track(rank).unwrap().spans().to_vec());
            let charged = |name: &str| -> u64 {
                spans
                    .iter()
                    .filter(|s| s.name == name && s.start >= e.start_ns)
                    .filter(|s| s.end <= e.end_ns.unwrap())
                    .map(|s| s.end - s.start)
                    .sum()
            };
            assert_eq!(charged("dpu_load"), pred.load_ns, "{env:?} {what}");
            assert_eq!(charged("dpu_launch"), pred.launch_ns, "{env:?} {what}");
            // At least the modeled bus time (the runtime charges the host's interleaving
            // when longer).
            assert!(
                charged("inter-DPU transfer to DPUs") >= pred.args_ns,
                "{what}"
            );
        }
    }
    // The switch is checked.
    std::env::set_var(PR_ENV, "sometimes");
    let e = coll::alltoall(&m.set, &cube, "100", 256, 0, 4096, 8192)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("OPENPIM_COLLECTIVES_PR:"), "{e}");
    std::env::set_var(PR_ENV, "always");
    std::env::set_var(OFF_ENV, "pr");
    let e = coll::alltoall(&m.set, &cube, "100", 256, 0, 4096, 8192)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("OPENPIM_COLLECTIVES_OFF:"), "{e}");
    clear_env();
}

/// The full matrix at 1,024 DPUs (`make test-collectives`; minutes, not in `make test`).
#[test]
#[ignore]
fn full_matrix_at_1024_dpus() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    let m = machine(1024, &p);
    let mut seed = 5000;
    for axes in [&[32u32, 32, 1][..], &[8, 16, 8], &[2, 4, 128], &[1024]] {
        for comm in comms(axes.len()) {
            for prim in [
                Prim::AllReduce { max: false },
                Prim::AllReduce { max: true },
                Prim::ReduceScatter,
                Prim::AlltoAll,
                Prim::AllGather,
            ] {
                for (k, env) in PATHS.iter().enumerate() {
                    // Types rotate over the paths (int8 and int32 on both main paths).
                    let size = [1, 4, 2, 8, 4][(k + seed as usize) % 5];
                    check(&m, axes, &comm, prim, size, 8, seed, *env);
                    seed += 1;
                }
            }
        }
    }
}

/// Reduce, Gather, Scatter and Broadcast (host buffers) on both paths, checked against the
/// layouts of docs/collectives.md.
#[test]
fn host_side_primitives() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    for nr in [64u32, 256] {
        let m = machine(nr, &p);
        let axes: &[u32] = if nr == 64 { &[8, 4, 2] } else { &[16, 4, 4] };
        let cube = Hypercube::new(axes, nr, true).unwrap();
        let mut ax = [1u32; 3];
        ax[..axes.len()].copy_from_slice(axes);
        let total = 48usize;
        for (k, env) in PATHS.iter().enumerate() {
            set_env(*env);
            let src = data(nr, total, 77 + k as u64);
            m.push(512, &src);
            // Reduce (sum), int16, over "101": host[g] per group.
            let comm = "101";
            let cm = [true, false, true];
            let gs = groups(ax, cm);
            let mut host = vec![vec![0u8; total]; gs.len()];
            let mut refs: Vec<&mut [u8]> = host.iter_mut().map(|v| v.as_mut_slice()).collect();
            coll::reduce(&m.set, &cube, comm, total as u32, 512, 4096, 2, &mut refs).unwrap();
            for (g, members) in gs.iter().enumerate() {
                let mut acc = src[members[0]].clone();
                for &s in &members[1..] {
                    cpu_reduce(&mut acc, &src[s], 2, false);
                }
                assert_eq!(host[g], acc, "reduce {env:?} group {g}");
            }
            // Gather: word-interleaved per entangled group.
            let mut host = vec![vec![0u8; 8 * total]; nr as usize / 8];
            let mut refs: Vec<&mut [u8]> = host.iter_mut().map(|v| v.as_mut_slice()).collect();
            coll::gather(&m.set, &cube, "100", total as u32, 512, &mut refs).unwrap();
            for (e, h) in host.iter().enumerate() {
                for w in 0..total / 8 {
                    for c in 0..8 {
                        assert_eq!(
                            &h[64 * w + 8 * c..64 * w + 8 * c + 8],
                            &src[8 * e + c][8 * w..8 * w + 8],
                            "gather {env:?}"
                        );
                    }
                }
            }
            // Scatter back something else, read it directly.
            let mut back: Vec<Vec<u8>> = host
                .iter()
                .map(|h| h.iter().map(|b| b ^ 0x5a).collect())
                .collect();
            let mut refs: Vec<&mut [u8]> = back.iter_mut().map(|v| v.as_mut_slice()).collect();
            coll::scatter(&m.set, &cube, "110", total as u32, 2048, &mut refs).unwrap();
            let got = m.pull(2048, total);
            for (l, v) in got.iter().enumerate() {
                let want: Vec<u8> = src[l].iter().map(|b| b ^ 0x5a).collect();
                assert_eq!(*v, want, "scatter {env:?} DPU {l}");
            }
            // Broadcast.
            let bytes: Vec<u8> = (0..40u8).collect();
            coll::broadcast(&m.set, &cube, 8192, &bytes).unwrap();
            assert!(m.pull(8192, 40).iter().all(|v| *v == bytes));
            // Scatter without x is refused; a wrong host-buffer count too.
            let e = coll::scatter(&m.set, &cube, "010", total as u32, 0, &mut refs)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("comm:"), "{e}");
            let e = coll::gather(&m.set, &cube, "100", total as u32, 0, &mut refs[..1])
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("host_buffer:"), "{e}");
        }
        clear_env();
    }
}

/// Bad input: each error names its parameter; nothing moves.
#[test]
fn bad_input_is_refused_by_name() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    let m = machine(64, &p);
    let cube = Hypercube::new(&[8, 8, 1], 64, true).unwrap();
    let src = data(64, 512, 9);
    m.push(0, &src);
    let err = |r: coll::Result<()>| r.unwrap_err().to_string();
    let cases = [
        (
            err(coll::all_reduce(&m.set, &cube, "100", 256, 0, 0, 128, 4, 0)),
            "buffer_offset:",
        ),
        (
            err(coll::all_reduce(
                &m.set, &cube, "100", 256, 0, 128, 4096, 4, 0,
            )),
            "target_offset:",
        ),
        (
            err(coll::all_reduce(
                &m.set, &cube, "100", 260, 0, 0, 4096, 4, 0,
            )),
            "total_data_size:",
        ),
        (
            err(coll::alltoall(
                &m.set,
                &cube,
                "100",
                8 * 8 * 3 + 8,
                0,
                4096,
                8192,
            )),
            "total_data_size:",
        ),
        (
            err(coll::all_reduce(
                &m.set, &cube, "100", 256, 4, 0, 4096, 4, 0,
            )),
            "start_offset:",
        ),
        (
            err(coll::all_reduce(&m.set, &cube, "10", 256, 0, 0, 4096, 4, 0)),
            "comm:",
        ),
        (
            err(coll::all_reduce(
                &m.set, &cube, "100", 256, 0, 0, 4096, 3, 0,
            )),
            "size:",
        ),
        (
            err(coll::all_reduce(
                &m.set, &cube, "100", 256, 0, 0, 4096, 4, 2,
            )),
            "reduce_type:",
        ),
        (
            err(coll::all_reduce(
                &m.set,
                &cube,
                "100",
                256,
                0,
                0,
                64 << 20,
                4,
                0,
            )),
            "buffer_offset:",
        ),
    ];
    for (e, want) in cases {
        assert!(e.starts_with(want), "{e} (want {want})");
    }
    assert_eq!(m.pull(0, 512), src, "a refused call moved data");
    let e = Hypercube::new(&[8, 4, 1], 64, true)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("axis_len:"), "{e}");
}

/// A hardware profile with `[links]` (a copy of upmem-v1a plus the section).
fn links_profile(scope: &str) -> String {
    let text = std::fs::read_to_string(root().join("profiles/upmem-v1a.toml")).unwrap();
    let path =
        std::env::temp_dir().join(format!("openpim-links-{scope}-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        format!("{text}\n[links]\nscope = \"{scope}\"\nlink_gbps = 2.8\n"),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

/// With `[links]`, the exchanges the links cover take them (correct bytes, link time on the
/// timeline, the path in the record); the others, and the baseline, go through the host.
#[test]
fn interconnect_what_if() {
    use openpim_runtime::timeline;
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(p) = user_program() else { return };
    for (scope, comm, covered) in [
        ("rank", "100", true),
        ("chip", "010", true),
        ("chip", "100", false),
    ] {
        let set = alloc(Some(64), &format!("hardware={}", links_profile(scope))).unwrap();
        set.load_file(p.to_str().unwrap()).unwrap();
        let ranks = set.ranks();
        let dpus = (0..64).map(|l| {
            let (r, i) = dpu_of(l);
            DpuSet::dpu(Arc::clone(&ranks[r as usize]), i).unwrap()
        });
        let heap = set.program().unwrap().symbol(MRAM_HEAP_SYMBOL).unwrap();
        let m = Machine {
            dpus: dpus.collect(),
            set,
            heap,
        };
        for (prim, env) in [
            (Prim::AllReduce { max: false }, PATHS[0]),
            (Prim::AlltoAll, PATHS[0]),
            (Prim::AllReduce { max: false }, PATHS[1]),
        ] {
            let before = timeline::with_state(|s| s.inter_dpu.entries.len());
            check(&m, &[8, 8, 1], comm, prim, 4, 16, 42, env);
            let e = timeline::with_state(|s| s.inter_dpu.entries[before].clone());
            let via_links = covered && env.0 != "baseline";
            assert_eq!(
                e.call.path.starts_with("links ("),
                via_links,
                "{scope} {comm} {prim:?} {env:?}: {}",
                e.call.path
            );
            assert_eq!(e.link_ns > 0, via_links, "{scope} {comm} {prim:?}");
            if via_links {
                assert_eq!(e.call.path, format!("links ({scope}, 2.8 GB/s)"));
            }
        }
    }
}
