//! Reports and traces of real (tiny) runs, checked against docs/report.schema.json, and the
//! virtual clock's overlap of asynchronous launches with host work. Uses the SDK shim's
//! compiler; skips (passes with a note) when it is missing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use openpim_runtime::report::{self, Report, Trace};
use openpim_runtime::timeline::{self, SdkCall};
use openpim_runtime::{alloc, LaunchPolicy, SymbolRef};
use serde_json::Value;

static LOCK: Mutex<()> = Mutex::new(());

const SCHEMA: &str = include_str!("../../../docs/report.schema.json");

const KERNEL: &str = r#"
#include <defs.h>
#include <mram.h>
#include <stdint.h>
__host uint32_t input[16];
__host uint64_t result;
__mram_noinit uint64_t buffer[256];
int main(void) {
    __dma_aligned uint64_t local[32];
    mram_read(&buffer[me() * 32], local, sizeof(local));
    uint64_t s = 0;
    for (int i = 0; i < 16; i++)
        s += input[i];
    if (me() == 0)
        result = s;
    return 0;
}
"#;

fn compile() -> Option<PathBuf> {
    let shim =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/bin/dpu-upmem-dpurte-clang");
    if !shim.exists() {
        eprintln!("skipping: {} not found", shim.display());
        return None;
    }
    let dir = std::env::temp_dir().join(format!("openpim-rt-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let c = dir.join("kernel.c");
    let out = dir.join("kernel.dpu");
    std::fs::write(&c, KERNEL).ok()?;
    let status = Command::new(&shim)
        .args(["-DNR_TASKLETS=2", "-O2", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .ok()?;
    if !status.success() {
        eprintln!("skipping: the DPU compiler failed (toolchain missing?)");
        return None;
    }
    Some(out)
}

/// Checks `v` against the subset of JSON Schema the report schema uses.
fn conforms(schema: &Value, v: &Value, defs: &Value, at: &str) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => &defs[r.rsplit('/').next().unwrap()],
        None => schema,
    };
    if let Some(c) = schema.get("const") {
        assert_eq!(v, c, "{at}");
    }
    if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        assert!(e.contains(v), "{at}: {v} not in {e:?}");
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let o = v
                .as_object()
                .unwrap_or_else(|| panic!("{at}: not an object"));
            let props = schema["properties"].as_object().unwrap();
            for k in schema["required"].as_array().unwrap() {
                assert!(o.contains_key(k.as_str().unwrap()), "{at}: missing {k}");
            }
            for (k, val) in o {
                let p = props
                    .get(k)
                    .unwrap_or_else(|| panic!("{at}: unexpected {k}"));
                conforms(p, val, defs, &format!("{at}.{k}"));
            }
        }
        Some("array") => {
            for (i, item) in v.as_array().unwrap().iter().enumerate() {
                conforms(&schema["items"], item, defs, &format!("{at}[{i}]"));
            }
        }
        Some("integer") => assert!(v.is_u64(), "{at}: {v} is not a non-negative integer"),
        Some("number") => assert!(v.is_number(), "{at}: {v}"),
        Some("string") => assert!(v.is_string(), "{at}: {v}"),
        _ => {}
    }
}

fn check_schema(r: &Report) {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let v: Value = serde_json::from_str(&r.to_json()).unwrap();
    conforms(&schema, &v, &schema["$defs"], "report");
    // And it reads back into the same structure.
    let back: Report = serde_json::from_value(v).unwrap();
    assert_eq!(&back, r);
}

