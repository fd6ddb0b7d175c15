//! [`DpuView`]: the machine state a probe (`crate::probe`) sees, a window on the
//! interpreter's `Dpu` (a child module, so that the interpreter's fields stay private).

use super::{Dpu, State};
use crate::map::MAX_TASKLETS;
use crate::probe::TaskletState;

/// The machine state of a DPU, as a probe sees it between issue slots.
pub struct DpuView<'v, 'a> {
    dpu: &'v mut Dpu<'a>,
    cycle: u64,
}

impl<'v, 'a> DpuView<'v, 'a> {
    pub(super) fn new(dpu: &'v mut Dpu<'a>, cycle: u64) -> Self {
        DpuView { dpu, cycle }
    }

    /// The current cycle.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// Tasklets booted (`NR_TASKLETS`).
    pub fn nr_tasklets(&self) -> u32 {
        self.dpu.nr as u32
    }

    /// Register `r` (0..32) of tasklet `t` (0 for out-of-range arguments).
    pub fn reg(&self, t: u32, r: u32) -> u32 {
        self.regs(t).map_or(0, |regs| regs[(r & 31) as usize])
    }

    /// The 32 registers of tasklet `t`.
    pub fn regs(&self, t: u32) -> Option<&[u32; 32]> {
        self.dpu
            .regs
            .get(t as usize)
            .filter(|_| t < self.nr_tasklets())
    }

    /// Sets register `r` of tasklet `t`; `false` (and nothing changed) when either is out of
    /// range. Register 0 stays 0.
    pub fn set_reg(&mut self, t: u32, r: u32, v: u32) -> bool {
        if t >= self.nr_tasklets() || r >= 32 {
            return false;
        }
        if r != 0 {
            self.dpu.regs[t as usize][r as usize] = v;
        }
        true
    }

    /// Byte address (IRAM) of tasklet `t`'s next instruction.
    pub fn pc(&self, t: u32) -> u32 {
        let index = self.dpu.hot[(t as usize) % MAX_TASKLETS as usize].pc;
        self.dpu.base.wrapping_add(index << 2)
    }

    /// Moves tasklet `t` to the instruction at byte address `addr`; `false` (and nothing
    /// changed) when `addr` is not an instruction of the program.
    pub fn set_pc(&mut self, t: u32, addr: u32) -> bool {
        let off = addr.wrapping_sub(self.dpu.base);
        if t >= self.nr_tasklets() || off & 3 != 0 || (off >> 2) >= self.dpu.len {
            return false;
        }
        self.dpu.hot[t as usize].pc = off >> 2;
        true
    }

    /// Tasklet `t`'s scheduling state.
    pub fn state(&self, t: u32) -> TaskletState {
        let t = (t as usize) % MAX_TASKLETS as usize;
        match self.dpu.state[t] {
            State::Running => TaskletState::Running {
                ready_at: self.dpu.hot[t].ready_at,
            },
            State::Sleeping => TaskletState::Sleeping,
            State::Exited => TaskletState::Exited,
        }
    }

    /// Lowest address of tasklet `t`'s stack (its stack pointer may not go below).
    pub fn stack_low(&self, t: u32) -> u32 {
        self.dpu.stack_lo[(t as usize) % MAX_TASKLETS as usize]
    }

    /// Instructions tasklet `t` has issued so far.
    pub fn issued(&self, t: u32) -> u64 {
        self.dpu.hot[(t as usize) % MAX_TASKLETS as usize].icount
    }

    /// Cycles between two issues of one tasklet (the revolver).
    pub fn revolver_cycles(&self) -> u64 {
        self.dpu.rev
    }

    /// The 256 atomic bits (bit `b` is bit `b % 64` of word `b / 64`).
    pub fn atomic_bits(&self) -> [u64; 4] {
        self.dpu.atomic
    }

    /// Byte address of the first instruction (IRAM base).
    pub fn text_base(&self) -> u32 {
        self.dpu.base
    }

    pub fn wram(&self) -> &[u8] {
        &self.dpu.wram[..]
    }

    pub fn wram_mut(&mut self) -> &mut [u8] {
        &mut self.dpu.wram[..]
    }

    /// The MRAM the run sees.
    pub fn mram(&self) -> &[u8] {
        self.dpu.mram
    }

    pub fn mram_mut(&mut self) -> &mut [u8] {
        self.dpu.mram
    }
}
