//! The translating engine (`Engine::Translator`) against the interpreter (`Engine::
//! Interpreter`): every program runs on both, complete and cut by cycle limits, with identical
//! outcomes (results, cycles, instructions, every statistic, faults) and memories; and the
//! translated code must really have run (`EngineUse::translated_slots`), or the comparison
//! would prove nothing. The programs exercise what translated code does itself — register
//! operations of every kind, fused slots, word pairs aligned and not, byte and half-word
//! accesses, calls and returns through registers, WRAM that tasklets share (so that batches
//! roll back) — and what it must hand to the interpreter: environment calls, accesses that
//! fault, a stack overflow, a jump outside the program.

mod common;

use common::*;
use openpim_engine::{map, Engine, Fault, Program, RunOutcome, Timing};
use openpim_isa::{asm::*, reg::*};

/// WRAM address of each tasklet's 64-byte result area.
const RES: i32 = 0x400;

fn timing_for(engine: Engine, limit: Option<u64>) -> Timing {
    let mut t = timing();
    t.engine = engine;
    t.max_cycles = limit;
    t
}

fn run_on(program: &Program, nr: u32, engine: Engine, limit: Option<u64>) -> (RunOutcome, Dpu) {
    let mut d = Dpu::new();
    let out = d.run_program(program, &boot(nr), &timing_for(engine, limit));
    (out, d)
}

/// Runs `program` on both engines, complete and cut at about 100 cycle limits, for each
/// tasklet count of `nrs`; asserts identical outcomes and memories; returns the complete
/// translated runs (with their memories).
fn both_engines(program: &Program, nrs: &[u32]) -> Vec<(RunOutcome, Dpu)> {
    let mut runs = Vec::new();
    for &nr in nrs {
        let (jit, jd) = run_on(program, nr, Engine::Translator, Some(50_000_000));
        let (int, id) = run_on(program, nr, Engine::Interpreter, Some(50_000_000));
        assert_eq!(jit, int, "outcomes differ on {nr} tasklets");
        assert_eq!(
            first_difference(&jd.wram, &id.wram),
            None,
            "WRAM differs, {nr} tasklets"
        );
        assert_eq!(
            first_difference(&jd.mram, &id.mram),
            None,
            "MRAM differs, {nr} tasklets"
        );
        if Engine::translation_available() {
            assert_eq!(jit.engine.engine, Engine::Translator);
            assert!(
                jit.engine.translated_slots > 0,
                "no slot ran as translated code on {nr} tasklets"
            );
        }
        assert_eq!(int.engine.engine, Engine::Interpreter);
        assert_eq!(int.engine.translated_slots, 0);
        for limit in spread(jit.cycles) {
            let (a, ad) = run_on(program, nr, Engine::Translator, Some(limit));
            let (b, bd) = run_on(program, nr, Engine::Interpreter, Some(limit));
            assert_eq!(
                a, b,
                "outcomes differ on {nr} tasklets cut at cycle {limit}"
            );
            assert_eq!(
                first_difference(&ad.wram, &bd.wram),
                None,
                "WRAM, cut at {limit}"
            );
        }
        runs.push((jit, jd));
    }
    runs
}

