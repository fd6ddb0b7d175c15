//! The SDK's profile string (`dpu_alloc(n, "backend=simulator,nrRanks=2", ...)`).
//!
//! Comma-separated `key=value` items. The environment variable `UPMEM_PROFILE_BASE` gives a
//! base string; the program's own string overrides it key by key.

use std::fmt;

use thiserror::Error;

use crate::memory::{parse_size, Persist, StoreSpec};
use crate::profile::{HardwareProfile, ProfileError, DEFAULT_PROFILE};

/// Environment variable holding the base profile string.
pub const PROFILE_BASE_ENV: &str = "UPMEM_PROFILE_BASE";

/// Every key the profile string accepts.
pub const VALID_KEYS: &[&str] = &[
    "backend",
    "nrRanks",
    "nrDpusPerRank",
    "nrThreadsPerRank",
    "dispatchOnAllRanks",
    "disableSafeChecks",
    "cycleAccurate",
    "nrJobsPerRank",
    "sgXferEnable",
    "hardware",
    "maxCycles",
    "strictDma",
    "strictSync",
    "clock",
    "memory",
    "memoryBudget",
    "persist",
    "server",
    "engine",
    "coreDir",
];

/// Environment variable choosing the DPU engine (`jit` or `interp`); it wins over the profile
/// key `engine=`.
pub const ENGINE_ENV: &str = "OPENPIM_ENGINE";
/// Older spellings still accepted, and the key each stands for.
pub const KEY_ALIASES: &[(&str, &str)] = &[("nrJobPerRank", "nrJobsPerRank")];

/// The value a property of the SDK's list takes (its property table's C type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PropertyType {
    Bool,
    /// `u32`/`u64`: a non-negative integer, decimal or `0x` hexadecimal.
    Unsigned,
    /// `int`: a possibly negative integer.
    Signed,
    /// A string (a path, a mode name).
    Text,
}

/// The rest of the SDK's documented profile properties (its backends' and tools' settings: the
/// hardware driver, the functional simulator, profiling, FPGA and Modelsim). They steer parts
/// of the SDK OpenPIM does not have, so they are accepted, checked for their type, and have no
/// effect; a key in neither list is still refused by name.
const SDK_ONLY_PROPERTIES: &[(&str, PropertyType)] = {
    use PropertyType::*;
    &[
        ("chipId", Unsigned),
        ("clockDivision", Unsigned),
        ("fckFrequency", Unsigned),
        ("enableProfiling", Text),
        ("profilingDpuId", Unsigned),
        ("profilingSliceId", Unsigned),
        ("mcountAddress", Unsigned),
        ("retMcountAddress", Unsigned),
        ("threadProfilingAddress", Unsigned),
        ("mramAccessByDpuOnly", Bool),
        ("disabledMask", Unsigned),
        ("disableMuxSwitch", Bool),
        ("disableResetOnAlloc", Bool),
        ("cmdsBufferSize", Unsigned),
        ("sgXferMaxBlocksPerDpu", Unsigned),
        ("nrDpusPerCi", Unsigned),
        ("iramSize", Unsigned),
        ("mramSize", Unsigned),
        ("wramSize", Unsigned),
        ("doProfiling", Bool),
        ("profileInstruction", Text),
        ("profileDma", Text),
        ("profileMemory", Text),
        ("profileIla", Text),
        ("modelsimMramFile", Text),
        ("modelsimWorkDir", Text),
        ("modelsimExecPath", Text),
        ("modelsimTclScript", Text),
        ("modelsimEnableGui", Bool),
        ("modelsimBypassMramSwitch", Bool),
        ("reportFileName", Text),
        ("analyzerEnabled", Bool),
        ("analyzerFilteringEnabled", Bool),
        ("mramBypassEnabled", Bool),
        ("mramEmulateRefresh", Signed),
        ("regionMode", Text),
        ("rankPath", Text),
        ("ignoreVersion", Bool),
        ("tryRepairIram", Bool),
        ("tryRepairWram", Bool),
        ("ignoreVpd", Bool),
        ("nrThreadPerPool", Signed),
        ("poolThreshold1Thread", Signed),
        ("poolThreshold2Threads", Signed),
        ("poolThreshold4Threads", Signed),
        ("usbSerial", Text),
        ("chipSelect", Unsigned),
    ]
};

