//! DPU programs: ELF loading and validation, the host-reachable symbol table, boot data.
//!
//! The binary contract is `docs/internals/dpu-abi.md`. A program is parsed once and shared
//! (`Arc<Program>`) by every DPU it is loaded on; its code is decoded by the engine once, on
//! first launch.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use object::elf::{EM_RISCV, PT_LOAD, STT_FILE, STT_FUNC, STT_SECTION};
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::{Object, ObjectSection, ObjectSymbol, SymbolSection};
use openpim_engine::{map, BootInfo};

use crate::error::{Error, Result};

/// Name of the MRAM heap symbol (`DPU_MRAM_HEAP_POINTER_NAME`).
pub const MRAM_HEAP_SYMBOL: &str = "__sys_used_mram_end";

/// Default printf buffer capacity when `__stdout_buffer_size` is absent.
const DEFAULT_STDOUT_BUFFER: u32 = 1 << 20;

/// A host-reachable symbol: a program-view address and a size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Symbol {
    pub address: u32,
    pub size: u32,
}

/// A loaded and validated DPU program.
pub struct Program {
    origin: Option<String>,
    boot: BootInfo,
    text_base: u32,
    text: Vec<u8>,
    /// WRAM image from address 0 (data, zeroed bss, stacks' initial zeros).
    wram_image: Vec<u8>,
    /// `(MRAM offset, bytes)` of initialised MRAM data.
    mram_segments: Vec<(u32, Vec<u8>)>,
    symbols: HashMap<String, Symbol>,
    /// Functions sorted by address: `(start, size, name)`.
    functions: Vec<(u32, u32, String)>,
    /// WRAM address of `CLOCKS_PER_SEC` (a 4-byte word the loader sets), if the program has it.
    clocks_per_sec: Option<u32>,
    /// The engine's decoding of the code, shared with every program of the process that has
    /// the same code (`decoded_code`).
    decoded: OnceLock<Arc<openpim_engine::Program>>,
    /// The ELF image it was parsed from (a remote backend sends it to the daemon).
    elf: Arc<[u8]>,
}

/// Environment variable: the slots batches must run from an op before the translating engine
/// translates the code there (default `openpim_engine`'s `HOT_SLOTS`; 0 translates at once).
/// For tests that must see small programs run as translated code.
pub const JIT_HOT_SLOTS_ENV: &str = "OPENPIM_JIT_HOT_SLOTS";

/// `OPENPIM_JIT_HOT_SLOTS`, read once (an unparsable value is ignored, with a notice).
fn translation_threshold() -> Option<u64> {
    static SLOTS: OnceLock<Option<u64>> = OnceLock::new();
    *SLOTS.get_or_init(|| {
        let v = std::env::var(JIT_HOT_SLOTS_ENV).ok()?;
        let parsed = v.trim().parse::<u64>().ok();
        if parsed.is_none() {
            eprintln!(
                "openpim: {JIT_HOT_SLOTS_ENV}='{v}' is not a number of slots; the default threshold is used"
            );
        }
        parsed
    })
}

/// The decoded code at `text_base` with bytes `text`: the one a live program of the process
/// already has, or a new decoding (kept while a program holds it).
fn decoded_code(text_base: u32, text: &[u8]) -> Arc<openpim_engine::Program> {
    type Key = (u32, Vec<u8>);
    static CODE: std::sync::Mutex<Option<HashMap<Key, std::sync::Weak<openpim_engine::Program>>>> =
        std::sync::Mutex::new(None);
    let mut code = CODE.lock().unwrap_or_else(|e| e.into_inner());
    let map = code.get_or_insert_with(HashMap::new);
    let key = (text_base, text.to_vec());
    if let Some(p) = map.get(&key).and_then(std::sync::Weak::upgrade) {
        return p;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let mut p = openpim_engine::Program::decode(text_base, text);
    if let Some(slots) = translation_threshold() {
        p = p.with_translation_threshold(slots);
    }
    let p = Arc::new(p);
    map.insert(key, Arc::downgrade(&p));
    p
}

/// The DPU runtime's `const volatile uint32_t CLOCKS_PER_SEC` (`perfcounter.h`): compiled
/// before the machine is known, so the loader writes the hardware profile's DPU frequency
/// (Hz) into it at every `dpu_load`, as the SDK's loader does.
pub const CLOCKS_PER_SEC_SYMBOL: &str = "CLOCKS_PER_SEC";

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program")
            .field("origin", &self.origin)
            .field("nr_tasklets", &self.boot.nr_tasklets)
            .field("text_bytes", &self.text.len())
            .field("wram_bytes", &self.wram_image.len())
            .field("symbols", &self.symbols.len())
            .finish()
    }
}

