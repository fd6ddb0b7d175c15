//! Which DPU engine ran the program's launches and what translating cost: the report's
//! `engine` section. None of it is virtual time (the engine's own work never is: DESIGN.md
//! §2); it tells a user which engine produced the run and how much of it ran as translated
//! code.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use openpim_engine::{Engine, RunOutcome, TranslationStats};
use openpim_machine::MachineConfig;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The report's `engine` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineReport {
    /// `jit` (DPU code translated to host code) or `interp` (the interpreter).
    pub name: String,
    /// Issue slots executed by translated code (over all DPUs and launches run here).
    pub translated_slots: u64,
    /// Slots of translated batches the interpreter executed for them (environment calls,
    /// accesses that stop a batch).
    pub interpreted_slots: u64,
    /// Instructions (issue slots) of those launches: the rest ran on the interpreter's
    /// interleaved path (slots other tasklets could observe, few tasklets running).
    pub instructions: u64,
    /// Regions of DPU code translated, host code bytes made, and the host time it took.
    pub regions: u64,
    pub code_bytes: u64,
    pub translate_ns: u64,
}

#[derive(Default)]
struct Totals {
    engine: Option<Engine>,
    translated: u64,
    interpreted: u64,
    instructions: u64,
    /// Per decoded program (by address, while it lives): its translation so far.
    programs: HashMap<usize, TranslationStats>,
}

static TOTALS: Mutex<Option<Totals>> = Mutex::new(None);

/// An allocation: a bad `OPENPIM_ENGINE` fails it (`DPU_ERR_SYSTEM`, the message naming the
/// variable and its values); asking for `jit` where the host cannot translate prints a
/// one-line notice (once) and runs the interpreter.
pub(crate) fn configure(machine: &MachineConfig) -> Result<()> {
    let engine = machine.engine().map_err(Error::System)?;
    let asked = std::env::var(openpim_machine::ENGINE_ENV)
        .ok()
        .and_then(|v| Engine::parse(v.trim()))
        .or(machine.config.engine);
    static NOTICE: AtomicBool = AtomicBool::new(false);
    if asked == Some(Engine::Translator)
        && engine != Engine::Translator
        && !NOTICE.swap(true, Ordering::Relaxed)
    {
        eprintln!(
            "openpim: this host has no code generator for the translating engine (x86-64 and aarch64 have); the DPUs run on the interpreter"
        );
    }
    Ok(())
}

/// One DPU's run of `program` (the engine's outcome).
pub(crate) fn record(out: &RunOutcome, program: &openpim_engine::Program) {
    let mut g = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let t = g.get_or_insert_with(Totals::default);
    t.engine = Some(out.engine.engine);
    t.translated += out.engine.translated_slots;
    t.interpreted += out.engine.interpreted_slots;
    t.instructions += out.instructions;
    if out.engine.engine == Engine::Translator {
        t.programs.insert(
            program as *const openpim_engine::Program as usize,
            program.translation_stats(),
        );
    }
}

/// The section, if a launch ran in this process.
pub fn report() -> Option<EngineReport> {
    let g = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
    let t = g.as_ref()?;
    let engine = t.engine?;
    let mut r = EngineReport {
        name: engine.name().to_string(),
        translated_slots: t.translated,
        interpreted_slots: t.interpreted,
        instructions: t.instructions,
        ..EngineReport::default()
    };
    for s in t.programs.values() {
        r.regions += s.regions;
        r.code_bytes += s.code_bytes;
        r.translate_ns += s.nanos;
    }
    Some(r)
}
