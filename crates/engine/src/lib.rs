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
//!
//! # Timing conventions
//!
//! The clock starts at cycle 0 when the tasklets boot. Every instruction *issues* at one
//! cycle; the DPU issues at most one instruction per cycle, and a tasklet that issued at
//! cycle `c` may issue again at `c + revolver_cycles` at the earliest. Among the tasklets
//! allowed to issue at a cycle, the one after the last issuer in round-robin order (by
//! tasklet id) issues. When none may issue, the clock jumps to the earliest cycle at which one
//! may. A run's [`RunOutcome::cycles`] is the cycle of its last issue plus one; so one tasklet
//! running `N` instructions takes `revolver_cycles * (N - 1) + 1` cycles, and 11 or more
//! always-ready tasklets issue one instruction per cycle.
//!
//! DMA (the `DMA_*` calls and direct MRAM loads/stores, which count as 8-byte transfers): the
//! DPU's single engine serves requests in issue order. A request of `n` bytes issued at cycle
//! `c` starts at `s = max(c, end of the previous request)` and ends at
//! `e = s + alpha + ceil(beta_milli * n / 1000)`; the requesting tasklet's next issue is at
//! `max(e, c + revolver_cycles)`. The data is copied when the request issues. A `DMA_*` call
//! is decoded as the DPU's DMA instruction: `n` moves what its 8-bit length field encodes
//! (`dma_encoded_length`), both addresses lose their low 3 bits, and an MRAM offset below
//! 64 MiB is accepted without the MRAM base; each such request is recorded as a [`DmaQuirk`]
//! (a fault under [`Timing::strict_dma`]). Ranges past the memories always fault.
//!
//! The arithmetic calls (`MUL32` ... `DIVS64`, `FADD32` ... `FDIV64`) issue once (the `ecall`)
//! and then occupy further issues of the calling tasklet, each under the revolver rule; those
//! issues count as instructions. Their number is what the DPU's runtime routine executes
//! beyond the slots the program issues itself: for the integer calls a function of the
//! operands ([`arith`]: `mul_step`s per significant bit of the smaller factor, `div_step`s per
//! bit of difference between dividend and divisor, short paths, sign handling), for the
//! floating-point calls the profile's `*_slots` value.
//!
//! A tasklet woken by `RESUME` issued at cycle `c` may issue at
//! `max(c + 1, its last issue + revolver_cycles)`.
//!
//! The performance counter (`PERF_CONFIG`/`PERF_GET`) is DPU-wide and reset at every launch
//! (mode: cycles). In cycle mode it reads `c - reset cycle` for a call issued at `c`; in
//! instruction mode it counts the instructions issued by all tasklets before the call since
//! the reset (arithmetic-call slots included).
//!
//! # Issue-slot corrections
//!
//! The engine runs RV32I, but the timing must be the DPU's, and the DPU ISA does in one
//! instruction several things RV32I needs two or more for. [`Program::decode`] therefore
//! marks RV32I instructions whose successor the real DPU executes in the same instruction;
//! such a *pair* **issues in one slot** (one cycle, one revolver turn of its tasklet, one
//! instruction in [`RunOutcome::instructions`] and in the performance counter). Marks chain:
//! when instructions `i` and `i + 1` are both marked, `i`, `i + 1` and `i + 2` issue in one
//! slot (rules 5 and 6 use this). The facts about the DPU ISA come from its instruction
//! formats as implemented in uPIMulator (VIA-Research/uPIMulator,
//! `linker/kernel/instruction`): ALU operations with a condition
//! and a jump target (`RRRCI`/`RRICI`: `add rc, ra, rb, cond, pc`; 8-bit immediates;
//! conditions on the result such as z/nz/mi/pl, and for `sub` also the comparisons
//! lts/ltu/ges/...), compare-and-branch against zero-register forms with 11-bit immediates
//! (`ZRICI`: `sub zero, ra, imm, cond, pc`, which the assembler spells `jlt ra, imm, pc` and
//! so on), 64-bit pair loads and stores (`ld dc, ra, off` / `sd ra, off, db`), 32-bit
//! immediates in ALU operations (`RRI`: `add rc, ra, imm32`, `move rc, imm32`) and 24-bit
//! signed load/store offsets (`ERRI`). Further DPU facts used by rules 5 and 6: the DPU's
//! instructions name any of its 24 registers and carry immediates directly; its system
//! instructions take their operands that way (`ldma`/`sdma` take the WRAM and MRAM address
//! registers and an immediate size, `acquire`/`release` an immediate bit, the performance
//! counter is read by one instruction), so there is no calling convention to satisfy; and
//! its `add`/`sub` set a carry flag that `addc`/`subc` consume, so a 64-bit add or subtract
//! is two instructions. Rules 7 and 8 follow the UPMEM DPU back end of LLVM
//! (`upmem/llvm-project`, `llvm/lib/Target/DPU`), what the SDK's compiler emits: the DPU's
//! `lsl_add` for array indexing (`LSL_ADDrrri`; public DPU assembly compiled by the SDK shows
//! `lsl_add r1, r16, r21, 2` for `&input[j]`) and the expansion of a 64-bit `==`/`!=`
//! compare-and-branch into two 32-bit jumps (`DPUResolveMacroInstrPass.cpp`). Rules
//! 1-4 and 7 are applied greedily from the start of the program (an instruction belongs to at
//! most one of their pairs); rules 5, 6, 8 and 9 then add their marks:
//!
//! 1. **ALU op + branch on its result.** An ALU instruction writing `rd` (not `x0`/`sp`)
//!    followed by a conditional branch that compares `rd` with `x0`. Immediate forms must fit
//!    the DPU's field: 8 bits signed for `addi/xori/ori/andi`, 11 bits for `slti/sltiu` (a
//!    compare), shifts always. This covers the compare idioms `slt/sltu/slti/sltiu t, ...;
//!    bnez/beqz t` (the DPU's compare-and-branch). A branch comparing the result with
//!    another register is two DPU instructions and is not fused.
//! 2. **Constant + compare-and-branch.** `addi t, x0, imm` with `imm` in 11 bits signed,
//!    followed by a branch that compares another register with `t` (the DPU compares with an
//!    immediate directly).
//! 3. **64-bit pair access.** Two `lw` (or two `sw`) at offsets `o` and `o + 4` of the same
//!    base register, in either order, `o` a multiple of 8; for loads the first must not
//!    overwrite the base and the two destinations differ. The DPU's `ld`/`sd` need an
//!    8-aligned address, so the pair issues in one slot only when `base + o` is 8-aligned
//!    at run time (otherwise the two ops issue separately). A pair that addresses MRAM
//!    directly is one 8-byte DMA.
//! 4. **32-bit constant + consumer.** `lui`/`auipc t` followed by an instruction that uses
//!    `t` as its constant: `addi _, t, _` (`move`/`add` with a 32-bit immediate),
//!    `add/sub/and/or/xor` with `t` as exactly one operand, a load or store with base `t`
//!    whose absolute address fits 24 bits signed (any WRAM address; not MRAM), or `jalr`
//!    through `t` (`call`/`jump` to an absolute address).
//! 5. **Operand set-up of an environment call.** The maximal run of register moves
//!    (`mv rd, rs` = `addi rd, rs, 0`) and small constants (`li rd, imm` = `addi rd, x0,
//!    imm`) directly before an `ecall` issues with the `ecall`, in one slot: RV32I must put
//!    the call number in `a7` and the arguments in `a0..`, the DPU's system instruction names
//!    its registers and immediates directly. Writes to `x0`/`sp` and any other instruction
//!    (`addi a0, sp, 16`, `add`, a load, ...) end the run. `lui`/`auipc` are not part of it:
//!    a 32-bit constant is an address (a WRAM/MRAM buffer, a format string) that the DPU too
//!    must `move` into the register its `ldma`/`sdma` reads (rule 4 still pairs `lui` with
//!    its consumer). The restore after a runtime wrapper's call (`mv a7, a3` after the
//!    `ecall` in `__mulsi3: mv a3, a7; li a7, 20; ecall; mv a7, a3; ret`) is not covered and
//!    issues alone.
//! 6. **64-bit add/sub with carry.** gcc computes the carry of a 64-bit add as `add lo, a,
//!    b` (or `addi lo, a, imm`) then `sltu c, lo, a` (or `b`, or a copy `mv x, a` made
//!    before the add that the `sltu` overwrites), the high word as `add h, ah, bh` (or
//!    `addi`) and then `add hi, h, c` (either operand order); a subtract as `sub lo, a, b`
//!    with the borrow `sltu c, a, lo` (or a copy of `a`), or `sltu c, a, b` before or after
//!    it, then `sub h, ah, bh; sub hi, h, c` (`neg` is `sub lo, x0, a` with `snez` =
//!    `sltu c, x0, a`). The DPU does this as `add`+`addc` (`sub`+`subc`): the low group
//!    (copy, low op, carry) and the high group (high op, consumer) each cost one slot, every
//!    op of a group but its first issuing in the slot of the op before it. Without a high op
//!    in the window (64-bit + 32-bit: `add hi, c, ah`; a constant high part: `addi hi, c,
//!    imm`) only the low group is combined (the consumer is the DPU's `addc hi, ah, 0` /
//!    `addc hi, zero, imm`). The pattern must lie in a straight-line window of at most 6
//!    instructions ending at the consumer, with no branch, jump or `ecall` inside and no
//!    branch target, jump target or return point after its first instruction, and every
//!    register must carry the value the pattern needs (the `sltu`
//!    compares the sum with an unchanged operand, the consumer reads that `sltu`'s result
//!    and the high op's result). A `sltu` comparing unrelated registers is not a carry.
//! 7. **Shift-and-add.** `slli t, rb, k` followed by `add t, ra, t` (either operand order)
//!    that overwrites the shifted value: the DPU's `lsl_add t, ra, rb, k` (an address
//!    `base + (i << 3)`).
//! 8. **64-bit equality branch.** `xor a, x0, y0; xor b, x1, y1; or c, a, b; beqz/bnez c`
//!    with `c` one of `a`, `b`: the DPU compiler's `jneq` on the low words then `jneq`/`jeq`
//!    on the high words, two instructions. The second `xor`, the `or` and the branch (already
//!    a rule-1 pair) issue in one slot; no branch target on those three.
//! 9. **The SDK's lock.** `li a7, ATOMIC_LOCK` and `mv a0, rX` (rule 5), `ecall`, `beqz a0`
//!    back to the `li`: the SDK's `mutex_lock` is the one DPU instruction `acquire bit, 0,
//!    nz, .`, which jumps to itself while the bit is held (the SDK's `mutex.h` writes it as
//!    that one asm statement). The branch issues in the `ecall`'s
//!    slot, so a lock attempt, failed or not, is one slot (`ATOMIC_ACQUIRE` in the same loop,
//!    a `mutex_trylock` loop, stays two: on the DPU an `acquire` and a jump).
//!
//! The second op of a pair issues together with the first only when control falls through
//! from the first into it; when a branch or jump targets the second op directly, it issues
//! alone (so control arriving in the middle of a rule-5 run issues the rest of the run with
//! the `ecall`). All ops execute exactly as without fusion (same results, same faults; a
//! fault in the second op is reported at its own pc, and the slot is then not counted).
//! Each op issued in the slot of its predecessor is counted in [`RunStats::fused_pairs`], so
//! RV32I instructions executed = `instructions + fused_pairs`. [`Program::decode_with`] with
//! `fuse_pairs = false` turns the correction off (every RV32I instruction issues alone).
//!
//! When a run stops on a fault raised by an instruction issued at cycle `c`,
//! [`RunOutcome::cycles`] is `c + 1` and the faulting instruction is not counted in
//! [`RunOutcome::instructions`]; for `Deadlock`, `CycleLimit` and `Stopped` it is the cycle at
//! which the condition was detected.
//!
//! # Faults
//!
//! Nothing a DPU program does makes the engine panic or touch memory outside the DPU's WRAM
//! and MRAM slices: every access is checked, and every misuse ends the run with a
//! [`Fault`] value in [`RunOutcome::fault`] (with the tasklet and pc;
//! [`FaultReport::describe`] adds the disassembled instruction). Output printed before the
//! fault is kept in [`RunOutcome::log`].

