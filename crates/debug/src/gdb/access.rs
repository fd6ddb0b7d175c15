//! The memory a slot is about to access, from its instructions and the tasklet's registers
//! before it issues: RISC-V watchpoints trigger before the accessing instruction (GDB steps
//! over it itself), so the probe must stop before the slot, not after it.
//!
//! A slot is one instruction, a word pair (`lw`/`sw` at `o` and `o + 4`, issue-slot rule 3)
//! or a run of `mv`/`li` ending with an `ecall` (rule 5); the DMA calls access `a2` bytes at
//! their WRAM and MRAM addresses. Both words of a possible pair are checked: when the pair
//! issues as two slots, a watchpoint on the second word stops one slot early (GDB then steps
//! and sees the value unchanged, and goes on).

use openpim_engine::ecall::{DMA_MRAM_TO_WRAM, DMA_WRAM_TO_MRAM};
use openpim_engine::map::MRAM_BASE;
use openpim_isa::{decode, Insn};

/// One access: DPU address, size, write.
pub type Range = (u32, u32, bool);

const A0: usize = 10;
const A1: usize = 11;
const A2: usize = 12;
const A7: usize = 17;

fn mem(insn: &Insn, regs: &[u32; 32]) -> Option<Range> {
    let load = |i: &openpim_isa::IType, size| {
        Some((regs[i.rs1 as usize].wrapping_add(i.imm as u32), size, false))
    };
    let store = |s: &openpim_isa::SType, size| {
        Some((regs[s.rs1 as usize].wrapping_add(s.imm as u32), size, true))
    };
    match insn {
        Insn::Lb(i) | Insn::Lbu(i) => load(i, 1),
        Insn::Lh(i) | Insn::Lhu(i) => load(i, 2),
        Insn::Lw(i) => load(i, 4),
        Insn::Sb(s) => store(s, 1),
        Insn::Sh(s) => store(s, 2),
        Insn::Sw(s) => store(s, 4),
        _ => None,
    }
}

/// Applies a register-only instruction to `regs` (`false`: not one of those handled).
fn alu(insn: &Insn, pc: u32, regs: &mut [u32; 32]) -> bool {
    let (rd, v) = match insn {
        Insn::Lui(u) => (u.rd, u.imm as u32),
        Insn::Auipc(u) => (u.rd, pc.wrapping_add(u.imm as u32)),
        Insn::Addi(i) => (i.rd, regs[i.rs1 as usize].wrapping_add(i.imm as u32)),
        Insn::Add(r) => (
            r.rd,
            regs[r.rs1 as usize].wrapping_add(regs[r.rs2 as usize]),
        ),
        _ => return false,
    };
    if rd != 0 {
        regs[rd as usize] = v;
    }
    true
}

/// The bytes a DMA of `n` moves, as the DPU encodes the length.
fn dma_len(n: u32) -> u32 {
    (1 + (n >> 3).wrapping_sub(1) % 256) * 8
}

fn mram_addr(a: u32) -> u32 {
    let a = a & !7;
    if a >= MRAM_BASE {
        a
    } else {
        MRAM_BASE.wrapping_add(a)
    }
}

/// The accesses the slot starting at `pc` may make (`word(pc)` reads the program's code).
pub fn of_slot(pc: u32, word: impl Fn(u32) -> Option<u32>, regs: &[u32; 32]) -> Vec<Range> {
    let mut out = Vec::new();
    let Some(first) = word(pc).map(decode) else {
        return out;
    };
    // A memory op, or a register op paired with the memory op after it (`lui a0, hi;
    // sw s2, lo(a0)`): the second word sees the first's result.
    let mut after = *regs;
    let first_mem = mem(&first, regs);
    let first_alu = alu(&first, pc, &mut after);
    if first_mem.is_some() || first_alu {
        out.extend(first_mem);
        if let Some(r) = word(pc.wrapping_add(4))
            .map(decode)
            .and_then(|i| mem(&i, &after))
        {
            out.push(r);
        }
        if first_mem.is_some() {
            return out;
        }
    }
    // A run of mv/li set-ups, then an ecall: one slot.
    let mut r = *regs;
    let mut at = pc;
    for _ in 0..16 {
        match word(at).map(decode) {
            Some(Insn::Addi(i)) if i.rd != 0 && (i.rs1 == 0 || i.imm == 0) => {
                r[i.rd as usize] = r[i.rs1 as usize].wrapping_add(i.imm as u32);
            }
            Some(Insn::Ecall(_)) => {
                let n = dma_len(r[A2]);
                match r[A7] {
                    DMA_MRAM_TO_WRAM => {
                        out.push((mram_addr(r[A0]), n, false));
                        out.push((r[A1] & !7, n, true));
                    }
                    DMA_WRAM_TO_MRAM => {
                        out.push((r[A0] & !7, n, false));
                        out.push((mram_addr(r[A1]), n, true));
                    }
                    _ => {}
                }
                break;
            }
            _ => break,
        }
        at = at.wrapping_add(4);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use openpim_isa::asm;

    fn code(words: &[u32]) -> impl Fn(u32) -> Option<u32> + '_ {
        move |pc| {
            words
                .get(((pc.wrapping_sub(0x8000_0000)) / 4) as usize)
                .copied()
        }
    }

    #[test]
    fn stores_loads_and_dma() {
        let mut regs = [0u32; 32];
        regs[8] = 0x100;
        let w = [asm::sw(9, 8, 8)];
        assert_eq!(
            of_slot(0x8000_0000, code(&w), &regs),
            vec![(0x108, 4, true)]
        );
        let w = [asm::lw(5, 8, 0), asm::lw(6, 8, 4)];
        assert_eq!(
            of_slot(0x8000_0000, code(&w), &regs),
            vec![(0x100, 4, false), (0x104, 4, false)]
        );
        // li a7, 3 (WRAM -> MRAM); a0 = WRAM 0x200, a1 = MRAM offset 0x40, a2 = 16
        regs[10] = 0x200;
        regs[11] = 0x40;
        regs[12] = 16;
        let w = [asm::addi(17, 0, 3), asm::ecall()];
        assert_eq!(
            of_slot(0x8000_0000, code(&w), &regs),
            vec![(0x200, 16, false), (MRAM_BASE + 0x40, 16, true)]
        );
        let w = [asm::add(5, 6, 7)];
        assert!(of_slot(0x8000_0000, code(&w), &regs).is_empty());
        // lui a0, 0; sw s2, 64(a0): the pair's store sees the lui's a0
        regs[10] = 0x999;
        let w = [asm::lui(10, 0), asm::sw(18, 10, 64)];
        assert_eq!(of_slot(0x8000_0000, code(&w), &regs), vec![(0x40, 4, true)]);
    }
}