/// Every register operation, fused compare-and-branch loops, constants and a call through
/// `jal`/`jalr` (`ret`), in a loop; each tasklet stores its registers' mix at `RES + 64 *
/// id`.
fn alu_program() -> P {
    let mut p = P::new();
    // s0 = id, s1 = result area, s2 = loop count, s3.. = state.
    p.i(addi(S0, A0, 0));
    p.i(slli(S1, S0, 6));
    p.i(addi(S1, S1, RES));
    p.i(addi(S2, ZERO, 200));
    p.li(S3, 0x9e37_79b9);
    p.i(xor(S3, S3, S0));
    p.i(addi(S4, S0, 1));
    p.i(addi(S5, ZERO, 0));
    let top = p.here();
    p.i(slli(T0, S3, 13));
    p.i(xor(S3, S3, T0));
    p.i(srli(T0, S3, 17));
    p.i(xor(S3, S3, T0));
    p.i(slli(T0, S3, 5));
    p.i(xor(S3, S3, T0));
    p.i(srai(T1, S3, 3));
    p.i(sub(S4, S4, T1));
    p.i(sra(T2, S4, S0));
    p.i(sll(T3, T2, S0));
    p.i(srl(T4, S3, S4));
    p.i(or(T5, T3, T4));
    p.i(and(T6, T5, S3));
    p.i(slt(A1, S3, S4));
    p.i(sltu(A2, S3, S4));
    p.i(slti(A3, S4, -5));
    p.i(sltiu(A4, S4, 100));
    p.i(xori(A5, T6, -1));
    p.i(ori(A6, A5, 0x70));
    p.i(andi(A6, A6, 0x3f0));
    p.i(add(S5, S5, A1));
    p.i(add(S5, S5, A2));
    p.i(add(S5, S5, A3));
    p.i(add(S5, S5, A4));
    p.i(add(S5, S5, A6));
    // A call: mixes s5 into s4 (jal, then jalr back).
    let call = hole(&mut p);
    // Unsigned and signed branches, both ways.
    let b1 = hole(&mut p);
    p.i(addi(S5, S5, 3));
    fill(&mut p, b1, |o| bltu(S3, S4, o));
    let b2 = hole(&mut p);
    p.i(addi(S5, S5, 5));
    fill(&mut p, b2, |o| bge(S4, S3, o));
    p.i(addi(S2, S2, -1));
    p.i(bne(S2, ZERO, top - p.here()));
    p.i(sw(S3, S1, 0));
    p.i(sw(S4, S1, 4));
    p.i(sw(S5, S1, 8));
    p.exit();
    // The called function.
    fill(&mut p, call, |o| jal(RA, o));
    p.i(xor(S4, S4, S5));
    p.i(addi(S4, S4, 7));
    p.i(jalr(ZERO, RA, 0));
    p
}

#[test]
fn register_code_is_the_same_on_both_engines() {
    let p = alu_program();
    for program in [p.program_fused(), p.program()] {
        let runs = both_engines(&program, &[1, 4, 11, 16, 24]);
        // The program's own results are a function of the tasklet id alone.
        let (_, d) = &runs[0];
        let (_, d16) = &runs[3];
        assert_eq!(d.w32(RES as u32 + 8), d16.w32(RES as u32 + 8));
        assert_ne!(d.w32(RES as u32 + 8), 0);
    }
}

/// Word pairs at aligned and misaligned addresses, bytes and half-words, each tasklet in its
/// own area and every tasklet reading a shared table: loads and stores that the granule
/// tracking must grant, and a shared counter area written by all (rollbacks).
fn memory_program(shared_writes: bool) -> P {
    let mut p = P::new();
    p.i(addi(S0, A0, 0));
    p.i(slli(S1, S0, 6));
    p.i(addi(S1, S1, RES));
    p.i(addi(S2, ZERO, 60));
    let top = p.here();
    // A pair at an 8-aligned address (one slot), and one at +4 (two).
    p.i(lw(T0, S1, 0));
    p.i(lw(T1, S1, 4));
    p.i(addi(T0, T0, 1));
    p.i(add(T1, T1, T0));
    p.i(sw(T0, S1, 0));
    p.i(sw(T1, S1, 4));
    p.i(lw(T2, S1, 4));
    p.i(lw(T3, S1, 8));
    p.i(add(T3, T3, T2));
    p.i(sw(T2, S1, 12));
    p.i(sw(T3, S1, 16));
    // Bytes and half-words, signed and unsigned.
    p.i(sb(T1, S1, 20));
    p.i(sh_(T1, S1, 22));
    p.i(lb(T4, S1, 20));
    p.i(lbu(T5, S1, 20));
    p.i(lh(T6, S1, 22));
    p.i(lhu(A1, S1, 22));
    p.i(add(A2, T4, T5));
    p.i(add(A2, A2, T6));
    p.i(add(A2, A2, A1));
    p.i(sw(A2, S1, 24));
    // The shared table (read by all).
    p.i(andi(A3, S2, 7));
    p.i(slli(A3, A3, 2));
    p.i(lw(A4, A3, 0x200));
    p.i(add(A2, A2, A4));
    p.i(sw(A2, S1, 28));
    if shared_writes {
        // Every tasklet writes its id into a shared word, then reads its neighbour's slot.
        p.i(sw(S0, ZERO, 0x300));
        p.i(lw(A5, ZERO, 0x300));
        p.i(add(A2, A2, A5));
        p.i(sw(A2, S1, 32));
    }
    p.i(addi(S2, S2, -1));
    p.i(bne(S2, ZERO, top - p.here()));
    p.exit();
    p
}

