#!/usr/bin/env bash
# The embedded factorial of docs/DIAGNOSIS.md (issue 49) at the recipes' own budget, 1000 steps:
# the named controls tuned in turn on one thread (run two lanes with disjoint names on two cores).
# Resumable: run it again and finished runs are skipped, a half-written one resumes from its
# checkpoint (every 250 steps).
# usage: bash docs/results/diagnosis/run_embedded_factorial_1000.sh OUT_DIR NAME...
#   NAME in backprop_wide plain alpha_out frozen twin_half p0_uniform alpha_one twin_one
set -u
out=${1:?OUT_DIR}
shift
dir=zerolock_theory/recipes/diagnosis
for name in "$@"; do
  start=$(date +%s)
  echo "== $name start $(date -u +%H:%M:%S)"
  OMP_NUM_THREADS=1 python3 -m zerolock_theory tune --config "$dir/embedded_$name.toml" --out "$out/$name"
  echo "== $name done rc=$? in $(( $(date +%s) - start )) s"
done
