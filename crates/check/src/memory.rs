//! The memory checker of one DPU run: reads of bytes never written, accesses past a data
//! symbol or outside the heap blocks of `mem_alloc` / `buddy_alloc`, stack overflows, and
//! each tasklet's deepest stack use.
//!
//! Overruns of symbols are seen two ways: an access that starts inside a symbol and ends
//! past it, and an instruction walking memory (each access where its previous one, in the
//! same call of its function, ended) that steps from inside a symbol to past its end — an
//! off-by-one loop. The allocator's calls are followed by their entry address and their
//! return (the instruction at the return address): the size asked for and the block given.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use openpim_engine::probe::{Access, AccessKind, Space};
use openpim_engine::Fault;

use crate::findings::Kind;
use crate::init::DpuInit;
use crate::program::{AllocFn, ProgramInfo};
use crate::vclock::MAX_TASKLETS;

/// A finding of the run, before its locations are looked up.
pub struct Raw {
    pub kind: Kind,
    /// (tasklet, write, pc) of each access.
    pub accesses: Vec<(u32, bool, u32)>,
    pub space: Space,
    pub offset: u32,
    pub detail: String,
    /// What the bytes are (described when found: a heap block may be freed before the end).
    pub target: String,
}

/// A block given by an allocator.
#[derive(Clone, Copy, Debug)]
struct Block {
    start: u32,
    size: u32,
    func: AllocFn,
    /// The call's return address (where it was asked for).
    at: u32,
    /// Taken by the allocator itself (`buddy_init`'s heap): holds blocks, is not one.
    pool: bool,
}

impl Block {
    /// One past its last byte.
    fn end(&self) -> u32 {
        self.start.saturating_add(self.size)
    }
}

/// A call of an allocator function, until it returns.
#[derive(Clone, Copy)]
struct Call {
    func: AllocFn,
    size: u32,
    ptr: u32,
    ret: u32,
    pool: bool,
}

/// An instruction's last access, in one call of its function.
#[derive(Clone, Copy, Default)]
struct Walk {
    end: u32,
    object: Option<(u32, u32)>,
    call: u64,
}

pub struct MemoryRun {
    info: Arc<ProgramInfo>,
    pub init: DpuInit,
    min_sp: [u32; MAX_TASKLETS],
    deepest_pc: [u32; MAX_TASKLETS],
    /// Per tasklet, the allocator calls not returned yet (`fsb_alloc` calls `mem_alloc`).
    calls: Vec<Vec<Call>>,
    blocks: Vec<Block>,
    /// The block size of each `fsb_alloc` allocator (by its address).
    fsb_sizes: HashMap<u32, u32>,
    dma_first: Option<Access>,
    /// Per tasklet, per instruction (allocated at its first access).
    walks: Vec<Vec<Walk>>,
    /// Per tasklet, per function: calls so far (allocated at its first call).
    entries: Vec<Vec<u64>>,
    seen: HashSet<(Kind, u32)>,
    pub found: Vec<Raw>,
}

impl MemoryRun {
    pub fn new(info: Arc<ProgramInfo>, init: DpuInit) -> MemoryRun {
        let mut min_sp = [0; MAX_TASKLETS];
        for (t, &(_, hi)) in info.stacks.iter().enumerate().take(MAX_TASKLETS) {
            min_sp[t] = hi;
        }
        MemoryRun {
            info,
            init,
            min_sp,
            deepest_pc: [0; MAX_TASKLETS],
            calls: vec![Vec::new(); MAX_TASKLETS],
            blocks: Vec::new(),
            fsb_sizes: HashMap::new(),
            dma_first: None,
            walks: vec![Vec::new(); MAX_TASKLETS],
            entries: vec![Vec::new(); MAX_TASKLETS],
            seen: HashSet::new(),
            found: Vec::new(),
        }
    }

    fn report(&mut self, mut raw: Raw) {
        let pc = raw.accesses.first().map_or(0, |a| a.2);
        if self.seen.insert((raw.kind, pc)) {
            raw.target = match self.describe_block(raw.offset) {
                Some(b) if raw.space == Space::Wram && raw.offset >= self.info.heap_start => {
                    format!("{b}, WRAM {:#x}", raw.offset)
                }
                _ => self.info.describe(raw.space, raw.offset),
            };
            self.found.push(raw);
        }
    }