#[test]
fn wram_accesses_are_the_same_on_both_engines() {
    for shared in [false, true] {
        let p = memory_program(shared);
        for program in [p.program_fused(), p.program()] {
            let mut runs = Vec::new();
            for nr in [1u32, 3, 12, 16] {
                let init = |d: &mut Dpu| {
                    for i in 0..8u32 {
                        d.set_w32(0x200 + 4 * i, 0x1111_1111u32.wrapping_mul(i + 1));
                    }
                };
                // (`same_init` compares the translated run with the interpreter's, with and
                // without its shortcuts.)
                let mut tm = timing();
                tm.engine = Engine::Translator;
                let (out, d) = same_init(&program, nr, &tm, &init);
                assert_eq!(out.fault, None);
                if Engine::translation_available() {
                    assert!(out.engine.translated_slots > 0);
                }
                runs.push(d);
            }
            // Tasklet 0's private results do not depend on how many ran beside it.
            let r0 = runs[0].w32(RES as u32 + 28);
            assert_eq!(r0, runs[3].w32(RES as u32 + 28));
        }
    }
}

/// Environment calls amid translated code: DMA, the SDK's lock around a shared counter, a
/// multiplication, `me()`; the interpreter executes each and the translated code goes on.
#[test]
fn environment_calls_between_translated_slots() {
    let mut p = P::new();
    p.i(addi(S0, A0, 0));
    p.i(slli(S1, S0, 6));
    p.i(addi(S1, S1, RES));
    p.i(addi(S2, ZERO, 20));
    let top = p.here();
    // Register work.
    for _ in 0..6 {
        p.i(slli(T0, S2, 3));
        p.i(xor(S3, S3, T0));
        p.i(addi(S3, S3, 0x55));
    }
    // A multiplication (the MUL32 call).
    p.i(addi(A0, S3, 0));
    p.i(addi(A1, S2, 3));
    p.sys(20);
    p.i(add(S4, S4, A0));
    // The lock (bit 3) around a shared counter at 0x300.
    p.i(addi(S6, ZERO, 3));
    lock(&mut p, S6, 14);
    p.i(lw(T1, ZERO, 0x300));
    p.i(addi(T1, T1, 1));
    p.i(sw(T1, ZERO, 0x300));
    unlock(&mut p, S6);
    // 8 bytes of the tasklet's area to MRAM and back (DMA).
    p.i(sw(S4, S1, 0));
    p.i(addi(A0, S1, 0));
    p.li(A1, map::MRAM_BASE);
    p.i(slli(T2, S0, 3));
    p.i(add(A1, A1, T2));
    p.i(addi(A2, ZERO, 8));
    p.sys(3);
    // (MRAM to WRAM: a0 = MRAM, a1 = WRAM.)
    p.i(addi(A0, A1, 0));
    p.i(addi(A1, S1, 8));
    p.sys(2);
    p.i(addi(S2, S2, -1));
    p.i(bne(S2, ZERO, top - p.here()));
    p.exit();
    let runs = both_engines(&p.program_fused(), &[1, 5, 16]);
    let (out, d) = &runs[2];
    assert_eq!(out.fault, None);
    assert_eq!(d.w32(0x300), 16 * 20, "the locked counter");
    assert_eq!(
        d.w32(RES as u32 + 8),
        d.w32(RES as u32),
        "the DMA round trip"
    );
}