pub mod arith;
mod decode;
mod exec;
mod jit;
mod printf;
pub mod probe;

pub use jit::TranslationStats;

pub use decode::Program;
pub use openpim_isa::disassemble;

use std::fmt;
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

/// Environment call numbers (`a7` at `ecall`), as in `docs/internals/dpu-abi.md`.
pub mod ecall {
    pub const TASKLET_EXIT: u32 = 0;
    pub const HALT: u32 = 1;
    pub const DMA_MRAM_TO_WRAM: u32 = 2;
    pub const DMA_WRAM_TO_MRAM: u32 = 3;
    pub const ATOMIC_ACQUIRE: u32 = 4;
    pub const ATOMIC_RELEASE: u32 = 5;
    pub const SLEEP: u32 = 6;
    pub const RESUME: u32 = 7;
    pub const PERF_CONFIG: u32 = 8;
    pub const PERF_GET: u32 = 9;
    pub const PRINTF: u32 = 10;
    pub const FAULT: u32 = 11;
    pub const STACK_LEFT: u32 = 12;
    pub const CYCLES: u32 = 13;
    /// `ATOMIC_ACQUIRE` as the SDK's `mutex_lock` makes it, in the loop `li a7, 14; mv a0,
    /// rX; ecall; beqz a0, back`: the DPU's self-jumping `acquire bit, 0, nz, .`, one issue
    /// slot per attempt ("Issue-slot corrections", rule 9).
    pub const ATOMIC_LOCK: u32 = 14;
    pub const MUL32: u32 = 20;
    pub const DIVU32: u32 = 21;
    pub const DIVS32: u32 = 22;
    pub const MUL64: u32 = 23;
    pub const DIVU64: u32 = 24;
    pub const DIVS64: u32 = 25;
    /// IEEE-754 binary32 add/sub/mul/div: `a0 = a0 op a1` (bit patterns).
    pub const FADD32: u32 = 26;
    pub const FSUB32: u32 = 27;
    pub const FMUL32: u32 = 28;
    pub const FDIV32: u32 = 29;
    /// IEEE-754 binary64 add/sub/mul/div: `a0:a1 = a0:a1 op a2:a3` (bit patterns, low word
    /// first).
    pub const FADD64: u32 = 30;
    pub const FSUB64: u32 = 31;
    pub const FMUL64: u32 = 32;
    pub const FDIV64: u32 = 33;

