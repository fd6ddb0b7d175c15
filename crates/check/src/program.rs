//! What the checkers know of a DPU program: its source locations (DWARF), its stacks and
//! heap, and where the DPU runtime's allocator functions are (to observe their calls).

use std::collections::HashMap;

use object::{Object, ObjectSymbol};
use openpim_debuginfo::DebugInfo;
use openpim_engine::probe::Space;
use openpim_runtime::Program;

/// An allocator entry point of the DPU runtime whose calls the memory checker follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocFn {
    /// `mem_alloc(size)`: a block of the bump heap.
    MemAlloc,
    /// `mem_reset()`: every `mem_alloc` block freed.
    MemReset,
    /// `buddy_alloc(size)`.
    BuddyAlloc,
    /// `buddy_free(p)`.
    BuddyFree,
    /// `buddy_realloc(p, size)`.
    BuddyRealloc,
    /// `fsb_alloc(block_size, nb_of_blocks)`: an allocator of fixed-size blocks.
    FsbAlloc,
    /// `fsb_get(allocator)`: one of its blocks.
    FsbGet,
    /// `fsb_free(allocator, p)`.
    FsbFree,
    /// `buddy_init(size)`, `buddy_reset()`: the allocator's own work (clearing its tables).
    BuddySetUp,
}

impl AllocFn {
    pub fn name(self) -> &'static str {
        match self {
            AllocFn::MemAlloc => "mem_alloc",
            AllocFn::MemReset => "mem_reset",
            AllocFn::BuddyAlloc => "buddy_alloc",
            AllocFn::BuddyFree => "buddy_free",
            AllocFn::BuddyRealloc => "buddy_realloc",
            AllocFn::FsbAlloc => "fsb_alloc",
            AllocFn::FsbGet => "fsb_get",
            AllocFn::FsbFree => "fsb_free",
            AllocFn::BuddySetUp => "buddy_init",
        }
    }
}

/// The runtime's allocator functions (and their helpers), whose own accesses to the heap are
/// not checked against the blocks.
const ALLOCATOR_FUNCTIONS: &[&str] = &[
    "mem_alloc",
    "mem_reset",
    "buddy_init",
    "buddy_reset",
    "buddy_alloc",
    "buddy_free",
    "buddy_realloc",
    "list_push",
    "list_remove",
    "reset_locked",
    "block_order",
    "fsb_alloc",
    "fsb_get",
    "fsb_free",
];

/// Runtime functions that wait for a lock by reading it without its atomic bit (`vmutex_lock`
/// spins on the lock byte, then takes the bit and reads it again): those reads are how they
/// synchronise, not data accesses, and are not checked for races.
const SPINNING_FUNCTIONS: &[&str] = &["vmutex_lock"];

/// A DPU program as the checkers see it.
pub struct ProgramInfo {
    pub debug: Option<DebugInfo>,
    /// IRAM address of the first instruction.
    pub base: u32,
    /// Per tasklet `(lo, hi)` of its stack in WRAM.
    pub stacks: Vec<(u32, u32)>,
    /// First WRAM address of the heap (`__sys_heap_start`; the heap runs to the end of WRAM).
    pub heap_start: u32,
    /// Entry addresses of the allocator functions.
    pub alloc_entries: HashMap<u32, AllocFn>,
    /// Code ranges `[lo, hi)` of the allocator functions.
    allocator_code: Vec<(u32, u32)>,
    /// Code ranges `[lo, hi)` of the spinning functions.
    spinning_code: Vec<(u32, u32)>,
    /// Entry addresses of every function, sorted.
    fn_starts: Vec<u32>,
    /// Instructions in the program's text.
    pub instructions: usize,
    /// Per instruction: its function's index, and whether it is the function's entry (looked
    /// up at every issue slot and access, so precomputed).
    fn_of: Vec<u32>,
    entry_at: Vec<bool>,
    locations: std::sync::Mutex<HashMap<u32, String>>,
}

