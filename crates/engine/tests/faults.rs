//! Every fault variant: the right value, tasklet and pc, and a helpful message.

mod common;
use common::*;
use openpim_engine::{map, run, DmaQuirkKind, DpuMemory, Fault, FaultReport, RunOutcome, Timing};
use openpim_isa::{asm, reg::*};

fn fault_of(out: &RunOutcome) -> FaultReport {
    out.fault.clone().expect("expected a fault")
}

/// Runs `p` on one tasklet and returns (fault, pc index).
fn one(p: &P) -> (Fault, u32) {
    let (out, _) = run_p(p, 1);
    let f = fault_of(&out);
    assert_eq!(f.tasklet, 0);
    (f.fault, (f.pc - BASE) / 4)
}

/// `li a1, addr` then `insn` (index 2) then exit.
fn access(addr: u32, insn: u32) -> (Fault, u32) {
    let mut p = P::new();
    p.li(A1, addr).i(insn).exit();
    one(&p)
}

#[test]
fn wram_out_of_range() {
    assert_eq!(
        access(0x1_0000, asm::lw(A0, A1, 0)),
        (
            Fault::WramOutOfRange {
                addr: 0x1_0000,
                size: 4
            },
            2
        )
    );
    assert_eq!(
        access(0x0400_0000, asm::sb(A0, A1, 1)),
        (
            Fault::WramOutOfRange {
                addr: 0x0400_0001,
                size: 1
            },
            2
        )
    );
    // Negative offsets wrap to huge addresses.
    assert_eq!(
        access(0, asm::lw(A0, A1, -4)),
        (
            Fault::BadAddress {
                addr: 0xffff_fffc,
                size: 4
            },
            2
        )
    );
}

#[test]
fn mram_out_of_range() {
    assert_eq!(
        access(0x0c00_0000, asm::lw(A0, A1, 0)),
        (
            Fault::MramOutOfRange {
                addr: 0x0c00_0000,
                size: 4
            },
            2
        )
    );
    // Inside the 64 MiB map but past the (test) MRAM slice.
    let past = map::MRAM_BASE + MRAM_TEST_SIZE as u32;
    assert_eq!(
        access(past, asm::sw(A0, A1, 0)),
        (
            Fault::MramOutOfRange {
                addr: past,
                size: 4
            },
            2
        )
    );
}

#[test]
fn mram_last_bytes_of_the_full_64_mib() {
    let mut p = P::new();
    p.li(A1, map::MRAM_BASE + map::MRAM_SIZE - 4)
        .i(asm::sw(A1, A1, 0))
        .exit();
    let mut wram = vec![0u8; map::WRAM_SIZE as usize];
    let mut mram = vec![0u8; map::MRAM_SIZE as usize];
    let out = run(
        &p.program(),
        &boot(1),
        DpuMemory {
            wram: &mut wram,
            mram: &mut mram,
        },
        &timing(),
    );
    assert_eq!(out.fault, None);
    assert_eq!(&mram[mram.len() - 4..], &0x0bff_fffcu32.to_le_bytes());
    let mut p = P::new();
    p.li(A1, map::MRAM_BASE + map::MRAM_SIZE - 2)
        .i(asm::lw(A0, A1, 0))
        .exit();
    let out = run(
        &p.program(),
        &boot(1),
        DpuMemory {
            wram: &mut wram,
            mram: &mut mram,
        },
        &timing(),
    );
    assert_eq!(
        fault_of(&out).fault,
        Fault::Misaligned {
            addr: 0x0bff_fffe,
            size: 4
        }
    );
}

#[test]
fn iram_and_atomic_space_are_not_data() {
    assert_eq!(
        access(map::IRAM_BASE, asm::lw(A0, A1, 0)),
        (
            Fault::BadAddress {
                addr: map::IRAM_BASE,
                size: 4
            },
            2
        )
    );
    assert_eq!(
        access(map::ATOMIC_BASE, asm::sb(A0, A1, 0)),
        (
            Fault::BadAddress {
                addr: map::ATOMIC_BASE,
                size: 1
            },
            2
        )
    );
}