/// Checks the value of an SDK-only property against its type.
fn check_sdk_property(key: &str, ty: PropertyType, value: &str) -> Result<(), ConfigError> {
    let bad = |expected| ConfigError::BadValue {
        key: key.into(),
        value: value.into(),
        expected,
    };
    match ty {
        PropertyType::Bool => parse_bool(key, value).map(|_| ()),
        PropertyType::Unsigned => {
            let ok = match value
                .strip_prefix("0x")
                .or_else(|| value.strip_prefix("0X"))
            {
                Some(hex) => u64::from_str_radix(hex, 16).is_ok(),
                None => value.parse::<u64>().is_ok(),
            };
            ok.then_some(())
                .ok_or_else(|| bad("a non-negative integer (decimal or 0x hexadecimal)"))
        }
        PropertyType::Signed => value
            .parse::<i64>()
            .map(|_| ())
            .map_err(|_| bad("an integer")),
        PropertyType::Text => (!value.is_empty())
            .then_some(())
            .ok_or_else(|| bad("a non-empty value")),
    }
}

/// Errors of the profile string.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum ConfigError {
    /// An item without `=`.
    #[error("profile item '{item}' is not of the form key=value (valid keys: {})", VALID_KEYS.join(", "))]
    Syntax { item: String },
    /// A key the profile string does not know.
    #[error("unknown profile key '{key}' (valid keys: {}; also the SDK's other properties, which have no effect here: docs/profiles.md)", VALID_KEYS.join(", "))]
    UnknownKey { key: String },
    /// A value that does not fit its key.
    #[error("bad value '{value}' for profile key '{key}': expected {expected}")]
    BadValue {
        key: String,
        value: String,
        expected: &'static str,
    },
    /// The hardware profile named by `hardware=` could not be loaded.
    #[error("profile key 'hardware': {0}")]
    Hardware(String),
    /// Memory-store keys that do not fit together (`memoryBudget` without `memory=cached`...).
    #[error("{0}")]
    Memory(String),
    /// A topology request the hardware cannot satisfy.
    #[error("profile key '{key}' = {value} exceeds the hardware profile's {limit}")]
    TooLarge { key: String, value: u32, limit: u32 },
    /// More ranks than the emulator builds (`MAX_RANKS`).
    #[error("profile key 'nrRanks' = {value} exceeds the {limit} ranks OpenPIM emulates at most (a UPMEM server has up to 40)")]
    TooManyRanks { value: u32, limit: u32 },
}

/// Most ranks a machine may have (`nrRanks`): 100 times the largest UPMEM server (40 ranks),
/// and small enough that the per-rank bookkeeping of a typo such as `nrRanks=4000000000`
/// cannot exhaust the host's memory.
pub const MAX_RANKS: u32 = 4096;

impl From<ProfileError> for ConfigError {
    fn from(e: ProfileError) -> Self {
        ConfigError::Hardware(e.to_string())
    }
}

/// Which backend the program asked for. OpenPIM runs every one of them in this process
/// (a remote backend is a later addition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// `backend=hw`: real hardware in the SDK; emulated here.
    Hardware,
    /// `backend=simulator`: the SDK's functional simulator; emulated here.
    Simulator,
    /// `backend=openpim` (the default).
    #[default]
    OpenPim,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Hardware => "hw",
            BackendKind::Simulator => "simulator",
            BackendKind::OpenPim => "openpim",
        })
    }
}