impl ProgramInfo {
    pub fn new(program: &Program) -> ProgramInfo {
        let elf = program.elf();
        let debug = DebugInfo::from_elf(elf).ok();
        let mut alloc_entries = HashMap::new();
        let mut allocator_code = Vec::new();
        let mut spinning_code = Vec::new();
        let mut heap_start = openpim_engine::map::WRAM_SIZE;
        let mut fn_starts = Vec::new();
        if let Ok(file) = object::File::parse(elf) {
            for s in file.symbols() {
                let Ok(name) = s.name() else { continue };
                let addr = s.address() as u32;
                if name == "__sys_heap_start" {
                    heap_start = addr;
                }
                if s.kind() != object::SymbolKind::Text || !s.is_definition() {
                    continue;
                }
                fn_starts.push(addr);
                let f = match name {
                    "mem_alloc" => Some(AllocFn::MemAlloc),
                    "mem_reset" => Some(AllocFn::MemReset),
                    "buddy_alloc" => Some(AllocFn::BuddyAlloc),
                    "buddy_free" => Some(AllocFn::BuddyFree),
                    "buddy_realloc" => Some(AllocFn::BuddyRealloc),
                    "fsb_alloc" => Some(AllocFn::FsbAlloc),
                    "fsb_get" => Some(AllocFn::FsbGet),
                    "fsb_free" => Some(AllocFn::FsbFree),
                    "buddy_init" | "buddy_reset" => Some(AllocFn::BuddySetUp),
                    _ => None,
                };
                if let Some(f) = f {
                    alloc_entries.insert(addr, f);
                }
                if SPINNING_FUNCTIONS.contains(&name) {
                    spinning_code.push((addr, addr.saturating_add((s.size() as u32).max(4))));
                }
                if ALLOCATOR_FUNCTIONS.contains(&name) {
                    allocator_code.push((addr, addr.saturating_add((s.size() as u32).max(4))));
                }
            }
        }
        fn_starts.sort_unstable();
        fn_starts.dedup();
        let boot = program.boot_info();
        let instructions = program.text().len() / 4;
        let base = program.text_base();
        let at = |i: usize| base.wrapping_add((i as u32) << 2);
        let fn_of = (0..instructions)
            .map(|i| fn_starts.partition_point(|&a| a <= at(i)) as u32)
            .collect();
        let entry_at = (0..instructions)
            .map(|i| fn_starts.binary_search(&at(i)).is_ok())
            .collect();
        ProgramInfo {
            instructions,
            fn_of,
            entry_at,
            fn_starts,
            debug,
            base: program.text_base(),
            stacks: boot.stacks.clone(),
            heap_start,
            alloc_entries,
            allocator_code,
            spinning_code,
            locations: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The index of the function holding `pc` (by the symbol table).
    pub fn function_index(&self, pc: u32) -> usize {
        match self.fn_of.get((pc.wrapping_sub(self.base) >> 2) as usize) {
            Some(&f) => f as usize,
            None => self.fn_starts.partition_point(|&a| a <= pc),
        }
    }

    /// How many values [`ProgramInfo::function_index`] takes.
    pub fn function_count(&self) -> usize {
        self.fn_starts.len() + 1
    }

    /// Whether `pc` is a function's first instruction.
    pub fn is_entry(&self, pc: u32) -> bool {
        match self
            .entry_at
            .get((pc.wrapping_sub(self.base) >> 2) as usize)
        {
            Some(&e) => e,
            None => self.fn_starts.binary_search(&pc).is_ok(),
        }
    }

    /// Whether the instruction at `pc` belongs to a runtime function that spins on a lock.
    pub fn in_spin(&self, pc: u32) -> bool {
        self.spinning_code
            .iter()
            .any(|&(lo, hi)| pc >= lo && pc < hi)
    }

    /// Whether the instruction at `pc` belongs to the runtime's allocator.
    pub fn in_allocator(&self, pc: u32) -> bool {
        self.allocator_code
            .iter()
            .any(|&(lo, hi)| pc >= lo && pc < hi)
    }

    /// Where the instruction at `pc` is, for a user: `FILE:LINE` of its innermost frame in
    /// the program's own sources (an inlined runtime helper, such as `mram_read`, is named by
    /// the line that called it), else of its innermost frame, else its function and offset.
    pub fn location(&self, pc: u32) -> String {
        let mut cache = self.locations.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(pc)
            .or_insert_with(|| self.compute_location(pc))
            .clone()
    }

    fn compute_location(&self, pc: u32) -> String {
        let Some(debug) = &self.debug else {
            return format!("pc {pc:#010x}");
        };
        let frames = debug.frames(pc);
        let user = frames
            .iter()
            .find(|f| f.file.as_deref().is_some_and(|file| !is_runtime_file(file)))
            .and_then(|f| f.location());
        if let Some(l) = user.or_else(|| frames.iter().find_map(|f| f.location())) {
            return l;
        }
        match debug.function_symbol(pc) {
            Some(s) => format!("{}+{:#x}", s.name, pc - s.address),
            None => format!("pc {pc:#010x}"),
        }
    }

    /// The function holding `pc` (innermost frame), if known.
    pub fn function(&self, pc: u32) -> Option<String> {
        self.debug.as_ref()?.function(pc)
    }

    /// The data symbol holding the byte at `offset` of `space`.
    pub fn object_at(&self, space: Space, offset: u32) -> Option<&openpim_debuginfo::Symbol> {
        self.debug.as_ref()?.object_at(space.address(offset))
    }

    /// The tasklet whose stack holds WRAM address `addr`.
    pub fn stack_of(&self, addr: u32) -> Option<u32> {
        self.stacks
            .iter()
            .position(|&(lo, hi)| addr >= lo && addr < hi)
            .map(|t| t as u32)
    }

    /// What the byte at `offset` of `space` is, for a user: ``"`sym`+4 (WRAM 0x124)"``, the
    /// stack of a tasklet, the heap, or the bare address.
    pub fn describe(&self, space: Space, offset: u32) -> String {
        let (mem, addr) = match space {
            Space::Wram => ("WRAM", offset),
            Space::Mram => ("MRAM", space.address(offset)),
        };
        let what = if let Some(s) = self.object_at(space, offset) {
            let delta = space.address(offset) - s.address;
            if delta == 0 {
                format!("`{}`", s.name)
            } else {
                format!("`{}`+{delta}", s.name)
            }
        } else if space == Space::Wram {
            if let Some(t) = self.stack_of(offset) {
                format!("the stack of tasklet {t}")
            } else if offset >= self.heap_start {
                "the heap".to_string()
            } else {
                "memory".to_string()
            }
        } else {
            "memory".to_string()
        };
        format!("{what} ({mem} {addr:#x})")
    }
}

/// A source file of the DPU runtime (its headers and library), not of the program.
fn is_runtime_file(file: &str) -> bool {
    file.contains("sdk/dpu/include") || file.contains("sdk/dpu/src")
}
