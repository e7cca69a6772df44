#!/usr/bin/env bash
# Prints, for every BenchmarkX that has a BenchmarkXBaseline in the same go test
# output, the ratio of their ns/op: how many times the baseline X costs; and the same
# for every further baseline BenchmarkXBaseline<Variant> of it.
set -euo pipefail
awk '
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name)
    for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") ns[name] = $i
  }
  END {
    printf "\n%-40s %14s %14s %8s\n", "benchmark", "ns/op", "baseline", "ratio"
    for (n in ns) {
      if (n ~ /Baseline/) continue
      b = n "Baseline"
      if (b in ns) printf "%-40s %14.0f %14.0f %7.2fx\n", n, ns[n], ns[b], ns[n] / ns[b]
      for (v in ns) {
        if (index(v, b) == 1 && v != b) printf "%-40s %14.0f %14.0f %7.2fx\n", n " / " substr(v, length(b) + 1), ns[n], ns[v], ns[n] / ns[v]
      }
    }
  }' "$1"
