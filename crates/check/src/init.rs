//! Which bytes of a DPU's memories have been written since the program was loaded: the
//! memory checker's "initialised" shadow, kept per DPU across launches.
//!
//! Written: the program's loaded image (its data and zero-initialised `.bss`; not the
//! tasklets' stacks, not the heap), every byte the host transfers or copies in, every byte a
//! tasklet stores or a DMA brings (a DMA copies its source's state, so uninitialised bytes
//! carried through MRAM are still caught when read).

use openpim_engine::map::{MRAM_SIZE, WRAM_SIZE};
use openpim_engine::probe::Space;
use openpim_runtime::Program;

const PAGE_BITS: u32 = 12;
const PAGE: u32 = 1 << PAGE_BITS;
const WORDS: usize = (PAGE / 64) as usize;

/// One page's state: all written, none, or per byte.
#[derive(Clone)]
enum Page {
    None,
    All,
    Some(Box<[u64; WORDS]>),
}

/// The written bytes of one memory.
#[derive(Clone)]
pub struct InitBits {
    pages: Vec<Page>,
}

impl InitBits {
    fn new(size: u32) -> InitBits {
        InitBits {
            pages: vec![Page::None; size.div_ceil(PAGE) as usize],
        }
    }

    pub fn get(&self, off: u32) -> bool {
        match self.pages.get((off >> PAGE_BITS) as usize) {
            Some(Page::All) => true,
            Some(Page::Some(bits)) => {
                let i = off & (PAGE - 1);
                bits[(i / 64) as usize] >> (i % 64) & 1 != 0
            }
            _ => false,
        }
    }

    /// Marks bytes `off..off + len` written (`v`) or not.
    pub fn set(&mut self, off: u32, len: u32, v: bool) {
        let end = (u64::from(off) + u64::from(len)).min((self.pages.len() as u64) << PAGE_BITS);
        let mut at = u64::from(off);
        while at < end {
            let page = (at >> PAGE_BITS) as usize;
            let page_end = ((page as u64 + 1) << PAGE_BITS).min(end);
            let p = &mut self.pages[page];
            if at & u64::from(PAGE - 1) == 0 && page_end - at == u64::from(PAGE) {
                *p = if v { Page::All } else { Page::None };
            } else {
                let full = matches!(p, Page::All);
                let already = match p {
                    Page::All => v,
                    Page::None => !v,
                    Page::Some(_) => false,
                };
                if already {
                    at = page_end;
                    continue;
                }
                if !matches!(p, Page::Some(_)) {
                    let fill = if full { u64::MAX } else { 0 };
                    *p = Page::Some(Box::new([fill; WORDS]));
                }
                if let Page::Some(bits) = p {
                    for b in at..page_end {
                        let i = (b & u64::from(PAGE - 1)) as usize;
                        if v {
                            bits[i / 64] |= 1 << (i % 64);
                        } else {
                            bits[i / 64] &= !(1 << (i % 64));
                        }
                    }
                }
            }
            at = page_end;
        }
    }

    /// The first byte of `off..off + len` not written, if any.
    pub fn first_unset(&self, off: u32, len: u32) -> Option<u32> {
        let end = u64::from(off) + u64::from(len);
        let mut at = u64::from(off);
        while at < end {
            let page = (at >> PAGE_BITS) as usize;
            let page_end = ((page as u64 + 1) << PAGE_BITS).min(end);
            match self.pages.get(page) {
                None => return None,
                Some(Page::All) => {}
                Some(Page::None) => return Some(at as u32),
                Some(Page::Some(_)) => {
                    for b in at..page_end {
                        if !self.get(b as u32) {
                            return Some(b as u32);
                        }
                    }
                }
            }
            at = page_end;
        }
        None
    }
}

/// The written bytes of one DPU's WRAM and MRAM.
#[derive(Clone)]
pub struct DpuInit {
    pub wram: InitBits,
    pub mram: InitBits,
}

impl DpuInit {
    /// A DPU just loaded with `program`: its image is written, its stacks and heap are not.
    pub fn loaded(program: &Program) -> DpuInit {
        let mut d = DpuInit {
            wram: InitBits::new(WRAM_SIZE),
            mram: InitBits::new(MRAM_SIZE),
        };
        let image = program.wram_image().len() as u32;
        d.wram.set(0, image, true);
        for &(lo, hi) in &program.boot_info().stacks {
            d.wram.set(lo, hi.saturating_sub(lo), false);
        }
        for &(addr, _) in &program.boot_info().init_writes {
            d.wram.set(addr, 4, true);
        }
        for (off, bytes) in program.mram_segments() {
            d.mram.set(*off, bytes.len() as u32, true);
        }
        d
    }

    /// A DPU whose loading the checker did not see: all of MRAM counts as written (the
    /// host may have written any of it).
    pub fn unknown(program: &Program) -> DpuInit {
        let mut d = DpuInit::loaded(program);
        d.mram.set(0, MRAM_SIZE, true);
        d
    }

    /// Keeps the MRAM state of `old` (the DPU before this load): bytes written then stay
    /// written, as MRAM keeps them.
    pub fn keep_mram_of(&mut self, old: DpuInit) {
        let segments = std::mem::replace(&mut self.mram, old.mram);
        for (page, state) in segments.pages.into_iter().enumerate() {
            match state {
                Page::None => {}
                Page::All => self.mram.pages[page] = Page::All,
                Page::Some(bits) => {
                    for (w, word) in bits.iter().enumerate() {
                        for b in 0..64 {
                            if word >> b & 1 != 0 {
                                let off = ((page as u32) << PAGE_BITS) + (w as u32) * 64 + b;
                                self.mram.set(off, 1, true);
                            }
                        }
                    }
                }
            }
        }
    }

    pub fn bits(&mut self, space: Space) -> &mut InitBits {
        match space {
            Space::Wram => &mut self.wram,
            Space::Mram => &mut self.mram,
        }
    }

    /// Copies the state of `len` bytes from `src` to `dst` (a DMA).
    pub fn copy(&mut self, src: (Space, u32), dst: (Space, u32), len: u32) {
        let from = match src.0 {
            Space::Wram => &self.wram,
            Space::Mram => &self.mram,
        };
        if from.first_unset(src.1, len).is_none() {
            self.bits(dst.0).set(dst.1, len, true);
            return;
        }
        let states: Vec<bool> = (0..len).map(|i| from.get(src.1.wrapping_add(i))).collect();
        let to = self.bits(dst.0);
        for (i, v) in states.into_iter().enumerate() {
            to.set(dst.1.wrapping_add(i as u32), 1, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_query_across_pages() {
        let mut b = InitBits::new(4 * PAGE);
        b.set(PAGE - 2, PAGE + 4, true);
        assert!(!b.get(PAGE - 3));
        assert!(b.get(PAGE - 2));
        assert!(b.get(2 * PAGE + 1));
        assert!(!b.get(2 * PAGE + 2));
        assert_eq!(b.first_unset(PAGE - 2, PAGE + 4), None);
        assert_eq!(b.first_unset(PAGE - 4, 8), Some(PAGE - 4));
        b.set(PAGE + 10, 1, false);
        assert_eq!(b.first_unset(PAGE, PAGE), Some(PAGE + 10));
        b.set(0, 4 * PAGE, true);
        assert_eq!(b.first_unset(0, 4 * PAGE), None);
    }
}