    /// `FAULT` codes (`a0`).
    pub const FAULT_HEAP_EXHAUSTED: u32 = 1;
    pub const FAULT_ASSERTION: u32 = 2;
    pub const FAULT_SEQREAD: u32 = 3;
    pub const FAULT_ALLOCATOR: u32 = 4;

    /// `PERF_CONFIG` modes (`a0`).
    pub const PERF_SAME: u32 = 0;
    pub const PERF_CYCLES: u32 = 1;
    pub const PERF_INSTRUCTIONS: u32 = 2;
    pub const PERF_NOTHING: u32 = 3;
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
    /// Integer multiplication and division calls (`MUL32` ... `DIVS64`): issue slots charged
    /// per call as functions of the operands ([`arith`]; profile keys `[cost]` `mul32`,
    /// `mul32_step`, ...). 32-bit multiply: `mul32_slots + mul32_step_slots * steps`, steps =
    /// significant bits of the smaller operand (unsigned), at least 1.
    pub mul32_slots: u32,
    pub mul32_step_slots: u32,
    /// 32-bit unsigned divide: `div32_slots + div32_step_slots * steps`, steps =
    /// clz(divisor) - clz(dividend) + 1; `div32_short_slots` when the dividend has fewer
    /// significant bits than the divisor.
    pub div32_slots: u32,
    pub div32_step_slots: u32,
    pub div32_short_slots: u32,
    /// 32-bit signed divide: the unsigned cost of the magnitudes + `divs32_slots` +
    /// `divs32_negate_slots` per negation (0, 2 or 3 by the operands' signs).
    pub divs32_slots: u32,
    pub divs32_negate_slots: u32,
    /// 64-bit multiply (branch-free routine: a constant).
    pub mul64_slots: u32,
    /// 64-bit unsigned divide: `div64_slots + div64_step_slots * steps`, steps =
    /// clz64(divisor) - clz64(dividend) + 1; `div64_short_slots` when divisor > dividend.
    pub div64_slots: u32,
    pub div64_step_slots: u32,
    pub div64_short_slots: u32,
    /// 64-bit signed divide: the unsigned cost of the magnitudes + `divs64_slots` +
    /// `divs64_negate_slots` per 64-bit negation (0 or 2).
    pub divs64_slots: u32,
    pub divs64_negate_slots: u32,
    /// Issue slots charged for the floating-point environment calls (the body of the DPU's
    /// soft-float routine).
    pub fadd32_slots: u32,
    pub fsub32_slots: u32,
    pub fmul32_slots: u32,
    pub fdiv32_slots: u32,
    pub fadd64_slots: u32,
    pub fsub64_slots: u32,
    pub fmul64_slots: u32,
    pub fdiv64_slots: u32,
    /// Stop the DPU with `Fault::CycleLimit` after this many cycles (None = no limit).
    pub max_cycles: Option<u64>,
    /// Fault on the DMA requests the hardware tolerates but that are almost certainly bugs
    /// (a length that is not what its field encodes, addresses not 8-byte aligned, an MRAM
    /// address without the MRAM base), instead of performing them as the DPU does and
    /// recording a `DmaQuirk`. The profile key `strictDma=true`, for bug hunting.
    pub strict_dma: bool,
    /// Which engine runs the DPU's code ([`Engine`]; the same results and timing either way).
    pub engine: Engine,
    /// Fault (`Fault::Deadlock`) when every tasklet that has not exited waits (a barrier not
    /// every tasklet reaches, a semaphore never given), instead of ending the launch as the
    /// DPU does (it stops issuing; the host sees the launch complete) and reporting the
    /// waiting tasklets ([`RunOutcome::waiting`]). The profile key `strictSync=true`.
    pub strict_sync: bool,
}

