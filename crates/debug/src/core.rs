//! Core dumps of faulting DPUs (`OPENPIM_CORE_DIR=DIR`): one ELF core file `core.RANK.DPU`
//! per faulting DPU, which `gdb-multiarch PROGRAM CORE` opens at the fault.
//!
//! The file is an ELF32 RISC-V core as Linux writes one, so that GDB's RISC-V support reads
//! it unchanged:
//! - a `PT_NOTE` segment: `NT_PRPSINFO` (the program), one `NT_PRSTATUS` per tasklet (the
//!   faulting one first, so that GDB selects it; thread id = tasklet + 1; registers in the
//!   kernel's RISC-V order: pc, x1..x31) and an `OPENPIM` note (DPU, fault, tasklet states);
//! - `PT_LOAD` segments at the linker script's addresses: IRAM (the program's code), the 64
//!   KiB of WRAM, and the 4 KiB MRAM pages the launch touched (loads, stores and DMA).
//!
//! Watching the accesses makes every run of the process a probed run (the interpreter).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use openpim_engine::map::{MRAM_BASE, WRAM_SIZE};
use openpim_engine::probe::{Access, DpuView, Probe, Space, TaskletState};
use openpim_engine::Fault;
use openpim_runtime::observe::{self, Observers, RunObserver, RunSite};

use crate::error::Error;

/// The directory core files are written into.
pub const CORE_DIR_ENV: &str = "OPENPIM_CORE_DIR";
/// Size of the MRAM pages a core holds.
pub const PAGE: u32 = 4096;

const NT_PRSTATUS: u32 = 1;
const NT_PRPSINFO: u32 = 3;
/// The `OPENPIM` note's type: UTF-8 text, `key: value` lines.
const NT_OPENPIM_DPU: u32 = 0x4f50_0001;
const EM_RISCV: u16 = 243;
const ET_CORE: u16 = 4;
const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
/// `struct elf_prstatus` of 32-bit RISC-V Linux: 72 bytes of header, 32 registers, fpvalid.
const PRSTATUS_SIZE: usize = 204;
const PRSTATUS_REG: usize = 72;
/// `struct elf_prpsinfo` of 32-bit RISC-V Linux (32-bit uid/gid).
const PRPSINFO_SIZE: usize = 128;

/// Where to write cores.
#[derive(Clone, Debug)]
pub struct Config {
    pub dir: PathBuf,
}

impl Config {
    pub fn from_env() -> Result<Option<Config>, Error> {
        Ok(std::env::var(CORE_DIR_ENV)
            .ok()
            .filter(|d| !d.trim().is_empty())
            .map(|d| Config {
                dir: PathBuf::from(d),
            }))
    }
}

struct Tool {
    dir: PathBuf,
    /// A write failed (said once).
    broken: Arc<AtomicBool>,
}

/// Installs the core writer. The directory is created now; when it cannot be, that is said
/// once and no core is written (the program runs on).
pub fn start(config: Config) {
    if let Err(e) = std::fs::create_dir_all(&config.dir) {
        eprintln!(
            "openpim: {CORE_DIR_ENV}={}: cannot create the directory ({e}); no core file will be written: choose a writable directory",
            config.dir.display()
        );
        return;
    }
    observe::install(Arc::new(Tool {
        dir: config.dir,
        broken: Arc::new(AtomicBool::new(false)),
    }));
}

impl Observers for Tool {
    fn observe(&self, site: &RunSite) -> Option<Box<dyn RunObserver>> {
        Some(Box::new(CoreWatch {
            site: site.clone(),
            path: self.dir.join(format!("core.{}.{}", site.rank, site.dpu)),
            pages: BTreeSet::new(),
            broken: Arc::clone(&self.broken),
        }))
    }
}

/// Watches one run: the MRAM pages it touches, and its fault.
struct CoreWatch {
    site: RunSite,
    path: PathBuf,
    pages: BTreeSet<u32>,
    broken: Arc<AtomicBool>,
}

impl Probe for CoreWatch {
    fn access(&mut self, a: &Access) {
        if a.space == Space::Mram && a.size > 0 {
            let last = a.offset.saturating_add(a.size - 1);
            for p in a.offset / PAGE..=last / PAGE {
                self.pages.insert(p);
            }
        }
    }

