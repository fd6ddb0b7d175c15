//! Regions of DPU ops to Cranelift IR to host code.
//!
//! A region is the set of *slot starts* (ops at which an issue slot begins) reachable from
//! its entry by fall-through, conditional branches, direct jumps, calls (the callee and the
//! return point) and the code after an environment call, found breadth-first up to
//! [`MAX_SLOT_STARTS`]; the function is entered at any of them. Each slot start has a block
//! that checks the batch's budget for the run of slots falling through from it (`Region::runs`)
//! and a block that executes the slot's ops: an op marked to issue with its successor
//! (`decode::fuse`) continues the slot, a word access marked as a pair continues it only when
//! the pair's address is 8-aligned (decided at run time, as the DPU does), and any other op
//! ends it. A slot's last op leads to the next slot start's block, or, outside the region,
//! returns `exit::LEAVE` with the next op index; an indirect jump goes to the region's return
//! points through one dispatch block, or leaves.
//!
//! The DPU's registers stay in the tasklet's register file: each op loads its operands and
//! stores its result there (the host forwards the stores to the loads), so no exit carries
//! register values (keeping them in Cranelift variables made every exit pass up to 31 of
//! them: 2.7x the host code). A slot that cannot run in a batch (an environment
//! call; an access outside WRAM, misaligned or conflicting with another tasklet's batch; `sp`
//! below the stack; a jump outside the program) is undone — its registers set back to their
//! values at the slot's start, its earlier stores written back — and returns
//! `exit::INTERPRET` at the slot's start, where the batch interpreter takes it. This is
//! exactly what `Dpu::epoch_turns` does with such a slot; the limits it keeps on one slot
//! (8 registers kept, 4 stores undoable) are kept here too.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I32, I64};
use cranelift_codegen::ir::{AbiParam, Block, InstBuilder, MemFlagsData, Signature, Value};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::Context;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Switch, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::collections::HashMap;
use std::mem::ManuallyDrop;

use super::{ctx_offset as off, exit};
use crate::decode::{alu_dest, fuse, Op};
use crate::map::WRAM_SIZE;

/// Most slot starts in one region (bounds translation time per region; code past them is
/// another region, entered when control gets there).
pub(crate) const MAX_SLOT_STARTS: usize = 256;
/// Most registers a slot keeps to undo, and stores it keeps to undo (as `epoch_turns`).
const MAX_KEPT: usize = 8;
const MAX_UNDO: usize = 4;
/// The granule state bit "stored to by its batch" (`epoch::WRITTEN`), and the owner of a
/// granule several live batches read (`epoch::SHARED`).
const WRITTEN: i64 = 32;
const SHARED: i64 = 31;
/// Most slots one budget check covers (a run of slots falling through into each other): where
/// a batch has less room left, the batch interpreter runs its last slots one by one.
const MAX_RUN: u32 = 16;

/// A region's code.
pub(super) struct Translated {
    pub code: *const u8,
    /// The slot starts it may be entered at.
    pub starts: Vec<u32>,
    pub ops: u64,
    pub code_bytes: u64,
}

/// The code generator of one program image, and the code it made (which lives as long as
/// it).
pub(super) struct Translator {
    /// (Freed with the translator: see `Drop`.)
    module: ManuallyDrop<JITModule>,
    ctx: Context,
    fctx: FunctionBuilderContext,
    /// The slow granule check's signature (`exec::translated_access`), and the arithmetic
    /// calls' (`jit::arith_call`).
    access_sig: Signature,
    call_sig: Signature,
    next_name: u32,
}

// SAFETY: the module's raw code pointers are only ever read (executed) by other threads after
// the code was finalized; all mutation happens under the cache's mutex.
unsafe impl Send for Translator {}

impl Translator {
    /// A code generator for this host; `None` if Cranelift cannot generate code for it.
    pub(super) fn new() -> Option<Translator> {
        let mut flags = settings::builder();
        flags.set("opt_level", "speed").ok()?;
        // (The IR is made by this module, from decoded ops: checking it at every translation
        // costs more than half of the translation time in a release build. Builds with debug
        // assertions, as the fuzz targets are, check every region they translate.)
        flags
            .set(
                "enable_verifier",
                if cfg!(debug_assertions) {
                    "true"
                } else {
                    "false"
                },
            )
            .ok()?;
        flags.set("is_pic", "false").ok()?;
        flags.set("use_colocated_libcalls", "false").ok()?;
        let isa = cranelift_native::builder()
            .ok()?
            .finish(settings::Flags::new(flags))
            .ok()?;
        let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let ptr = module.target_config().pointer_type();
        let mut access_sig = module.make_signature();
        access_sig.params.push(AbiParam::new(ptr));
        access_sig.params.push(AbiParam::new(I32));
        access_sig.params.push(AbiParam::new(I32));
        access_sig.returns.push(AbiParam::new(I32));
        let mut call_sig = module.make_signature();
        call_sig.params.push(AbiParam::new(ptr));
        call_sig.returns.push(AbiParam::new(I32));
        Some(Translator {
            call_sig,
            ctx: module.make_context(),
            module: ManuallyDrop::new(module),
            fctx: FunctionBuilderContext::new(),
            access_sig,
            next_name: 0,
        })
    }