/// Which engine runs a DPU's code. Both compute the same: results, cycles, instructions,
/// statistics and faults are identical; only the host time they take differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// The interpreter, with its batches of slots run ahead of their issue (epochs) executed
    /// by code translated to the host's machine code (`jit`: x86-64 and aarch64 hosts).
    /// Where the host has no code generator it is the interpreter.
    #[default]
    Translator,
    /// The interpreter alone: the reference, and the engine of the tools that must see
    /// every instruction.
    Interpreter,
}

impl Engine {
    /// The names `OPENPIM_ENGINE` and the profile key `engine=` take.
    pub const NAMES: &'static str = "jit, interp";

    /// The engine named `name` (`jit` or `interp`).
    pub fn parse(name: &str) -> Option<Engine> {
        match name {
            "jit" => Some(Engine::Translator),
            "interp" => Some(Engine::Interpreter),
            _ => None,
        }
    }

    /// Its name, as [`Engine::parse`] takes it.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Translator => "jit",
            Engine::Interpreter => "interp",
        }
    }

    /// Whether this host can translate DPU code (x86-64 and aarch64).
    pub const fn translation_available() -> bool {
        jit::available()
    }

    /// The engine that runs when this one is asked for: the translator only where the host
    /// has a code generator.
    pub fn effective(self) -> Engine {
        match self {
            Engine::Translator if !jit::available() => Engine::Interpreter,
            e => e,
        }
    }
}