    fn fault(&mut self, dpu: &mut DpuView<'_, '_>, tasklet: u32, pc: u32, fault: &Fault) {
        let core = build(&self.site, dpu, tasklet, pc, fault, &self.pages);
        if let Err(e) = std::fs::write(&self.path, core) {
            if !self.broken.swap(true, Ordering::AcqRel) {
                eprintln!(
                    "openpim: {CORE_DIR_ENV}: cannot write {} ({e}); no core file will be written: choose a writable directory",
                    self.path.display()
                );
            }
        } else if !openpim_runtime::quiet() {
            eprintln!(
                "openpim: core of DPU {}.{} written to {} (gdb-multiarch {} {})",
                self.site.rank,
                self.site.dpu,
                self.path.display(),
                self.site.program.origin().unwrap_or("PROGRAM"),
                self.path.display()
            );
        }
    }
}

impl RunObserver for CoreWatch {}

/// One `PT_LOAD` segment: address, bytes, flags.
struct Segment<'a> {
    addr: u32,
    bytes: &'a [u8],
    flags: u32,
}

fn note(out: &mut Vec<u8>, name: &str, kind: u32, desc: &[u8]) {
    let name = format!("{name}\0");
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.resize(out.len().next_multiple_of(4), 0);
    out.extend_from_slice(desc);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// The signal a fault is shown as (as the GDB server shows it).
fn signal_of(fault: &Fault) -> u16 {
    match fault {
        Fault::IllegalInstruction { .. } => 4,
        Fault::Breakpoint => 5,
        Fault::Misaligned { .. } | Fault::IramMisaligned { .. } | Fault::DmaMisaligned { .. } => 7,
        Fault::DivisionByZero => 8,
        Fault::WramOutOfRange { .. }
        | Fault::MramOutOfRange { .. }
        | Fault::BadAddress { .. }
        | Fault::IramOutOfRange { .. }
        | Fault::DmaOutOfRange { .. }
        | Fault::StackOverflow { .. } => 11,
        _ => 6,
    }
}

fn state_name(s: TaskletState) -> &'static str {
    match s {
        TaskletState::Running { .. } => "running",
        TaskletState::Sleeping => "sleeping",
        TaskletState::Exited => "exited",
    }
}