    /// Translates the region entered at op `entry`; `None` if the code generator fails.
    pub(super) fn translate(
        &mut self,
        ops: &[Op],
        base: u32,
        len: u32,
        entry: u32,
    ) -> Option<Translated> {
        let region = Region::find(ops, entry);
        let ptr = self.module.target_config().pointer_type();
        self.module.clear_context(&mut self.ctx);
        let mut sig = self.module.make_signature();
        sig.params.push(AbiParam::new(ptr));
        sig.returns.push(AbiParam::new(I32));
        self.ctx.func.signature = sig.clone();
        let name = format!("r{}_{entry}", self.next_name);
        self.next_name += 1;
        let id = self
            .module
            .declare_function(&name, Linkage::Local, &sig)
            .ok()?;
        {
            let mut b = FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx);
            let sigs = (
                b.import_signature(self.access_sig.clone()),
                b.import_signature(self.call_sig.clone()),
            );
            let mut e = Emitter::new(&mut b, ops, base, len, &region, ptr, sigs);
            e.emit(&region.starts);
            e.returns();
            b.seal_all_blocks();
            b.finalize(self.module.target_config());
        }
        self.module.define_function(id, &mut self.ctx).ok()?;
        let code_bytes = self
            .ctx
            .compiled_code()
            .map_or(0, |c| c.code_buffer().len() as u64);
        self.module.clear_context(&mut self.ctx);
        self.module.finalize_definitions().ok()?;
        Some(Translated {
            code: self.module.get_finalized_function(id),
            starts: region.starts,
            ops: region.ops,
            code_bytes,
        })
    }
}

impl Drop for Translator {
    fn drop(&mut self) {
        // SAFETY: the translator belongs to a program's cache, dropped with the decoded
        // program; no DPU runs a program that is being dropped (a run borrows it), so none of
        // its code can run again. Without this, every program loaded would leak its code.
        unsafe { ManuallyDrop::take(&mut self.module).free_memory() };
    }
}

/// The ops of the region entered at op `entry` (what translating it costs grows with them).
pub(super) fn region_ops(ops: &[Op], entry: u32) -> u64 {
    Region::find(ops, entry).ops
}

/// The slot starts of a region, in the order found.
struct Region {
    starts: Vec<u32>,
    /// Ops of its slots (each slot's ops counted once).
    ops: u64,
}

impl Region {
    /// Per slot start, the slots of the run it begins: itself, and, when it ends by falling
    /// through into another slot start of the region (its ops all fused, as when a pair's
    /// address is aligned), that one's run, up to `MAX_RUN` slots.
    fn runs(&self, ops: &[Op]) -> HashMap<u32, u32> {
        let starts: std::collections::HashSet<u32> = self.starts.iter().copied().collect();
        let mut order = self.starts.clone();
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut runs = HashMap::new();
        for s in order {
            let run = match fall_through(ops, s) {
                Some(t) if starts.contains(&t) => {
                    let rt = runs.get(&t).copied().unwrap_or(1);
                    if rt < MAX_RUN {
                        1 + rt
                    } else {
                        1
                    }
                }
                _ => 1,
            };
            runs.insert(s, run);
        }
        runs
    }

    fn find(ops: &[Op], entry: u32) -> Region {
        let mut starts = vec![entry];
        let mut seen = std::collections::HashSet::from([entry]);
        let mut next = 0;
        let mut count = 0u64;
        let mut succ = Vec::new();
        while next < starts.len() {
            let s = starts[next];
            next += 1;
            succ.clear();
            count += slot_successors(ops, s, &mut succ);
            for &t in &succ {
                if starts.len() < MAX_SLOT_STARTS && seen.insert(t) {
                    starts.push(t);
                }
            }
        }
        Region { starts, ops: count }
    }
}

/// The register an op's `rd`/`rs2` field names (the upper bits carry a fusion mark).
fn r(field: u8) -> u8 {
    field & 31
}