/// What the engine did in a run besides what the DPU computed: bookkeeping of the host's
/// work, not part of the run's result. Two outcomes compare equal whatever their
/// `EngineUse` (a run computes the same on either engine).
#[derive(Debug, Clone, Copy, Default)]
pub struct EngineUse {
    /// The engine that ran (after [`Engine::effective`]).
    pub engine: Engine,
    /// Issue slots executed by translated code (slots of a batch rolled back and run again
    /// count again).
    pub translated_slots: u64,
    /// Slots of translated batches handed to the interpreter (environment calls, accesses
    /// that stop a batch, code the translator does not handle).
    pub interpreted_slots: u64,
}

impl PartialEq for EngineUse {
    fn eq(&self, _: &EngineUse) -> bool {
        true
    }
}

impl Timing {
    /// The UPMEM v1A figures of `DESIGN.md` §3 (revolver 11, α 77/61, β 0.5) with the
    /// arithmetic-call costs of `profiles/upmem-v1a.toml` (a test of the machine crate keeps
    /// the two equal); no cycle limit.
    pub fn upmem_default() -> Timing {
        Timing {
            revolver_cycles: 11,
            dma_read_alpha: 77,
            dma_write_alpha: 61,
            dma_beta_milli: 500,
            mul32_slots: 3,
            mul32_step_slots: 1,
            div32_slots: 4,
            div32_step_slots: 1,
            div32_short_slots: 2,
            divs32_slots: 7,
            divs32_negate_slots: 1,
            mul64_slots: 129,
            div64_slots: 20,
            div64_step_slots: 22,
            div64_short_slots: 7,
            divs64_slots: 2,
            divs64_negate_slots: 2,
            fadd32_slots: 64,
            fsub32_slots: 69,
            fmul32_slots: 176,
            fdiv32_slots: 1022,
            fadd64_slots: 98,
            fsub64_slots: 105,
            fmul64_slots: 653,
            fdiv64_slots: 2180,
            max_cycles: None,
            strict_dma: false,
            engine: Engine::default(),
            strict_sync: false,
        }
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::upmem_default()
    }
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
    /// (The engine also accepts a shorter slice: addresses past its end fault as out of range.)
    pub mram: &'a mut [u8],
}

