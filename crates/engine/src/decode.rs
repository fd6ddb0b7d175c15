//! Pre-decoding of a program's IRAM image into a compact array of [`Op`]s.
//!
//! Specialisations done here, once, so that the interpreter's hot loop does not have to:
//! - program counters are op indices; branch and `jal` targets are resolved to indices;
//! - writes to `x0` are discarded (`Nop`), `lui`/`auipc`/`addi rd, x0, imm` become `Li`;
//! - `addi sp, sp, imm` becomes `AddiSp` (checks the stack bound); any other write to `sp`,
//!   loads into `x0`, and jumps to targets outside the program become `Generic` (the
//!   fully-checked slow path), so every fast op may write its `rd` without checks;
//! - `jal x0` / `jalr x0` become `J` / `Jr` (no link);
//! - `fence`/`fence.i` become `Nop`.
//!
//! Three sentinel ops follow the program: `FellOff` (reached by running past the last
//! instruction), `Stall` (where a tasklet waits out the issue slots of an arithmetic call) and
//! `Spin` (where a tasklet spins on an atomic bit that another tasklet holds).
//!
//! After specialisation, the fusion passes mark the ops whose successor issues in the same
//! slot, because the real DPU executes them as one instruction (the rules and their sources
//! are in the crate documentation, "Issue-slot corrections"): [`find_pairs`] (rules 1-4 and
//! 7, pairs), [`mark_ecall_setups`] (rule 5, the operand set-up of an `ecall`),
//! [`mark_carries`] (rule 6, 64-bit add/sub), [`mark_eq64_branches`] (rule 8, 64-bit
//! equality branch) and [`mark_builtin_runs`] (rule 10, the RV32I body of a DPU instruction
//! builtin of `built_ins.h`). Marks chain: when ops `i` and `i + 1` are both
//! marked, ops `i..=i + 2` issue in one slot. The mark lives in a byte array parallel to the
//! ops, so `Op` stays 8 bytes and the unfused interpretation is unchanged.
//!
//! Last, [`mark_spin_loops`] finds the lock loops `while (!acquire(bit));` (the operand set-up
//! and `ecall` in one slot, then `beqz a0` back) and makes their `ecall` an `EcallSpin`: when
//! its acquire fails, the interpreter lets the tasklet spin on the `Spin` sentinel (the same
//! issues, instructions and fused pairs, without re-executing the loop's ops) until the bit is
//! clear. A loop whose call is `ATOMIC_LOCK` (the SDK's `mutex_lock`, the DPU's self-jumping
//! `acquire bit, 0, nz, .`) also issues its branch in the `ecall`'s slot (rule 9): one slot
//! per attempt.
//! And [`Program::ahead`] says, per op, whether the slot starting at it only touches the
//! tasklet's registers, so that the interpreter may execute it ahead of its issue.

use openpim_isa::{decode as isa_decode, reg, Insn};

/// Values of [`Program::fuse`]: how op `i` combines with op `i + 1` when control falls
/// through from `i` into `i + 1`.
pub(crate) mod fuse {
    /// Not the first op of a pair.
    pub const NONE: u8 = 0;
    /// Always one issue slot (ALU op + branch on its result, constant + compare-and-branch,
    /// 32-bit constant + its consumer, call set-up + `ecall`, free carry ops).
    pub const ALWAYS: u8 = 1;
    /// Word pair, first op accesses the lower word: one slot when its address is 8-aligned.
    pub const PAIR_LO: u8 = 2;
    /// Word pair, first op accesses the upper word: one slot when its address − 4 is 8-aligned.
    pub const PAIR_HI: u8 = 3;
}

/// One pre-decoded operation (8 bytes). Register fields are 0..=31.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[rustfmt::skip]
pub(crate) enum Op {
    Nop,
    Li { rd: u8, imm: u32 },
    Addi { rd: u8, rs1: u8, imm: i32 },
    AddiSp { imm: i32 },
    Slti { rd: u8, rs1: u8, imm: i32 },
    Sltiu { rd: u8, rs1: u8, imm: i32 },
    Xori { rd: u8, rs1: u8, imm: i32 },
    Ori { rd: u8, rs1: u8, imm: i32 },
    Andi { rd: u8, rs1: u8, imm: i32 },
    Slli { rd: u8, rs1: u8, sh: u8 },
    Srli { rd: u8, rs1: u8, sh: u8 },
    Srai { rd: u8, rs1: u8, sh: u8 },
    Add { rd: u8, rs1: u8, rs2: u8 },
    Sub { rd: u8, rs1: u8, rs2: u8 },
    Sll { rd: u8, rs1: u8, rs2: u8 },
    Slt { rd: u8, rs1: u8, rs2: u8 },
    Sltu { rd: u8, rs1: u8, rs2: u8 },
    Xor { rd: u8, rs1: u8, rs2: u8 },
    Srl { rd: u8, rs1: u8, rs2: u8 },
    Sra { rd: u8, rs1: u8, rs2: u8 },
    Or { rd: u8, rs1: u8, rs2: u8 },
    And { rd: u8, rs1: u8, rs2: u8 },
    Lb { rd: u8, rs1: u8, imm: i32 },
    Lh { rd: u8, rs1: u8, imm: i32 },
    Lw { rd: u8, rs1: u8, imm: i32 },
    Lbu { rd: u8, rs1: u8, imm: i32 },
    Lhu { rd: u8, rs1: u8, imm: i32 },
    Sb { rs1: u8, rs2: u8, imm: i32 },
    Sh { rs1: u8, rs2: u8, imm: i32 },
    Sw { rs1: u8, rs2: u8, imm: i32 },
    Beq { rs1: u8, rs2: u8, target: u32 },
    Bne { rs1: u8, rs2: u8, target: u32 },
    Blt { rs1: u8, rs2: u8, target: u32 },
    Bge { rs1: u8, rs2: u8, target: u32 },
    Bltu { rs1: u8, rs2: u8, target: u32 },
    Bgeu { rs1: u8, rs2: u8, target: u32 },
    /// `jal rd, target` with rd != 0 (link = address of the next instruction).
    Jal { rd: u8, target: u32 },
    /// `jal x0, target`.
    J { target: u32 },
    /// `jalr rd, imm(rs1)` with rd != 0.
    Jalr { rd: u8, rs1: u8, imm: i32 },
    /// `jalr x0, imm(rs1)`.
    Jr { rs1: u8, imm: i32 },
    Ecall,
    Ebreak,
    Illegal { word: u32 },
    /// Executed by the generic, fully checked path from the raw word.
    Generic { word: u32 },
    /// Sentinel after the last instruction.
    FellOff,
    /// Sentinel: one issue slot of an arithmetic call.
    Stall,
    /// An `ecall` that closes an acquire spin loop starting at op `start` (see
    /// [`mark_spin_loops`]); executes as `Ecall`. `lock`: the loop is the SDK's `mutex_lock`
    /// (call `ATOMIC_LOCK`), one DPU instruction: its branch back issues in the `ecall`'s slot
    /// (rule 9).
    EcallSpin { start: u32, lock: bool },
    /// Sentinel: one issue slot of a tasklet spinning on a held atomic bit.
    Spin,
}