#[test]
fn report_and_trace_of_a_run_follow_the_schema() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = compile() else {
        return;
    };
    timeline::reset();
    let set = {
        let _c = SdkCall::enter();
        alloc(Some(3), "nrRanks=2,nrDpusPerRank=2").unwrap()
    };
    {
        let _c = SdkCall::enter();
        set.load_file(path.to_str().unwrap()).unwrap();
    }
    {
        let _c = SdkCall::enter();
        set.copy_to(SymbolRef::Name("input"), 0, &[1u8; 64])
            .unwrap();
    }
    // Host work between calls counts.
    std::thread::sleep(std::time::Duration::from_millis(5));
    {
        let _c = SdkCall::enter();
        set.launch(LaunchPolicy::Synchronous).unwrap();
    }
    {
        let _c = SdkCall::enter();
        let mut out = [0u8; 8];
        set.dpus()[0]
            .copy_from(SymbolRef::Name("result"), 0, &mut out)
            .unwrap();
        assert_eq!(u64::from_le_bytes(out), 16 * 0x0101_0101);
    }
    let r = report::report();
    assert_eq!(r.phases.total(), r.total_ns);
    assert!(r.phases.host_ns >= 5_000_000, "{:?}", r.phases);
    assert!(r.phases.dpu_kernel_ns > 0);
    assert!(r.phases.cpu_dpu_ns > 0 && r.phases.dpu_cpu_ns > 0);
    assert!(r.phases.alloc_load_ns > 0);
    assert_eq!(r.ranks.len(), 2);
    assert_eq!(r.launches.len(), 1);
    let l = &r.launches[0];
    assert_eq!((l.ranks, l.dpus, l.tasklets), (2, 3, 2));
    assert!(l.ipc > 0.0 && l.ipc <= 1.0);
    assert_eq!(l.dma_bytes, 3 * 2 * 256);
    // The copy to the set: a broadcast on rank 0 (2 DPUs), one DPU's copy on rank 1.
    assert_eq!(r.transfers.broadcast_to_dpu, 1);
    assert_eq!(r.transfers.serial_to_dpu, 1);
    assert_eq!(r.transfers.serial_from_dpu, 1);
    assert_eq!(r.hardware.profile, "upmem-v1a");
    // The ranks idled through the 5 ms of host work (most of the run), and the kernel has
    // two tasklets: exactly those two pieces of advice.
    let ids: Vec<&str> = r.advice.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["idle_ranks", "few_tasklets"]);
    check_schema(&r);
    assert!(r.to_text().contains("DPU kernel"));
    // The trace: host track 0, one track per rank, kernel spans on the ranks.
    let t = report::trace();
    let text = serde_json::to_string(&t).unwrap();
    let back: Trace = serde_json::from_str(&text).unwrap();
    let names: Vec<(u32, String)> = back
        .trace_events
        .iter()
        .filter(|e| e.ph == "M" && e.name == "thread_name")
        .map(|e| {
            (
                e.tid,
                e.args.as_ref().unwrap()["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert!(names.contains(&(0, "host".to_string())), "{names:?}");
    for rank in set.ranks() {
        let id = rank.id();
        assert!(names.contains(&(id + 1, format!("rank {id}"))), "{names:?}");
        assert!(back
            .trace_events
            .iter()
            .any(|e| e.tid == id + 1 && e.ph == "X" && e.cat == "dpu_kernel"));
    }
    assert!(back
        .trace_events
        .iter()
        .filter(|e| e.ph == "X")
        .all(|e| e.dur.unwrap() >= 0.0 && e.ts >= 0.0));
    drop(set);
}

#[test]
fn asynchronous_launch_overlaps_host_work() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = compile() else {
        return;
    };
    timeline::reset();
    let set = {
        let _c = SdkCall::enter();
        let s = alloc(Some(1), "nrRanks=1,nrDpusPerRank=1").unwrap();
        s.load_file(path.to_str().unwrap()).unwrap();
        s
    };
    {
        let _c = SdkCall::enter();
        set.launch(LaunchPolicy::Asynchronous).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(3));
    {
        let _c = SdkCall::enter();
        set.sync().unwrap();
    }
    let r = report::report();
    // The tiny kernel ran while the host slept: the host never waited for it...
    assert_eq!(r.phases.dpu_kernel_ns, 0, "{:?}", r.phases);
    // ...but the rank was busy with it, during the host's work.
    assert!(r.ranks[0].busy.dpu_kernel_ns > 0);
    assert!(r.launches[0].end_ns < r.total_ns);
    check_schema(&r);
    // A synchronous launch makes the host wait for it.
    {
        let _c = SdkCall::enter();
        set.launch(LaunchPolicy::Synchronous).unwrap();
    }
    let r = report::report();
    assert!(r.phases.dpu_kernel_ns > 0);
    assert_eq!(
        r.phases.dpu_kernel_ns,
        r.launches[1].end_ns - r.launches[1].start_ns
    );
    drop(set);
}

#[test]
fn inter_dpu_exchanges_nest_and_count_once() {
    use openpim_runtime::inter_dpu::{self, InterDpuCall};
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    timeline::reset();
    let call = |primitive: &str, bytes: u64| InterDpuCall {
        primitive: primitive.into(),
        label: String::new(),
        axes: "100".into(),
        bytes,
        path: "optimized".into(),
        owns_kernels: true,
    };
    {
        let _c = SdkCall::enter();
        assert!(!inter_dpu::is_open());
        assert_eq!(inter_dpu::begin(call("all_reduce", 4096)), 0);
        inter_dpu::host_work(1_000, "host step");
        assert_eq!(inter_dpu::begin(call("inner", 0)), 1);
        // Two ranks' links, 3 and 5 us: the host waits for the longer.
        inter_dpu::link_ops(&[(0, 3_000), (1, 5_000)], "links");
        let inner = inter_dpu::end().unwrap();
        assert_eq!(
            (inner.start_ns, inner.end_ns, inner.link_ns),
            (1_000, Some(6_000), 8_000)
        );
        let outer = inter_dpu::end().unwrap();
        assert_eq!((outer.start_ns, outer.end_ns), (0, Some(6_000)));
        assert!(inter_dpu::end().is_none());
        assert!(!inter_dpu::is_open());
    }
    let r = report::report();
    // The nested exchange's time counts once in the phase.
    assert_eq!(r.phases.inter_dpu_ns, 6_000);
    assert_eq!(r.inter_dpu.len(), 2);
    assert_eq!(r.inter_dpu[0].primitive, "all_reduce");
    assert_eq!(r.inter_dpu[0].bytes, 4096);
    assert_eq!((r.inter_dpu[1].bytes, r.inter_dpu[1].link_ns), (0, 8_000));
    check_schema(&r);
    let text = r.to_text();
    assert!(text.contains("inter-DPU exchanges (2 in total"), "{text}");
    let t = report::trace();
    let events: Vec<_> = t
        .trace_events
        .iter()
        .filter(|e| e.ph == "X" && e.tid == report::INTER_DPU_TRACK)
        .collect();
    assert_eq!(events.len(), 2);
    timeline::reset();
}

/// The DPU-CPU time the report shows for one synchronous read of `len` bytes of `symbol`
/// from the set's first DPU.
fn read_back_ns(set: &openpim_runtime::DpuSet, symbol: &str, len: usize) -> u64 {
    let before = report::report().phases.dpu_cpu_ns;
    {
        let _c = SdkCall::enter();
        let mut out = vec![0u8; len];
        set.dpus()[0]
            .copy_from(SymbolRef::Name(symbol), 0, &mut out)
            .unwrap();
    }
    report::report().phases.dpu_cpu_ns - before
}

#[test]
fn first_mram_access_after_a_launch_pays_the_mux_switch_once() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = compile() else {
        return;
    };
    let mux = openpim_machine::HardwareProfile::load("upmem-v1a")
        .unwrap()
        .launch_spec()
        .mux_switch_ns;
    assert!(mux > 0, "the default profile models the mux switch");
    timeline::reset();
    let set = {
        let _c = SdkCall::enter();
        let s = alloc(Some(1), "nrRanks=1,nrDpusPerRank=1").unwrap();
        s.load_file(path.to_str().unwrap()).unwrap();
        s
    };
    let launch = || {
        let _c = SdkCall::enter();
        set.launch(LaunchPolicy::Synchronous).unwrap();
    };
    // Before any launch the MRAM is the host's: a read costs the bus model alone.
    let plain = read_back_ns(&set, "buffer", 64);
    assert!(plain > 0);
    // The first MRAM read after a launch switches the mux back first; the next one does not.
    launch();
    assert_eq!(read_back_ns(&set, "buffer", 64), plain + mux);
    assert_eq!(read_back_ns(&set, "buffer", 64), plain);
    // WRAM (a __host variable) is read through the control interface: no switch, and the
    // MRAM read after it still pays.
    launch();
    let wram = read_back_ns(&set, "result", 8);
    let again = read_back_ns(&set, "result", 8);
    assert_eq!(wram, again, "a WRAM read after a launch pays no mux switch");
    assert_eq!(read_back_ns(&set, "buffer", 64), plain + mux);
    // Two launches in a row: one switch back.
    launch();
    launch();
    assert_eq!(read_back_ns(&set, "buffer", 64), plain + mux);
    // An MRAM write after a launch pays it as well, in the CPU-DPU phase.
    launch();
    let before = report::report().phases.cpu_dpu_ns;
    {
        let _c = SdkCall::enter();
        set.dpus()[0]
            .copy_to(SymbolRef::Name("buffer"), 0, &[7u8; 64])
            .unwrap();
    }
    let write = report::report().phases.cpu_dpu_ns - before;
    assert!(
        write >= mux,
        "the write took {write} ns, the switch alone {mux}"
    );
    // The report counts the switches: three reads and one write.
    let r = report::report();
    assert_eq!(r.transfers.mux_switches_from_dpu, 3);
    assert_eq!(r.transfers.mux_switches_to_dpu, 1);
    assert_eq!(r.transfers.mux_switch_ns, 4 * mux);
    check_schema(&r);
    drop(set);
}
