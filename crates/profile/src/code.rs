//! What the profiler knows of a DPU program's code: which instructions are calls and returns
//! (decoded once from the program's text, to follow call stacks from the issue stream), and
//! the source frames of a pc (from its debugging information).

use std::sync::Arc;

use openpim_debuginfo::{DebugInfo, Frame};
use openpim_isa::{decode, reg, Insn};
use openpim_runtime::Program;

/// How an instruction moves between functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Other,
    /// `jal`/`jalr` writing a link register (`ra`, or `t0`, RISC-V's alternate link): a call.
    Call,
    /// `jalr x0` through a link register: a return.
    Return,
}

/// Classifies one instruction word.
pub(crate) fn flow(word: u32) -> Flow {
    let link = |r: u8| r == reg::RA || r == reg::T0;
    match decode(word) {
        Insn::Jal(j) if link(j.rd) => Flow::Call,
        Insn::Jalr(i) if link(i.rd) => Flow::Call,
        Insn::Jalr(i) if i.rd == 0 && link(i.rs1) && i.imm == 0 => Flow::Return,
        _ => Flow::Other,
    }
}

/// One program, as the profiler sees it.
pub(crate) struct Code {
    /// Kept alive so that the cache's key (its address) is never reused by another program.
    pub(crate) program: Arc<Program>,
    pub(crate) base: u32,
    flows: Vec<Flow>,
    debug: Option<DebugInfo>,
}

impl Code {
    pub(crate) fn new(program: Arc<Program>) -> Code {
        let base = program.text_base();
        let flows = program
            .text()
            .chunks_exact(4)
            .map(|w| flow(u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
            .collect();
        // A program the loader accepted is an ELF; should its DWARF be unreadable, the
        // profile names functions from the loader's symbol table instead.
        let debug = DebugInfo::from_elf(program.elf()).ok();
        Code {
            program,
            base,
            flows,
            debug,
        }
    }

    /// Instructions in the text.
    pub(crate) fn len(&self) -> usize {
        self.flows.len()
    }

    /// Index of the instruction at byte address `pc` (`None` outside the text).
    pub(crate) fn index(&self, pc: u32) -> Option<usize> {
        let off = pc.wrapping_sub(self.base);
        let i = (off >> 2) as usize;
        (off & 3 == 0 && i < self.flows.len()).then_some(i)
    }

    pub(crate) fn flow_at(&self, pc: u32) -> Flow {
        self.index(pc).map_or(Flow::Other, |i| self.flows[i])
    }

    /// Whether the program has DWARF lines (else the profile is by function only).
    pub(crate) fn has_lines(&self) -> bool {
        self.debug.as_ref().is_some_and(DebugInfo::has_lines)
    }

    /// The frames of `pc`, outermost first (at least one: an address outside every function
    /// is a frame named by the address).
    pub(crate) fn frames_outer_first(&self, pc: u32) -> Vec<Frame> {
        let mut frames = self
            .debug
            .as_ref()
            .map(|d| d.frames(pc))
            .unwrap_or_default();
        if frames.is_empty() {
            let function = self
                .program
                .function_at(pc)
                .map(|f| f.split('+').next().unwrap_or(&f).to_string())
                .unwrap_or_else(|| format!("{pc:#x}"));
            frames.push(Frame {
                function,
                file: None,
                line: None,
                inlined: false,
            });
        }
        frames.reverse();
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openpim_isa::asm;

    #[test]
    fn calls_and_returns() {
        assert_eq!(flow(asm::jal(reg::RA, 64)), Flow::Call);
        assert_eq!(flow(asm::jalr(reg::RA, 6, 0)), Flow::Call);
        assert_eq!(flow(asm::jalr(0, reg::RA, 0)), Flow::Return);
        // A tail call (`jr t1`) and a plain jump are neither.
        assert_eq!(flow(asm::jalr(0, 6, 0)), Flow::Other);
        assert_eq!(flow(asm::jal(0, 64)), Flow::Other);
        assert_eq!(flow(asm::addi(1, 1, 4)), Flow::Other);
    }
}