/// Pushes the slot starts that can follow the slot starting at op `s` (statically known
/// ones); returns the slot's ops (on its longest path).
fn slot_successors(ops: &[Op], s: u32, out: &mut Vec<u32>) -> u64 {
    let mut j = s;
    let mut n = 0;
    loop {
        let Some(&op) = ops.get(j as usize) else {
            return n;
        };
        n += 1;
        let cont = match op {
            _ if alu_dest(op).is_some() => continues(op),
            Op::Lw { rd: field, .. } | Op::Sw { rs2: field, .. } => match field >> 5 {
                fuse::ALWAYS => true,
                fuse::NONE => false,
                _ => {
                    // (Misaligned at run time: the slot ends here.)
                    out.push(j + 1);
                    true
                }
            },
            Op::Nop
            | Op::Lb { .. }
            | Op::Lh { .. }
            | Op::Lbu { .. }
            | Op::Lhu { .. }
            | Op::Sb { .. }
            | Op::Sh { .. }
            | Op::AddiSp { .. } => false,
            Op::Beq { target, .. }
            | Op::Bne { target, .. }
            | Op::Blt { target, .. }
            | Op::Bge { target, .. }
            | Op::Bltu { target, .. }
            | Op::Bgeu { target, .. } => {
                out.push(target);
                false
            }
            Op::J { target } => {
                out.push(target);
                return n;
            }
            // A call: the callee, and the return point (reached by its return, through
            // `Emitter::indirect`).
            Op::Jal { target, .. } => {
                out.push(target);
                out.push(j + 1);
                return n;
            }
            Op::Jalr { .. } => {
                out.push(j + 1);
                return n;
            }
            // An environment call is interpreted, and the code after it is likely run next.
            Op::Ecall | Op::EcallSpin { .. } => {
                out.push(j + 1);
                return n;
            }
            // Indirect jumps leave the region; anything else is interpreted.
            _ => return n,
        };
        if !cont {
            out.push(j + 1);
            return n;
        }
        j += 1;
    }
}

/// What the ops of the slot being emitted did so far on this path: what a stop undoes.
#[derive(Clone, Default)]
struct SlotPath {
    /// The slot's start op.
    start: u32,
    /// Registers written so far with their values at the slot's start (in order; a register
    /// may appear twice, as `epoch_turns` keeps it).
    kept: Vec<(u8, Value)>,
    /// Stores so far that a later op of the slot may have to undo: host address, old value,
    /// size.
    undo: Vec<(Value, Value, u32)>,
    /// Ops issued in the slot of the op before them.
    fused: i64,
}

/// The op after the slot starting at `s` when the slot ends by falling through into it (its
/// last op neither a control transfer nor a call), following every fused op.
fn fall_through(ops: &[Op], s: u32) -> Option<u32> {
    let mut j = s;
    loop {
        let op = *ops.get(j as usize)?;
        if continues(op) {
            j += 1;
            continue;
        }
        return match op {
            _ if alu_dest(op).is_some() => Some(j + 1),
            Op::Nop
            | Op::Lb { .. }
            | Op::Lh { .. }
            | Op::Lw { .. }
            | Op::Lbu { .. }
            | Op::Lhu { .. }
            | Op::Sb { .. }
            | Op::Sh { .. }
            | Op::Sw { .. }
            | Op::AddiSp { .. } => Some(j + 1),
            _ => None,
        };
    }
}

/// Whether op `op` may continue its slot with the next op (statically: a pair may).
fn continues(op: Op) -> bool {
    match op {
        Op::Lw { rd: field, .. } | Op::Sw { rs2: field, .. } => field >> 5 != fuse::NONE,
        _ => alu_dest(op).is_some_and(|rd| rd >> 5 == fuse::ALWAYS),
    }
}

/// A zero-extended 32-bit constant (Cranelift's `iconst.i32` takes the unsigned value).
fn c32(b: &mut FunctionBuilder, v: u32) -> Value {
    b.ins().iconst(I32, i64::from(v))
}

struct Emitter<'a, 'b> {
    b: &'a mut FunctionBuilder<'b>,
    ops: &'a [Op],
    base: u32,
    /// Instructions of the program (the ops past them are sentinels).
    len: u32,
    /// Per slot start: the block that checks the batch's budget for the run of slots it
    /// begins, and the block of the slot itself (entered without a check by fall-through from
    /// a slot whose check covered it).
    checked: HashMap<u32, Block>,
    body: HashMap<u32, Block>,
    /// Per slot start: the slots its check covers (`Region::runs`).
    runs: HashMap<u32, u32>,
    /// The region's return points (the ops after its calls).
    returns: Vec<u32>,
    /// Stop blocks branched to and not emitted yet, with what they undo.
    stops: Vec<(Block, SlotPath)>,
    /// The block dispatching the region's indirect jumps (`indirect`), once one exists.
    dispatch: Option<Block>,
    done: Variable,
    fused: Variable,
    ctx: Value,
    limit: Value,
    wram: Value,
    granule: Value,
    /// `mine | WRITTEN` (the state of a granule this batch stored to), and the state of a
    /// granule several live batches of this epoch read (`epoch::SHARED`).
    mine_w: Value,
    shared: Value,
    stack_lo: Value,
    exit: Block,
    regs_ptr: Value,
    access_sig: cranelift_codegen::ir::SigRef,
    access_fn: Value,
    call_sig: cranelift_codegen::ir::SigRef,
    call_fn: Value,
}

