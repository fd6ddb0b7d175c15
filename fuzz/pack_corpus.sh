#!/usr/bin/env bash
# Minimises fuzz/corpus/TARGET (libFuzzer -merge=1: the smallest inputs that keep every
# feature) and packs it as fuzz/corpus/TARGET.tar.xz, the form committed (mutations of the
# same programs compress about 300 to 1). run.sh and smoke.sh unpack it when
# fuzz/corpus/TARGET/ is missing.
#
#   fuzz/pack_corpus.sh TARGET...      (after cargo +nightly fuzz build)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
for t in "$@"; do
    bin="target/x86_64-unknown-linux-gnu/release/$t"
    min=$(mktemp -d)
    OPENPIM_QUIET=1 nice -n 10 "$bin" -merge=1 "$min" "corpus/$t" >/dev/null 2>&1
    tar -C "$min" -cf - . | xz -6 >"corpus/$t.tar.xz.tmp"
    mv -f "corpus/$t.tar.xz.tmp" "corpus/$t.tar.xz"
    echo "$t: $(ls "$min" | wc -l) inputs, $(du -h "corpus/$t.tar.xz" | cut -f1) packed"
    rm -rf "$min"
done
