//! Writes the seed corpora of the fuzz targets from real DPU programs:
//!
//! `make_corpus OUT_DIR PROGRAM.dpu...` writes `OUT_DIR/elf_loader/<name>` (the ELF bytes)
//! and `OUT_DIR/engine/<name>` (the program as an `EngineCase`: its code, boot data and WRAM
//! image, with a few MRAM seeds). Programs the loader refuses are kept for the loader only.

use std::path::Path;

use openpim_fuzz::engine_case::EngineCase;
use openpim_runtime::Program;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((out, programs)) = args.split_first() else {
        eprintln!("usage: make_corpus OUT_DIR PROGRAM.dpu...");
        std::process::exit(2);
    };
    let out = Path::new(out);
    for sub in ["elf_loader", "engine"] {
        std::fs::create_dir_all(out.join(sub)).expect("create the corpus directory");
    }
    let (mut elf, mut engine) = (0, 0);
    for path in programs {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let name = Path::new(path)
            .components()
            .rev()
            .take(3)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .filter(|c| c != "bin")
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("-");
        std::fs::write(out.join("elf_loader").join(&name), &bytes).expect("write");
        elf += 1;
        let Ok(p) = Program::from_bytes(&bytes) else {
            continue;
        };
        let boot = p.boot_info();
        let (lo0, hi0) = boot.stacks[0];
        let case = EngineCase {
            strict_dma: false,
            fuse_pairs: true,
            nr_tasklets: boot.nr_tasklets,
            entry_index: (boot.entry - p.text_base()) / 4,
            stack_base: lo0,
            stack_size: hi0 - lo0,
            printf_capacity: boot.printf_capacity,
            mram_seed: 1,
            init_writes: boot.init_writes.iter().copied().take(2).collect(),
            text: p.text().to_vec(),
            wram: p.wram_image().to_vec(),
        };
        std::fs::write(out.join("engine").join(&name), case.encode()).expect("write");
        engine += 1;
    }
    println!(
        "{elf} loader seeds, {engine} engine seeds in {}",
        out.display()
    );
}
