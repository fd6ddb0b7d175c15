//! Where OpenPIM is installed: the checkout the `openpim` binary was built from.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};

/// The paths a user's build and run need: SDK shims, host headers, libdpu.
pub struct Install {
    pub root: PathBuf,
}

impl Install {
    /// Finds the checkout from the running executable (`ROOT/target/<profile>/openpim`),
    /// falling back to the checkout this binary was compiled in.
    pub fn locate() -> Result<Install> {
        let mut candidates = Vec::new();
        if let Ok(exe) = std::env::current_exe().and_then(|p| p.canonicalize()) {
            if let Some(root) = exe.ancestors().nth(3) {
                candidates.push(root.to_path_buf());
            }
        }
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
        for root in candidates {
            if root.join("sdk/bin/dpu-upmem-dpurte-clang").exists() {
                let root = root.canonicalize().unwrap_or(root);
                return Ok(Install { root });
            }
        }
        bail!("cannot find the OpenPIM checkout (sdk/bin/dpu-upmem-dpurte-clang) next to this binary; run it from target/release of a checkout")
    }

    pub fn sdk_bin(&self) -> PathBuf {
        self.root.join("sdk/bin")
    }

    pub fn lib_dir(&self) -> PathBuf {
        self.root.join("target/release")
    }

    /// The UPMEM SDK install layout (`UPMEM_HOME`): `bin/` (the DPU compiler driver under the
    /// SDK's names, `clang`/`clang++` that compile host code unless given the DPU target),
    /// `include/dpu`, `lib/`, `share/upmem/cmake` (the SDK's CMake files).
    pub fn upmem_home(&self) -> PathBuf {
        self.root.join("sdk/upmem-home")
    }

    /// The folder holding the Python `dpu` package.
    pub fn python_dir(&self) -> PathBuf {
        self.root.join("python")
    }

    /// `export` lines for `eval "$(openpim env)"`.
    pub fn shell_exports(&self) -> String {
        let bin = self.sdk_bin();
        let lib = self.lib_dir();
        let home = self.upmem_home();
        format!(
            "export PATH=\"{bin}:{home}/bin:{lib}:$PATH\"\nexport LD_LIBRARY_PATH=\"{lib}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\"\nexport PYTHONPATH=\"{py}${{PYTHONPATH:+:$PYTHONPATH}}\"\nexport OPENPIM_ROOT=\"{root}\"\nexport UPMEM_HOME=\"{home}\"\n",
            bin = bin.display(),
            home = home.display(),
            lib = lib.display(),
            py = self.python_dir().display(),
            root = self.root.display()
        )
    }

    /// A command with the SDK commands first on PATH and libdpu on the loader path.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![
            self.sdk_bin(),
            self.upmem_home().join("bin"),
            self.lib_dir(),
        ];
        paths.extend(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(paths) {
            cmd.env("PATH", joined);
        }
        let ld = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
        let mut libs = vec![self.lib_dir()];
        libs.extend(std::env::split_paths(&ld));
        if let Ok(joined) = std::env::join_paths(libs) {
            cmd.env("LD_LIBRARY_PATH", joined);
        }
        let py = std::env::var_os("PYTHONPATH").unwrap_or_default();
        let mut pys = vec![self.python_dir()];
        pys.extend(std::env::split_paths(&py).filter(|p| !p.as_os_str().is_empty()));
        if let Ok(joined) = std::env::join_paths(pys) {
            cmd.env("PYTHONPATH", joined);
        }
        cmd.env("OPENPIM_ROOT", &self.root);
        cmd.env("UPMEM_HOME", self.upmem_home());
        cmd
    }
}
