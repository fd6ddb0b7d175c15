//! Hardware profiles: the numbers that describe an emulated PIM server, read from TOML files.
//!
//! The built-in profiles live in the repository's `profiles/` folder and are compiled in, so
//! they work from any installed binary; a profile can also be any file path (`hardware=PATH`).
//! Every constant of a built-in profile carries a comment giving its source.

use std::path::Path;

use openpim_engine::{map, Timing};
use serde::Deserialize;
use thiserror::Error;

use crate::bus::{BusModel, BusSpec};

/// Name of the profile used when none is asked for.
pub const DEFAULT_PROFILE: &str = "upmem-v1a";

/// Built-in profiles: `(name, TOML text)`.
const BUILTIN: &[(&str, &str)] = &[
    (
        "upmem-v1a",
        include_str!("../../../profiles/upmem-v1a.toml"),
    ),
    (
        "upmem-v1b",
        include_str!("../../../profiles/upmem-v1b.toml"),
    ),
];

/// Errors of loading a hardware profile.
#[derive(Debug, Error)]
pub enum ProfileError {
    /// Neither a built-in profile nor an existing file.
    #[error("unknown hardware profile '{name}': built-in profiles are {builtins}; or give the path of a .toml profile file")]
    Unknown { name: String, builtins: String },
    /// The file could not be read.
    #[error("cannot read hardware profile file '{path}': {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid profile.
    #[error("hardware profile '{name}' is not valid: {message}")]
    Invalid { name: String, message: String },
}

/// The DPU core.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpuSpec {
    /// DPU clock in MHz.
    pub frequency_mhz: u32,
    /// Hardware threads per DPU.
    pub tasklets: u32,
    /// Minimum cycles between two issues of one tasklet.
    pub revolver_cycles: u32,
}

/// Memory sizes of one DPU, in bytes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    pub wram_bytes: u32,
    pub iram_bytes: u32,
    pub mram_bytes: u32,
    pub atomic_bits: u32,
}

/// The MRAM<->WRAM DMA engine: alpha + beta * n cycles.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DmaSpec {
    pub read_alpha_cycles: u32,
    pub write_alpha_cycles: u32,
    /// Thousandths of a cycle per byte.
    pub beta_millicycles_per_byte: u32,
}

/// Issue slots charged for the software arithmetic routines. Every key is required.
///
/// The integer keys describe the DPU runtime's multiply/divide routines, whose cost depends on
/// the operands (`openpim_engine::arith`, `docs/internals/dpu-abi.md`): a fixed part, a part
/// per `mul_step`/`div_step` (or loop iteration), short paths and sign handling.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostSpec {
    /// 32-bit multiply: fixed slots, and slots per `mul_step` (one per significant bit of the
    /// smaller operand, unsigned).
    pub mul32: u32,
    pub mul32_step: u32,
    /// 32-bit unsigned divide: fixed slots of the long path, slots per `div_step`
    /// (clz(divisor) - clz(dividend) + 1 of them), slots of the short path (dividend with
    /// fewer significant bits than the divisor).
    pub div32: u32,
    pub div32_step: u32,
    pub div32_short: u32,
    /// 32-bit signed divide: slots on top of the unsigned division of the magnitudes, and
    /// per negation of an operand or result.
    pub divs32: u32,
    pub divs32_negate: u32,
    /// 64-bit multiply (a branch-free routine).
    pub mul64: u32,
    /// 64-bit unsigned divide: fixed, per loop iteration (clz64(divisor) - clz64(dividend)
    /// + 1 of them), short path (divisor > dividend).
    pub div64: u32,
    pub div64_step: u32,
    pub div64_short: u32,
    /// 64-bit signed divide: on top of the unsigned division of the magnitudes, and per
    /// 64-bit negation.
    pub divs64: u32,
    pub divs64_negate: u32,
    /// IEEE-754 float (binary32) add/sub/mul/div: the body of the DPU's soft-float routine.
    pub fadd32: u32,
    pub fsub32: u32,
    pub fmul32: u32,
    pub fdiv32: u32,
    /// IEEE-754 double (binary64) add/sub/mul/div.
    pub fadd64: u32,
    pub fsub64: u32,
    pub fmul64: u32,
    pub fdiv64: u32,
}

