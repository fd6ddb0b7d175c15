//! Launches real DPU programs built with the SDK shim (`sdk/bin/dpu-upmem-dpurte-clang`).
//! Skips (passes with a note) when the shim or its cross compiler is missing.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use openpim_runtime::{alloc, Error, LaunchPolicy, SymbolRef};

static LOCK: Mutex<()> = Mutex::new(());

const KERNEL: &str = r#"
#include <defs.h>
#include <mram.h>
#include <stdio.h>
#include <stdint.h>
__host uint32_t input[4];
__host uint64_t result;
int main(void) {
    if (me() == 0) {
        result = (uint64_t)input[0] * input[1];
        printf("product %u\n", (unsigned)result);
    }
    return 0;
}
"#;

const CRASH: &str = r#"
#include <defs.h>
#include <attributes.h>
#include <stdint.h>
__host uint32_t input[4];
int main(void) { volatile uint32_t *p = (uint32_t *)0x20000; if (me() == 1) *p = 5; return 0; }
"#;

fn compile(name: &str, src: &str, tasklets: u32) -> Option<PathBuf> {
    let shim =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../sdk/bin/dpu-upmem-dpurte-clang");
    if !shim.exists() {
        eprintln!("skipping: {} not found", shim.display());
        return None;
    }
    let dir = std::env::temp_dir().join(format!("openpim-rt-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let c = dir.join(format!("{name}.c"));
    let out = dir.join(format!("{name}.dpu"));
    std::fs::write(&c, src).ok()?;
    let status = Command::new(&shim)
        .arg(format!("-DNR_TASKLETS={tasklets}"))
        .args(["-O2", "-o"])
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

#[test]
fn launch_computes_logs_and_counts() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = compile("kernel", KERNEL, 4) else {
        return;
    };
    let set = alloc(Some(70), "nrRanks=2").unwrap();
    set.load_file(path.to_str().unwrap()).unwrap();
    for (i, d) in set.dpus().iter().enumerate() {
        let v: Vec<u8> = [i as u32, 1000]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect();
        d.copy_to(SymbolRef::Name("input"), 0, &v).unwrap();
    }
    set.launch(LaunchPolicy::Synchronous).unwrap();
    for (i, d) in set.dpus().iter().enumerate() {
        let mut r = [0u8; 8];
        d.copy_from(SymbolRef::Name("result"), 0, &mut r).unwrap();
        assert_eq!(u64::from_le_bytes(r), i as u64 * 1000);
        let log = String::from_utf8(d.log().unwrap()).unwrap();
        assert_eq!(log, format!("product {}\n", i * 1000));
    }
    let stats = set.last_run_stats();
    assert!(stats
        .iter()
        .all(|s| s.is_some_and(|s| s.cycles > 0 && s.instructions > 0)));
    // Asynchronous launch, then sync.
    set.launch(LaunchPolicy::Asynchronous).unwrap();
    set.sync().unwrap();
    assert_eq!(set.status(), (true, false));
}

#[test]
fn fault_is_reported_with_function() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(path) = compile("crash", CRASH, 2) else {
        return;
    };
    let set = alloc(Some(3), "nrRanks=1").unwrap();
    set.load_file(path.to_str().unwrap()).unwrap();
    let e = set.launch(LaunchPolicy::Synchronous).unwrap_err();
    let Error::DpuFault { first, count } = &e else {
        panic!("{e}")
    };
    assert_eq!(*count, 3);
    assert_eq!(first.tasklet, 1);
    assert!(
        first.function.as_deref().unwrap_or("").starts_with("main"),
        "{e}"
    );
    assert_eq!(set.status(), (true, true));
    // Asynchronous: reported at sync.
    set.launch(LaunchPolicy::Asynchronous).unwrap();
    assert!(matches!(set.sync(), Err(Error::DpuFault { .. })));
}