/// A DPU program decoded once; shared (read-only) by every DPU it is loaded on.
///
/// ```
/// use openpim_engine::Program;
/// use openpim_isa::{asm, reg::*};
/// let words = [asm::addi(A0, ZERO, 5), asm::ecall()];
/// let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
/// let p = Program::decode(0x8000_0000, &bytes);
/// assert_eq!(p.len(), 2);
/// assert_eq!(p.disassemble_at(0x8000_0000).unwrap(), "addi a0, zero, 5");
/// ```
#[derive(Debug, Clone)]
pub struct Program {
    base: u32,
    words: Vec<u32>,
    /// `words.len() + 3` ops: the program, then `FellOff`, `Stall` and `Spin`.
    pub(crate) ops: Vec<Op>,
    /// One [`fuse`] value per op (same length as `ops`; all `NONE` when fusion is off).
    pub(crate) fuse: Vec<u8>,
    /// Number of pairs marked in `fuse`.
    pairs: usize,
    /// Per op, whether the issue slot that starts at it may be executed ahead of its issue
    /// (see [`ahead`]).
    pub(crate) ahead: Vec<u16>,
    /// Whether the interpreter takes its shortcuts (see [`Program::without_shortcuts`]).
    pub(crate) shortcuts: bool,
    /// The translated code of this program image (`jit`), made on first use and shared by
    /// every DPU that runs it.
    pub(crate) translation: std::sync::Arc<crate::jit::LazyCache>,
    /// Slots batches must run from an op before its region is translated
    /// (`jit::HOT_SLOTS`; see [`Program::with_translation_threshold`]).
    pub(crate) hot_slots: u64,
}

/// Values of [`Program::ahead`]: the issue slot starting at op `i` (ops `i..=i + fused`, see
/// [`fuse`]) made only of ops that read and write the tasklet's registers and nothing else, so
/// that the interpreter may execute it before it issues: `0` when it has any other op (loads,
/// stores, environment calls other than the arithmetic ones, faulting ops); otherwise
/// `fused << 2 | kind`.
pub(crate) mod ahead {
    /// Only ops that cannot fault (ALU ops, constants, branches, direct jumps and calls).
    pub const PLAIN: u16 = 1;
    /// Also an op that may fault or whose effect is only known when it runs (`jalr`, `addi sp`,
    /// an `ecall` that is an arithmetic call unless its call number says otherwise).
    pub const CHECKED: u16 = 2;
    /// Longest fused run described (`fused` is at most this).
    pub const MAX_FUSED: usize = 255;
    /// Set when this slot and the slots that follow it in straight-line code (up to the first
    /// branch or jump) are at least `WORTH_SLOTS` slots that may execute ahead: executing
    /// ahead pays for itself only over several slots.
    pub const WORTH: u16 = 1 << 15;
    pub const WORTH_SLOTS: u32 = 3;
}

impl Program {
    /// Decodes the IRAM image `text` whose first byte is at `text_base`.
    ///
    /// A trailing partial word is padded with zero bytes (and so decodes as illegal).
    ///
    /// RV32I instructions that the DPU executes as one instruction issue in one slot (the
    /// DPU ISA's fused ALU+branch, compare-and-branch with an immediate, 64-bit register-pair
    /// load/store, 32-bit immediates, register and immediate operands of its system
    /// instructions, and add/sub with carry; see the crate documentation, "Issue-slot
    /// corrections"). [`Program::decode_with`] can turn this off.
    pub fn decode(text_base: u32, text: &[u8]) -> Program {
        Program::decode_with(text_base, text, true)
    }

    /// [`Program::decode`] with the issue-slot fusion of instruction pairs on (`fuse_pairs`,
    /// the default) or off (every RV32I instruction issues alone).
    pub fn decode_with(text_base: u32, text: &[u8], fuse_pairs: bool) -> Program {
        let words: Vec<u32> = text
            .chunks(4)
            .map(|c| {
                let mut b = [0u8; 4];
                b[..c.len()].copy_from_slice(c);
                u32::from_le_bytes(b)
            })
            .collect();
        let n = words.len();
        let mut ops = Vec::with_capacity(n + 3);
        for (i, &w) in words.iter().enumerate() {
            ops.push(specialise(text_base, n, i, w));
        }
        ops.push(Op::FellOff);
        ops.push(Op::Stall);
        ops.push(Op::Spin);
        let mut fuse = vec![fuse::NONE; ops.len()];
        let mut pairs = 0;
        if fuse_pairs {
            let insns: Vec<Insn> = words.iter().map(|&w| isa_decode(w)).collect();
            find_pairs(text_base, &words, &mut fuse);
            mark_ecall_setups(&insns, &mut fuse);
            mark_carries(&insns, &ops, &mut fuse);
            mark_eq64_branches(&insns, &ops, &mut fuse);
            mark_builtin_runs(&insns, &ops, &mut fuse);
            for (op, kind) in ops.iter_mut().zip(fuse.iter_mut()) {
                if *kind != fuse::NONE {
                    if mark_fused(op, *kind) {
                        pairs += 1;
                    } else {
                        *kind = fuse::NONE;
                    }
                }
            }
            pairs += mark_spin_loops(&mut ops, &mut fuse, n);
        }
        let mut ahead: Vec<u16> = (0..ops.len()).map(|i| ahead_kind(&ops, &fuse, i)).collect();
        // Straight-line slots that may execute ahead, from each op.
        let mut run = vec![0u32; ops.len() + 1];
        for i in (0..ops.len()).rev() {
            if ahead[i] == 0 {
                continue;
            }
            let last = i + usize::from(ahead[i] >> 2);
            run[i] = match ops[last] {
                Op::Beq { .. }
                | Op::Bne { .. }
                | Op::Blt { .. }
                | Op::Bge { .. }
                | Op::Bltu { .. }
                | Op::Bgeu { .. }
                | Op::J { .. }
                | Op::Jal { .. }
                | Op::Jalr { .. }
                | Op::Jr { .. } => 1,
                _ => 1 + run[last + 1].min(ahead::WORTH_SLOTS),
            };
            if run[i] >= ahead::WORTH_SLOTS {
                ahead[i] |= ahead::WORTH;
            }
        }
        Program {
            base: text_base,
            words,
            ops,
            fuse,
            pairs,
            ahead,
            shortcuts: true,
            translation: Default::default(),
            hot_slots: crate::jit::HOT_SLOTS,
        }
    }

