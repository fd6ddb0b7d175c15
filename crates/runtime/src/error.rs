//! Errors of the host runtime. Each variant maps to one SDK error code (in libdpu); the
//! message names the cause and, where there is one, the fix.

use thiserror::Error;

/// Where and why a DPU stopped on a fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultInfo {
    /// Rank (machine slot) of the DPU.
    pub rank: u32,
    /// Index of the DPU in its rank.
    pub dpu: u32,
    pub tasklet: u32,
    pub pc: u32,
    /// Function containing `pc` (`name+0xoff`), from the ELF symbols.
    pub function: Option<String>,
    /// The fault's message.
    pub message: String,
}

impl std::fmt::Display for FaultInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DPU {} of rank {} faulted: tasklet {} at pc {:#010x} in {}: {}",
            self.dpu,
            self.rank,
            self.tasklet,
            self.pc,
            self.function.as_deref().unwrap_or("<unknown function>"),
            self.message
        )
    }
}

/// Errors of the host runtime.
#[derive(Debug, Error)]
pub enum Error {
    /// The profile string or hardware profile is invalid.
    #[error("invalid profile: {0}")]
    Profile(#[from] openpim_machine::ConfigError),
    /// Not enough DPUs or ranks.
    #[error("cannot allocate {requested}: {reason}")]
    Allocation { requested: String, reason: String },
    /// The operating system refused a resource (memory mapping, thread).
    #[error("system error: {0}")]
    System(String),
    /// The MRAM backing store failed or refused (host memory, disk, lock, damaged file).
    #[error("{0}")]
    Memory(String),
    /// A checkpoint file could not be written, read, or used.
    #[error("{0}")]
    Checkpoint(String),
    /// The operation does not apply to this DPU set.
    #[error("invalid DPU set: {0}")]
    InvalidDpuSet(String),
    /// The program file does not exist or cannot be read.
    #[error("cannot read DPU program '{path}': {source}")]
    ElfNoSuchFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The program is not a valid DPU program.
    #[error("invalid DPU program{}: {reason}", origin_suffix(.origin))]
    ElfInvalidFile {
        origin: Option<String>,
        reason: String,
    },
    /// The program's code does not fit in IRAM.
    #[error("DPU program{} does not fit in IRAM: its code needs {needed} bytes, IRAM holds {capacity} ({} bytes too many); reduce code size (-Os, fewer or smaller functions, less inlining/unrolling)", origin_suffix(.origin), .needed - .capacity)]
    IramOverflow {
        origin: Option<String>,
        needed: u64,
        capacity: u64,
    },
    /// The program's data, stacks and heap start do not fit in WRAM.
    #[error("DPU program{} does not fit in WRAM: its data and stacks need {needed} bytes{}, WRAM holds {capacity} ({} bytes too many); reduce NR_TASKLETS, STACK_SIZE_DEFAULT / STACK_SIZE_TASKLET_<n> or the size of WRAM variables (move big arrays to MRAM with __mram)", origin_suffix(.origin), stacks_suffix(.stacks), .needed - .capacity)]
    WramOverflow {
        origin: Option<String>,
        needed: u64,
        capacity: u64,
        /// The tasklet stacks' share, when known: (number of tasklets, bytes of stack).
        stacks: Option<(u32, u64)>,
    },
    /// The program was built for more tasklets than a DPU has.
    #[error("DPU program{} was built with NR_TASKLETS={nr}, but a DPU has at most {max} tasklets; build it with -DNR_TASKLETS=<1..{max}>", origin_suffix(.origin))]
    TooManyTasklets {
        origin: Option<String>,
        nr: u32,
        max: u32,
    },
    /// A launch or symbol access on DPUs without a program.
    #[error("no DPU program is loaded on {0}; call dpu_load first")]
    NoProgramLoaded(String),
    /// The symbol is not a host-reachable symbol of the program.
    #[error("unknown symbol '{name}' in the DPU program: host-reachable symbols are __host variables, __mram/__mram_noinit variables, DPU_MRAM_HEAP_POINTER_NAME and functions (check the spelling, and declare WRAM variables with __host)")]
    UnknownSymbol { name: String },
    /// Offset + length goes past the end of the symbol.
    #[error("access of {len} bytes at offset {offset} of symbol {symbol} goes past its end ({size} bytes)")]
    InvalidSymbolAccess {
        symbol: String,
        offset: u32,
        len: u64,
        size: u32,
    },
    /// A WRAM access breaking the alignment or range rules.
    #[error("invalid WRAM access at {address:#x} of {len} bytes: {reason}")]
    InvalidWramAccess {
        address: u64,
        len: u64,
        reason: String,
    },
    /// An IRAM access breaking the alignment or range rules.
    #[error("invalid IRAM access at {address:#x} of {len} bytes: {reason}")]
    InvalidIramAccess {
        address: u64,
        len: u64,
        reason: String,
    },
    /// An MRAM access outside MRAM.
    #[error("invalid MRAM access at {address:#x} of {len} bytes: {reason}")]
    InvalidMramAccess {
        address: u64,
        len: u64,
        reason: String,
    },
    /// One or more DPUs stopped on a fault.
    #[error("{first}{}", more_suffix(*.count))]
    DpuFault { first: Box<FaultInfo>, count: usize },
    /// A user callback returned an error code.
    #[error("a dpu_callback callback returned error code {code}")]
    CallbackFailed { code: u32 },
    /// NONBLOCKING without ASYNC.
    #[error(
        "DPU_CALLBACK_NONBLOCKING needs DPU_CALLBACK_ASYNC (a synchronous callback always blocks)"
    )]
    NonblockingSyncCallback,
    /// A bug or an unexpected state inside OpenPIM.
    #[error("internal error: {0}")]
    Internal(String),
    /// The DPU's printf output went round its ring buffer: the oldest was overwritten, so the
    /// log cannot be shown (as on UPMEM hardware).
    #[error("cannot show the log of DPU {dpu} of rank {rank}: its last launch wrote {written} bytes of printf data into a {capacity}-byte printf buffer, which wrapped over the oldest output; raise STDOUT_BUFFER_INIT(n) in the DPU program, or print less")]
    LogBufferTooSmall {
        rank: u32,
        dpu: u32,
        written: u64,
        capacity: u32,
    },
}

