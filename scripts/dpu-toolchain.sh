#!/usr/bin/env bash
# The DPU toolchain's fingerprint, and bin/ folders kept fresh for it.
#
#   scripts/dpu-toolchain.sh hash           the fingerprint: the DPU compiler chosen
#                                           (OPENPIM_DPU_COMPILER), its scheduling
#                                           (OPENPIM_DPU_SCHEDULE) and the contents of the SDK's
#                                           compiler shims, headers and DPU runtime sources (not
#                                           the runtime's own tests, sdk/dpu/test)
#   scripts/dpu-toolchain.sh fresh DIR...   removes the files in DIR/bin when its programs were
#                                           built with another toolchain, then stamps it with
#                                           this one (subfolders are kept: they are caches with
#                                           fingerprints of their own, such as the PrIM builds
#                                           of bench/fidelity/bin/prim, and a runner may be
#                                           using them)
#
# The tests' and benchmarks' Makefiles name their C sources only, not the SDK headers, DPU
# runtime and compiler shim their DPU programs are built with: after a change there, `make`
# would keep the old binaries (a lock changed in sdk/dpu, say, and a suite still runs the
# old lock). Each runner calls `fresh` on its folders before `make`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

hash() {
    (
        echo "compiler=${OPENPIM_DPU_COMPILER:-default}"
        # the shim's scheduling choice (auto unless set) changes clang's code
        [[ ${OPENPIM_DPU_SCHEDULE:-auto} == auto ]] || echo "schedule=$OPENPIM_DPU_SCHEDULE"
        cd "$root" && find sdk/bin sdk/include sdk/dpu \( -path sdk/dpu/build -o -path sdk/dpu/test \) -prune -o -type f -print |
            LC_ALL=C sort | xargs sha256sum
    ) | sha256sum | cut -c1-16
}

case "${1:-}" in
hash)
    hash
    ;;
fresh)
    shift
    h=$(hash)
    for dir in "$@"; do
        if [ "$(cat "$dir/bin/.toolchain" 2>/dev/null)" != "$h" ]; then
            mkdir -p "$dir/bin"
            find "$dir/bin" -mindepth 1 -maxdepth 1 ! -type d -delete
            echo "$h" >"$dir/bin/.toolchain"
        fi
    done
    ;;
*)
    echo "usage: $0 hash | fresh DIR..." >&2
    exit 2
    ;;
esac
