//! `openpim checkpoint inspect FILE`: what a checkpoint file (`openpim_checkpoint_save_file`,
//! `DpuSet.checkpoint_save`) holds, after checking every checksum in it.

use std::fmt::Write;
use std::path::Path;

use anyhow::Result;
use openpim_runtime::checkpoint::file;

/// The subcommands of `openpim checkpoint`.
#[derive(clap::Subcommand)]
pub enum CheckpointCmd {
    /// Check a checkpoint file's checksums and describe what it holds.
    Inspect {
        /// A file written by openpim_checkpoint_save_file (C) or DpuSet.checkpoint_save (Python).
        file: String,
    },
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Runs a checkpoint subcommand; the text it prints.
pub fn run(cmd: CheckpointCmd) -> Result<String> {
    match cmd {
        CheckpointCmd::Inspect { file: path } => {
            let s = file::inspect(Path::new(&path)).map_err(|e| anyhow::anyhow!("{e}"))?;
            let mut o = String::new();
            let _ = writeln!(o, "checkpoint {path}: checksums OK");
            let _ =
                writeln!(
                o,
                "DPUs: {} (hardware {}; {} with a program's code, {} whose last launch faulted)",
                s.dpus,
                if s.hardware.is_empty() { "-" } else { &s.hardware },
                s.with_program,
                s.faulted
            );
            let _ = writeln!(
                o,
                "MRAM: {} in pages that are not zero ({}-byte pages), of {} the DPUs have",
                mib(s.mram_data_bytes()),
                s.page_bytes,
                mib(u64::from(s.mram_bytes) * u64::from(s.dpus))
            );
            let _ = writeln!(
                o,
                "stored: {} pages with their bytes, {} as references to an equal page of an earlier DPU ({} not stored again)",
                s.new_pages,
                s.referenced_pages,
                mib(s.referenced_pages * u64::from(s.page_bytes))
            );
            let _ = writeln!(o, "file: {}", mib(s.file_bytes));
            Ok(o)
        }
    }
}
