//! The engine: mutated DPU programs (the seed corpus holds the conformance programs in
//! `EngineCase` form) with random WRAM and MRAM, run to a cycle bound. Every run ends with a
//! result or a named fault, never a panic or an access outside the DPU's memories (the
//! target is built with AddressSanitizer). Differential checks, cheap enough to run on every
//! input:
//! - the interpreter without its shortcuts, observed by a probe (`run_probed`, the seam of the
//!   developer tools), gives the same outcome, cycles and memories, and the probe sees each
//!   issue slot once (as many as the run's instructions);
//! - the two engines give the same: the run above is the default engine's (the translating
//!   engine, `Engine::Translator`, on x86-64), run again on the interpreter with its
//!   shortcuts (`Engine::Interpreter`);
//! - two DPUs run at once on two threads give what each gives alone (runs share nothing:
//!   the number of simulation threads never changes a result).
#![no_main]

use libfuzzer_sys::fuzz_target;
use openpim_engine::probe::{DpuView, Probe, Slot};
use openpim_engine::{
    map, run, run_probed, DpuMemory, Engine, Fault, Program, RunOutcome, Timing,
};
use openpim_fuzz::engine_case::{EngineCase, MAX_CYCLES};

struct Result {
    outcome: RunOutcome,
    wram: Vec<u8>,
    mram: Vec<u8>,
}

fn run_case(case: &EngineCase, program: &Program, seed: u64) -> Result {
    run_on(case, program, seed, &case.timing())
}

fn run_on(case: &EngineCase, program: &Program, seed: u64, timing: &Timing) -> Result {
    let mut wram = case.wram_memory();
    let mut mram = EngineCase::mram_memory(seed);
    let outcome = run(
        program,
        &case.boot(),
        DpuMemory {
            wram: &mut wram,
            mram: &mut mram,
        },
        timing,
    );
    Result {
        outcome,
        wram,
        mram,
    }
}

/// Counts the issue slots a probed run shows.
#[derive(Default)]
struct Slots(u64);

impl Probe for Slots {
    fn after_issue(&mut self, _dpu: &mut DpuView<'_, '_>, _slot: &Slot, _ops: u32) {
        self.0 += 1;
    }
}

/// The case on the probed interpreter; returns the run and the slots the probe saw.
fn run_probed_case(case: &EngineCase, program: &Program) -> (Result, u64) {
    let mut wram = case.wram_memory();
    let mut mram = EngineCase::mram_memory(case.mram_seed);
    let mut slots = Slots::default();
    let outcome = run_probed(
        program,
        &case.boot(),
        DpuMemory {
            wram: &mut wram,
            mram: &mut mram,
        },
        &case.timing(),
        None,
        &mut slots,
    );
    let result = Result {
        outcome,
        wram,
        mram,
    };
    (result, slots.0)
}

fn same(a: &Result, b: &Result, what: &str) {
    assert_eq!(a.outcome, b.outcome, "{what}: outcomes differ");
    assert!(a.wram == b.wram, "{what}: WRAM differs");
    assert!(a.mram == b.mram, "{what}: MRAM differs");
}

fuzz_target!(|data: &[u8]| {
    let case = EngineCase::decode(data);
    // (Translated at once: the inputs are small programs.)
    let program = Program::decode_with(map::IRAM_BASE, &case.text, case.fuse_pairs)
        .with_translation_threshold(0);
    let a = run_case(&case, &program, case.mram_seed);

    let o = &a.outcome;
    if let Some(f) = &o.fault {
        // A named fault, with where it happened.
        assert!(!f.describe(&program).is_empty());
        assert!(f.tasklet < case.nr_tasklets || matches!(f.fault, Fault::BadBoot { .. }));
        if let Fault::CycleLimit { limit } = f.fault {
            assert_eq!(limit, MAX_CYCLES);
        }
    } else {
        assert!(
            o.cycles <= MAX_CYCLES + 4096,
            "ran {} cycles past the bound",
            o.cycles
        );
    }
    assert!(o.stats.tasklets.len() <= case.nr_tasklets as usize);
    // The engine's per-launch printf output bound (64 MiB) plus one clamped field.
    assert!(
        o.log.len() <= (64 << 20) + 8192,
        "{} bytes of log",
        o.log.len()
    );

    // Without the interpreter's shortcuts, under a probe: the same outcome, every slot seen.
    let (probed, slots) = run_probed_case(&case, &program);
    same(&a, &probed, "without shortcuts, probed");
    assert_eq!(slots, a.outcome.instructions, "slots the probe saw");

    // The other engine: the interpreter with its shortcuts (the run above is the translating
    // engine's where the host has one).
    let interp = Timing {
        engine: Engine::Interpreter,
        ..case.timing()
    };
    same(
        &a,
        &run_on(&case, &program, case.mram_seed, &interp),
        "the interpreter's engine",
    );

    // Two DPUs at once on two threads: each as alone.
    let seed_b = case.mram_seed ^ 0x9e37_79b9_7f4a_7c15;
    let b = run_case(&case, &program, seed_b);
    let (pa, pb) = std::thread::scope(|s| {
        let ta = s.spawn(|| run_case(&case, &program, case.mram_seed));
        let tb = s.spawn(|| run_case(&case, &program, seed_b));
        (ta.join().expect("thread a"), tb.join().expect("thread b"))
    });
    same(&a, &pa, "thread A");
    same(&b, &pb, "thread B");
});
