//! Differential check of the SIMD transfer paths: the host-side byte interleaving of a
//! transfer (the SDK's transposition of every 64-bit word over the rank's 8 chips) by every
//! kernel this CPU has (AVX-512, AVX2, SSE2, portable) against the definition, byte by byte,
//! for random lengths (chunk boundaries, partial words and tails), DPU subsets, rank shapes and
//! broadcasts. (The kernels never decide what a DPU receives, the emulated memories are
//! written by plain copies; this checks the work the emulator measures as host time.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use openpim_runtime::exec::local::check_interleave_kernels;

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let dpus_per_rank = u32::from(data[0] % 64) + 1;
    let chips = u32::from(data[1] % 8) + 1;
    let broadcast = data[2] & 1 != 0;
    // Up to 3 chunks of 2 KiB: chunk boundaries and tails.
    let len = usize::from(u16::from_le_bytes([data[3], data[4]])) % (3 * 2048 + 17);
    if len == 0 {
        // Nothing to interleave (the kernels are not called).
        return;
    }
    let nr = usize::from(data[5] % 16) + 1;
    let payload = &data[6..];
    let mut used = [false; 64];
    let mut bufs = Vec::new();
    for k in 0..nr {
        let dpu = u32::from(payload.get(k).copied().unwrap_or(k as u8)) % dpus_per_rank;
        if std::mem::replace(&mut used[dpu as usize], true) {
            continue;
        }
        // Each DPU's bytes: the payload, shifted by the DPU's index.
        let bytes: Vec<u8> = (0..len)
            .map(|i| {
                payload
                    .get(i % payload.len().max(1))
                    .copied()
                    .unwrap_or(0)
                    .wrapping_add(dpu as u8)
            })
            .collect();
        bufs.push((dpu, bytes));
    }
    if broadcast {
        // A broadcast's items all name the same buffer.
        let one = bufs[0].1.clone();
        bufs.iter_mut().for_each(|(_, b)| b.clone_from(&one));
    }
    if let Err(e) = check_interleave_kernels(len, &mut bufs, dpus_per_rank, chips, broadcast) {
        panic!("{e}");
    }
});
