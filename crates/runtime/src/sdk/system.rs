//! Allocation: `dpu_alloc` and `dpu_alloc_ranks` checked against the machine, the ranks
//! taken from the backend that runs them.

use std::sync::Arc;

use openpim_machine::{MachineConfig, SystemConfig};

use crate::error::{Error, Result};
use crate::exec::local::LocalBackend;
use crate::exec::mpi::{gateway_of_env, MpiBackend, MPI_ENV};
use crate::exec::remote::{server_of, RemoteBackend};
use crate::exec::{AllocRequest, Backend};
use crate::sdk::rank::Rank;
use crate::sdk::set::DpuSet;

/// The backend that runs the ranks `profile` asks for: a daemon's when the profile (`server=`)
/// or the environment (`OPENPIM_SERVER`) names its socket, MPI workers when the program runs
/// under `openpim run --mpi N` (`OPENPIM_MPI`), else this process.
fn backend(profile: &str) -> Result<Arc<dyn Backend>> {
    let config = SystemConfig::from_profile_string(profile)?;
    Ok(match (server_of(&config), gateway_of_env()) {
        (Some(server), Some(_)) => {
            return Err(Error::Allocation {
                requested: format!("server={server}"),
                reason: format!(
                    "the program runs on MPI workers ({MPI_ENV} is set by `openpim run --mpi`) and names a daemon too; use one of them"
                ),
            })
        }
        (Some(path), None) => RemoteBackend::shared(&path),
        (None, Some(gateway)) => MpiBackend::shared(&gateway),
        (None, None) => LocalBackend::shared(),
    })
}

/// Number of rank slots currently allocated in this process.
pub fn ranks_in_use() -> usize {
    crate::exec::local::ranks_in_use()
}

/// Allocates ranks from `backend` and makes the set of them.
fn build(
    backend: Arc<dyn Backend>,
    machine: Arc<MachineConfig>,
    profile: &str,
    ranks: Option<u32>,
    dpus: Option<u32>,
    what: String,
) -> Result<DpuSet> {
    let req = AllocRequest {
        machine: Arc::clone(&machine),
        ranks,
        dpus,
        what,
        profile: profile.to_string(),
    };
    let infos = backend.alloc(&req)?;
    let ranks = infos
        .into_iter()
        .map(|info| Arc::new(Rank::new(info, Arc::clone(&machine), Arc::clone(&backend))))
        .collect();
    Ok(DpuSet::from_ranks(ranks))
}

/// Allocates `nr_dpus` DPUs (`None` = every DPU of the machine) on `ceil(n / dpus_per_rank)`
/// ranks, as `dpu_alloc`.
pub fn alloc(nr_dpus: Option<u32>, profile: &str) -> Result<DpuSet> {
    let backend = backend(profile)?;
    backend.start()?;
    let machine = Arc::new(backend.machine(profile)?);
    crate::clock::host_clock::configure(&machine.config)?;
    crate::clock::engine_use::configure(&machine)?;
    let per_rank = machine.dpus_per_rank;
    match nr_dpus {
        None => build(backend, machine, profile, None, None, "all DPUs".into()),
        Some(0) => Err(Error::Allocation {
            requested: "0 DPUs".into(),
            reason: "ask for at least one DPU (or DPU_ALLOCATE_ALL)".into(),
        }),
        Some(n) => {
            let what = format!("{n} DPUs");
            if u64::from(n) > machine.total_dpus() {
                return Err(Error::Allocation {
                    requested: what,
                    reason: format!(
                        "the machine has {} DPUs ({} ranks x {} DPUs); ask for fewer, or change nrRanks/hardware in the profile",
                        machine.total_dpus(),
                        machine.nr_ranks,
                        per_rank
                    ),
                });
            }
            let nr_ranks = n.div_ceil(per_rank);
            build(backend, machine, profile, Some(nr_ranks), Some(n), what)
        }
    }
}

