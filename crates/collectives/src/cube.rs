//! The hypercube model: DPUs numbered in entangled order, their coordinates, communicator
//! groups and group ranks (PID-Comm's conventions, `../shared/PIDCOMM-COMPAT.md` §1.4).
//!
//! - The logical id `L` of a DPU counts ranks in set order, and inside a rank walks the
//!   entangled groups: `L % 64 = 8·m + c` is the DPU of chip `c` and line `m`, which is the
//!   rank's DPU `8·c + m` (the SDK numbers a rank's DPUs chip by chip). The 8 DPUs `8e..8e+7`
//!   share one 64-bit word of the DDR bus: entangled group `e`.
//! - Coordinates: mixed radix, x fastest: `x = L % a0`, `y = (L / a0) % a1`, `z = L / (a0·a1)`.
//! - A communicator (`comm`, one '0'/'1' per axis, x first) splits the DPUs into groups that
//!   share the coordinates of the axes not in it; a DPU's rank in its group is the mixed-radix
//!   index over the axes in it, lower axis fastest.

use crate::error::{Error, Result};

/// DPUs per rank and per entangled group.
pub const RANK_DPUS: u32 = 64;
pub const CHIPS: u32 = 8;

/// A hypercube over a set of whole ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hypercube {
    /// Axis lengths, padded to 3 with 1s.
    pub axes: [u32; 3],
    /// Axes the caller gave (1..=3).
    pub dims: u32,
}

/// Which axes communicate.
pub type Comm = [bool; 3];

impl Hypercube {
    /// Checks the shape against the set: `dims` in 1..=3, powers of two, product = DPUs of the
    /// set, whole ranks, and a shape the library handles (a0 a multiple of 8, or a0 in {2, 4}
    /// with a0·a1 >= 8, or a0 = a1 = 2 — PID-Comm's — and a0 = 1).
    pub fn new(axis_len: &[u32], nr_dpus: u32, full_ranks: bool) -> Result<Hypercube> {
        let dims = axis_len.len() as u32;
        if !(1..=3).contains(&dims) {
            return Err(Error::invalid(
                "dimension",
                format!("{dims} axes; the hypercube has 1 to 3 axes"),
            ));
        }
        let mut axes = [1u32; 3];
        for (i, a) in axis_len.iter().enumerate() {
            if *a == 0 || !a.is_power_of_two() {
                return Err(Error::invalid(
                    "axis_len",
                    format!("axis {i} has length {a}; lengths are powers of two (1, 2, 4, 8, ...)"),
                ));
            }
            axes[i] = *a;
        }
        let product: u64 = axes.iter().map(|a| u64::from(*a)).product();
        if product != u64::from(nr_dpus) {
            return Err(Error::invalid(
                "axis_len",
                format!(
                    "the axes {}x{}x{} make {product} DPUs but the set has {nr_dpus}; their product must be the number of DPUs",
                    axes[0], axes[1], axes[2]
                ),
            ));
        }
        if !full_ranks || !nr_dpus.is_multiple_of(RANK_DPUS) {
            return Err(Error::invalid(
                "dpu_set",
                format!("the set has {nr_dpus} DPUs in ranks that are not all full; collectives need whole ranks of 64 DPUs (allocate with dpu_alloc_comm or a multiple of 64 DPUs)"),
            ));
        }
        let a0 = axes[0];
        let ok = a0 % 8 == 0
            || a0 == 1
            || ((a0 == 2 || a0 == 4) && a0 * axes[1] >= 8)
            || (a0 == 2 && axes[1] == 2);
        if !ok {
            return Err(Error::invalid(
                "axis_len",
                format!("x axis {a0} with y axis {}: supported shapes are a0 a multiple of 8, a0 in {{2, 4}} with a0*a1 >= 8, a0 = a1 = 2, or a0 = 1", axes[1]),
            ));
        }
        Ok(Hypercube { axes, dims })
    }

    /// DPUs in the cube.
    pub fn nr_dpus(&self) -> u32 {
        self.axes.iter().product()
    }

