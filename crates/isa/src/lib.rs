//! The RV32I instruction set that OpenPIM's DPU programs are compiled to
//! (`docs/internals/dpu-abi.md`).
//!
//! Every instruction is listed exactly once, in [`for_each_insn!`]: its variant name, its
//! mnemonic, its encoding format, its assembly syntax and the mask/match pair that recognises
//! it. The decoded instruction type [`Insn`], the decoder [`decode`], the encoder
//! [`Insn::encode`] and the disassembler ([`Insn::display`], [`disassemble`]) are all generated
//! from that one table, so they cannot drift apart.
//!
//! Words that are not RV32I base instructions (the M, A, F, D and C extensions, CSR
//! instructions, reserved encodings) decode to [`Insn::Illegal`]; it is up to the executor to
//! fault when (and only when) such a word is executed.
//!
//! ```
//! use openpim_isa::{decode, Insn, IType};
//! let word = 0xff01_0113; // addi sp, sp, -16
//! assert_eq!(decode(word), Insn::Addi(IType { rd: 2, rs1: 2, imm: -16 }));
//! assert_eq!(decode(word).encode(), word);
//! assert_eq!(openpim_isa::disassemble(word, 0x8000_0000), "addi sp, sp, -16");
//! ```

use std::fmt;

/// The RV32I instruction table. Invokes `$m!` with one entry per instruction:
/// `Variant "mnemonic" Format Syntax mask match;`.
///
/// A word `w` is the instruction when `w & mask == match`; the format struct extracts the
/// operands from the remaining bits. The masks of different entries never overlap.
#[macro_export]
macro_rules! for_each_insn {
    ($m:ident) => {
        $m! {
            Lui    "lui"     UType  Upper   0x0000_007f 0x0000_0037;
            Auipc  "auipc"   UType  Upper   0x0000_007f 0x0000_0017;
            Jal    "jal"     JType  Jump    0x0000_007f 0x0000_006f;
            Jalr   "jalr"    IType  Mem     0x0000_707f 0x0000_0067;
            Beq    "beq"     BType  Branch  0x0000_707f 0x0000_0063;
            Bne    "bne"     BType  Branch  0x0000_707f 0x0000_1063;
            Blt    "blt"     BType  Branch  0x0000_707f 0x0000_4063;
            Bge    "bge"     BType  Branch  0x0000_707f 0x0000_5063;
            Bltu   "bltu"    BType  Branch  0x0000_707f 0x0000_6063;
            Bgeu   "bgeu"    BType  Branch  0x0000_707f 0x0000_7063;
            Lb     "lb"      IType  Mem     0x0000_707f 0x0000_0003;
            Lh     "lh"      IType  Mem     0x0000_707f 0x0000_1003;
            Lw     "lw"      IType  Mem     0x0000_707f 0x0000_2003;
            Lbu    "lbu"     IType  Mem     0x0000_707f 0x0000_4003;
            Lhu    "lhu"     IType  Mem     0x0000_707f 0x0000_5003;
            Sb     "sb"      SType  Store   0x0000_707f 0x0000_0023;
            Sh     "sh"      SType  Store   0x0000_707f 0x0000_1023;
            Sw     "sw"      SType  Store   0x0000_707f 0x0000_2023;
            Addi   "addi"    IType  Alu     0x0000_707f 0x0000_0013;
            Slti   "slti"    IType  Alu     0x0000_707f 0x0000_2013;
            Sltiu  "sltiu"   IType  Alu     0x0000_707f 0x0000_3013;
            Xori   "xori"    IType  Alu     0x0000_707f 0x0000_4013;
            Ori    "ori"     IType  Alu     0x0000_707f 0x0000_6013;
            Andi   "andi"    IType  Alu     0x0000_707f 0x0000_7013;
            Slli   "slli"    ShType Alu     0xfe00_707f 0x0000_1013;
            Srli   "srli"    ShType Alu     0xfe00_707f 0x0000_5013;
            Srai   "srai"    ShType Alu     0xfe00_707f 0x4000_5013;
            Add    "add"     RType  Alu     0xfe00_707f 0x0000_0033;
            Sub    "sub"     RType  Alu     0xfe00_707f 0x4000_0033;
            Sll    "sll"     RType  Alu     0xfe00_707f 0x0000_1033;
            Slt    "slt"     RType  Alu     0xfe00_707f 0x0000_2033;
            Sltu   "sltu"    RType  Alu     0xfe00_707f 0x0000_3033;
            Xor    "xor"     RType  Alu     0xfe00_707f 0x0000_4033;
            Srl    "srl"     RType  Alu     0xfe00_707f 0x0000_5033;
            Sra    "sra"     RType  Alu     0xfe00_707f 0x4000_5033;
            Or     "or"      RType  Alu     0xfe00_707f 0x0000_6033;
            And    "and"     RType  Alu     0xfe00_707f 0x0000_7033;
            Fence  "fence"   Empty  Bare    0x0000_707f 0x0000_000f;
            FenceI "fence.i" Empty  Bare    0x0000_707f 0x0000_100f;
            Ecall  "ecall"   Empty  Bare    0xffff_ffff 0x0000_0073;
            Ebreak "ebreak"  Empty  Bare    0xffff_ffff 0x0010_0073;
        }
    };
}