/// A parsed profile string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemConfig {
    pub backend: BackendKind,
    /// Ranks of the emulated machine (default: the hardware profile's).
    pub nr_ranks: Option<u32>,
    /// DPUs per rank (default: the hardware profile's).
    pub nr_dpus_per_rank: Option<u32>,
    /// Accepted for compatibility (host threads per rank in the SDK).
    pub nr_threads_per_rank: Option<u32>,
    /// Accepted for compatibility.
    pub dispatch_on_all_ranks: bool,
    /// Accepted for compatibility (OpenPIM always checks).
    pub disable_safe_checks: bool,
    /// Accepted for compatibility (timing is always modeled).
    pub cycle_accurate: bool,
    /// Accepted for compatibility (queue depth per rank in the SDK; unbounded here).
    pub nr_job_per_rank: Option<u32>,
    /// Accepted for compatibility (scatter-gather transfers).
    pub sg_xfer_enable: bool,
    /// Hardware profile name or path (default `upmem-v1a`).
    pub hardware: Option<String>,
    /// Stop each DPU after this many cycles with a fault.
    pub max_cycles: Option<u64>,
    /// Fault on DMA requests the hardware tolerates but that are almost certainly bugs
    /// (`strictDma=true`; by default they run as on the DPU, with advice in the report).
    pub strict_dma: bool,
    /// Fault when every tasklet of a DPU waits with nobody left to wake it (`strictSync=true`;
    /// by default the launch ends there, as on the DPU, with advice in the report).
    pub strict_sync: bool,
    /// What the host program's clocks show (`clock=virtual|real`; default virtual).
    pub clock: Option<HostClock>,
    /// Where MRAM lives (`memory=anon|file:DIR|cached:DIR`; default anon).
    pub memory: Option<StoreSpec>,
    /// The DRAM budget of `memory=cached` in bytes (`memoryBudget=SIZE`).
    pub memory_budget: Option<u64>,
    /// When file-backed MRAM is made durable (`persist=never|end|launch|transfer`).
    pub persist: Option<Persist>,
    /// The rank-manager daemon's socket that runs the ranks (`server=PATH`; default: in
    /// process, unless `OPENPIM_SERVER` names one).
    pub server: Option<String>,
    /// The DPU engine (`engine=jit|interp`; `OPENPIM_ENGINE` wins; default: the translating
    /// engine where the host has a code generator).
    pub engine: Option<openpim_engine::Engine>,
    /// Where core files of faulting DPUs go (`coreDir=DIR`; `OPENPIM_CORE_DIR` wins;
    /// docs/debugging.md).
    pub core_dir: Option<String>,
}

/// What the host program's clocks show (`clock=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostClock {
    /// Real host time plus modeled device time: the virtual timeline's host clock.
    Virtual,
    /// The real clocks.
    Real,
}

impl HostClock {
    /// Parses `virtual` or `real`.
    pub fn parse(value: &str) -> Option<HostClock> {
        match value {
            "virtual" => Some(HostClock::Virtual),
            "real" => Some(HostClock::Real),
            _ => None,
        }
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::BadValue {
            key: key.into(),
            value: value.into(),
            expected: "true or false",
        }),
    }
}

fn parse_u32(key: &str, value: &str) -> Result<u32, ConfigError> {
    match value.parse::<u32>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(ConfigError::BadValue {
            key: key.into(),
            value: value.into(),
            expected: "a positive integer",
        }),
    }
}

impl SystemConfig {
    /// Parses the program's profile string on top of `UPMEM_PROFILE_BASE`.
    pub fn from_profile_string(profile: &str) -> Result<SystemConfig, ConfigError> {
        let base = std::env::var(PROFILE_BASE_ENV).ok();
        SystemConfig::parse_with_base(base.as_deref(), profile)
    }

    /// Parses `base` then `profile` (later keys override earlier ones).
    ///
    /// ```
    /// use openpim_machine::SystemConfig;
    /// let c = SystemConfig::parse_with_base(Some("nrRanks=4,backend=hw"), "nrRanks=2").unwrap();
    /// assert_eq!(c.nr_ranks, Some(2));
    /// ```
    pub fn parse_with_base(base: Option<&str>, profile: &str) -> Result<SystemConfig, ConfigError> {
        let mut config = SystemConfig::default();
        if let Some(base) = base {
            config.apply(base)?;
        }
        config.apply(profile)?;
        Ok(config)
    }