/// How DPUs are grouped.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// Ranks in the server.
    pub ranks: u32,
    /// DPUs per rank.
    pub dpus_per_rank: u32,
    /// Chips per rank (DPUs of a chip share a chip's byte lane of the 64-bit bus).
    pub chips_per_rank: u32,
}

/// Fixed host-side cost of a kernel launch (`[launch]`): added to the modeled
/// `max cycles / frequency` of every launch, ns; and the cost of handing a rank's MRAM back to
/// the host after a launch, paid by the first host access to that MRAM
/// (`docs/fidelity.md`, "Kernel launch, allocation and loading", gives each figure's source).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSpec {
    /// Per `dpu_launch` call, ns.
    pub fixed_ns: u64,
    /// Per rank the call launches, paid one rank after the other, ns.
    pub per_rank_ns: u64,
    /// The MRAM mux switched back to the host side: paid once per rank by its first host
    /// transfer to or from MRAM after a launch (the SDK switches lazily), in that transfer's
    /// phase, ns. Absent: 0.
    #[serde(default)]
    pub mux_switch_ns: u64,
}

/// What-if direct DPU-to-DPU links (`[links]`): not in the UPMEM profiles (the hardware has
/// none); a profile file that adds the section lets the collectives route the exchanges it
/// covers over modeled links (the PIM interconnect of "Scalability limitations of PIM",
/// SIGMETRICS'24, §6: point-to-point links between banks, hierarchical across bank, chip and
/// rank; 2.8 GB/s per link there: 64 bits at 350 MHz).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Which DPUs are linked together: `chip` (the 8 DPUs of a chip), `rank` (the 64 of a
    /// rank) or `ranks` (groups of `ranks_per_group` consecutive ranks).
    pub scope: String,
    /// Ranks per group for `scope = "ranks"` (the paper's widest: 4 ranks, 256 banks).
    #[serde(default = "default_ranks_per_group")]
    pub ranks_per_group: u32,
    /// Bandwidth of each DPU's link, GB/s.
    pub link_gbps: f64,
}

/// The host CPU (`[host]`): what the host-side work of the collectives' optimized host step
/// may run on in parallel (one piece per rank on its own core, as PID-Comm runs its host step
/// on host threads; `docs/collectives.md`, "Paths and their costs").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// Physical cores of the host (all sockets; hardware threads of a core share its vector
    /// units, so they are not counted).
    pub cores: u32,
}

impl HostSpec {
    /// The UPMEM server of the built-in profiles: 2 sockets of Intel Xeon Silver 4215 (8 cores
    /// each), `profiles/upmem-v1a.toml`.
    pub fn upmem_default() -> HostSpec {
        HostSpec { cores: 16 }
    }
}

fn default_ranks_per_group() -> u32 {
    4
}

