#!/usr/bin/env bash
# Makes sure the fuzzing tools are there: the nightly toolchain (needed, not installed here:
# rustup toolchain install nightly) and cargo-fuzz (installed when missing).
#
#   fuzz/tools.sh WHO     (WHO: the caller's name, for the messages)
who=${1:-fuzz}
if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "$who: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "$who: installing cargo-fuzz"
    cargo install --locked cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz || exit 1
fi