    /// Applies the items of one profile string.
    pub fn apply(&mut self, profile: &str) -> Result<(), ConfigError> {
        for item in profile.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| ConfigError::Syntax { item: item.into() })?;
            let key = KEY_ALIASES
                .iter()
                .find(|(alias, _)| *alias == key)
                .map_or(key, |(_, canonical)| *canonical);
            match key {
                "backend" => {
                    self.backend = match value {
                        "hw" => BackendKind::Hardware,
                        "simulator" => BackendKind::Simulator,
                        "openpim" => BackendKind::OpenPim,
                        _ => {
                            return Err(ConfigError::BadValue {
                                key: key.into(),
                                value: value.into(),
                                expected: "hw, simulator or openpim",
                            })
                        }
                    }
                }
                "nrRanks" => self.nr_ranks = Some(parse_u32(key, value)?),
                "nrDpusPerRank" => self.nr_dpus_per_rank = Some(parse_u32(key, value)?),
                // 0 is the SDK's "default" (as when the key is absent).
                "nrThreadsPerRank" => {
                    self.nr_threads_per_rank = match value.parse::<u32>() {
                        Ok(0) => None,
                        Ok(n) => Some(n),
                        Err(_) => {
                            return Err(ConfigError::BadValue {
                                key: key.into(),
                                value: value.into(),
                                expected: "a non-negative integer (0: the default)",
                            })
                        }
                    }
                }
                "nrJobsPerRank" => self.nr_job_per_rank = Some(parse_u32(key, value)?),
                "dispatchOnAllRanks" => self.dispatch_on_all_ranks = parse_bool(key, value)?,
                "disableSafeChecks" => self.disable_safe_checks = parse_bool(key, value)?,
                "cycleAccurate" => self.cycle_accurate = parse_bool(key, value)?,
                "sgXferEnable" => self.sg_xfer_enable = parse_bool(key, value)?,
                "strictDma" => self.strict_dma = parse_bool(key, value)?,
                "strictSync" => self.strict_sync = parse_bool(key, value)?,
                "clock" => match HostClock::parse(value) {
                    Some(c) => self.clock = Some(c),
                    None => {
                        return Err(ConfigError::BadValue {
                            key: key.into(),
                            value: value.into(),
                            expected: "virtual or real",
                        })
                    }
                },
                "memory" => {
                    self.memory =
                        Some(
                            StoreSpec::parse(value).ok_or_else(|| ConfigError::BadValue {
                                key: key.into(),
                                value: value.into(),
                                expected: "anon, file:DIR or cached:DIR",
                            })?,
                        )
                }
                "memoryBudget" => {
                    self.memory_budget =
                        Some(parse_size(value).filter(|v| *v > 0).ok_or_else(|| {
                            ConfigError::BadValue {
                                key: key.into(),
                                value: value.into(),
                                expected: "a size such as 512M, 4G or 1073741824 (bytes)",
                            }
                        })?)
                }
                "persist" => {
                    self.persist =
                        Some(Persist::parse(value).ok_or_else(|| ConfigError::BadValue {
                            key: key.into(),
                            value: value.into(),
                            expected: "never, end, launch or transfer",
                        })?)
                }
                "hardware" => {
                    if value.is_empty() {
                        return Err(ConfigError::BadValue {
                            key: key.into(),
                            value: value.into(),
                            expected: "a hardware profile name or a path to a .toml file",
                        });
                    }
                    self.hardware = Some(value.to_string());
                }
                "server" => self.server = (!value.is_empty()).then(|| value.to_string()),
                "coreDir" => self.core_dir = (!value.is_empty()).then(|| value.to_string()),
                "engine" => {
                    self.engine =
                        Some(openpim_engine::Engine::parse(value).ok_or_else(|| {
                            ConfigError::BadValue {
                        key: key.into(),
                        value: value.into(),
                        expected:
                            "jit (DPU code translated to host code) or interp (the interpreter)",
                    }
                        })?)
                }
                "maxCycles" => {
                    self.max_cycles = Some(
                        value
                            .parse::<u64>()
                            .ok()
                            .filter(|v| *v > 0)
                            .ok_or_else(|| ConfigError::BadValue {
                                key: key.into(),
                                value: value.into(),
                                expected: "a positive number of cycles",
                            })?,
                    )
                }
                _ => match SDK_ONLY_PROPERTIES.iter().find(|(k, _)| *k == key) {
                    Some((_, ty)) => check_sdk_property(key, *ty, value)?,
                    None => return Err(ConfigError::UnknownKey { key: key.into() }),
                },
            }
        }
        Ok(())
    }

    /// The store the MRAM keys describe, checked for keys that do not fit together.
    fn check_memory_keys(&self, mram_bytes: u64) -> Result<(), ConfigError> {
        let spec = self.memory.clone().unwrap_or(StoreSpec::Anon);
        match (&spec, self.memory_budget) {
            (StoreSpec::Cached(_), None) => {
                return Err(ConfigError::Memory(
                    "memory=cached:DIR needs memoryBudget=SIZE (the DRAM that MRAM may use, e.g. memoryBudget=2G)".into(),
                ))
            }
            (StoreSpec::Cached(_), Some(b)) if b < mram_bytes => {
                return Err(ConfigError::Memory(format!(
                    "memoryBudget={b} is smaller than one DPU's MRAM ({mram_bytes} bytes): give at least {} MiB",
                    mram_bytes >> 20
                )))
            }
            (StoreSpec::Cached(_), Some(_)) => {}
            (_, Some(_)) => {
                return Err(ConfigError::Memory(format!(
                    "memoryBudget is only for memory=cached:DIR (this profile has memory={spec}); drop it or use memory=cached:DIR"
                )))
            }
            (_, None) => {}
        }
        if self.persist.is_some() && spec == StoreSpec::Anon {
            return Err(ConfigError::Memory(
                "persist= needs a file-backed store (memory=file:DIR or memory=cached:DIR); anonymous MRAM is never durable".into(),
            ));
        }
        Ok(())
    }

    /// Loads the hardware profile and checks the requested topology against it.
    pub fn resolve(&self) -> Result<MachineConfig, ConfigError> {
        let hardware = HardwareProfile::load(self.hardware.as_deref().unwrap_or(DEFAULT_PROFILE))?;
        let nr_ranks = self.nr_ranks.unwrap_or(hardware.topology.ranks);
        let dpus_per_rank = self
            .nr_dpus_per_rank
            .unwrap_or(hardware.topology.dpus_per_rank);
        if nr_ranks > MAX_RANKS {
            return Err(ConfigError::TooManyRanks {
                value: nr_ranks,
                limit: MAX_RANKS,
            });
        }
        if dpus_per_rank > hardware.topology.dpus_per_rank {
            return Err(ConfigError::TooLarge {
                key: "nrDpusPerRank".into(),
                value: dpus_per_rank,
                limit: hardware.topology.dpus_per_rank,
            });
        }
        self.check_memory_keys(u64::from(hardware.memory.mram_bytes))?;
        Ok(MachineConfig {
            hardware,
            nr_ranks,
            dpus_per_rank,
            config: self.clone(),
        })
    }
}

