//! The interpreter of one DPU: tasklet scheduler (revolver), hot loop, memory access, DMA
//! engine and environment calls. Timing conventions are in the crate documentation.
//!
//! Structure: [`Dpu::run_loop`] is the only hot code. It picks the tasklet to issue (the one
//! after the last issuer is nearly always ready when 11 or more tasklets run), branches once
//! on the pre-decoded op, and updates the tasklet's pc and next-issue cycle. Everything
//! rare — MRAM or misaligned accesses, environment calls, the generic checked path, faults —
//! is in `#[cold]` functions. The frequent environment calls (DMA, atomic bits) are decoded
//! inline (`Dpu::ecall_hot`).
//!
//! Shortcuts (speed only; `Program::without_shortcuts` turns them off, and the engine's
//! `shortcuts` tests check that the outcomes are identical, docs/performance.md):
//! - *Passive slots*: slots that execute no op when they issue are counted without a
//!   dispatch: the `*_slots` of an arithmetic call, slots executed ahead (below), and the
//!   slots of a tasklet spinning on an atomic bit another tasklet holds (`Spin`: a lock loop
//!   `while (!acquire(bit));` whose acquire failed repeats identically until the bit is
//!   released).
//! - *Executing ahead* (`Dpu::run_ahead`): when other tasklets issue passive slots, a tasklet's
//!   next slots that only touch its own registers (ALU ops, branches, jumps, calls, the
//!   arithmetic calls; `Program::ahead`) run in a batch, and become passive slots it owes
//!   (`OwedLog`). Interleaving unrelated tasklets one slot at a time defeats the host's branch
//!   predictor; a batch of one tasklet's code does not.
//! - *Blocked tasklets*: picking the next issuer when the one after the last issuer is not
//!   ready skips the tasklets waiting for their DMA, asleep or exited (`Dpu::select`).
//! - *Epochs* (`epoch`): the tasklets' code runs ahead of its issue in batches, one tasklet
//!   at a time, while the revolver only counts issue slots (in bulk where the same tasklets
//!   issue in turn); a slot other tasklets could observe (a DMA, an atomic bit, another
//!   environment call, an MRAM access) is handed back here and executed at its cycle, WRAM the
//!   batches share is tracked per 8-byte granule, and batches that conflict are rolled back.

use crate::decode::{fuse, Op, Program};
use crate::map::{ATOMIC_BASE, ATOMIC_BITS, MAX_TASKLETS, MRAM_BASE, MRAM_SIZE, WRAM_SIZE};
use crate::probe::{
    Access, AccessKind, Control, DpuView, Probe, Slot, Space as ProbeSpace, SyncEvent,
};
use crate::{arith, ecall, printf, BootInfo, DpuMemory, Fault, FaultReport, RunOutcome, RunStats};
use crate::{DmaQuirk, DmaQuirkKind, TaskletStats, Timing, WaitingTasklets};
use openpim_isa::{decode as isa_decode, reg, Insn};

mod epoch;
pub(crate) use epoch::translated_access;
pub(crate) mod view;

const WS: usize = WRAM_SIZE as usize;
const MAXT: usize = MAX_TASKLETS as usize;
/// Largest DMA transfer (bytes).
/// How many tolerated-DMA records a run keeps (the count in `RunStats` has them all).
const DMA_QUIRKS_KEPT: usize = 8;

/// A DMA request as the engine performs it.
struct DmaRequest {
    /// WRAM address, 8-byte aligned.
    wram: u32,
    /// Offset into MRAM, 8-byte aligned.
    mram_offset: u32,
    /// Bytes moved.
    size: u32,
}

/// The bytes a DMA instruction moves when asked for `n`: its length field holds
/// `(n >> 3) - 1` in 8 bits, so `n` = 0 or 1..7 moves 2,048 bytes, 12 moves 8, 4,096 moves
/// 2,048 and 2,056 moves 8 (DPU-TIMING-FACTS, "DMA length and addresses").
pub(crate) fn dma_encoded_length(n: u32) -> u32 {
    let field = (n >> 3).wrapping_sub(1) & 0xff;
    (field + 1) * 8
}

/// Per-tasklet state touched by every issue, kept together.
#[derive(Clone, Copy, Default)]
struct Hot {
    /// Earliest cycle of the next issue (`u64::MAX`: asleep or exited).
    ready_at: u64,
    /// Instructions issued.
    icount: u64,
    /// Op index of the next instruction.
    pc: u32,
}

/// A tasklet spinning in an acquire loop (`decode::mark_spin_loops`) on the `Spin` sentinel.
#[derive(Clone, Copy, Default)]
struct Spin {
    /// Op index of the loop's first op (its slot: ops `start..=ecall`).
    start: u32,
    /// Op index of the loop's `ecall` (the branch back is at `ecall + 1`).
    ecall: u32,
    /// The atomic bit the loop acquires (0..256).
    bit: u8,
    /// The loop is the SDK's lock (rule 9): its branch back issues with the acquire, and
    /// every slot is an acquire.
    lock: bool,
    /// The next slot is the loop's ops and acquire (else: the branch back).
    acquire_next: bool,
}

/// Most runs in a tasklet's batch of owed slots (`OwedLog`).
const OWED: usize = 32;

/// The batch of issue slots a tasklet owes (`Dpu::owed`), as runs in issue order: the slots of
/// an arithmetic call (the call issues, then its `*_slots`) and the slots it has executed ahead
/// of their issue (see `Dpu::run_ahead`). Run `i` is `counts[i]` slots, to be reported at op
/// `pcs[i]`, the first of which issues `fused[i]` ops besides its first. The fused pairs of a
/// batch are counted when it is queued, those of slots that never issue taken back at the end
/// (`Dpu::unissued`).
#[derive(Clone, Copy)]
struct OwedLog {
    pcs: [u32; OWED],
    counts: [u32; OWED],
    fused: [u32; OWED],
    len: usize,
    /// Slots of the batch.
    total: u64,
}

impl OwedLog {
    const EMPTY: OwedLog = OwedLog {
        pcs: [0; OWED],
        counts: [0; OWED],
        fused: [0; OWED],
        len: 0,
        total: 0,
    };
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Running,
    Sleeping,
    Exited,
}

/// How a run ended (before statistics are gathered).
enum End {
    AllExited,
    Halted,
    /// Every tasklet that has not exited sleeps and none can wake them (mask of the sleepers):
    /// the DPU stops issuing and the launch ends, as on the hardware (`Timing::strict_sync`
    /// makes it a `Deadlock` fault instead).
    AllWaiting {
        sleeping: u32,
    },
    Fault {
        tasklet: usize,
        pc_index: u32,
        fault: Fault,
    },
}

/// What an environment call asks the loop to do next.
enum Flow {
    /// Continue at the next instruction; the tasklet issues again no earlier than `wait`.
    Next { wait: u64 },
    /// Continue at op index `npc`.
    Jump { npc: u32 },
    /// Stop the DPU.
    Halt,
}

struct Dpu<'a> {
    regs: [[u32; 32]; MAXT],
    hot: [Hot; MAXT],
    ops: &'a [Op],
    base: u32,
    /// Number of program instructions (ops past them are sentinels).
    len: u32,
    stall_index: u32,
    spin_index: u32,
    wram: &'a mut [u8; WS],
    mram: &'a mut [u8],
    timing: &'a Timing,
    /// Asked every `STOP_CHECK_CYCLES` whether to stop the run (`run_stoppable`).
    stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    nr: usize,
    rev: u64,
    state: [State; MAXT],
    stack_lo: [u32; MAXT],
    pending_wake: [bool; MAXT],
    sleep_since: [u64; MAXT],
    stall_left: [u32; MAXT],
    stall_ret: [u32; MAXT],
    spin: [Spin; MAXT],
    /// Tasklets on the `Spin` sentinel whose atomic bit is set (bit `t` for tasklet `t`):
    /// every slot they issue is a pure spin slot until that bit is released.
    held_spin: u32,
    /// Tasklets waiting longer than the revolver (for their DMA, asleep, exited): `select`
    /// skips them until `blocked_min`, the earliest of their `Hot::ready_at`.
    blocked: u32,
    blocked_min: u64,
    /// Issue slots each tasklet owes: slots that execute no op when they issue (see
    /// `OwedLog`).
    owed: [u64; MAXT],
    owed_log: [OwedLog; MAXT],
    /// Tasklets with a non-empty `owed` queue.
    owing: u32,
    /// `held_spin | owing`: the tasklets whose next slot executes no op.
    passive: u32,
    /// Per op, whether the slot starting at it may execute ahead (`Program::ahead`).
    ahead: &'a [u16],
    /// `Program::shortcuts`: `select` may skip the `blocked` tasklets.
    shortcuts: bool,
    stats: [TaskletStats; MAXT],
    dma_busy_until: u64,
    atomic: [u64; 4],
    perf_mode: u32,
    perf_base_cycles: u64,
    perf_base_instr: u64,
    printf_used: u64,
    printf_capacity: u32,
    /// The printf output went round the ring buffer (`ecall::PRINTF`).
    log_wrapped: bool,
    log: Vec<u8>,
    run_stats: RunStats,
    /// Cycle at which the run ended.
    end_cycle: u64,
    /// The first DMA requests the hardware tolerates but that are almost certainly bugs.
    dma_quirks: Vec<DmaQuirk>,
    /// Set while the second access of a fused MRAM word pair executes: the pair is one
    /// 8-byte DMA, booked by the first access (consumed by `load_slow` / `store_slow`).
    pair_second: bool,
    /// The tasklets' code run ahead of its issue in batches (`epoch`).
    epochs: epoch::Epochs<'a>,
    /// The observer of a probed run (`crate::probe`; then the program has no shortcuts).
    probe: Option<&'a mut (dyn Probe + 'a)>,
    /// Probed runs: the cycle after the last slot the probe saw (cycles before the next slot
    /// are idle) and the op index executing (for the accesses it makes).
    probe_next: u64,
    probe_op: u32,
}

/// The byte address of op `index` of a program at `base`: a jump's link. Out of line on
/// purpose: inlined, the compiler carried it from op to op beside the op index in the
/// interpreter loops, and the batch loop then kept its slot count on the stack (alu 11-27 %
/// slower, docs/performance.md).
#[inline(never)]
fn op_address(base: u32, index: u32) -> u32 {
    base.wrapping_add(index << 2)
}