impl LinkSpec {
    /// The scopes a profile may name.
    pub const SCOPES: [&'static str; 3] = ["chip", "rank", "ranks"];

    fn validate(&self) -> Result<(), String> {
        if !Self::SCOPES.contains(&self.scope.as_str()) {
            return Err(format!(
                "links.scope = \"{}\": one of chip, rank, ranks",
                self.scope
            ));
        }
        if !(self.link_gbps.is_finite() && self.link_gbps > 0.0) {
            return Err(format!(
                "links.link_gbps = {}: a positive bandwidth (GB/s)",
                self.link_gbps
            ));
        }
        if self.ranks_per_group == 0 {
            return Err("links.ranks_per_group must be >= 1".into());
        }
        Ok(())
    }
}

/// A hardware profile. New sections (bus bandwidths, links, ...) are added as `Option`
/// fields so that older profile files stay valid.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareProfile {
    /// Short name (`upmem-v1a`).
    pub name: String,
    /// One-line description.
    pub description: String,
    pub dpu: DpuSpec,
    pub memory: MemorySpec,
    pub dma: DmaSpec,
    pub cost: CostSpec,
    /// Host <-> PIM bus (`[bus]`; a file without it gets the `upmem-v1a` figures).
    #[serde(default)]
    pub bus: Option<BusSpec>,
    /// Kernel launch cost (`[launch]`; a file without it gets zeros: not modeled).
    #[serde(default)]
    pub launch: Option<LaunchSpec>,
    /// What-if DPU-to-DPU links (`[links]`; absent: none, as on UPMEM hardware).
    #[serde(default)]
    pub links: Option<LinkSpec>,
    /// The host CPU (`[host]`; a file without it gets the `upmem-v1a` host).
    #[serde(default)]
    pub host: Option<HostSpec>,
    pub topology: TopologySpec,
}

