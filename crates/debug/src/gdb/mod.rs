//! A GDB Remote Serial Protocol server for DPUs (`OPENPIM_GDB`, `openpim run --gdb`).
//!
//! One server per process listens from the first `dpu_alloc` until the program exits, and
//! serves one debugger at a time. The DPU it serves stops before the first slot of its next
//! launch (`OPENPIM_GDB_DPU`), or at a fault (`OPENPIM_GDB_ON_FAULT`), and waits — with no
//! timeout — for a debugger to connect and resume it. Tasklets are GDB threads (thread id =
//! tasklet + 1); the registers are RV32I's (`gdbstub_arch`'s RISC-V 32 description); memory is
//! WRAM, MRAM and IRAM at the linker script's addresses.
//!
//! Modules: [`link`] (what the server and the stopped DPU say), [`probe`] (the DPU side),
//! [`target`] (the protocol side), [`server`] (the listener).

mod access;
mod conn;
pub mod link;
mod probe;
mod server;
mod target;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use openpim_runtime::observe::{self, Observers, RunObserver, RunSite};

use crate::error::Error;
use crate::filter::{parse_dpu, DpuId};

/// `ADDR:PORT` to listen on (`1`: 127.0.0.1:1234).
pub const GDB_ENV: &str = "OPENPIM_GDB";
/// `RANK.DPU` or `first`: the DPU that stops before its next launch (default `first` unless
/// `OPENPIM_GDB_ON_FAULT` is set).
pub const GDB_DPU_ENV: &str = "OPENPIM_GDB_DPU";
/// `1`: a faulting DPU stops at the fault and waits for a debugger.
pub const GDB_ON_FAULT_ENV: &str = "OPENPIM_GDB_ON_FAULT";
/// Where `--gdb` alone listens.
pub const DEFAULT_ADDR: &str = "127.0.0.1:1234";

/// Which DPU stops before its launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// DPU 0 of the first rank whose launch starts (with several ranks launched at once, the
    /// one whose DPU 0 starts first).
    First,
    Dpu(DpuId),
}

/// The server's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub addr: String,
    pub which: Option<Which>,
    pub on_fault: bool,
}

fn truthy(v: &str) -> bool {
    !matches!(v.trim(), "" | "0")
}

impl Config {
    /// From `OPENPIM_GDB`, `OPENPIM_GDB_DPU`, `OPENPIM_GDB_ON_FAULT` (`None`: no server).
    pub fn from_env() -> Result<Option<Config>, Error> {
        let get = |k: &str| std::env::var(k).ok();
        Config::from_values(get(GDB_ENV), get(GDB_DPU_ENV), get(GDB_ON_FAULT_ENV))
    }

    pub fn from_values(
        addr: Option<String>,
        dpu: Option<String>,
        on_fault: Option<String>,
    ) -> Result<Option<Config>, Error> {
        let Some(addr) = addr.filter(|a| truthy(a)) else {
            return Ok(None);
        };
        let addr = if addr.trim() == "1" {
            DEFAULT_ADDR.to_string()
        } else {
            addr.trim().to_string()
        };
        if !addr.contains(':') {
            return Err(Error::BadSetting {
                var: GDB_ENV,
                value: addr,
                why: "expected ADDR:PORT, e.g. 127.0.0.1:1234 (or 1 for that default)".into(),
            });
        }
        let on_fault = on_fault.is_some_and(|v| truthy(&v));
        let which = match dpu.as_deref().map(str::trim) {
            None | Some("") => (!on_fault).then_some(Which::First),
            Some("first") => Some(Which::First),
            Some(s) => Some(Which::Dpu(parse_dpu(GDB_DPU_ENV, s).map_err(|_| {
                Error::BadSetting {
                    var: GDB_DPU_ENV,
                    value: s.to_string(),
                    why: "expected RANK.DPU (the rank slot as in the report's ranks[] and the DPU's index in it, e.g. 0.3) or first".into(),
                }
            })?)),
        };
        Ok(Some(Config {
            addr,
            which,
            on_fault,
        }))
    }
}

/// The installed server: gives a probe to the DPU it serves (and, on fault, to every DPU).
struct Tool {
    which: Option<Which>,
    on_fault: bool,
    claimed: AtomicBool,
    attach: Mutex<Sender<server::Queued>>,
}

impl Observers for Tool {
    fn observe(&self, site: &RunSite) -> Option<Box<dyn RunObserver>> {
        let wanted = match self.which {
            Some(Which::First) => site.dpu == 0,
            Some(Which::Dpu(id)) => {
                id == (DpuId {
                    rank: site.rank,
                    dpu: site.dpu,
                })
            }
            None => false,
        };
        let serve = wanted && !self.claimed.swap(true, Ordering::AcqRel);
        if !serve && !self.on_fault {
            return None;
        }
        let attach = self
            .attach
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Some(Box::new(probe::GdbProbe::new(site, serve, attach)))
    }
}

static TOOL: Mutex<Option<Arc<Tool>>> = Mutex::new(None);

/// Listens on the configured address and installs the server (an address that cannot be
/// bound is an error: nothing is installed).
pub fn start(config: Config) -> Result<(), Error> {
    let listener = std::net::TcpListener::bind(&config.addr).map_err(|e| Error::Bind {
        addr: config.addr.clone(),
        why: e.to_string(),
    })?;
    let attach = server::spawn(listener, config.addr.clone());
    let tool = Arc::new(Tool {
        which: config.which,
        on_fault: config.on_fault,
        claimed: AtomicBool::new(false),
        attach: Mutex::new(attach),
    });
    *TOOL.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&tool));
    observe::install(tool);
    Ok(())
}

/// Said at the program's exit: a DPU named with `OPENPIM_GDB_DPU` that never launched.
pub fn exit_message() -> Option<String> {
    let tool = TOOL.lock().unwrap_or_else(|e| e.into_inner()).clone()?;
    match tool.which {
        Some(Which::Dpu(id)) if !tool.claimed.load(Ordering::Acquire) => Some(format!(
            "openpim: {GDB_DPU_ENV}={id}: that DPU never launched, so no debugger was served: name a DPU the program launches (RANK.DPU as in the report's ranks[]) or use first"
        )),
        Some(Which::First) if !tool.claimed.load(Ordering::Acquire) => Some(
            "openpim: --gdb (--gdb-dpu first): no DPU 0 of a rank launched, so no debugger was served: name the DPU to debug with --gdb-dpu RANK.DPU (OPENPIM_GDB_DPU)".to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_values() {
        let c = Config::from_values(Some("1".into()), None, None)
            .unwrap()
            .unwrap();
        assert_eq!(c.addr, DEFAULT_ADDR);
        assert_eq!(c.which, Some(Which::First));
        let c = Config::from_values(Some("0.0.0.0:9000".into()), None, Some("1".into()))
            .unwrap()
            .unwrap();
        assert_eq!((c.which, c.on_fault), (None, true));
        let c = Config::from_values(Some("1".into()), Some("2.5".into()), None)
            .unwrap()
            .unwrap();
        assert_eq!(c.which, Some(Which::Dpu(DpuId { rank: 2, dpu: 5 })));
        let e = Config::from_values(Some("1".into()), Some("x".into()), None).unwrap_err();
        assert!(e.to_string().contains("RANK.DPU"), "{e}");
        assert!(Config::from_values(Some("1234".into()), None, None).is_err());
        assert_eq!(Config::from_values(None, None, None).unwrap(), None);
    }
}
