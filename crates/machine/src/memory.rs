//! The memories of one DPU: WRAM, MRAM (lazily backed), and the address spaces.
//!
//! Addresses of different spaces are different types ([`WramAddr`], [`MramAddr`],
//! [`IramAddr`]) so that they cannot be mixed; each is a byte offset from its space's base.
//! A program-view address (`0x0800_1000`) is split into a space and an offset by
//! [`DpuAddress::classify`].

use std::io;
use std::ptr::NonNull;

use openpim_engine::map;
use thiserror::Error;

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

/// Anonymous memory reserved with `MAP_NORESERVE`: pages cost nothing until touched and read
/// as zero. Freed with `munmap`.
pub struct LazyRegion {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a LazyRegion exclusively owns its mapping (like a Box<[u8]>); shared references
// only give shared slices, mutable access needs &mut.
unsafe impl Send for LazyRegion {}
// SAFETY: see Send; &LazyRegion only allows reads.
unsafe impl Sync for LazyRegion {}

impl LazyRegion {
    /// Reserves `len` (> 0) zeroed bytes.
    pub fn new(len: usize) -> io::Result<LazyRegion> {
        assert!(len > 0, "LazyRegion of zero bytes");
        // SAFETY: a fresh private anonymous mapping at an address the kernel chooses; no
        // existing memory is affected. The result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(ptr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(LazyRegion { ptr, len })
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false (regions are never empty).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The whole region.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is a live readable mapping owned by self for self's lifetime;
        // the borrow of self prevents concurrent mutation.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The whole region, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in as_slice, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Zeroes the region and gives its pages back to the system.
    pub fn clear(&mut self) {
        // SAFETY: the range is exactly our private anonymous mapping; MADV_DONTNEED on such a
        // mapping makes later reads return zero, which is the state we want. &mut self means
        // no slice into the region is alive.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTNEED) };
        if rc != 0 {
            // Cannot happen for a valid mapping; fall back to writing zeros.
            self.as_mut_slice().fill(0);
        }
    }
}

impl Drop for LazyRegion {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe the mapping created in new(), unmapped exactly once here;
        // no borrow of it can outlive self.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

impl std::fmt::Debug for LazyRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyRegion({} bytes)", self.len)
    }
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
    mram: LazyRegion,
}

impl DpuMemories {
    /// Zeroed memories of the engine's sizes; nothing is resident until written.
    pub fn new() -> io::Result<DpuMemories> {
        Ok(DpuMemories {
            wram: LazyRegion::new(map::WRAM_SIZE as usize)?,
            mram: LazyRegion::new(map::MRAM_SIZE as usize)?,
        })
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

    /// Zeroes MRAM (releasing its pages).
    pub fn clear_mram(&mut self) {
        self.mram.clear();
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
        m.clear_mram();
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
