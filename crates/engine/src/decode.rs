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
//! Two sentinel ops follow the program: `FellOff` (reached by running past the last
//! instruction) and `Stall` (where a tasklet waits out the issue slots of an arithmetic call).

use openpim_isa::{decode as isa_decode, reg, Insn};

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
    /// `words.len() + 2` ops: the program, then `FellOff`, then `Stall`.
    pub(crate) ops: Vec<Op>,
}

impl Program {
    /// Decodes the IRAM image `text` whose first byte is at `text_base`.
    ///
    /// A trailing partial word is padded with zero bytes (and so decodes as illegal).
    pub fn decode(text_base: u32, text: &[u8]) -> Program {
        let words: Vec<u32> = text
            .chunks(4)
            .map(|c| {
                let mut b = [0u8; 4];
                b[..c.len()].copy_from_slice(c);
                u32::from_le_bytes(b)
            })
            .collect();
        let n = words.len();
        let mut ops = Vec::with_capacity(n + 2);
        for (i, &w) in words.iter().enumerate() {
            ops.push(specialise(text_base, n, i, w));
        }
        ops.push(Op::FellOff);
        ops.push(Op::Stall);
        Program {
            base: text_base,
            words,
            ops,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use openpim_isa::{asm, reg::*};

    fn prog(words: &[u32]) -> Program {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        Program::decode(0x8000_0000, &bytes)
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
        assert_eq!(p.index_of(0x8000_0008), Some(2));
        assert_eq!(p.index_of(0x8000_0006), None);
        assert_eq!(p.index_of(0x8000_0034), None);
    }

    #[test]
    fn partial_word_is_padded() {
        let p = Program::decode(0x8000_0000, &[0x13, 0, 0]);
        assert_eq!(p.len(), 1);
        assert_eq!(p.words()[0], 0x13);
    }
}
