#!/bin/sh
# Compile check of the host headers in sdk/include: C99, C11, C++ (extern "C"),
# strict warnings; plus a run-time check of the ABI layouts libdpu mirrors.
set -u
here=$(cd "$(dirname "$0")" && pwd)
inc=$(cd "$here/../../sdk/include" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
run() {
    if "$@" >"$tmp/log" 2>&1; then
        echo "PASS $*"
    else
        echo "FAIL $*"; cat "$tmp/log"; fail=1
    fi
}
cd "$here"
W="-Wall -Wextra -Werror"
for std in c99 c11 gnu11 c17; do
    run gcc -std=$std $W -I"$inc" -DCHECK_INCBIN -c use_headers.c -o "$tmp/u.o"
done
# -Wpedantic is not used: DPU_ERR_ASYNC_JOBS = 1U << 31 is outside int, as in the SDK.
run gcc -std=c99 $W -Wshadow -I"$inc" -fsyntax-only use_headers.c
run gcc -std=c11 $W -Wshadow -Wconversion -I"$inc" -fsyntax-only use_headers.c
for std in c++11 c++14 c++17; do
    run g++ -x c++ -std=$std $W -I"$inc" -DCHECK_INCBIN -c use_headers.c -o "$tmp/u.o"
done
for h in dpu.h dpu_types.h dpu_error.h dpu_log.h dpu_management.h dpu_target.h dpu_target_macros.h openpim.h pidcomm.h support.h dpu_program.h dpu_checkpoint.h openpim_checkpoint.h; do
    printf '#include <%s>\n' "$h" > "$tmp/one.c"
    run gcc -std=c99 $W -I"$inc" -fsyntax-only "$tmp/one.c"
    run g++ -x c++ -std=c++11 $W -I"$inc" -fsyntax-only "$tmp/one.c"
done
# The C++ host API, and <dpu.h> inside a program's extern "C" { }.
printf 'extern "C" {\n#include <dpu.h>\n}\n#include <dpu.hpp>\n' > "$tmp/cxx.cpp"
for std in c++11 c++17; do
    run g++ -std=$std $W -I"$inc" -fsyntax-only "$tmp/cxx.cpp"
done
if command -v clang >/dev/null 2>&1; then
    run clang -std=c11 $W -I"$inc" -DCHECK_INCBIN -c use_headers.c -o "$tmp/u.o"
fi
if gcc -std=c11 $W -I"$inc" layout.c -o "$tmp/layout" >"$tmp/log" 2>&1 && "$tmp/layout"; then
    echo "PASS layout"
else
    echo "FAIL layout"; cat "$tmp/log"; fail=1
fi
for c in "gcc -std=c99" "gcc -std=c11" "g++ -x c++ -std=c++11"; do
    if $c $W -I"$inc" foreach.c -o "$tmp/foreach" >"$tmp/log" 2>&1 && "$tmp/foreach" >>"$tmp/log" 2>&1; then
        echo "PASS foreach semantics ($c)"
    else
        echo "FAIL foreach semantics ($c)"; cat "$tmp/log"; fail=1
    fi
done
# <pidcomm.h> as PID-Comm's programs build: C99 and GNU99, with and without OpenMP, T by -D.
printf '#include <pidcomm.h>\nint main(void) { T x = 0; hypercube_manager *m = 0; (void)m; return (int)x; }\n' > "$tmp/pc.c"
for std in c99 gnu99; do
    for omp in "" -fopenmp; do
        run gcc -std=$std $W $omp -DINT8 -I"$inc" -fsyntax-only "$tmp/pc.c"
        run gcc -std=$std $W $omp -DT=int32_t -I"$inc" -fsyntax-only "$tmp/pc.c"
    done
done
[ $fail = 0 ] && echo "headers OK" || echo "headers FAILED"
exit $fail
