//! The MPI side of a distributed run (`openpim run --mpi N`, docs/scale-out.md).
//!
//! The MPI job is `N + 1` processes of `openpim worker`: MPI rank 0 is the **gateway**, on
//! the host program's machine, which relays the program's requests (over a UNIX socket, from
//! the runtime's `exec::mpi` backend) to the **workers** (MPI ranks 1..=N) and watches them
//! with a heartbeat; each worker runs the ranks it holds on the in-process engine
//! ([`serve`]). The host program is not an MPI process: it keeps the virtual clock, and a
//! worker's death reaches it as an SDK error, never as the end of its process.
//!
//! Without the `mpi` feature (a build on a machine without OpenMPI) the processes cannot
//! start, and [`run_node`] says how to get them.

pub mod launch;
pub mod order;
pub mod peers;
#[cfg(feature = "mpi")]
mod relay;
pub mod serve;
pub mod threads;
pub mod wake;

#[cfg(feature = "mpi")]
mod node;
#[cfg(feature = "mpi")]
pub mod transport;

use std::os::unix::net::UnixStream;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use openpim_runtime::exec::mpi::wire::{read_frame, write_frame};

/// A message of the MPI job to send (`transport::Transport::post_message`): `head`, then each
/// buffer of `data` (a worker's reply: its head, then a read's bytes as the engine read them,
/// sent without being copied behind the head).
pub struct Outgoing {
    pub head: Vec<u8>,
    pub data: Vec<Vec<u8>>,
}

impl From<Vec<u8>> for Outgoing {
    fn from(head: Vec<u8>) -> Outgoing {
        Outgoing {
            head,
            data: Vec::new(),
        }
    }
}

/// The worker index a frame from the launcher carries to stop the run.
pub const STOP_WORKER: u32 = u32::MAX;

/// The environment variable with the bound, in seconds, after which a worker that does not
/// answer the heartbeat is taken for dead (default [`DEFAULT_TIMEOUT_S`]); the launcher's
/// waits use it too.
pub const TIMEOUT_ENV: &str = "OPENPIM_MPI_TIMEOUT";
/// The default of [`TIMEOUT_ENV`].
pub const DEFAULT_TIMEOUT_S: f64 = 30.0;

/// Whether this build has the MPI processes.
pub const AVAILABLE: bool = cfg!(feature = "mpi");

/// What to do when this build has no MPI.
pub const NO_MPI_FIX: &str = "this openpim was built without MPI (OpenMPI was not found at build time); install it (scripts/setup.sh installs libopenmpi-dev, openmpi-bin and libclang-dev) and rebuild with `make build`";

/// The bound of [`TIMEOUT_ENV`].
pub fn timeout() -> Result<Duration, String> {
    match std::env::var(TIMEOUT_ENV) {
        Err(_) => Ok(Duration::from_secs_f64(DEFAULT_TIMEOUT_S)),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
            _ => Err(format!(
                "{TIMEOUT_ENV}={v} is not a number of seconds between 0 and 86400 (the default is {DEFAULT_TIMEOUT_S})"
            )),
        },
    }
}

/// Runs this process's part of the MPI job (`openpim worker`): the gateway listening on
/// `socket` when it is MPI rank 0, a worker otherwise.
pub fn run_node(socket: &str) -> Result<(), String> {
    #[cfg(feature = "mpi")]
    {
        node::run(socket)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = socket;
        Err(NO_MPI_FIX.to_string())
    }
}

/// Asks the gateway at `socket` to end the run (the launcher, once the program has exited).
pub fn request_stop(socket: &str) -> std::io::Result<()> {
    let mut s = UnixStream::connect(socket)?;
    let _ = read_frame(&mut s)?;
    write_frame(&mut s, 0, &STOP_WORKER.to_le_bytes(), &[])
}

/// A mutex's guard, also when a thread panicked holding it (the data stays usable: every
/// critical section of this crate leaves it consistent).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