/// Allocates `nr_ranks` whole ranks (`None` = every rank), as `dpu_alloc_ranks`.
pub fn alloc_ranks(nr_ranks: Option<u32>, profile: &str) -> Result<DpuSet> {
    let backend = backend(profile)?;
    backend.start()?;
    let machine = Arc::new(backend.machine(profile)?);
    crate::clock::host_clock::configure(&machine.config)?;
    crate::clock::engine_use::configure(&machine)?;
    if let Some(n) = nr_ranks {
        if n == 0 {
            return Err(Error::Allocation {
                requested: "0 ranks".into(),
                reason: "ask for at least one rank (or DPU_ALLOCATE_ALL)".into(),
            });
        }
        if n > machine.nr_ranks {
            return Err(Error::Allocation {
                requested: format!("{n} ranks"),
                reason: format!(
                    "the machine has {} ranks; ask for fewer, or change nrRanks in the profile",
                    machine.nr_ranks
                ),
            });
        }
    }
    let what = nr_ranks.map_or("all ranks".to_string(), |n| format!("{n} ranks"));
    build(backend, machine, profile, nr_ranks, None, what)
}

/// A description of the machine a profile string selects (for `openpim info`).
pub fn machine_description(profile: &str) -> Result<String> {
    let machine = MachineConfig::from_profile_string(profile)?;
    let mut s = machine.describe();
    s.push_str(&format!(
        "ranks allocated by this process: {}\n",
        ranks_in_use()
    ));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::alloc_lock;

    #[test]
    fn alloc_takes_ceil_ranks_and_exact_dpus() {
        let _g = alloc_lock();
        let set = alloc(Some(100), "nrRanks=4").unwrap();
        assert_eq!(set.nr_ranks(), 2);
        assert_eq!(set.nr_dpus(), 100);
        let ranks = set.ranks();
        assert_eq!(ranks[0].nr_dpus(), 64);
        assert_eq!(ranks[1].nr_dpus(), 36);
        assert_eq!(set.dpus().len(), 100);
        assert_eq!(ranks_in_use(), 2);
        drop(ranks);
        drop(set);
        assert_eq!(ranks_in_use(), 0);
    }

    #[test]
    fn alloc_all_and_exhaustion() {
        let _g = alloc_lock();
        let all = alloc(None, "nrRanks=3,nrDpusPerRank=8").unwrap();
        assert_eq!(all.nr_dpus(), 24);
        assert_eq!(all.nr_ranks(), 3);
        let e = alloc(Some(1), "nrRanks=3").unwrap_err();
        assert!(matches!(e, Error::Allocation { .. }), "{e}");
        assert!(e.to_string().contains("already allocated"), "{e}");
        drop(all);
        let one = alloc(Some(1), "nrRanks=3").unwrap();
        assert_eq!(one.nr_dpus(), 1);
    }

    #[test]
    fn alloc_too_many_names_machine_size() {
        let _g = alloc_lock();
        let e = alloc(Some(3000), "").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("2560 DPUs"), "{msg}");
        assert!(matches!(alloc(Some(0), ""), Err(Error::Allocation { .. })));
        assert!(matches!(
            alloc_ranks(Some(41), ""),
            Err(Error::Allocation { .. })
        ));
        assert!(matches!(alloc(Some(1), "nrRank=1"), Err(Error::Profile(_))));
        let two = alloc(Some(65), "nrRanks=2").unwrap();
        let e = alloc_ranks(Some(1), "nrRanks=2").unwrap_err();
        assert!(e.to_string().contains("free"), "{e}");
        drop(two);
        let r = alloc_ranks(Some(2), "nrRanks=2").unwrap();
        assert_eq!(r.nr_dpus(), 128);
    }

    #[test]
    fn full_server_fits_in_memory() {
        let _g = alloc_lock();
        let Some(bytes) = crate::testutil::build_fixture(&crate::testutil::Fixture::default())
        else {
            return;
        };
        let before = openpim_machine::resident_bytes().unwrap_or(0);
        let set = alloc(None, "").unwrap();
        assert_eq!(set.nr_dpus(), 2560);
        set.load_bytes(&bytes).unwrap();
        let after = openpim_machine::resident_bytes().unwrap_or(0);
        let grown = after.saturating_sub(before);
        assert!(grown < 2 << 30, "full server costs {grown} bytes of RSS");
        drop(set);
        assert_eq!(ranks_in_use(), 0);
    }

    #[test]
    fn description() {
        let d = machine_description("hardware=upmem-v1b").unwrap();
        assert!(d.contains("400 MHz") && d.contains("2560 DPUs"), "{d}");
    }
}