/// Which memory a loadable segment goes to.
enum Region {
    Wram,
    Mram,
    Iram,
    Atomic,
}

fn region_of(addr: u64, len: u64) -> Option<Region> {
    let within = |base: u32, size: u32| {
        addr >= u64::from(base) && addr + len <= u64::from(base) + u64::from(size)
    };
    if within(map::WRAM_BASE, map::WRAM_SIZE) {
        Some(Region::Wram)
    } else if within(map::MRAM_BASE, map::MRAM_SIZE) {
        Some(Region::Mram)
    } else if addr >= u64::from(map::IRAM_BASE) && addr < u64::from(map::ATOMIC_BASE) {
        // Range is checked against the IRAM size later, to report the overflow in bytes.
        Some(Region::Iram)
    } else if addr >= u64::from(map::ATOMIC_BASE) {
        Some(Region::Atomic)
    } else {
        None
    }
}

impl Program {
    /// Reads and loads a program file.
    pub fn from_file(path: &str) -> Result<Program> {
        let data = std::fs::read(path).map_err(|source| Error::ElfNoSuchFile {
            path: path.to_string(),
            source,
        })?;
        Program::parse(Some(path.to_string()), &data)
    }

    /// Loads a program from its ELF bytes.
    pub fn from_bytes(data: &[u8]) -> Result<Program> {
        Program::parse(None, data)
    }

