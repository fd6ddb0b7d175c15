//! The DPU engine: decodes a DPU program once and interprets it for one DPU at a time,
//! with the revolver pipeline, the DMA engine, tasklet synchronisation and faults.
//!
//! No I/O, no threads: the host runtime calls [`run`] for each DPU of a launch (in parallel
//! if it likes; runs of different DPUs share nothing). The binary interface the engine
//! implements (address map, boot, environment calls) is `docs/internals/dpu-abi.md`.
//!
//! API CONTRACT (fixed; the host runtime is written against it — extend, do not change):
//!
//! ```ignore
//! let program = Program::decode(text_base, &text_bytes);        // once per loaded program
//! let outcome = run(&program, &boot, DpuMemory { wram, mram }, &timing);
//! ```

use thiserror::Error;

/// Base addresses and sizes of the DPU's memories (the program's view).
pub mod map {
    pub const WRAM_BASE: u32 = 0x0000_0000;
    pub const WRAM_SIZE: u32 = 64 * 1024;
    pub const MRAM_BASE: u32 = 0x0800_0000;
    pub const MRAM_SIZE: u32 = 64 * 1024 * 1024;
    pub const IRAM_BASE: u32 = 0x8000_0000;
    pub const IRAM_SIZE: u32 = 24 * 1024;
    pub const ATOMIC_BASE: u32 = 0xF000_0000;
    pub const ATOMIC_BITS: u32 = 256;
    pub const MAX_TASKLETS: u32 = 24;
}

/// Timing and cost parameters, taken from the hardware profile by the host runtime.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Minimum cycles between two issues of one tasklet (11 on UPMEM).
    pub revolver_cycles: u32,
    /// Fixed DMA cost of an MRAM→WRAM transfer, cycles.
    pub dma_read_alpha: u32,
    /// Fixed DMA cost of a WRAM→MRAM transfer, cycles.
    pub dma_write_alpha: u32,
    /// Per-byte DMA cost in thousandths of a cycle (500 = 0.5 cycle/byte).
    pub dma_beta_milli: u32,
    /// Issue slots charged for the arithmetic environment calls.
    pub mul32_slots: u32,
    pub div32_slots: u32,
    pub mul64_slots: u32,
    pub div64_slots: u32,
    /// Stop the DPU with `Fault::CycleLimit` after this many cycles (None = no limit).
    pub max_cycles: Option<u64>,
}

/// Everything the engine needs to start the tasklets of one launch.
#[derive(Debug, Clone, PartialEq)]
pub struct BootInfo {
    /// Entry point (`_start`), an IRAM address.
    pub entry: u32,
    /// NR_TASKLETS of the program (1..=24, checked by the loader).
    pub nr_tasklets: u32,
    /// Per tasklet `(stack_lo, stack_hi)` in WRAM, hi exclusive.
    pub stacks: Vec<(u32, u32)>,
    /// Capacity of the printf buffer in bytes (`__stdout_buffer_size`).
    pub printf_capacity: u32,
    /// 32-bit words written into WRAM before the tasklets start (e.g. the heap pointer).
    pub init_writes: Vec<(u32, u32)>,
}

/// The memories of one DPU, borrowed for the duration of a run.
pub struct DpuMemory<'a> {
    /// WRAM, exactly `map::WRAM_SIZE` bytes.
    pub wram: &'a mut [u8],
    /// MRAM, exactly `map::MRAM_SIZE` bytes (lazily backed by the machine).
    pub mram: &'a mut [u8],
}

/// Why a DPU stopped abnormally. The message names the cause; the report adds where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Fault {
    #[error("fault placeholder")]
    Placeholder,
}

/// A fault with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultReport {
    pub tasklet: u32,
    pub pc: u32,
    pub fault: Fault,
}

/// What a run of one DPU produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutcome {
    /// DPU cycles from boot to the end of the run.
    pub cycles: u64,
    /// Instructions issued (arithmetic calls count their slots).
    pub instructions: u64,
    /// The formatted printf output of this launch.
    pub log: Vec<u8>,
    /// `Some` when the DPU stopped on a fault.
    pub fault: Option<FaultReport>,
}

/// A DPU program decoded once; shared (read-only) by every DPU it is loaded on.
pub struct Program {}

impl Program {
    /// Decodes the IRAM image `text` whose first byte is at `text_base`.
    pub fn decode(_text_base: u32, _text: &[u8]) -> Program {
        todo!("engine being written")
    }
}

/// Runs one DPU from boot until every tasklet has exited, HALT, or a fault.
pub fn run(_program: &Program, _boot: &BootInfo, _mem: DpuMemory<'_>, _timing: &Timing) -> RunOutcome {
    todo!("engine being written")
}
