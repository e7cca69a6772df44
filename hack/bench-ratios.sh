#!/usr/bin/env bash
# Prints, for every BenchmarkX that has a BenchmarkXBaseline in the same go test
# output, the ratio of their ns/op: how many times the baseline X costs; the same for
# every further baseline BenchmarkXBaseline<Variant> of it; and, where a
# BenchmarkXFloor was run too (the least any server could cost for the same work), X
# against it. A benchmark that reports tokens (what an answer costs a model's context)
# is printed as X (tokens) with its baseline's tokens. A benchmark that measures both arms in turns reports its own ratio
# (with ours- and bare- figures): it is printed as X (in turns), its time a call
# (ratio, ours against bare) or its calls/s (throughput-ratio); one that also
# reports ratio-floor (against a bare go-sdk server doing the same work in the same
# turns) gets a line X (turns, go-sdk floor) with it, and a line X floor (in turns)
# with that floor against the baseline: the least the ratio can be through the go-sdk. With
# -count N, each figure is the mean of its runs.
set -euo pipefail
awk '
  /^Benchmark/ {
    name = $1; sub(/-[0-9]+$/, "", name)
    for (i = 2; i <= NF; i++) {
      if ($(i+1) == "ns/op") { sum[name] += $i; runs[name]++ }
      if ($(i+1) == "ratio") { turns[name] += $i; truns[name]++ }
      if ($(i+1) == "ours-us/op") ours[name] += $i
      if ($(i+1) == "bare-us/op") bare[name] += $i
      if ($(i+1) == "floor-us/op") flo[name] += $i
      if ($(i+1) == "ratio-floor") { rflo[name] += $i; fruns[name]++ }
      if ($(i+1) == "floor-ratio") flor[name] += $i
      if ($(i+1) == "throughput-ratio") { tput[name] += $i; pruns[name]++ }
      if ($(i+1) == "ours-calls/s") ocalls[name] += $i
      if ($(i+1) == "bare-calls/s") bcalls[name] += $i
      # BenchmarkFindAgainstDescribeInTurns: find, against describe as its baseline.
      if ($(i+1) == "find-calls/s") ocalls[name] += $i
      if ($(i+1) == "describe-calls/s") bcalls[name] += $i
      if ($(i+1) == "tokens") { tok[name] += $i; tokruns[name]++ }
    }
  }
  END {
    printf "\n%-48s %14s %14s %8s %5s\n", "benchmark", "ns/op", "baseline", "ratio", "runs"
    for (n in sum) {
      if (n ~ /(Baseline|Floor$)/) continue
      if (n in turns) {
        printf "%-48s %14.0f %14.0f %7.2fx %5d\n", n " (in turns)", ours[n] * 1000 / truns[n], bare[n] * 1000 / truns[n], turns[n] / truns[n], truns[n]
        if (n in rflo) {
          printf "%-48s %14.0f %14.0f %7.2fx %5d\n", n " (turns, go-sdk floor)", ours[n] * 1000 / fruns[n], flo[n] * 1000 / fruns[n], rflo[n] / fruns[n], fruns[n]
          printf "%-48s %14.0f %14.0f %7.2fx %5d\n", n " floor (in turns)", flo[n] * 1000 / fruns[n], bare[n] * 1000 / fruns[n], flor[n] / fruns[n], fruns[n]
        }
        continue
      }
      if (n in tput) {
        printf "%-48s %9.0f /s %11.0f /s %7.2fx %5d\n", n " (in turns)", ocalls[n] / pruns[n], bcalls[n] / pruns[n], tput[n] / pruns[n], pruns[n]
        continue
      }
      x = sum[n] / runs[n]
      b = n "Baseline"
      for (v in sum) {
        if (index(v, b) != 1) continue
        label = n
        if (v != b) label = n " / " substr(v, length(b) + 1)
        y = sum[v] / runs[v]
        printf "%-48s %14.0f %14.0f %7.2fx %5d\n", label, x, y, x / y, runs[n]
      }
      f = n "Floor"
      if (f in sum) printf "%-48s %14.0f %14.0f %7.2fx %5d\n", n " (floor)", x, sum[f] / runs[f], x / (sum[f] / runs[f]), runs[n]
    }
    for (n in tok) {
      if (n ~ /Baseline/) continue
      b = n "Baseline"
      if (!(b in tok)) continue
      printf "%-48s %14.0f %14.0f %7.2fx %5d\n", n " (tokens)", tok[n] / tokruns[n], tok[b] / tokruns[b], (tok[n] / tokruns[n]) / (tok[b] / tokruns[b]), tokruns[n]
    }
  }' "$1"