impl HardwareProfile {
    /// Loads a profile by built-in name, or from a file when `name_or_path` names one
    /// (contains a path separator, ends in `.toml`, or exists).
    ///
    /// ```
    /// let p = openpim_machine::HardwareProfile::load("upmem-v1a").unwrap();
    /// assert_eq!(p.dpu.frequency_mhz, 350);
    /// ```
    pub fn load(name_or_path: &str) -> Result<HardwareProfile, ProfileError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return HardwareProfile::parse(name_or_path, text);
        }
        let path = Path::new(name_or_path);
        let looks_like_path =
            name_or_path.contains(std::path::MAIN_SEPARATOR) || name_or_path.ends_with(".toml");
        if looks_like_path || path.exists() {
            let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
                path: name_or_path.to_string(),
                source,
            })?;
            return HardwareProfile::parse(name_or_path, &text);
        }
        Err(ProfileError::Unknown {
            name: name_or_path.to_string(),
            builtins: builtin_names().join(", "),
        })
    }

    /// The default profile (`upmem-v1a`).
    pub fn default_profile() -> HardwareProfile {
        // The built-in profiles are checked by this crate's tests, so this cannot fail.
        HardwareProfile::load(DEFAULT_PROFILE).expect("built-in default profile is valid")
    }

    /// Parses and validates a profile's TOML text; `origin` names it in errors.
    pub fn parse(origin: &str, text: &str) -> Result<HardwareProfile, ProfileError> {
        let profile: HardwareProfile = toml::from_str(text).map_err(|e| ProfileError::Invalid {
            name: origin.to_string(),
            message: e.to_string(),
        })?;
        profile
            .validate()
            .map_err(|message| ProfileError::Invalid {
                name: origin.to_string(),
                message,
            })?;
        Ok(profile)
    }

    fn validate(&self) -> Result<(), String> {
        let fixed = |what: &str, got: u32, engine: u32| {
            if got == engine {
                Ok(())
            } else {
                Err(format!(
                    "{what} = {got}, but this engine emulates exactly {engine} (other sizes are not supported yet)"
                ))
            }
        };
        fixed("memory.wram_bytes", self.memory.wram_bytes, map::WRAM_SIZE)?;
        fixed("memory.iram_bytes", self.memory.iram_bytes, map::IRAM_SIZE)?;
        fixed("memory.mram_bytes", self.memory.mram_bytes, map::MRAM_SIZE)?;
        fixed(
            "memory.atomic_bits",
            self.memory.atomic_bits,
            map::ATOMIC_BITS,
        )?;
        if self.dpu.tasklets == 0 || self.dpu.tasklets > map::MAX_TASKLETS {
            return Err(format!("dpu.tasklets must be 1..={}", map::MAX_TASKLETS));
        }
        if self.dpu.frequency_mhz == 0 {
            return Err("dpu.frequency_mhz must be > 0".into());
        }
        if self.dpu.revolver_cycles == 0 {
            return Err("dpu.revolver_cycles must be > 0".into());
        }
        if self.topology.ranks == 0 || self.topology.dpus_per_rank == 0 {
            return Err("topology.ranks and topology.dpus_per_rank must be > 0".into());
        }
        if self.topology.chips_per_rank == 0
            || !self
                .topology
                .dpus_per_rank
                .is_multiple_of(self.topology.chips_per_rank)
        {
            return Err("topology.chips_per_rank must divide topology.dpus_per_rank".into());
        }
        self.bus_spec().validate(self.topology.dpus_per_rank)?;
        if let Some(l) = &self.links {
            l.validate()?;
        }
        if self.host_spec().cores == 0 {
            return Err("host.cores must be >= 1 (the host's physical cores)".into());
        }
        Ok(())
    }

    /// The bus figures (the profile's `[bus]`, or the `upmem-v1a` defaults).
    pub fn bus_spec(&self) -> BusSpec {
        self.bus.clone().unwrap_or_else(BusSpec::upmem_default)
    }

    /// The host CPU (the profile's `[host]`, or the `upmem-v1a` host).
    pub fn host_spec(&self) -> HostSpec {
        self.host.clone().unwrap_or_else(HostSpec::upmem_default)
    }

    /// The launch figures (the profile's `[launch]`, or zeros).
    pub fn launch_spec(&self) -> LaunchSpec {
        self.launch.clone().unwrap_or_default()
    }

    /// The bus model of this profile.
    pub fn bus_model(&self) -> BusModel {
        BusModel::new(&self.bus_spec(), self.topology.dpus_per_rank)
    }

    /// DPUs in the whole server.
    pub fn total_dpus(&self) -> u64 {
        u64::from(self.topology.ranks) * u64::from(self.topology.dpus_per_rank)
    }

    /// The engine's timing parameters for this profile.
    pub fn timing(&self, max_cycles: Option<u64>) -> Timing {
        Timing {
            revolver_cycles: self.dpu.revolver_cycles,
            dma_read_alpha: self.dma.read_alpha_cycles,
            dma_write_alpha: self.dma.write_alpha_cycles,
            dma_beta_milli: self.dma.beta_millicycles_per_byte,
            mul32_slots: self.cost.mul32,
            mul32_step_slots: self.cost.mul32_step,
            div32_slots: self.cost.div32,
            div32_step_slots: self.cost.div32_step,
            div32_short_slots: self.cost.div32_short,
            divs32_slots: self.cost.divs32,
            divs32_negate_slots: self.cost.divs32_negate,
            mul64_slots: self.cost.mul64,
            div64_slots: self.cost.div64,
            div64_step_slots: self.cost.div64_step,
            div64_short_slots: self.cost.div64_short,
            divs64_slots: self.cost.divs64,
            divs64_negate_slots: self.cost.divs64_negate,
            fadd32_slots: self.cost.fadd32,
            fsub32_slots: self.cost.fsub32,
            fmul32_slots: self.cost.fmul32,
            fdiv32_slots: self.cost.fdiv32,
            fadd64_slots: self.cost.fadd64,
            fsub64_slots: self.cost.fsub64,
            fmul64_slots: self.cost.fmul64,
            fdiv64_slots: self.cost.fdiv64,
            max_cycles,
            strict_dma: false,
            engine: openpim_engine::Engine::default(),
            strict_sync: false,
        }
    }

    /// Seconds of DPU time for `cycles` cycles.
    pub fn cycles_to_seconds(&self, cycles: u64) -> f64 {
        cycles as f64 / (f64::from(self.dpu.frequency_mhz) * 1e6)
    }
}