fn origin_suffix(origin: &Option<String>) -> String {
    origin
        .as_ref()
        .map(|o| format!(" '{o}'"))
        .unwrap_or_default()
}

fn stacks_suffix(stacks: &Option<(u32, u64)>) -> String {
    match stacks {
        Some((n, bytes)) => format!(
            " (of which the stacks of its {n} tasklet{} take {bytes})",
            if *n == 1 { "" } else { "s" }
        ),
        None => String::new(),
    }
}

fn more_suffix(count: usize) -> String {
    if count > 1 {
        format!(" (and {} more DPUs faulted)", count - 1)
    } else {
        String::new()
    }
}

impl From<openpim_machine::StoreError> for Error {
    fn from(e: openpim_machine::StoreError) -> Self {
        Error::Memory(e.to_string())
    }
}

/// Result of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A copy of the error for reporting it again (async errors are kept and returned at
    /// sync time). I/O sources are flattened into text.
    pub fn duplicate(&self) -> Error {
        match self {
            Error::Profile(e) => Error::Profile(e.clone()),
            Error::Allocation { requested, reason } => Error::Allocation {
                requested: requested.clone(),
                reason: reason.clone(),
            },
            Error::System(s) => Error::System(s.clone()),
            Error::Memory(s) => Error::Memory(s.clone()),
            Error::Checkpoint(s) => Error::Checkpoint(s.clone()),
            Error::InvalidDpuSet(s) => Error::InvalidDpuSet(s.clone()),
            Error::ElfNoSuchFile { path, source } => Error::ElfNoSuchFile {
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::ElfInvalidFile { origin, reason } => Error::ElfInvalidFile {
                origin: origin.clone(),
                reason: reason.clone(),
            },
            Error::IramOverflow {
                origin,
                needed,
                capacity,
            } => Error::IramOverflow {
                origin: origin.clone(),
                needed: *needed,
                capacity: *capacity,
            },
            Error::WramOverflow {
                origin,
                needed,
                capacity,
                stacks,
            } => Error::WramOverflow {
                origin: origin.clone(),
                needed: *needed,
                capacity: *capacity,
                stacks: *stacks,
            },
            Error::TooManyTasklets { origin, nr, max } => Error::TooManyTasklets {
                origin: origin.clone(),
                nr: *nr,
                max: *max,
            },
            Error::NoProgramLoaded(s) => Error::NoProgramLoaded(s.clone()),
            Error::UnknownSymbol { name } => Error::UnknownSymbol { name: name.clone() },
            Error::InvalidSymbolAccess {
                symbol,
                offset,
                len,
                size,
            } => Error::InvalidSymbolAccess {
                symbol: symbol.clone(),
                offset: *offset,
                len: *len,
                size: *size,
            },
            Error::InvalidWramAccess {
                address,
                len,
                reason,
            } => Error::InvalidWramAccess {
                address: *address,
                len: *len,
                reason: reason.clone(),
            },
            Error::InvalidIramAccess {
                address,
                len,
                reason,
            } => Error::InvalidIramAccess {
                address: *address,
                len: *len,
                reason: reason.clone(),
            },
            Error::InvalidMramAccess {
                address,
                len,
                reason,
            } => Error::InvalidMramAccess {
                address: *address,
                len: *len,
                reason: reason.clone(),
            },
            Error::DpuFault { first, count } => Error::DpuFault {
                first: first.clone(),
                count: *count,
            },
            Error::CallbackFailed { code } => Error::CallbackFailed { code: *code },
            Error::NonblockingSyncCallback => Error::NonblockingSyncCallback,
            Error::Internal(s) => Error::Internal(s.clone()),
            Error::LogBufferTooSmall {
                rank,
                dpu,
                written,
                capacity,
            } => Error::LogBufferTooSmall {
                rank: *rank,
                dpu: *dpu,
                written: *written,
                capacity: *capacity,
            },
        }
    }
}

