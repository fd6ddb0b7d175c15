//! What goes where: the primitives' semantics per group (which chunks of which members make a
//! destination chunk), turned into the host step's line operations ([`crate::line::Op`]) for a
//! layout of the source and destination (natural, or rotated by the relocation programs).

use std::collections::HashMap;

use crate::cube::{Comm, Hypercube, CHIPS};
use crate::line::{Body, Op};

/// The primitives that move data between DPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exchange {
    AlltoAll,
    AllGather,
    ReduceScatter,
    AllReduce,
}

impl Exchange {
    /// Destination chunks per DPU.
    pub fn dest_chunks(self, n: u32) -> u32 {
        match self {
            Exchange::AlltoAll | Exchange::AllGather => n,
            Exchange::ReduceScatter | Exchange::AllReduce => 1,
        }
    }

    /// Bytes of one chunk (source and destination) for `total` bytes per DPU.
    pub fn chunk_bytes(self, total: u32, n: u32) -> u32 {
        match self {
            Exchange::AllReduce => total,
            _ => total / n,
        }
    }

    /// The sources `(member rank, source chunk)` of destination chunk `j` of member `r`.
    pub fn sources(self, n: u32, r: u32, j: u32) -> Vec<(u32, u32)> {
        match self {
            Exchange::AlltoAll => vec![(j, r)],
            Exchange::AllGather => vec![(j, 0)],
            Exchange::ReduceScatter => (0..n).map(|s| (s, r)).collect(),
            Exchange::AllReduce => (0..n).map(|s| (s, 0)).collect(),
        }
    }
}

/// The relocation programs' layouts (PIM-assisted reordering, `dpu/relocate.c`): before the
/// host step, chunk `k` of chip `c` sits in slot `8(k/8) + (k - c) mod 8` ("rotated"); the
/// host writes destination chunk `8(p/8) + (c - p) mod 8` into slot `p`, which the program
/// after the host step puts back in place ("unrotated").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    pub rotated_source: bool,
    pub rotated_dest: bool,
}

fn rotated_slot(c: u32, k: u32) -> u32 {
    CHIPS * (k / CHIPS) + (k + CHIPS - c % CHIPS) % CHIPS
}

fn unrotated_chunk(c: u32, p: u32) -> u32 {
    CHIPS * (p / CHIPS) + (c % CHIPS + CHIPS - p % CHIPS) % CHIPS
}

/// The relocations that make `x` a uniform rotation for this exchange: only when the x axis
/// communicates and whole entangled groups are members (a0 a multiple of 8).
pub fn reordering(x: Exchange, cube: &Hypercube, comm: Comm) -> Layout {
    if !comm[0] || !cube.axes[0].is_multiple_of(CHIPS) {
        return Layout::default();
    }
    match x {
        Exchange::AlltoAll => Layout {
            rotated_source: true,
            rotated_dest: true,
        },
        Exchange::AllGather => Layout {
            rotated_source: false,
            rotated_dest: true,
        },
        Exchange::ReduceScatter => Layout {
            rotated_source: true,
            rotated_dest: false,
        },
        Exchange::AllReduce => Layout::default(),
    }
}

/// The host step's operations. Windows hold `src_words` / `dst_words` 64-bit words per DPU.
pub fn build(
    x: Exchange,
    cube: &Hypercube,
    comm: Comm,
    total: u32,
    layout: Layout,
    src_words: usize,
    dst_words: usize,
) -> Vec<Op> {
    build_for(x, cube, comm, total, layout, src_words, dst_words, |_| true)
}

