//! The memories of one DPU: WRAM, MRAM (in a backing store), and the address spaces.
//!
//! MRAM lives in one of the stores behind [`MramStore`]: [`anon`] (host memory, the
//! default), [`file`] (sparse per-rank files) or [`cached`] (the files behind a DRAM budget);
//! [`dedup`] stores bytes written identically to many DPUs once.
//!
//! Addresses of different spaces are different types ([`WramAddr`], [`MramAddr`],
//! [`IramAddr`]) so that they cannot be mixed; each is a byte offset from its space's base.
//! A program-view address (`0x0800_1000`) is split into a space and an offset by
//! [`DpuAddress::classify`].

pub mod anon;
pub mod cached;
pub mod checksum;
pub mod dedup;
pub mod file;
pub mod region;
pub mod store;

use std::io;

use openpim_engine::map;
use thiserror::Error;

pub use region::{LazyRegion, MramRegion};
pub use store::{
    describe_store, open_process_store, open_store, parse_size, process_store, Access, Admission,
    MramStore, Persist, StoreError, StoreSpec, StoreStats,
};

/// A byte offset in WRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WramAddr(pub u32);
/// A byte offset in MRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MramAddr(pub u32);
/// A byte offset in IRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IramAddr(pub u32);

/// A program-view address split by memory space, following the SDK's address classes:
/// bit `0x8000_0000` set = IRAM, bit `0x0800_0000` set = MRAM, otherwise WRAM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpuAddress {
    Wram(WramAddr),
    Mram(MramAddr),
    Iram(IramAddr),
}

impl DpuAddress {
    /// Splits a program-view address into its space and offset.
    ///
    /// ```
    /// use openpim_machine::{DpuAddress, MramAddr, WramAddr};
    /// assert_eq!(DpuAddress::classify(0x0800_0010), DpuAddress::Mram(MramAddr(0x10)));
    /// assert_eq!(DpuAddress::classify(0x100), DpuAddress::Wram(WramAddr(0x100)));
    /// ```
    pub fn classify(address: u32) -> DpuAddress {
        if address & map::IRAM_BASE != 0 {
            DpuAddress::Iram(IramAddr(address - map::IRAM_BASE))
        } else if address & map::MRAM_BASE != 0 {
            DpuAddress::Mram(MramAddr(address - map::MRAM_BASE))
        } else {
            DpuAddress::Wram(WramAddr(address - map::WRAM_BASE))
        }
    }
}

/// An access outside a memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("{space} access of {len} bytes at offset {offset:#x} is outside its {size} bytes")]
pub struct OutOfRange {
    pub space: &'static str,
    pub offset: u64,
    pub len: u64,
    pub size: u64,
}

/// Byte access to one memory space, addressed by that space's address type.
///
/// ```
/// use openpim_machine::{DpuMemories, Bytes, WramAddr};
/// let mut m = DpuMemories::new().unwrap();
/// m.write(WramAddr(8), &[1, 2, 3, 4]).unwrap();
/// let mut b = [0u8; 4];
/// m.read(WramAddr(8), &mut b).unwrap();
/// assert_eq!(b, [1, 2, 3, 4]);
/// assert!(m.read(WramAddr(65534), &mut b).is_err());
/// ```
pub trait Bytes<A> {
    /// Copies `dst.len()` bytes from `addr`.
    fn read(&self, addr: A, dst: &mut [u8]) -> Result<(), OutOfRange>;
    /// Copies `src` to `addr`.
    fn write(&mut self, addr: A, src: &[u8]) -> Result<(), OutOfRange>;
}

fn range(
    space: &'static str,
    size: usize,
    offset: u32,
    len: usize,
) -> Result<std::ops::Range<usize>, OutOfRange> {
    let start = offset as usize;
    match start.checked_add(len) {
        Some(end) if end <= size => Ok(start..end),
        _ => Err(OutOfRange {
            space,
            offset: u64::from(offset),
            len: len as u64,
            size: size as u64,
        }),
    }
}

/// WRAM and MRAM of one DPU (IRAM belongs to the loaded program).
#[derive(Debug)]
pub struct DpuMemories {
    wram: LazyRegion,
    mram: MramRegion,
}

impl DpuMemories {
    /// Zeroed memories of the engine's sizes, MRAM anonymous; nothing is resident until
    /// written.
    pub fn new() -> io::Result<DpuMemories> {
        Ok(DpuMemories {
            wram: LazyRegion::new(map::WRAM_SIZE as usize)?,
            mram: MramRegion::anon(map::MRAM_SIZE as usize, (u32::MAX, 0))?,
        })
    }

    /// Zeroed WRAM with the given MRAM (from a store).
    pub fn with_mram(mram: MramRegion) -> io::Result<DpuMemories> {
        Ok(DpuMemories {
            wram: LazyRegion::new(map::WRAM_SIZE as usize)?,
            mram,
        })
    }