/// ABI names of the 32 integer registers, indexed by register number.
pub const REG_NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

/// Register numbers with a meaning in the DPU ABI.
pub mod reg {
    pub const ZERO: u8 = 0;
    pub const RA: u8 = 1;
    pub const SP: u8 = 2;
    pub const GP: u8 = 3;
    pub const TP: u8 = 4;
    pub const T0: u8 = 5;
    pub const T1: u8 = 6;
    pub const T2: u8 = 7;
    pub const S0: u8 = 8;
    pub const S1: u8 = 9;
    pub const A0: u8 = 10;
    pub const A1: u8 = 11;
    pub const A2: u8 = 12;
    pub const A3: u8 = 13;
    pub const A4: u8 = 14;
    pub const A5: u8 = 15;
    pub const A6: u8 = 16;
    pub const A7: u8 = 17;
    pub const S2: u8 = 18;
    pub const S3: u8 = 19;
    pub const S4: u8 = 20;
    pub const S5: u8 = 21;
    pub const S6: u8 = 22;
    pub const S7: u8 = 23;
    pub const S8: u8 = 24;
    pub const S9: u8 = 25;
    pub const S10: u8 = 26;
    pub const S11: u8 = 27;
    pub const T3: u8 = 28;
    pub const T4: u8 = 29;
    pub const T5: u8 = 30;
    pub const T6: u8 = 31;
}

fn reg_name(r: u8) -> &'static str {
    REG_NAMES[usize::from(r & 31)]
}

#[inline]
fn rd_of(w: u32) -> u8 {
    ((w >> 7) & 31) as u8
}
#[inline]
fn rs1_of(w: u32) -> u8 {
    ((w >> 15) & 31) as u8
}
#[inline]
fn rs2_of(w: u32) -> u8 {
    ((w >> 20) & 31) as u8
}
#[inline]
fn reg_bits(r: u8, shift: u32) -> u32 {
    u32::from(r & 31) << shift
}

/// Register-register operation: `op rd, rs1, rs2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RType {
    pub rd: u8,
    pub rs1: u8,
    pub rs2: u8,
}

impl RType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        RType {
            rd: rd_of(w),
            rs1: rs1_of(w),
            rs2: rs2_of(w),
        }
    }
    pub fn to_word(&self) -> u32 {
        reg_bits(self.rd, 7) | reg_bits(self.rs1, 15) | reg_bits(self.rs2, 20)
    }
}

/// Register-immediate operation, load or `jalr`: 12-bit signed immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IType {
    pub rd: u8,
    pub rs1: u8,
    pub imm: i32,
}

impl IType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        IType {
            rd: rd_of(w),
            rs1: rs1_of(w),
            imm: (w as i32) >> 20,
        }
    }
    pub fn to_word(&self) -> u32 {
        reg_bits(self.rd, 7) | reg_bits(self.rs1, 15) | (((self.imm as u32) & 0xfff) << 20)
    }
}

/// Shift by an immediate amount (0..=31).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShType {
    pub rd: u8,
    pub rs1: u8,
    pub shamt: u8,
}

impl ShType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        ShType {
            rd: rd_of(w),
            rs1: rs1_of(w),
            shamt: rs2_of(w),
        }
    }
    pub fn to_word(&self) -> u32 {
        reg_bits(self.rd, 7) | reg_bits(self.rs1, 15) | reg_bits(self.shamt, 20)
    }
}

/// Store: `op rs2, imm(rs1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SType {
    pub rs1: u8,
    pub rs2: u8,
    pub imm: i32,
}