/// Faults met by translated code are the interpreter's: the same kind, tasklet, pc and cycle.
#[test]
fn faults_in_translated_code_are_the_interpreters() {
    // (name, the faulting tail after a loop of register work)
    type Tail = fn(&mut P);
    let tails: [(&str, Tail); 5] = [
        ("load past WRAM", |p| {
            p.li(T0, map::WRAM_SIZE);
            p.i(lw(T1, T0, 0));
        }),
        ("misaligned store", |p| {
            p.i(addi(T0, ZERO, 0x402));
            p.i(sw(T1, T0, 0));
        }),
        ("stack overflow", |p| {
            p.i(addi(SP, SP, -2047));
            p.i(addi(SP, SP, -2047));
        }),
        ("jump outside the program", |p| {
            p.li(T0, 0x1234_5678);
            p.i(jalr(RA, T0, 0));
        }),
        ("illegal instruction", |p| {
            p.i(0xffff_ffff);
        }),
    ];
    for (name, tail) in tails {
        let mut p = P::new();
        p.i(addi(S2, ZERO, 50));
        let top = p.here();
        p.i(slli(T0, S2, 3));
        p.i(xor(S3, S3, T0));
        p.i(addi(S2, S2, -1));
        p.i(bne(S2, ZERO, top - p.here()));
        // Tasklet 5 (or the last) faults; the others exit.
        let skip = hole(&mut p);
        tail(&mut p);
        fill(&mut p, skip, |o| bne(A0, ZERO, o));
        p.exit();
        let program = p.program_fused();
        for nr in [1u32, 16] {
            let (a, _) = run_on(&program, nr, Engine::Translator, None);
            let (b, _) = run_on(&program, nr, Engine::Interpreter, None);
            assert_eq!(a, b, "{name}, {nr} tasklets");
            let f = a
                .fault
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: no fault"));
            assert_eq!(f.tasklet, 0, "{name}");
            let expected = match name {
                "load past WRAM" => matches!(f.fault, Fault::WramOutOfRange { .. }),
                "misaligned store" => matches!(f.fault, Fault::Misaligned { .. }),
                "stack overflow" => matches!(f.fault, Fault::StackOverflow { .. }),
                "jump outside the program" => matches!(f.fault, Fault::IramOutOfRange { .. }),
                _ => matches!(f.fault, Fault::IllegalInstruction { .. }),
            };
            assert!(expected, "{name}: {:?}", f.fault);
        }
    }
}

/// Code pages are never writable and executable at once (after translating, no mapping of the
/// process is both).
#[cfg(target_os = "linux")]
#[test]
fn no_page_is_writable_and_executable() {
    let p = alu_program();
    let (out, _) = run_on(&p.program_fused(), 16, Engine::Translator, None);
    if Engine::translation_available() {
        assert!(out.engine.translated_slots > 0);
    }
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let wx: Vec<&str> = maps
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|p| p.starts_with("rwx"))
        })
        .collect();
    assert!(wx.is_empty(), "writable and executable mappings: {wx:?}");
}

/// One program image is translated once, shared by every run of it (DPUs and launches).
#[test]
fn translation_is_kept_across_runs() {
    if !Engine::translation_available() {
        return;
    }
    let program = alu_program().program_fused();
    let _ = run_on(&program, 16, Engine::Translator, None);
    let first = program.translation_stats();
    assert!(first.regions > 0 && first.code_bytes > 0);
    for _ in 0..3 {
        let _ = run_on(&program, 16, Engine::Translator, None);
    }
    assert_eq!(program.translation_stats().regions, first.regions);
}