    /// Before tasklet `t` issues the instruction at `pc`: follows the allocator's calls and
    /// the calls of every function (walks do not span calls). `reg` reads `t`'s registers.
    pub fn before_issue(&mut self, t: u32, pc: u32, reg: impl Fn(u32) -> u32) {
        let tu = t as usize;
        if tu >= MAX_TASKLETS {
            return;
        }
        if self.calls[tu].last().is_some_and(|c| c.ret == pc) {
            if let Some(call) = self.calls[tu].pop() {
                self.returned(call, reg(10));
            }
        }
        if !self.info.is_entry(pc) {
            return;
        }
        let entries = &mut self.entries[tu];
        if entries.is_empty() {
            entries.resize(self.info.function_count(), 0);
        }
        if let Some(n) = entries.get_mut(self.info.function_index(pc)) {
            *n += 1;
        }
        if let Some(&func) = self.info.alloc_entries.get(&pc) {
            let ret = reg(1);
            let call = Call {
                func,
                size: reg(10),
                ptr: reg(10),
                ret,
                pool: self.info.in_allocator(ret),
            };
            match func {
                AllocFn::MemReset => self.blocks.clear(),
                AllocFn::BuddyFree => self.free(call.ptr),
                AllocFn::BuddyRealloc => self.push_call(
                    tu,
                    Call {
                        size: reg(11),
                        ..call
                    },
                ),
                AllocFn::FsbFree => {
                    let ptr = reg(11);
                    if let Some(i) = self
                        .blocks
                        .iter()
                        .position(|b| b.func == AllocFn::FsbGet && b.start == ptr)
                    {
                        self.blocks.swap_remove(i);
                    }
                }
                AllocFn::MemAlloc
                | AllocFn::BuddyAlloc
                | AllocFn::FsbAlloc
                | AllocFn::FsbGet
                | AllocFn::BuddySetUp => self.push_call(tu, call),
            }
        }
    }

    fn push_call(&mut self, t: usize, call: Call) {
        let calls = &mut self.calls[t];
        // (A call that never returned to its return address, a tail call, is dropped.)
        calls.retain(|c| c.ret != call.ret);
        if calls.len() >= 8 {
            calls.remove(0);
        }
        calls.push(call);
    }

    fn free(&mut self, ptr: u32) {
        if let Some(i) = self
            .blocks
            .iter()
            .position(|b| b.func == AllocFn::BuddyAlloc && b.start == ptr)
        {
            self.blocks.swap_remove(i);
        }
    }

    fn returned(&mut self, call: Call, result: u32) {
        if call.func == AllocFn::BuddyRealloc {
            self.free(call.ptr);
        }
        if result == 0 {
            return;
        }
        let size = match call.func {
            AllocFn::BuddySetUp => return,
            AllocFn::FsbAlloc => {
                // Not a block: its blocks come from fsb_get (its memory is a pool).
                self.fsb_sizes.insert(result, call.size);
                return;
            }
            AllocFn::FsbGet => match self.fsb_sizes.get(&call.ptr) {
                Some(&size) => size,
                None => return,
            },
            _ => call.size,
        };
        self.blocks.push(Block {
            start: result,
            size,
            func: if call.func == AllocFn::BuddyRealloc {
                AllocFn::BuddyAlloc
            } else {
                call.func
            },
            at: call.ret,
            pool: call.pool,
        });
    }

    /// After tasklet `t` issued the instruction at `pc`, with stack pointer `sp`.
    pub fn after_issue(&mut self, t: u32, pc: u32, sp: u32) {
        let tu = t as usize;
        if tu < MAX_TASKLETS && sp < self.min_sp[tu] {
            self.min_sp[tu] = sp;
            self.deepest_pc[tu] = pc;
        }
    }

