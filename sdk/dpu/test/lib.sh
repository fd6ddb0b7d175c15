# Sourced by the DPU toolchain's test scripts (check.sh, compilers.sh, schedule.sh) with the
# name of the script's scratch folder: the folders they use (here, root, progs, shim: the
# compiler shim), a scratch folder removed at exit ($out), and the pass/fail counters they
# report (ok NAME; ko NAME [DETAIL...]).
here=$(cd -- "$(dirname -- "${BASH_SOURCE[1]}")" && pwd -P)
root=$(cd -- "$here/../../.." && pwd -P)
shim=$root/sdk/bin/dpu-upmem-dpurte-clang
progs=$here/progs
out=$(mktemp -d "${TMPDIR:-/tmp}/dpu-$1.XXXXXX")
trap 'rm -rf -- "$out"' EXIT

pass=0
fail=0
ok() { pass=$((pass + 1)); printf 'ok   %s\n' "$1"; }
ko() { fail=$((fail + 1)); printf 'FAIL %s\n' "$1"; [[ $# -gt 1 ]] && printf '     %s\n' "${@:2}"; }