/// Why a DPU stopped abnormally. The message names the cause; the report adds where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Fault {
    /// A load or store outside the 64 KiB of WRAM.
    #[error("WRAM access of {size} byte(s) at {addr:#010x} is out of range (WRAM is 0x00000000..0x00010000)")]
    WramOutOfRange { addr: u32, size: u32 },
    /// A load, store or DMA outside MRAM.
    #[error("MRAM access of {size} byte(s) at {addr:#010x} is out of range (MRAM is 0x08000000..0x0c000000)")]
    MramOutOfRange { addr: u32, size: u32 },
    /// A load or store to an address that is neither WRAM nor MRAM (IRAM, atomic bits, holes).
    #[error("load/store of {size} byte(s) at {addr:#010x}: the address is not in WRAM or MRAM (IRAM and atomic bits cannot be loaded or stored)")]
    BadAddress { addr: u32, size: u32 },
    /// A load or store not aligned to its size.
    #[error("misaligned access of {size} bytes at {addr:#010x} (loads and stores must be naturally aligned)")]
    Misaligned { addr: u32, size: u32 },
    /// An instruction fetch (jump, branch or fall-through) outside the loaded program.
    #[error("instruction fetch at {addr:#010x} is outside the program's code (.text)")]
    IramOutOfRange { addr: u32 },
    /// A jump to an address that is not a multiple of 4.
    #[error("jump to misaligned address {addr:#010x} (instructions are 4-byte aligned)")]
    IramMisaligned { addr: u32 },
    /// A word that is not an RV32I instruction (M/A/F/D/C extensions, CSR, garbage).
    #[error("illegal instruction {word:#010x} (only RV32I is supported: build with -march=rv32i -mabi=ilp32)")]
    IllegalInstruction { word: u32 },
    /// `ebreak` executed.
    #[error("breakpoint (ebreak) executed")]
    Breakpoint,
    /// DMA with an address not 8-byte aligned (only under `Timing::strict_dma`: the DPU
    /// aligns both addresses down to 8 bytes).
    #[error("DMA with misaligned address (WRAM {wram:#010x}, MRAM {mram:#010x}): both must be 8-byte aligned (strictDma)")]
    DmaMisaligned { wram: u32, mram: u32 },
    /// DMA size not a multiple of 8 in 8..=2048, or an MRAM address without the MRAM base
    /// (only under `Timing::strict_dma`: the DPU moves what the length field encodes).
    #[error(
        "DMA of {size} bytes: the size must be a multiple of 8 between 8 and 2048 (strictDma)"
    )]
    DmaBadSize { size: u32 },
    /// DMA whose WRAM or MRAM range is out of bounds: past the 64 KiB of WRAM, or an MRAM
    /// address that is neither in 0x08000000..0x0c000000 nor an offset below 64 MiB.
    #[error("DMA of {size} bytes between WRAM {wram:#010x} and MRAM {mram:#010x} is out of range (WRAM is 64 KiB; MRAM addresses are 0x08000000..0x0c000000, or offsets below 64 MiB)")]
    DmaOutOfRange { wram: u32, mram: u32, size: u32 },
    /// Integer division (or remainder) by zero: the DPU's division routine executes `fault`.
    #[error("integer division by zero (the DPU's division routine faults)")]
    DivisionByZero,
    /// A tasklet moved `sp` below its stack.
    #[error("stack overflow: sp = {sp:#x} is below the tasklet's stack start {stack_lo:#x} (raise STACK_SIZE_DEFAULT or STACK_SIZE_TASKLET_<n>, or use less stack)")]
    StackOverflow { sp: u32, stack_lo: u32 },
    /// `mem_alloc` found no room (FAULT code 1).
    #[error("WRAM heap exhausted: mem_alloc({requested}) does not fit (allocate less, or reduce the stacks)")]
    HeapExhausted { requested: u32 },
    /// `assert` failed (FAULT code 2).
    #[error("assertion failed at line {line}")]
    AssertionFailed { line: u32 },
    /// seqread misuse (FAULT code 3).
    #[error("sequential reader misuse (detail {detail})")]
    SeqreadMisuse { detail: u32 },
    /// invalid allocator use (FAULT code 4).
    #[error("invalid use of an allocator (detail {detail})")]
    AllocatorMisuse { detail: u32 },
    /// Any other program-detected fault.
    #[error("program fault {code} (detail {detail})")]
    ProgramFault { code: u32, detail: u32 },
    /// One printf call needs more than the whole printf buffer (the UPMEM runtime faults
    /// then: the message could never be read back).
    #[error("printf buffer overflow: one printf call needs {bytes} bytes of the printf buffer, which holds {capacity} (raise STDOUT_BUFFER_INIT(n), or print less per call)")]
    PrintfOverflow { bytes: u64, capacity: u32 },
    /// One launch printed more than the engine's output limit.
    #[error("printf output of this launch exceeds {limit} bytes")]
    PrintfOutputTooLarge { limit: u64 },
    /// An atomic-bit operand that is not `0..256` (or `0xF000_0000 + bit`).
    #[error("atomic bit {bit:#x} does not exist (there are 256: 0..255 or 0xf0000000 + bit)")]
    BadAtomicBit { bit: u32 },
    /// `RESUME` of a tasklet that does not exist.
    #[error("tasklet id {id} does not exist (the program has {nr_tasklets} tasklets)")]
    BadTaskletId { id: u32, nr_tasklets: u32 },
    /// `ecall` with an unknown number in a7.
    #[error("unknown environment call {nr} (a7)")]
    UnknownEcall { nr: u32 },
    /// An environment call with an argument outside its domain (e.g. a `PERF_CONFIG` mode).
    #[error("environment call {nr} got the invalid argument {value}")]
    BadEcallArgument { nr: u32, value: u32 },
    /// Every tasklet that has not exited sleeps and no wake-up can come.
    #[error("deadlock: every tasklet that has not exited is asleep (sleeping tasklets mask {sleeping:#x}) and none can wake them")]
    Deadlock { sleeping: u32 },
    /// The run exceeded `Timing::max_cycles`.
    #[error("cycle limit of {limit} cycles reached (the kernel may loop forever; raise the limit if not)")]
    CycleLimit { limit: u64 },
    /// The host stopped the run ([`run_stoppable`]: the program that launched it is gone).
    #[error("launch stopped by the host: the program that launched it is gone")]
    Stopped,
    /// The host gave the engine unusable boot information or memories (a host bug, not the
    /// DPU program's).
    #[error("invalid launch: {reason}")]
    BadBoot { reason: String },
}