#[test]
fn misaligned() {
    assert_eq!(
        access(0x102, asm::lw(A0, A1, 0)),
        (
            Fault::Misaligned {
                addr: 0x102,
                size: 4
            },
            2
        )
    );
    assert_eq!(
        access(0x101, asm::sh_(A0, A1, 0)),
        (
            Fault::Misaligned {
                addr: 0x101,
                size: 2
            },
            2
        )
    );
    assert_eq!(
        access(0xffff, asm::lhu(A0, A1, 0)),
        (
            Fault::Misaligned {
                addr: 0xffff,
                size: 2
            },
            2
        )
    );
    assert_eq!(
        access(0x0800_0006, asm::sw(A0, A1, 0)),
        (
            Fault::Misaligned {
                addr: 0x0800_0006,
                size: 4
            },
            2
        )
    );
}

#[test]
fn fetch_outside_the_program() {
    // Running off the end.
    let mut p = P::new();
    p.i(asm::addi(A0, A0, 1));
    assert_eq!(one(&p), (Fault::IramOutOfRange { addr: BASE + 4 }, 1));
    // jalr to WRAM.
    let mut p = P::new();
    p.li(A1, 0x1234).i(asm::jalr(RA, A1, 0));
    assert_eq!(one(&p), (Fault::IramOutOfRange { addr: 0x1234 }, 2));
    // jr (no link) past the end.
    let mut p = P::new();
    p.li(A1, BASE + 0x100).i(asm::jalr(ZERO, A1, 0));
    assert_eq!(one(&p), (Fault::IramOutOfRange { addr: BASE + 0x100 }, 2));
    // A taken branch whose target is outside: faults at the branch.
    let mut p = P::new();
    p.i(asm::beq(ZERO, ZERO, -8));
    assert_eq!(one(&p), (Fault::IramOutOfRange { addr: BASE - 8 }, 0));
    // ... but is harmless when not taken.
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 1))
        .i(asm::beq(A0, ZERO, 0x800))
        .exit();
    assert_eq!(run_p(&p, 1).0.fault, None);
    // jal outside.
    let mut p = P::new();
    p.i(asm::jal(RA, 4096));
    assert_eq!(one(&p), (Fault::IramOutOfRange { addr: BASE + 4096 }, 0));
}

#[test]
fn misaligned_jump() {
    let mut p = P::new();
    p.li(A1, BASE + 6).i(asm::jalr(RA, A1, 0)).exit();
    assert_eq!(one(&p), (Fault::IramMisaligned { addr: BASE + 6 }, 2));
    let mut p = P::new();
    p.i(asm::bne(ZERO, A0, 0))
        .i(asm::addi(A0, ZERO, 1))
        .i(asm::beq(A0, A0, 2))
        .exit();
    assert_eq!(one(&p), (Fault::IramMisaligned { addr: BASE + 10 }, 2));
}

#[test]
fn illegal_instruction_only_when_executed() {
    let mut p = P::new();
    p.i(asm::jal(ZERO, 8)).i(0x02b5_0533).exit(); // skip the mul
    assert_eq!(run_p(&p, 1).0.fault, None);
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, 1)).i(0x02b5_0533).exit();
    assert_eq!(
        one(&p),
        (Fault::IllegalInstruction { word: 0x02b5_0533 }, 1)
    );
    let mut p = P::new();
    p.i(0xc000_2573); // rdcycle (csr)
    assert_eq!(
        one(&p),
        (Fault::IllegalInstruction { word: 0xc000_2573 }, 0)
    );
}

#[test]
fn breakpoint() {
    let mut p = P::new();
    p.i(asm::ebreak());
    assert_eq!(one(&p), (Fault::Breakpoint, 0));
}

fn dma(nr: u32, a0: u32, a1: u32, n: u32) -> (Fault, u32) {
    let mut p = P::new();
    p.li(A0, a0).li(A1, a1).li(A2, n).sys(nr).exit();
    one(&p)
}