fn bad_boot(reason: String) -> RunOutcome {
    RunOutcome {
        fault: Some(FaultReport {
            tasklet: 0,
            pc: 0,
            fault: Fault::BadBoot { reason },
        }),
        ..RunOutcome::default()
    }
}

pub(crate) fn run<'a>(
    program: &'a Program,
    boot: &BootInfo,
    mem: DpuMemory<'a>,
    timing: &'a Timing,
    stop: Option<&'a (dyn Fn() -> bool + Sync)>,
    probe: Option<&'a mut (dyn Probe + 'a)>,
) -> RunOutcome {
    debug_assert!(
        probe.is_none() || !program.shortcuts,
        "probed runs have no shortcuts"
    );
    let nr = boot.nr_tasklets as usize;
    if nr == 0 || nr > MAXT {
        return bad_boot(format!("nr_tasklets = {nr}, must be 1..={MAXT}"));
    }
    if boot.stacks.len() < nr {
        return bad_boot(format!(
            "{} stacks given for {nr} tasklets",
            boot.stacks.len()
        ));
    }
    let wram_len = mem.wram.len();
    let Some(wram) = mem
        .wram
        .get_mut(..WS)
        .and_then(|s| <&mut [u8; WS]>::try_from(s).ok())
    else {
        return bad_boot(format!("WRAM slice has {wram_len} bytes, needs {WS}"));
    };
    let mram_len = mem.mram.len().min(MRAM_SIZE as usize);
    let mram = &mut mem.mram[..mram_len];
    for &(addr, value) in &boot.init_writes {
        if addr & 3 != 0 || addr > WRAM_SIZE - 4 {
            return bad_boot(format!(
                "init write at {addr:#x} is not an aligned WRAM word"
            ));
        }
        wram[addr as usize..addr as usize + 4].copy_from_slice(&value.to_le_bytes());
    }

    let mut dpu = Box::new(Dpu {
        ops: &program.ops,
        base: program.text_base(),
        len: program.len() as u32,
        stall_index: program.sentinel_stall(),
        spin_index: program.sentinel_spin(),
        wram,
        mram,
        timing,
        stop,
        nr,
        rev: u64::from(timing.revolver_cycles.max(1)),
        regs: [[0; 32]; MAXT],
        hot: [Hot::default(); MAXT],
        state: [State::Exited; MAXT],
        stack_lo: [0; MAXT],
        pending_wake: [false; MAXT],
        sleep_since: [0; MAXT],
        stall_left: [0; MAXT],
        stall_ret: [0; MAXT],
        spin: [Spin::default(); MAXT],
        held_spin: 0,
        blocked: 0,
        blocked_min: u64::MAX,
        owed: [0; MAXT],
        owed_log: [OwedLog::EMPTY; MAXT],
        owing: 0,
        passive: 0,
        ahead: &program.ahead,
        shortcuts: program.shortcuts,
        stats: Default::default(),
        dma_busy_until: 0,
        atomic: [0; 4],
        perf_mode: ecall::PERF_CYCLES,
        perf_base_cycles: 0,
        perf_base_instr: 0,
        printf_used: 0,
        printf_capacity: boot.printf_capacity,
        log_wrapped: false,
        log: Vec::new(),
        run_stats: RunStats::default(),
        end_cycle: 0,
        dma_quirks: Vec::new(),
        pair_second: false,
        epochs: epoch::Epochs::new(),
        probe,
        probe_next: 0,
        probe_op: 0,
    });
    // (A probed run has no shortcuts, hence no translated code: the interpreter runs it.)
    dpu.epochs.engine_use.engine = if dpu.probe.is_some() {
        crate::Engine::Interpreter
    } else {
        timing.engine.effective()
    };
    if dpu.epochs.engine_use.engine == crate::Engine::Translator && program.shortcuts {
        dpu.epochs.translation = Some(
            program
                .translation
                .get(program.ops.len(), program.hot_slots),
        );
    }

    let end = match program.index_of(boot.entry) {
        None => {
            dpu.end_cycle = 0;
            End::Fault {
                tasklet: 0,
                pc_index: u32::MAX,
                fault: Fault::IramOutOfRange { addr: boot.entry },
            }
        }
        Some(entry) => {
            for t in 0..nr {
                let (lo, hi) = boot.stacks[t];
                dpu.regs[t][reg::SP as usize] = hi;
                dpu.regs[t][reg::TP as usize] = t as u32;
                dpu.regs[t][reg::A0 as usize] = t as u32;
                dpu.stack_lo[t] = lo;
                dpu.state[t] = State::Running;
                dpu.hot[t] = Hot {
                    ready_at: 0,
                    icount: 0,
                    pc: entry,
                };
            }
            for t in nr..MAXT {
                dpu.hot[t].ready_at = u64::MAX;
            }
            let end = if dpu.probe.is_some() {
                dpu.run_loop::<true>()
            } else {
                dpu.run_loop::<false>()
            };
            // (An epoch under way leaves no slot executed ahead of its issue.)
            dpu.epoch_abort();
            end
        }
    };
    dpu.finish(end, program)
}

#[inline(always)]
fn rd_u32(w: &[u8; WS], a: u32) -> u32 {
    let a = (a as usize) & (WS - 4);
    u32::from_le_bytes([w[a], w[a + 1], w[a + 2], w[a + 3]])
}

#[inline(always)]
fn rd_u16(w: &[u8; WS], a: u32) -> u16 {
    let a = (a as usize) & (WS - 2);
    u16::from_le_bytes([w[a], w[a + 1]])
}

