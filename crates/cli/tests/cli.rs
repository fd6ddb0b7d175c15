//! The `openpim` command as a user runs it.

use std::process::{Command, Output};

fn openpim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openpim"))
        .args(args)
        .env_remove("UPMEM_PROFILE_BASE")
        .output()
        .expect("openpim runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `openpim env` exports UPMEM_HOME, an SDK install layout; after `eval "$(openpim env)"`
/// `cc`, `clang` and `clang++` still build host programs, and `clang` given the DPU target
/// builds DPU programs (the CMake files are used by the conformance test cmake_host).
#[test]
fn env_exports_an_sdk_layout_and_host_compilers_keep_working() {
    let o = openpim(&["env"]);
    let text = stdout(&o);
    let home = text
        .lines()
        .find_map(|l| l.strip_prefix("export UPMEM_HOME=\""))
        .map(|l| l.trim_end_matches('"').to_string())
        .expect("UPMEM_HOME export");
    let home = std::path::Path::new(&home);
    for f in [
        "bin/dpu-upmem-dpurte-clang",
        "bin/dpu-pkg-config",
        "bin/clang",
        "bin/clang++",
        "include/dpu/dpu.h",
        "include/dpu/dpu.hpp",
        "share/upmem/cmake/dpu.cmake",
        "share/upmem/cmake/include/host/DpuHost.cmake",
    ] {
        assert!(home.join(f).exists(), "{} missing", home.join(f).display());
    }
    let tmp = std::env::temp_dir().join(format!("openpim-env-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let script = format!(
        r#"set -e
eval "$({exe} env)"
cd {tmp}
printf 'int main(void) {{ return 42; }}\n' > m.c
printf '#include <vector>\nint main() {{ std::vector<int> v(3); return (int)v.size(); }}\n' > m.cpp
printf '#include <defs.h>\nint main(void) {{ return 0; }}\n' > k.c
cc m.c -o m_cc; clang m.c -o m_clang; clang++ m.cpp -o m_clangxx
clang --target=dpu-upmem-dpurte -O2 k.c -o k.dpu
set +e
./m_cc; a=$?; ./m_clang; b=$?; ./m_clangxx; c=$?
echo "$a $b $c $(command -v clang)"
file k.dpu
"#,
        exe = env!("CARGO_BIN_EXE_openpim"),
        tmp = tmp.display()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let text = stdout(&out);
    std::fs::remove_dir_all(&tmp).ok();
    assert!(out.status.success(), "{text}{}", stderr(&out));
    let first = text.lines().next().unwrap_or("");
    assert!(first.starts_with("42 42 3 "), "{text}");
    assert!(first.ends_with("sdk/upmem-home/bin/clang"), "{text}");
    assert!(text.contains("RISC-V"), "{text}");
}

#[test]
fn env_puts_the_sdk_commands_and_libdpu_on_the_paths() {
    let o = openpim(&["env"]);
    assert!(o.status.success());
    let text = stdout(&o);
    let path_line = text
        .lines()
        .find(|l| l.starts_with("export PATH="))
        .expect("PATH export");
    assert!(path_line.contains("/sdk/bin:"), "{path_line}");
    let ld = text
        .lines()
        .find(|l| l.starts_with("export LD_LIBRARY_PATH="))
        .expect("LD_LIBRARY_PATH export");
    assert!(ld.contains("/target/release"), "{ld}");
    // The Python `dpu` package's folder, which really holds it.
    let py = text
        .lines()
        .find(|l| l.starts_with("export PYTHONPATH="))
        .expect("PYTHONPATH export");
    let py_dir = py
        .trim_start_matches("export PYTHONPATH=\"")
        .split(['$', '"'])
        .next()
        .unwrap();
    assert!(
        std::path::Path::new(py_dir)
            .join("dpu/__init__.py")
            .exists(),
        "{py}"
    );
    // The exported directory really holds the compiler shim.
    let bin = path_line
        .trim_start_matches("export PATH=\"")
        .split(':')
        .next()
        .unwrap();
    assert!(std::path::Path::new(bin)
        .join("dpu-upmem-dpurte-clang")
        .exists());
}

#[test]
fn info_describes_the_default_full_server() {
    let o = openpim(&["info"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("upmem-v1a"), "{text}");
    assert!(text.contains("2560 DPUs"), "{text}");
    assert!(text.contains("350 MHz"), "{text}");
}

#[test]
fn info_follows_hardware_and_rank_options() {
    let o = openpim(&["info", "--hardware", "upmem-v1b", "--ranks", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("400 MHz"), "{text}");
    assert!(text.contains("128 DPUs"), "{text}");
}

#[test]
fn info_rejects_an_unknown_profile_key_naming_it() {
    let o = openpim(&["info", "--profile", "nrRankz=3"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("nrRankz"), "{err}");
    assert!(err.contains("nrRanks"), "the valid keys are listed: {err}");
}

#[test]
fn info_rejects_an_unknown_hardware_profile() {
    let o = openpim(&["info", "--hardware", "no-such-dpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-dpu"), "{}", stderr(&o));
}

#[test]
fn run_passes_the_profile_and_the_exit_status_through() {
    let o = openpim(&[
        "run",
        "--ranks",
        "3",
        "--",
        "sh",
        "-c",
        "echo \"$UPMEM_PROFILE_BASE\"; command -v dpu-pkg-config >/dev/null && exit 7",
    ]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "nrRanks=3");
}

#[test]
fn run_refuses_an_invalid_profile_before_starting_the_program() {
    let o = openpim(&["run", "--profile", "bogus=1", "--", "sh", "-c", "exit 0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bogus"), "{}", stderr(&o));
}

#[test]
fn run_reports_a_missing_program() {
    let o = openpim(&["run", "--", "/nonexistent/host_program"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("could not start"), "{}", stderr(&o));
}

fn openpim_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_openpim"));
    c.args(args)
        .env_remove("UPMEM_PROFILE_BASE")
        .env_remove("OPENPIM_THREADS");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("openpim runs")
}

/// A fresh empty directory for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("openpim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn run_rejects_an_unknown_option_listing_the_valid_ones() {
    let o = openpim(&["run", "--unknownoption", "--", "echo", "ran"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "", "the command must not run");
    let err = stderr(&o);
    assert!(err.contains("'--unknownoption'"), "{err}");
    for opt in [
        "--profile S",
        "--hardware H",
        "--ranks N",
        "--report[=FILE.json]",
        "--trace FILE.json",
    ] {
        assert!(err.contains(opt), "{opt} is listed: {err}");
    }
    assert!(err.contains("follows `--`"), "{err}");
    // Other subcommands list their own options; an unknown subcommand lists the commands.
    let o = openpim(&["info", "--nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("valid options of `openpim info`: --profile S"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("--report"), "{}", stderr(&o));
    let o = openpim(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    let listed = err
        .lines()
        .find_map(|l| l.strip_prefix("valid commands: "))
        .unwrap_or_else(|| panic!("no list of the valid commands: {err}"));
    for cmd in ["env", "info", "run", "demo", "daemon", "pool", "plot"] {
        assert!(
            listed.split(", ").any(|c| c == cmd),
            "{cmd} is listed: {err}"
        );
    }
}

#[test]
fn run_passes_options_after_the_command_word_to_the_command() {
    let o = openpim(&["run", "echo", "--not-an-openpim-option", "x"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "--not-an-openpim-option x");
    let o = openpim(&["run", "--", "echo", "--ranks", "9"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "--ranks 9");
}

#[test]
fn run_refuses_an_unwritable_report_or_trace_before_starting() {
    let d = scratch("unwritable");
    let missing_dir = d.join("no/such/dir/run.json");
    let report = format!("--report={}", missing_dir.display());
    let o = openpim(&["run", &report, "--", "echo", "ran"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "", "the program must not run");
    let err = stderr(&o);
    assert!(err.contains(&missing_dir.display().to_string()), "{err}");
    assert!(err.contains("does not exist"), "{err}");

    let trace = format!("--trace={}", d.display());
    let o = openpim(&["run", &trace, "--", "echo", "ran"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    // The check leaves nothing behind.
    let ok = d.join("fine.json");
    let o = openpim(&[
        "run",
        &format!("--report={}", ok.display()),
        "--",
        "sh",
        "-c",
        "echo '{}' > \"$OPENPIM_REPORT\"",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(ok.exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn run_fails_when_the_report_could_not_be_written_at_exit() {
    let d = scratch("at-exit");
    let sub = d.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let report = sub.join("run.json");
    // Writable when checked, gone when the program exits.
    let o = openpim(&[
        "run",
        &format!("--report={}", report.display()),
        "--",
        "sh",
        "-c",
        "rm -rf \"$(dirname \"$OPENPIM_REPORT\")\"",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains(&report.display().to_string()), "{err}");
    assert!(err.contains("did not write"), "{err}");
    // A program that fails keeps its own exit status.
    let o = openpim(&[
        "run",
        &format!("--trace={}", d.join("t.json").display()),
        "--",
        "sh",
        "-c",
        "exit 5",
    ]);
    assert_eq!(o.status.code(), Some(5));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn report_without_equals_before_a_json_file_is_explained() {
    let o = openpim(&["run", "--report", "out.json", "--", "echo", "ran"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("--report=out.json"), "{}", stderr(&o));
}

#[test]
fn ranks_and_a_profile_setting_other_ranks_conflict_otherwise_merge() {
    let show = ["sh", "-c", "echo \"$UPMEM_PROFILE_BASE\""];
    let o = openpim(
        &[
            &["run", "--ranks", "2", "--profile", "nrRanks=3", "--"][..],
            &show,
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    let err = stderr(&o);
    assert!(
        err.contains("--ranks 2") && err.contains("nrRanks=3"),
        "{err}"
    );
    // The same value in both: accepted.
    let o = openpim(
        &[
            &[
                "run",
                "--ranks",
                "3",
                "--profile",
                "nrRanks=3,backend=hw",
                "--",
            ][..],
            &show,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "nrRanks=3,backend=hw");
    // Different keys: merged.
    let o = openpim(
        &[
            &["run", "--ranks", "2", "--profile", "backend=hw", "--"][..],
            &show,
        ]
        .concat(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "nrRanks=2,backend=hw");
    // The same for the hardware profile, and for `info`.
    let o = openpim(&[
        "info",
        "--hardware",
        "upmem-v1b",
        "--profile",
        "hardware=upmem-v1a",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--hardware upmem-v1b"),
        "{}",
        stderr(&o)
    );
    let o = openpim(&["info", "--ranks", "2", "--profile", "nrRanks=5"]);
    assert_eq!(o.status.code(), Some(2));
    // UPMEM_PROFILE_BASE is a default, not a conflict: the options apply on top of it.
    let o = openpim_env(
        &[&["run", "--ranks", "2", "--"][..], &show].concat(),
        &[("UPMEM_PROFILE_BASE", "nrRanks=7")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "nrRanks=7,nrRanks=2");
}

#[test]
fn run_refuses_a_bad_openpim_threads_and_accepts_a_clamped_one() {
    for (v, what) in [
        ("abc", "not a whole number"),
        ("0", "no simulation thread"),
        ("-4", "negative"),
    ] {
        let o = openpim_env(&["run", "--", "echo", "ran"], &[("OPENPIM_THREADS", v)]);
        assert_eq!(o.status.code(), Some(2), "{v}");
        assert_eq!(stdout(&o), "", "{v}");
        let err = stderr(&o);
        assert!(
            err.contains(&format!("OPENPIM_THREADS='{v}'")) && err.contains(what),
            "{err}"
        );
        assert!(err.contains("from 1 to"), "the valid range is named: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let o = openpim_env(
        &["run", "--", "echo", "ran"],
        &[("OPENPIM_THREADS", "99999")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn info_accepts_zero_threads_per_rank() {
    let o = openpim(&["info", "--profile", "nrThreadsPerRank=0"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn checkpoint_inspect_refuses_what_is_not_a_checkpoint() {
    let dir = std::env::temp_dir().join(format!("openpim-cli-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("garbage.openpim");
    std::fs::write(&f, b"OPENPIM-CHECKPT1 but then nothing").unwrap();
    let o = openpim(&["checkpoint", "inspect", f.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        stderr(&o)
            .contains("garbage.openpim is damaged or not a checkpoint: truncated in the header"),
        "{}",
        stderr(&o)
    );
    let o = openpim(&[
        "checkpoint",
        "inspect",
        dir.join("missing").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot open it"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn memory_options_become_profile_keys_and_are_checked() {
    let o = openpim(&[
        "info",
        "--memory",
        "cached:/tmp/x",
        "--memory-budget",
        "1G",
        "--persist",
        "launch",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("MRAM backing: cached:/tmp/x (per-rank files behind a DRAM budget of 1024 MiB), persist=launch"),
        "{}",
        stdout(&o)
    );
    let o = openpim(&["info", "--memory", "cached:/tmp/x"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("needs memoryBudget=SIZE"),
        "{}",
        stderr(&o)
    );
    let o = openpim(&["info", "--persist", "end", "--profile", "persist=never"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--persist end and --profile persist=never"),
        "{}",
        stderr(&o)
    );
}