impl SType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        let imm = (((w as i32) >> 25) << 5) | ((w >> 7) & 31) as i32;
        SType {
            rs1: rs1_of(w),
            rs2: rs2_of(w),
            imm,
        }
    }
    pub fn to_word(&self) -> u32 {
        let imm = self.imm as u32;
        reg_bits(self.rs1, 15)
            | reg_bits(self.rs2, 20)
            | ((imm & 31) << 7)
            | (((imm >> 5) & 0x7f) << 25)
    }
}

/// Conditional branch; `imm` is the byte offset from the branch (even, ±4 KiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BType {
    pub rs1: u8,
    pub rs2: u8,
    pub imm: i32,
}

impl BType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        let imm = (((w as i32) >> 31) << 12)
            | (((w >> 7) & 1) << 11) as i32
            | (((w >> 25) & 0x3f) << 5) as i32
            | (((w >> 8) & 0xf) << 1) as i32;
        BType {
            rs1: rs1_of(w),
            rs2: rs2_of(w),
            imm,
        }
    }
    pub fn to_word(&self) -> u32 {
        let imm = self.imm as u32;
        reg_bits(self.rs1, 15)
            | reg_bits(self.rs2, 20)
            | (((imm >> 12) & 1) << 31)
            | (((imm >> 5) & 0x3f) << 25)
            | (((imm >> 1) & 0xf) << 8)
            | (((imm >> 11) & 1) << 7)
    }
}

/// `lui`/`auipc`: `imm` is the full 32-bit value (low 12 bits zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UType {
    pub rd: u8,
    pub imm: i32,
}

impl UType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        UType {
            rd: rd_of(w),
            imm: (w & 0xffff_f000) as i32,
        }
    }
    pub fn to_word(&self) -> u32 {
        reg_bits(self.rd, 7) | ((self.imm as u32) & 0xffff_f000)
    }
}

/// `jal`: `imm` is the byte offset from the jump (even, ±1 MiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JType {
    pub rd: u8,
    pub imm: i32,
}

impl JType {
    #[inline]
    pub fn from_word(w: u32) -> Self {
        let imm = (((w as i32) >> 31) << 20)
            | (w & 0x000f_f000) as i32
            | (((w >> 20) & 1) << 11) as i32
            | (((w >> 21) & 0x3ff) << 1) as i32;
        JType { rd: rd_of(w), imm }
    }
    pub fn to_word(&self) -> u32 {
        let imm = self.imm as u32;
        reg_bits(self.rd, 7)
            | (((imm >> 20) & 1) << 31)
            | (((imm >> 1) & 0x3ff) << 21)
            | (((imm >> 11) & 1) << 20)
            | (imm & 0x000f_f000)
    }
}

/// No operands (`ecall`, `ebreak`, `fence`: the fence's ordering bits are irrelevant on a
/// DPU and are not kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Empty;

impl Empty {
    #[inline]
    pub fn from_word(_w: u32) -> Self {
        Empty
    }
    pub fn to_word(&self) -> u32 {
        0
    }
}

/// How an instruction's operands are written in assembly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// `op rd, rs1, rs2|imm`
    Alu,
    /// `op rd, imm(rs1)` (loads, `jalr`)
    Mem,
    /// `op rs2, imm(rs1)`
    Store,
    /// `op rs1, rs2, target`
    Branch,
    /// `op rd, target`
    Jump,
    /// `op rd, imm20`
    Upper,
    /// `op`
    Bare,
}

/// Operand rendering of each format, used by the generated disassembler.
trait Operands {
    fn write(&self, syntax: Syntax, pc: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl Operands for RType {
    fn write(&self, _: Syntax, _: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            " {}, {}, {}",
            reg_name(self.rd),
            reg_name(self.rs1),
            reg_name(self.rs2)
        )
    }
}

impl Operands for IType {
    fn write(&self, syntax: Syntax, _: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match syntax {
            Syntax::Mem => {
                write!(
                    f,
                    " {}, {}({})",
                    reg_name(self.rd),
                    self.imm,
                    reg_name(self.rs1)
                )
            }
            _ => write!(
                f,
                " {}, {}, {}",
                reg_name(self.rd),
                reg_name(self.rs1),
                self.imm
            ),
        }
    }
}

impl Operands for ShType {
    fn write(&self, _: Syntax, _: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            " {}, {}, {}",
            reg_name(self.rd),
            reg_name(self.rs1),
            self.shamt
        )
    }
}

