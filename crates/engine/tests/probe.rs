//! The observation seam (`openpim_engine::probe`): what a probe sees and may change. That a
//! probe changes nothing else, and sees every slot, idle cycle and DMA, is checked on every
//! program of the other tests (`common::same_init` runs each under `common::SlotCounter`).

mod common;

use common::*;
use openpim_engine::probe::{Control, DpuView, Probe, Slot, SyncEvent};
use openpim_engine::{map, Fault};
use openpim_isa::{asm, reg::*};

/// Each tasklet stores `a0 * 3` at `0x400 + 4 * a0` after a short loop, then exits.
fn store_kernel() -> P {
    let mut p = P::new();
    p.i(asm::addi(T2, ZERO, 20));
    let top = p.here();
    p.i(asm::addi(T2, T2, -1));
    p.i(asm::bne(T2, ZERO, top - p.here()));
    p.i(asm::slli(T0, A0, 1));
    p.i(asm::add(T0, T0, A0));
    p.i(asm::slli(T1, A0, 2));
    p.i(asm::sw(T0, T1, 0x400));
    p.exit();
    p
}

/// Holds tasklet `held` back until cycle `until`; counts the slots and idle cycles it sees.
struct Holder {
    held: u32,
    until: u64,
    holds: u64,
    slots: u64,
    idle: u64,
}

impl Probe for Holder {
    fn before_issue(&mut self, _dpu: &mut DpuView<'_, '_>, slot: &Slot) -> Control {
        if slot.tasklet == self.held && slot.cycle < self.until {
            self.holds += 1;
            Control::Hold
        } else {
            Control::Go
        }
    }
    fn after_issue(&mut self, _dpu: &mut DpuView<'_, '_>, _slot: &Slot, _ops: u32) {
        self.slots += 1;
    }
    fn idle(&mut self, _dpu: &mut DpuView<'_, '_>, from: u64, to: u64) {
        self.idle += to - from;
    }
}

#[test]
fn a_held_tasklet_issues_later_and_computes_the_same() {
    let p = store_kernel();
    let (plain, plain_mem) = run_p(&p, 4);
    let mut d = Dpu::new();
    let mut holder = Holder {
        held: 1,
        until: 500,
        holds: 0,
        slots: 0,
        idle: 0,
    };
    let held = d.run_probed(&p.program(), &boot(4), &timing(), &mut holder);
    assert_eq!(held.fault, None);
    // Held cycles are idle cycles: slots and idle cycles still make the run's cycles.
    assert_eq!(holder.slots + holder.idle, held.cycles);
    assert!(holder.holds > 0);
    assert_eq!(d.wram, plain_mem.wram, "holding a tasklet changed results");
    assert_eq!(held.instructions, plain.instructions);
    assert!(held.stats.tasklets[1].end_cycle >= 500);
    assert!(held.cycles > plain.cycles);
}

/// Sets tasklet 2's `a0` to 7 before its first slot.
struct Writer;

impl Probe for Writer {
    fn before_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot) -> Control {
        if slot.tasklet == 2 && dpu.issued(2) == 0 {
            assert_eq!(dpu.reg(2, u32::from(A0)), 2);
            assert!(dpu.set_reg(2, u32::from(A0), 7));
            assert!(!dpu.set_reg(2, 32, 0), "register 32 does not exist");
            assert!(!dpu.set_pc(2, 3), "a pc outside the program");
        }
        Control::Go
    }
}

#[test]
fn a_probe_writes_registers() {
    let mut d = Dpu::new();
    let out = d.run_probed(&store_kernel().program(), &boot(4), &timing(), &mut Writer);
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x400 + 4 * 7), 21, "tasklet 2 computed with a0 = 7");
    assert_eq!(d.w32(0x400 + 4 * 2), 0);
    assert_eq!(d.w32(0x400 + 4), 3);
}

#[derive(Default)]
struct SyncLog {
    events: Vec<(u32, SyncEvent)>,
    fault: Option<(u32, u32, u32)>,
}

impl Probe for SyncLog {
    fn sync(&mut self, _cycle: u64, t: u32, _pc: u32, e: &SyncEvent) {
        self.events.push((t, *e));
    }
    fn fault(&mut self, dpu: &mut DpuView<'_, '_>, t: u32, pc: u32, _f: &Fault) {
        self.fault = Some((t, pc, dpu.reg(t, u32::from(S1))));
    }
}

#[test]
fn locks_sleeps_resumes_and_exits_are_seen() {
    // Tasklet 0 sleeps; tasklet 1 takes bit 9, releases it, resumes tasklet 0 and exits.
    let mut p = P::new();
    let t1 = hole(&mut p);
    p.sys(openpim_engine::ecall::SLEEP);
    p.exit();
    fill(&mut p, t1, |off| asm::bne(A0, ZERO, off));
    p.i(asm::addi(S0, ZERO, 9));
    lock(&mut p, S0, 14);
    unlock(&mut p, S0);
    p.i(asm::addi(A0, ZERO, 0));
    p.sys(openpim_engine::ecall::RESUME);
    p.exit();
    let mut log = SyncLog::default();
    let mut d = Dpu::new();
    let out = d.run_probed(&p.program(), &boot(2), &timing(), &mut log);
    assert_eq!(out.fault, None);
    let ev = &log.events;
    assert!(
        ev.contains(&(0, SyncEvent::Sleep { slept: true })),
        "{ev:?}"
    );
    let acquire = SyncEvent::Acquire {
        bit: 9,
        acquired: true,
    };
    let at = |e: (u32, SyncEvent)| ev.iter().position(|x| *x == e).expect("event seen");
    let resume = SyncEvent::Resume {
        target: 0,
        woke: true,
    };
    assert!(at((1, acquire)) < at((1, SyncEvent::Release { bit: 9 })));
    assert!(at((1, SyncEvent::Release { bit: 9 })) < at((1, resume)));
    assert_eq!(ev.iter().filter(|e| e.1 == SyncEvent::Exit).count(), 2);
}

#[test]
fn the_fault_is_seen_with_the_machine_state() {
    let mut p = P::new();
    p.i(asm::addi(S1, ZERO, 77));
    p.all(&asm::li(T0, map::WRAM_SIZE + 0x100)); // neither WRAM nor MRAM
    p.i(asm::lw(T1, T0, 0));
    p.exit();
    let mut log = SyncLog::default();
    let mut d = Dpu::new();
    let out = d.run_probed(&p.program(), &boot(1), &timing(), &mut log);
    let f = out.fault.expect("the load faults");
    assert_eq!(log.fault, Some((0, f.pc, 77)));
}