    /// A WRAM or MRAM access.
    pub fn access(&mut self, a: &Access) {
        match a.kind {
            AccessKind::Op => {
                if a.write {
                    self.init.bits(a.space).set(a.offset, a.size, true);
                } else if let Some(b) = self.init.bits(a.space).first_unset(a.offset, a.size) {
                    self.report(Raw {
                        kind: Kind::UninitialisedRead,
                        accesses: vec![(a.tasklet, false, a.pc)],
                        space: a.space,
                        offset: b,
                        detail: "read of bytes never written since the program was loaded"
                            .to_string(),
                        target: String::new(),
                    });
                }
                self.check_bounds(a);
            }
            AccessKind::Dma => match self.dma_first.take() {
                Some(first) if first.tasklet == a.tasklet && first.cycle == a.cycle => {
                    let (src, dst) = if first.write {
                        (a, &first)
                    } else {
                        (&first, a)
                    };
                    self.init
                        .copy((src.space, src.offset), (dst.space, dst.offset), dst.size);
                    self.check_bounds(&first);
                    self.check_bounds(a);
                }
                _ => self.dma_first = Some(*a),
            },
        }
    }

    fn check_bounds(&mut self, a: &Access) {
        self.check_object(a);
        if a.space == Space::Wram {
            self.check_heap(a);
        }
    }

    /// Past the end of a data symbol: an access straddling its end, or a walk stepping out.
    fn check_object(&mut self, a: &Access) {
        let addr = a.space.address(a.offset);
        let symbol = self
            .info
            .object_at(a.space, a.offset)
            .map(|s| (s.address, s.size));
        let end = addr.wrapping_add(a.size);
        if let Some((start, size)) = symbol {
            let obj_end = start.wrapping_add(size);
            if end > obj_end {
                let name = self
                    .info
                    .object_at(a.space, a.offset)
                    .map_or_else(String::new, |s| s.name.clone());
                self.report(Raw {
                    kind: Kind::SymbolOverrun,
                    accesses: vec![(a.tasklet, a.write, a.pc)],
                    space: a.space,
                    offset: a.space_offset(obj_end),
                    target: String::new(),
                    detail: format!(
                        "a {}-byte access at offset {} of the {size}-byte `{name}` ends {} byte(s) past it",
                        a.size,
                        addr - start,
                        end - obj_end
                    ),
                });
            }
        }
        let call = self
            .entries
            .get(a.tasklet as usize)
            .and_then(|e| e.get(self.info.function_index(a.pc)))
            .copied()
            .unwrap_or(0);
        // Heap blocks are walked as symbols are (straddling one is `check_heap`'s).
        let block =
            if symbol.is_none() && a.space == Space::Wram && a.offset >= self.info.heap_start {
                self.block_at(a.offset).map(|b| (b.start, b.size))
            } else {
                None
            };
        let here = symbol.or(block);
        let index = (a.pc.wrapping_sub(self.info.base) >> 2) as usize;
        let prev = match self.walks.get_mut(a.tasklet as usize) {
            Some(walks) => {
                if walks.is_empty() {
                    walks.resize(self.info.instructions, Walk::default());
                }
                walks.get_mut(index).map(|w| {
                    std::mem::replace(
                        w,
                        Walk {
                            end,
                            object: here,
                            call,
                        },
                    )
                })
            }
            None => None,
        };
        if let Some(Walk {
            end: prev_end,
            object: Some((ps, pz)),
            call: prev_call,
        }) = prev
        {
            let prev_object_end = ps.saturating_add(pz);
            if prev_end == addr
                && prev_call == call
                && here != Some((ps, pz))
                && addr >= prev_object_end
            {
                let (kind, name) = match self.info.object_at(a.space, a.space_offset(ps)) {
                    Some(s) => (Kind::SymbolOverrun, format!("`{}`", s.name)),
                    None => (
                        Kind::AllocationOverrun,
                        self.describe_block(a.space_offset(ps))
                            .unwrap_or_else(|| "a heap block".to_string()),
                    ),
                };
                self.report(Raw {
                    kind,
                    accesses: vec![(a.tasklet, a.write, a.pc)],
                    space: a.space,
                    offset: a.offset,
                    target: String::new(),
                    detail: match addr - prev_object_end {
                        0 => format!(
                            "this instruction walked {name} ({pz} bytes) and went on past its end"
                        ),
                        gap => format!(
                            "this instruction walked {name} ({pz} bytes) and went on {gap} byte(s) past its end"
                        ),
                    },
                });
            }
        }
    }