impl Operands for SType {
    fn write(&self, _: Syntax, _: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            " {}, {}({})",
            reg_name(self.rs2),
            self.imm,
            reg_name(self.rs1)
        )
    }
}

impl Operands for BType {
    fn write(&self, _: Syntax, pc: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = pc.wrapping_add(self.imm as u32);
        write!(
            f,
            " {}, {}, {:#x}",
            reg_name(self.rs1),
            reg_name(self.rs2),
            target
        )
    }
}

impl Operands for UType {
    fn write(&self, _: Syntax, _: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " {}, {:#x}", reg_name(self.rd), (self.imm as u32) >> 12)
    }
}

impl Operands for JType {
    fn write(&self, _: Syntax, pc: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            " {}, {:#x}",
            reg_name(self.rd),
            pc.wrapping_add(self.imm as u32)
        )
    }
}

impl Operands for Empty {
    fn write(&self, _: Syntax, _: u32, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

macro_rules! define_insns {
    ($($var:ident $mn:literal $fmt:ident $syn:ident $mask:literal $match:literal;)*) => {
        /// One decoded RV32I instruction.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Insn {
            $(
                #[doc = concat!("`", $mn, "`")]
                $var($fmt),
            )*
            /// Not an RV32I base instruction (or a reserved encoding): the raw word.
            Illegal(u32),
        }

        /// Decodes one instruction word. Never fails: unknown words give [`Insn::Illegal`].
        pub fn decode(word: u32) -> Insn {
            $(
                if word & $mask == $match {
                    return Insn::$var($fmt::from_word(word));
                }
            )*
            Insn::Illegal(word)
        }

        impl Insn {
            /// The assembly mnemonic (`"illegal"` for [`Insn::Illegal`]).
            pub fn mnemonic(&self) -> &'static str {
                match self {
                    $(Insn::$var(_) => $mn,)*
                    Insn::Illegal(_) => "illegal",
                }
            }

            /// How the operands are written in assembly.
            pub fn syntax(&self) -> Syntax {
                match self {
                    $(Insn::$var(_) => Syntax::$syn,)*
                    Insn::Illegal(_) => Syntax::Bare,
                }
            }

            /// Encodes the instruction back into a word (the inverse of [`decode`] for
            /// every valid word; operands out of range are truncated to their fields).
            pub fn encode(&self) -> u32 {
                match self {
                    $(Insn::$var(ops) => $match | ops.to_word(),)*
                    Insn::Illegal(w) => *w,
                }
            }

            fn write_operands(&self, pc: u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(Insn::$var(ops) => ops.write(Syntax::$syn, pc, f),)*
                    Insn::Illegal(w) => write!(f, " {:#010x}", w),
                }
            }
        }

        /// Every mnemonic of the table, in table order.
        pub const MNEMONICS: &[&str] = &[$($mn,)*];
    };
}

for_each_insn!(define_insns);

impl Insn {
    /// The register the instruction writes, if any (`x0` included).
    pub fn dest(&self) -> Option<u8> {
        match *self {
            Insn::Lui(u) | Insn::Auipc(u) => Some(u.rd),
            Insn::Jal(j) => Some(j.rd),
            Insn::Jalr(i)
            | Insn::Lb(i)
            | Insn::Lh(i)
            | Insn::Lw(i)
            | Insn::Lbu(i)
            | Insn::Lhu(i)
            | Insn::Addi(i)
            | Insn::Slti(i)
            | Insn::Sltiu(i)
            | Insn::Xori(i)
            | Insn::Ori(i)
            | Insn::Andi(i) => Some(i.rd),
            Insn::Slli(s) | Insn::Srli(s) | Insn::Srai(s) => Some(s.rd),
            Insn::Add(r)
            | Insn::Sub(r)
            | Insn::Sll(r)
            | Insn::Slt(r)
            | Insn::Sltu(r)
            | Insn::Xor(r)
            | Insn::Srl(r)
            | Insn::Sra(r)
            | Insn::Or(r)
            | Insn::And(r) => Some(r.rd),
            _ => None,
        }
    }

    /// A value that renders the instruction as assembly; `pc` (the instruction's address)
    /// is used to print absolute branch and jump targets.
    pub fn display(&self, pc: u32) -> Disasm {
        Disasm { insn: *self, pc }
    }
}