    /// Parses and validates an ELF image; `origin` (a path) names it in errors.
    pub fn parse(origin: Option<String>, data: &[u8]) -> Result<Program> {
        let invalid = |reason: String| Error::ElfInvalidFile {
            origin: origin.clone(),
            reason,
        };
        if data.len() < 20 || &data[..4] != b"\x7fELF" {
            return Err(invalid(
                "not an ELF file; build DPU programs with dpu-upmem-dpurte-clang".into(),
            ));
        }
        if data[4] != 1 {
            return Err(invalid(
                "a 64-bit ELF file (a host program?); DPU programs are 32-bit RISC-V (RV32) ELF files built with dpu-upmem-dpurte-clang".into(),
            ));
        }
        if data[5] != 1 {
            return Err(invalid(
                "a big-endian ELF file; DPU programs are little-endian RV32".into(),
            ));
        }
        let elf = ElfFile32::<object::LittleEndian>::parse(data)
            .map_err(|e| invalid(format!("malformed ELF: {e}")))?;
        let endian = elf.endian();
        let machine = elf.elf_header().e_machine(endian);
        if machine != EM_RISCV {
            return Err(invalid(format!(
                "ELF machine {machine} is not RISC-V; DPU programs are RV32 ELF files built with dpu-upmem-dpurte-clang"
            )));
        }
        let entry = elf.elf_header().e_entry(endian);

        // Loadable segments.
        let mut wram_image = vec![0u8; 0];
        // End of the furthest WRAM segment that does not fit in WRAM.
        let mut wram_overflow: Option<u64> = None;
        let mut text_segments: Vec<(u32, Vec<u8>)> = Vec::new();
        let mut mram_segments = Vec::new();
        let mut iram_end: u64 = u64::from(map::IRAM_BASE);
        for ph in elf.elf_program_headers() {
            if ph.p_type(endian) != PT_LOAD {
                continue;
            }
            let addr = u64::from(ph.p_paddr(endian));
            let filesz = u64::from(ph.p_filesz(endian));
            let memsz = u64::from(ph.p_memsz(endian)).max(filesz);
            if memsz == 0 {
                continue;
            }
            let bytes = ph
                .data(endian, data)
                .map_err(|_| invalid(format!("segment at {addr:#x} points outside the file")))?;
            match region_of(addr, memsz) {
                Some(Region::Wram) => {
                    let end = (addr + memsz) as usize;
                    if wram_image.len() < end {
                        wram_image.resize(end, 0);
                    }
                    wram_image[addr as usize..addr as usize + bytes.len()].copy_from_slice(bytes);
                }
                Some(Region::Mram) => {
                    // Only initialised bytes are written; the rest (.mram.noinit) is left alone.
                    if !bytes.is_empty() {
                        mram_segments
                            .push(((addr - u64::from(map::MRAM_BASE)) as u32, bytes.to_vec()));
                    }
                }
                Some(Region::Iram) => {
                    iram_end = iram_end.max(addr + memsz);
                    if iram_end > u64::from(map::IRAM_BASE) + u64::from(map::IRAM_SIZE) {
                        // Refused below (IramOverflow, in bytes); never allocate its size,
                        // which a corrupt header can make gigabytes.
                        continue;
                    }
                    let mut seg = bytes.to_vec();
                    seg.resize(memsz as usize, 0);
                    text_segments.push((addr as u32, seg));
                }
                Some(Region::Atomic) => {}
                None => {
                    if addr < u64::from(map::MRAM_BASE) {
                        // Reported below, once the symbols tell the stacks' share.
                        wram_overflow =
                            wram_overflow.max(Some(addr + memsz - u64::from(map::WRAM_BASE)));
                        continue;
                    }
                    return Err(invalid(format!(
                        "segment at {addr:#x}..{:#x} is outside WRAM, MRAM and IRAM",
                        addr + memsz
                    )));
                }
            }
        }

        // Symbols: everything by name (for boot data), host-reachable ones, and functions.
        let mut all: HashMap<String, (u32, u32)> = HashMap::new();
        let mut symbols = HashMap::new();
        let mut functions = Vec::new();
        for sym in elf.symbols() {
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let st_type = sym.elf_symbol().st_type();
            if st_type == STT_SECTION || st_type == STT_FILE {
                continue;
            }
            let address = sym.address() as u32;
            let size = sym.size() as u32;
            // Linker-script labels are NOTYPE with size 0, which `is_definition` rejects.
            let defined = matches!(
                sym.section(),
                SymbolSection::Section(_) | SymbolSection::Absolute
            );
            if defined {
                all.entry(name.to_string()).or_insert((address, size));
            }
            let section_name = match sym.section() {
                SymbolSection::Section(idx) => {
                    elf.section_by_index(idx).ok().and_then(|s| s.name().ok())
                }
                _ => None,
            };
            let reachable = match section_name {
                Some(".dpu_host") => true,
                Some(s) if s == ".mram" || s == ".mram.noinit" || s.starts_with(".mram.") => true,
                Some(_) => (map::IRAM_BASE..map::ATOMIC_BASE).contains(&address),
                None => false,
            };
            if reachable && defined {
                symbols.insert(name.to_string(), Symbol { address, size });
            }
            if st_type == STT_FUNC && (map::IRAM_BASE..map::ATOMIC_BASE).contains(&address) {
                functions.push((address, size, name.to_string()));
            }
        }
        functions.sort();
        functions.dedup_by_key(|f| f.0);

        // IRAM size check.
        let iram_used = iram_end - u64::from(map::IRAM_BASE);
        let iram_used = match all.get("__sys_iram_end") {
            Some((end, _)) if u64::from(*end) > u64::from(map::IRAM_BASE) => {
                iram_used.max(u64::from(*end) - u64::from(map::IRAM_BASE))
            }
            _ => iram_used,
        };
        if iram_used > u64::from(map::IRAM_SIZE) {
            return Err(Error::IramOverflow {
                origin,
                needed: iram_used,
                capacity: u64::from(map::IRAM_SIZE),
            });
        }
        if text_segments.is_empty() {
            return Err(invalid(
                "no code in IRAM (no loadable segment at 0x80000000)".into(),
            ));
        }
        let text_base = text_segments
            .iter()
            .map(|(a, _)| *a)
            .min()
            .unwrap_or(map::IRAM_BASE);
        let text_end = iram_end as u32;
        let mut text = vec![0u8; (text_end - text_base) as usize];
        for (addr, seg) in &text_segments {
            let off = (addr - text_base) as usize;
            text[off..off + seg.len()].copy_from_slice(seg);
        }
        if entry < text_base || entry >= text_end {
            return Err(invalid(format!(
                "entry point {entry:#x} is not in the program's code"
            )));
        }

        // WRAM size check (image, then the linker's end marker and heap start).
        let mut wram_needed = (wram_image.len() as u64).max(wram_overflow.unwrap_or(0));
        for marker in ["__sys_wram_end", "__sys_heap_start"] {
            if let Some((a, _)) = all.get(marker) {
                if *a < map::MRAM_BASE {
                    wram_needed = wram_needed.max(u64::from(*a));
                }
            }
        }
        if wram_needed > u64::from(map::WRAM_SIZE) {
            // Name the stacks' share: with many tasklets they are the usual culprit.
            // (By symbol sizes: the data segment may not have been loaded. The stack table
            // holds two words per tasklet.)
            let nr = all.get("__sys_stack_table").map(|(_, size)| size / 8);
            let stacks = match (nr, all.get("__sys_stacks")) {
                (Some(n), Some((_, size))) if n > 0 => Some((n, u64::from(*size))),
                _ => None,
            };
            return Err(Error::WramOverflow {
                origin,
                needed: wram_needed,
                capacity: u64::from(map::WRAM_SIZE),
                stacks,
            });
        }

        let read_word = |addr: u32| -> Option<u32> {
            let a = addr as usize;
            wram_image
                .get(a..a + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let missing = |name: &str| {
            invalid(format!(
                "symbol {name} is missing: not a DPU program built by dpu-upmem-dpurte-clang"
            ))
        };

        // Tasklets.
        let (nr_addr, _) = *all
            .get("__sys_nr_tasklets")
            .ok_or_else(|| missing("__sys_nr_tasklets"))?;
        let nr_tasklets = read_word(nr_addr)
            .ok_or_else(|| invalid("__sys_nr_tasklets is not in WRAM data".into()))?;
        if nr_tasklets > map::MAX_TASKLETS {
            return Err(Error::TooManyTasklets {
                origin,
                nr: nr_tasklets,
                max: map::MAX_TASKLETS,
            });
        }
        if nr_tasklets == 0 {
            return Err(invalid("__sys_nr_tasklets is 0".into()));
        }

        // Stacks.
        let (table, _) = *all
            .get("__sys_stack_table")
            .ok_or_else(|| missing("__sys_stack_table"))?;
        let mut stacks = Vec::with_capacity(nr_tasklets as usize);
        for i in 0..nr_tasklets {
            // The table's address comes from the ELF: past the end of WRAM (or of the address
            // space) its entries are simply not in the image.
            let entry = |k: u32| table.checked_add(8 * i + k).and_then(&read_word);
            let (lo, hi) = (entry(0), entry(4));
            match (lo, hi) {
                (Some(lo), Some(hi)) if lo < hi && hi <= map::WRAM_SIZE => stacks.push((lo, hi)),
                (Some(lo), Some(hi)) if hi > map::WRAM_SIZE => {
                    return Err(Error::WramOverflow {
                        origin,
                        needed: u64::from(hi.max(lo)),
                        capacity: u64::from(map::WRAM_SIZE),
                        stacks: None,
                    })
                }
                _ => {
                    return Err(invalid(format!(
                        "stack of tasklet {i} in __sys_stack_table is invalid"
                    )))
                }
            }
        }

        // Printf buffer capacity and the heap pointer's initialisation.
        let printf_capacity = all
            .get("__stdout_buffer_size")
            .map(|(v, _)| *v)
            .unwrap_or(DEFAULT_STDOUT_BUFFER);
        let mut init_writes = Vec::new();
        if let (Some((ptr, _)), Some((start, _))) =
            (all.get("__sys_heap_pointer"), all.get("__sys_heap_start"))
        {
            init_writes.push((*ptr, *start));
        }

        let clocks_per_sec = all
            .get(CLOCKS_PER_SEC_SYMBOL)
            .filter(|(a, size)| {
                *size == 4 && a % 4 == 0 && u64::from(*a) + 4 <= u64::from(map::WRAM_SIZE)
            })
            .map(|(a, _)| *a);

        // The MRAM heap symbol: its size is the rest of MRAM.
        if let Some((addr, _)) = all.get(MRAM_HEAP_SYMBOL) {
            let end = u64::from(map::MRAM_BASE) + u64::from(map::MRAM_SIZE);
            if u64::from(*addr) >= u64::from(map::MRAM_BASE) && u64::from(*addr) <= end {
                symbols.insert(
                    MRAM_HEAP_SYMBOL.to_string(),
                    Symbol {
                        address: *addr,
                        size: (end - u64::from(*addr)) as u32,
                    },
                );
            }
        }

        Ok(Program {
            elf: Arc::from(data),
            origin,
            boot: BootInfo {
                entry,
                nr_tasklets,
                stacks,
                printf_capacity,
                init_writes,
            },
            text_base,
            text,
            wram_image,
            mram_segments,
            symbols,
            functions,
            clocks_per_sec,
            decoded: OnceLock::new(),
        })
    }

    /// The ELF image the program was parsed from.
    pub fn elf(&self) -> &[u8] {
        &self.elf
    }

    /// The path it was loaded from, if any.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// The bytes a load writes to each DPU (its code, WRAM image and MRAM segments): what the
    /// timeline charges a `dpu_load` for, as a broadcast of that many bytes.
    pub fn image_bytes(&self) -> u64 {
        let mram: usize = self.mram_segments.iter().map(|(_, b)| b.len()).sum();
        (self.text.len() + self.wram_image.len() + mram) as u64
    }

    /// NR_TASKLETS of the program.
    pub fn nr_tasklets(&self) -> u32 {
        self.boot.nr_tasklets
    }

    /// What the engine needs to boot the program.
    pub fn boot_info(&self) -> &BootInfo {
        &self.boot
    }

    /// Looks up a host-reachable symbol.
    pub fn symbol(&self, name: &str) -> Result<Symbol> {
        self.symbols
            .get(name)
            .copied()
            .ok_or_else(|| Error::UnknownSymbol {
                name: name.to_string(),
            })
    }

    /// All host-reachable symbols.
    pub fn symbols(&self) -> impl Iterator<Item = (&str, Symbol)> {
        self.symbols.iter().map(|(n, s)| (n.as_str(), *s))
    }

    /// `name+0xoff` of the function containing `pc`.
    pub fn function_at(&self, pc: u32) -> Option<String> {
        let i = self.functions.partition_point(|(start, _, _)| *start <= pc);
        let (start, size, name) = self.functions.get(i.checked_sub(1)?)?;
        // In u64: a symbol's size may reach past the end of the address space (a hostile or
        // corrupt ELF; found by the elf_loader fuzz target).
        if *size != 0 && u64::from(pc) >= u64::from(*start) + u64::from(*size) {
            return None;
        }
        Some(if pc == *start {
            name.clone()
        } else {
            format!("{name}+{:#x}", pc - start)
        })
    }

    /// First IRAM address of the code.
    pub fn text_base(&self) -> u32 {
        self.text_base
    }

    /// The code bytes (IRAM image from `text_base`).
    pub fn text(&self) -> &[u8] {
        &self.text
    }

    /// The WRAM image from address 0.
    pub fn wram_image(&self) -> &[u8] {
        &self.wram_image
    }

    /// Initialised MRAM data: `(offset, bytes)`.
    pub fn mram_segments(&self) -> &[(u32, Vec<u8>)] {
        &self.mram_segments
    }

    /// WRAM address of `CLOCKS_PER_SEC`, which the loader sets to the DPU frequency in Hz
    /// ([`CLOCKS_PER_SEC_SYMBOL`]); `None` when the program does not use it.
    pub fn clocks_per_sec_address(&self) -> Option<u32> {
        self.clocks_per_sec
    }

    /// The engine's decoded program (decoded once, on first use, and shared by every program
    /// of the process with the same code: a program loaded again, as hosts do before each
    /// launch, keeps its decoding and its translated code).
    pub fn decoded(&self) -> &openpim_engine::Program {
        self.decoded
            .get_or_init(|| decoded_code(self.text_base, &self.text))
    }

    /// A copy of this program with IRAM bytes at `iram_offset` replaced (host writes to IRAM).
    pub fn with_patched_text(&self, iram_offset: u32, bytes: &[u8]) -> Result<Arc<Program>> {
        let addr = map::IRAM_BASE + iram_offset;
        let mut text = self.text.clone();
        let mut text_base = self.text_base;
        if addr < text_base {
            let grow = (text_base - addr) as usize;
            let mut t = vec![0u8; grow];
            t.extend_from_slice(&text);
            text = t;
            text_base = addr;
        }
        let off = (addr - text_base) as usize;
        if text.len() < off + bytes.len() {
            text.resize(off + bytes.len(), 0);
        }
        text[off..off + bytes.len()].copy_from_slice(bytes);
        Ok(Arc::new(Program {
            origin: self.origin.clone(),
            boot: self.boot.clone(),
            text_base,
            text,
            wram_image: self.wram_image.clone(),
            mram_segments: self.mram_segments.clone(),
            symbols: self.symbols.clone(),
            functions: self.functions.clone(),
            clocks_per_sec: self.clocks_per_sec,
            decoded: OnceLock::new(),
            elf: Arc::clone(&self.elf),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{build_fixture, Fixture};

    #[test]
    fn rejects_non_elf_and_wrong_class() {
        let e = Program::from_bytes(b"hello world, not an elf file").unwrap_err();
        assert!(matches!(e, Error::ElfInvalidFile { .. }), "{e}");
        assert!(e.to_string().contains("not an ELF"), "{e}");
        let mut elf64 = vec![0u8; 64];
        elf64[..4].copy_from_slice(b"\x7fELF");
        elf64[4] = 2;
        elf64[5] = 1;
        let e = Program::from_bytes(&elf64).unwrap_err();
        assert!(e.to_string().contains("RV32"), "{e}");
        let e = Program::from_file("/nonexistent/prog.dpu").unwrap_err();
        assert!(matches!(e, Error::ElfNoSuchFile { .. }));
        // The host's own executable: a 64-bit ELF (or at least not RISC-V).
        let me = std::fs::read("/proc/self/exe").unwrap();
        assert!(matches!(
            Program::from_bytes(&me),
            Err(Error::ElfInvalidFile { .. })
        ));
    }

    #[test]
    fn loads_fixture() {
        let Some(bytes) = build_fixture(&Fixture::default()) else {
            return;
        };
        let p = Program::from_bytes(&bytes).unwrap();
        assert_eq!(p.nr_tasklets(), 2);
        let boot = p.boot_info();
        assert_eq!(boot.entry, 0x8000_0000);
        assert_eq!(boot.stacks, vec![(0x8000, 0x8400), (0x8400, 0x8800)]);
        assert_eq!(boot.printf_capacity, 4096);
        assert_eq!(boot.init_writes.len(), 1);
        let input = p.symbol("input").unwrap();
        assert_eq!(input.size, 64);
        assert!(input.address < 0x1_0000);
        assert_eq!(p.symbol("result").unwrap().size, 8);
        assert_eq!(
            p.symbol("mbuf").unwrap(),
            Symbol {
                address: 0x0800_0000,
                size: 1024
            }
        );
        assert_eq!(p.symbol("mscratch").unwrap().size, 4096);
        let heap = p.symbol(MRAM_HEAP_SYMBOL).unwrap();
        assert_eq!(
            u64::from(heap.address) + u64::from(heap.size),
            0x0800_0000u64 + u64::from(map::MRAM_SIZE)
        );
        assert!(p.symbol("_start").is_ok(), "IRAM symbols are reachable");
        assert!(matches!(
            p.symbol("plain_wram"),
            Err(Error::UnknownSymbol { .. })
        ));
        assert!(matches!(
            p.symbol("nosuch"),
            Err(Error::UnknownSymbol { .. })
        ));
        assert_eq!(p.function_at(0x8000_0000).as_deref(), Some("_start"));
        // .mram data is loaded, .mram.noinit is not.
        assert_eq!(p.mram_segments().len(), 1);
        assert_eq!(&p.mram_segments()[0].1[..3], &[1, 2, 3]);
        assert_eq!(p.mram_segments()[0].1.len(), 1024);
    }

    #[test]
    fn too_many_tasklets() {
        let f = Fixture {
            nr_tasklets: 25,
            ..Fixture::default()
        };
        let Some(bytes) = build_fixture(&f) else {
            return;
        };
        let e = Program::from_bytes(&bytes).unwrap_err();
        assert!(
            matches!(
                e,
                Error::TooManyTasklets {
                    nr: 25,
                    max: 24,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("NR_TASKLETS"));
    }

    #[test]
    fn wram_overflow_names_bytes() {
        // 20000 words = 80000 bytes of .bss: more than the 65536 bytes of WRAM.
        let f = Fixture {
            big_wram_words: Some(20000),
            ..Fixture::default()
        };
        let Some(bytes) = build_fixture(&f) else {
            return;
        };
        let e = Program::from_bytes(&bytes).unwrap_err();
        let Error::WramOverflow {
            needed, capacity, ..
        } = e
        else {
            panic!("{e}")
        };
        assert_eq!(capacity, 65536);
        assert!(needed > 80000, "{needed}");
        assert!(e_msg(needed, capacity).contains("bytes too many"));
    }

    #[test]
    fn wram_overflow_names_the_stacks() {
        // 2 tasklets whose stacks (__sys_stacks) take 70000 bytes: more than WRAM.
        let f = Fixture {
            stacks_bytes: Some(70000),
            ..Fixture::default()
        };
        let Some(bytes) = build_fixture(&f) else {
            return;
        };
        let e = Program::from_bytes(&bytes).unwrap_err();
        let Error::WramOverflow { stacks, .. } = &e else {
            panic!("{e}")
        };
        assert_eq!(*stacks, Some((2, 70000)));
        let msg = e.to_string();
        assert!(
            msg.contains("the stacks of its 2 tasklets take 70000") && msg.contains("STACK_SIZE"),
            "{msg}"
        );
    }

    fn e_msg(needed: u64, capacity: u64) -> String {
        Error::WramOverflow {
            origin: None,
            needed,
            capacity,
            stacks: None,
        }
        .to_string()
    }

    #[test]
    fn iram_overflow_names_bytes() {
        let f = Fixture {
            big_text_words: Some(8000),
            ..Fixture::default()
        };
        let Some(bytes) = build_fixture(&f) else {
            return;
        };
        let e = Program::from_bytes(&bytes).unwrap_err();
        let Error::IramOverflow {
            needed, capacity, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!(*capacity, 24576);
        assert!(*needed >= 32000);
        assert!(e.to_string().contains("bytes too many"), "{e}");
    }

    // ----- found by fuzzing (fuzz/README.md); the inputs are in fuzz/regressions/ --------

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    /// Sets field `field` (byte offset in the entry) of the symbol `name` of an ELF32 file.
    fn patch_symbol(elf: &mut [u8], name: &str, field: usize, value: u32) {
        let shoff = u32_at(elf, 0x20) as usize;
        let shentsize = u16::from_le_bytes([elf[0x2e], elf[0x2f]]) as usize;
        let shnum = u16::from_le_bytes([elf[0x30], elf[0x31]]) as usize;
        for i in 0..shnum {
            let sh = shoff + i * shentsize;
            if u32_at(elf, sh + 4) != 2 {
                continue; // not SHT_SYMTAB
            }
            let (off, size) = (u32_at(elf, sh + 16) as usize, u32_at(elf, sh + 20) as usize);
            let strtab = u32_at(elf, shoff + u32_at(elf, sh + 24) as usize * shentsize + 16);
            for sym in (off..off + size).step_by(16) {
                let at = strtab as usize + u32_at(elf, sym) as usize;
                let end = at + elf[at..].iter().position(|&c| c == 0).unwrap();
                if &elf[at..end] == name.as_bytes() {
                    elf[sym + field..sym + field + 4].copy_from_slice(&value.to_le_bytes());
                    return;
                }
            }
        }
        panic!("no symbol {name}");
    }

    /// Sets `p_memsz` of the program header loading at `paddr`.
    fn patch_segment_memsz(elf: &mut [u8], paddr: u32, memsz: u32) {
        let phoff = u32_at(elf, 0x1c) as usize;
        let phentsize = u16::from_le_bytes([elf[0x2a], elf[0x2b]]) as usize;
        let phnum = u16::from_le_bytes([elf[0x2c], elf[0x2d]]) as usize;
        for i in 0..phnum {
            let ph = phoff + i * phentsize;
            if u32_at(elf, ph) == 1 && u32_at(elf, ph + 12) == paddr {
                elf[ph + 20..ph + 24].copy_from_slice(&memsz.to_le_bytes());
                return;
            }
        }
        panic!("no segment at {paddr:#x}");
    }

    #[test]
    fn function_reaching_past_4gib_is_found_not_wrapped() {
        let Some(mut bytes) = build_fixture(&Fixture::default()) else {
            return;
        };
        // _start (at 0x80000000) claims 0xf0000000 bytes: up to 0x1_7000_0000.
        patch_symbol(&mut bytes, "_start", 8, 0xf000_0000);
        let p = Program::from_bytes(&bytes).unwrap();
        assert_eq!(
            p.function_at(0xffff_fff0).as_deref(),
            Some("_start+0x7ffffff0")
        );
    }

    #[test]
    fn huge_iram_segment_is_refused_without_allocating_it() {
        let Some(mut bytes) = build_fixture(&Fixture::default()) else {
            return;
        };
        patch_segment_memsz(&mut bytes, map::IRAM_BASE, 0x6fff_0000);
        let e = Program::from_bytes(&bytes).unwrap_err();
        let Error::IramOverflow { needed, .. } = e else {
            panic!("{e}")
        };
        assert_eq!(needed, 0x6fff_0000);
    }

    #[test]
    fn stack_table_at_the_end_of_the_address_space_is_invalid() {
        let Some(mut bytes) = build_fixture(&Fixture::default()) else {
            return;
        };
        patch_symbol(&mut bytes, "__sys_stack_table", 4, 0xffff_fffc);
        let e = Program::from_bytes(&bytes).unwrap_err();
        assert!(
            e.to_string()
                .contains("stack of tasklet 0 in __sys_stack_table is invalid"),
            "{e}"
        );
    }
}