impl<'a, 'b> Emitter<'a, 'b> {
    fn new(
        b: &'a mut FunctionBuilder<'b>,
        ops: &'a [Op],
        base: u32,
        len: u32,
        region: &Region,
        ptr: cranelift_codegen::ir::Type,
        (access_sig, call_sig): (cranelift_codegen::ir::SigRef, cranelift_codegen::ir::SigRef),
    ) -> Emitter<'a, 'b> {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let ctx = b.block_params(entry)[0];
        let flags = MemFlagsData::trusted();
        let regs_ptr = b.ins().load(ptr, flags, ctx, off::REGS);
        let wram = b.ins().load(ptr, flags, ctx, off::WRAM);
        let granule = b.ins().load(ptr, flags, ctx, off::GRANULE);
        let mine = b.ins().load(I64, flags, ctx, off::MINE);
        let mine_w = b.ins().bor_imm_s(mine, WRITTEN);
        let shared = b.ins().band_imm_u(mine, !0xffff_ffff_i64);
        let shared = b.ins().bor_imm_u(shared, SHARED);
        let fused0 = b.ins().load(I64, flags, ctx, off::FUSED);
        let done0 = b.ins().load(I32, flags, ctx, off::DONE);
        let limit = b.ins().load(I32, flags, ctx, off::LIMIT);
        let stack_lo = b.ins().load(I32, flags, ctx, off::STACK_LO);
        let access_fn = b.ins().iconst(
            ptr,
            crate::exec::translated_access as *const () as usize as i64,
        );
        let call_fn = b
            .ins()
            .iconst(ptr, super::arith_call as *const () as usize as i64);
        let done = b.declare_var(I32);
        b.def_var(done, done0);
        let fused = b.declare_var(I64);
        b.def_var(fused, fused0);
        let mut checked = HashMap::new();
        let mut body = HashMap::new();
        for &s in &region.starts {
            checked.insert(s, b.create_block());
            body.insert(s, b.create_block());
        }
        // Entered at any of its slot starts (a batch may end, and the next begin, at any).
        let pc0 = b.ins().load(I32, flags, ctx, off::PC);
        let mut switch = Switch::new();
        for &s in &region.starts {
            switch.set_entry(u128::from(s), checked[&s]);
        }
        let unknown = b.create_block();
        switch.emit(b, pc0, unknown);

        // The exit: (status, next pc); the counters and pc written back (the registers live in
        // the tasklet's register file, written by each op).
        let exit = b.create_block();
        b.append_block_param(exit, I32);
        b.append_block_param(exit, I32);
        b.switch_to_block(exit);
        let (status, pc) = (b.block_params(exit)[0], b.block_params(exit)[1]);
        let d = b.use_var(done);
        b.ins().store(flags, d, ctx, off::DONE);
        let f = b.use_var(fused);
        b.ins().store(flags, f, ctx, off::FUSED);
        b.ins().store(flags, pc, ctx, off::PC);
        b.ins().return_(&[status]);
        // (Never taken: the cache enters a region only at its slot starts.)
        b.switch_to_block(unknown);
        let status = b.ins().iconst(I32, i64::from(exit::INTERPRET));
        b.ins().jump(exit, &[status.into(), pc0.into()]);

        let returns = region
            .starts
            .iter()
            .filter(|&&s| {
                s > 0
                    && matches!(
                        ops.get(s as usize - 1),
                        Some(Op::Jal { .. } | Op::Jalr { .. })
                    )
            })
            .copied()
            .collect();
        Emitter {
            b,
            ops,
            base,
            len,
            checked,
            body,
            runs: region.runs(ops),
            returns,
            stops: Vec::new(),
            dispatch: None,
            done,
            fused,
            ctx,
            limit,
            wram,
            granule,
            mine_w,
            shared,
            stack_lo,
            exit,
            regs_ptr,
            access_sig,
            access_fn,
            call_sig,
            call_fn,
        }
    }

    /// Emits every slot start's block.
    fn emit(&mut self, starts: &[u32]) {
        for &s in starts {
            self.b.switch_to_block(self.checked[&s]);
            // The budget: a batch runs at most `limit` slots. The check covers the run of
            // slots from here that fall through into each other (`Region::runs`); where the
            // batch has less room, the batch interpreter runs the slots one by one.
            let d = self.b.use_var(self.done);
            let after = self.b.ins().iadd_imm_u(d, i64::from(self.runs[&s]));
            let full = self
                .b
                .ins()
                .icmp(IntCC::UnsignedGreaterThan, after, self.limit);
            let body = self.body[&s];
            let status = c32(self.b, exit::INTERPRET);
            let pc = c32(self.b, s);
            self.b
                .ins()
                .brif(full, self.exit, &[status.into(), pc.into()], body, &[]);
            self.b.switch_to_block(body);
            self.ops_from(
                s,
                SlotPath {
                    start: s,
                    ..SlotPath::default()
                },
            );
            // The stops the slot's ops branch to (every block of the slot is filled now).
            while let Some((blk, path)) = self.stops.pop() {
                self.b.switch_to_block(blk);
                self.stop(&path);
            }
        }
    }

    /// The value of register `x` (x0 reads 0).
    fn get(&mut self, x: u8) -> Value {
        match r(x) {
            0 => c32(self.b, 0),
            x => self.b.ins().load(
                I32,
                MemFlagsData::trusted(),
                self.regs_ptr,
                4 * i32::from(x),
            ),
        }
    }