    /// Outside every live heap block (the allocator's own accesses aside).
    fn check_heap(&mut self, a: &Access) {
        // The allocator's own accesses (and those of what it calls: `memset` of its tables)
        // are not checked against its blocks.
        let in_call = self
            .calls
            .get(a.tasklet as usize)
            .is_some_and(|c| !c.is_empty());
        if a.offset < self.info.heap_start || in_call || self.info.in_allocator(a.pc) {
            return;
        }
        let end = a.offset.saturating_add(a.size);
        let inside = |b: &Block| !b.pool && a.offset >= b.start && end <= b.end();
        if self.blocks.iter().any(inside) {
            return;
        }
        let below = self
            .blocks
            .iter()
            .filter(|b| !b.pool && b.start <= a.offset)
            .max_by_key(|b| b.start)
            .copied();
        let detail = match below {
            Some(b) => format!(
                "{} byte(s) past the end of the {}-byte block of {} (called at {})",
                end.saturating_sub(b.end()),
                b.size,
                b.func.name(),
                self.info.location(b.at.wrapping_sub(4))
            ),
            None => "heap memory that no live mem_alloc/buddy_alloc block holds".to_string(),
        };
        self.report(Raw {
            kind: Kind::AllocationOverrun,
            accesses: vec![(a.tasklet, a.write, a.pc)],
            space: a.space,
            offset: a.offset,
            detail,
            target: String::new(),
        });
    }

    /// The run ends with `fault` of tasklet `t` at `pc`.
    pub fn fault(&mut self, t: u32, pc: u32, fault: &Fault) {
        if let Fault::StackOverflow { sp, stack_lo } = *fault {
            let into = match self.info.stack_of(sp) {
                Some(u) => format!("into the stack of tasklet {u}"),
                None => "out of its stack".to_string(),
            };
            let size = self
                .info
                .stacks
                .get(t as usize)
                .map_or(0, |&(lo, hi)| hi - lo);
            let function = self
                .info
                .function(pc)
                .map(|f| format!(" in `{f}`"))
                .unwrap_or_default();
            self.report(Raw {
                kind: Kind::StackOverflow,
                accesses: vec![(t, true, pc)],
                space: Space::Wram,
                offset: sp,
                target: String::new(),
                detail: format!(
                    "sp went to {sp:#x}, {} byte(s) below its {size}-byte stack, {into}{function} (raise STACK_SIZE_DEFAULT or use less stack)",
                    stack_lo - sp
                ),
            });
            if let Some(m) = self.min_sp.get_mut(t as usize) {
                if sp < *m {
                    *m = sp;
                    self.deepest_pc[t as usize] = pc;
                }
            }
        }
    }

    /// Each tasklet's deepest stack use: (tasklet, bytes used, stack size, pc where deepest).
    pub fn stack_use(&self, nr_tasklets: u32) -> Vec<(u32, u32, u32, u32)> {
        self.info
            .stacks
            .iter()
            .enumerate()
            .take(nr_tasklets as usize)
            .map(|(t, &(lo, hi))| {
                (
                    t as u32,
                    hi.saturating_sub(self.min_sp[t]),
                    hi - lo,
                    self.deepest_pc[t],
                )
            })
            .collect()
    }

    /// The live heap block holding WRAM byte `offset`.
    fn block_at(&self, offset: u32) -> Option<Block> {
        self.blocks
            .iter()
            .filter(|b| !b.pool && offset >= b.start && offset < b.end())
            .max_by_key(|b| b.start)
            .copied()
    }

    /// What the heap byte at `offset` belongs to, if a block.
    pub fn describe_block(&self, offset: u32) -> Option<String> {
        let b = self.block_at(offset)?;
        Some(format!(
            "the {}-byte block of {} (called at {})",
            b.size,
            b.func.name(),
            self.info.location(b.at.wrapping_sub(4))
        ))
    }
}

/// Offsets within an access's space.
trait SpaceOffset {
    fn space_offset(&self, addr: u32) -> u32;
}

impl SpaceOffset for Access {
    fn space_offset(&self, addr: u32) -> u32 {
        match self.space {
            Space::Wram => addr,
            Space::Mram => addr.wrapping_sub(Space::Mram.address(0)),
        }
    }
}
