#!/usr/bin/env bash
# The embedded factorial's second pass: the three controls whose choice fell on their grid's upper
# edge, resumed with one more eta_0 above it (their recipes' grids have 4 values); the finished
# runs are skipped. Same budget as run_embedded_factorial.sh (200 steps).
# usage: bash docs/results/diagnosis/run_embedded_extend.sh OUT_DIR
set -u
out=${1:?OUT_DIR}
dir=zerolock_theory/recipes/diagnosis
for name in frozen p0_uniform alpha_one; do
  start=$(date +%s)
  echo "== $name start $(date -u +%H:%M:%S)"
  OMP_NUM_THREADS=1 python3 -m zerolock_theory tune --config "$dir/embedded_$name.toml" \
    --set run.steps=200 --set run.checkpoint_every=50 --out "$out/$name"
  echo "== $name done rc=$? in $(( $(date +%s) - start )) s"
done