    /// Writes register `x`; with `keep`, the slot may still stop, so its value at the slot's
    /// start is kept (false when the path keeps too many: the caller stops instead).
    fn set(&mut self, x: u8, v: Value, path: &mut SlotPath, keep: bool) -> bool {
        let x = r(x);
        if keep {
            if path.kept.len() == MAX_KEPT {
                return false;
            }
            let old = self.get(x);
            path.kept.push((x, old));
        }
        self.b
            .ins()
            .store(MemFlagsData::trusted(), v, self.regs_ptr, 4 * i32::from(x));
        true
    }

    /// The slot cannot run here: undo what its ops did on this path and let the batch
    /// interpreter take it at its start.
    fn stop(&mut self, path: &SlotPath) {
        for &(addr, old, size) in path.undo.iter().rev() {
            self.store(old, addr, size);
        }
        for &(x, old) in path.kept.iter().rev() {
            self.b.ins().store(
                MemFlagsData::trusted(),
                old,
                self.regs_ptr,
                4 * i32::from(x),
            );
        }
        let status = c32(self.b, exit::INTERPRET);
        let pc = c32(self.b, path.start);
        self.b.ins().jump(self.exit, &[status.into(), pc.into()]);
    }

    /// A block that stops the slot of `path` (for a conditional branch to it); its code is
    /// emitted once the current slot's blocks are all filled (`emit`).
    fn stop_block(&mut self, path: &SlotPath) -> Block {
        let blk = self.b.create_block();
        self.stops.push((blk, path.clone()));
        blk
    }

    /// The slot ends: it counts, and its fused ops.
    fn count_slot(&mut self, path: &SlotPath) {
        let d = self.b.use_var(self.done);
        let d = self.b.ins().iadd_imm_s(d, 1);
        self.b.def_var(self.done, d);
        if path.fused != 0 {
            let f = self.b.use_var(self.fused);
            let f = self.b.ins().iadd_imm_s(f, path.fused);
            self.b.def_var(self.fused, f);
        }
    }

    /// Control goes to the slot starting at op `t` (its budget checked).
    fn goto(&mut self, t: u32) {
        match self.checked.get(&t) {
            Some(&blk) => {
                self.b.ins().jump(blk, &[]);
            }
            None => {
                let status = c32(self.b, exit::LEAVE);
                let pc = c32(self.b, t);
                self.b.ins().jump(self.exit, &[status.into(), pc.into()]);
            }
        }
    }

    /// Control goes to the slot starting at op index `to` (a value): straight to its block
    /// when it is one of the region's return points (a return to a call in the region),
    /// otherwise out of the region.
    fn indirect(&mut self, to: Value) {
        // (One dispatch block for the region's indirect jumps, emitted last by `returns`: a
        // dispatch per jump would make the code grow with calls times returns.)
        let dispatch = *self.dispatch.get_or_insert_with(|| {
            let blk = self.b.create_block();
            self.b.append_block_param(blk, I32);
            blk
        });
        self.b.ins().jump(dispatch, &[to.into()]);
    }

    /// Emits the dispatch of the region's indirect jumps, if any jumped to it.
    fn returns(&mut self) {
        let Some(dispatch) = self.dispatch else {
            return;
        };
        self.b.switch_to_block(dispatch);
        let to = self.b.block_params(dispatch)[0];
        let leave = self.b.create_block();
        let mut switch = Switch::new();
        for &r in &self.returns {
            if let Some(&blk) = self.checked.get(&r) {
                switch.set_entry(u128::from(r), blk);
            }
        }
        switch.emit(self.b, to, leave);
        self.b.switch_to_block(leave);
        let status = c32(self.b, exit::LEAVE);
        self.b.ins().jump(self.exit, &[status.into(), to.into()]);
    }

    /// The slot ends here by falling through into the slot starting at op `t`: without a
    /// check when the slot's own check covered it.
    fn end(&mut self, path: &SlotPath, t: u32) {
        self.count_slot(path);
        let covered = fall_through(self.ops, path.start) == Some(t)
            && self
                .runs
                .get(&t)
                .is_some_and(|&rt| self.runs[&path.start] == rt + 1);
        match self.body.get(&t) {
            Some(&blk) if covered => {
                self.b.ins().jump(blk, &[]);
            }
            _ => self.goto(t),
        }
    }

    fn store(&mut self, v: Value, addr: Value, size: u32) {
        let flags = MemFlagsData::trusted();
        match size {
            4 => self.b.ins().store(flags, v, addr, 0),
            2 => self.b.ins().istore16(flags, v, addr, 0),
            _ => self.b.ins().istore8(flags, v, addr, 0),
        };
    }