/// A profile string resolved against its hardware profile: what the machine looks like.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineConfig {
    pub hardware: HardwareProfile,
    /// Ranks of the machine.
    pub nr_ranks: u32,
    /// DPUs of each rank.
    pub dpus_per_rank: u32,
    /// The profile string it came from.
    pub config: SystemConfig,
}

impl MachineConfig {
    /// Parses a profile string (with `UPMEM_PROFILE_BASE`) and loads its hardware profile.
    pub fn from_profile_string(profile: &str) -> Result<MachineConfig, ConfigError> {
        SystemConfig::from_profile_string(profile)?.resolve()
    }

    /// DPUs of the whole machine.
    pub fn total_dpus(&self) -> u64 {
        u64::from(self.nr_ranks) * u64::from(self.dpus_per_rank)
    }

    /// The engine that runs this machine's DPUs: `OPENPIM_ENGINE` if set, else the profile's
    /// `engine=`, else the translating engine; the translator only where the host has a code
    /// generator. A bad `OPENPIM_ENGINE` is an error naming the variable and its values.
    pub fn engine(&self) -> Result<openpim_engine::Engine, String> {
        let env = match std::env::var(ENGINE_ENV) {
            Err(std::env::VarError::NotPresent) => None,
            Ok(v) if v.trim().is_empty() => None,
            Ok(v) => Some(openpim_engine::Engine::parse(v.trim()).ok_or_else(|| {
                format!(
                    "{ENGINE_ENV}='{v}' is not a DPU engine: use jit (DPU code translated to host code, the default) or interp (the interpreter)"
                )
            })?),
            Err(_) => {
                return Err(format!(
                    "{ENGINE_ENV} is not valid UTF-8: use jit or interp"
                ))
            }
        };
        Ok(env.or(self.config.engine).unwrap_or_default().effective())
    }

