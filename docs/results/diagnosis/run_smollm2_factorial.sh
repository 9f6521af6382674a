#!/usr/bin/env bash
# The SmolLM2-135M factorial of docs/DIAGNOSIS.md (issue 49, Results 4): each control, plain
# ZeroLock forward and backprop tuned in turn, each tune as two shards of one thread (two cores),
# at the recipes' budget (100 steps, 3 eta_0 x 2 grid seeds + 1 confirmation seed = 7 runs).
# Two lanes, one per core: lane i runs shard i/2 of every tune in turn. Shard 1 has no
# confirmation run, so it moves on to the next tune while shard 0 confirms (no core waits).
# Resumable: run it again and finished runs are skipped. Needs the SmolLM2 weights (REAL_MODELS).
# usage: bash docs/results/diagnosis/run_smollm2_factorial.sh OUT_DIR [NAME ...]
set -u
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
names=${*:-backprop_wide plain alpha_out frozen twin_half p0_uniform alpha_one twin_one}
dir=zerolock_theory/recipes/diagnosis
for shard in 0 1; do
  (
    for name in $names; do
      start=$(date +%s)
      echo "== $name shard $shard/2 start $(date -u +%H:%M:%S)"
      OMP_NUM_THREADS=1 python3 -m zerolock_theory tune --config "$dir/smollm2_$name.toml" \
        --out "$out/$name" --shard "$shard/2" >> "$out/$name.s$shard.log" 2>&1
      echo "== $name shard $shard/2 done in $(( $(date +%s) - start )) s"
    done
  ) &
done
wait
