//! The host-side share of a transfer, performed for real: the byte interleaving that spreads
//! every 64-bit word of a DPU over the 8 chips of its rank.
//!
//! A rank's 64-bit DDR bus word carries one byte lane per chip. The DPUs with the same index
//! in each of the 8 chips form an "entangled group": the SDK writes a group with bus words
//! whose lane `c` belongs to the group's DPU on chip `c`. So the host transposes, for every
//! word offset, the 8x8 byte matrix (8 DPUs x 8 bytes) into 8 bus words; a DPU absent from
//! the transfer contributes zero bytes, so even one DPU costs the full transposition (the
//! reason why serial transfers are slow). The real SDK does this on the CPU; OpenPIM does
//! the same work into a scratch buffer and measures it, because that time is host time on
//! the real system too (in the calling thread's CPU time). (The emulated memories are written
//! separately, by plain copies that are emulator work and are not counted.)

use crate::rank::XferItem;

/// CPU time of the calling thread, ns. The interleaving is measured in thread CPU time, not
/// wall time, so that other threads of the emulator (simulating DPUs, copying into emulated
/// memories) competing for the host's cores never inflate it.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec to the valid pointer it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// 64-bit words per DPU transposed per chunk (the scratch holds 8 bus words per word).
const CHUNK_WORDS: usize = 512;

/// Transposes the 8x8 byte matrix held in `r` (row `i` = 8 bytes, little-endian): afterwards
/// byte `j` of row `i` is the former byte `i` of row `j`.
#[inline]
pub(crate) fn transpose8x8(r: &mut [u64; 8]) {
    // Swap the off-diagonal 4x4, then 2x2, then 1x1 blocks.
    for i in 0..4 {
        let t = ((r[i] >> 32) ^ r[i + 4]) & 0x0000_0000_FFFF_FFFF;
        r[i] ^= t << 32;
        r[i + 4] ^= t;
    }
    for i in [0, 1, 4, 5] {
        let t = ((r[i] >> 16) ^ r[i + 2]) & 0x0000_FFFF_0000_FFFF;
        r[i] ^= t << 16;
        r[i + 2] ^= t;
    }
    for i in [0, 2, 4, 6] {
        let t = ((r[i] >> 8) ^ r[i + 1]) & 0x00FF_00FF_00FF_00FF;
        r[i] ^= t << 8;
        r[i + 1] ^= t;
    }
}

