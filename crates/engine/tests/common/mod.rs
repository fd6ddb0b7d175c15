//! Helpers shared by the engine's integration tests: a tiny program builder and a runner.
#![allow(dead_code)]

use openpim_engine::probe::{Access, AccessKind, Control, DpuView, Probe, Slot, Space, SyncEvent};
use openpim_engine::{
    map, run, run_probed, BootInfo, DpuMemory, Engine, Fault, Program, RunOutcome, Timing,
};
use openpim_isa::{asm, reg::*};

pub const BASE: u32 = map::IRAM_BASE;
/// Stacks: tasklet i owns [STACKS + i * STACK, STACKS + (i + 1) * STACK).
pub const STACKS: u32 = 0x8000;
pub const STACK: u32 = 0x400;
pub const MRAM_TEST_SIZE: usize = 1 << 20;

/// A program under construction (words at `BASE`, entry = first word).
#[derive(Default, Clone)]
pub struct P(pub Vec<u32>);

impl P {
    pub fn new() -> P {
        P(Vec::new())
    }
    /// Appends one instruction word.
    pub fn i(&mut self, w: u32) -> &mut P {
        self.0.push(w);
        self
    }
    pub fn all(&mut self, ws: &[u32]) -> &mut P {
        self.0.extend_from_slice(ws);
        self
    }
    /// Two-word `li`.
    pub fn li(&mut self, rd: u8, v: u32) -> &mut P {
        self.all(&asm::li(rd, v))
    }
    /// `li a7, nr; ecall` (2 words).
    pub fn sys(&mut self, nr: u32) -> &mut P {
        self.i(asm::addi(A7, ZERO, nr as i32)).i(asm::ecall())
    }
    /// TASKLET_EXIT (2 words).
    pub fn exit(&mut self) -> &mut P {
        self.sys(0)
    }
    /// Byte offset of the next word from the start.
    pub fn here(&self) -> i32 {
        (self.0.len() * 4) as i32
    }
    /// The program decoded WITHOUT issue-slot fusion: every RV32I instruction issues alone,
    /// so the hand-computed cycle counts of the timing tests stay simple. (Fusion has its
    /// own tests in `fusion.rs`, which use [`P::program_fused`].)
    ///
    /// (Translated at once by the translating engine, without waiting for its code to be hot:
    /// the tests' programs are small, and must run as translated code.)
    pub fn program(&self) -> Program {
        Program::decode_with(BASE, &self.bytes(), false).with_translation_threshold(0)
    }
    /// The program decoded as the host runtime does (fusion on), translated at once.
    pub fn program_fused(&self) -> Program {
        Program::decode(BASE, &self.bytes()).with_translation_threshold(0)
    }
    pub fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

pub fn timing() -> Timing {
    Timing {
        revolver_cycles: 11,
        dma_read_alpha: 77,
        dma_write_alpha: 61,
        dma_beta_milli: 500,
        // Integer calls: the shipped profile's costs (crates/engine/src/arith.rs).
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
        max_cycles: Some(50_000_000),
        strict_dma: false,
        engine: Engine::default(),
        strict_sync: false,
    }
}

pub fn boot(nr: u32) -> BootInfo {
    BootInfo {
        entry: BASE,
        nr_tasklets: nr,
        stacks: (0..nr)
            .map(|i| (STACKS + i * STACK, STACKS + (i + 1) * STACK))
            .collect(),
        printf_capacity: 1 << 20,
        init_writes: vec![],
    }
}

/// A DPU's memories plus the last outcome.
pub struct Dpu {
    pub wram: Vec<u8>,
    pub mram: Vec<u8>,
}

impl Dpu {
    pub fn new() -> Dpu {
        Dpu {
            wram: vec![0; map::WRAM_SIZE as usize],
            mram: vec![0; MRAM_TEST_SIZE],
        }
    }
    pub fn run(&mut self, p: &P, boot: &BootInfo, timing: &Timing) -> RunOutcome {
        self.run_program(&p.program(), boot, timing)
    }
    pub fn run_program(
        &mut self,
        program: &Program,
        boot: &BootInfo,
        timing: &Timing,
    ) -> RunOutcome {
        run(
            program,
            boot,
            DpuMemory {
                wram: &mut self.wram,
                mram: &mut self.mram,
            },
            timing,
        )
    }
    pub fn run_probed(
        &mut self,
        program: &Program,
        boot: &BootInfo,
        timing: &Timing,
        probe: &mut dyn Probe,
    ) -> RunOutcome {
        run_probed(
            program,
            boot,
            DpuMemory {
                wram: &mut self.wram,
                mram: &mut self.mram,
            },
            timing,
            None,
            probe,
        )
    }
    pub fn w32(&self, addr: u32) -> u32 {
        let a = addr as usize;
        u32::from_le_bytes(self.wram[a..a + 4].try_into().unwrap())
    }
    pub fn set_w32(&mut self, addr: u32, v: u32) {
        let a = addr as usize;
        self.wram[a..a + 4].copy_from_slice(&v.to_le_bytes());
    }
    pub fn put_str(&mut self, addr: u32, s: &str) {
        let a = addr as usize;
        self.wram[a..a + s.len()].copy_from_slice(s.as_bytes());
        self.wram[a + s.len()] = 0;
    }
}

/// A lock loop on the atomic bit in register `rs` (`mv a0, rs; li a7, call; ecall; beqz a0,
/// back`): the operand set-up issues with the `ecall`; with `ATOMIC_LOCK` (14, the SDK's
/// `mutex_lock`) the branch does too (rule 9), with `ATOMIC_ACQUIRE` (4, a trylock loop) it
/// issues alone.
pub fn lock(p: &mut P, rs: u8, call: u32) {
    let top = p.here();
    p.i(asm::addi(A0, rs, 0));
    p.sys(call);
    p.i(asm::beq(A0, ZERO, top - p.here()));
}

/// `ATOMIC_RELEASE` of the atomic bit in register `rs`.
pub fn unlock(p: &mut P, rs: u8) {
    p.i(asm::addi(A0, rs, 0));
    p.sys(5);
}

/// A placeholder for a forward branch or jump, patched by `fill`.
pub fn hole(p: &mut P) -> usize {
    p.i(0);
    p.0.len() - 1
}

/// Makes the placeholder `at` the instruction `f(offset)`, `offset` leading to the next word.
pub fn fill(p: &mut P, at: usize, f: impl Fn(i32) -> u32) {
    let off = p.here() - 4 * at as i32;
    p.0[at] = f(off);
}

/// Runs `p` with `nr` tasklets and the test timing on fresh memories.
pub fn run_p(p: &P, nr: u32) -> (RunOutcome, Dpu) {
    let mut d = Dpu::new();
    let out = d.run(p, &boot(nr), &timing());
    (out, d)
}

/// Runs `snippet` on one tasklet, then stores x1..x31 to WRAM words 4..128 and exits;
/// returns the register file (x0 read back as stored, i.e. 0).
pub fn regs_after(snippet: &[u32]) -> [u32; 32] {
    let mut p = P::new();
    p.all(snippet);
    for r in 1..32u8 {
        p.i(asm::sw(r, ZERO, 4 * i32::from(r)));
    }
    p.exit();
    let (out, d) = run_p(&p, 1);
    assert_eq!(out.fault, None, "unexpected fault");
    let mut regs = [0u32; 32];
    for (r, v) in regs.iter_mut().enumerate().skip(1) {
        *v = d.w32(4 * r as u32);
    }
    regs
}

// ---------------------------------------------------------------------------------------
// The interpreter's shortcuts change nothing but speed (tests/shortcuts.rs, speculation.rs).

/// Where two memories first differ, for the assertion message.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// Runs `program` on `nr` tasklets with and without shortcuts, both on fresh memories set up by
/// `init`; asserts identical outcomes and memories; returns the outcome and the memories of
/// the run with shortcuts.
pub fn same_init(
    program: &Program,
    nr: u32,
    timing: &Timing,
    init: &dyn Fn(&mut Dpu),
) -> (RunOutcome, Dpu) {
    let mut fast = Dpu::new();
    let mut slow = Dpu::new();
    init(&mut fast);
    init(&mut slow);
    let a = fast.run_program(program, &boot(nr), timing);
    let b = slow.run_program(&program.without_shortcuts(), &boot(nr), timing);
    assert_eq!(
        a, b,
        "outcomes differ ({nr} tasklets, limit {:?})",
        timing.max_cycles
    );
    // The other engine with its shortcuts too: the interpreter's batches, or translated ones.
    let mut other_timing = timing.clone();
    other_timing.engine = match timing.engine {
        Engine::Translator => Engine::Interpreter,
        Engine::Interpreter => Engine::Translator,
    };
    let mut other = Dpu::new();
    init(&mut other);
    let c = other.run_program(program, &boot(nr), &other_timing);
    assert_eq!(
        a, c,
        "outcomes differ between the engines ({nr} tasklets, limit {:?})",
        timing.max_cycles
    );
    if let Some(at) = first_difference(&fast.wram, &other.wram) {
        panic!("WRAM differs between the engines at {at:#x} ({nr} tasklets)");
    }
    // And observed by a probe, which must change nothing and see every slot and DMA.
    let mut probed = Dpu::new();
    init(&mut probed);
    let mut counter = SlotCounter::default();
    let d = probed.run_probed(program, &boot(nr), timing, &mut counter);
    assert_eq!(
        a, d,
        "outcomes differ under a probe ({nr} tasklets, limit {:?})",
        timing.max_cycles
    );
    counter.check(&d);
    if let Some(at) = first_difference(&fast.wram, &probed.wram) {
        panic!("WRAM differs under a probe at {at:#x} ({nr} tasklets)");
    }
    if let Some(at) = first_difference(&fast.mram, &probed.mram) {
        panic!("MRAM differs under a probe at offset {at:#x} ({nr} tasklets)");
    }
    if let Some(at) = first_difference(&fast.mram, &other.mram) {
        panic!("MRAM differs between the engines at offset {at:#x} ({nr} tasklets)");
    }
    if let Some(at) = first_difference(&fast.wram, &slow.wram) {
        panic!(
            "WRAM differs at {at:#x} ({nr} tasklets, limit {:?}): {:#04x} with shortcuts, \
             {:#04x} without",
            timing.max_cycles, fast.wram[at], slow.wram[at]
        );
    }
    if let Some(at) = first_difference(&fast.mram, &slow.mram) {
        panic!(
            "MRAM differs at offset {at:#x} ({nr} tasklets, limit {:?}): {:#04x} with \
             shortcuts, {:#04x} without",
            timing.max_cycles, fast.mram[at], slow.mram[at]
        );
    }
    (a, fast)
}

/// Cuts the run of `program` on `nr` tasklets with a cycle limit at each of `limits` (all
/// before its end), comparing with and without shortcuts each time.
pub fn same_cut(
    program: &Program,
    nr: u32,
    init: &dyn Fn(&mut Dpu),
    limits: impl Iterator<Item = u64>,
) {
    let mut tm = timing();
    for limit in limits {
        tm.max_cycles = Some(limit);
        let (out, _) = same_init(program, nr, &tm, init);
        assert!(
            matches!(
                out.fault.as_ref().map(|f| &f.fault),
                Some(Fault::CycleLimit { .. })
            ),
            "{nr} tasklets, limit {limit}: {:?}",
            out.fault
        );
    }
}

/// About 100 limits spread over a run of `full` cycles, and two odd ones.
pub fn spread(full: u64) -> impl Iterator<Item = u64> {
    let step = (full / 97).max(1);
    (1..full)
        .step_by(step as usize)
        .chain([full - 1, full / 2 + 3])
}

/// A probe that counts what it sees, to check it against the run's outcome: every issue slot
/// once, in increasing cycles, idle cycles between them, every DMA's bytes.
#[derive(Default)]
pub struct SlotCounter {
    pub slots: u64,
    pub owed_slots: u64,
    pub per_tasklet: [u64; 32],
    pub idle: u64,
    pub last_cycle: Option<u64>,
    pub dma_read: u64,
    pub dma_written: u64,
    pub accesses: u64,
    pub syncs: u64,
    pub faults: u64,
    pending: Option<Slot>,
}

impl Probe for SlotCounter {
    fn before_issue(&mut self, dpu: &mut DpuView<'_, '_>, slot: &Slot) -> Control {
        assert_eq!(self.pending, None, "a slot began before the last one ended");
        assert!(
            self.last_cycle.is_none_or(|c| slot.cycle > c),
            "cycles go back"
        );
        assert_eq!(dpu.cycle(), slot.cycle);
        if !slot.owed {
            assert_eq!(
                dpu.pc(slot.tasklet),
                slot.pc,
                "the slot's pc is the tasklet's"
            );
        }
        self.pending = Some(*slot);
        Control::Go
    }
    fn after_issue(&mut self, _dpu: &mut DpuView<'_, '_>, slot: &Slot, ops: u32) {
        assert_eq!(self.pending.take(), Some(*slot));
        assert_eq!(
            ops == 0,
            slot.owed,
            "owed slots and only they execute no op"
        );
        self.slots += 1;
        self.owed_slots += u64::from(slot.owed);
        self.per_tasklet[slot.tasklet as usize] += 1;
        self.last_cycle = Some(slot.cycle);
    }
    fn idle(&mut self, _dpu: &mut DpuView<'_, '_>, from: u64, to: u64) {
        assert!(from < to);
        self.idle += to - from;
    }
    fn access(&mut self, a: &Access) {
        self.accesses += 1;
        if a.kind == AccessKind::Dma && a.space == Space::Mram {
            if a.write {
                self.dma_written += u64::from(a.size);
            } else {
                self.dma_read += u64::from(a.size);
            }
        }
    }
    fn sync(&mut self, _cycle: u64, _t: u32, _pc: u32, _e: &SyncEvent) {
        self.syncs += 1;
    }
    fn fault(&mut self, _dpu: &mut DpuView<'_, '_>, _t: u32, _pc: u32, _f: &Fault) {
        // (The faulting slot does not end and is no instruction; its cycle is the run's last.)
        self.faults += 1;
        self.pending = None;
    }
}

impl SlotCounter {
    /// Checks what the probe saw against the run's outcome.
    pub fn check(&self, out: &RunOutcome) {
        assert_eq!(self.slots, out.instructions, "slots seen vs instructions");
        for (t, s) in out.stats.tasklets.iter().enumerate() {
            assert_eq!(self.per_tasklet[t], s.instructions, "tasklet {t}'s slots");
        }
        let seen = self.slots + self.idle;
        match out.fault.as_ref().map(|f| &f.fault) {
            Some(Fault::CycleLimit { .. }) | Some(Fault::Stopped) => {
                assert!(seen <= out.cycles, "{seen} cycles seen of {}", out.cycles)
            }
            _ => assert_eq!(
                seen + self.faults,
                out.cycles,
                "slots + idle cycles vs cycles"
            ),
        }
        // (Word pairs in MRAM are 8-byte DMAs the probe sees as the loads and stores they are.)
        assert!(self.dma_read <= out.stats.dma_bytes_read);
        assert!(self.dma_written <= out.stats.dma_bytes_written);
    }
}