#[inline(always)]
fn wr_u32(w: &mut [u8; WS], a: u32, v: u32) {
    let a = (a as usize) & (WS - 4);
    w[a..a + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline(always)]
fn wr_u16(w: &mut [u8; WS], a: u32, v: u16) {
    let a = (a as usize) & (WS - 2);
    w[a..a + 2].copy_from_slice(&v.to_le_bytes());
}

/// Where a data address lands.
enum Space {
    Wram(usize),
    Mram(usize),
}

impl<'a> Dpu<'a> {
    /// The interpreter loop. Returns how the run ended; `self.end_cycle` is set. `PROBED`:
    /// the run has a probe, called at every slot, access and fault (`crate::probe`).
    fn run_loop<const PROBED: bool>(&mut self) -> End {
        let ops = self.ops;
        let nr = self.nr;
        let rev = self.rev;
        let limit = self.timing.max_cycles.unwrap_or(u64::MAX);
        let every = crate::STOP_CHECK_CYCLES;
        // One comparison per slot: the first of the cycle limit, the next question to `stop`
        // (the first one at the start: a DPU of a stopped launch that has not started yet
        // stops at once) and the next attempt at an epoch (`epoch`).
        let mut stop_at = if self.stop.is_some() { 0 } else { u64::MAX };
        let mut epoch_at = if self.shortcuts { 0 } else { u64::MAX };
        let mut check_at = limit.min(stop_at).min(epoch_at);
        let mut now: u64 = 0;
        let mut t: usize = nr - 1;
        macro_rules! fault {
            ($pc:expr, $f:expr) => {{
                let fault = $f;
                if PROBED {
                    self.probe_fault(t, $pc, now, &fault);
                }
                self.end_cycle = now + 1;
                return End::Fault {
                    tasklet: t,
                    pc_index: $pc,
                    fault,
                };
            }};
        }
        loop {
            // Pick the tasklet: the one after the last issuer if it is ready (the common case
            // with >= revolver_cycles tasklets), else scan / jump the clock.
            let mut next = t + 1;
            if next >= nr {
                next = 0;
            }
            if self.hot[next].ready_at > now {
                match self.select(now, t) {
                    Some((n, at)) => {
                        next = n;
                        now = at;
                    }
                    None => {
                        self.end_cycle = now;
                        return self.no_ready_tasklet();
                    }
                }
            }
            t = next;
            if now >= check_at {
                if now >= epoch_at {
                    // Slots counted in bulk while the tasklets' code runs ahead in batches
                    // (`epoch`), from `t`'s turn (it is ready now): the interpreter goes on
                    // where the epoch ends, or executes the one slot it hands over (an event)
                    // and the epoch goes on at the next cycle. Before the cycle limit and the
                    // stop request: an epoch ends before either.
                    match self.try_epoch(now, (t + 31) % 32, limit.min(stop_at)) {
                        Some((at, last)) => {
                            now = at;
                            t = last;
                            epoch_at = now
                                + if self.epochs.active {
                                    1
                                } else {
                                    u64::from(self.epochs.wait)
                                };
                            check_at = limit.min(stop_at).min(epoch_at);
                            continue;
                        }
                        None => epoch_at = now + u64::from(self.epochs.wait),
                    }
                }
                if now >= limit {
                    self.end_cycle = now;
                    return End::Fault {
                        tasklet: t,
                        pc_index: self.report_index(t),
                        fault: Fault::CycleLimit { limit },
                    };
                }
                if now >= stop_at {
                    if self.stop.is_some_and(|stop| stop()) {
                        self.end_cycle = now;
                        return End::Fault {
                            tasklet: t,
                            pc_index: self.report_index(t),
                            fault: Fault::Stopped,
                        };
                    }
                    stop_at = now.saturating_add(every);
                }
                check_at = limit.min(stop_at).min(epoch_at);
            }
            // The probe sees the slot before it issues, and may hold it back.
            let mut probe_slot = None;
            if PROBED {
                let (control, slot) = self.probe_before(t, now);
                if control == Control::Hold {
                    self.hot[t].ready_at = now + 1;
                    now += 1;
                    continue;
                }
                probe_slot = Some(slot);
            }
            // One issue slot: one op, or the ops of a fused group, each executed in turn (the
            // earliest next issue `wait` is the latest any of them asks for).
            let passive = self.passive;
            if passive != 0 {
                let bit = 1 << t;
                if passive & bit == 0
                    && self.ahead[self.hot[t].pc as usize] & crate::decode::ahead::WORTH != 0
                {
                    // Slots made only of register operations are executed ahead, in a batch,
                    // when other tasklets issue slots without ops (their interleaving is what
                    // makes executing one slot at a time slow; see `run_ahead`).
                    self.run_ahead(t);
                }
                if self.passive & bit != 0 {
                    self.passive_slot(t);
                    let h = &mut self.hot[t];
                    h.ready_at = now + rev;
                    h.icount += 1;
                    if let Some(slot) = probe_slot {
                        self.probe_after(t, now, &slot, 0);
                    }
                    now += 1;
                    continue;
                }
            }
            let mut pc = self.hot[t].pc;
            let mut wait: u64 = 0;
            let mut probe_ops = 0u32;
            loop {
                debug_assert!((pc as usize) < ops.len());
                if PROBED {
                    probe_ops += 1;
                    self.probe_op = pc;
                }
                // SAFETY: `pc` is always a valid index into `ops` (`ops.len()` = program length
                // + 3). It is only ever set to: the entry (checked by `index_of`); a decoded
                // branch/jal target (checked `< len` in `decode`); a `jump_index` result (checked
                // `< len`); `pc + 1` of a program instruction (`<= len`, the `FellOff` sentinel,
                // which faults instead of advancing); the `Stall` sentinel (`len + 1`, which only
                // stays put or returns to a saved `pc + 1 <= len`); the `Spin` sentinel
                // (`len + 2`, which only stays put or goes to a loop start `< len`).
                let op = unsafe { *ops.get_unchecked(pc as usize) };
                let mut npc = pc + 1;
                let r = &mut self.regs[t];
                macro_rules! x {
                    ($i:expr) => {
                        r[($i & 31) as usize]
                    };
                }
                // The first op of a fused pair carries the pair's kind in bits 5..7 of a register
                // field (`decode::mark_fused`; register numbers are always masked with 31). When
                // it is set, the next op executes in this same issue: the same tasklet continues
                // at the same cycle, without tasklet selection and without a clock tick. (Only
                // word accesses carry the word-pair kinds, checked in their arms.)
                macro_rules! fuse_next {
                    ($field:expr) => {
                        if $field >> 5 == fuse::ALWAYS {
                            self.run_stats.fused_pairs += 1;
                            pc = npc;
                            continue;
                        }
                    };
                }
                macro_rules! pair_next {
                    ($field:expr, $rs1:expr, $imm:expr) => {
                        let kind = $field >> 5;
                        if kind != fuse::NONE
                            && (kind == fuse::ALWAYS || self.pair_fuses(t, $rs1, $imm, kind))
                        {
                            self.run_stats.fused_pairs += 1;
                            pc = npc;
                            continue;
                        }
                    };
                }
                macro_rules! set {
                    ($rd:expr, $v:expr) => {{
                        x!($rd) = $v;
                        fuse_next!($rd);
                    }};
                }
                match op {
                    Op::Nop => {}
                    Op::Li { rd, imm } => set!(rd, imm),
                    Op::Addi { rd, rs1, imm } => set!(rd, x!(rs1).wrapping_add(imm as u32)),
                    Op::AddiSp { imm } => {
                        let sp = r[2].wrapping_add(imm as u32);
                        if sp < self.stack_lo[t] {
                            let stack_lo = self.stack_lo[t];
                            fault!(pc, Fault::StackOverflow { sp, stack_lo });
                        }
                        r[2] = sp;
                    }
                    Op::Slti { rd, rs1, imm } => set!(rd, ((x!(rs1) as i32) < imm) as u32),
                    Op::Sltiu { rd, rs1, imm } => set!(rd, (x!(rs1) < imm as u32) as u32),
                    Op::Xori { rd, rs1, imm } => set!(rd, x!(rs1) ^ imm as u32),
                    Op::Ori { rd, rs1, imm } => set!(rd, x!(rs1) | imm as u32),
                    Op::Andi { rd, rs1, imm } => set!(rd, x!(rs1) & imm as u32),
                    Op::Slli { rd, rs1, sh } => set!(rd, x!(rs1) << (sh & 31)),
                    Op::Srli { rd, rs1, sh } => set!(rd, x!(rs1) >> (sh & 31)),
                    Op::Srai { rd, rs1, sh } => set!(rd, ((x!(rs1) as i32) >> (sh & 31)) as u32),
                    Op::Add { rd, rs1, rs2 } => set!(rd, x!(rs1).wrapping_add(x!(rs2))),
                    Op::Sub { rd, rs1, rs2 } => set!(rd, x!(rs1).wrapping_sub(x!(rs2))),
                    Op::Sll { rd, rs1, rs2 } => set!(rd, x!(rs1) << (x!(rs2) & 31)),
                    Op::Slt { rd, rs1, rs2 } => {
                        set!(rd, ((x!(rs1) as i32) < (x!(rs2) as i32)) as u32)
                    }
                    Op::Sltu { rd, rs1, rs2 } => set!(rd, (x!(rs1) < x!(rs2)) as u32),
                    Op::Xor { rd, rs1, rs2 } => set!(rd, x!(rs1) ^ x!(rs2)),
                    Op::Srl { rd, rs1, rs2 } => set!(rd, x!(rs1) >> (x!(rs2) & 31)),
                    Op::Sra { rd, rs1, rs2 } => {
                        set!(rd, ((x!(rs1) as i32) >> (x!(rs2) & 31)) as u32)
                    }
                    Op::Or { rd, rs1, rs2 } => set!(rd, x!(rs1) | x!(rs2)),
                    Op::And { rd, rs1, rs2 } => set!(rd, x!(rs1) & x!(rs2)),
                    Op::Lw { rd, rs1, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        if a <= WRAM_SIZE - 4 && a & 3 == 0 {
                            x!(rd) = rd_u32(self.wram, a);
                            if PROBED {
                                self.probe_access(t, now, a, 4, false, AccessKind::Op);
                            }
                        } else {
                            match self.load_slow(t, a, 4, now) {
                                Ok((v, w)) => {
                                    self.regs[t][(rd & 31) as usize] = v;
                                    wait = wait.max(w);
                                }
                                Err(f) => fault!(pc, f),
                            }
                        }
                        pair_next!(rd, rs1, imm);
                    }
                    Op::Lh { rd, rs1, imm } | Op::Lhu { rd, rs1, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        let signed = matches!(op, Op::Lh { .. });
                        let v = if a <= WRAM_SIZE - 2 && a & 1 == 0 {
                            if PROBED {
                                self.probe_access(t, now, a, 2, false, AccessKind::Op);
                            }
                            u32::from(rd_u16(self.wram, a))
                        } else {
                            match self.load_slow(t, a, 2, now) {
                                Ok((v, w)) => {
                                    wait = wait.max(w);
                                    v
                                }
                                Err(f) => fault!(pc, f),
                            }
                        };
                        self.regs[t][(rd & 31) as usize] = if signed {
                            v as u16 as i16 as i32 as u32
                        } else {
                            v
                        };
                    }
                    Op::Lb { rd, rs1, imm } | Op::Lbu { rd, rs1, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        let signed = matches!(op, Op::Lb { .. });
                        let v = if a < WRAM_SIZE {
                            if PROBED {
                                self.probe_access(t, now, a, 1, false, AccessKind::Op);
                            }
                            u32::from(self.wram[(a as usize) & (WS - 1)])
                        } else {
                            match self.load_slow(t, a, 1, now) {
                                Ok((v, w)) => {
                                    wait = wait.max(w);
                                    v
                                }
                                Err(f) => fault!(pc, f),
                            }
                        };
                        self.regs[t][(rd & 31) as usize] = if signed {
                            v as u8 as i8 as i32 as u32
                        } else {
                            v
                        };
                    }
                    Op::Sw { rs1, rs2, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        let v = x!(rs2);
                        if a <= WRAM_SIZE - 4 && a & 3 == 0 {
                            wr_u32(self.wram, a, v);
                            if PROBED {
                                self.probe_access(t, now, a, 4, true, AccessKind::Op);
                            }
                        } else {
                            match self.store_slow(t, a, 4, v, now) {
                                Ok(w) => wait = wait.max(w),
                                Err(f) => fault!(pc, f),
                            }
                        }
                        pair_next!(rs2, rs1, imm);
                    }
                    Op::Sh { rs1, rs2, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        let v = x!(rs2);
                        if a <= WRAM_SIZE - 2 && a & 1 == 0 {
                            wr_u16(self.wram, a, v as u16);
                            if PROBED {
                                self.probe_access(t, now, a, 2, true, AccessKind::Op);
                            }
                        } else {
                            match self.store_slow(t, a, 2, v, now) {
                                Ok(w) => wait = wait.max(w),
                                Err(f) => fault!(pc, f),
                            }
                        }
                    }
                    Op::Sb { rs1, rs2, imm } => {
                        let a = x!(rs1).wrapping_add(imm as u32);
                        let v = x!(rs2);
                        if a < WRAM_SIZE {
                            self.wram[(a as usize) & (WS - 1)] = v as u8;
                            if PROBED {
                                self.probe_access(t, now, a, 1, true, AccessKind::Op);
                            }
                        } else {
                            match self.store_slow(t, a, 1, v, now) {
                                Ok(w) => wait = wait.max(w),
                                Err(f) => fault!(pc, f),
                            }
                        }
                    }
                    Op::Beq { rs1, rs2, target } => {
                        if x!(rs1) == x!(rs2) {
                            npc = target
                        }
                    }
                    Op::Bne { rs1, rs2, target } => {
                        if x!(rs1) != x!(rs2) {
                            npc = target
                        }
                    }
                    Op::Blt { rs1, rs2, target } => {
                        if (x!(rs1) as i32) < (x!(rs2) as i32) {
                            npc = target
                        }
                    }
                    Op::Bge { rs1, rs2, target } => {
                        if (x!(rs1) as i32) >= (x!(rs2) as i32) {
                            npc = target
                        }
                    }
                    Op::Bltu { rs1, rs2, target } => {
                        if x!(rs1) < x!(rs2) {
                            npc = target
                        }
                    }
                    Op::Bgeu { rs1, rs2, target } => {
                        if x!(rs1) >= x!(rs2) {
                            npc = target
                        }
                    }
                    Op::Jal { rd, target } => {
                        x!(rd) = op_address(self.base, npc);
                        npc = target;
                    }
                    Op::J { target } => npc = target,
                    Op::Jalr { rd, rs1, imm } => {
                        let dest = x!(rs1).wrapping_add(imm as u32) & !1;
                        x!(rd) = op_address(self.base, npc);
                        match self.jump_index(dest) {
                            Ok(i) => npc = i,
                            Err(f) => fault!(pc, f),
                        }
                    }
                    Op::Jr { rs1, imm } => {
                        let dest = x!(rs1).wrapping_add(imm as u32) & !1;
                        match self.jump_index(dest) {
                            Ok(i) => npc = i,
                            Err(f) => fault!(pc, f),
                        }
                    }
                    // (Not reached: the slots of an arithmetic call are owed instead.)
                    Op::Stall => {
                        let left = &mut self.stall_left[t];
                        *left = left.saturating_sub(1);
                        npc = if *left == 0 { self.stall_ret[t] } else { pc };
                    }
                    Op::Ecall | Op::EcallSpin { .. } => {
                        let (call, bit) = (r[reg::A7 as usize], r[reg::A0 as usize]);
                        match self.ecall_hot(t, pc, now) {
                            Ok(Flow::Next { wait: w }) => wait = wait.max(w),
                            Ok(Flow::Jump { npc: n }) => {
                                npc = n;
                                if n == self.stall_index {
                                    // The call's issue slots: owed, then the next instruction.
                                    self.owe(t, pc, self.stall_left[t], 0);
                                    npc = self.stall_ret[t];
                                }
                            }
                            Ok(Flow::Halt) => {
                                let h = &mut self.hot[t];
                                h.pc = npc;
                                h.icount += 1;
                                if let Some(slot) = probe_slot {
                                    self.probe_after(t, now, &slot, probe_ops);
                                }
                                self.end_cycle = now + 1;
                                return End::Halted;
                            }
                            Err(f) => fault!(pc, f),
                        }
                        if let Op::EcallSpin { start, lock } = op {
                            let acquired = self.regs[t][reg::A0 as usize] != 0;
                            let lock = lock && call == ecall::ATOMIC_LOCK;
                            if lock {
                                // Rule 9: the branch back (`beqz a0`) issues in this slot.
                                self.run_stats.fused_pairs += 1;
                                npc = if acquired { pc + 2 } else { start };
                            }
                            // A failed acquire closing a spin loop whose ops all ran in this
                            // slot: the loop now repeats identically until the bit is clear.
                            if (lock || call == ecall::ATOMIC_ACQUIRE)
                                && !acquired
                                && self.shortcuts
                                && self.hot[t].pc <= start
                            {
                                self.spin[t] = Spin {
                                    start,
                                    ecall: pc,
                                    // (valid: the acquire did not fault)
                                    bit: Self::atomic_bit(bit).map_or(0, |b| b as u8),
                                    lock,
                                    acquire_next: lock,
                                };
                                self.held_spin |= 1 << t;
                                self.passive |= 1 << t;
                                npc = self.spin_index;
                            }
                        }
                    }
                    // (Spinning slots are taken before the dispatch; this is the same.)
                    Op::Spin => match self.spin_slot(t) {
                        None => npc = pc,
                        Some(start) => {
                            pc = start;
                            continue;
                        }
                    },
                    Op::Generic { word } => match self.generic(t, pc, word, now) {
                        Ok((n, w)) => {
                            npc = n;
                            wait = wait.max(w);
                        }
                        Err(f) => fault!(pc, f),
                    },
                    Op::Ebreak => fault!(pc, Fault::Breakpoint),
                    Op::Illegal { word } => fault!(pc, Fault::IllegalInstruction { word }),
                    Op::FellOff => {
                        let addr = self.base.wrapping_add(pc << 2);
                        fault!(pc, Fault::IramOutOfRange { addr })
                    }
                }
                let h = &mut self.hot[t];
                h.pc = npc;
                h.icount += 1;
                if wait > now + rev {
                    h.ready_at = wait;
                    self.block(t, wait);
                } else {
                    h.ready_at = now + rev;
                }
                if let Some(slot) = probe_slot {
                    self.probe_after(t, now, &slot, probe_ops);
                }
                break;
            }
            now += 1;
        }
    }

    /// Whether the op after a word access at `imm(rs1)` just executed by tasklet `t` (the first
    /// of a word pair of [`fuse`] kind `kind`) issues in the same slot: only when the pair's
    /// address is 8-aligned (the DPU's `ld`/`sd` need it); a pair in MRAM is one 8-byte DMA.
    #[inline(always)]
    fn pair_fuses(&mut self, t: usize, rs1: u8, imm: i32, kind: u8) -> bool {
        let hi = if kind == fuse::PAIR_HI { 4 } else { 0 };
        let addr = self.regs[t][(rs1 & 31) as usize]
            .wrapping_add(imm as u32)
            .wrapping_sub(hi);
        if addr & 7 != 0 {
            return false;
        }
        if addr >= WRAM_SIZE {
            self.pair_second = true;
        }
        true
    }

    /// Tasklet `t` waits until cycle `at`, longer than the revolver (see `blocked`).
    #[cold]
    fn block(&mut self, t: usize, at: u64) {
        self.blocked |= 1 << t;
        self.blocked_min = self.blocked_min.min(at);
    }

    /// Unblocks the `blocked` tasklets ready at cycle `now`; returns them.
    #[inline(never)]
    fn unblock(&mut self, now: u64) -> u32 {
        let (mut m, mut min, mut freed) = (self.blocked, u64::MAX, 0);
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let at = self.hot[i].ready_at;
            if at <= now {
                freed |= 1 << i;
            } else {
                min = min.min(at);
            }
        }
        self.blocked &= !freed;
        self.blocked_min = min;
        freed
    }

    /// Round-robin choice when the tasklet after `last` cannot issue at `now`: the first
    /// ready tasklet after `last`, or, if none, the first one at the earliest ready cycle
    /// (the clock jumps there). `None` when no tasklet will ever be ready.
    #[inline(never)]
    fn select(&mut self, now: u64, last: usize) -> Option<(usize, u64)> {
        if !self.shortcuts {
            return self.select_scan(now, last);
        }
        if self.blocked_min <= now {
            self.unblock(now);
        }
        // The others in round-robin order after `last` (bit j of `m` is tasklet
        // (last + 1 + j) % 32; there are none from `nr` to 31): the first ready one wins;
        // meanwhile those that become ready earliest.
        let shift = (last as u32 + 1) % 32;
        let all = if self.nr == 32 {
            u32::MAX
        } else {
            (1u32 << self.nr) - 1
        };
        let mut m = (all & !self.blocked).rotate_right(shift);
        let (mut earliest, mut at_earliest) = (u64::MAX, 0u32);
        while m != 0 {
            let j = m.trailing_zeros();
            m &= m - 1;
            let i = ((j + shift) % 32) as usize;
            let at = self.hot[i].ready_at;
            if at <= now {
                return Some((i, now));
            }
            if at < earliest {
                earliest = at;
                at_earliest = 0;
            }
            if at == earliest {
                at_earliest |= 1 << i;
            }
        }
        // None is ready: the clock jumps to the earliest cycle at which one is, an unblocked
        // one's or a blocked one's.
        let at = earliest.min(self.blocked_min);
        if at == u64::MAX {
            return None;
        }
        let mut cands = if earliest == at { at_earliest } else { 0 };
        if self.blocked_min == at {
            cands |= self.unblock(at);
        }
        // (`blocked_min` is exact here: a blocked tasklet's `ready_at` only rises above it
        // once the clock has passed it, and then `unblock` above recomputed it. Were it not,
        // the scan of every tasklet decides.)
        if cands == 0 {
            debug_assert!(false, "blocked_min below every blocked tasklet's ready_at");
            return self.select_scan(now, last);
        }
        let r = cands.rotate_right(shift);
        let i = ((r.trailing_zeros() + shift) % 32) as usize;
        self.run_stats.idle_cycles += at - now;
        Some((i, at))
    }

    /// `select` by a scan of every tasklet in round-robin order: the first ready one wins;
    /// meanwhile the first one (in that order) of those that become ready earliest.
    #[cold]
    fn select_scan(&mut self, now: u64, last: usize) -> Option<(usize, u64)> {
        let nr = self.nr;
        let (mut earliest, mut first) = (u64::MAX, 0);
        let mut i = last;
        for _ in 0..nr {
            i = (i + 1) % nr;
            let at = self.hot[i].ready_at;
            if at <= now {
                return Some((i, now));
            }
            if at < earliest {
                earliest = at;
                first = i;
            }
        }
        if earliest == u64::MAX {
            return None;
        }
        self.run_stats.idle_cycles += earliest - now;
        Some((first, earliest))
    }

    /// One issue slot that executes no op, of tasklet `t`: a slot it owes (`owing`), or a
    /// slot of its spin on a held atomic bit (`held_spin`, see `Spin`).
    #[inline(always)]
    fn passive_slot(&mut self, t: usize) {
        let bit = 1u32 << t;
        if self.owing & bit != 0 {
            let owed = &mut self.owed[t];
            *owed -= 1;
            if *owed == 0 {
                self.owing &= !bit;
                self.passive &= !bit;
            }
        } else {
            self.spin_passive_slot(t);
        }
    }

    /// Tasklet `t` owes `count` more issue slots (`pc`: the op index to report for them; the
    /// first slot issues `fused` ops besides its first, counted now). A tasklet that owes
    /// nothing starts a new batch. The batch must have room for a run.
    #[inline(always)]
    fn owe(&mut self, t: usize, pc: u32, count: u32, fused: u32) {
        let log = &mut self.owed_log[t];
        if self.owed[t] == 0 {
            log.len = 0;
            log.total = 0;
        }
        let i = log.len % OWED;
        log.pcs[i] = pc;
        log.counts[i] = count;
        log.fused[i] = fused;
        log.len = i + 1;
        log.total += u64::from(count);
        self.owed[t] += u64::from(count);
        self.run_stats.fused_pairs += u64::from(fused);
        self.owing |= 1 << t;
        self.passive |= 1 << t;
    }

    /// The first run of tasklet `t`'s batch with a slot not yet issued, and whether that is
    /// the run's first slot (`None` when it owes nothing).
    fn unissued(&self, t: usize) -> Option<(usize, bool)> {
        if self.owed[t] == 0 {
            return None;
        }
        let log = &self.owed_log[t];
        let issued = log.total - self.owed[t];
        let mut at = 0;
        for i in 0..log.len {
            let next = at + u64::from(log.counts[i]);
            if issued < next {
                return Some((i, issued == at));
            }
            at = next;
        }
        None
    }

    /// Executes ahead the next issue slots of tasklet `t` (which owes none) that only read and
    /// write its own registers, and queues them as owed slots: ops that no other tasklet can
    /// observe or influence and that do not depend on when they issue (`Program::ahead`: ALU
    /// ops, constants, branches, jumps, calls and returns to valid targets, `addi sp` within
    /// the stack, the arithmetic environment calls, whose issue slots are queued with them).
    /// It stops before the first slot with any other op (loads and stores, other environment
    /// calls) or that would fault, which executes when it issues, and when the queue is full.
    /// The tasklet's registers are then ahead of its issues, which only the tasklet itself
    /// could see; issuing the queued slots counts them exactly as executing them then would.
    #[inline(never)]
    fn run_ahead(&mut self, t: usize) {
        let ahead = self.ahead;
        let mut pc = self.hot[t].pc;
        while self.owed_log[t].len < OWED - 2 || self.owed[t] == 0 {
            let a = ahead[pc as usize] & !crate::decode::ahead::WORTH;
            if a == 0 {
                break;
            }
            let fused = u32::from(a >> 2);
            let last = pc + fused;
            let mut npc = pc + 1;
            let mut stall = 0;
            if a & 3 == crate::decode::ahead::PLAIN {
                for i in pc..=last {
                    npc = self.plain_op(t, i);
                }
            } else {
                // A slot whose later op may fault runs on a copy of the registers kept to
                // undo its first ops.
                let saved = (fused > 0).then(|| self.regs[t]);
                for i in pc..=last {
                    match self.checked_op(t, i) {
                        Some((n, slots)) => {
                            npc = n;
                            stall = slots;
                        }
                        None => {
                            if let Some(regs) = saved {
                                self.regs[t] = regs;
                            }
                            self.hot[t].pc = pc;
                            return;
                        }
                    }
                }
            }
            self.owe(t, pc, 1, fused);
            if stall > 0 {
                self.owe(t, last, stall, 0);
            }
            pc = npc;
        }
        self.hot[t].pc = pc;
    }

    /// Executes op `i` of tasklet `t`, one of the ops of a `PLAIN` slot (`Program::ahead`);
    /// returns the next op index.
    #[inline(always)]
    fn plain_op(&mut self, t: usize, i: u32) -> u32 {
        let op = self.ops[i as usize];
        let r = &mut self.regs[t];
        macro_rules! x {
            ($i:expr) => {
                r[($i & 31) as usize]
            };
        }
        match op {
            Op::Li { rd, imm } => x!(rd) = imm,
            Op::Addi { rd, rs1, imm } => x!(rd) = x!(rs1).wrapping_add(imm as u32),
            Op::Slti { rd, rs1, imm } => x!(rd) = ((x!(rs1) as i32) < imm) as u32,
            Op::Sltiu { rd, rs1, imm } => x!(rd) = (x!(rs1) < imm as u32) as u32,
            Op::Xori { rd, rs1, imm } => x!(rd) = x!(rs1) ^ imm as u32,
            Op::Ori { rd, rs1, imm } => x!(rd) = x!(rs1) | imm as u32,
            Op::Andi { rd, rs1, imm } => x!(rd) = x!(rs1) & imm as u32,
            Op::Slli { rd, rs1, sh } => x!(rd) = x!(rs1) << (sh & 31),
            Op::Srli { rd, rs1, sh } => x!(rd) = x!(rs1) >> (sh & 31),
            Op::Srai { rd, rs1, sh } => x!(rd) = ((x!(rs1) as i32) >> (sh & 31)) as u32,
            Op::Add { rd, rs1, rs2 } => x!(rd) = x!(rs1).wrapping_add(x!(rs2)),
            Op::Sub { rd, rs1, rs2 } => x!(rd) = x!(rs1).wrapping_sub(x!(rs2)),
            Op::Sll { rd, rs1, rs2 } => x!(rd) = x!(rs1) << (x!(rs2) & 31),
            Op::Slt { rd, rs1, rs2 } => x!(rd) = ((x!(rs1) as i32) < (x!(rs2) as i32)) as u32,
            Op::Sltu { rd, rs1, rs2 } => x!(rd) = (x!(rs1) < x!(rs2)) as u32,
            Op::Xor { rd, rs1, rs2 } => x!(rd) = x!(rs1) ^ x!(rs2),
            Op::Srl { rd, rs1, rs2 } => x!(rd) = x!(rs1) >> (x!(rs2) & 31),
            Op::Sra { rd, rs1, rs2 } => x!(rd) = ((x!(rs1) as i32) >> (x!(rs2) & 31)) as u32,
            Op::Or { rd, rs1, rs2 } => x!(rd) = x!(rs1) | x!(rs2),
            Op::And { rd, rs1, rs2 } => x!(rd) = x!(rs1) & x!(rs2),
            // (A branch not taken, like `Nop`, goes on below.)
            Op::Beq { rs1, rs2, target } if x!(rs1) == x!(rs2) => return target,
            Op::Bne { rs1, rs2, target } if x!(rs1) != x!(rs2) => return target,
            Op::Blt { rs1, rs2, target } if (x!(rs1) as i32) < (x!(rs2) as i32) => return target,
            Op::Bge { rs1, rs2, target } if (x!(rs1) as i32) >= (x!(rs2) as i32) => return target,
            Op::Bltu { rs1, rs2, target } if x!(rs1) < x!(rs2) => return target,
            Op::Bgeu { rs1, rs2, target } if x!(rs1) >= x!(rs2) => return target,
            Op::Jal { rd, target } => {
                x!(rd) = op_address(self.base, i + 1);
                return target;
            }
            Op::J { target } => return target,
            // Nop, a branch not taken; nothing else is in a PLAIN slot.
            _ => {}
        }
        i + 1
    }

    /// Executes op `i` of tasklet `t`, one of the ops of a `CHECKED` slot (`Program::ahead`),
    /// if it does not fault and, for an `ecall`, is an arithmetic call: returns the next op
    /// index and the issue slots the op adds (an arithmetic call's); `None` (and nothing
    /// changed) otherwise.
    #[inline(always)]
    fn checked_op(&mut self, t: usize, i: u32) -> Option<(u32, u32)> {
        let next = i + 1;
        let r = &mut self.regs[t];
        match self.ops[i as usize] {
            Op::AddiSp { imm } => {
                let sp = r[2].wrapping_add(imm as u32);
                if sp < self.stack_lo[t] {
                    return None;
                }
                r[2] = sp;
            }
            Op::Jalr { rd, rs1, imm } => {
                let dest = r[(rs1 & 31) as usize].wrapping_add(imm as u32) & !1;
                let target = self.jump_index(dest).ok()?;
                self.regs[t][(rd & 31) as usize] = self.base.wrapping_add(next << 2);
                return Some((target, 0));
            }
            Op::Jr { rs1, imm } => {
                let dest = r[(rs1 & 31) as usize].wrapping_add(imm as u32) & !1;
                return Some((self.jump_index(dest).ok()?, 0));
            }
            Op::Ecall | Op::EcallSpin { .. } => {
                if !(ecall::MUL32..=ecall::FDIV64).contains(&r[reg::A7 as usize]) {
                    return None;
                }
                // The arithmetic calls do not look at the cycle; they fault (division by
                // zero) before changing anything.
                return match self.ecall(t, i, 0) {
                    Ok(Flow::Next { .. }) => Some((next, 0)),
                    Ok(Flow::Jump { .. }) => Some((next, self.stall_left[t])),
                    Ok(Flow::Halt) | Err(_) => None,
                };
            }
            _ => return Some((self.plain_op(t, i), 0)),
        }
        Some((next, 0))
    }

    /// Bit `b` was released: the tasklets spinning on it will acquire it (or find it held
    /// again) at their next acquire slot, which `spin_slot` decides.
    #[cold]
    #[inline(never)]
    fn release_spinners(&mut self, b: usize) {
        let mut m = self.held_spin;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            if usize::from(self.spin[i].bit) == b {
                self.held_spin &= !(1 << i);
                self.passive &= !(1 << i);
            }
        }
    }

    /// One slot of tasklet `t`'s spin that executes no op: the branch back, or an acquire
    /// that fails again (its ops write the values they wrote last time; the slot counts
    /// their fused pairs, and the branch's in a lock, rule 9).
    #[inline(always)]
    fn spin_passive_slot(&mut self, t: usize) {
        let s = &mut self.spin[t];
        let acquire = s.acquire_next;
        let pairs = s.ecall - s.start + u32::from(s.lock);
        self.run_stats.fused_pairs += u64::from(acquire) * u64::from(pairs);
        s.acquire_next = !acquire || s.lock;
    }

    /// `q` slots of tasklet `t`'s spin that execute no op (`spin_passive_slot` `q` times).
    fn spin_passive_slots(&mut self, t: usize, q: u32) {
        let s = &mut self.spin[t];
        let pairs = u64::from(s.ecall - s.start + u32::from(s.lock));
        // Every slot of a lock is an acquire; the other loops alternate acquire and branch.
        let acquires = if s.lock {
            q
        } else if s.acquire_next {
            q.div_ceil(2)
        } else {
            q / 2
        };
        self.run_stats.fused_pairs += u64::from(acquires) * pairs;
        if !s.lock && q % 2 == 1 {
            s.acquire_next = !s.acquire_next;
        }
    }

    /// One issue slot of tasklet `t` spinning on the `Spin` sentinel: the branch back to the
    /// loop (`beqz a0`, a0 being 0), or the loop's ops and its acquire, which fails again while
    /// the bit is held (they write the values they wrote last time; the slot counts their
    /// fused pairs). `None` when that is the slot; `Some(start)` when the bit is clear: the
    /// loop's ops run for real from `start`, in this slot, and the tasklet stops spinning.
    #[inline(always)]
    fn spin_slot(&mut self, t: usize) -> Option<u32> {
        let s = &mut self.spin[t];
        let b = usize::from(s.bit);
        let held = self.atomic[b / 64] & (1 << (b % 64)) != 0;
        if held {
            self.held_spin |= 1 << t;
            self.passive |= 1 << t;
        }
        if !s.acquire_next || held {
            self.spin_passive_slot(t);
            None
        } else {
            Some(s.start)
        }
    }

    /// The op index to report for tasklet `t` stopped before its next issue: the arithmetic
    /// call it is still paying for, or its next instruction.
    fn report_index(&self, t: usize) -> u32 {
        let pc = self.hot[t].pc;
        if let Some((run, _)) = self.unissued(t) {
            self.owed_log[t].pcs[run]
        } else if pc == self.stall_index {
            self.stall_ret[t].wrapping_sub(1)
        } else if pc == self.spin_index {
            let s = &self.spin[t];
            if s.acquire_next {
                s.start
            } else {
                s.ecall + 1
            }
        } else {
            pc
        }
    }

    /// No tasklet can ever issue again: every tasklet exited, or deadlock.
    #[cold]
    fn no_ready_tasklet(&mut self) -> End {
        let mut sleeping = 0u32;
        for t in 0..self.nr {
            if self.state[t] == State::Sleeping {
                sleeping |= 1 << t;
            }
        }
        if sleeping == 0 {
            End::AllExited
        } else if !self.timing.strict_sync {
            End::AllWaiting { sleeping }
        } else {
            let t = sleeping.trailing_zeros() as usize;
            End::Fault {
                tasklet: t,
                pc_index: self.hot[t].pc.wrapping_sub(1),
                fault: Fault::Deadlock { sleeping },
            }
        }
    }

    /// The op index of jump target `dest` (a byte address).
    #[inline(always)]
    fn jump_index(&self, dest: u32) -> Result<u32, Fault> {
        let off = dest.wrapping_sub(self.base);
        if off & 3 == 0 && (off >> 2) < self.len {
            Ok(off >> 2)
        } else {
            Err(jump_fault(dest, off))
        }
    }

    /// Classifies a data access of `size` bytes at `addr` (natural alignment required).
    #[cold]
    fn locate(&self, addr: u32, size: u32) -> Result<Space, Fault> {
        if addr < WRAM_SIZE {
            if addr & (size - 1) != 0 {
                return Err(Fault::Misaligned { addr, size });
            }
            Ok(Space::Wram(addr as usize))
        } else if addr < MRAM_BASE {
            Err(Fault::WramOutOfRange { addr, size })
        } else if addr - MRAM_BASE < MRAM_SIZE {
            if addr & (size - 1) != 0 {
                return Err(Fault::Misaligned { addr, size });
            }
            let off = (addr - MRAM_BASE) as usize;
            if off + size as usize > self.mram.len() {
                return Err(Fault::MramOutOfRange { addr, size });
            }
            Ok(Space::Mram(off))
        } else if addr < crate::map::IRAM_BASE {
            Err(Fault::MramOutOfRange { addr, size })
        } else {
            Err(Fault::BadAddress { addr, size })
        }
    }

    /// A load that is not an aligned in-range WRAM access: MRAM (charged as an 8-byte DMA
    /// read), or a fault. Returns the zero-extended value and the tasklet's earliest next
    /// issue.
    #[cold]
    #[inline(never)]
    fn load_slow(&mut self, t: usize, addr: u32, size: u32, now: u64) -> Result<(u32, u64), Fault> {
        let merged = std::mem::take(&mut self.pair_second);
        let (bytes, wait): (&[u8], u64) = match self.locate(addr, size)? {
            Space::Wram(a) => (&self.wram[a..a + size as usize], 0),
            Space::Mram(o) => {
                let done = if merged { 0 } else { self.dma(t, now, 8, true) };
                (&self.mram[o..o + size as usize], done)
            }
        };
        let mut b = [0u8; 4];
        b[..bytes.len()].copy_from_slice(bytes);
        if self.probe.is_some() {
            self.probe_access(t, now, addr, size, false, AccessKind::Op);
        }
        Ok((u32::from_le_bytes(b), wait))
    }

    /// A store that is not an aligned in-range WRAM access (see [`Dpu::load_slow`]).
    #[cold]
    #[inline(never)]
    fn store_slow(
        &mut self,
        t: usize,
        addr: u32,
        size: u32,
        v: u32,
        now: u64,
    ) -> Result<u64, Fault> {
        let merged = std::mem::take(&mut self.pair_second);
        let bytes = v.to_le_bytes();
        let n = size as usize;
        let wait = match self.locate(addr, size)? {
            Space::Wram(a) => {
                self.wram[a..a + n].copy_from_slice(&bytes[..n]);
                0
            }
            Space::Mram(o) => {
                self.mram[o..o + n].copy_from_slice(&bytes[..n]);
                if merged {
                    0
                } else {
                    self.dma(t, now, 8, false)
                }
            }
        };
        if self.probe.is_some() {
            self.probe_access(t, now, addr, size, true, AccessKind::Op);
        }
        Ok(wait)
    }

    /// Decodes a DMA request as the DPU's DMA instruction does (see `DmaRequest`): the length
    /// from its 8-bit field, both addresses aligned down to 8 bytes, the MRAM address with or
    /// without the MRAM base. What the hardware tolerates but is almost certainly a bug is
    /// recorded as a quirk, or is a fault under `Timing::strict_dma`; ranges past the WRAM
    /// or the 64 MiB of MRAM always fault.
    fn dma_request(
        &mut self,
        t: usize,
        pc: u32,
        read: bool,
        wram: u32,
        mram: u32,
        size: u32,
    ) -> Result<DmaRequest, Fault> {
        let (d, kinds) = self.dma_decode(wram, mram, size)?;
        if !kinds.is_empty() {
            self.run_stats.dma_quirks += 1;
            if self.dma_quirks.len() < DMA_QUIRKS_KEPT {
                self.dma_quirks.push(DmaQuirk {
                    tasklet: t as u32,
                    pc: self.base.wrapping_add(pc << 2),
                    read,
                    kinds,
                    wram,
                    mram,
                    size,
                    moved: d.size,
                });
            }
        }
        Ok(d)
    }

    /// `dma_request`'s decoding, without recording its quirks: the request, and what the
    /// hardware tolerates in it.
    fn dma_decode(
        &self,
        wram: u32,
        mram: u32,
        size: u32,
    ) -> Result<(DmaRequest, Vec<DmaQuirkKind>), Fault> {
        let moved = dma_encoded_length(size);
        let (w, m) = (wram & !7, mram & !7);
        let strict = self.timing.strict_dma;
        let mut kinds = Vec::new();
        if size != moved {
            if strict {
                return Err(Fault::DmaBadSize { size });
            }
            kinds.push(DmaQuirkKind::SizeEncoded);
        }
        if (w, m) != (wram, mram) {
            if strict {
                return Err(Fault::DmaMisaligned { wram, mram });
            }
            kinds.push(DmaQuirkKind::AlignedDown);
        }
        let offset = if (MRAM_BASE..MRAM_BASE + MRAM_SIZE).contains(&m) {
            m - MRAM_BASE
        } else if m < MRAM_SIZE && !strict {
            kinds.push(DmaQuirkKind::MramWithoutBase);
            m
        } else {
            return Err(Fault::DmaOutOfRange {
                wram,
                mram,
                size: moved,
            });
        };
        let n = moved as usize;
        if w as usize + n > WS || offset as usize + n > self.mram.len() {
            return Err(Fault::DmaOutOfRange {
                wram,
                mram,
                size: moved,
            });
        }
        Ok((
            DmaRequest {
                wram: w,
                mram_offset: offset,
                size: moved,
            },
            kinds,
        ))
    }

    /// Books a DMA request of `n` bytes issued by tasklet `t` at cycle `now`; returns the
    /// cycle at which it completes.
    fn dma(&mut self, t: usize, now: u64, n: u32, read: bool) -> u64 {
        let tm = self.timing;
        let alpha = if read {
            tm.dma_read_alpha
        } else {
            tm.dma_write_alpha
        };
        let beta = (u64::from(tm.dma_beta_milli) * u64::from(n)).div_ceil(1000);
        let start = now.max(self.dma_busy_until);
        let done = start + u64::from(alpha) + beta;
        self.dma_busy_until = done;
        let rs = &mut self.run_stats;
        rs.dma_busy_cycles += done - start;
        rs.dma_requests += 1;
        if read {
            rs.dma_bytes_read += u64::from(n);
        } else {
            rs.dma_bytes_written += u64::from(n);
        }
        let st = &mut self.stats[t];
        st.dma_requests += 1;
        st.dma_wait_cycles += done.saturating_sub(now + self.rev);
        done
    }

    /// Writes `v` into register `rd` of tasklet `t` with the checks the fast ops do not need
    /// (x0 discarded, stack bound on sp).
    fn set_reg(&mut self, t: usize, rd: u8, v: u32) -> Result<(), Fault> {
        if rd == 0 {
            return Ok(());
        }
        if rd == reg::SP && v < self.stack_lo[t] {
            return Err(Fault::StackOverflow {
                sp: v,
                stack_lo: self.stack_lo[t],
            });
        }
        self.regs[t][(rd & 31) as usize] = v;
        Ok(())
    }

    /// The fully checked interpretation of any instruction word (rare ops: writes to sp
    /// other than `addi sp, sp, imm`, loads into x0, jumps to targets outside the program).
    #[cold]
    #[inline(never)]
    fn generic(&mut self, t: usize, pc: u32, word: u32, now: u64) -> Result<(u32, u64), Fault> {
        let pcb = self.base.wrapping_add(pc << 2);
        let link = pcb.wrapping_add(4);
        let x = |s: &Self, r: u8| s.regs[t][(r & 31) as usize];
        let mut npc = pc + 1;
        let mut wait = 0;
        let insn = isa_decode(word);
        match insn {
            Insn::Lui(u) => self.set_reg(t, u.rd, u.imm as u32)?,
            Insn::Auipc(u) => self.set_reg(t, u.rd, pcb.wrapping_add(u.imm as u32))?,
            Insn::Jal(j) => {
                self.set_reg(t, j.rd, link)?;
                npc = self.jump_index(pcb.wrapping_add(j.imm as u32))?;
            }
            Insn::Jalr(i) => {
                let dest = x(self, i.rs1).wrapping_add(i.imm as u32) & !1;
                self.set_reg(t, i.rd, link)?;
                npc = self.jump_index(dest)?;
            }
            Insn::Beq(b)
            | Insn::Bne(b)
            | Insn::Blt(b)
            | Insn::Bge(b)
            | Insn::Bltu(b)
            | Insn::Bgeu(b) => {
                let (a, c) = (x(self, b.rs1), x(self, b.rs2));
                let taken = match insn {
                    Insn::Beq(_) => a == c,
                    Insn::Bne(_) => a != c,
                    Insn::Blt(_) => (a as i32) < (c as i32),
                    Insn::Bge(_) => (a as i32) >= (c as i32),
                    Insn::Bltu(_) => a < c,
                    _ => a >= c,
                };
                if taken {
                    npc = self.jump_index(pcb.wrapping_add(b.imm as u32))?;
                }
            }
            Insn::Lb(i) | Insn::Lh(i) | Insn::Lw(i) | Insn::Lbu(i) | Insn::Lhu(i) => {
                let a = x(self, i.rs1).wrapping_add(i.imm as u32);
                let size = match insn {
                    Insn::Lb(_) | Insn::Lbu(_) => 1,
                    Insn::Lh(_) | Insn::Lhu(_) => 2,
                    _ => 4,
                };
                let (v, w) = self.load_slow(t, a, size, now)?;
                wait = w;
                let v = match insn {
                    Insn::Lb(_) => v as u8 as i8 as i32 as u32,
                    Insn::Lh(_) => v as u16 as i16 as i32 as u32,
                    _ => v,
                };
                self.set_reg(t, i.rd, v)?;
            }
            Insn::Sb(s) | Insn::Sh(s) | Insn::Sw(s) => {
                let a = x(self, s.rs1).wrapping_add(s.imm as u32);
                let size = match insn {
                    Insn::Sb(_) => 1,
                    Insn::Sh(_) => 2,
                    _ => 4,
                };
                wait = self.store_slow(t, a, size, x(self, s.rs2), now)?;
            }
            Insn::Addi(i)
            | Insn::Slti(i)
            | Insn::Sltiu(i)
            | Insn::Xori(i)
            | Insn::Ori(i)
            | Insn::Andi(i) => {
                let a = x(self, i.rs1);
                let b = i.imm as u32;
                let v = match insn {
                    Insn::Addi(_) => a.wrapping_add(b),
                    Insn::Slti(_) => ((a as i32) < (b as i32)) as u32,
                    Insn::Sltiu(_) => (a < b) as u32,
                    Insn::Xori(_) => a ^ b,
                    Insn::Ori(_) => a | b,
                    _ => a & b,
                };
                self.set_reg(t, i.rd, v)?;
            }
            Insn::Slli(s) | Insn::Srli(s) | Insn::Srai(s) => {
                let a = x(self, s.rs1);
                let sh = u32::from(s.shamt & 31);
                let v = match insn {
                    Insn::Slli(_) => a << sh,
                    Insn::Srli(_) => a >> sh,
                    _ => ((a as i32) >> sh) as u32,
                };
                self.set_reg(t, s.rd, v)?;
            }
            Insn::Add(r)
            | Insn::Sub(r)
            | Insn::Sll(r)
            | Insn::Slt(r)
            | Insn::Sltu(r)
            | Insn::Xor(r)
            | Insn::Srl(r)
            | Insn::Sra(r)
            | Insn::Or(r)
            | Insn::And(r) => {
                let (a, b) = (x(self, r.rs1), x(self, r.rs2));
                let v = match insn {
                    Insn::Add(_) => a.wrapping_add(b),
                    Insn::Sub(_) => a.wrapping_sub(b),
                    Insn::Sll(_) => a << (b & 31),
                    Insn::Slt(_) => ((a as i32) < (b as i32)) as u32,
                    Insn::Sltu(_) => (a < b) as u32,
                    Insn::Xor(_) => a ^ b,
                    Insn::Srl(_) => a >> (b & 31),
                    Insn::Sra(_) => ((a as i32) >> (b & 31)) as u32,
                    Insn::Or(_) => a | b,
                    _ => a & b,
                };
                self.set_reg(t, r.rd, v)?;
            }
            Insn::Fence(_) | Insn::FenceI(_) => {}
            Insn::Ecall(_) => {
                return match self.ecall(t, pc, now)? {
                    Flow::Next { wait } => Ok((npc, wait)),
                    Flow::Jump { npc } => Ok((npc, 0)),
                    // Not reachable: ecall words are never decoded as Generic.
                    Flow::Halt => Err(Fault::IllegalInstruction { word }),
                };
            }
            Insn::Ebreak(_) => return Err(Fault::Breakpoint),
            Insn::Illegal(w) => return Err(Fault::IllegalInstruction { word: w }),
        }
        Ok((npc, wait))
    }

    fn total_instructions(&self) -> u64 {
        self.hot[..self.nr].iter().map(|h| h.icount).sum()
    }

    fn perf_value(&self, now: u64) -> u64 {
        match self.perf_mode {
            ecall::PERF_CYCLES => now - self.perf_base_cycles,
            ecall::PERF_INSTRUCTIONS => self.total_instructions() - self.perf_base_instr,
            _ => 0,
        }
    }

    fn atomic_bit(v: u32) -> Result<usize, Fault> {
        let bit = if v >= ATOMIC_BASE { v - ATOMIC_BASE } else { v };
        if bit < ATOMIC_BITS {
            Ok(bit as usize)
        } else {
            Err(Fault::BadAtomicBit { bit: v })
        }
    }

    /// Environment call of tasklet `t` at op index `pc`, issued at cycle `now`: the frequent
    /// ones (DMA, atomic bits) here, inline in the interpreter loop; the others in
    /// [`Dpu::ecall`].
    #[inline(always)]
    fn ecall_hot(&mut self, t: usize, pc: u32, now: u64) -> Result<Flow, Fault> {
        let r = &self.regs[t];
        let (nr_call, a0) = (r[reg::A7 as usize], r[reg::A0 as usize]);
        match nr_call {
            ecall::ATOMIC_ACQUIRE | ecall::ATOMIC_LOCK | ecall::ATOMIC_RELEASE => {
                let acquire = nr_call != ecall::ATOMIC_RELEASE;
                let v = self.atomic_call(a0, acquire)?;
                self.regs[t][reg::A0 as usize] = v;
                if self.probe.is_some() {
                    self.probe_atomic(t, pc, now, a0, acquire, v);
                }
                Ok(Flow::Next { wait: 0 })
            }
            ecall::DMA_MRAM_TO_WRAM | ecall::DMA_WRAM_TO_MRAM => {
                let done = self.dma_call(t, pc, now, nr_call == ecall::DMA_MRAM_TO_WRAM)?;
                Ok(Flow::Next { wait: done })
            }
            _ => self.ecall(t, pc, now),
        }
    }

    /// `ATOMIC_ACQUIRE` (`acquire`) or `ATOMIC_RELEASE` of the atomic bit `v`: sets (clears)
    /// it; returns 1 if it was clear (set), else 0.
    #[inline(always)]
    fn atomic_call(&mut self, v: u32, acquire: bool) -> Result<u32, Fault> {
        let b = Self::atomic_bit(v)?;
        let (word, mask) = ((b / 64) & 3, 1u64 << (b % 64));
        let was_set = self.atomic[word] & mask != 0;
        if acquire {
            self.atomic[word] |= mask;
        } else {
            self.atomic[word] &= !mask;
            if was_set && self.held_spin != 0 {
                self.release_spinners(b);
            }
        }
        Ok((was_set != acquire) as u32)
    }

    /// `DMA_MRAM_TO_WRAM` (`read`) or `DMA_WRAM_TO_MRAM` of tasklet `t` at op index `pc`,
    /// issued at cycle `now` (arguments in `a0..a2`): moves the data; returns the cycle at which
    /// the transfer completes.
    #[inline(never)]
    fn dma_call(&mut self, t: usize, pc: u32, now: u64, read: bool) -> Result<u64, Fault> {
        let r = &self.regs[t];
        let (a0, a1, a2) = (
            r[reg::A0 as usize],
            r[reg::A1 as usize],
            r[reg::A2 as usize],
        );
        let (mram, wram) = if read { (a0, a1) } else { (a1, a0) };
        let d = self.dma_request(t, pc, read, wram, mram, a2)?;
        let (w, m, nn) = (d.wram as usize, d.mram_offset as usize, d.size as usize);
        if read {
            self.wram[w..w + nn].copy_from_slice(&self.mram[m..m + nn]);
        } else {
            self.mram[m..m + nn].copy_from_slice(&self.wram[w..w + nn]);
        }
        if self.probe.is_some() {
            self.probe_op = pc;
            let mram = ProbeSpace::Mram.address(d.mram_offset);
            self.probe_access(t, now, mram, d.size, !read, AccessKind::Dma);
            self.probe_access(t, now, d.wram, d.size, read, AccessKind::Dma);
        }
        Ok(self.dma(t, now, d.size, read))
    }

    /// Environment call of tasklet `t` at op index `pc`, issued at cycle `now`.
    #[cold]
    #[inline(never)]
    fn ecall(&mut self, t: usize, pc: u32, now: u64) -> Result<Flow, Fault> {
        let a = |s: &Self, i: u8| s.regs[t][usize::from(i)];
        let nr_call = a(self, reg::A7);
        let a0 = a(self, reg::A0);
        let a1 = a(self, reg::A1);
        let set = |s: &mut Self, i: u8, v: u32| s.regs[t][usize::from(i)] = v;
        let set64 = |s: &mut Self, lo: u8, v: u64| {
            s.regs[t][usize::from(lo)] = v as u32;
            s.regs[t][usize::from(lo) + 1] = (v >> 32) as u32;
        };
        let next = Flow::Next { wait: 0 };
        let tm = self.timing;
        let slots = match nr_call {
            ecall::TASKLET_EXIT => {
                self.probe_sync(t, pc, now, SyncEvent::Exit);
                self.state[t] = State::Exited;
                self.stats[t].exit_status = Some(a0);
                self.stats[t].end_cycle = now + 1;
                return Ok(Flow::Next { wait: u64::MAX });
            }
            ecall::HALT => return Ok(Flow::Halt),
            ecall::DMA_MRAM_TO_WRAM | ecall::DMA_WRAM_TO_MRAM => {
                let done = self.dma_call(t, pc, now, nr_call == ecall::DMA_MRAM_TO_WRAM)?;
                return Ok(Flow::Next { wait: done });
            }
            ecall::ATOMIC_ACQUIRE | ecall::ATOMIC_LOCK | ecall::ATOMIC_RELEASE => {
                let acquire = nr_call != ecall::ATOMIC_RELEASE;
                let v = self.atomic_call(a0, acquire)?;
                set(self, reg::A0, v);
                if self.probe.is_some() {
                    self.probe_atomic(t, pc, now, a0, acquire, v);
                }
                return Ok(next);
            }
            ecall::SLEEP => {
                let slept = !self.pending_wake[t];
                self.probe_sync(t, pc, now, SyncEvent::Sleep { slept });
                if !slept {
                    self.pending_wake[t] = false;
                    return Ok(next);
                }
                self.state[t] = State::Sleeping;
                self.sleep_since[t] = now;
                return Ok(Flow::Next { wait: u64::MAX });
            }
            ecall::RESUME => {
                let id = a0 as usize;
                if id >= self.nr {
                    return Err(Fault::BadTaskletId {
                        id: a0,
                        nr_tasklets: self.nr as u32,
                    });
                }
                let woke = match self.state[id] {
                    State::Sleeping => {
                        self.state[id] = State::Running;
                        let since = self.sleep_since[id];
                        self.stats[id].sleep_cycles += now - since;
                        let at = (now + 1).max(since + self.rev);
                        self.hot[id].ready_at = at;
                        // (`id` is blocked since it went to sleep.)
                        self.blocked_min = self.blocked_min.min(at);
                        true
                    }
                    State::Running => {
                        self.pending_wake[id] = true;
                        false
                    }
                    State::Exited => false,
                };
                let target = id as u32;
                self.probe_sync(t, pc, now, SyncEvent::Resume { target, woke });
                set(self, reg::A0, woke as u32);
                return Ok(next);
            }
            ecall::PERF_CONFIG => {
                let before = self.perf_value(now);
                if a0 != ecall::PERF_SAME {
                    if a0 > ecall::PERF_NOTHING {
                        return Err(Fault::BadEcallArgument {
                            nr: nr_call,
                            value: a0,
                        });
                    }
                    self.perf_mode = a0;
                }
                if a1 != 0 {
                    self.perf_base_cycles = now;
                    self.perf_base_instr = self.total_instructions();
                }
                set64(self, reg::A0, before);
                return Ok(next);
            }
            ecall::PERF_GET => {
                let v = self.perf_value(now);
                set64(self, reg::A0, v);
                return Ok(next);
            }
            ecall::PRINTF => {
                // The printf buffer is a ring, as the UPMEM runtime's: output past its end
                // wraps over the oldest (the host then cannot show the log: `log_wrapped`);
                // only one call larger than the whole buffer faults.
                let start = self.log.len();
                let bytes = printf::format(self.wram, self.mram, a0, a1, &mut self.log)?;
                let capacity = u64::from(self.printf_capacity);
                if bytes > capacity {
                    self.log.truncate(start);
                    return Err(Fault::PrintfOverflow {
                        bytes,
                        capacity: self.printf_capacity,
                    });
                }
                self.printf_used += bytes;
                if self.printf_used >= capacity {
                    self.log_wrapped = true;
                }
                if self.log_wrapped {
                    // (What the host cannot show is not kept.)
                    self.log.clear();
                }
                return Ok(next);
            }
            ecall::FAULT => {
                return Err(match a0 {
                    ecall::FAULT_HEAP_EXHAUSTED => Fault::HeapExhausted { requested: a1 },
                    ecall::FAULT_ASSERTION => Fault::AssertionFailed { line: a1 },
                    ecall::FAULT_SEQREAD => Fault::SeqreadMisuse { detail: a1 },
                    ecall::FAULT_ALLOCATOR => Fault::AllocatorMisuse { detail: a1 },
                    code => Fault::ProgramFault { code, detail: a1 },
                })
            }
            ecall::STACK_LEFT => {
                let left = self.regs[t][reg::SP as usize].wrapping_sub(self.stack_lo[t]);
                set(self, reg::A0, left);
                return Ok(next);
            }
            ecall::CYCLES => {
                set64(self, reg::A0, now);
                return Ok(next);
            }
            ecall::MUL32..=ecall::FDIV64 => match arith::call(tm, nr_call, &mut self.regs[t]) {
                Some(r) => r?,
                None => return Err(Fault::UnknownEcall { nr: nr_call }),
            },
            nr => return Err(Fault::UnknownEcall { nr }),
        };
        if slots == 0 {
            return Ok(next);
        }
        self.stall_left[t] = slots;
        self.stall_ret[t] = pc + 1;
        Ok(Flow::Jump {
            npc: self.stall_index,
        })
    }

    /// Probed runs: the probe sees the slot tasklet `t` is about to issue at cycle `now`
    /// (after the idle cycles since the last slot, if any); returns whether it may issue.
    #[inline(never)]
    fn probe_before(&mut self, t: usize, now: u64) -> (Control, Slot) {
        let owed = self.owing & (1 << t) != 0;
        let index = match self.unissued(t) {
            Some((run, _)) if owed => self.owed_log[t].pcs[run],
            _ => self.hot[t].pc,
        };
        let slot = Slot {
            cycle: now,
            tasklet: t as u32,
            pc: self.base.wrapping_add(index << 2),
            owed,
        };
        let Some(probe) = self.probe.take() else {
            return (Control::Go, slot);
        };
        let from = self.probe_next;
        let mut view = DpuView::new(self, now);
        if now > from {
            probe.idle(&mut view, from, now);
        }
        let control = probe.before_issue(&mut view, &slot);
        self.probe = Some(probe);
        // (A slot held back issues nothing: its cycle is idle, reported with the next span.)
        self.probe_next = if control == Control::Go { now + 1 } else { now };
        (control, slot)
    }

    /// Probed runs: slot `slot` of tasklet `t` issued `ops` instructions.
    #[inline(never)]
    fn probe_after(&mut self, _t: usize, now: u64, slot: &Slot, ops: u32) {
        if let Some(probe) = self.probe.take() {
            probe.after_issue(&mut DpuView::new(self, now), slot, ops);
            self.probe = Some(probe);
        }
    }

    /// Probed runs: tasklet `t` made an access at DPU address `addr` (WRAM or MRAM) in the
    /// op `probe_op`.
    #[inline(never)]
    fn probe_access(
        &mut self,
        t: usize,
        now: u64,
        addr: u32,
        size: u32,
        write: bool,
        kind: AccessKind,
    ) {
        let Some((space, offset)) = ProbeSpace::of(addr) else {
            return;
        };
        let access = Access {
            cycle: now,
            tasklet: t as u32,
            pc: self.base.wrapping_add(self.probe_op << 2),
            space,
            offset,
            size,
            write,
            kind,
        };
        if let Some(probe) = self.probe.as_deref_mut() {
            probe.access(&access);
        }
    }

    /// Probed runs: the atomic-bit call of tasklet `t` at op `pc` on bit argument `arg`
    /// returned `v`.
    #[cold]
    fn probe_atomic(&mut self, t: usize, pc: u32, now: u64, arg: u32, acquire: bool, v: u32) {
        let bit = Self::atomic_bit(arg).map_or(arg, |b| b as u32);
        let event = if acquire {
            SyncEvent::Acquire {
                bit,
                acquired: v != 0,
            }
        } else {
            SyncEvent::Release { bit }
        };
        self.probe_sync(t, pc, now, event);
    }

    /// Probed runs: a synchronisation event of tasklet `t` at op `pc`.
    #[inline(always)]
    fn probe_sync(&mut self, t: usize, pc: u32, now: u64, event: SyncEvent) {
        if let Some(probe) = self.probe.as_deref_mut() {
            let at = self.base.wrapping_add(pc << 2);
            probe.sync(now, t as u32, at, &event);
        }
    }

    /// Probed runs: the run ends with `fault` of tasklet `t` at op `pc` (`u32::MAX`: none).
    #[cold]
    fn probe_fault(&mut self, t: usize, pc: u32, now: u64, fault: &Fault) {
        if let Some(probe) = self.probe.take() {
            let at = if pc == u32::MAX {
                0
            } else {
                self.base.wrapping_add(pc << 2)
            };
            probe.fault(&mut DpuView::new(self, now), t as u32, at, fault);
            self.probe = Some(probe);
        }
    }

    /// Builds the outcome from the final state.
    fn finish(mut self: Box<Self>, end: End, program: &Program) -> RunOutcome {
        // Slots executed ahead that never issued: their fused pairs do not count.
        for t in 0..self.nr {
            if let Some((run, at_start)) = self.unissued(t) {
                let log = &self.owed_log[t];
                let first = run + usize::from(!at_start);
                let back: u64 = log.fused[first..log.len]
                    .iter()
                    .map(|&f| u64::from(f))
                    .sum();
                self.run_stats.fused_pairs -= back;
            }
        }
        let end_cycle = self.end_cycle;
        let mut halted = false;
        let mut waiting = None;
        let fault = match end {
            End::AllExited => None,
            End::AllWaiting { sleeping } => {
                waiting = Some(WaitingTasklets {
                    sleeping,
                    pcs: (0..self.nr)
                        .filter(|t| sleeping & (1 << t) != 0)
                        .map(|t| {
                            let index = self.hot[t].pc.wrapping_sub(1);
                            (
                                t as u32,
                                program.text_base().wrapping_add(index.wrapping_shl(2)),
                            )
                        })
                        .collect(),
                });
                None
            }
            End::Halted => {
                halted = true;
                None
            }
            End::Fault {
                tasklet,
                pc_index,
                fault,
            } => Some(FaultReport {
                tasklet: tasklet as u32,
                pc: if pc_index == u32::MAX {
                    match &fault {
                        Fault::IramOutOfRange { addr } => *addr,
                        _ => 0,
                    }
                } else {
                    program.text_base().wrapping_add(pc_index.wrapping_shl(2))
                },
                fault,
            }),
        };
        let nr = self.nr;
        let mut tasklets = Vec::with_capacity(nr);
        for t in 0..nr {
            let mut s = std::mem::take(&mut self.stats[t]);
            s.instructions = self.hot[t].icount;
            if self.state[t] == State::Sleeping {
                s.sleep_cycles += end_cycle.saturating_sub(self.sleep_since[t]);
            }
            if self.state[t] != State::Exited {
                s.end_cycle = end_cycle;
            }
            tasklets.push(s);
        }
        let mut stats = std::mem::take(&mut self.run_stats);
        stats.tasklets = tasklets;
        stats.printf_bytes = self.printf_used;
        RunOutcome {
            cycles: end_cycle,
            instructions: self.total_instructions(),
            log: std::mem::take(&mut self.log),
            log_wrapped: self.log_wrapped,
            fault,
            halted,
            stats,
            dma_quirks: std::mem::take(&mut self.dma_quirks),
            engine: self.epochs.engine_use,
            waiting,
        }
    }
}

#[cold]
fn jump_fault(dest: u32, off: u32) -> Fault {
    if off & 3 != 0 {
        Fault::IramMisaligned { addr: dest }
    } else {
        Fault::IramOutOfRange { addr: dest }
    }
}