    /// The MRAM region (for its store: admission, persistence).
    pub fn mram_region(&self) -> &MramRegion {
        &self.mram
    }

    /// The MRAM region, mutably (deduplicated writes).
    pub fn mram_region_mut(&mut self) -> &mut MramRegion {
        &mut self.mram
    }

    /// WRAM bytes, mutably.
    pub fn wram_mut(&mut self) -> &mut [u8] {
        self.wram.as_mut_slice()
    }

    /// WRAM bytes.
    pub fn wram(&self) -> &[u8] {
        self.wram.as_slice()
    }

    /// MRAM bytes.
    pub fn mram(&self) -> &[u8] {
        self.mram.as_slice()
    }

    /// Both memories, mutably, as the engine takes them.
    pub fn engine_view(&mut self) -> openpim_engine::DpuMemory<'_> {
        openpim_engine::DpuMemory {
            wram: self.wram.as_mut_slice(),
            mram: self.mram.as_mut_slice(),
        }
    }

    /// Zeroes WRAM (releasing its pages).
    pub fn clear_wram(&mut self) {
        self.wram.clear();
    }

    /// Zeroes MRAM (releasing its pages; punching them out of a store file).
    pub fn clear_mram(&mut self) -> io::Result<()> {
        self.mram.clear()
    }
}

impl Bytes<WramAddr> for DpuMemories {
    fn read(&self, addr: WramAddr, dst: &mut [u8]) -> Result<(), OutOfRange> {
        let r = range("WRAM", self.wram.len(), addr.0, dst.len())?;
        dst.copy_from_slice(&self.wram.as_slice()[r]);
        Ok(())
    }
    fn write(&mut self, addr: WramAddr, src: &[u8]) -> Result<(), OutOfRange> {
        let r = range("WRAM", self.wram.len(), addr.0, src.len())?;
        self.wram.as_mut_slice()[r].copy_from_slice(src);
        Ok(())
    }
}

impl Bytes<MramAddr> for DpuMemories {
    fn read(&self, addr: MramAddr, dst: &mut [u8]) -> Result<(), OutOfRange> {
        let r = range("MRAM", self.mram.len(), addr.0, dst.len())?;
        dst.copy_from_slice(&self.mram.as_slice()[r]);
        Ok(())
    }
    fn write(&mut self, addr: MramAddr, src: &[u8]) -> Result<(), OutOfRange> {
        let r = range("MRAM", self.mram.len(), addr.0, src.len())?;
        self.mram.as_mut_slice()[r].copy_from_slice(src);
        Ok(())
    }
}

/// Resident set size of this process in bytes (from `/proc/self/statm`), for tests and
/// reports; `None` where unavailable.
pub fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_addresses() {
        assert_eq!(DpuAddress::classify(0), DpuAddress::Wram(WramAddr(0)));
        assert_eq!(
            DpuAddress::classify(0xfffc),
            DpuAddress::Wram(WramAddr(0xfffc))
        );
        assert_eq!(
            DpuAddress::classify(0x0800_0000),
            DpuAddress::Mram(MramAddr(0))
        );
        assert_eq!(
            DpuAddress::classify(0x8000_0008),
            DpuAddress::Iram(IramAddr(8))
        );
    }

    #[test]
    fn lazy_region_reads_zero_and_clears() {
        let mut r = LazyRegion::new(1 << 20).unwrap();
        assert!(r.as_slice().iter().all(|b| *b == 0));
        r.as_mut_slice()[12345] = 7;
        assert_eq!(r.as_slice()[12345], 7);
        r.clear();
        assert_eq!(r.as_slice()[12345], 0);
    }

    #[test]
    fn bytes_bounds() {
        let mut m = DpuMemories::new().unwrap();
        let top = map::MRAM_SIZE - 4;
        m.write(MramAddr(top), &[9, 9, 9, 9]).unwrap();
        assert!(m.write(MramAddr(top), &[0; 5]).is_err());
        assert!(m.write(MramAddr(u32::MAX), &[0; 1]).is_err());
        let mut b = [0u8; 4];
        m.read(MramAddr(top), &mut b).unwrap();
        assert_eq!(b, [9; 4]);
        m.clear_mram().unwrap();
        m.read(MramAddr(top), &mut b).unwrap();
        assert_eq!(b, [0; 4]);
        assert!(m.write(WramAddr(map::WRAM_SIZE), &[1]).is_err());
        m.write(WramAddr(map::WRAM_SIZE - 1), &[1]).unwrap();
    }

    #[test]
    fn many_dpus_cost_little() {
        // 256 DPUs = 16 GiB of address space; untouched, they must not be resident.
        let before = resident_bytes().unwrap();
        let mems: Vec<DpuMemories> = (0..256).map(|_| DpuMemories::new().unwrap()).collect();
        let after = resident_bytes().unwrap();
        assert!(
            after.saturating_sub(before) < 64 << 20,
            "{before} -> {after}"
        );
        drop(mems);
    }
}