/// Runs one DMA (`nr` 2 = MRAM→WRAM, 3 = WRAM→MRAM) on memories where WRAM byte `i` of
/// 0x1000.. is `i`, MRAM byte `i` is `!i`; returns the outcome and memories.
fn dma_run(nr: u32, a0: u32, a1: u32, n: u32, strict: bool) -> (RunOutcome, Dpu) {
    let mut p = P::new();
    p.li(A0, a0).li(A1, a1).li(A2, n).sys(nr).exit();
    let mut d = Dpu::new();
    for i in 0..0x3000usize {
        d.wram[0x1000 + i] = i as u8;
        d.mram[i] = !(i as u8);
    }
    let t = Timing {
        strict_dma: strict,
        engine: openpim_engine::Engine::default(),
        ..timing()
    };
    let out = d.run(&p, &boot(1), &t);
    (out, d)
}

/// Bytes moved MRAM→WRAM by an `mram_read(mram, 0x1000, n)`: how many WRAM bytes from
/// 0x1000 changed from their initial pattern to the MRAM pattern.
fn moved_by_read(mram: u32, n: u32) -> (RunOutcome, usize) {
    let (out, d) = dma_run(2, mram, 0x1000, n, false);
    let moff = (mram & 0x03ff_fff8) as usize;
    let moved = (0..0x3000usize)
        .take_while(|&i| d.wram[0x1000 + i] == !((moff + i) as u8))
        .count();
    (out, moved)
}

#[test]
fn dma_length_is_what_the_length_field_encodes() {
    let m = map::MRAM_BASE;
    // (asked, moved): the 8-bit field holds (n >> 3) - 1.
    for (n, want) in [
        (8, 8),
        (16, 16),
        (2048, 2048),
        (1, 2048),
        (0, 2048),
        (7, 2048),
        (12, 8),
        (20, 16),
        (4096, 2048),
        (2056, 8),
    ]
    .map(|(n, w): (u32, u32)| (n, w))
    {
        let (out, moved) = moved_by_read(m, n);
        assert_eq!(out.fault, None, "n = {n}");
        assert_eq!(moved, want as usize, "n = {n}");
        let quirk = n % 8 != 0 || n == 0 || n > 2048;
        assert_eq!(out.stats.dma_quirks, u64::from(quirk), "n = {n}");
        assert_eq!(out.stats.dma_bytes_read, u64::from(want), "n = {n}");
        if quirk {
            let q = &out.dma_quirks[0];
            assert_eq!((q.size, q.moved, q.read), (n, want, true));
            assert_eq!(q.kinds, vec![DmaQuirkKind::SizeEncoded]);
            assert_eq!((q.pc - BASE) / 4, 7, "pc of the ecall");
        } else {
            assert!(out.dma_quirks.is_empty());
        }
    }
    // The DMA time follows the bytes moved, not the bytes asked.
    let (a, _) = moved_by_read(m, 1);
    let (b, _) = moved_by_read(m, 2048);
    assert_eq!(a.cycles, b.cycles);
}

