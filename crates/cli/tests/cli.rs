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
