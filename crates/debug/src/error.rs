//! Errors of the debugging tools' configuration and files.

use thiserror::Error;

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum Error {
    /// An environment variable (or option) with a value the tool does not accept.
    #[error("{var}={value}: {why}")]
    BadSetting {
        var: &'static str,
        value: String,
        why: String,
    },
    /// The GDB server's address cannot be listened on.
    #[error("cannot listen for GDB on {addr}: {why} (choose another port: --gdb=127.0.0.1:PORT)")]
    Bind { addr: String, why: String },
    /// A file the tool reads is not what it expects.
    #[error("{path}: {why}")]
    BadFile { path: String, why: String },
}