/// A fault with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultReport {
    pub tasklet: u32,
    pub pc: u32,
    pub fault: Fault,
}

impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tasklet {} at pc {:#010x}: {}",
            self.tasklet, self.pc, self.fault
        )
    }
}

impl FaultReport {
    /// The report with the faulting instruction disassembled, e.g.
    /// `tasklet 3 at pc 0x80000010 (lw a0, 0(a1)): misaligned access ...`.
    pub fn describe(&self, program: &Program) -> String {
        match program.disassemble_at(self.pc) {
            Some(text) => format!(
                "tasklet {} at pc {:#010x} ({}): {}",
                self.tasklet, self.pc, text, self.fault
            ),
            None => self.to_string(),
        }
    }
}

/// Per-tasklet statistics of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskletStats {
    /// Instructions issued by this tasklet (arithmetic-call slots included).
    pub instructions: u64,
    /// Cycles the tasklet could not issue because it waited for its DMA (beyond the revolver
    /// delay it would have had anyway).
    pub dma_wait_cycles: u64,
    /// Cycles spent asleep (`SLEEP` until woken, or until the end of the run).
    pub sleep_cycles: u64,
    /// DMA requests (including direct MRAM loads/stores).
    pub dma_requests: u64,
    /// `Some(status)` if the tasklet ended with `TASKLET_EXIT`.
    pub exit_status: Option<u32>,
    /// Cycle of the tasklet's last issue + 1 (when it exited or the run stopped).
    pub end_cycle: u64,
}

/// DPU-wide statistics of a run, for timing reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// One entry per booted tasklet.
    pub tasklets: Vec<TaskletStats>,
    /// Bytes moved MRAM→WRAM (DMA calls and direct MRAM loads, 8 bytes each).
    pub dma_bytes_read: u64,
    /// Bytes moved WRAM→MRAM (DMA calls and direct MRAM stores, 8 bytes each).
    pub dma_bytes_written: u64,
    /// Cycles during which the DMA engine was busy.
    pub dma_busy_cycles: u64,
    /// Number of DMA requests.
    pub dma_requests: u64,
    /// Cycles in which no instruction issued (pipeline idle).
    pub idle_cycles: u64,
    /// Bytes written to the printf buffer (over its capacity when it wrapped).
    pub printf_bytes: u64,
    /// Issues in which two RV32I instructions issued together as one DPU instruction
    /// (fused pairs, see "Issue-slot corrections"); each counts once in `instructions`, so
    /// RV32I instructions executed = `instructions + fused_pairs`.
    pub fused_pairs: u64,
    /// DMA requests performed as the hardware does although almost certainly bugs
    /// (`DmaQuirk`).
    pub dma_quirks: u64,
}

/// What a tolerated DMA request did that the program probably did not mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaQuirkKind {
    /// The length was not a multiple of 8 in 8..=2048: the DPU moved what its 8-bit length
    /// field encodes (1 or 0 → 2,048 bytes, 12 → 8, 4,096 → 2,048).
    SizeEncoded,
    /// A WRAM or MRAM address was not 8-byte aligned: the DPU dropped its low 3 bits.
    AlignedDown,
    /// The MRAM address was an offset without the MRAM base (0x08000000); the DPU takes it
    /// as the same MRAM byte.
    MramWithoutBase,
}

