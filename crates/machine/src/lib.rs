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
pub mod memory;
mod profile;

pub use bus::{BusModel, BusSpec, CallShape, Direction, XferKind};
pub use clock::{Nanos, Phase, Span, Track, VirtualClock};
pub use config::{
    BackendKind, ConfigError, HostClock, MachineConfig, SystemConfig, ENGINE_ENV, PROFILE_BASE_ENV,
    VALID_KEYS,
};
pub use memory::checksum::{crc32, Crc32};
pub use memory::file::Geometry;
pub use memory::{
    describe_store, open_process_store, open_store, parse_size, process_store, resident_bytes,
    Access, Admission, Bytes, DpuAddress, DpuMemories, IramAddr, LazyRegion, MramAddr, MramRegion,
    MramStore, OutOfRange, Persist, StoreError, StoreSpec, StoreStats, WramAddr,
};
pub use profile::{
    builtin_names, CostSpec, DmaSpec, DpuSpec, HardwareProfile, HostSpec, LaunchSpec, LinkSpec,
    MemorySpec, ProfileError, TopologySpec, DEFAULT_PROFILE,
};

/// Re-exported memory map of the emulated DPU.
pub use openpim_engine::map;
