#!/usr/bin/env bash
# Prints the -run pattern of shard I of N of a package's tests: every top-level
# Test function of the package's directory, sorted, dealt out in turn, so that N
# processes (each with a control plane of its own) run every test exactly once.
#   go test -run "$(hack/test-shard.sh internal/mcpserver 1 2)" ./internal/mcpserver/
set -euo pipefail
dir=$1 i=$2 n=$3
names=$(grep -ho '^func Test[A-Za-z0-9_]*(t \*testing\.T)' "$dir"/*_test.go | sed -E 's/^func (Test[A-Za-z0-9_]*)\(.*/\1/' | sort -u |
	awk -v i="$i" -v n="$n" '(NR - 1) % n == i - 1')
if [ -z "$names" ]; then
	echo "no tests in shard $i of $n of $dir" >&2
	exit 1
fi
echo "^($(echo "$names" | paste -sd '|'))\$"
