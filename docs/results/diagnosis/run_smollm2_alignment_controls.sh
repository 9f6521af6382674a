#!/usr/bin/env bash
# The alignment at w0 of each SmolLM2 control (docs/DIAGNOSIS.md, registered 2026-12-07): 5 seeds,
# eta = 0.00625, one thread, the controls one after another. Each control's per-seed numbers go to
# OUT_DIR/alignment_smollm2_w0_<control>.json and its tables to OUT_DIR/<control>.md.
# Needs the SmolLM2 weights (REAL_MODELS).
# usage: bash docs/results/diagnosis/run_smollm2_alignment_controls.sh OUT_DIR [CONTROL ...]
set -u
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
names=${*:-alpha_out frozen alpha_one p0_uniform twin_half twin_one}
for name in $names; do
  [ -s "$out/alignment_smollm2_w0_$name.json" ] && continue
  echo "== $name start $(date -u +%H:%M:%S)"
  OMP_NUM_THREADS=1 python3 scripts/alignment.py \
    --config "zerolock_theory/recipes/diagnosis/smollm2_$name.toml" --seeds 0 1 2 3 4 --lr 0.00625 \
    --json "$out/alignment_smollm2_w0_$name.json" > "$out/$name.md" 2>&1 || echo "== $name failed"
done
