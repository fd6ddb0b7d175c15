//! Test helpers: a tiny DPU program built with the RISC-V cross compiler and a private
//! linker script (independent of the SDK shim), or `None` when the compiler is missing.

use std::process::Command;
use std::sync::Mutex;

/// Serialises tests that allocate ranks (the rank pool is process-wide).
#[allow(dead_code)]
pub static ALLOC_LOCK: Mutex<()> = Mutex::new(());

pub fn alloc_lock() -> std::sync::MutexGuard<'static, ()> {
    ALLOC_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone)]
pub struct Fixture {
    pub nr_tasklets: u32,
    pub big_wram_words: Option<u32>,
    pub big_text_words: Option<u32>,
    /// Bytes of a `__sys_stacks` block (the tasklet stacks, as the SDK shim lays them out).
    pub stacks_bytes: Option<u32>,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture {
            nr_tasklets: 2,
            big_wram_words: None,
            big_text_words: None,
            stacks_bytes: None,
        }
    }
}

const LINKER_SCRIPT: &str = r#"
ENTRY(_start)
MEMORY {
  iram (rx) : ORIGIN = 0x80000000, LENGTH = 1M
  wram (rw) : ORIGIN = 0x00000000, LENGTH = 1M
  mram (rw) : ORIGIN = 0x08000000, LENGTH = 64M
}
SECTIONS {
  .text : { *(.text.start) *(.text*) } > iram
  __sys_iram_end = .;
  .data : { . = . + 8; *(.rodata*) *(.srodata*) *(.data*) *(.sdata*) } > wram
  .dpu_host : { *(.dpu_host) } > wram
  .bss (NOLOAD) : { *(.bss*) *(.sbss*) *(COMMON) } > wram
  . = ALIGN(8);
  __sys_heap_start = .;
  __sys_wram_end = .;
  .mram : { *(.mram) } > mram
  .mram.noinit (NOLOAD) : { *(.mram.noinit) } > mram
  . = ALIGN(8);
  __sys_used_mram_end = .;
  __stdout_buffer_size = 4096;
  /DISCARD/ : { *(.comment) *(.riscv.attributes) }
}
"#;

const SOURCE: &str = r#"
#include <stdint.h>
#define __host __attribute__((section(".dpu_host"), aligned(8)))
#define __mram __attribute__((section(".mram"), aligned(8)))
#define __mram_noinit __attribute__((section(".mram.noinit"), aligned(8)))
__host uint32_t input[16];
__host uint64_t result = 7;
__mram uint8_t mbuf[1024] = {1, 2, 3};
__mram_noinit uint8_t mscratch[4096];
uint32_t plain_wram[4] = {9};
uint32_t __sys_nr_tasklets = NR_TASKLETS;
uint32_t __sys_heap_pointer;
uint32_t __sys_stack_table[2 * NR_TASKLETS] = { 0x8000, 0x8400, 0x8400, 0x8800 };
#ifdef BIG_WRAM
uint32_t big[BIG_WRAM];
#endif
#ifdef STACKS
uint8_t __sys_stacks[STACKS] __attribute__((aligned(16)));
#endif
#ifdef BIG_TEXT
__attribute__((used)) static const uint32_t big_text[BIG_TEXT] __attribute__((section(".text.big"))) = {1};
#endif
__attribute__((section(".text.start"))) void _start(void) { for (;;) { } }
"#;

/// Builds the fixture program; `None` (with a note) when the cross compiler is missing.
pub fn build_fixture(f: &Fixture) -> Option<Vec<u8>> {
    let cc = "riscv64-unknown-elf-gcc";
    if Command::new(cc).arg("--version").output().is_err() {
        eprintln!("skipping: {cc} not found");
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "openpim-rt-fixture-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).ok()?;
    let src = dir.join("t.c");
    let ld = dir.join("t.ld");
    let out = dir.join("t.elf");
    std::fs::write(&src, SOURCE).ok()?;
    std::fs::write(&ld, LINKER_SCRIPT).ok()?;
    let mut cmd = Command::new(cc);
    cmd.args([
        "-march=rv32i",
        "-mabi=ilp32",
        "-O2",
        "-ffreestanding",
        "-nostdlib",
        "-nostartfiles",
        "-static",
    ])
    .arg(format!("-DNR_TASKLETS={}", f.nr_tasklets))
    .arg("-T")
    .arg(&ld)
    .arg("-Wl,--build-id=none")
    .arg("-o")
    .arg(&out)
    .arg(&src);
    if let Some(w) = f.big_wram_words {
        cmd.arg(format!("-DBIG_WRAM={w}"));
    }
    if let Some(b) = f.stacks_bytes {
        cmd.arg(format!("-DSTACKS={b}"));
    }
    if let Some(w) = f.big_text_words {
        cmd.arg(format!("-DBIG_TEXT={w}"));
    }
    let status = cmd.status().ok()?;
    assert!(status.success(), "fixture build failed");
    let bytes = std::fs::read(&out).ok()?;
    let _ = std::fs::remove_dir_all(&dir);
    Some(bytes)
}
