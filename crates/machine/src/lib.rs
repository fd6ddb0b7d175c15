//! The machine model of OpenPIM: hardware profiles (text files), the profile string of the
//! SDK, and the memories of the emulated DPUs.
//!
//! The machine knows nothing of the SDK's C types; the host runtime (`openpim-runtime`)
//! builds DPU sets, programs and transfers on top of it.
//!
//! The bus model ([`BusModel`], host <-> rank transfer times from the profile's `[bus]`
//! section) and the virtual clock ([`VirtualClock`], one host timeline and one per rank) are
//! pure arithmetic: the host runtime feeds them durations.

mod bus;
mod clock;
mod config;
mod memory;
mod profile;

pub use bus::{BusModel, BusSpec, CallShape, Direction, XferKind};
pub use clock::{Nanos, Phase, Span, Track, VirtualClock};
pub use config::{
    BackendKind, ConfigError, HostClock, MachineConfig, SystemConfig, PROFILE_BASE_ENV, VALID_KEYS,
};
pub use memory::{
    resident_bytes, Bytes, DpuAddress, DpuMemories, IramAddr, LazyRegion, MramAddr, OutOfRange,
    WramAddr,
};
pub use profile::{
    builtin_names, CostSpec, DmaSpec, DpuSpec, HardwareProfile, LaunchSpec, LinkSpec, MemorySpec,
    ProfileError, TopologySpec, DEFAULT_PROFILE,
};

/// Re-exported memory map of the emulated DPU.
pub use openpim_engine::map;
