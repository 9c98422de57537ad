#!/bin/bash
# The autotune phase and its tuning cache (bench/RESULTS.md): on three test kernels, a first and a
# second run on one store with --autotune-configs 8, and a run without the phase. Needs build-check/.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${1:-/tmp/autotune-phase}; rm -rf "$out"; mkdir -p "$out"
for k in scale_rows add_tiny_blocks matmul_tiles; do
  cp tests/optimize/kernels/$k.py $out/
  for label in first second; do
    s=$(date +%s.%N)
    build-check/bin/maxkernel optimize $out/$k.py --python .venv/bin/python --store $out/$k.sqlite --no-report --format json --mode graph --beam 1 --branches 2 --budget iterations=2 --autotune-configs 8 --extra-shapes none > $out/$k.$label.json 2>/dev/null
    e=$(date +%s.%N)
    python3 -c "
import json,sys
o=json.load(open('$out/$k.$label.json'))
c=o['cost']; b=o['best']
print('$k $label', f'{float($e)-float($s):.1f} s', 'evals', c['evaluations'], 'tuning', c.get('tuning_evaluations',0), 'hits', c.get('tuning_cache_hits',0), 'best', round(b['speedup'],2), b['strategy'], b['description'][:60])"
  done
  s=$(date +%s.%N)
  build-check/bin/maxkernel optimize $out/$k.py --python .venv/bin/python --store $out/$k.none.sqlite --no-report --format json --mode graph --beam 1 --branches 2 --budget iterations=2 --extra-shapes none > $out/$k.none.json 2>/dev/null
  e=$(date +%s.%N)
  python3 -c "
import json
o=json.load(open('$out/$k.none.json'))
c=o['cost']; b=o['best']
print('$k no-phase', f'{float($e)-float($s):.1f} s', 'evals', c['evaluations'], 'best', round(b['speedup'],2), b['strategy'], b['description'][:60])"
done