    /// A human-readable description (for `openpim info` and `dpu_get_profile_description`).
    pub fn describe(&self) -> String {
        let hw = &self.hardware;
        let c = &self.config;
        let mut s = String::new();
        use std::fmt::Write;
        let _ = writeln!(s, "hardware profile: {} ({})", hw.name, hw.description);
        let _ = writeln!(s, "backend: {}", c.backend);
        let _ = match self.engine() {
            Ok(openpim_engine::Engine::Translator) => writeln!(
                s,
                "DPU engine: jit (DPU code translated to host code; {ENGINE_ENV}=interp or engine=interp for the interpreter)"
            ),
            Ok(openpim_engine::Engine::Interpreter) => writeln!(
                s,
                "DPU engine: interp (the interpreter{})",
                if openpim_engine::Engine::translation_available() {
                    ""
                } else {
                    "; this host has no code generator for the translating engine"
                }
            ),
            Err(e) => writeln!(s, "DPU engine: {e}"),
        };
        let _ = writeln!(
            s,
            "topology: {} ranks x {} DPUs = {} DPUs ({} chips per rank)",
            self.nr_ranks,
            self.dpus_per_rank,
            self.total_dpus(),
            hw.topology.chips_per_rank
        );
        let _ = writeln!(
            s,
            "DPU: {} MHz, {} tasklets, revolver {} cycles",
            hw.dpu.frequency_mhz, hw.dpu.tasklets, hw.dpu.revolver_cycles
        );
        let _ = writeln!(
            s,
            "memory per DPU: WRAM {} KiB, IRAM {} KiB, MRAM {} MiB, {} atomic bits",
            hw.memory.wram_bytes / 1024,
            hw.memory.iram_bytes / 1024,
            hw.memory.mram_bytes / (1024 * 1024),
            hw.memory.atomic_bits
        );
        let _ = writeln!(
            s,
            "DMA: read {} + {}.{:03} cycles/byte, write {} + {}.{:03} cycles/byte",
            hw.dma.read_alpha_cycles,
            hw.dma.beta_millicycles_per_byte / 1000,
            hw.dma.beta_millicycles_per_byte % 1000,
            hw.dma.write_alpha_cycles,
            hw.dma.beta_millicycles_per_byte / 1000,
            hw.dma.beta_millicycles_per_byte % 1000
        );
        let bus = hw.bus_spec();
        let _ = writeln!(
            s,
            "bus: CPU-DPU {} GB/s (1 DPU) / {} GB/s (rank), DPU-CPU {} / {} GB/s, broadcast {} GB/s; fixed cost of a call {} us CPU-DPU, {} us DPU-CPU on one rank, +{} / +{} us per further rank; host saturation with ranks {} + {} x min(ranks, {}) (relative to 1 rank), at most {} x {} GB/s channels",
            bus.cpu_dpu_serial_gbps,
            bus.cpu_dpu_rank_gbps,
            bus.dpu_cpu_serial_gbps,
            bus.dpu_cpu_rank_gbps,
            bus.broadcast_rank_gbps,
            bus.cpu_dpu_call_ns as f64 / 1000.0,
            bus.dpu_cpu_call_ns as f64 / 1000.0,
            bus.cpu_dpu_call_rank_ns as f64 / 1000.0,
            bus.dpu_cpu_call_rank_ns as f64 / 1000.0,
            bus.rank_scaling_base_gbps,
            bus.rank_scaling_step_gbps,
            bus.rank_scaling_max_ranks,
            bus.host_channels,
            bus.channel_gbps
        );
        let _ = writeln!(
            s,
            "bus, how the rate follows size: programs' full-rank rate x{} CPU-DPU, x{} DPU-CPU; a CPU-DPU call whose bytes fit {} KiB of host cache x{} faster; +{} / +{} us per DPU a call addresses",
            bus.cpu_dpu_rank_fraction,
            bus.dpu_cpu_rank_fraction,
            bus.host_cache_bytes >> 10,
            bus.cpu_dpu_cached_speedup,
            bus.cpu_dpu_call_dpu_ns as f64 / 1000.0,
            bus.dpu_cpu_call_dpu_ns as f64 / 1000.0
        );
        let launch = hw.launch_spec();
        let _ = writeln!(
            s,
            "launch: host-side cost {} us per dpu_launch + {} us per rank (0: not modeled); the first host access to a rank's MRAM after a launch +{} us (the mux switched back)",
            launch.fixed_ns as f64 / 1000.0,
            launch.per_rank_ns as f64 / 1000.0,
            launch.mux_switch_ns as f64 / 1000.0
        );
        let cost = &hw.cost;
        let _ = writeln!(
            s,
            "integer arithmetic (issue slots, by the operands): 32-bit multiply {} + {} per mul_step; 32-bit divide {} + {} per div_step (short path {}, signed +{} +{} per negation); 64-bit multiply {}; 64-bit divide {} + {} per iteration (short path {}, signed +{} +{} per negation)",
            cost.mul32,
            cost.mul32_step,
            cost.div32,
            cost.div32_step,
            cost.div32_short,
            cost.divs32,
            cost.divs32_negate,
            cost.mul64,
            cost.div64,
            cost.div64_step,
            cost.div64_short,
            cost.divs64,
            cost.divs64_negate
        );
        let _ = writeln!(
            s,
            "floating point (issue slots): float add {} sub {} mul {} div {}, double add {} sub {} mul {} div {}",
            hw.cost.fadd32,
            hw.cost.fsub32,
            hw.cost.fmul32,
            hw.cost.fdiv32,
            hw.cost.fadd64,
            hw.cost.fsub64,
            hw.cost.fmul64,
            hw.cost.fdiv64
        );
        let _ = writeln!(s, "{}", crate::memory::describe_store(c));
        match c.max_cycles {
            Some(m) => {
                let _ = writeln!(s, "cycle limit per launch: {m}");
            }
            None => {
                let _ = writeln!(s, "cycle limit per launch: none");
            }
        }
        let _ = writeln!(
            s,
            "DMA requests the DPU tolerates (odd sizes, unaligned addresses, MRAM offsets without the base): {}",
            if c.strict_dma {
                "faults (strictDma=true)"
            } else {
                "performed as on the DPU, with advice"
            }
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_profile_is_default() {
        let c = SystemConfig::parse_with_base(None, "").unwrap();
        assert_eq!(c, SystemConfig::default());
        let m = c.resolve().unwrap();
        assert_eq!(m.nr_ranks, 40);
        assert_eq!(m.dpus_per_rank, 64);
        assert_eq!(m.total_dpus(), 2560);
        assert_eq!(m.hardware.name, "upmem-v1a");
    }

    #[test]
    fn all_keys_parse() {
        let c = SystemConfig::parse_with_base(
            None,
            " backend=simulator, nrRanks=2,nrDpusPerRank=8,nrThreadsPerRank=4,dispatchOnAllRanks=true,\
             disableSafeChecks=false,cycleAccurate=1,nrJobPerRank=16,hardware=upmem-v1b,maxCycles=1000,",
        )
        .unwrap();
        assert_eq!(c.backend, BackendKind::Simulator);
        assert_eq!(c.nr_ranks, Some(2));
        assert_eq!(c.nr_dpus_per_rank, Some(8));
        assert_eq!(c.nr_threads_per_rank, Some(4));
        assert!(c.dispatch_on_all_ranks && !c.disable_safe_checks && c.cycle_accurate);
        assert_eq!(c.nr_job_per_rank, Some(16));
        assert_eq!(c.max_cycles, Some(1000));
        let m = c.resolve().unwrap();
        assert_eq!(m.hardware.dpu.frequency_mhz, 400);
        assert_eq!(m.total_dpus(), 16);
        assert!(m.describe().contains("2 ranks x 8 DPUs"));
        for b in ["hw", "simulator", "openpim"] {
            assert!(SystemConfig::parse_with_base(None, &format!("backend={b}")).is_ok());
        }
    }

    #[test]
    fn sdk_property_spellings() {
        // The SDK's spelling and the older one set the same field.
        for key in ["nrJobsPerRank", "nrJobPerRank"] {
            let c = SystemConfig::parse_with_base(None, &format!("{key}=64")).unwrap();
            assert_eq!(c.nr_job_per_rank, Some(64));
        }
        // The rest of the SDK's list: accepted, values checked by type.
        let c = SystemConfig::parse_with_base(
            None,
            "chipId=0x42,disabledMask=0,ignoreVpd=true,regionMode=perf,mramEmulateRefresh=-1,\
             sgXferMaxBlocksPerDpu=256,enableProfiling=statistics",
        )
        .unwrap();
        assert_eq!(c, SystemConfig::default());
        let e = SystemConfig::parse_with_base(None, "ignoreVpd=maybe").unwrap_err();
        assert!(e.to_string().contains("ignoreVpd"), "{e}");
        let e = SystemConfig::parse_with_base(None, "chipId=-3").unwrap_err();
        assert!(e.to_string().contains("chipId"), "{e}");
        // Still refused by name.
        let e = SystemConfig::parse_with_base(None, "nrJobsPerRanks=4").unwrap_err();
        assert!(matches!(e, ConfigError::UnknownKey { ref key } if key == "nrJobsPerRanks"));
        assert!(e.to_string().contains("nrJobsPerRank,"), "{e}");
    }

    #[test]
    fn zero_threads_per_rank_is_the_default() {
        let c = SystemConfig::parse_with_base(None, "nrThreadsPerRank=0").unwrap();
        assert_eq!(c.nr_threads_per_rank, None);
        let c = SystemConfig::parse_with_base(Some("nrThreadsPerRank=3"), "nrThreadsPerRank=0")
            .unwrap();
        assert_eq!(c.nr_threads_per_rank, None);
        let e = SystemConfig::parse_with_base(None, "nrThreadsPerRank=-1").unwrap_err();
        assert!(e.to_string().contains("0: the default"), "{e}");
    }

    #[test]
    fn base_then_override() {
        let c = SystemConfig::parse_with_base(Some("nrRanks=4,backend=hw"), "nrRanks=2").unwrap();
        assert_eq!(c.nr_ranks, Some(2));
        assert_eq!(c.backend, BackendKind::Hardware);
        // A bad base is an error too.
        assert!(SystemConfig::parse_with_base(Some("bogus=1"), "").is_err());
    }

    #[test]
    fn errors_name_the_key() {
        let e = SystemConfig::parse_with_base(None, "nrRank=2").unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownKey {
                key: "nrRank".into()
            }
        );
        let msg = e.to_string();
        assert!(
            msg.contains("nrRank'") && msg.contains("nrRanks") && msg.contains("maxCycles"),
            "{msg}"
        );
        let e = SystemConfig::parse_with_base(None, "nrRanks=zero").unwrap_err();
        assert!(e.to_string().contains("nrRanks"), "{e}");
        assert!(matches!(
            SystemConfig::parse_with_base(None, "nrRanks=0"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            SystemConfig::parse_with_base(None, "backend=fpga"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            SystemConfig::parse_with_base(None, "cycleAccurate=maybe"),
            Err(ConfigError::BadValue { .. })
        ));
        assert!(matches!(
            SystemConfig::parse_with_base(None, "justakey"),
            Err(ConfigError::Syntax { .. })
        ));
        assert!(matches!(
            SystemConfig::parse_with_base(None, "maxCycles=-1"),
            Err(ConfigError::BadValue { .. })
        ));
        let e = SystemConfig::parse_with_base(None, "hardware=nosuch")
            .unwrap()
            .resolve()
            .unwrap_err();
        assert!(matches!(e, ConfigError::Hardware(_)));
        let e = SystemConfig::parse_with_base(None, "nrDpusPerRank=65")
            .unwrap()
            .resolve()
            .unwrap_err();
        assert!(matches!(e, ConfigError::TooLarge { .. }));
    }

    #[test]
    fn rank_count_is_bounded() {
        let e = SystemConfig::parse_with_base(None, "nrRanks=4000000000")
            .unwrap()
            .resolve()
            .unwrap_err();
        assert_eq!(
            e,
            ConfigError::TooManyRanks {
                value: 4_000_000_000,
                limit: MAX_RANKS
            }
        );
        assert!(e.to_string().contains("at most"), "{e}");
        let ok = SystemConfig::parse_with_base(None, "nrRanks=4096")
            .unwrap()
            .resolve()
            .unwrap();
        assert_eq!(ok.nr_ranks, 4096);
    }
}