/// An instruction with its address, rendered as assembly by `Display`.
#[derive(Clone, Copy, Debug)]
pub struct Disasm {
    insn: Insn,
    pc: u32,
}

impl fmt::Display for Disasm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.insn.mnemonic())?;
        self.insn.write_operands(self.pc, f)
    }
}

/// Disassembles one word located at `pc`, e.g. `"beq a0, a1, 0x80000010"`.
pub fn disassemble(word: u32, pc: u32) -> String {
    decode(word).display(pc).to_string()
}

/// A tiny assembler: one function per instruction, returning the encoded word. Used by tests
/// and benchmarks that build DPU programs by hand.
///
/// ```
/// use openpim_isa::{asm, reg::*};
/// assert_eq!(asm::addi(SP, SP, -16), 0xff01_0113);
/// ```
pub mod asm {
    use super::*;

    fn r(f: fn(RType) -> Insn, rd: u8, rs1: u8, rs2: u8) -> u32 {
        f(RType { rd, rs1, rs2 }).encode()
    }
    fn i(f: fn(IType) -> Insn, rd: u8, rs1: u8, imm: i32) -> u32 {
        f(IType { rd, rs1, imm }).encode()
    }
    fn sh(f: fn(ShType) -> Insn, rd: u8, rs1: u8, shamt: u8) -> u32 {
        f(ShType { rd, rs1, shamt }).encode()
    }
    fn s(f: fn(SType) -> Insn, rs2: u8, rs1: u8, imm: i32) -> u32 {
        f(SType { rs1, rs2, imm }).encode()
    }
    fn b(f: fn(BType) -> Insn, rs1: u8, rs2: u8, imm: i32) -> u32 {
        f(BType { rs1, rs2, imm }).encode()
    }