    /// Checks a WRAM access of `size` bytes at DPU address `a` as `epoch_turns` does (in
    /// WRAM, naturally aligned, granted by the epoch's granule tracking) and returns its host
    /// address; a failed check stops the slot.
    fn wram_access(&mut self, a: Value, size: u32, store: bool, path: &SlotPath) -> Value {
        let outside =
            self.b
                .ins()
                .icmp_imm_u(IntCC::UnsignedGreaterThan, a, i64::from(WRAM_SIZE - size));
        let bad = if size > 1 {
            let low = self.b.ins().band_imm_u(a, i64::from(size - 1));
            let mis = self.b.ins().icmp_imm_u(IntCC::NotEqual, low, 0);
            self.b.ins().bor(outside, mis)
        } else {
            outside
        };
        let stop = self.stop_block(path);
        let inside = self.b.create_block();
        self.b.ins().brif(bad, stop, &[], inside, &[]);
        self.b.switch_to_block(inside);
        // The granule: already this batch's (stored to, or read for a load), or the epoch's
        // own check (`Epochs::access`).
        let a64 = self.b.ins().uextend(I64, a);
        let g_off = self.b.ins().ushr_imm_u(a64, 3);
        let g_off = self.b.ins().ishl_imm_u(g_off, 3);
        let g_addr = self.b.ins().iadd(self.granule, g_off);
        let g = self.b.ins().load(I64, MemFlagsData::trusted(), g_addr, 0);
        let fast = if store {
            self.b.ins().icmp(IntCC::Equal, g, self.mine_w)
        } else {
            // (A load of a granule this batch accessed, or that several batches of this epoch
            // only read: `Epochs::access` grants both without changing anything.)
            let gw = self.b.ins().bor_imm_s(g, WRITTEN);
            let own = self.b.ins().icmp(IntCC::Equal, gw, self.mine_w);
            let read = self.b.ins().icmp(IntCC::Equal, g, self.shared);
            self.b.ins().bor(own, read)
        };
        let slow = self.b.create_block();
        let go = self.b.create_block();
        self.b.ins().brif(fast, go, &[], slow, &[]);
        self.b.switch_to_block(slow);
        let st = c32(self.b, u32::from(store));
        let call = self
            .b
            .ins()
            .call_indirect(self.access_sig, self.access_fn, &[self.ctx, a, st]);
        let ok = self.b.inst_results(call)[0];
        let stop = self.stop_block(path);
        self.b.ins().brif(ok, go, &[], stop, &[]);
        self.b.switch_to_block(go);
        self.b.ins().iadd(self.wram, a64)
    }

    /// After a word access that may pair with the next op (`kind`, at DPU address `a`): the
    /// slot goes on with op `j + 1` when the pair's address is 8-aligned, else it ends.
    fn pair_next(&mut self, kind: u8, a: Value, j: u32, path: SlotPath) {
        if kind == fuse::ALWAYS {
            let mut p = path;
            p.fused += 1;
            return self.ops_from(j + 1, p);
        }
        let hi = if kind == fuse::PAIR_HI { 4 } else { 0 };
        let low = self.b.ins().band_imm_u(a, 7);
        // (`a - hi` is 8-aligned iff `a & 7 == hi`.)
        let aligned = self.b.ins().icmp_imm_u(IntCC::Equal, low, hi);
        let pair = self.b.create_block();
        let alone = self.b.create_block();
        self.b.ins().brif(aligned, pair, &[], alone, &[]);
        self.b.switch_to_block(alone);
        // (A pair that does not fuse adds a slot the run's check did not count.)
        self.count_slot(&path);
        self.goto(j + 1);
        self.b.switch_to_block(pair);
        let mut p = path;
        p.fused += 1;
        self.ops_from(j + 1, p);
    }

    /// An `ecall` (op `j`): an arithmetic call runs here (`jit::arith_call`, on the registers
    /// stored to the tasklet's register file and reloaded after), its slots counted as
    /// `epoch_turns` counts them; any other call stops the slot for the batch interpreter.
    fn arith_ecall(&mut self, j: u32, path: SlotPath) {
        let flags = MemFlagsData::trusted();
        let call = self
            .b
            .ins()
            .call_indirect(self.call_sig, self.call_fn, &[self.ctx]);
        let r = self.b.inst_results(call)[0];
        let stop = self.stop_block(&path);
        let ran = self.b.create_block();
        self.b.ins().brif(r, ran, &[], stop, &[]);
        self.b.switch_to_block(ran);
        // The call's slot, then as many of its further slots as the batch has room for; the
        // rest are owed after it.
        let slots = self.b.ins().iadd_imm_s(r, -1);
        self.count_slot(&path);
        let d = self.b.use_var(self.done);
        let room = self.b.ins().isub(self.limit, d);
        let m = self.b.ins().umin(slots, room);
        let d = self.b.ins().iadd(d, m);
        self.b.def_var(self.done, d);
        let more = self.b.ins().icmp(IntCC::UnsignedGreaterThan, slots, m);
        let owe = self.b.create_block();
        let next = self.b.create_block();
        self.b.ins().brif(more, owe, &[], next, &[]);
        self.b.switch_to_block(owe);
        let left = self.b.ins().isub(slots, m);
        self.b.ins().store(flags, left, self.ctx, off::OWE_SLOTS);
        let at = c32(self.b, j);
        self.b.ins().store(flags, at, self.ctx, off::OWE_AT);
        let status = c32(self.b, exit::OWE);
        let pc = c32(self.b, j + 1);
        self.b.ins().jump(self.exit, &[status.into(), pc.into()]);
        self.b.switch_to_block(next);
        self.goto(j + 1);
    }