    /// The same program, whose code the translating engine translates once batches have run
    /// `slots` from an op (0: at once) instead of `jit::HOT_SLOTS`. For tests, which must see
    /// their small programs translated; a fresh translation cache.
    #[doc(hidden)]
    pub fn with_translation_threshold(&self, slots: u64) -> Program {
        let mut p = self.clone();
        p.translation = Default::default();
        p.hot_slots = slots;
        p
    }

    /// What translating this program cost so far (regions, code bytes, host time).
    pub fn translation_stats(&self) -> crate::TranslationStats {
        self.translation.stats()
    }

    /// The same program for an interpreter without its shortcuts, which must change nothing
    /// but its speed: no slots executed ahead of their issue, spin loops re-executed at every
    /// slot, every tasklet scanned to pick the next issuer, no epochs. For tests that compare
    /// the two.
    #[doc(hidden)]
    pub fn without_shortcuts(&self) -> Program {
        let mut p = self.clone();
        for op in &mut p.ops {
            // (A lock loop keeps its op: its one slot per attempt is timing, not a shortcut;
            // the interpreter spins on the sentinel only with `shortcuts`.)
            if let Op::EcallSpin { lock: false, .. } = op {
                *op = Op::Ecall;
            }
        }
        p.ahead.fill(0);
        p.shortcuts = false;
        p
    }

    /// Number of instructions marked to issue together with the next one when control falls
    /// through them (each is one fused pair; marks may chain).
    pub fn fused_pair_count(&self) -> usize {
        self.pairs
    }

    /// Whether the instruction after the one at `pc` issues in the slot of the one at `pc`
    /// (when control falls through from `pc`).
    pub fn fuses_with_next(&self, pc: u32) -> bool {
        self.index_of(pc)
            .is_some_and(|i| self.fuse[i as usize] != fuse::NONE)
    }

    /// Address of the first instruction.
    pub fn text_base(&self) -> u32 {
        self.base
    }

    /// Number of instructions (words) in the program.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the program has no instruction.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The raw instruction words.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The op index of byte address `pc`, if it is an instruction of the program.
    pub fn index_of(&self, pc: u32) -> Option<u32> {
        let off = pc.wrapping_sub(self.base);
        if off & 3 == 0 && ((off >> 2) as usize) < self.words.len() {
            Some(off >> 2)
        } else {
            None
        }
    }

    /// The instruction at `pc` as assembly, if `pc` is in the program.
    pub fn disassemble_at(&self, pc: u32) -> Option<String> {
        let i = self.index_of(pc)?;
        Some(openpim_isa::disassemble(self.words[i as usize], pc))
    }

    pub(crate) fn sentinel_stall(&self) -> u32 {
        self.words.len() as u32 + 1
    }

    pub(crate) fn sentinel_spin(&self) -> u32 {
        self.words.len() as u32 + 2
    }
}

/// Index of the jump target `pc + imm` if it is an instruction of the program.
fn target_index(base: u32, n: usize, i: usize, imm: i32) -> Option<u32> {
    let pc = base.wrapping_add((i as u32) << 2);
    let t = pc.wrapping_add(imm as u32).wrapping_sub(base);
    if t & 3 == 0 && ((t >> 2) as usize) < n {
        Some(t >> 2)
    } else {
        None
    }
}

