//! The machine model of OpenPIM: hardware profiles (text files), the profile string of the
//! SDK, and the memories of the emulated DPUs.
//!
//! The machine knows nothing of the SDK's C types; the host runtime (`openpim-runtime`)
//! builds DPU sets, programs and transfers on top of it.
//!
//! Room for later issues: the bus model (host<->rank bandwidths) and the virtual clock will
//! live here, fed by new optional sections of [`HardwareProfile`].

mod config;
mod memory;
mod profile;

pub use config::{
    BackendKind, ConfigError, MachineConfig, SystemConfig, PROFILE_BASE_ENV, VALID_KEYS,
};
pub use memory::{
    resident_bytes, Bytes, DpuAddress, DpuMemories, IramAddr, LazyRegion, MramAddr, OutOfRange,
    WramAddr,
};
pub use profile::{
    builtin_names, CostSpec, DmaSpec, DpuSpec, HardwareProfile, MemorySpec, ProfileError,
    TopologySpec, DEFAULT_PROFILE,
};

/// Re-exported memory map of the emulated DPU.
pub use openpim_engine::map;