#[test]
fn dma_addresses_lose_their_low_three_bits() {
    let m = map::MRAM_BASE;
    // MRAM byte address: read from the 8-aligned address below.
    let (out, moved) = moved_by_read(m + 0x105, 16);
    assert_eq!((out.fault.is_none(), moved), (true, 16));
    assert_eq!(out.dma_quirks[0].kinds, vec![DmaQuirkKind::AlignedDown]);
    // WRAM address unaligned, write direction: lands at the aligned address.
    let (out, d) = dma_run(3, 0x1003, m + 0x200, 8, false);
    assert_eq!(out.fault, None);
    assert_eq!(&d.mram[0x200..0x208], &[0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(out.dma_quirks[0].kinds, vec![DmaQuirkKind::AlignedDown]);
    assert!(!out.dma_quirks[0].read);
}

#[test]
fn dma_mram_offsets_work_without_the_base() {
    let (out, moved) = moved_by_read(0x208, 24);
    assert_eq!((out.fault.is_none(), moved), (true, 24));
    assert_eq!(out.dma_quirks[0].kinds, vec![DmaQuirkKind::MramWithoutBase]);
    // Several at once are all named.
    let (out, _) = moved_by_read(0x20b, 1);
    assert_eq!(
        out.dma_quirks[0].kinds,
        vec![
            DmaQuirkKind::SizeEncoded,
            DmaQuirkKind::AlignedDown,
            DmaQuirkKind::MramWithoutBase
        ]
    );
}

#[test]
fn dma_quirks_are_counted_and_the_first_few_kept() {
    let mut p = P::new();
    p.li(A0, map::MRAM_BASE).li(A1, 0x1000);
    for _ in 0..20 {
        p.li(A2, 4).sys(2);
    }
    p.exit();
    let (out, _) = run_p(&p, 1);
    assert_eq!(out.fault, None);
    assert_eq!(out.stats.dma_quirks, 20);
    assert!(!out.dma_quirks.is_empty() && out.dma_quirks.len() <= 8);
}

#[test]
fn strict_dma_makes_the_tolerated_cases_faults() {
    let m = map::MRAM_BASE;
    let fault = |nr, a0, a1, n| dma_run(nr, a0, a1, n, true).0.fault.map(|f| f.fault);
    assert_eq!(
        fault(2, m + 4, 0x100, 8),
        Some(Fault::DmaMisaligned {
            wram: 0x100,
            mram: m + 4
        })
    );
    assert_eq!(
        fault(3, 0x104, m, 8),
        Some(Fault::DmaMisaligned {
            wram: 0x104,
            mram: m
        })
    );
    for n in [0, 4, 12, 2056] {
        assert_eq!(fault(2, m, 0x100, n), Some(Fault::DmaBadSize { size: n }));
    }
    assert_eq!(
        fault(2, 0x100, 0x100, 8),
        Some(Fault::DmaOutOfRange {
            wram: 0x100,
            mram: 0x100,
            size: 8
        })
    );
    assert_eq!(fault(2, m, 0x100, 2048), None);
}

#[test]
fn dma_out_of_range_always_faults() {
    let m = map::MRAM_BASE;
    assert_eq!(
        dma(2, m, 0xfff8, 16),
        (
            Fault::DmaOutOfRange {
                wram: 0xfff8,
                mram: m,
                size: 16
            },
            7
        )
    );
    // An encoded length counts: 1 byte asked at the end of WRAM moves 2,048.
    assert_eq!(
        dma(2, m, 0xfff8, 1),
        (
            Fault::DmaOutOfRange {
                wram: 0xfff8,
                mram: m,
                size: 2048
            },
            7
        )
    );
    let past = m + MRAM_TEST_SIZE as u32 - 8;
    assert_eq!(
        dma(3, 0x100, past, 16),
        (
            Fault::DmaOutOfRange {
                wram: 0x100,
                mram: past,
                size: 16
            },
            7
        )
    );
    // Neither an MRAM address nor an offset below 64 MiB.
    for bad in [0x0400_0000, 0x07ff_fff8, m + 0x0400_0000, 0xf000_0000] {
        assert_eq!(
            dma(2, bad, 0x100, 8),
            (
                Fault::DmaOutOfRange {
                    wram: 0x100,
                    mram: bad,
                    size: 8
                },
                7
            )
        );
    }
    // The largest legal transfers are fine.
    let mut p = P::new();
    p.li(A0, m)
        .li(A1, 0x1_0000 - 2048)
        .li(A2, 2048)
        .sys(2)
        .exit();
    assert_eq!(run_p(&p, 1).0.fault, None);
}

#[test]
fn stack_overflow() {
    let mut p = P::new();
    p.i(asm::addi(SP, SP, -1024)); // exactly to stack_lo: fine
    p.i(asm::addi(SP, SP, -4)); // below
    p.exit();
    let (out, _) = run_p(&p, 2);
    let f = fault_of(&out);
    assert_eq!(f.tasklet, 0);
    assert_eq!(f.pc, BASE + 4);
    assert_eq!(
        f.fault,
        Fault::StackOverflow {
            sp: STACKS - 4,
            stack_lo: STACKS
        }
    );
    assert!(f.fault.to_string().contains("STACK_SIZE_DEFAULT"));
    // Tasklet 1 (stack lo 0x8400) overflows through a generic sp write.
    let mut p = P::new();
    p.i(asm::beq(TP, ZERO, 12));
    p.i(asm::addi(T0, SP, -0x404));
    p.i(asm::addi(SP, T0, 0));
    p.exit();
    let (out, _) = run_p(&p, 2);
    let f = fault_of(&out);
    assert_eq!(f.tasklet, 1);
    assert_eq!(f.pc, BASE + 8);
    assert_eq!(
        f.fault,
        Fault::StackOverflow {
            sp: STACKS + STACK - 4,
            stack_lo: STACKS + STACK
        }
    );
}

fn fault_call(code: u32, detail: u32) -> Fault {
    let mut p = P::new();
    p.li(A0, code).li(A1, detail).sys(11);
    one(&p).0
}

#[test]
fn program_detected_faults() {
    assert_eq!(
        fault_call(1, 4096),
        Fault::HeapExhausted { requested: 4096 }
    );
    assert_eq!(fault_call(2, 77), Fault::AssertionFailed { line: 77 });
    assert_eq!(fault_call(3, 5), Fault::SeqreadMisuse { detail: 5 });
    assert_eq!(fault_call(4, 6), Fault::AllocatorMisuse { detail: 6 });
    assert_eq!(
        fault_call(42, 7),
        Fault::ProgramFault {
            code: 42,
            detail: 7
        }
    );
    assert_eq!(fault_call(2, 77).to_string(), "assertion failed at line 77");
}

#[test]
fn bad_atomic_bit() {
    let mut p = P::new();
    p.li(A0, 256).sys(4);
    assert_eq!(one(&p), (Fault::BadAtomicBit { bit: 256 }, 3));
    let mut p = P::new();
    p.li(A0, 0xf000_0100).sys(5);
    assert_eq!(one(&p), (Fault::BadAtomicBit { bit: 0xf000_0100 }, 3));
}

#[test]
fn bad_tasklet_id() {
    let mut p = P::new();
    p.li(A0, 2).sys(7);
    let (out, _) = run_p(&p, 2);
    assert_eq!(
        fault_of(&out).fault,
        Fault::BadTaskletId {
            id: 2,
            nr_tasklets: 2
        }
    );
}

#[test]
fn unknown_ecall() {
    let mut p = P::new();
    p.sys(99);
    assert_eq!(one(&p), (Fault::UnknownEcall { nr: 99 }, 1));
}

#[test]
fn cycle_limit() {
    let mut p = P::new();
    p.i(asm::jal(ZERO, 0));
    let mut tm = timing();
    tm.max_cycles = Some(1000);
    let out = Dpu::new().run(&p, &boot(16), &tm);
    assert_eq!(fault_of(&out).fault, Fault::CycleLimit { limit: 1000 });
    assert_eq!(out.cycles, 1000);
    assert_eq!(out.instructions, 1000);
    // One tasklet: issues at 0, 11, ..., 990 (91 of them); the clock then reaches 1001.
    let out = Dpu::new().run(&p, &boot(1), &tm);
    assert_eq!(fault_of(&out).fault, Fault::CycleLimit { limit: 1000 });
    assert_eq!(out.cycles, 1001);
    assert_eq!(out.instructions, 91);
}

#[test]
fn a_stoppable_run_ends_when_asked_and_is_unchanged_otherwise() {
    use openpim_engine::{run_stoppable, STOP_CHECK_CYCLES};
    use std::sync::atomic::{AtomicU32, Ordering};
    let mut p = P::new();
    p.i(asm::jal(ZERO, 0)); // forever
    let program = p.program();
    let mut tm = timing();
    tm.max_cycles = Some(3 * STOP_CHECK_CYCLES + 5);
    let (mut wram, mut mram) = (vec![0u8; map::WRAM_SIZE as usize], vec![0u8; 1 << 20]);
    let mut go = |stop: &(dyn Fn() -> bool + Sync)| {
        run_stoppable(
            &program,
            &boot(16),
            DpuMemory {
                wram: &mut wram,
                mram: &mut mram,
            },
            &tm,
            stop,
        )
    };
    // Asked at the start, then every STOP_CHECK_CYCLES: stopped at the third question.
    let asked = AtomicU32::new(0);
    let out = go(&|| asked.fetch_add(1, Ordering::Relaxed) == 2);
    assert_eq!(fault_of(&out).fault, Fault::Stopped);
    assert_eq!(out.cycles, 2 * STOP_CHECK_CYCLES);
    assert_eq!(asked.load(Ordering::Relaxed), 3);
    // Stopped before it started.
    assert_eq!(go(&|| true).cycles, 0);
    // Never stopped: the run is the plain run's, to its cycle limit.
    let out = go(&|| false);
    let plain = Dpu::new().run(&p, &boot(16), &tm);
    assert_eq!(
        fault_of(&out).fault,
        Fault::CycleLimit {
            limit: 3 * STOP_CHECK_CYCLES + 5
        }
    );
    assert_eq!(
        (out.cycles, out.instructions),
        (plain.cycles, plain.instructions)
    );
}

#[test]
fn cycle_limit_inside_an_arithmetic_call_reports_the_call() {
    let mut p = P::new();
    p.i(asm::addi(A0, ZERO, -1)).i(asm::addi(A1, ZERO, -1)); // 0, 1
    p.sys(20); // MUL32 at index 3: 3 + 32 slots (two operands large as unsigned)
    p.exit();
    let mut tm = timing();
    tm.max_cycles = Some(100);
    let out = Dpu::new().run(&p, &boot(1), &tm);
    let f = fault_of(&out);
    assert_eq!(f.fault, Fault::CycleLimit { limit: 100 });
    assert_eq!(f.pc, BASE + 12);
}

#[test]
fn bad_perf_mode() {
    let mut p = P::new();
    p.li(A0, 4).sys(8);
    assert_eq!(one(&p), (Fault::BadEcallArgument { nr: 8, value: 4 }, 3));
}

#[test]
fn bad_boot_information() {
    let mut p = P::new();
    p.exit();
    let bad = |b: openpim_engine::BootInfo, wram: usize| {
        let mut w = vec![0u8; wram];
        let mut m = vec![0u8; 64];
        let out = run(
            &p.program(),
            &b,
            DpuMemory {
                wram: &mut w,
                mram: &mut m,
            },
            &timing(),
        );
        matches!(fault_of(&out).fault, Fault::BadBoot { .. })
    };
    let ws = map::WRAM_SIZE as usize;
    assert!(bad(boot(0), ws));
    let mut b = boot(24);
    b.nr_tasklets = 25;
    assert!(bad(b, ws));
    let mut b = boot(2);
    b.stacks.pop();
    assert!(bad(b, ws));
    assert!(bad(boot(1), ws - 1));
    let mut b = boot(1);
    b.init_writes = vec![(0x2, 0)];
    assert!(bad(b, ws));
    let mut b = boot(1);
    b.init_writes = vec![(0xfffe_fffc, 0)];
    assert!(bad(b, ws));
}

#[test]
fn entry_outside_the_program() {
    let mut p = P::new();
    p.exit();
    let mut b = boot(1);
    b.entry = BASE + 8;
    let out = Dpu::new().run(&p, &b, &timing());
    let f = fault_of(&out);
    assert_eq!(f.fault, Fault::IramOutOfRange { addr: BASE + 8 });
    assert_eq!(f.pc, BASE + 8);
    assert_eq!(out.cycles, 0);
}

#[test]
fn describe_names_the_instruction() {
    let mut p = P::new();
    p.li(A1, 0x102).i(asm::lw(A0, A1, 0));
    let program = p.program();
    let out = Dpu::new().run(&p, &boot(1), &timing());
    let f = fault_of(&out);
    assert_eq!(
        f.describe(&program),
        "tasklet 0 at pc 0x80000008 (lw a0, 0(a1)): misaligned access of 4 bytes at 0x00000102 \
         (loads and stores must be naturally aligned)"
    );
    assert_eq!(
        f.to_string(),
        "tasklet 0 at pc 0x80000008: misaligned access of 4 bytes at 0x00000102 \
         (loads and stores must be naturally aligned)"
    );
}

#[test]
fn a_fault_keeps_earlier_output_and_stops_everyone() {
    let mut p = P::new();
    p.li(A0, 0x400).li(A1, 0x500).sys(10); // printf "x"
    p.i(asm::beq(TP, ZERO, 8)); // t0 loops forever, t1 faults
    p.i(asm::ebreak());
    p.i(asm::jal(ZERO, 0));
    let mut d = Dpu::new();
    d.put_str(0x400, "x");
    let out = d.run(&p, &boot(2), &timing());
    let f = fault_of(&out);
    assert_eq!((f.tasklet, f.fault), (1, Fault::Breakpoint));
    assert_eq!(out.log, b"xx");
}