fn specialise(base: u32, n: usize, i: usize, word: u32) -> Op {
    let generic = Op::Generic { word };
    let insn = isa_decode(word);
    // Fast ops may write rd unchecked: route every write to sp except `addi sp, sp, imm`
    // (and loads into x0) to the checked generic path.
    if let Insn::Addi(a) = insn {
        if a.rd == reg::SP && a.rs1 == reg::SP {
            return Op::AddiSp { imm: a.imm };
        }
    }
    match insn.dest() {
        Some(reg::SP) => return generic,
        Some(0) => match insn {
            Insn::Jal(_) | Insn::Jalr(_) => {}
            Insn::Lb(_) | Insn::Lh(_) | Insn::Lw(_) | Insn::Lbu(_) | Insn::Lhu(_) => {
                return generic
            }
            _ => return Op::Nop,
        },
        _ => {}
    }
    let pc = base.wrapping_add((i as u32) << 2);
    macro_rules! branch {
        ($v:ident, $b:expr) => {
            match target_index(base, n, i, $b.imm) {
                Some(target) => Op::$v {
                    rs1: $b.rs1,
                    rs2: $b.rs2,
                    target,
                },
                None => generic,
            }
        };
    }
    match insn {
        Insn::Lui(u) => Op::Li {
            rd: u.rd,
            imm: u.imm as u32,
        },
        Insn::Auipc(u) => Op::Li {
            rd: u.rd,
            imm: pc.wrapping_add(u.imm as u32),
        },
        Insn::Jal(j) => match target_index(base, n, i, j.imm) {
            Some(target) if j.rd == 0 => Op::J { target },
            Some(target) => Op::Jal { rd: j.rd, target },
            None => generic,
        },
        Insn::Jalr(x) if x.rd == 0 => Op::Jr {
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Jalr(x) => Op::Jalr {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Beq(b) => branch!(Beq, b),
        Insn::Bne(b) => branch!(Bne, b),
        Insn::Blt(b) => branch!(Blt, b),
        Insn::Bge(b) => branch!(Bge, b),
        Insn::Bltu(b) => branch!(Bltu, b),
        Insn::Bgeu(b) => branch!(Bgeu, b),
        Insn::Lb(x) => Op::Lb {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Lh(x) => Op::Lh {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Lw(x) => Op::Lw {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Lbu(x) => Op::Lbu {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Lhu(x) => Op::Lhu {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Sb(s) => Op::Sb {
            rs1: s.rs1,
            rs2: s.rs2,
            imm: s.imm,
        },
        Insn::Sh(s) => Op::Sh {
            rs1: s.rs1,
            rs2: s.rs2,
            imm: s.imm,
        },
        Insn::Sw(s) => Op::Sw {
            rs1: s.rs1,
            rs2: s.rs2,
            imm: s.imm,
        },
        Insn::Addi(x) if x.rs1 == 0 => Op::Li {
            rd: x.rd,
            imm: x.imm as u32,
        },
        Insn::Addi(x) => Op::Addi {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Slti(x) => Op::Slti {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Sltiu(x) => Op::Sltiu {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Xori(x) => Op::Xori {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Ori(x) => Op::Ori {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Andi(x) => Op::Andi {
            rd: x.rd,
            rs1: x.rs1,
            imm: x.imm,
        },
        Insn::Slli(s) => Op::Slli {
            rd: s.rd,
            rs1: s.rs1,
            sh: s.shamt,
        },
        Insn::Srli(s) => Op::Srli {
            rd: s.rd,
            rs1: s.rs1,
            sh: s.shamt,
        },
        Insn::Srai(s) => Op::Srai {
            rd: s.rd,
            rs1: s.rs1,
            sh: s.shamt,
        },
        Insn::Add(r) => Op::Add {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Sub(r) => Op::Sub {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Sll(r) => Op::Sll {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Slt(r) => Op::Slt {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Sltu(r) => Op::Sltu {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Xor(r) => Op::Xor {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Srl(r) => Op::Srl {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Sra(r) => Op::Sra {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Or(r) => Op::Or {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::And(r) => Op::And {
            rd: r.rd,
            rs1: r.rs1,
            rs2: r.rs2,
        },
        Insn::Fence(_) | Insn::FenceI(_) => Op::Nop,
        Insn::Ecall(_) => Op::Ecall,
        Insn::Ebreak(_) => Op::Ebreak,
        Insn::Illegal(word) => Op::Illegal { word },
    }
}

/// Whether `v` fits a signed immediate of `bits` bits.
fn fits_signed(v: i64, bits: u32) -> bool {
    let lim = 1i64 << (bits - 1);
    (-lim..lim).contains(&v)
}

/// The register a DPU "ALU op with condition and jump" can test, if `insn` is an ALU
/// operation the DPU can fuse with a jump (RRRCI / RRICI forms): its destination.
/// Immediate forms are limited to the DPU's immediate field in those forms (signed 8 bits
/// for add/and/or/xor with a jump; signed 11 bits for compares, which the DPU does as
/// `sub zero, ra, imm, cond, pc`; shift amounts always fit).
fn alu_cond_dest(insn: Insn) -> Option<u8> {
    let rd = match insn {
        Insn::Addi(x) | Insn::Xori(x) | Insn::Ori(x) | Insn::Andi(x)
            if x.rs1 != 0 && fits_signed(i64::from(x.imm), 8) =>
        {
            x.rd
        }
        Insn::Slti(x) | Insn::Sltiu(x) if fits_signed(i64::from(x.imm), 11) => x.rd,
        Insn::Slli(s) | Insn::Srli(s) | Insn::Srai(s) => s.rd,
        Insn::Add(r)
        | Insn::Sub(r)
        | Insn::Sll(r)
        | Insn::Slt(r)
        | Insn::Sltu(r)
        | Insn::Xor(r)
        | Insn::Srl(r)
        | Insn::Sra(r)
        | Insn::Or(r)
        | Insn::And(r) => r.rd,
        _ => return None,
    };
    (rd != reg::ZERO && rd != reg::SP).then_some(rd)
}

/// The operands of a conditional branch.
fn branch_operands(insn: Insn) -> Option<(u8, u8)> {
    match insn {
        Insn::Beq(b)
        | Insn::Bne(b)
        | Insn::Blt(b)
        | Insn::Bge(b)
        | Insn::Bltu(b)
        | Insn::Bgeu(b) => Some((b.rs1, b.rs2)),
        _ => None,
    }
}

/// How instruction `a` (at byte address `pc`) and the next instruction `b` fuse, as a
/// [`fuse`] value. The rules are documented in the crate documentation.
fn pair_kind(pc: u32, a: Insn, b: Insn) -> u8 {
    // Rule 1: ALU op, then a conditional branch comparing its result with zero
    // (DPU: `op rc, ra, rb/imm, cond, pc`, conditions z/nz/mi/pl/... on the result;
    // `slt`/`sltu` + `bnez`/`beqz` is the DPU's compare-and-branch `sub zero, ra, rb, lts, pc`).
    if let (Some(rd), Some((s1, s2))) = (alu_cond_dest(a), branch_operands(b)) {
        if (s1 == rd && s2 == reg::ZERO) || (s2 == rd && s1 == reg::ZERO) {
            return fuse::ALWAYS;
        }
    }
    // Rule 2: a small constant, then a branch comparing a register with it
    // (DPU: compare-and-branch with an immediate, `sub zero, ra, imm11, cond, pc`).
    if let (Insn::Addi(x), Some((s1, s2))) = (a, branch_operands(b)) {
        if x.rs1 == reg::ZERO
            && x.rd != reg::ZERO
            && x.rd != reg::SP
            && fits_signed(i64::from(x.imm), 11)
            && ((s1 == x.rd) != (s2 == x.rd))
        {
            return fuse::ALWAYS;
        }
    }
    // Rule 3: two word loads (stores) at offsets o and o + 4 of one base register, o a
    // multiple of 8, the first load not overwriting the base (DPU: `ld dc, ra, off` /
    // `sd ra, off, db`, which need an 8-aligned address: checked when the pair issues).
    match (a, b) {
        (Insn::Lw(x), Insn::Lw(y))
            if x.rs1 == y.rs1
                && x.rd != x.rs1
                && x.rd != y.rd
                && ![x.rd, y.rd].contains(&reg::ZERO)
                && ![x.rd, y.rd].contains(&reg::SP) =>
        {
            return word_pair(x.imm, y.imm);
        }
        (Insn::Sw(x), Insn::Sw(y)) if x.rs1 == y.rs1 => return word_pair(x.imm, y.imm),
        _ => {}
    }
    // Rule 7: shift-and-add, `slli t, rb, k` then `add t, ra, t` (either operand order),
    // the add overwriting the shifted value (DPU: `lsl_add rc, ra, rb, shift`).
    if let (Insn::Slli(sh), Insn::Add(r)) = (a, b) {
        let t = sh.rd;
        if t != reg::ZERO && t != reg::SP && r.rd == t && ((r.rs1 == t) != (r.rs2 == t)) {
            return fuse::ALWAYS;
        }
    }
    // Rule 4: a 32-bit constant (`lui`/`auipc` t) consumed by the next instruction
    // (DPU: `add rc, ra, imm32` / `move rc, imm32`, 32-bit immediates of and/or/xor/sub,
    // load/store offsets of 24 bits signed, `call`/`jump` to an absolute address).
    let (t, value) = match a {
        Insn::Lui(u) => (u.rd, u.imm as u32),
        Insn::Auipc(u) => (u.rd, pc.wrapping_add(u.imm as u32)),
        _ => return fuse::NONE,
    };
    if t == reg::ZERO || t == reg::SP {
        return fuse::NONE;
    }
    let absolute = |off: i32| fits_signed(i64::from(value.wrapping_add(off as u32) as i32), 24);
    let ok = match b {
        Insn::Addi(x) => x.rs1 == t,
        Insn::Add(r) | Insn::Sub(r) | Insn::And(r) | Insn::Or(r) | Insn::Xor(r) => {
            (r.rs1 == t) != (r.rs2 == t)
        }
        Insn::Lb(x) | Insn::Lh(x) | Insn::Lw(x) | Insn::Lbu(x) | Insn::Lhu(x) => {
            x.rs1 == t && absolute(x.imm)
        }
        Insn::Sb(s) | Insn::Sh(s) | Insn::Sw(s) => s.rs1 == t && s.rs2 != t && absolute(s.imm),
        Insn::Jalr(x) => x.rs1 == t,
        _ => false,
    };
    if ok {
        fuse::ALWAYS
    } else {
        fuse::NONE
    }
}

/// The [`fuse`] value of two word accesses at offsets `first` and `second` of one base.
fn word_pair(first: i32, second: i32) -> u8 {
    if second == first.wrapping_add(4) && first & 7 == 0 {
        fuse::PAIR_LO
    } else if first == second.wrapping_add(4) && second & 7 == 0 {
        fuse::PAIR_HI
    } else {
        fuse::NONE
    }
}

/// Records fusion `kind` in the first op of a pair: bits 5..7 of its destination register
/// field (its data register for `sw`). The interpreter masks every register number with 31,
/// so the mark does not change what the op does; it only tells the op's arm in the
/// interpreter to check for a fused issue, which keeps unfused ops free of any check.
/// Returns false (no fusion) for an op that has no such field.
fn mark_fused(op: &mut Op, kind: u8) -> bool {
    debug_assert!(kind != fuse::NONE && kind < 8);
    let bits = kind << 5;
    match op {
        Op::Lw { rd, .. } => *rd |= bits,
        Op::Sw { rs2, .. } => *rs2 |= bits,
        op => match alu_dest_mut(op) {
            Some(rd) => *rd |= bits,
            None => return false,
        },
    }
    true
}

/// The destination register field (with its fusion mark) of a register-only ALU op; `None`
/// for any other op.
pub(crate) fn alu_dest(mut op: Op) -> Option<u8> {
    alu_dest_mut(&mut op).map(|rd| *rd)
}

/// The destination register field of a register-only ALU op (constants, immediate and
/// register-register arithmetic, logic, shifts, comparisons); `None` for any other op.
fn alu_dest_mut(op: &mut Op) -> Option<&mut u8> {
    match op {
        Op::Li { rd, .. }
        | Op::Addi { rd, .. }
        | Op::Slti { rd, .. }
        | Op::Sltiu { rd, .. }
        | Op::Xori { rd, .. }
        | Op::Ori { rd, .. }
        | Op::Andi { rd, .. }
        | Op::Slli { rd, .. }
        | Op::Srli { rd, .. }
        | Op::Srai { rd, .. }
        | Op::Add { rd, .. }
        | Op::Sub { rd, .. }
        | Op::Sll { rd, .. }
        | Op::Slt { rd, .. }
        | Op::Sltu { rd, .. }
        | Op::Xor { rd, .. }
        | Op::Srl { rd, .. }
        | Op::Sra { rd, .. }
        | Op::Or { rd, .. }
        | Op::And { rd, .. } => Some(rd),
        _ => None,
    }
}

/// Rules 1-4 and 7: marks the fused pairs of `words` in `fuse` (greedily from the start: an
/// instruction belongs to at most one of these pairs); returns the number of pairs.
fn find_pairs(base: u32, words: &[u32], fuse: &mut [u8]) -> usize {
    let mut pairs = 0;
    let mut i = 0;
    while i + 1 < words.len() {
        let pc = base.wrapping_add((i as u32) << 2);
        let kind = pair_kind(pc, isa_decode(words[i]), isa_decode(words[i + 1]));
        if kind != fuse::NONE {
            fuse[i] = kind;
            pairs += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    pairs
}

/// Marks op `j - 1` so that op `j` issues in its slot (rules 5 and 6). Marks chain: a
/// marked op may itself be the second op of a pair. Only `NONE` or `ALWAYS` marks are
/// compatible (a word-pair mark means op `j` is the second access of a pair).
fn mark_free(fuse: &mut [u8], j: usize) {
    debug_assert!(j > 0 && matches!(fuse[j - 1], fuse::NONE | fuse::ALWAYS));
    fuse[j - 1] = fuse::ALWAYS;
}

/// Rule 5: the operand set-up of an environment call. A `mv rd, rs` (`addi rd, rs, 0`) or
/// a `li rd, imm` (`addi rd, x0, imm`) writing a register other than `x0`/`sp`.
fn is_call_setup(insn: Insn) -> bool {
    match insn {
        Insn::Addi(x) => x.rd != reg::ZERO && x.rd != reg::SP && (x.rs1 == reg::ZERO || x.imm == 0),
        _ => false,
    }
}

/// Rule 5: marks every op of the maximal run of [`is_call_setup`] instructions that directly
/// precedes an `ecall`, so that the run and the `ecall` issue in one slot.
fn mark_ecall_setups(insns: &[Insn], fuse: &mut [u8]) {
    for (e, insn) in insns.iter().enumerate() {
        if !matches!(insn, Insn::Ecall(_)) {
            continue;
        }
        let mut j = e;
        while j > 0 && is_call_setup(insns[j - 1]) {
            j -= 1;
        }
        for k in j + 1..=e {
            mark_free(fuse, k);
        }
    }
}

/// Rule 6: the longest straight-line window (in instructions, from the first op of a
/// 64-bit add/sub pattern to its carry consumer).
const CARRY_WINDOW: usize = 6;

/// Whether `insn` may lie inside a carry window: not a branch, jump, environment call or
/// anything else that leaves the straight line.
fn straight_line(insn: Insn) -> bool {
    !matches!(
        insn,
        Insn::Beq(_)
            | Insn::Bne(_)
            | Insn::Blt(_)
            | Insn::Bge(_)
            | Insn::Bltu(_)
            | Insn::Bgeu(_)
            | Insn::Jal(_)
            | Insn::Jalr(_)
            | Insn::Ecall(_)
            | Insn::Ebreak(_)
            | Insn::Illegal(_)
    )
}

/// The op indices where control may arrive other than by falling through: branch and jump
/// targets, and the return points after calls. (Indirect jumps other than returns, such as
/// jump tables, are not followed.)
fn entry_points(insns: &[Insn], ops: &[Op]) -> Vec<bool> {
    let n = insns.len();
    let mut entry = vec![false; n + 1];
    for (i, (insn, op)) in insns.iter().zip(ops).enumerate() {
        match *op {
            Op::Beq { target, .. }
            | Op::Bne { target, .. }
            | Op::Blt { target, .. }
            | Op::Bge { target, .. }
            | Op::Bltu { target, .. }
            | Op::Bgeu { target, .. }
            | Op::J { target }
            | Op::Jal { target, .. } => entry[target as usize] = true,
            _ => {}
        }
        if let Insn::Jal(_) | Insn::Jalr(_) = insn {
            if insn.dest() != Some(reg::ZERO) {
                entry[i + 1] = true;
            }
        }
    }
    entry
}

/// One window of straight-line code `[start, end]` searched for a rule-6 pattern.
struct Window<'a> {
    insns: &'a [Insn],
    start: usize,
}

impl Window<'_> {
    /// The last instruction in `[start, before)` that writes `r` (never `x0`).
    fn writer(&self, r: u8, before: usize) -> Option<usize> {
        if r == reg::ZERO {
            return None;
        }
        (self.start..before)
            .rev()
            .find(|&i| self.insns[i].dest() == Some(r))
    }

    /// Whether no instruction in `[from, to)` writes `r`.
    fn unchanged(&self, r: u8, from: usize, to: usize) -> bool {
        r == reg::ZERO || (from..to).all(|i| self.insns[i].dest() != Some(r))
    }

    /// A copy `mv x, src` before `before` (the copy that keeps an operand `src` of the
    /// add/sub at `before` for the carry computation at `c`, which overwrites `x`): its index.
    fn copy_of(&self, x: u8, src: u8, before: usize, c: usize) -> Option<usize> {
        let m = self.writer(x, c)?;
        match self.insns[m] {
            Insn::Addi(mv)
                if m < before
                    && mv.imm == 0
                    && mv.rs1 == src
                    && src != reg::ZERO
                    && src != x
                    && self.unchanged(src, m, before) =>
            {
                Some(m)
            }
            _ => None,
        }
    }
}

/// The ops of one 64-bit add/sub: `low` = the low-word op, its carry (borrow) computation
/// and the copy kept for it (if any); `high` = the high-word op (if any) and the carry
/// consumer. On the DPU each group is one instruction (`add`/`sub`, then `addc`/`subc`).
struct Carry {
    low: [Option<usize>; 3],
    high: [Option<usize>; 2],
}

/// Rule 6 for a 64-bit add whose carry consumer is `add _, c, y` at `k` (either order).
fn carry_of_add(w: &Window, k: usize, c_reg: u8, y: Option<u8>) -> Option<Carry> {
    // The carry: `sltu c, lo, x` ...
    let c = w.writer(c_reg, k)?;
    let Insn::Sltu(cmp) = w.insns[c] else {
        return None;
    };
    // ... of the low add `add lo, a, b` / `addi lo, a, imm`, `x` being one of its operands
    // (still holding the operand's value) or a copy of one, which the carry overwrites.
    let l = w.writer(cmp.rs1, c)?;
    let operands = match w.insns[l] {
        Insn::Add(r) => [r.rs1, r.rs2],
        Insn::Addi(x) if x.rs1 != reg::ZERO && x.imm != 0 => [x.rs1, x.rs1],
        _ => return None,
    };
    let x = cmp.rs2;
    let copy = if operands.contains(&x) && x != reg::ZERO && w.unchanged(x, l, c) {
        None
    } else if x == c_reg {
        Some(operands.iter().find_map(|&src| w.copy_of(x, src, l, c))?)
    } else {
        return None;
    };
    // The high add `add h, ah, bh` / `addi h, ah, imm`, if `y` is its result.
    let h = y.and_then(|y| w.writer(y, k)).filter(|&h| {
        h != l
            && match w.insns[h] {
                Insn::Add(_) => true,
                Insn::Addi(x) => x.rs1 != reg::ZERO,
                _ => false,
            }
    });
    Some(Carry {
        low: [copy, Some(l), Some(c)],
        high: [h, Some(k)],
    })
}

/// Rule 6 for a 64-bit subtract whose borrow consumer is `sub _, y, c_reg` at `k`.
fn carry_of_sub(w: &Window, k: usize, y: u8, c_reg: u8) -> Option<Carry> {
    // The borrow: `sltu c, p, q` ...
    let c = w.writer(c_reg, k)?;
    let Insn::Sltu(cmp) = w.insns[c] else {
        return None;
    };
    let is_sub =
        |i: usize, p: u8, q: u8| matches!(w.insns[i], Insn::Sub(r) if r.rs1 == p && r.rs2 == q);
    // ... either `sltu c, a, lo` after `sub lo, a, b` (`a` unchanged, or a copy of it that
    // the borrow overwrites) ...
    let mut found = None;
    if let Some(l) = w.writer(cmp.rs2, c) {
        if let Insn::Sub(s) = w.insns[l] {
            if s.rs1 == cmp.rs1 && w.unchanged(cmp.rs1, l, c) {
                found = Some((None, l));
            } else if cmp.rs1 == c_reg {
                if let Some(m) = w.copy_of(cmp.rs1, s.rs1, l, c) {
                    found = Some((Some(m), l));
                }
            }
        }
    }
    // ... or `sltu c, a, b` before or after `sub lo, a, b` (`a`, `b` unchanged in between).
    if found.is_none() {
        let (p, q) = (cmp.rs1, cmp.rs2);
        let l = (w.start..k)
            .filter(|&l| l != c && is_sub(l, p, q))
            .find(|&l| {
                let (from, to) = if l < c { (l, c) } else { (c, l) };
                w.unchanged(p, from, to) && w.unchanged(q, from, to)
            })?;
        found = Some((None, l));
    }
    let (copy, l) = found?;
    // The high subtract `sub h, ah, bh`, if `y` is its result.
    let h = w
        .writer(y, k)
        .filter(|&h| h != l && matches!(w.insns[h], Insn::Sub(_)));
    Some(Carry {
        low: [copy, Some(l), Some(c)],
        high: [h, Some(k)],
    })
}

/// Rule 6: 64-bit add and subtract. For each carry consumer `add hi, h, c` / `add hi, c, h`
/// / `addi hi, c, imm` / `sub hi, h, c` whose `c` is an `sltu` recomputing the carry
/// (borrow) of a low-word add/sub in the same straight-line window, every op of each group
/// (see [`Carry`]) but its first issues for free, in the slot of the op before it.
fn mark_carries(insns: &[Insn], ops: &[Op], fuse: &mut [u8]) {
    let n = insns.len();
    let entry = entry_points(insns, ops);
    let markable = |i: usize| {
        let mut op = ops[i];
        mark_fused(&mut op, fuse::ALWAYS)
    };
    for k in 1..n {
        // The carry consumer: `add hi, x, y` (either operand the carry), `addi hi, c, imm`
        // (a high part that is a constant: the DPU's `addc hi, zero, imm`) or `sub hi, h, c`.
        let rd = match insns[k] {
            Insn::Add(r) | Insn::Sub(r) if r.rs1 != r.rs2 => r.rd,
            Insn::Addi(x) if x.rs1 != reg::ZERO && x.imm != 0 => x.rd,
            _ => continue,
        };
        if rd == reg::ZERO || rd == reg::SP || entry[k] {
            continue;
        }
        // The window: straight-line code up to and including `k`, entered only at its
        // first instruction.
        let mut start = k;
        while start > 0
            && k - (start - 1) < CARRY_WINDOW
            && straight_line(insns[start - 1])
            && !entry[start]
        {
            start -= 1;
        }
        let w = Window { insns, start };
        let found = match insns[k] {
            Insn::Add(r) => carry_of_add(&w, k, r.rs2, Some(r.rs1))
                .or_else(|| carry_of_add(&w, k, r.rs1, Some(r.rs2))),
            Insn::Addi(x) => carry_of_add(&w, k, x.rs1, None),
            Insn::Sub(r) => carry_of_sub(&w, k, r.rs1, r.rs2),
            _ => None,
        };
        let Some(carry) = found else {
            continue;
        };
        // Every op but the first of each group issues with the op before it.
        let mut free = Vec::with_capacity(3);
        for group in [&carry.low[..], &carry.high[..]] {
            let mut g: Vec<usize> = group.iter().flatten().copied().collect();
            g.sort_unstable();
            free.extend_from_slice(&g[1..]);
        }
        let ok = free.iter().all(|&j| {
            j > w.start && matches!(fuse[j - 1], fuse::NONE | fuse::ALWAYS) && markable(j - 1)
        });
        if ok {
            for j in free {
                mark_free(fuse, j);
            }
        }
    }
}

/// Rule 8: a 64-bit equality branch, `xor a, x0, y0; xor b, x1, y1; or c, a, b;
/// beqz/bnez c` (`c` one of `a`, `b`): the DPU compiler's `jneq`/`jeq` pair on the low and
/// the high words, two instructions where RV32I issues three slots (the `or` and the branch
/// already fuse by rule 1): the second `xor` issues in the slot of the `or`.
fn mark_eq64_branches(insns: &[Insn], ops: &[Op], fuse: &mut [u8]) {
    let n = insns.len();
    let entry = entry_points(insns, ops);
    for i in 0..n.saturating_sub(3) {
        let (Insn::Xor(x0), Insn::Xor(x1), Insn::Or(o)) = (insns[i], insns[i + 1], insns[i + 2])
        else {
            continue;
        };
        let Some((s1, s2)) = branch_operands(insns[i + 3]) else {
            continue;
        };
        let (a, b, c) = (x0.rd, x1.rd, o.rd);
        let ors = (o.rs1 == a && o.rs2 == b) || (o.rs1 == b && o.rs2 == a);
        let tests_c = (s1 == c && s2 == reg::ZERO) || (s2 == c && s1 == reg::ZERO);
        if a == b
            || !ors
            || !(c == a || c == b)
            || !tests_c
            || !matches!(insns[i + 3], Insn::Beq(_) | Insn::Bne(_))
            || [x1.rs1, x1.rs2].contains(&a)
            || entry[i + 1]
            || entry[i + 2]
            || entry[i + 3]
            || fuse[i + 2] != fuse::ALWAYS
            || fuse[i + 1] != fuse::NONE
        {
            continue;
        }
        let mut op = ops[i + 1];
        if mark_fused(&mut op, fuse::ALWAYS) {
            mark_free(fuse, i + 2);
        }
    }
}

/// Rule 10: the hint that ends the RV32I body of a DPU instruction builtin (`built_ins.h`,
/// e.g. `__builtin_mul_sl_ul_rrr`): `slti x0, x0, BUILTIN_HINT_BASE + k` (a RISC-V HINT: it
/// writes `x0`, so it changes nothing) after the body's `k` ops.
pub const BUILTIN_HINT_BASE: i32 = 1024;
/// Longest builtin body rule 10 fuses.
const BUILTIN_MAX_OPS: i32 = 64;

/// Rule 10: a builtin's body (`k` register-only ALU ops, straight line, no branch target
/// inside) and its hint issue in one slot, the one slot of the DPU instruction the builtin
/// stands for. A body that is not of that form keeps its RV32I cost (same results).
fn mark_builtin_runs(insns: &[Insn], ops: &[Op], fuse: &mut [u8]) {
    let mut entry: Option<Vec<bool>> = None;
    for h in 0..insns.len() {
        let Insn::Slti(x) = insns[h] else {
            continue;
        };
        let k = x.imm - BUILTIN_HINT_BASE;
        if x.rd != reg::ZERO || x.rs1 != reg::ZERO || !(1..=BUILTIN_MAX_OPS).contains(&k) {
            continue;
        }
        let Some(start) = h.checked_sub(k as usize) else {
            continue;
        };
        let entry = entry.get_or_insert_with(|| entry_points(insns, ops));
        let body_ok = (start..h)
            .all(|j| alu_dest(ops[j]).is_some() && matches!(fuse[j], fuse::NONE | fuse::ALWAYS));
        if !body_ok || (start + 1..=h).any(|j| entry[j]) {
            continue;
        }
        for j in start + 1..=h {
            mark_free(fuse, j);
        }
    }
}

/// The [`ahead`] value of the issue slot starting at op `i`.
fn ahead_kind(ops: &[Op], fuse: &[u8], i: usize) -> u16 {
    let mut kind = ahead::PLAIN;
    // The call number the slot's `ecall` sees: `Some(None)` = not written in the slot.
    let mut a7: Option<Option<u32>> = Some(None);
    let mut j = i;
    loop {
        match ops[j] {
            Op::Nop
            | Op::Beq { .. }
            | Op::Bne { .. }
            | Op::Blt { .. }
            | Op::Bge { .. }
            | Op::Bltu { .. }
            | Op::Bgeu { .. }
            | Op::J { .. }
            | Op::Jal { .. } => {}
            Op::Li { rd, imm } if rd & 31 == reg::A7 => a7 = Some(Some(imm)),
            Op::Jalr { .. } | Op::Jr { .. } | Op::AddiSp { .. } => kind = ahead::CHECKED,
            Op::Ecall | Op::EcallSpin { .. } => {
                let arithmetic = |nr| (crate::ecall::MUL32..=crate::ecall::FDIV64).contains(&nr);
                match a7 {
                    Some(Some(nr)) if !arithmetic(nr) => return 0,
                    None => return 0,
                    _ => kind = ahead::CHECKED,
                }
            }
            mut op => match alu_dest_mut(&mut op) {
                Some(rd) if *rd & 31 == reg::A7 => a7 = None,
                Some(_) => {}
                None => return 0,
            },
        }
        if fuse[j] == fuse::NONE {
            break;
        }
        j += 1;
        if j - i > ahead::MAX_FUSED {
            return 0;
        }
    }
    ((j - i) as u16) << 2 | kind
}

/// Marks the acquire spin loops: an `ecall` at `e` whose slot starts at `j < e` (ops
/// `j..e` are register moves and constants marked to issue with it, rule 5) followed by
/// `beqz a0` back to `j`, where the ops write `a0` and read no register that the loop writes
/// (their own destinations, or `a0`, the `ecall`'s result). Once such a loop has run in full
/// and its acquire failed, every further iteration writes the same values and takes the
/// same issue slots until the bit is clear: the interpreter runs those on the `Spin`
/// sentinel. The `ecall` becomes `EcallSpin { start: j, lock }` (it still executes any call:
/// the call number is checked when it runs).
///
/// `lock` (rule 9): the loop's ops set `a7` to `ATOMIC_LOCK`, the call the SDK's
/// `mutex_lock` makes. That loop is the DPU's one instruction `acquire bit, 0, nz, .`, which
/// jumps to itself while the bit is held, so its branch back issues in the `ecall`'s slot:
/// one slot per attempt, and the acquire that succeeds is one slot too. (A loop around
/// `ATOMIC_ACQUIRE`, such as `while (!mutex_trylock(m));`, is an `acquire` and a jump on
/// the DPU too, and keeps its two slots.) Returns the number of such branches marked.
fn mark_spin_loops(ops: &mut [Op], fuse: &mut [u8], n: usize) -> usize {
    let mut locks = 0;
    for e in 1..n.saturating_sub(1) {
        if ops[e] != Op::Ecall {
            continue;
        }
        let (a0, a7, zero) = (reg::A0, reg::A7, reg::ZERO);
        let j = match ops[e + 1] {
            Op::Beq { rs1, rs2, target }
                if (rs1 == a0 && rs2 == zero) || (rs1 == zero && rs2 == a0) =>
            {
                target as usize
            }
            _ => continue,
        };
        if j >= e {
            continue;
        }
        let (mut dests, mut srcs, mut lock) = (0u32, 0u32, false);
        let moves = (j..e).all(|k| {
            fuse[k] == fuse::ALWAYS
                && match ops[k] {
                    Op::Li { rd, imm } => {
                        dests |= 1 << (rd & 31);
                        if rd & 31 == a7 {
                            lock = imm == crate::ecall::ATOMIC_LOCK;
                        }
                        true
                    }
                    Op::Addi { rd, rs1, imm: 0 } => {
                        dests |= 1 << (rd & 31);
                        srcs |= 1 << (rs1 & 31);
                        true
                    }
                    _ => false,
                }
        });
        if moves && dests & (1 << a0) != 0 && srcs & (dests | 1 << a0) == 0 {
            ops[e] = Op::EcallSpin {
                start: j as u32,
                lock,
            };
            if lock {
                fuse[e] = fuse::ALWAYS;
                locks += 1;
            }
        }
    }
    locks
}

#[cfg(test)]
mod tests {
    use super::*;
    use openpim_isa::{asm, reg::*};

    fn prog(words: &[u32]) -> Program {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Program::decode_with(0x8000_0000, &bytes, false)
    }

    #[test]
    fn op_is_eight_bytes() {
        assert_eq!(std::mem::size_of::<Op>(), 8);
    }

    #[test]
    fn specialisations() {
        let p = prog(&[
            asm::addi(SP, SP, -16),  // 0
            asm::addi(ZERO, A0, 1),  // 1 x0 write
            asm::lw(ZERO, A0, 0),    // 2 load into x0
            asm::addi(SP, A0, 0),    // 3 mv sp, a0
            asm::auipc(A0, 0x1000),  // 4
            asm::jal(ZERO, -16),     // 5 -> 1
            asm::jal(RA, 4),         // 6 -> 7
            asm::beq(A0, A1, 64),    // 7 outside
            asm::jalr(ZERO, RA, 0),  // 8
            asm::fence(),            // 9
            0x02b5_0533,             // 10 mul
            asm::addi(A0, ZERO, -1), // 11
            asm::beq(A0, A1, 2),     // 12 misaligned target
        ]);
        assert_eq!(p.ops[0], Op::AddiSp { imm: -16 });
        assert_eq!(p.ops[1], Op::Nop);
        assert!(matches!(p.ops[2], Op::Generic { .. }));
        assert!(matches!(p.ops[3], Op::Generic { .. }));
        assert_eq!(
            p.ops[4],
            Op::Li {
                rd: A0,
                imm: 0x8000_1010
            }
        );
        assert_eq!(p.ops[5], Op::J { target: 1 });
        assert_eq!(p.ops[6], Op::Jal { rd: RA, target: 7 });
        assert!(matches!(p.ops[7], Op::Generic { .. }));
        assert_eq!(p.ops[8], Op::Jr { rs1: RA, imm: 0 });
        assert_eq!(p.ops[9], Op::Nop);
        assert_eq!(p.ops[10], Op::Illegal { word: 0x02b5_0533 });
        assert_eq!(
            p.ops[11],
            Op::Li {
                rd: A0,
                imm: u32::MAX
            }
        );
        assert!(matches!(p.ops[12], Op::Generic { .. }));
        assert_eq!(p.ops[13], Op::FellOff);
        assert_eq!(p.ops[14], Op::Stall);
        assert_eq!(p.ops[15], Op::Spin);
        assert_eq!(p.index_of(0x8000_0008), Some(2));
        assert_eq!(p.index_of(0x8000_0006), None);
        assert_eq!(p.index_of(0x8000_0034), None);
    }

    #[test]
    fn builtin_body_is_one_slot() {
        let hint = |k: i32| asm::slti(ZERO, ZERO, BUILTIN_HINT_BASE + k);
        let words = [
            asm::addi(A0, ZERO, 1), // 0 (before the body)
            asm::slli(T0, A1, 24),  // 1 body
            asm::srai(T0, T0, 24),  // 2
            asm::xor(A2, T0, A3),   // 3
            hint(3),                // 4
            asm::addi(A0, A0, 1),   // 5
            asm::lw(T0, A1, 0),     // 6 a load: not a builtin body
            hint(1),                // 7
        ];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let p = Program::decode(0x8000_0000, &bytes);
        let fused: Vec<bool> = (0..8).map(|i| p.fuse[i] != fuse::NONE).collect();
        assert_eq!(fused, [false, true, true, true, false, false, false, false]);
    }

    #[test]
    fn partial_word_is_padded() {
        let p = Program::decode(0x8000_0000, &[0x13, 0, 0]);
        assert_eq!(p.len(), 1);
        assert_eq!(p.words()[0], 0x13);
    }
}