    /// Emits op `j` of the slot of `path` and the ops of the slot after it.
    fn ops_from(&mut self, j: u32, mut path: SlotPath) {
        let Some(&op) = self.ops.get(j as usize) else {
            return self.stop(&path);
        };
        macro_rules! alu {
            ($rd:expr, $v:expr) => {{
                let v = $v;
                if $rd >> 5 == fuse::ALWAYS {
                    if !self.set($rd, v, &mut path, true) {
                        return self.stop(&path);
                    }
                    path.fused += 1;
                    return self.ops_from(j + 1, path);
                }
                self.set($rd, v, &mut path, false);
                return self.end(&path, j + 1);
            }};
        }
        macro_rules! bin {
            ($rd:expr, $rs1:expr, $rs2:expr, $f:ident) => {{
                let x = self.get($rs1);
                let y = self.get($rs2);
                alu!($rd, self.b.ins().$f(x, y))
            }};
        }
        macro_rules! imm {
            ($rd:expr, $rs1:expr, $imm:expr, $f:ident) => {{
                let x = self.get($rs1);
                let y = c32(self.b, $imm as u32);
                alu!($rd, self.b.ins().$f(x, y))
            }};
        }
        macro_rules! cmp {
            ($rd:expr, $cc:expr, $x:expr, $y:expr) => {{
                let (x, y) = ($x, $y);
                let c = self.b.ins().icmp($cc, x, y);
                alu!($rd, self.b.ins().uextend(I32, c))
            }};
        }
        macro_rules! branch {
            ($rs1:expr, $rs2:expr, $cc:expr, $target:expr) => {{
                let x = self.get($rs1);
                let y = self.get($rs2);
                let c = self.b.ins().icmp($cc, x, y);
                self.count_slot(&path);
                let taken = self.b.create_block();
                let not = self.b.create_block();
                self.b.ins().brif(c, taken, &[], not, &[]);
                self.b.switch_to_block(taken);
                self.goto($target);
                self.b.switch_to_block(not);
                return self.goto(j + 1);
            }};
        }
        match op {
            Op::Li { rd, imm } => alu!(rd, c32(self.b, imm)),
            Op::Addi { rd, rs1, imm } => imm!(rd, rs1, imm, iadd),
            Op::Slti { rd, rs1, imm } => {
                let x = self.get(rs1);
                let y = c32(self.b, imm as u32);
                cmp!(rd, IntCC::SignedLessThan, x, y)
            }
            Op::Sltiu { rd, rs1, imm } => {
                let x = self.get(rs1);
                let y = c32(self.b, imm as u32);
                cmp!(rd, IntCC::UnsignedLessThan, x, y)
            }
            Op::Xori { rd, rs1, imm } => imm!(rd, rs1, imm, bxor),
            Op::Ori { rd, rs1, imm } => imm!(rd, rs1, imm, bor),
            Op::Andi { rd, rs1, imm } => imm!(rd, rs1, imm, band),
            Op::Slli { rd, rs1, sh } => imm!(rd, rs1, sh & 31, ishl),
            Op::Srli { rd, rs1, sh } => imm!(rd, rs1, sh & 31, ushr),
            Op::Srai { rd, rs1, sh } => imm!(rd, rs1, sh & 31, sshr),
            Op::Add { rd, rs1, rs2 } => bin!(rd, rs1, rs2, iadd),
            Op::Sub { rd, rs1, rs2 } => bin!(rd, rs1, rs2, isub),
            // (Cranelift's shifts take the amount modulo 32, as RV32I's.)
            Op::Sll { rd, rs1, rs2 } => bin!(rd, rs1, rs2, ishl),
            Op::Srl { rd, rs1, rs2 } => bin!(rd, rs1, rs2, ushr),
            Op::Sra { rd, rs1, rs2 } => bin!(rd, rs1, rs2, sshr),
            Op::Slt { rd, rs1, rs2 } => {
                let x = self.get(rs1);
                let y = self.get(rs2);
                cmp!(rd, IntCC::SignedLessThan, x, y)
            }
            Op::Sltu { rd, rs1, rs2 } => {
                let x = self.get(rs1);
                let y = self.get(rs2);
                cmp!(rd, IntCC::UnsignedLessThan, x, y)
            }
            Op::Xor { rd, rs1, rs2 } => bin!(rd, rs1, rs2, bxor),
            Op::Or { rd, rs1, rs2 } => bin!(rd, rs1, rs2, bor),
            Op::And { rd, rs1, rs2 } => bin!(rd, rs1, rs2, band),
            Op::Beq { rs1, rs2, target } => branch!(rs1, rs2, IntCC::Equal, target),
            Op::Bne { rs1, rs2, target } => branch!(rs1, rs2, IntCC::NotEqual, target),
            Op::Blt { rs1, rs2, target } => branch!(rs1, rs2, IntCC::SignedLessThan, target),
            Op::Bge { rs1, rs2, target } => {
                branch!(rs1, rs2, IntCC::SignedGreaterThanOrEqual, target)
            }
            Op::Bltu { rs1, rs2, target } => branch!(rs1, rs2, IntCC::UnsignedLessThan, target),
            Op::Bgeu { rs1, rs2, target } => {
                branch!(rs1, rs2, IntCC::UnsignedGreaterThanOrEqual, target)
            }
            Op::Nop => self.end(&path, j + 1),
            Op::J { target } => self.end(&path, target),
            Op::Jal { rd, target } => {
                let link = c32(self.b, self.base.wrapping_add((j + 1) << 2));
                self.set(rd, link, &mut path, false);
                self.end(&path, target)
            }
            Op::Jalr { rs1, imm, .. } | Op::Jr { rs1, imm } => {
                // The target must be an instruction of the program (`Dpu::jump_index`).
                let x = self.get(rs1);
                let dest = self.b.ins().iadd_imm_s(x, i64::from(imm));
                let even = c32(self.b, !1);
                let dest = self.b.ins().band(dest, even);
                let base = c32(self.b, self.base);
                let offset = self.b.ins().isub(dest, base);
                let low = self.b.ins().band_imm_u(offset, 3);
                let mis = self.b.ins().icmp_imm_u(IntCC::NotEqual, low, 0);
                let past = self.b.ins().icmp_imm_u(
                    IntCC::UnsignedGreaterThanOrEqual,
                    offset,
                    i64::from(self.len) << 2,
                );
                let bad = self.b.ins().bor(mis, past);
                let stop = self.stop_block(&path);
                let ok = self.b.create_block();
                self.b.ins().brif(bad, stop, &[], ok, &[]);
                self.b.switch_to_block(ok);
                let to = self.b.ins().ushr_imm_u(offset, 2);
                if let Op::Jalr { rd, .. } = op {
                    let link = c32(self.b, self.base.wrapping_add((j + 1) << 2));
                    self.set(rd, link, &mut path, false);
                }
                self.count_slot(&path);
                self.indirect(to);
            }
            Op::Lw { rd, rs1, imm } => {
                let base = self.get(rs1);
                let a = self.b.ins().iadd_imm_s(base, i64::from(imm));
                let host = self.wram_access(a, 4, false, &path);
                let v = self.b.ins().load(I32, MemFlagsData::trusted(), host, 0);
                let kind = rd >> 5;
                if !self.set(rd, v, &mut path, kind != fuse::NONE) {
                    return self.stop(&path);
                }
                if kind == fuse::NONE {
                    return self.end(&path, j + 1);
                }
                self.pair_next(kind, a, j, path)
            }
            Op::Lh { rd, rs1, imm }
            | Op::Lhu { rd, rs1, imm }
            | Op::Lb { rd, rs1, imm }
            | Op::Lbu { rd, rs1, imm } => {
                let base = self.get(rs1);
                let a = self.b.ins().iadd_imm_s(base, i64::from(imm));
                let size = if matches!(op, Op::Lh { .. } | Op::Lhu { .. }) {
                    2
                } else {
                    1
                };
                let host = self.wram_access(a, size, false, &path);
                let f = MemFlagsData::trusted();
                let v = match op {
                    Op::Lh { .. } => self.b.ins().sload16(I32, f, host, 0),
                    Op::Lhu { .. } => self.b.ins().uload16(I32, f, host, 0),
                    Op::Lb { .. } => self.b.ins().sload8(I32, f, host, 0),
                    _ => self.b.ins().uload8(I32, f, host, 0),
                };
                self.set(rd, v, &mut path, false);
                self.end(&path, j + 1)
            }
            Op::Sw { rs1, rs2, imm } | Op::Sh { rs1, rs2, imm } | Op::Sb { rs1, rs2, imm } => {
                let size = match op {
                    Op::Sw { .. } => 4,
                    Op::Sh { .. } => 2,
                    _ => 1,
                };
                let base = self.get(rs1);
                let a = self.b.ins().iadd_imm_s(base, i64::from(imm));
                let kind = if size == 4 { rs2 >> 5 } else { fuse::NONE };
                let host = self.wram_access(a, size, true, &path);
                let v = self.get(rs2);
                if kind != fuse::NONE {
                    if path.undo.len() == MAX_UNDO {
                        return self.stop(&path);
                    }
                    let old = self.b.ins().load(I32, MemFlagsData::trusted(), host, 0);
                    path.undo.push((host, old, 4));
                }
                self.store(v, host, size);
                if kind == fuse::NONE {
                    return self.end(&path, j + 1);
                }
                self.pair_next(kind, a, j, path)
            }
            Op::AddiSp { imm } => {
                let sp = self.get(2);
                let sp = self.b.ins().iadd_imm_s(sp, i64::from(imm));
                let below = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedLessThan, sp, self.stack_lo);
                let stop = self.stop_block(&path);
                let ok = self.b.create_block();
                self.b.ins().brif(below, stop, &[], ok, &[]);
                self.b.switch_to_block(ok);
                self.set(2, sp, &mut path, false);
                self.end(&path, j + 1)
            }
            Op::Ecall => self.arith_ecall(j, path),
            // Other environment calls, sentinels, the generic path: the batch interpreter's.
            _ => self.stop(&path),
        }
    }
}
