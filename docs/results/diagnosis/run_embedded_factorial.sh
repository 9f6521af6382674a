#!/usr/bin/env bash
# The embedded factorial of docs/DIAGNOSIS.md (issue 49): each control, plain ZeroLock forward and
# backprop tuned in turn on one thread, at 200 steps (the budget that fitted the session; the
# recipes' own is 1000). Resumable: run it again and finished runs are skipped.
# usage: bash docs/results/diagnosis/run_embedded_factorial.sh OUT_DIR
set -u
out=${1:?OUT_DIR}
dir=zerolock_theory/recipes/diagnosis
for name in backprop_wide plain alpha_out frozen twin_half p0_uniform alpha_one twin_one; do
  start=$(date +%s)
  echo "== $name start $(date -u +%H:%M:%S)"
  OMP_NUM_THREADS=1 python3 -m zerolock_theory tune --config "$dir/embedded_$name.toml" \
    --set run.steps=200 --set run.checkpoint_every=50 --out "$out/$name"
  echo "== $name done rc=$? in $(( $(date +%s) - start )) s"
done
