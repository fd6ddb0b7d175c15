//! The SDK's transfer rules: symbol bounds and address classes.
//!
//! - `offset + length <= symbol size`, else invalid symbol access;
//! - IRAM (address bit `0x8000_0000`): address and length 8-byte aligned;
//! - MRAM (address bit `0x0800_0000`): any alignment;
//! - WRAM (otherwise): address and length 4-byte aligned;
//! - and the access must lie inside the memory.

use openpim_machine::{map, DpuAddress, IramAddr, MramAddr, WramAddr};

use crate::error::{Error, Result};
use crate::program::Symbol;

/// A checked transfer target in one DPU's memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Wram(WramAddr),
    Mram(MramAddr),
    Iram(IramAddr),
}

/// How a transfer names its target: a symbol name of the loaded program, or an explicit
/// symbol (`dpu_copy_to_symbol`).
#[derive(Debug, Clone, Copy)]
pub enum SymbolRef<'a> {
    Name(&'a str),
    Symbol(Symbol),
}

impl SymbolRef<'_> {
    /// How the symbol is named in error messages.
    pub fn describe(&self) -> String {
        match self {
            SymbolRef::Name(n) => format!("'{n}'"),
            SymbolRef::Symbol(s) => format!("at {:#x}", s.address),
        }
    }
}

/// Checks a transfer of `len` bytes at `offset` in `symbol` and returns where it goes.
pub fn check_access(symbol: Symbol, name: &str, offset: u32, len: usize) -> Result<Place> {
    let len64 = len as u64;
    if u64::from(offset) + len64 > u64::from(symbol.size) {
        return Err(Error::InvalidSymbolAccess {
            symbol: name.to_string(),
            offset,
            len: len64,
            size: symbol.size,
        });
    }
    let address = u64::from(symbol.address) + u64::from(offset);
    if address > u64::from(u32::MAX) {
        return Err(Error::InvalidSymbolAccess {
            symbol: name.to_string(),
            offset,
            len: len64,
            size: symbol.size,
        });
    }
    let inside = |off: u32, size: u32| u64::from(off) + len64 <= u64::from(size);
    match DpuAddress::classify(address as u32) {
        DpuAddress::Iram(a) => {
            if !address.is_multiple_of(8) || !len64.is_multiple_of(8) {
                return Err(Error::InvalidIramAccess {
                    address,
                    len: len64,
                    reason:
                        "IRAM transfers need an 8-byte aligned address and a length multiple of 8"
                            .into(),
                });
            }
            if !inside(a.0, map::IRAM_SIZE) {
                return Err(Error::InvalidIramAccess {
                    address,
                    len: len64,
                    reason: format!("outside the {} bytes of IRAM", map::IRAM_SIZE),
                });
            }
            Ok(Place::Iram(a))
        }
        DpuAddress::Mram(a) => {
            if !inside(a.0, map::MRAM_SIZE) {
                return Err(Error::InvalidMramAccess {
                    address,
                    len: len64,
                    reason: format!("outside the {} bytes of MRAM", map::MRAM_SIZE),
                });
            }
            Ok(Place::Mram(a))
        }
        DpuAddress::Wram(a) => {
            if !address.is_multiple_of(4) || !len64.is_multiple_of(4) {
                return Err(Error::InvalidWramAccess {
                    address,
                    len: len64,
                    reason:
                        "WRAM transfers need a 4-byte aligned address and a length multiple of 4"
                            .into(),
                });
            }
            if !inside(a.0, map::WRAM_SIZE) {
                return Err(Error::InvalidWramAccess {
                    address,
                    len: len64,
                    reason: format!("outside the {} bytes of WRAM", map::WRAM_SIZE),
                });
            }
            Ok(Place::Wram(a))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(address: u32, size: u32) -> Symbol {
        Symbol { address, size }
    }

    #[test]
    fn symbol_bounds() {
        let s = sym(0x100, 16);
        assert_eq!(
            check_access(s, "x", 0, 16).unwrap(),
            Place::Wram(WramAddr(0x100))
        );
        assert_eq!(
            check_access(s, "x", 12, 4).unwrap(),
            Place::Wram(WramAddr(0x10c))
        );
        assert!(matches!(
            check_access(s, "x", 12, 8),
            Err(Error::InvalidSymbolAccess { .. })
        ));
        assert!(matches!(
            check_access(s, "x", 17, 0),
            Err(Error::InvalidSymbolAccess { .. })
        ));
        assert!(check_access(s, "x", 16, 0).is_ok());
        assert!(matches!(
            check_access(s, "x", u32::MAX, 8),
            Err(Error::InvalidSymbolAccess { .. })
        ));
    }

    #[test]
    fn wram_alignment() {
        let s = sym(0x100, 64);
        assert!(matches!(
            check_access(s, "x", 2, 4),
            Err(Error::InvalidWramAccess { .. })
        ));
        assert!(matches!(
            check_access(s, "x", 0, 6),
            Err(Error::InvalidWramAccess { .. })
        ));
        assert!(check_access(s, "x", 4, 8).is_ok());
        let big = sym(0xfff0, 0x100);
        assert!(matches!(
            check_access(big, "x", 0, 0x20),
            Err(Error::InvalidWramAccess { .. })
        ));
    }

    #[test]
    fn mram_any_alignment() {
        let s = sym(0x0800_0000, 1024);
        assert_eq!(
            check_access(s, "m", 3, 5).unwrap(),
            Place::Mram(MramAddr(3))
        );
        let heap = sym(0x0800_0100, map::MRAM_SIZE - 0x100);
        assert!(check_access(heap, "h", 0, (map::MRAM_SIZE - 0x100) as usize).is_ok());
        let liar = sym(0x0800_0000 + map::MRAM_SIZE - 8, 64);
        assert!(matches!(
            check_access(liar, "m", 0, 16),
            Err(Error::InvalidMramAccess { .. })
        ));
    }

    #[test]
    fn iram_alignment() {
        let s = sym(0x8000_0000, 256);
        assert_eq!(
            check_access(s, "f", 8, 16).unwrap(),
            Place::Iram(IramAddr(8))
        );
        assert!(matches!(
            check_access(s, "f", 4, 8),
            Err(Error::InvalidIramAccess { .. })
        ));
        assert!(matches!(
            check_access(s, "f", 0, 12),
            Err(Error::InvalidIramAccess { .. })
        ));
    }
}
