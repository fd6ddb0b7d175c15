#!/usr/bin/env bash
# Prints what a failed test's log says, indented: its failing case lines first (a long log's
# tail may not hold them), then its last N lines.
#
#   tests/failure-excerpt.sh LOG [N]     (N: 30 unless given)
log=$1
n=${2:-30}
{
    if grep -qE '(^|  )FAIL' "$log"; then
        echo "failing cases:"
        grep -E '(^|  )FAIL' "$log" | head -n 20
        echo "last $n lines:"
    fi
    tail -n "$n" "$log"
} | sed 's/^/    /'