/// The core file of the DPU `dpu` at its fault.
fn build(
    site: &RunSite,
    dpu: &DpuView<'_, '_>,
    faulting: u32,
    fault_pc: u32,
    fault: &Fault,
    pages: &BTreeSet<u32>,
) -> Vec<u8> {
    let signal = signal_of(fault);
    let program = site.program.origin().unwrap_or("(from memory)").to_string();
    let n = dpu.nr_tasklets();
    let order: Vec<u32> = std::iter::once(faulting)
        .filter(|&t| t < n)
        .chain((0..n).filter(|&t| t != faulting))
        .collect();

    let mut notes = Vec::new();
    let mut psinfo = vec![0u8; PRPSINFO_SIZE];
    psinfo[12..16].copy_from_slice(&1u32.to_le_bytes());
    let base = Path::new(&program)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fname = base.as_bytes();
    psinfo[32..32 + fname.len().min(15)].copy_from_slice(&fname[..fname.len().min(15)]);
    let args = program.as_bytes();
    psinfo[48..48 + args.len().min(79)].copy_from_slice(&args[..args.len().min(79)]);
    note(&mut notes, "CORE", NT_PRPSINFO, &psinfo);
    for &t in &order {
        let mut st = vec![0u8; PRSTATUS_SIZE];
        // Every thread carries the process's signal, as Linux writes it (readers take the
        // last note's).
        let sig = signal;
        st[0..4].copy_from_slice(&u32::from(sig).to_le_bytes());
        st[12..14].copy_from_slice(&sig.to_le_bytes());
        st[24..28].copy_from_slice(&(t + 1).to_le_bytes());
        let regs = dpu.regs(t).copied().unwrap_or([0; 32]);
        // The kernel's order: pc in place of x0, then x1..x31.
        let pc = if t == faulting { fault_pc } else { dpu.pc(t) };
        st[PRSTATUS_REG..PRSTATUS_REG + 4].copy_from_slice(&pc.to_le_bytes());
        for (r, v) in regs.iter().enumerate().skip(1) {
            let at = PRSTATUS_REG + 4 * r;
            st[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        note(&mut notes, "CORE", NT_PRSTATUS, &st);
    }
    let mut text = format!(
        "dpu: {}.{}\nprogram: {program}\nfault: tasklet {faulting} at pc {fault_pc:#010x}: {fault}\ncycle: {}\ntasklets: {n}\n",
        site.rank,
        site.dpu,
        dpu.cycle()
    );
    for t in 0..n {
        text.push_str(&format!("tasklet {t}: {}\n", state_name(dpu.state(t))));
    }
    note(&mut notes, "OPENPIM", NT_OPENPIM_DPU, text.as_bytes());

    let mut segments = vec![
        Segment {
            addr: site.program.text_base(),
            bytes: site.program.text(),
            flags: 4 | 1,
        },
        Segment {
            addr: 0,
            bytes: &dpu.wram()[..(WRAM_SIZE as usize).min(dpu.wram().len())],
            flags: 4 | 2,
        },
    ];
    // Touched pages, contiguous runs as one segment.
    let mram = dpu.mram();
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &p in pages {
        match runs.last_mut() {
            Some((_, end)) if *end == p => *end = p + 1,
            _ => runs.push((p, p + 1)),
        }
    }
    for (first, end) in runs {
        let start = (first * PAGE) as usize;
        let stop = ((end * PAGE) as usize).min(mram.len());
        if start < stop {
            segments.push(Segment {
                addr: MRAM_BASE + first * PAGE,
                bytes: &mram[start..stop],
                flags: 4 | 2,
            });
        }
    }

    let phnum = 1 + segments.len();
    let mut offset = 52 + 32 * phnum;
    let mut out = Vec::new();
    // ELF header.
    out.extend_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0]);
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&ET_CORE.to_le_bytes());
    out.extend_from_slice(&EM_RISCV.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes()); // version
    out.extend_from_slice(&0u32.to_le_bytes()); // entry
    out.extend_from_slice(&52u32.to_le_bytes()); // phoff
    out.extend_from_slice(&0u32.to_le_bytes()); // shoff
    out.extend_from_slice(&0u32.to_le_bytes()); // flags (RV32I, no float ABI)
    out.extend_from_slice(&52u16.to_le_bytes()); // ehsize
    out.extend_from_slice(&32u16.to_le_bytes()); // phentsize
    out.extend_from_slice(&(phnum as u16).to_le_bytes());
    out.extend_from_slice(&40u16.to_le_bytes()); // shentsize
    out.extend_from_slice(&0u16.to_le_bytes()); // shnum
    out.extend_from_slice(&0u16.to_le_bytes()); // shstrndx
    let phdr = |out: &mut Vec<u8>, kind: u32, off: usize, addr: u32, size: usize, flags: u32| {
        for v in [
            kind,
            off as u32,
            addr,
            addr,
            size as u32,
            size as u32,
            flags,
            4,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    };
    phdr(&mut out, PT_NOTE, offset, 0, notes.len(), 4);
    offset += notes.len();
    for s in &segments {
        phdr(&mut out, PT_LOAD, offset, s.addr, s.bytes.len(), s.flags);
        offset += s.bytes.len();
    }
    out.extend_from_slice(&notes);
    for s in &segments {
        out.extend_from_slice(s.bytes);
    }
    out
}

/// A core file read back.
struct Parsed {
    notes: Vec<(String, u32, Vec<u8>)>,
    loads: Vec<(u32, u32)>,
}

fn parse(data: &[u8]) -> Result<Parsed, String> {
    let u16_at = |o: usize| -> Result<u16, String> {
        data.get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| "truncated".to_string())
    };
    let u32_at = |o: usize| -> Result<u32, String> {
        data.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| "truncated".to_string())
    };
    if data.get(0..6) != Some(&[0x7f, b'E', b'L', b'F', 1, 1][..]) {
        return Err("not a 32-bit little-endian ELF file".into());
    }
    if u16_at(16)? != ET_CORE || u16_at(18)? != EM_RISCV {
        return Err("not a RISC-V core file (ELF type CORE, machine RISC-V)".into());
    }
    let phoff = u32_at(28)? as usize;
    let phnum = u16_at(44)? as usize;
    let mut parsed = Parsed {
        notes: Vec::new(),
        loads: Vec::new(),
    };
    for i in 0..phnum {
        let h = phoff + 32 * i;
        let (kind, off, addr, size) = (
            u32_at(h)?,
            u32_at(h + 4)? as usize,
            u32_at(h + 8)?,
            u32_at(h + 16)?,
        );
        match kind {
            PT_LOAD => parsed.loads.push((addr, size)),
            PT_NOTE => {
                let seg = data
                    .get(off..off + size as usize)
                    .ok_or("a note segment reaches past the end of the file")?;
                let mut at = 0;
                while at + 12 <= seg.len() {
                    let word = |o: usize| {
                        u32::from_le_bytes([seg[o], seg[o + 1], seg[o + 2], seg[o + 3]]) as usize
                    };
                    let (namesz, descsz, kind) = (word(at), word(at + 4), word(at + 8) as u32);
                    let name_at = at + 12;
                    let desc_at = name_at + namesz.next_multiple_of(4);
                    let end = desc_at + descsz.next_multiple_of(4);
                    let (Some(name), Some(desc)) = (
                        seg.get(name_at..name_at + namesz),
                        seg.get(desc_at..desc_at + descsz),
                    ) else {
                        return Err("a note reaches past its segment".into());
                    };
                    let name = String::from_utf8_lossy(name)
                        .trim_end_matches('\0')
                        .to_string();
                    parsed.notes.push((name, kind, desc.to_vec()));
                    at = end;
                }
            }
            _ => {}
        }
    }
    Ok(parsed)
}