    pub fn lui(rd: u8, imm: i32) -> u32 {
        Insn::Lui(UType { rd, imm }).encode()
    }
    pub fn auipc(rd: u8, imm: i32) -> u32 {
        Insn::Auipc(UType { rd, imm }).encode()
    }
    /// `jal rd, offset` (offset in bytes from this instruction).
    pub fn jal(rd: u8, imm: i32) -> u32 {
        Insn::Jal(JType { rd, imm }).encode()
    }
    pub fn jalr(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Jalr, rd, rs1, imm)
    }
    pub fn beq(rs1: u8, rs2: u8, imm: i32) -> u32 {
        b(Insn::Beq, rs1, rs2, imm)
    }
    pub fn bne(rs1: u8, rs2: u8, imm: i32) -> u32 {
        b(Insn::Bne, rs1, rs2, imm)
    }
    pub fn blt(rs1: u8, rs2: u8, imm: i32) -> u32 {
        b(Insn::Blt, rs1, rs2, imm)
    }
    pub fn bge(rs1: u8, rs2: u8, imm: i32) -> u32 {
        b(Insn::Bge, rs1, rs2, imm)
    }
    pub fn bltu(rs1: u8, rs2: u8, imm: i32) -> u32 {
        b(Insn::Bltu, rs1, rs2, imm)
    }
    pub fn bgeu(rs1: u8, rs2: u8, imm: i32) -> u32 {
        b(Insn::Bgeu, rs1, rs2, imm)
    }
    pub fn lb(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Lb, rd, rs1, imm)
    }
    pub fn lh(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Lh, rd, rs1, imm)
    }
    pub fn lw(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Lw, rd, rs1, imm)
    }
    pub fn lbu(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Lbu, rd, rs1, imm)
    }
    pub fn lhu(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Lhu, rd, rs1, imm)
    }
    /// `sb rs2, imm(rs1)`
    pub fn sb(rs2: u8, rs1: u8, imm: i32) -> u32 {
        s(Insn::Sb, rs2, rs1, imm)
    }
    /// `sh rs2, imm(rs1)`
    pub fn sh_(rs2: u8, rs1: u8, imm: i32) -> u32 {
        s(Insn::Sh, rs2, rs1, imm)
    }
    /// `sw rs2, imm(rs1)`
    pub fn sw(rs2: u8, rs1: u8, imm: i32) -> u32 {
        s(Insn::Sw, rs2, rs1, imm)
    }
    pub fn addi(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Addi, rd, rs1, imm)
    }
    pub fn slti(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Slti, rd, rs1, imm)
    }
    pub fn sltiu(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Sltiu, rd, rs1, imm)
    }
    pub fn xori(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Xori, rd, rs1, imm)
    }
    pub fn ori(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Ori, rd, rs1, imm)
    }
    pub fn andi(rd: u8, rs1: u8, imm: i32) -> u32 {
        i(Insn::Andi, rd, rs1, imm)
    }
    pub fn slli(rd: u8, rs1: u8, shamt: u8) -> u32 {
        sh(Insn::Slli, rd, rs1, shamt)
    }
    pub fn srli(rd: u8, rs1: u8, shamt: u8) -> u32 {
        sh(Insn::Srli, rd, rs1, shamt)
    }
    pub fn srai(rd: u8, rs1: u8, shamt: u8) -> u32 {
        sh(Insn::Srai, rd, rs1, shamt)
    }
    pub fn add(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Add, rd, rs1, rs2)
    }
    pub fn sub(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Sub, rd, rs1, rs2)
    }
    pub fn sll(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Sll, rd, rs1, rs2)
    }
    pub fn slt(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Slt, rd, rs1, rs2)
    }
    pub fn sltu(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Sltu, rd, rs1, rs2)
    }
    pub fn xor(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Xor, rd, rs1, rs2)
    }
    pub fn srl(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Srl, rd, rs1, rs2)
    }
    pub fn sra(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Sra, rd, rs1, rs2)
    }
    pub fn or(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::Or, rd, rs1, rs2)
    }
    pub fn and(rd: u8, rs1: u8, rs2: u8) -> u32 {
        r(Insn::And, rd, rs1, rs2)
    }
    pub fn fence() -> u32 {
        Insn::Fence(Empty).encode()
    }
    pub fn ecall() -> u32 {
        Insn::Ecall(Empty).encode()
    }
    pub fn ebreak() -> u32 {
        Insn::Ebreak(Empty).encode()
    }
    /// `li rd, value` as `lui` + `addi` (always two words).
    pub fn li(rd: u8, value: u32) -> [u32; 2] {
        let lo = ((value << 20) as i32) >> 20;
        let hi = value.wrapping_sub(lo as u32);
        [lui(rd, hi as i32), addi(rd, rd, lo)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_known_words() {
        // Words produced by a real assembler.
        assert_eq!(
            decode(0x0000_0513),
            Insn::Addi(IType {
                rd: 10,
                rs1: 0,
                imm: 0
            })
        );
        assert_eq!(
            decode(0x00c5_8533),
            Insn::Add(RType {
                rd: 10,
                rs1: 11,
                rs2: 12
            })
        );
        assert_eq!(
            decode(0x40c5_8533),
            Insn::Sub(RType {
                rd: 10,
                rs1: 11,
                rs2: 12
            })
        );
        assert_eq!(
            decode(0x0081_2403),
            Insn::Lw(IType {
                rd: 8,
                rs1: 2,
                imm: 8
            })
        );
        assert_eq!(
            decode(0x0081_2623),
            Insn::Sw(SType {
                rs1: 2,
                rs2: 8,
                imm: 12
            })
        );
        assert_eq!(
            decode(0xfe05_1ee3),
            Insn::Bne(BType {
                rs1: 10,
                rs2: 0,
                imm: -4
            })
        );
        assert_eq!(decode(0x0080_00ef), Insn::Jal(JType { rd: 1, imm: 8 }));
        assert_eq!(
            decode(0x0000_8067),
            Insn::Jalr(IType {
                rd: 0,
                rs1: 1,
                imm: 0
            })
        );
        assert_eq!(
            decode(0x1234_5537),
            Insn::Lui(UType {
                rd: 10,
                imm: 0x1234_5000
            })
        );
        assert_eq!(
            decode(0x4015_d513),
            Insn::Srai(ShType {
                rd: 10,
                rs1: 11,
                shamt: 1
            })
        );
        assert_eq!(decode(0x0000_0073), Insn::Ecall(Empty));
        assert_eq!(decode(0x0010_0073), Insn::Ebreak(Empty));
        assert_eq!(decode(0x0ff0_000f), Insn::Fence(Empty));
    }

    #[test]
    fn extensions_are_illegal() {
        for w in [
            0x02b5_0533u32, // mul a0, a0, a1
            0x02b5_4533,    // div a0, a0, a1
            0x1005_252f,    // lr.w a0, (a0)
            0x0005_2007,    // flw f0, 0(a0)
            0xc000_2573,    // rdcycle a0 (csrrs)
            0x0000_4501,    // c.li a0, 0 (compressed, low bits 01)
            0x0000_0000,
            0xffff_ffff,
            0x0205_1513, // slli a0, a0, 32 (shamt[5] set: illegal on RV32)
        ] {
            assert_eq!(decode(w), Insn::Illegal(w), "{w:#x}");
        }
    }

    #[test]
    fn encode_roundtrips_every_entry() {
        let samples = [
            Insn::Lui(UType { rd: 5, imm: -4096 }),
            Insn::Auipc(UType {
                rd: 31,
                imm: 0x7fff_f000,
            }),
            Insn::Jal(JType {
                rd: 1,
                imm: -1_048_576,
            }),
            Insn::Jal(JType {
                rd: 0,
                imm: 1_048_574,
            }),
            Insn::Jalr(IType {
                rd: 1,
                rs1: 5,
                imm: -2048,
            }),
            Insn::Beq(BType {
                rs1: 1,
                rs2: 2,
                imm: -4096,
            }),
            Insn::Bgeu(BType {
                rs1: 31,
                rs2: 30,
                imm: 4094,
            }),
            Insn::Sw(SType {
                rs1: 2,
                rs2: 31,
                imm: -2048,
            }),
            Insn::Sb(SType {
                rs1: 2,
                rs2: 31,
                imm: 2047,
            }),
            Insn::Slli(ShType {
                rd: 3,
                rs1: 4,
                shamt: 31,
            }),
            Insn::Srai(ShType {
                rd: 3,
                rs1: 4,
                shamt: 17,
            }),
            Insn::And(RType {
                rd: 7,
                rs1: 8,
                rs2: 9,
            }),
            Insn::Sltiu(IType {
                rd: 7,
                rs1: 8,
                imm: 2047,
            }),
        ];
        for insn in samples {
            assert_eq!(decode(insn.encode()), insn, "{insn:?}");
        }
        // Every table entry's match value decodes to an instruction with that mnemonic.
        let mut seen = 0;
        macro_rules! check_matches {
            ($($var:ident $mn:literal $fmt:ident $syn:ident $mask:literal $match:literal;)*) => {
                $(
                    assert_eq!(decode($match).mnemonic(), $mn);
                    assert_eq!(decode($match).encode(), $match);
                    seen += 1;
                )*
            };
        }
        for_each_insn!(check_matches);
        assert_eq!(seen, MNEMONICS.len());
        assert_eq!(seen, 41);
    }

    #[test]
    fn disassembly() {
        let pc = 0x8000_0100;
        assert_eq!(disassemble(0xff01_0113, pc), "addi sp, sp, -16");
        assert_eq!(disassemble(0x00c5_8533, pc), "add a0, a1, a2");
        assert_eq!(disassemble(0x0081_2403, pc), "lw s0, 8(sp)");
        assert_eq!(disassemble(0x0081_2623, pc), "sw s0, 12(sp)");
        assert_eq!(disassemble(0xfe05_1ee3, pc), "bne a0, zero, 0x800000fc");
        assert_eq!(disassemble(0x0080_00ef, pc), "jal ra, 0x80000108");
        assert_eq!(disassemble(0x0000_8067, pc), "jalr zero, 0(ra)");
        assert_eq!(disassemble(0x1234_5537, pc), "lui a0, 0x12345");
        assert_eq!(disassemble(0x4015_d513, pc), "srai a0, a1, 1");
        assert_eq!(disassemble(0x0000_0073, pc), "ecall");
        assert_eq!(disassemble(0x02b5_0533, pc), "illegal 0x02b50533");
    }

    #[test]
    fn asm_li_splits_correctly() {
        for v in [
            0u32,
            1,
            0x7ff,
            0x800,
            0xfff,
            0x1234_5678,
            0xffff_f800,
            u32::MAX,
        ] {
            let [hi, lo] = asm::li(10, v);
            let (Insn::Lui(u), Insn::Addi(a)) = (decode(hi), decode(lo)) else {
                panic!()
            };
            assert_eq!((u.imm as u32).wrapping_add(a.imm as u32), v);
        }
    }

    #[test]
    fn dest_register() {
        assert_eq!(decode(0xff01_0113).dest(), Some(2));
        assert_eq!(decode(0x0081_2623).dest(), None);
        assert_eq!(decode(0x0000_8067).dest(), Some(0));
    }
}
