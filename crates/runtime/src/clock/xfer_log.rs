//! An optional log of every transfer's shape, for studying the bus model offline.
//!
//! With `OPENPIM_XFER_LOG=<file>`, each rank operation that moves bytes between the host and
//! the DPUs appends one line to the file: what the bus model saw (direction, kind, bytes per
//! DPU, DPUs of the rank, ranks and bytes of the whole call, whether the rank's MRAM mux was
//! switched back first) and what it charged. `bench/fidelity/transfer_floor.py` replays these
//! lines under other transfer models: the kernel and the program's calls do not depend on the
//! transfer model, so one run of a fidelity table gives what any model would charge on it.
//! The log is a development aid (not part of the run report); lines that cannot be written
//! are dropped, never failing the run.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

use openpim_machine::{CallShape, Direction, Nanos, XferKind};

/// One rank operation of a transfer, as the bus model saw and charged it.
pub(crate) struct XferLine {
    pub rank: u32,
    pub issue_ns: Nanos,
    pub dir: Direction,
    pub kind: XferKind,
    pub bytes_per_dpu: u64,
    pub dpus: u32,
    pub call: CallShape,
    pub mux: bool,
    pub inter_dpu: bool,
    /// The bus model's time, the measured host interleaving, and what was charged in all.
    pub modeled_ns: u64,
    pub host_ns: u64,
    pub charged_ns: u64,
}

fn log_file() -> Option<&'static Mutex<File>> {
    static LOG: OnceLock<Option<Mutex<File>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let path = std::env::var_os("OPENPIM_XFER_LOG")?;
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        // The header once per process (several processes may append to one file).
        let _ = writeln!(
            f,
            "# pid rank issue_ns dir kind bytes_per_dpu dpus call_ranks call_bytes mux inter_dpu modeled_ns host_ns charged_ns"
        );
        Some(Mutex::new(f))
    })
    .as_ref()
}

/// Appends `line` to the log when `OPENPIM_XFER_LOG` names one.
pub(crate) fn record(line: &XferLine) {
    let Some(log) = log_file() else {
        return;
    };
    let dir = match line.dir {
        Direction::ToDpu => "to",
        Direction::FromDpu => "from",
    };
    let text = format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {}\n",
        std::process::id(),
        line.rank,
        line.issue_ns,
        dir,
        line.kind.name(),
        line.bytes_per_dpu,
        line.dpus,
        line.call.ranks,
        line.call.bytes,
        u8::from(line.mux),
        u8::from(line.inter_dpu),
        line.modeled_ns,
        line.host_ns,
        line.charged_ns,
    );
    if let Ok(mut f) = log.lock() {
        let _ = f.write_all(text.as_bytes());
    }
}
