#!/usr/bin/env bash
# The controls' alignment along a run, embedded model (docs/DIAGNOSIS.md, registered 2026-12-07):
# each named control at the eta_0 its 200-step tune chose (section 3), t = 0, 50, 200, 5 seeds, one
# thread, the controls one after another. Each control's per-seed numbers go to
# OUT_DIR/alignment_embedded_run_<control>.json and its tables to OUT_DIR/run_<control>.md.
# usage: bash docs/results/diagnosis/run_embedded_alignment_controls_run.sh OUT_DIR [CONTROL ...]
set -u
out=${1:?OUT_DIR}
shift
mkdir -p "$out"
names=${*:-twin_one twin_half alpha_one p0_uniform alpha_out}
for name in $names; do
  case $name in
    alpha_one|p0_uniform) lr=0.4 ;;
    alpha_out|twin_half|twin_one) lr=0.2 ;;
    *) echo "== $name: no registered eta_0"; continue ;;
  esac
  [ -s "$out/alignment_embedded_run_$name.json" ] && continue
  echo "== $name start $(date -u +%H:%M:%S)"
  OMP_NUM_THREADS=1 python3 scripts/alignment.py \
    --config "zerolock_theory/recipes/diagnosis/embedded_$name.toml" --set "optim.lr=$lr" \
    --seeds 0 1 2 3 4 --lr "$lr" --after-steps 0 50 200 \
    --json "$out/alignment_embedded_run_$name.json" > "$out/run_$name.md" 2>&1 || echo "== $name failed"
done
