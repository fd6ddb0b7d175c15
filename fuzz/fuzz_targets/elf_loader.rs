//! The ELF loader and its symbol table, from arbitrary bytes and from mutations of real DPU
//! binaries (the seed corpus: the conformance programs). Every input is loaded or refused
//! with a typed error; a loaded program's boot data, images and symbols must be what the
//! engine and the transfers rely on (inside the DPU's memories), and its code must decode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openpim_engine::map;
use openpim_runtime::{Error, Program};

fuzz_target!(|data: &[u8]| {
    let p = match Program::from_bytes(data) {
        Ok(p) => p,
        Err(e) => {
            // A refusal names its cause.
            assert!(!e.to_string().is_empty());
            assert!(
                matches!(
                    e,
                    Error::ElfInvalidFile { .. }
                        | Error::IramOverflow { .. }
                        | Error::WramOverflow { .. }
                        | Error::TooManyTasklets { .. }
                ),
                "unexpected error kind from the loader: {e:?}"
            );
            return;
        }
    };
    let boot = p.boot_info();
    assert!((1..=map::MAX_TASKLETS).contains(&boot.nr_tasklets));
    assert_eq!(boot.stacks.len(), boot.nr_tasklets as usize);
    for &(lo, hi) in &boot.stacks {
        assert!(lo < hi && hi <= map::WRAM_SIZE, "stack {lo:#x}..{hi:#x}");
    }
    let text_end = u64::from(p.text_base()) + p.text().len() as u64;
    assert!(p.text_base() >= map::IRAM_BASE);
    assert!(text_end <= u64::from(map::IRAM_BASE) + u64::from(map::IRAM_SIZE));
    assert!(u64::from(boot.entry) >= u64::from(p.text_base()) && u64::from(boot.entry) < text_end);
    assert!(p.wram_image().len() <= map::WRAM_SIZE as usize);
    for (off, bytes) in p.mram_segments() {
        assert!(u64::from(*off) + bytes.len() as u64 <= u64::from(map::MRAM_SIZE));
    }
    // The symbol table: every listed symbol is found by name, with the same value.
    let mut n = 0;
    for (name, s) in p.symbols() {
        assert_eq!(p.symbol(name).ok(), Some(s), "{name}");
        n += 1;
        if n > 64 {
            break;
        }
    }
    // Function names for a few pcs (what fault reports print).
    for pc in [boot.entry, p.text_base(), text_end as u32, 0, u32::MAX] {
        let _ = p.function_at(pc);
    }
    // The engine decodes any code; disassembly of every word is total. A text whose size is
    // not a multiple of 4 ends in a partial word, decoded with zeros after its bytes (as the
    // rest of IRAM holds).
    let decoded = p.decoded();
    assert_eq!(decoded.len(), p.text().len().div_ceil(4));
    let _ = decoded.disassemble_at(boot.entry);
    // A host write into IRAM (dpu_copy_to on an IRAM symbol, range-checked by the transfer)
    // makes a program whose code is still inside IRAM.
    if let Some(&b) = data.get(100) {
        let off = u32::from(b) * 4;
        let patch = &data[..data.len().min(64)];
        if off as usize + patch.len() <= map::IRAM_SIZE as usize {
            let q = p
                .with_patched_text(off, patch)
                .expect("an in-range IRAM write");
            let end = u64::from(q.text_base()) + q.text().len() as u64;
            assert!(end <= u64::from(map::IRAM_BASE) + u64::from(map::IRAM_SIZE));
            let _ = q.decoded();
        }
    }
});
