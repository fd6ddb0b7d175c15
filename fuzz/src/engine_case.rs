//! The engine target's input: a DPU program (code, boot data, WRAM image) and the seed of
//! its random MRAM, as bytes that any mutation keeps decodable.
//!
//! Layout (little-endian): a [`HEADER`]-byte header, `text_len` bytes of code, then the WRAM
//! image (the rest, at most 64 KiB). Every field is taken modulo what makes sense (tasklets
//! 1..=24, entry inside the code, stacks inside WRAM), so mutations explore programs, not
//! header rejections; the engine itself still checks what it is given.

use openpim_engine::{map, BootInfo, Timing};

/// Bytes of the header.
pub const HEADER: usize = 40;

/// MRAM bytes given to the engine (the engine accepts a shorter MRAM: accesses past it fault
/// as out of range). Small, so that one run allocates little (libFuzzer's 2 GB limit).
pub const MRAM_BYTES: usize = 256 * 1024;

/// MRAM bytes filled from the seed (the rest is zero, as fresh MRAM).
pub const MRAM_RANDOM_BYTES: usize = 16 * 1024;

/// The cycle bound of a run: every run ends with a result or a named fault before it.
pub const MAX_CYCLES: u64 = 60_000;

/// One engine run's inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineCase {
    pub strict_dma: bool,
    pub fuse_pairs: bool,
    pub nr_tasklets: u32,
    /// Entry point as a word index into the code.
    pub entry_index: u32,
    /// Tasklet `i`'s stack is `stack_base + i * stack_size .. + stack_size` (wrapped into
    /// WRAM).
    pub stack_base: u32,
    pub stack_size: u32,
    pub printf_capacity: u32,
    pub mram_seed: u64,
    pub init_writes: Vec<(u32, u32)>,
    /// Code, loaded at `map::IRAM_BASE`.
    pub text: Vec<u8>,
    pub wram: Vec<u8>,
}

fn u16_at(b: &[u8], at: usize) -> u32 {
    u32::from(u16::from_le_bytes([b[at], b[at + 1]]))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl EngineCase {
    /// Decodes any bytes (short input is zero-padded).
    pub fn decode(data: &[u8]) -> EngineCase {
        let mut h = [0u8; HEADER];
        let n = data.len().min(HEADER);
        h[..n].copy_from_slice(&data[..n]);
        let rest = &data[n..];
        let flags = h[0];
        let text_len = (u32_at(&h, 4) as usize % (map::IRAM_SIZE as usize + 1)).min(rest.len());
        let text = rest[..text_len].to_vec();
        let wram_len = (rest.len() - text_len).min(map::WRAM_SIZE as usize);
        let wram = rest[text_len..text_len + wram_len].to_vec();
        let words = (text.len() / 4).max(1) as u32;
        let mut init_writes = Vec::new();
        for (bit, at) in [(4u8, 24usize), (8, 32)] {
            if flags & bit != 0 {
                init_writes.push((u32_at(&h, at), u32_at(&h, at + 4)));
            }
        }
        EngineCase {
            strict_dma: flags & 1 != 0,
            fuse_pairs: flags & 2 == 0,
            nr_tasklets: u32::from(h[1]) % map::MAX_TASKLETS + 1,
            entry_index: u16_at(&h, 2) % words,
            stack_base: u16_at(&h, 8),
            stack_size: u16_at(&h, 10).max(8),
            printf_capacity: u32_at(&h, 12) % (1 << 20),
            mram_seed: u64::from_le_bytes(h[16..24].try_into().expect("8 bytes")),
            init_writes,
            text,
            wram,
        }
    }

    /// The bytes [`EngineCase::decode`] turns back into this case.
    pub fn encode(&self) -> Vec<u8> {
        let mut h = [0u8; HEADER];
        let mut flags = 0u8;
        if self.strict_dma {
            flags |= 1;
        }
        if !self.fuse_pairs {
            flags |= 2;
        }
        for (i, (addr, value)) in self.init_writes.iter().take(2).enumerate() {
            flags |= 4 << i;
            let at = 24 + 8 * i;
            h[at..at + 4].copy_from_slice(&addr.to_le_bytes());
            h[at + 4..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        h[0] = flags;
        h[1] = (self.nr_tasklets.max(1) - 1) as u8;
        h[2..4].copy_from_slice(&(self.entry_index as u16).to_le_bytes());
        h[4..8].copy_from_slice(&(self.text.len() as u32).to_le_bytes());
        h[8..10].copy_from_slice(&(self.stack_base as u16).to_le_bytes());
        h[10..12].copy_from_slice(&(self.stack_size as u16).to_le_bytes());
        h[12..16].copy_from_slice(&self.printf_capacity.to_le_bytes());
        h[16..24].copy_from_slice(&self.mram_seed.to_le_bytes());
        let mut out = h.to_vec();
        out.extend_from_slice(&self.text);
        out.extend_from_slice(&self.wram);
        out
    }

    /// What the engine boots with.
    pub fn boot(&self) -> BootInfo {
        let wram = u64::from(map::WRAM_SIZE);
        let stacks = (0..self.nr_tasklets)
            .map(|i| {
                let size = u64::from(self.stack_size) % wram;
                let size = size.max(8);
                let lo = (u64::from(self.stack_base) + u64::from(i) * size) % (wram - size);
                (lo as u32, (lo + size) as u32)
            })
            .collect();
        BootInfo {
            entry: map::IRAM_BASE + 4 * self.entry_index,
            nr_tasklets: self.nr_tasklets,
            stacks,
            printf_capacity: self.printf_capacity,
            init_writes: self.init_writes.clone(),
        }
    }

    /// The timing of the run: UPMEM's, with the cycle bound.
    pub fn timing(&self) -> Timing {
        Timing {
            max_cycles: Some(MAX_CYCLES),
            strict_dma: self.strict_dma,
            ..Timing::upmem_default()
        }
    }

    /// Fresh WRAM holding the image.
    pub fn wram_memory(&self) -> Vec<u8> {
        let mut w = vec![0u8; map::WRAM_SIZE as usize];
        w[..self.wram.len()].copy_from_slice(&self.wram);
        w
    }

    /// MRAM filled from `seed` (xorshift64*; the first [`MRAM_RANDOM_BYTES`], rest zero).
    pub fn mram_memory(seed: u64) -> Vec<u8> {
        let mut m = vec![0u8; MRAM_BYTES];
        let mut x = seed | 1;
        for chunk in m[..MRAM_RANDOM_BYTES].chunks_exact_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            chunk.copy_from_slice(&x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_is_the_identity() {
        let c = EngineCase {
            strict_dma: true,
            fuse_pairs: false,
            nr_tasklets: 16,
            entry_index: 3,
            stack_base: 0x8000,
            stack_size: 1024,
            printf_capacity: 4096,
            mram_seed: 42,
            init_writes: vec![(0x100, 0x2000)],
            text: vec![0x13, 0, 0, 0, 0x73, 0, 0, 0, 0x13, 0, 0, 0, 0x13, 0, 0, 0],
            wram: vec![1, 2, 3],
        };
        assert_eq!(EngineCase::decode(&c.encode()), c);
        assert_eq!(EngineCase::decode(&[]).nr_tasklets, 1);
    }
}
