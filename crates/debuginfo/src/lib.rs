//! Source locations of DPU programs, for the developer tools (profiler, checkers, tracer,
//! debugger's helpers): the function, the inlined frames and the `FILE:LINE` of a pc, from
//! the program's DWARF (programs built with `-g`) through `addr2line`; without DWARF, the
//! function from the ELF symbol table. And the data symbol (`.data`, `.bss`, MRAM variables)
//! holding an address, from the symbol table.
//!
//! Addresses are the DPU's own (IRAM byte addresses for code; WRAM addresses from 0 and MRAM
//! addresses from the MRAM base for data), as the program's linker script assigns them.

use std::collections::HashMap;
use std::sync::Mutex;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// Why a program's debugging information could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DebugInfoError {
    #[error("not an ELF file: {0}")]
    NotElf(String),
    #[error("its DWARF cannot be read: {0}")]
    BadDwarf(String),
}

/// One frame of a pc: the function and where in the source. Innermost first in
/// [`DebugInfo::frames`]; the location of an inlined function's caller frame is the call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// This frame's function was inlined into the next (outer) frame's.
    pub inlined: bool,
}

impl Frame {
    /// `FILE:LINE` (the file's last path component), if known.
    pub fn location(&self) -> Option<String> {
        let file = self.file.as_deref()?;
        let short = file.rsplit('/').next().unwrap_or(file);
        Some(format!("{short}:{}", self.line?))
    }
}

/// A symbol of the program: a function or a data object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub address: u32,
    pub size: u32,
}

impl Symbol {
    pub fn contains(&self, addr: u32) -> bool {
        addr >= self.address && addr - self.address < self.size.max(1)
    }
}

/// The debugging information of one DPU program.
pub struct DebugInfo {
    /// `None` without DWARF.
    dwarf: Option<Mutex<addr2line::Context<Reader>>>,
    /// Function symbols, sorted by address.
    functions: Vec<Symbol>,
    /// Data symbols (objects with a size), sorted by address.
    objects: Vec<Symbol>,
    frames: Mutex<HashMap<u32, Vec<Frame>>>,
}

impl DebugInfo {
    /// Reads `elf`'s symbols and, if it has any, its DWARF.
    pub fn from_elf(elf: &[u8]) -> Result<DebugInfo, DebugInfoError> {
        let file = object::File::parse(elf).map_err(|e| DebugInfoError::NotElf(e.to_string()))?;
        let mut functions = Vec::new();
        let mut objects = Vec::new();
        for s in file.symbols() {
            let Ok(name) = s.name() else { continue };
            if name.is_empty() || !s.is_definition() {
                continue;
            }
            let sym = Symbol {
                name: name.to_string(),
                address: s.address() as u32,
                size: s.size() as u32,
            };
            match s.kind() {
                SymbolKind::Text => functions.push(sym),
                SymbolKind::Data if sym.size > 0 => objects.push(sym),
                _ => {}
            }
        }
        functions.sort_by_key(|s| (s.address, std::cmp::Reverse(s.size)));
        functions.dedup_by_key(|s| s.address);
        objects.sort_by_key(|s| (s.address, std::cmp::Reverse(s.size)));
        let has_dwarf = file.section_by_name(".debug_info").is_some();
        let dwarf = if has_dwarf {
            let endian = if file.is_little_endian() {
                gimli::RunTimeEndian::Little
            } else {
                gimli::RunTimeEndian::Big
            };
            let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
                let data = file
                    .section_by_name(id.name())
                    .and_then(|s| s.uncompressed_data().ok())
                    .unwrap_or_default();
                Ok(gimli::EndianArcSlice::new(
                    std::sync::Arc::from(&*data),
                    endian,
                ))
            };
            let sections =
                gimli::Dwarf::load(load).map_err(|e| DebugInfoError::BadDwarf(e.to_string()))?;
            let context = addr2line::Context::from_dwarf(sections)
                .map_err(|e| DebugInfoError::BadDwarf(e.to_string()))?;
            Some(Mutex::new(context))
        } else {
            None
        };
        Ok(DebugInfo {
            dwarf,
            functions,
            objects,
            frames: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the program has DWARF (lines and inlined frames); without it, frames are
    /// functions from the symbol table only.
    pub fn has_lines(&self) -> bool {
        self.dwarf.is_some()
    }

    /// The function symbol holding code address `pc`.
    pub fn function_symbol(&self, pc: u32) -> Option<&Symbol> {
        let i = self.functions.partition_point(|s| s.address <= pc);
        let s = self.functions.get(i.checked_sub(1)?)?;
        (s.size == 0 || s.contains(pc)).then_some(s)
    }

    /// The frames of `pc`, innermost first (at least one when `pc` is in a known function;
    /// none outside every function).
    pub fn frames(&self, pc: u32) -> Vec<Frame> {
        let mut cache = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .entry(pc)
            .or_insert_with(|| self.compute_frames(pc))
            .clone()
    }

    /// The innermost frame's function name of `pc`.
    pub fn function(&self, pc: u32) -> Option<String> {
        self.frames(pc).into_iter().next().map(|f| f.function)
    }

    /// `FILE:LINE` of `pc` (innermost frame), if the program has lines for it.
    pub fn location(&self, pc: u32) -> Option<String> {
        self.frames(pc).first().and_then(Frame::location)
    }

    /// The data symbol holding data address `addr` (WRAM address, or MRAM address from the
    /// MRAM base), if any.
    pub fn object_at(&self, addr: u32) -> Option<&Symbol> {
        let i = self.objects.partition_point(|s| s.address <= addr);
        self.objects[..i]
            .iter()
            .rev()
            .take(8)
            .find(|s| s.contains(addr))
    }

    /// The data symbol named `name`.
    pub fn object(&self, name: &str) -> Option<&Symbol> {
        self.objects.iter().find(|s| s.name == name)
    }

    fn compute_frames(&self, pc: u32) -> Vec<Frame> {
        let symbol = self.function_symbol(pc).map(|s| s.name.clone());
        let mut out = Vec::new();
        if let Some(ctx) = &self.dwarf {
            let guard = ctx.lock().unwrap_or_else(|e| e.into_inner());
            let ctx: &addr2line::Context<Reader> = &guard;
            let found = ctx.find_frames(u64::from(pc)).skip_all_loads();
            if let Ok(mut iter) = found {
                while let Ok(Some(f)) = iter.next() {
                    let function = f
                        .function
                        .as_ref()
                        .and_then(|n| n.demangle().ok().map(|s| s.into_owned()))
                        .or_else(|| symbol.clone())
                        .unwrap_or_else(|| format!("{pc:#x}"));
                    out.push(Frame {
                        function,
                        file: f.location.as_ref().and_then(|l| l.file.map(str::to_string)),
                        line: f.location.as_ref().and_then(|l| l.line),
                        inlined: true,
                    });
                }
            }
        }
        if out.is_empty() {
            if let Some(name) = symbol {
                out.push(Frame {
                    function: name,
                    file: None,
                    line: None,
                    inlined: false,
                });
            }
        }
        // (Every frame but the outermost was inlined into the one after it.)
        if let Some(last) = out.last_mut() {
            last.inlined = false;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_an_elf_is_an_error() {
        assert!(matches!(
            DebugInfo::from_elf(b"hello"),
            Err(DebugInfoError::NotElf(_))
        ));
    }

    #[test]
    fn frame_location_is_short() {
        let f = Frame {
            function: "f".into(),
            file: Some("/a/b/c.c".into()),
            line: Some(12),
            inlined: false,
        };
        assert_eq!(f.location().as_deref(), Some("c.c:12"));
    }
}