/// `openpim core inspect`: what a core file holds, with source lines when the program it
/// names (or `program`) is readable and has debug information.
pub fn inspect(path: &Path) -> Result<String, Error> {
    let bad = |why: String| Error::BadFile {
        path: path.display().to_string(),
        why,
    };
    let data = std::fs::read(path).map_err(|e| bad(format!("cannot read it ({e})")))?;
    let parsed = parse(&data).map_err(bad)?;
    let info = parsed
        .notes
        .iter()
        .find(|(n, k, _)| n == "OPENPIM" && *k == NT_OPENPIM_DPU)
        .map(|(_, _, d)| String::from_utf8_lossy(d).into_owned())
        .ok_or_else(|| bad("no OPENPIM note: not a DPU core written by OpenPIM".into()))?;
    let field = |key: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}: ")))
            .unwrap_or("?")
            .to_string()
    };
    let program = field("program");
    let debug = std::fs::read(&program)
        .ok()
        .and_then(|elf| openpim_debuginfo::DebugInfo::from_elf(&elf).ok());
    let mut out = format!(
        "DPU core {}\n  DPU {}, program {program}\n  fault: {}\n  at cycle {}\n",
        path.display(),
        field("dpu"),
        field("fault"),
        field("cycle")
    );
    out.push_str("  tasklets (the faulting one first):\n");
    for (_, kind, desc) in parsed
        .notes
        .iter()
        .filter(|(n, k, _)| n == "CORE" && *k == NT_PRSTATUS)
    {
        let _ = kind;
        if desc.len() < PRSTATUS_SIZE {
            continue;
        }
        let word = |o: usize| u32::from_le_bytes([desc[o], desc[o + 1], desc[o + 2], desc[o + 3]]);
        let t = word(24).saturating_sub(1);
        let pc = word(PRSTATUS_REG);
        let sp = word(PRSTATUS_REG + 8);
        let state = field(&format!("tasklet {t}"));
        let place = debug
            .as_ref()
            .map(|d| {
                let f = d.function(pc).unwrap_or_else(|| "?".into());
                match d.location(pc) {
                    Some(l) => format!(" {f} ({l})"),
                    None => format!(" {f}"),
                }
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "    tasklet {t}: {state}, pc {pc:#010x}{place}, sp {sp:#010x}\n"
        ));
    }
    out.push_str("  memory:\n");
    for (addr, size) in &parsed.loads {
        let what = if *addr >= 0x8000_0000 {
            "IRAM"
        } else if *addr >= MRAM_BASE {
            "MRAM"
        } else {
            "WRAM"
        };
        out.push_str(&format!(
            "    {what} {addr:#010x}..{:#010x} ({size} bytes)\n",
            u64::from(*addr) + u64::from(*size)
        ));
    }
    out.push_str(&format!(
        "  open it with: gdb-multiarch {program} {}\n",
        path.display()
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_other_files() {
        let dir = std::env::temp_dir().join(format!("openpim-core-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("not-a-core");
        std::fs::write(&f, b"hello").unwrap();
        let e = inspect(&f).unwrap_err().to_string();
        assert!(e.contains("not a 32-bit little-endian ELF"), "{e}");
        let e = inspect(&dir.join("missing")).unwrap_err().to_string();
        assert!(e.contains("cannot read it"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn notes_are_padded_to_words() {
        let mut out = Vec::new();
        note(&mut out, "CORE", 1, &[1, 2, 3]);
        // 12 header + "CORE\0" padded to 8 + 3 bytes padded to 4
        assert_eq!(out.len(), 12 + 8 + 4);
    }
}