/// [`build`], for the destinations in the entangled groups `keep` accepts only (an MPI
/// worker's ranks: each worker plans its own share of the step, `crate::distributed`).
#[allow(clippy::too_many_arguments)]
pub fn build_for(
    x: Exchange,
    cube: &Hypercube,
    comm: Comm,
    total: u32,
    layout: Layout,
    src_words: usize,
    dst_words: usize,
    keep: impl Fn(u32) -> bool,
) -> Vec<Op> {
    let n = cube.group_size(comm);
    let chunk_words = (x.chunk_bytes(total, n) / 8) as usize;
    let dest_chunks = x.dest_chunks(n);
    let nr_egs = (cube.nr_dpus() / CHIPS) as usize;
    // Per destination (entangled group, slot): each chip's sources (eg, slot, chip).
    type Sources = [Vec<(u32, u32, u8)>; 8];
    let mut dest: Vec<Option<Sources>> = vec![None; nr_egs * dest_chunks as usize];
    for members in cube.groups(comm) {
        for (r, &ld) in members.iter().enumerate() {
            let (ed, cd) = (ld / CHIPS, ld % CHIPS);
            if !keep(ed) {
                continue;
            }
            for p in 0..dest_chunks {
                let j = if layout.rotated_dest {
                    unrotated_chunk(cd, p)
                } else {
                    p
                };
                let entry =
                    dest[(ed * dest_chunks + p) as usize].get_or_insert_with(Default::default);
                for (s, k) in x.sources(n, r as u32, j) {
                    let ls = members[s as usize];
                    let cs = ls % CHIPS;
                    let slot = if layout.rotated_source {
                        rotated_slot(cs, k)
                    } else {
                        k
                    };
                    entry[cd as usize].push((ls / CHIPS, slot, cs as u8));
                }
            }
        }
    }
    let src_line = |e: u32, slot: u32| e as usize * src_words + slot as usize * chunk_words;
    // Destinations with the same body (a reduction replicated to a group) share one op.
    let mut ops: Vec<Op> = Vec::new();
    let mut index: HashMap<Body, usize> = HashMap::new();
    for (i, chips) in dest
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|s| (i, s)))
    {
        let (ed, p) = (i / dest_chunks as usize, i % dest_chunks as usize);
        let d = ed * dst_words + p * chunk_words;
        let body = uniform(&chips, src_line);
        match index.get(&body) {
            Some(&k) => ops[k].dst.push(d),
            None => {
                index.insert(body.clone(), ops.len());
                ops.push(Op {
                    dst: vec![d],
                    words: chunk_words,
                    body,
                });
            }
        }
    }
    ops
}

/// The body of one destination: a uniform rotation of whole source lines where every chip
/// takes the same lines with the same shift, else a per-chip gather.
fn uniform(chips: &[Vec<(u32, u32, u8)>; 8], line: impl Fn(u32, u32) -> usize) -> Body {
    // (eg, slot, rotation) -> the chips it feeds.
    let mut terms: HashMap<(u32, u32, u8), u8> = HashMap::new();
    let mut order: Vec<(u32, u32, u8)> = Vec::new();
    for (c, list) in chips.iter().enumerate() {
        for &(e, slot, sc) in list {
            let rot = ((c as u8) + 8 - sc) % 8;
            let mask = terms.entry((e, slot, rot)).or_insert_with(|| {
                order.push((e, slot, rot));
                0
            });
            *mask |= 1 << c;
        }
    }
    let same_count = chips.iter().all(|l| l.len() == order.len());
    if same_count && terms.values().all(|m| *m == 0xff) {
        if order.len() == 1 {
            let (e, s, r) = order[0];
            return Body::Copy {
                src: line(e, s),
                rot: r,
            };
        }
        // One term per source line, with the set of its rotations.
        let mut lines: Vec<(usize, u8)> = Vec::new();
        for (e, s, r) in order {
            let l = line(e, s);
            match lines.iter_mut().find(|(x, _)| *x == l) {
                Some((_, rots)) => *rots |= 1 << r,
                None => lines.push((l, 1 << r)),
            }
        }
        // Terms with the same rotations side by side: the host step reduces their lines
        // first and rotates once.
        lines.sort_by_key(|(_, rots)| *rots);
        return Body::Reduce { terms: lines };
    }
    Body::Gather {
        chips: std::array::from_fn(|c| {
            chips[c]
                .iter()
                .map(|(e, s, sc)| (line(*e, *s), *sc))
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_inverse_where_they_must_be() {
        for c in 0..8 {
            for p in 0..32 {
                assert_eq!(unrotated_chunk(c, unrotated_chunk(c, p)), p);
                let k = rotated_slot(c, p);
                assert_eq!(k / 8, p / 8);
            }
        }
    }

    #[test]
    fn reordering_makes_x_uniform() {
        let cube = Hypercube::new(&[16, 4, 1], 64, true).unwrap();
        let comm = [true, false, false];
        for x in [
            Exchange::AlltoAll,
            Exchange::AllGather,
            Exchange::ReduceScatter,
            Exchange::AllReduce,
        ] {
            let layout = reordering(x, &cube, comm);
            let ops = build(x, &cube, comm, 16 * 64, layout, 128, 128);
            assert!(
                ops.iter().all(|o| !matches!(o.body, Body::Gather { .. })),
                "{x:?} not uniform"
            );
            if x != Exchange::AllReduce {
                let plain = build(x, &cube, comm, 16 * 64, Layout::default(), 128, 128);
                assert!(
                    plain.iter().any(|o| matches!(o.body, Body::Gather { .. })),
                    "{x:?}"
                );
            }
        }
        // Along y the lines move whole, with no relocation.
        let ops = build(
            Exchange::AlltoAll,
            &cube,
            [false, true, false],
            4 * 64,
            Layout::default(),
            32,
            32,
        );
        assert!(ops
            .iter()
            .all(|o| matches!(o.body, Body::Copy { rot: 0, .. })));
    }
}
