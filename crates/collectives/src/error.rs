//! What can be wrong with a collective call: each error names the parameter and what is
//! allowed (libdpu maps them to SDK error codes at the C edge).

/// A collective's error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A parameter is outside what the library supports.
    #[error("{param}: {problem}")]
    Invalid {
        param: &'static str,
        problem: String,
    },
    /// The runtime failed (allocation, transfer, launch).
    #[error(transparent)]
    Runtime(#[from] openpim_runtime::Error),
    /// A worker's answer to a host step run on MPI workers was not what it should be.
    #[error("the collective's host step on MPI worker {worker} answered wrongly: {why}")]
    Worker { worker: u32, why: String },
    /// The relocation programs are not built or cannot be read.
    #[error("the relocation program {path} cannot be loaded ({why}); run `make build`, or set OPENPIM_COLLECTIVES_DIR to the folder holding it")]
    Relocation { path: String, why: String },
}

impl Error {
    pub(crate) fn invalid(param: &'static str, problem: impl Into<String>) -> Error {
        Error::Invalid {
            param,
            problem: problem.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
