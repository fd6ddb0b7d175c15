//! Suspending a served rank to disk and resuming it, on the same or another slot (the
//! daemon's oversubscription: a tenant's idle rank is put aside so that a waiting tenant can
//! have the slot, and comes back when its tenant calls again).
//!
//! What a rank holds between operations is its DPUs' memories and, per DPU, the outcome of
//! the last launch (log, statistics, fault): nothing runs between operations (see
//! `checkpoint`). The memories go to a checkpoint file in the format of `openpim
//! checkpoint` (IRAM, WRAM, MRAM pages that are not zero, each page equal to an earlier
//! DPU's stored once, checksums), so that they leave the host's memory; the rest is small
//! and stays in memory, with the programs (shared `Arc`s the tenant's loads created).
//!
//! Resuming fills a fresh rank through the same paths an operation uses (MRAM writes are
//! admitted by the process's store), so the DPUs hold exactly what they held, and their next
//! launch runs with the same results and cycle counts. Nothing of this reaches the tenant's
//! virtual timeline: a served rank reports facts per operation, and these are not
//! operations of the tenant.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use openpim_machine::{map, MachineConfig};

use crate::checkpoint::file::{self as checkpoint_file, Summary};
use crate::clock::stats::DpuRunStats;
use crate::error::{Error, FaultInfo, Result};
use crate::exec::local::logs::{LaunchLog, LogAccount};
use crate::exec::local::served::ServedRank;
use crate::program::Program;

/// What a DPU keeps of its last launch besides memories.
#[derive(Clone)]
struct LastLaunch {
    log: LaunchLog,
    stats: Option<DpuRunStats>,
    fault: Option<FaultInfo>,
    dma_quirk: Option<String>,
    waiting: Option<String>,
}

/// A rank put aside: its memories in a file (removed when this is dropped), the rest here.
pub struct SuspendedRank {
    path: PathBuf,
    nr_dpus: u32,
    machine: Arc<MachineConfig>,
    programs: Vec<Option<Arc<Program>>>,
    last: Vec<LastLaunch>,
    faulted: bool,
    /// The account its DPUs' printf output is charged to (the tenant's, in the daemon).
    logs: Arc<LogAccount>,
    summary: Summary,
}

impl std::fmt::Debug for SuspendedRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SuspendedRank({} DPUs in {})",
            self.nr_dpus,
            self.path.display()
        )
    }
}

/// IRAM as the DPU holds it: the program's code at its place (zero elsewhere).
fn iram_image(program: Option<&Arc<Program>>, buf: &mut [u8]) {
    buf.fill(0);
    if let Some(p) = program {
        let at = (p.text_base() - map::IRAM_BASE) as usize;
        let text = p.text();
        let end = (at + text.len()).min(buf.len());
        if at < end {
            buf[at..end].copy_from_slice(&text[..end - at]);
        }
    }
}

impl ServedRank {
    /// Writes the rank's DPUs to `path` and returns what resumes them. The rank itself is
    /// untouched (its caller drops it, which wipes the slot). The caller makes sure no
    /// operation runs on it meanwhile (one holds the rank's state lock for the whole save
    /// anyway).
    pub fn suspend(&self, path: &Path) -> Result<SuspendedRank> {
        let rank = self.local();
        let state = rank.lock_state();
        let programs = rank.lock_meta().programs.clone();
        let hardware = rank.machine().hardware.name.clone();
        let mut w = checkpoint_file::Writer::create(path, rank.nr_dpus(), &hardware)?;
        let mut iram = vec![0u8; map::IRAM_SIZE as usize];
        let mut last = Vec::with_capacity(state.dpus.len());
        for (dpu, program) in state.dpus.iter().zip(&programs) {
            iram_image(program.as_ref(), &mut iram);
            w.dpu(dpu.fault.is_some(), dpu.mem.wram(), &iram, dpu.mem.mram())?;
            last.push(LastLaunch {
                log: dpu.log.get(),
                stats: dpu.stats,
                fault: dpu.fault.clone(),
                dma_quirk: dpu.dma_quirk.clone(),
                waiting: dpu.waiting.clone(),
            });
        }
        let summary = w.finish()?;
        Ok(SuspendedRank {
            path: path.to_path_buf(),
            nr_dpus: rank.nr_dpus(),
            machine: Arc::clone(rank.machine_arc()),
            programs,
            last,
            faulted: rank.faulted(),
            logs: rank.log_account(),
            summary,
        })
    }
}

impl SuspendedRank {
    /// Bytes of the file that holds the memories.
    pub fn file_bytes(&self) -> u64 {
        self.summary.file_bytes
    }

    /// MRAM bytes the file stands for (pages that are not zero).
    pub fn mram_bytes(&self) -> u64 {
        self.summary.mram_data_bytes()
    }

    /// DPUs of the rank.
    pub fn nr_dpus(&self) -> u32 {
        self.nr_dpus
    }

    /// The machine (hardware, run options) the rank was made for.
    pub fn machine(&self) -> &MachineConfig {
        &self.machine
    }

    /// The rank back on slot `slot` (any free slot of the same machine). The file is checked
    /// (checksums) and stays until this is dropped, so that a failed resume can be retried.
    pub fn resume(&self, slot: u32) -> Result<ServedRank> {
        let served = ServedRank::new(slot, self.nr_dpus, Arc::clone(&self.machine))?;
        served.charge_logs_to(Arc::clone(&self.logs));
        let rank = served.local();
        {
            let mut state = rank.lock_state();
            let mut pages_of: Vec<Vec<(u32, Vec<u8>)>> = vec![Vec::new(); self.nr_dpus as usize];
            let mut wram_of: Vec<Vec<u8>> = vec![Vec::new(); self.nr_dpus as usize];
            // One pass checks the whole file; nothing is written into the rank before.
            checkpoint_file::read(&self.path, |k, rec| {
                let k = k as usize;
                if k >= pages_of.len() {
                    return Err(Error::Checkpoint(format!(
                        "suspended rank {} holds more DPUs than the rank ({})",
                        self.path.display(),
                        self.nr_dpus
                    )));
                }
                pages_of[k] = rec.pages;
                wram_of[k] = rec.wram;
                Ok(())
            })?;
            for (k, dpu) in state.dpus.iter_mut().enumerate() {
                let wram = dpu.mem.wram_mut();
                wram.fill(0);
                wram[..wram_of[k].len()].copy_from_slice(&wram_of[k]);
                // Runs of consecutive pages in one write each.
                let pages = std::mem::take(&mut pages_of[k]);
                let mut i = 0;
                while i < pages.len() {
                    let mut j = i + 1;
                    while j < pages.len() && pages[j].0 == pages[j - 1].0 + 1 {
                        j += 1;
                    }
                    let run: Vec<u8> = pages[i..j].iter().flat_map(|(_, b)| b.clone()).collect();
                    let offset = pages[i].0 * checkpoint_file::PAGE as u32;
                    rank.write_mram(&mut dpu.mem, offset, &run, None)?;
                    i = j;
                }
                let last = self.last[k].clone();
                dpu.log.replace(last.log, &self.logs);
                dpu.stats = last.stats;
                dpu.fault = last.fault;
                dpu.dma_quirk = last.dma_quirk;
                dpu.waiting = last.waiting;
            }
            rank.persist(&state, openpim_machine::Persist::Transfer, 0..self.nr_dpus)?;
        }
        rank.lock_meta().programs.clone_from(&self.programs);
        rank.set_faulted(self.faulted);
        Ok(served)
    }
}

impl Drop for SuspendedRank {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
