//! `addr2src ELF PC...`: the frames of each pc (for checking a program's debugging
//! information by hand).
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((path, pcs)) = args.split_first() else {
        eprintln!("usage: addr2src ELF PC...");
        std::process::exit(2);
    };
    let elf = std::fs::read(path).unwrap_or_else(|e| {
        eprintln!("addr2src: cannot read {path}: {e}");
        std::process::exit(2)
    });
    let info = openpim_debuginfo::DebugInfo::from_elf(&elf).unwrap_or_else(|e| {
        eprintln!("addr2src: {path}: {e}");
        std::process::exit(2)
    });
    for pc in pcs {
        let pc = u32::from_str_radix(pc.trim_start_matches("0x"), 16).unwrap_or(0);
        for f in info.frames(pc) {
            println!(
                "{pc:#x} {} {}",
                f.function,
                f.location().unwrap_or_default()
            );
        }
    }
}