/// The first error of several (one per rank); DPU faults of several ranks are counted
/// together.
pub(crate) fn merge(results: Vec<Result<()>>) -> Result<()> {
    let mut first: Option<Error> = None;
    let mut extra_faults = 0usize;
    for r in results {
        if let Err(e) = r {
            match (&mut first, e) {
                (None, e) => first = Some(e),
                (Some(Error::DpuFault { .. }), Error::DpuFault { count, .. }) => {
                    extra_faults += count
                }
                _ => {}
            }
        }
    }
    match first {
        None => Ok(()),
        Some(Error::DpuFault { first, count }) => Err(Error::DpuFault {
            first,
            count: count + extra_faults,
        }),
        Some(e) => Err(e),
    }
}

/// True when `OPENPIM_QUIET` asks for no messages on stderr.
pub fn quiet() -> bool {
    std::env::var_os("OPENPIM_QUIET").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The message a panic carried (`&str` or `String` payloads), for one-line reports.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Installs a panic hook that prints one `openpim: internal error at FILE:LINE: MESSAGE
/// (a bug in OpenPIM; WHAT_HAPPENS; please report it)` line instead of Rust's panic message
/// and backtrace hint, unless `RUST_BACKTRACE` is set (kept for debugging OpenPIM) or the
/// line is silenced (`OPENPIM_QUIET`, when `respect_quiet`). Used by the C library and the CLI.
pub fn install_one_line_panic_hook(what_happens: &'static str, respect_quiet: bool) {
    if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| !v.is_empty() && v != "0") {
        return;
    }
    std::panic::set_hook(Box::new(move |info| {
        if respect_quiet && quiet() {
            return;
        }
        let msg = panic_message(info.payload());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let then = if what_happens.is_empty() {
            String::new()
        } else {
            format!("; {what_happens}")
        };
        eprintln!("openpim: internal error{at}: {msg} (a bug in OpenPIM{then}; please report it)");
    }));
}
