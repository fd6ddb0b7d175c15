//! The printf output of the DPUs' last launches, bounded for the whole process.
//!
//! The engine bounds one DPU's formatted output per launch (64 MiB), and the DPU program's
//! printf buffer bounds what it may print raw. But every DPU keeps its last launch's output
//! until the next one, so a launch on N DPUs could make the process hold N × 64 MiB. All the
//! logs held together are therefore charged to one process-wide budget
//! ([`LOG_BUDGET_ENV`], default [`DEFAULT_LOG_BUDGET`]): a DPU's output that does not fit is
//! cut at what fits, and ends with a line saying so and how to raise the budget. Nothing else
//! changes: the launch's result, its cycles and the DPU's memories are as without the cut.
//! A launch charges its DPUs' outputs in DPU order once the rank has run (see the rank's
//! launch): which DPU is cut never depends on which simulation thread finished first.
//!
//! The budget is an account's ([`LogAccount`]): in a program, one for the whole process; in
//! the rank-manager daemon, one per tenant (the daemon charges a rank's logs to the tenant
//! holding it), so that one tenant's output cannot use up another's budget.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// The environment variable giving the budget (a size: bytes, or with K/M/G, e.g. `8G`).
pub const LOG_BUDGET_ENV: &str = "OPENPIM_LOG_BUDGET";

/// 4 GiB: every DPU of a 2,560-DPU server printing its whole default 1 MiB buffer fits.
pub const DEFAULT_LOG_BUDGET: u64 = 4 << 30;

/// What the logs charged to one budget hold: the process's, or (in the daemon) one tenant's.
#[derive(Debug, Default)]
pub struct LogAccount {
    /// Bytes of log held now.
    held: AtomicU64,
    /// The account's own budget, when it is not this process's (`None`: [`budget`]).
    limit: Option<u64>,
}

impl LogAccount {
    /// A fresh account of the whole budget.
    pub fn new() -> Arc<LogAccount> {
        Arc::default()
    }

    /// A fresh account of `limit` bytes: another process's budget (an MPI worker charges its
    /// ranks' logs to the program's `OPENPIM_LOG_BUDGET`, which the program may have set
    /// after the job started, as a local run reads it at the first allocation).
    pub fn with_budget(limit: u64) -> Arc<LogAccount> {
        Arc::new(LogAccount {
            held: AtomicU64::new(0),
            limit: Some(limit),
        })
    }

    /// The budget this account's logs are bounded by.
    pub fn budget(&self) -> u64 {
        self.limit.unwrap_or_else(budget)
    }

    /// The process's account (every rank's, unless charged to another).
    pub fn process() -> Arc<LogAccount> {
        static PROCESS: OnceLock<Arc<LogAccount>> = OnceLock::new();
        Arc::clone(PROCESS.get_or_init(LogAccount::new))
    }

    /// Bytes of log held now.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Acquire)
    }
}

/// This process's budget (`OPENPIM_LOG_BUDGET` when first asked): what the MPI backend gives
/// its workers for the program's logs.
pub fn process_budget() -> u64 {
    budget()
}

/// This process's budget, read once; a bad value is reported once on stderr and the default is used
/// (the logs are a diagnostic: a typo must not stop the program).
fn budget() -> u64 {
    static BUDGET: OnceLock<u64> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let Ok(v) = std::env::var(LOG_BUDGET_ENV) else {
            return DEFAULT_LOG_BUDGET;
        };
        match openpim_machine::parse_size(&v) {
            Some(n) => n,
            None => {
                eprintln!(
                    "openpim: {LOG_BUDGET_ENV}='{v}' is not a size (bytes, or a number with K, M or G, e.g. 8G); using the default, {} GiB",
                    DEFAULT_LOG_BUDGET >> 30
                );
                DEFAULT_LOG_BUDGET
            }
        }
    })
}

/// A launch's printf output as the host may read it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LaunchLog {
    /// The formatted output.
    Text(Vec<u8>),
    /// The DPU's printf ring buffer wrapped over its oldest output (the engine's
    /// `log_wrapped`): `written` bytes of printf data into a `capacity`-byte buffer.
    Wrapped { written: u64, capacity: u32 },
}

impl Default for LaunchLog {
    fn default() -> LaunchLog {
        LaunchLog::Text(Vec::new())
    }
}

