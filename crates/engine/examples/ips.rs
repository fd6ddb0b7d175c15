//! Speed benchmark of the interpreter: a compute-bound 16-tasklet kernel, hand-assembled.
//!
//! `cargo run --release -p openpim-engine --example ips [iterations-per-tasklet] [--no-fuse]`
//!
//! Each tasklet runs a loop of 10 RV32I instructions (loads, stores, ALU ops, a counter
//! decrement and branch, which fuse into one DPU instruction, so 9 issues) over its own WRAM
//! buffer; the program prints the simulated DPU instructions (issues) and RV32I instructions
//! per second of host time. `--no-fuse` decodes without issue-slot fusion.

use openpim_engine::{map, run, BootInfo, DpuMemory, Program, Timing};
use openpim_isa::{asm, reg::*};
use std::time::Instant;

fn kernel(iterations: u32) -> Vec<u32> {
    let mut w = Vec::new();
    w.extend(asm::li(S2, iterations));
    w.push(asm::slli(A2, TP, 8)); // a2 = buffer of this tasklet (256 bytes at tp * 256)
    w.push(asm::addi(S3, A2, 0));
    let top = w.len();
    w.push(asm::lw(A1, A2, 0));
    w.push(asm::add(A0, A0, A1));
    w.push(asm::xor(A3, A3, A0));
    w.push(asm::slli(A4, A0, 3));
    w.push(asm::sw(A4, A2, 0));
    w.push(asm::addi(A2, A2, 4));
    w.push(asm::andi(A2, A2, 0xfc));
    w.push(asm::or(A2, A2, S3));
    w.push(asm::addi(S2, S2, -1));
    let off = (top as i32 - w.len() as i32) * 4;
    w.push(asm::bne(S2, ZERO, off));
    w.push(asm::addi(A7, ZERO, 0));
    w.push(asm::ecall());
    w
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fuse = !args.iter().any(|a| a == "--no-fuse");
    let iterations: u32 = args
        .iter()
        .find_map(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let nr = 16u32;
    let words = kernel(iterations);
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let program = Program::decode_with(map::IRAM_BASE, &bytes, fuse);
    let boot = BootInfo {
        entry: map::IRAM_BASE,
        nr_tasklets: nr,
        stacks: (0..nr)
            .map(|i| (0x8000 + i * 0x400, 0x8000 + (i + 1) * 0x400))
            .collect(),
        printf_capacity: 1 << 20,
        init_writes: vec![],
    };
    let timing = Timing::upmem_default();
    let mut wram = vec![0u8; map::WRAM_SIZE as usize];
    let mut mram = vec![0u8; map::MRAM_SIZE as usize];
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..3 {
        let start = Instant::now();
        let out = run(
            &program,
            &boot,
            DpuMemory {
                wram: &mut wram,
                mram: &mut mram,
            },
            &timing,
        );
        let secs = start.elapsed().as_secs_f64();
        assert!(out.fault.is_none(), "{:?}", out.fault);
        best = best.min(secs);
        last = Some(out);
    }
    let out = last.unwrap();
    println!(
        "{} tasklets, {} instructions, {} cycles ({:.3} IPC), best of 3: {:.3} s",
        nr,
        out.instructions,
        out.cycles,
        out.instructions as f64 / out.cycles as f64,
        best
    );
    println!(
        "{:.1} million simulated instructions per second ({:.1} million RV32I instructions per second, {} fused pairs)",
        out.instructions as f64 / best / 1e6,
        (out.instructions + out.stats.fused_pairs) as f64 / best / 1e6,
        out.stats.fused_pairs
    );
}