    /// Parses a communicator string: one '0' or '1' per axis given, x first.
    pub fn parse_comm(&self, comm: &str) -> Result<Comm> {
        let bytes = comm.as_bytes();
        if bytes.len() < self.dims as usize
            || bytes[..self.dims as usize]
                .iter()
                .any(|b| *b != b'0' && *b != b'1')
        {
            return Err(Error::invalid(
                "comm",
                format!("\"{comm}\": one '0' or '1' per axis ({} here), x first, e.g. \"100\" for the x axis", self.dims),
            ));
        }
        let mut c = [false; 3];
        for (i, b) in bytes[..self.dims as usize].iter().enumerate() {
            c[i] = *b == b'1';
        }
        if !c.iter().any(|b| *b) {
            return Err(Error::invalid(
                "comm",
                format!("\"{comm}\" selects no axis; set at least one '1'"),
            ));
        }
        Ok(c)
    }

    fn coords(&self, l: u32) -> [u32; 3] {
        let [a0, a1, _] = self.axes;
        [l % a0, (l / a0) % a1, l / (a0 * a1)]
    }

    /// Group size of a communicator.
    pub fn group_size(&self, comm: Comm) -> u32 {
        (0..3).filter(|i| comm[*i]).map(|i| self.axes[i]).product()
    }

    /// (group index, rank in the group) of DPU `l`.
    pub fn group_of(&self, l: u32, comm: Comm) -> (u32, u32) {
        let c = self.coords(l);
        let (mut g, mut gs, mut r, mut rs) = (0, 1, 0, 1);
        for i in 0..3 {
            if comm[i] {
                r += c[i] * rs;
                rs *= self.axes[i];
            } else {
                g += c[i] * gs;
                gs *= self.axes[i];
            }
        }
        (g, r)
    }

    /// The groups of a communicator, in group order, each its DPUs by rank.
    pub fn groups(&self, comm: Comm) -> Vec<Vec<u32>> {
        let n = self.group_size(comm);
        let mut out = vec![vec![0; n as usize]; (self.nr_dpus() / n) as usize];
        for l in 0..self.nr_dpus() {
            let (g, r) = self.group_of(l, comm);
            out[g as usize][r as usize] = l;
        }
        out
    }
}

/// The rank (in set order) and DPU index in it of logical DPU `l`.
pub fn dpu_of(l: u32) -> (u32, u32) {
    let j = l % RANK_DPUS;
    (l / RANK_DPUS, (j % CHIPS) * CHIPS + j / CHIPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entangled_order_and_groups() {
        assert_eq!(dpu_of(0), (0, 0));
        assert_eq!(dpu_of(1), (0, 8));
        assert_eq!(dpu_of(8), (0, 1));
        assert_eq!(dpu_of(65), (1, 8));
        let h = Hypercube::new(&[8, 4, 2], 64, true).unwrap();
        // "110": groups by z, rank x + 8y.
        assert_eq!(h.group_of(8 * 3 + 5, [true, true, false]), (0, 29));
        assert_eq!(h.group_of(32 + 1, [true, true, false]), (1, 1));
        // "010": groups by (x, z), rank y.
        assert_eq!(h.group_of(8 * 3 + 5, [false, true, false]), (5, 3));
        let g = h.groups([false, true, false]);
        assert_eq!(g[5], vec![5, 13, 21, 29]);
    }

    #[test]
    fn bad_shapes_name_the_parameter() {
        let e = Hypercube::new(&[8, 4], 64, true).unwrap_err().to_string();
        assert!(e.starts_with("axis_len:") && e.contains("32 DPUs"), "{e}");
        let e = Hypercube::new(&[3, 1, 1], 3, true).unwrap_err().to_string();
        assert!(e.contains("powers of two"), "{e}");
        let e = Hypercube::new(&[64], 64, false).unwrap_err().to_string();
        assert!(e.starts_with("dpu_set:"), "{e}");
        let h = Hypercube::new(&[8, 8, 1], 64, true).unwrap();
        assert!(h
            .parse_comm("1x0")
            .unwrap_err()
            .to_string()
            .starts_with("comm:"));
        assert!(h.parse_comm("000").is_err());
        let h2 = Hypercube::new(&[8, 8], 64, true).unwrap();
        assert_eq!(h2.parse_comm("01").unwrap(), [false, true, false]);
    }
}