/// One DPU's printf output, charged to an account's budget while it is held.
#[derive(Default)]
pub(crate) struct DpuLog {
    log: LaunchLog,
    /// The account the bytes are charged to.
    account: Option<Arc<LogAccount>>,
}

impl DpuLog {
    /// Replaces the output with a launch's `log`, cut at what `account`'s budget still
    /// allows.
    pub(crate) fn replace(&mut self, log: LaunchLog, account: &Arc<LogAccount>) {
        self.clear();
        self.log = match log {
            LaunchLog::Text(bytes) => {
                let mut kept = charge(&account.held, bytes, account.budget());
                kept.shrink_to_fit();
                LaunchLog::Text(kept)
            }
            wrapped => wrapped,
        };
        self.account = Some(Arc::clone(account));
    }

    /// Drops the output (a new program, a new launch that failed before printing).
    pub(crate) fn clear(&mut self) {
        if let (Some(a), LaunchLog::Text(bytes)) = (self.account.take(), &self.log) {
            a.held.fetch_sub(bytes.len() as u64, Ordering::AcqRel);
        }
        self.log = LaunchLog::default();
    }

    pub(crate) fn get(&self) -> LaunchLog {
        self.log.clone()
    }
}

impl Drop for DpuLog {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Takes `log` into the budget `limit` of what `counter` holds: all of it when it fits, else
/// the part that fits followed by a notice (the notice itself is not refused: it is a few
/// dozen bytes).
fn charge(counter: &AtomicU64, mut log: Vec<u8>, limit: u64) -> Vec<u8> {
    let want = log.len() as u64;
    let mut held = counter.load(Ordering::Acquire);
    loop {
        let room = limit.saturating_sub(held);
        let keep = want.min(room);
        let notice = if keep < want {
            format!(
                "\n[openpim: printf output cut after {keep} of {want} bytes: the logs of all DPUs' last launches are bounded by {LOG_BUDGET_ENV} ({limit} bytes); read the logs after each launch, or raise it]\n"
            )
        } else {
            String::new()
        };
        let total = keep + notice.len() as u64;
        match counter.compare_exchange_weak(held, held + total, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => {
                log.truncate(keep as usize);
                log.extend_from_slice(notice.as_bytes());
                return log;
            }
            Err(now) => held = now,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_at_the_budget_with_a_notice() {
        let counter = AtomicU64::new(0);
        let a = charge(&counter, vec![b'a'; 600], 1000);
        assert_eq!(a, vec![b'a'; 600]);
        let b = charge(&counter, vec![b'b'; 600], 1000);
        assert!(
            b.starts_with(&[b'b'; 400]) && b[400] == b'\n',
            "cut at the 400 bytes left"
        );
        let text = String::from_utf8_lossy(&b[400..]).into_owned();
        assert!(text.contains("cut after 400 of 600 bytes"), "{text}");
        assert!(text.contains(LOG_BUDGET_ENV), "{text}");
        assert_eq!(counter.load(Ordering::Acquire), b.len() as u64 + 600);
        // Full: the next log keeps only the notice.
        let c = charge(&counter, vec![b'c'; 10], 1000);
        assert!(
            String::from_utf8_lossy(&c).starts_with("\n[openpim: printf output cut after 0 of 10")
        );
    }

    #[test]
    fn accounts_are_apart_and_freed_on_clear() {
        let (a, b) = (LogAccount::new(), LogAccount::new());
        let mut la = DpuLog::default();
        la.replace(LaunchLog::Text(vec![b'a'; 700]), &a);
        assert_eq!((a.held(), b.held()), (700, 0));
        let mut lb = DpuLog::default();
        lb.replace(LaunchLog::Text(vec![b'b'; 300]), &b);
        assert_eq!((a.held(), b.held()), (700, 300));
        // A new launch's output replaces the old one in the account it goes to.
        la.replace(LaunchLog::Text(vec![b'a'; 10]), &b);
        assert_eq!((a.held(), b.held()), (0, 310));
        // A wrapped log holds no text, and frees what the last one held.
        let wrapped = LaunchLog::Wrapped {
            written: 80,
            capacity: 64,
        };
        la.replace(wrapped.clone(), &a);
        assert_eq!((a.held(), b.held()), (0, 300));
        assert_eq!(la.get(), wrapped);
        drop(lb);
        la.clear();
        assert_eq!((a.held(), b.held()), (0, 0));
    }
}