/// Names of the built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(n, _)| *n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_validate() {
        for name in builtin_names() {
            let p = HardwareProfile::load(name).unwrap();
            assert_eq!(p.name, name);
            assert_eq!(p.topology.ranks, 40);
            assert_eq!(p.topology.dpus_per_rank, 64);
            assert_eq!(p.total_dpus(), 2560);
            assert_eq!(p.dpu.tasklets, 24);
            assert_eq!(p.dpu.revolver_cycles, 11);
            assert_eq!(p.dma.read_alpha_cycles, 77);
            assert_eq!(p.dma.write_alpha_cycles, 61);
            assert_eq!(p.dma.beta_millicycles_per_byte, 500);
        }
        assert_eq!(
            HardwareProfile::load("upmem-v1a")
                .unwrap()
                .dpu
                .frequency_mhz,
            350
        );
        assert_eq!(
            HardwareProfile::load("upmem-v1b")
                .unwrap()
                .dpu
                .frequency_mhz,
            400
        );
        assert_eq!(HardwareProfile::default_profile().name, DEFAULT_PROFILE);
    }

    #[test]
    fn user_file_profile() {
        let dir = std::env::temp_dir().join(format!("openpim-prof-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mine.toml");
        let text = include_str!("../../../profiles/upmem-v1a.toml")
            .replace("frequency_mhz = 350", "frequency_mhz = 500")
            .replace("ranks = 40", "ranks = 2");
        std::fs::write(&path, text).unwrap();
        let p = HardwareProfile::load(path.to_str().unwrap()).unwrap();
        assert_eq!(p.dpu.frequency_mhz, 500);
        assert_eq!(p.topology.ranks, 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unknown_and_invalid_profiles() {
        let e = HardwareProfile::load("nosuch").unwrap_err();
        assert!(e.to_string().contains("upmem-v1a"), "{e}");
        let e = HardwareProfile::load("/nonexistent/x.toml").unwrap_err();
        assert!(matches!(e, ProfileError::Io { .. }));
        let bad = include_str!("../../../profiles/upmem-v1a.toml")
            .replace("wram_bytes = 65536", "wram_bytes = 1");
        let e = HardwareProfile::parse("bad", &bad).unwrap_err();
        assert!(e.to_string().contains("memory.wram_bytes"), "{e}");
        let typo = include_str!("../../../profiles/upmem-v1a.toml").replace("mul64", "mul46");
        assert!(HardwareProfile::parse("typo", &typo).is_err());
    }

    #[test]
    fn float_costs_in_both_profiles_and_required() {
        for name in builtin_names() {
            let c = HardwareProfile::load(name).unwrap().cost;
            assert_eq!(
                [c.fadd32, c.fsub32, c.fmul32, c.fdiv32],
                [64, 69, 176, 1022],
                "{name}"
            );
            assert_eq!(
                [c.fadd64, c.fsub64, c.fmul64, c.fdiv64],
                [98, 105, 653, 2180],
                "{name}"
            );
        }
        // A user profile written before the float keys existed: a clear error naming the key.
        let text = include_str!("../../../profiles/upmem-v1a.toml");
        let old = text.replace("fadd32 = 64\n", "");
        let e = HardwareProfile::parse("old.toml", &old).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, ProfileError::Invalid { .. }), "{msg}");
        assert!(
            msg.contains("old.toml") && msg.contains("missing field `fadd32`"),
            "{msg}"
        );
        let e = HardwareProfile::parse("x", &text.replace("fdiv64 = 2180\n", "")).unwrap_err();
        assert!(e.to_string().contains("fdiv64"), "{e}");
    }

    #[test]
    fn integer_costs_in_both_profiles_and_required() {
        for name in builtin_names() {
            let c = HardwareProfile::load(name).unwrap().cost;
            assert_eq!(
                [c.mul32, c.mul32_step, c.div32, c.div32_step, c.div32_short],
                [3, 1, 4, 1, 2],
                "{name}"
            );
            assert_eq!([c.divs32, c.divs32_negate, c.mul64], [7, 1, 129], "{name}");
            assert_eq!(
                [
                    c.div64,
                    c.div64_step,
                    c.div64_short,
                    c.divs64,
                    c.divs64_negate
                ],
                [20, 22, 7, 2, 2],
                "{name}"
            );
        }
        // Every key is required: a profile written for the constant-cost model (without the
        // per-step keys) is rejected with the missing key named.
        let text = include_str!("../../../profiles/upmem-v1a.toml");
        for key in [
            "mul32_step = 1\n",
            "div32_short = 2\n",
            "divs32_negate = 1\n",
            "div64_step = 22\n",
            "divs64 = 2\n",
        ] {
            assert!(text.contains(key), "{key}");
            let e = HardwareProfile::parse("old.toml", &text.replace(key, "")).unwrap_err();
            let field = key.split(' ').next().unwrap();
            assert!(
                e.to_string().contains(&format!("missing field `{field}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn bus_section_loaded_overridden_and_rejected() {
        for name in builtin_names() {
            let p = HardwareProfile::load(name).unwrap();
            let bus = p
                .bus
                .clone()
                .expect("built-in profiles have a [bus] section");
            assert_eq!(bus, crate::bus::BusSpec::upmem_default());
        }
        let text = include_str!("../../../profiles/upmem-v1a.toml");
        // Overridden: a user's faster bus.
        let fast = text.replace("cpu_dpu_rank_gbps = 6.68", "cpu_dpu_rank_gbps = 12.5");
        let p = HardwareProfile::parse("fast", &fast).unwrap();
        assert_eq!(p.bus_spec().cpu_dpu_rank_gbps, 12.5);
        // Missing section: the defaults (older profile files stay valid).
        let start = text.find("\n[bus]").unwrap();
        let end = text.find("\n[topology]").unwrap();
        let old = format!("{}{}", &text[..start], &text[end..]);
        let p = HardwareProfile::parse("old", &old).unwrap();
        assert!(p.bus.is_none());
        assert_eq!(p.bus_spec(), crate::bus::BusSpec::upmem_default());
        // Rejected, with the key named: impossible rank bandwidth, negative, unknown key.
        let e = HardwareProfile::parse(
            "bad",
            &text.replace("broadcast_rank_gbps = 16.88", "broadcast_rank_gbps = 50"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("bus.broadcast_rank_gbps"), "{e}");
        let e = HardwareProfile::parse(
            "neg",
            &text.replace("channel_gbps = 19.2", "channel_gbps = -1.0"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("bus.channel_gbps"), "{e}");
        let e = HardwareProfile::parse(
            "typo",
            &text.replace("host_channels = 10", "host_chanels = 10"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("host_chanels"), "{e}");
        let e = HardwareProfile::parse(
            "type",
            &text.replace("cpu_dpu_call_ns = 72000", "cpu_dpu_call_ns = \"fast\""),
        )
        .unwrap_err();
        assert!(e.to_string().contains("cpu_dpu_call_ns"), "{e}");
        // The one fixed cost of older profiles is refused with what replaced it.
        let e = HardwareProfile::parse(
            "old-latency",
            &text.replace(
                "cpu_dpu_call_ns = 72000",
                "cpu_dpu_call_ns = 72000\ncall_latency_ns = 3000",
            ),
        )
        .unwrap_err();
        assert!(e.to_string().contains("dpu_cpu_call_ns"), "{e}");
    }

    #[test]
    fn links_section_absent_in_upmem_and_checked() {
        for name in builtin_names() {
            assert_eq!(HardwareProfile::load(name).unwrap().links, None, "{name}");
        }
        let text = include_str!("../../../profiles/upmem-v1a.toml");
        let with =
            |links: &str| HardwareProfile::parse("x", &format!("{text}\n[links]\n{links}\n"));
        let p = with("scope = \"ranks\"\nlink_gbps = 2.8").unwrap();
        assert_eq!(
            p.links,
            Some(LinkSpec {
                scope: "ranks".into(),
                ranks_per_group: 4,
                link_gbps: 2.8
            })
        );
        let e = with("scope = \"bank\"\nlink_gbps = 2.8")
            .unwrap_err()
            .to_string();
        assert!(e.contains("links.scope"), "{e}");
        let e = with("scope = \"rank\"\nlink_gbps = 0")
            .unwrap_err()
            .to_string();
        assert!(e.contains("links.link_gbps"), "{e}");
    }

    #[test]
    fn launch_section_optional_and_checked() {
        for name in builtin_names() {
            let p = HardwareProfile::load(name).unwrap();
            let want = LaunchSpec {
                fixed_ns: 85_500,
                per_rank_ns: 5_800,
                mux_switch_ns: 10_500,
            };
            assert_eq!(p.launch, Some(want), "{name}");
        }
        let text = include_str!("../../../profiles/upmem-v1a.toml");
        let p = HardwareProfile::parse("x", &text.replace("fixed_ns = 85500", "fixed_ns = 25000"))
            .unwrap();
        assert_eq!(p.launch_spec().fixed_ns, 25_000);
        // A profile written before the mux switch was modeled still loads: no switch cost.
        let p = HardwareProfile::parse("pre-mux", &text.replace("mux_switch_ns = 10500\n", ""))
            .unwrap();
        assert_eq!(p.launch_spec().mux_switch_ns, 0);
        assert_eq!(p.launch_spec().fixed_ns, 85_500);
        let start = text.find("\n[launch]").unwrap();
        let end = text.find("\n[topology]").unwrap();
        let old = format!("{}{}", &text[..start], &text[end..]);
        let p = HardwareProfile::parse("old", &old).unwrap();
        assert_eq!(p.launch_spec(), LaunchSpec::default());
        let e = HardwareProfile::parse(
            "typo",
            &text.replace("per_rank_ns = 5800", "per_rank = 5800"),
        )
        .unwrap_err();
        assert!(e.to_string().contains("per_rank"), "{e}");
    }

    #[test]
    fn host_section_optional_and_checked() {
        for name in builtin_names() {
            let p = HardwareProfile::load(name).unwrap();
            assert_eq!(p.host, Some(HostSpec::upmem_default()), "{name}");
        }
        let text = include_str!("../../../profiles/upmem-v1a.toml");
        let start = text.find("\n[host]").unwrap();
        let end = text.find("\n[topology]").unwrap();
        let old = format!("{}{}", &text[..start], &text[end..]);
        let p = HardwareProfile::parse("old", &old).unwrap();
        assert_eq!(p.host_spec(), HostSpec::upmem_default());
        let e =
            HardwareProfile::parse("zero", &text.replace("cores = 16", "cores = 0")).unwrap_err();
        assert!(e.to_string().contains("host.cores"), "{e}");
    }

    #[test]
    fn timing_from_profile() {
        let p = HardwareProfile::default_profile();
        let t = p.timing(Some(10));
        assert_eq!(t.revolver_cycles, 11);
        assert_eq!(t.mul32_slots, p.cost.mul32);
        assert_eq!(
            [
                t.fadd32_slots,
                t.fsub32_slots,
                t.fmul32_slots,
                t.fdiv32_slots,
                t.fadd64_slots,
                t.fsub64_slots,
                t.fmul64_slots,
                t.fdiv64_slots
            ],
            [64, 69, 176, 1022, 98, 105, 653, 2180]
        );
        assert_eq!(t.max_cycles, Some(10));
        assert!((p.cycles_to_seconds(350_000_000) - 1.0).abs() < 1e-12);
        // The engine's built-in default is the default profile's timing.
        assert_eq!(p.timing(None), Timing::upmem_default());
    }
}
