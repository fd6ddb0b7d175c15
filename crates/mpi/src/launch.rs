//! Starting and stopping the MPI job of `openpim run --mpi N`.
//!
//! The job is `mpirun ... -np N+1 openpim worker --socket S`: MPI rank 0, the gateway, runs on
//! this machine (the first slot of the hostfile, or this machine without one) and listens on
//! `S` once every worker has greeted it; the launcher then starts the host program with
//! `OPENPIM_MPI=S`, and asks the gateway to end the job when the program has exited.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How the job is started.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Worker processes (besides the gateway).
    pub workers: u32,
    /// The machines (OpenMPI's hostfile); none: every process on this machine.
    pub hostfile: Option<PathBuf>,
    /// The `openpim` executable the processes run.
    pub exe: PathBuf,
    /// Where the gateway listens.
    pub socket: PathBuf,
    /// Simulation threads per worker (`OPENPIM_THREADS`), when the launcher chooses them.
    pub threads: Option<u32>,
}

/// The simulation threads of each of `workers` workers sharing this machine when the user
/// chose none (`OPENPIM_THREADS` unset, no hostfile): the machine's cores shared out, so that
/// the workers together use every core once.
pub fn shared_threads(workers: u32, hostfile: bool) -> Option<u32> {
    if hostfile || std::env::var_os("OPENPIM_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    Some((cores / workers.max(1)).max(1))
}

/// Checks the request against the machine before any process starts.
pub fn check(workers: u32, nr_ranks: u32) -> Result<(), String> {
    if workers == 0 {
        return Err("--mpi needs at least one worker (--mpi N, N >= 1)".into());
    }
    if workers > nr_ranks {
        return Err(format!(
            "--mpi {workers} asks for more workers than the machine has ranks ({nr_ranks}): each worker holds at least one of its ranks; ask for at most {nr_ranks} workers, or for more ranks (--ranks)"
        ));
    }
    Ok(())
}

/// The assignment of the machine's ranks to `workers` workers, one line per worker (what
/// `openpim info --mpi N` prints).
pub fn assignment(workers: u32, nr_ranks: u32) -> String {
    let mut out = format!(
        "MPI workers: {workers} (MPI ranks 1..={workers}; the gateway is MPI rank 0, on the host program's machine)\n"
    );
    for w in 0..workers {
        let slots: Vec<String> = (0..nr_ranks)
            .filter(|s| openpim_runtime::exec::mpi::wire::worker_of_slot(*s, workers) == w)
            .map(|s| s.to_string())
            .collect();
        out += &format!(
            "  worker {} (MPI rank {}): {} ranks, slots {}\n",
            w + 1,
            w + 1,
            slots.len(),
            slots.join(", ")
        );
    }
    if workers > 1 {
        out += &format!(
            "  an allocation of R ranks with 2 R <= {workers} splits each rank's DPUs over {workers} / R workers (OPENPIM_MPI_SPLIT=off: whole ranks only)\n"
        );
    }
    out
}

/// The environment the job's processes get from the launcher's (`-x`): the machine options
/// and OpenPIM's settings, and the paths the processes are found with.
fn forwarded_env() -> Vec<String> {
    let mut names: Vec<String> = std::env::vars()
        .map(|(k, _)| k)
        .filter(|k| {
            (k.starts_with("OPENPIM_") || k == "UPMEM_PROFILE_BASE" || k == "LD_LIBRARY_PATH")
                // The report and trace are the host program's.
                && !matches!(k.as_str(), "OPENPIM_MPI" | "OPENPIM_REPORT" | "OPENPIM_TRACE")
        })
        .collect();
    names.push("PATH".into());
    names.sort();
    names
}

/// The first machine a hostfile names (where MPI rank 0, the gateway, runs).
fn first_host(hostfile: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(hostfile)
        .map_err(|e| format!("cannot read the hostfile {}: {e}", hostfile.display()))?;
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .find(|l| !l.is_empty())
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
        .ok_or_else(|| format!("the hostfile {} names no machine", hostfile.display()))
}

fn this_host() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into buf.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if r != 0 {
        return String::new();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// hwloc's settings for a job on one machine: no I/O device discovery, no plugins that look
/// for GPUs (the processes inherit them from mpirun).
const ONE_MACHINE_HWLOC: [(&str, &str); 2] = [
    ("HWLOC_COMPONENTS", "-linuxio,-pci"),
    ("HWLOC_PLUGINS_BLACKLIST", "hwloc_gl,hwloc_opencl,hwloc_pci"),
];

/// The `mpirun` command of the job.
pub fn mpirun_command(plan: &Plan) -> Result<Command, String> {
    let mut cmd = Command::new("mpirun");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        cmd.arg("--allow-run-as-root");
    }
    match &plan.hostfile {
        Some(f) => {
            let first = first_host(f)?;
            let here = this_host();
            let short = here.split('.').next().unwrap_or("").to_string();
            if !["localhost", "127.0.0.1", here.as_str(), short.as_str()].contains(&first.as_str())
            {
                return Err(format!(
                    "the hostfile {} starts with '{first}', but the gateway (MPI rank 0) must run on this machine ('{here}'), where the program runs: list this machine first",
                    f.display()
                ));
            }
            cmd.arg("--hostfile").arg(f);
        }
        // Every process here, whatever the cores.
        None => {
            cmd.arg("--oversubscribe");
            // On one machine the processes talk through shared memory (the ob1 messaging
            // layer); the cm layer only probes for fabric NICs (PSM2, OFI), which took 0.2 s
            // of every MPI_Init here. The user's own choice (OMPI_MCA_pml) wins.
            if std::env::var_os("OMPI_MCA_pml").is_none() {
                cmd.args(["--mca", "pml", "^cm"]);
            }
            // hwloc, OpenMPI's view of the machine, looks for I/O devices at every start of
            // every process: in a VM each PCI configuration read traps (about 30 ms of each
            // run's 0.15 s start and stop here), and its plugins load the OpenGL and OpenCL
            // libraries (about 10 ms more). Processes on one machine use neither: only the
            // cores and memory. The user's own settings win.
            for (name, value) in ONE_MACHINE_HWLOC {
                if std::env::var_os(name).is_none() {
                    cmd.env(name, value);
                }
            }
        }
    }
    // A worker's engine uses all the cores it is given; one death does not end the job (the
    // gateway reports it to the program).
    cmd.args(["--bind-to", "none", "--enable-recovery"]);
    let mut names = forwarded_env();
    if let Some(t) = plan.threads {
        cmd.env("OPENPIM_THREADS", t.to_string());
        if !names.iter().any(|n| n == "OPENPIM_THREADS") {
            names.push("OPENPIM_THREADS".into());
        }
    }
    for name in names {
        cmd.arg("-x").arg(name);
    }
    cmd.arg("-np")
        .arg((plan.workers + 1).to_string())
        .arg(&plan.exe)
        .arg("worker")
        .arg("--socket")
        .arg(&plan.socket);
    Ok(cmd)
}

/// A running MPI job.
pub struct Job {
    mpirun: Child,
    socket: PathBuf,
}

impl Job {
    /// Starts the job and waits until the gateway listens (every worker has started), at
    /// most `patience`.
    pub fn start(plan: &Plan, patience: Duration) -> Result<Job, String> {
        let mut cmd = mpirun_command(plan)?;
        cmd.stdin(Stdio::null());
        // mpirun ends the job when the launcher dies (killed, or stopped by a signal it does
        // not handle): no worker outlives the run.
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
        let mut mpirun = cmd.spawn().map_err(|e| {
            format!("cannot start mpirun ({e}); install OpenMPI (scripts/setup.sh installs openmpi-bin)")
        })?;
        let end = Instant::now() + patience;
        loop {
            if plan.socket.exists() {
                return Ok(Job {
                    mpirun,
                    socket: plan.socket.clone(),
                });
            }
            if let Ok(Some(status)) = mpirun.try_wait() {
                return Err(format!(
                    "the MPI job ended before its workers were ready ({status}); see mpirun's messages above"
                ));
            }
            if Instant::now() > end {
                let _ = mpirun.kill();
                let _ = mpirun.wait();
                return Err(format!(
                    "the MPI job's workers were not ready within {:.0} s ({})",
                    patience.as_secs_f64(),
                    crate::TIMEOUT_ENV
                ));
            }
            // (Short: every run waits here, for the processes' start.)
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Ends the job: the gateway is asked to stop the workers; mpirun is stopped if it has
    /// not ended within `patience`. Leaves no process behind.
    pub fn stop(mut self, patience: Duration) {
        let _ = crate::request_stop(&self.socket.to_string_lossy());
        let end = Instant::now() + patience;
        while Instant::now() < end {
            if let Ok(Some(_)) = self.mpirun.try_wait() {
                return;
            }
            // (Short: every run waits here, for the job's end.)
            std::thread::sleep(Duration::from_millis(2));
        }
        // mpirun ends its processes on SIGTERM.
        // SAFETY: a signal to our own child, by its pid.
        unsafe { libc::kill(self.mpirun.id() as libc::pid_t, libc::SIGTERM) };
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.mpirun.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // What mpirun could not end (a stopped process, say) is ended by pid.
        for pid in descendants(self.mpirun.id()) {
            // SAFETY: a signal to a process this job started, by its pid.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.mpirun.kill();
        let _ = self.mpirun.wait();
    }
}

/// The processes under `pid` (from /proc), children first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`: the command may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for c in children.get(&p).into_iter().flatten() {
            out.push(*c);
            todo.push(*c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_more_workers_than_ranks() {
        let e = check(5, 4).unwrap_err();
        assert!(e.contains("--mpi 5") && e.contains("(4)"), "{e}");
        assert!(check(0, 4).is_err());
        assert!(check(4, 4).is_ok());
    }

    #[test]
    fn one_machine_skips_the_fabric_probe_unless_the_user_chose() {
        let plan = Plan {
            workers: 2,
            hostfile: None,
            exe: "/bin/openpim".into(),
            socket: "/tmp/s".into(),
            threads: Some(1),
        };
        let args = |c: &Command| -> Vec<String> {
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let a = args(&mpirun_command(&plan).unwrap());
        if std::env::var_os("OMPI_MCA_pml").is_none() {
            assert!(a.windows(3).any(|w| w == ["--mca", "pml", "^cm"]), "{a:?}");
        }
        assert!(a.contains(&"--oversubscribe".to_string()), "{a:?}");
        let env = |c: &Command, name: &str| {
            c.get_envs()
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
        };
        let one = mpirun_command(&plan).unwrap();
        if std::env::var_os("HWLOC_COMPONENTS").is_none() {
            assert_eq!(
                env(&one, "HWLOC_COMPONENTS").as_deref(),
                Some("-linuxio,-pci")
            );
        }
        // A cluster's machines keep hwloc's defaults (their NICs' places may matter).
        let dir = std::env::temp_dir().join(format!("openpim-hosts-{}", std::process::id()));
        std::fs::write(&dir, "localhost slots=4\n").unwrap();
        let cluster = mpirun_command(&Plan {
            hostfile: Some(dir.clone()),
            ..plan
        })
        .unwrap();
        let _ = std::fs::remove_file(&dir);
        assert_eq!(env(&cluster, "HWLOC_COMPONENTS"), None);
    }

    #[test]
    fn assignment_spreads_slots() {
        let a = assignment(2, 4);
        assert!(
            a.contains("worker 1 (MPI rank 1): 2 ranks, slots 0, 2"),
            "{a}"
        );
        assert!(
            a.contains("worker 2 (MPI rank 2): 2 ranks, slots 1, 3"),
            "{a}"
        );
    }
}