impl DmaQuirkKind {
    /// What happened, for a report's advice line.
    pub fn describe(self) -> &'static str {
        match self {
            DmaQuirkKind::SizeEncoded => {
                "the length is not a multiple of 8 in 8..2048; the DMA moved what its 8-bit length field encodes"
            }
            DmaQuirkKind::AlignedDown => {
                "an address is not 8-byte aligned; the DMA dropped its low 3 bits"
            }
            DmaQuirkKind::MramWithoutBase => {
                "the MRAM address lacks the MRAM base 0x08000000; the DMA took it as an MRAM offset"
            }
        }
    }
}

/// One DMA request the DPU performs although it is almost certainly a bug (see `Timing::
/// strict_dma`), with where it was issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmaQuirk {
    pub tasklet: u32,
    /// IRAM address of the DMA's environment call.
    pub pc: u32,
    /// MRAM→WRAM (`mram_read`) or WRAM→MRAM (`mram_write`).
    pub read: bool,
    pub kinds: Vec<DmaQuirkKind>,
    /// The WRAM and MRAM addresses and length as the program gave them.
    pub wram: u32,
    pub mram: u32,
    pub size: u32,
    /// The bytes actually moved.
    pub moved: u32,
}

/// What a run of one DPU produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutcome {
    /// DPU cycles from boot to the end of the run.
    pub cycles: u64,
    /// Instructions issued (arithmetic calls count their slots).
    pub instructions: u64,
    /// The formatted printf output of this launch (empty when `log_wrapped`).
    pub log: Vec<u8>,
    /// The launch printed more than its printf buffer holds: the ring buffer wrapped over
    /// its oldest output, and the host cannot show the log (`DPU_ERR_LOG_BUFFER_TOO_SMALL`).
    pub log_wrapped: bool,
    /// `Some` when the DPU stopped on a fault.
    pub fault: Option<FaultReport>,
    /// Whether the run ended with `HALT`.
    pub halted: bool,
    /// Detailed statistics.
    pub stats: RunStats,
    /// The first tolerated-but-suspicious DMA requests (`RunStats::dma_quirks` counts all).
    pub dma_quirks: Vec<DmaQuirk>,
    /// Which engine ran and what it translated (never part of the comparison of outcomes).
    pub engine: EngineUse,
    /// `Some` when the run ended because every tasklet that had not exited was waiting
    /// (sleeping) with nobody left to wake it: the DPU stops issuing, as the hardware does.
    pub waiting: Option<WaitingTasklets>,
}

/// The tasklets a run ended with, all waiting (a synchronisation no tasklet completes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaitingTasklets {
    /// Mask of the waiting tasklets.
    pub sleeping: u32,
    /// Each waiting tasklet and the address of the call it waits in (inside `barrier_wait`,
    /// `sem_take`, `handshake_wait_for`, ...).
    pub pcs: Vec<(u32, u32)>,
}

/// Runs one DPU from boot until every tasklet has exited, HALT, or a fault.
pub fn run(program: &Program, boot: &BootInfo, mem: DpuMemory<'_>, timing: &Timing) -> RunOutcome {
    exec::run(program, boot, mem, timing, None, None)
}

/// Simulated cycles between two calls of a [`run_stoppable`] run's `stop` (a few
/// milliseconds of the engine's time).
pub const STOP_CHECK_CYCLES: u64 = 1 << 20;

/// [`run`], asking `stop` at the start and every [`STOP_CHECK_CYCLES`] simulated cycles whether to end the
/// run there with [`Fault::Stopped`] (a launch whose program is gone, which would otherwise
/// run to its end or its cycle limit). A run that is not stopped is exactly as with [`run`].
pub fn run_stoppable(
    program: &Program,
    boot: &BootInfo,
    mem: DpuMemory<'_>,
    timing: &Timing,
    stop: &(dyn Fn() -> bool + Sync),
) -> RunOutcome {
    exec::run(program, boot, mem, timing, Some(stop), None)
}

/// [`run_stoppable`] (or [`run`] without `stop`) observed by `probe` (see [`probe`]): on the
/// interpreter without its shortcuts, which the probe sees slot by slot. The outcome is the
/// one [`run`] gives unless the probe holds tasklets back or changes the machine state.
pub fn run_probed(
    program: &Program,
    boot: &BootInfo,
    mem: DpuMemory<'_>,
    timing: &Timing,
    stop: Option<&(dyn Fn() -> bool + Sync)>,
    probe: &mut dyn probe::Probe,
) -> RunOutcome {
    let plain;
    let program = if program.shortcuts {
        plain = program.without_shortcuts();
        &plain
    } else {
        program
    };
    exec::run(program, boot, mem, timing, stop, Some(probe))
}