/// Interleaves `len` bytes per item into bus words, for real; returns the nanoseconds it
/// took. `chips` is the number of chips of the rank (8 on UPMEM); DPU `d` sits on chip
/// `d / (dpus_per_chip)` at index `d % dpus_per_chip`. With `broadcast`, the one buffer is
/// interleaved once for a group (every DPU receives the same bus words).
///
/// # Safety
/// Every item's buffer must be valid for reads of `len` bytes (the transfer's contract).
pub(crate) unsafe fn interleave(
    len: usize,
    items: &[XferItem],
    dpus_per_rank: u32,
    chips: u32,
    broadcast: bool,
) -> u64 {
    if len == 0 || items.is_empty() {
        return 0;
    }
    let start = thread_cpu_ns();
    let chips = chips.clamp(1, 8) as usize;
    let per_chip = (dpus_per_rank as usize).div_ceil(chips).max(1);
    // Group the items by entangled group (index in the chip), one slot per chip.
    let mut groups: Vec<[Option<&[u8]>; 8]> = vec![[None; 8]; per_chip];
    let mut used = vec![false; per_chip];
    let take = if broadcast { 1 } else { items.len() };
    for item in &items[..take] {
        // SAFETY: the caller guarantees `len` readable bytes at every item's buffer.
        let src = unsafe { std::slice::from_raw_parts(item.buf.0.cast_const(), len) };
        let d = item.dpu as usize;
        let (chip, index) = ((d / per_chip).min(chips - 1), d % per_chip);
        if broadcast {
            groups[index] = [Some(src); 8];
        } else {
            groups[index][chip] = Some(src);
        }
        used[index] = true;
    }
    let words = len.div_ceil(8);
    let mut scratch = vec![0u64; CHUNK_WORDS * 8];
    let mut checksum = 0u64;
    for (g, rows) in groups.iter().enumerate() {
        if !used[g] {
            continue;
        }
        let present: Vec<(usize, &[u8])> = rows
            .iter()
            .enumerate()
            .filter_map(|(c, r)| r.map(|s| (c, s)))
            .collect();
        let mut w0 = 0;
        while w0 < words {
            let n = CHUNK_WORDS.min(words - w0);
            let block = &mut scratch[..n * 8];
            if present.len() < 8 {
                block.fill(0);
            }
            // Gather: row c of the k-th 8x8 matrix is word w0 + k of the DPU on chip c.
            for (c, src) in &present {
                let lo = w0 * 8;
                let hi = ((w0 + n) * 8).min(len);
                let bytes = &src[lo..hi];
                let mut chunks = bytes.chunks_exact(8);
                for (k, ch) in chunks.by_ref().enumerate() {
                    block[k * 8 + c] = u64::from_le_bytes(ch.try_into().expect("8 bytes"));
                }
                let rest = chunks.remainder();
                if !rest.is_empty() {
                    let mut b = [0u8; 8];
                    b[..rest.len()].copy_from_slice(rest);
                    block[(bytes.len() / 8) * 8 + c] = u64::from_le_bytes(b);
                }
            }
            // Transpose each matrix in place: bus word j carries byte j of every chip's word.
            for m in block.chunks_exact_mut(8) {
                let m: &mut [u64; 8] = m.try_into().expect("8 words");
                transpose8x8(m);
            }
            // What the SDK would now write to the rank's memory window.
            checksum ^= std::hint::black_box(&scratch[..n * 8])
                .iter()
                .fold(0u64, |a, x| a.wrapping_add(*x));
            w0 += n;
        }
    }
    std::hint::black_box(checksum);
    thread_cpu_ns().saturating_sub(start).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rank::HostPtr;
    use crate::xfer::Place;
    use openpim_machine::MramAddr;

    #[test]
    fn transpose_matches_the_definition() {
        let mut m = [0u64; 8];
        for (i, row) in m.iter_mut().enumerate() {
            let bytes: [u8; 8] = std::array::from_fn(|j| (i * 8 + j) as u8);
            *row = u64::from_le_bytes(bytes);
        }
        let orig = m;
        transpose8x8(&mut m);
        for (i, row) in m.iter().enumerate() {
            for (j, other) in orig.iter().enumerate() {
                assert_eq!(row.to_le_bytes()[j], other.to_le_bytes()[i]);
            }
        }
        transpose8x8(&mut m);
        assert_eq!(m, orig, "a transpose is its own inverse");
    }

    #[test]
    #[ignore]
    fn interleave_throughput() {
        let len = 256 << 10;
        let mut bufs: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; len]).collect();
        let items: Vec<XferItem> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| XferItem {
                dpu: i as u32,
                place: Place::Mram(MramAddr(0)),
                buf: HostPtr(b.as_mut_ptr()),
            })
            .collect();
        for _ in 0..3 {
            // SAFETY: every buffer holds len bytes.
            let t = unsafe { interleave(len, &items, 64, 8, false) };
            eprintln!(
                "{} MiB in {} us: {:.2} GB/s",
                (len * 64) >> 20,
                t / 1000,
                (len * 64) as f64 / t as f64
            );
        }
    }

    #[test]
    fn interleave_reads_every_buffer_and_reports_time() {
        let mut bufs: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 4099]).collect();
        let items: Vec<XferItem> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, b)| XferItem {
                dpu: i as u32,
                place: Place::Mram(MramAddr(0)),
                buf: HostPtr(b.as_mut_ptr()),
            })
            .collect();
        // SAFETY: every buffer holds 4099 bytes.
        let t = unsafe { interleave(4099, &items, 64, 8, false) };
        assert!(t > 0);
        // SAFETY: as above.
        assert_eq!(unsafe { interleave(0, &items, 64, 8, false) }, 0);
        // SAFETY: as above.
        let b = unsafe { interleave(4099, &items, 64, 8, true) };
        assert!(b > 0);
    }
}
