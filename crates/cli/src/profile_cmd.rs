//! `openpim profile [--dpu RANK.DPU|all] [--out DIR] -- CMD`: runs the program with the
//! exact DPU profiler (`OPENPIM_PROFILE`, crates/profile) and draws the flame graphs.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

use crate::install::Install;

/// The options of `openpim profile` besides the machine and report ones.
#[derive(clap::Args, Clone)]
pub struct ProfileOpts {
    /// The DPUs to profile: `all` (summed) or RANK.DPU (e.g. 0.3).
    #[arg(long, value_name = "RANK.DPU|all", default_value = "all")]
    pub dpu: String,
    /// The directory of the profile's files (created if missing).
    #[arg(long, value_name = "DIR", default_value = "openpim-profile")]
    pub out: PathBuf,
}

impl ProfileOpts {
    /// Checks the options and sets the variables the program's libdpu reads
    /// (`OPENPIM_PROFILE`, `OPENPIM_PROFILE_DPU`); the directory, absolute.
    pub fn prepare(&self) -> Result<PathBuf> {
        openpim_profile::Selection::parse(&self.dpu).map_err(|_| {
            anyhow::anyhow!(
                "--dpu {}: not a DPU; give `all` or RANK.DPU (e.g. 0.3: DPU 3 of rank 0)",
                self.dpu
            )
        })?;
        std::fs::create_dir_all(&self.out).with_context(|| {
            format!(
                "--out {}: cannot create the directory; give a directory that can be written",
                self.out.display()
            )
        })?;
        let dir = std::fs::canonicalize(&self.out)
            .with_context(|| format!("--out {}", self.out.display()))?;
        // Files of an earlier profile in the same directory would pass for this run's.
        for entry in std::fs::read_dir(&dir)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == "profile.txt"
                || name == "profile.json"
                || name == "profile.speedscope.json"
                || name.ends_with(".folded")
                || (name.ends_with(".png")
                    && (name.starts_with("run") || name.starts_with("launch-")))
            {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        std::env::set_var(openpim_profile::PROFILE_ENV, &dir);
        std::env::set_var(openpim_profile::PROFILE_DPU_ENV, self.dpu.trim());
        // The profiler sees the DPUs this process's libdpu runs: not a daemon's or MPI
        // workers'.
        std::env::remove_var(openpim_runtime::exec::remote::SERVER_ENV);
        Ok(dir)
    }
}

/// After the run: draws each folded-stack file of `dir` as a flame graph PNG.
pub fn draw(install: &Install, dir: &Path) -> Result<()> {
    let script = install.root.join("scripts/flamegraph.py");
    let status = Command::new("python3")
        .arg(&script)
        .arg(dir)
        .status()
        .context("could not start python3 to draw the flame graphs (install it, with matplotlib: scripts/setup.sh)")?;
    if !status.success() {
        bail!(
            "the flame graphs of {} were not drawn (see above; scripts/setup.sh installs matplotlib); the profile's other files are written",
            dir.display()
        );
    }
    Ok(())
}

/// The exit code of the profiled program, once the graphs are drawn. A program that failed
/// before any profiled launch keeps its own exit code (with a note); one that succeeded
/// without writing a profile is an error of the run.
pub fn finish(install: &Install, dir: &Path, code: ExitCode) -> Result<ExitCode> {
    if code != ExitCode::SUCCESS && !dir.join("profile.txt").is_file() {
        eprintln!(
            "openpim: no profile was written to {} (the program failed before a profiled launch ended)",
            dir.display()
        );
        return Ok(code);
    }
    if !dir.join("profile.txt").is_file() {
        bail!(
            "no profile was written to {}: the program made no DPU launch of the selection (see any message above), or no SDK call at all",
            dir.display()
        );
    }
    // The flame graphs need Python and matplotlib; without them the other files stand, and
    // the run's exit status is the program's.
    match draw(install, dir) {
        Ok(()) => eprintln!(
            "openpim: profile in {} (profile.txt, run.png; speedscope: profile.speedscope.json)",
            dir.display()
        ),
        Err(e) => eprintln!("openpim: warning: {e:#}"),
    }
    Ok(code)
}
