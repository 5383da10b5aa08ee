#!/usr/bin/env bash
# Train Sudoku MDMs on one GPU within about 12 minutes and bring back the weights and their figures.
#
# ARCHS lists the configurations to train side by side on the one GPU, each LAYERS:LOOPS (default
# "8:1 8:2": the 8-layer stack once, and the same weights looped twice, a looped transformer). With both
# sharing the GPU for the same wall-clock budget, the comparison is the one the app can afford: depth
# from tied blocks against more steps. Each run starts from INIT (default assets/sudoku_mdm_hard, which
# travels with the repository; INIT= trains from scratch, where LAYERS may be anything).
#
# The repository travels to the GPU machine; ../shared does not. Before the call, copy the evaluation sets
# into device_data/ (ignored through .git/info/exclude):
#   device_data/sudoku/{kaggle_graded_dev.csv,clue17_dev.txt,top1465.txt}
# and call:  run(command="bash scripts/train_gpu.sh", carry=["device_data"], timeout_s=780)
# The data pool is built there on every CPU (16 on the H200 machine: about 2 minutes) and cached in
# device_data/pools, so a pool built here and copied there is used as it is.
# Everything it writes goes to $OUT (the device tool's folder), or runs/gpu when OUT is unset:
# $OUT/<layers>x<loops>/{sudoku_mdm.safetensors,.json,train.log,bench_<set>.json}.
# Settings: BUDGET (training seconds per run, default 420), BATCH (default 1024), LR (default 5e-4 from
# INIT, 1e-3 from scratch), D_MODEL (from scratch only), ARCHS, INIT, SMALL=1 (a CPU check of this script
# with a tiny model, from scratch, in about three minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu}
mkdir -p "$OUT"
DEVICE=cuda; SETS="kaggle_graded_dev.csv clue17_dev.txt top1465.txt"; LIMIT=500; EXTRA=()
INIT=${INIT-assets/sudoku_mdm_hard.safetensors}
POOL_PUZZLES=${POOL_PUZZLES:-4000}; MAX_HARDEN=500
if [ "${SMALL:-0}" = 1 ]; then
    DEVICE=cpu; LIMIT=20; INIT=""; ARCHS=${ARCHS:-"1:1 1:2"}; POOL_PUZZLES=40; MAX_HARDEN=50
    EXTRA=(--eval-puzzles 10 --eval-every 20 --onpolicy-puzzles 8 --onpolicy-every 10 --threads 1 --no-bf16)
    BUDGET=${BUDGET:-30}; BATCH=${BATCH:-32}; D_MODEL=${D_MODEL:-32}
fi
for set in $SETS; do
    if [ ! -f "device_data/sudoku/$set" ]; then echo "missing device_data/sudoku/$set (copy it from ../shared/data/sudoku)" >&2; exit 2; fi
done
# the pool first, once, on every CPU: the runs below then read the same cached file
python3 - "$POOL_PUZZLES" "$MAX_HARDEN" <<'PY'
import os, sys, time
from mi_core.train.sudoku_data import load_or_build_pools
from mi_core.train.sudoku_mdm import TrainConfig
t0 = time.time()
spec = TrainConfig(puzzle_pool=int(sys.argv[1]), max_harden=int(sys.argv[2])).pool_spec()
pools = load_or_build_pools(spec, root="device_data/pools", workers=os.cpu_count() or 1)
print(f"pool {spec.key()}: {len(pools['puzzles'])} graded puzzles, {len(pools['grids'])} grids in {time.time() - t0:.0f}s")
PY
INIT_ARGS=(); DEFAULT_LR=1e-3
if [ -n "$INIT" ]; then INIT_ARGS=(--init "$INIT"); DEFAULT_LR=5e-4; fi
LR=${LR:-$DEFAULT_LR}
pids=()
for arch in ${ARCHS:-8:1 8:2}; do
    layers=${arch%%:*}; loops=${arch##*:}; dir="$OUT/${layers}x${loops}"
    mkdir -p "$dir"
    shape=(--loops "$loops")
    if [ -z "$INIT" ]; then shape+=(--n-layers "$layers" --d-model "${D_MODEL:-128}"); fi
    python3 -m mi_core train sudoku --device "$DEVICE" --out "$dir/sudoku_mdm.safetensors" --pool-dir device_data/pools \
        --pool-workers 0 --time-budget "${BUDGET:-420}" --steps 100000000 --batch "${BATCH:-1024}" --lr "$LR" \
        "${shape[@]}" --puzzle-pool "$POOL_PUZZLES" --max-harden "$MAX_HARDEN" --eval-every 1000 --log-every 100 \
        --exclude device_data/sudoku/kaggle_graded_dev.csv --exclude device_data/sudoku/clue17_dev.txt \
        --exclude device_data/sudoku/top1465.txt "${INIT_ARGS[@]}" "${EXTRA[@]}" > "$dir/train.log" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for arch in ${ARCHS:-8:1 8:2}; do
    dir="$OUT/${arch%%:*}x${arch##*:}"
    tail -n 3 "$dir/train.log"
    [ -f "$dir/sudoku_mdm.safetensors" ] || { echo "no weights in $dir" >&2; status=1; continue; }
    for set in $SETS; do
        python3 -m mi_core bench sudoku --device "$DEVICE" --puzzles "device_data/sudoku/$set" --limit "$LIMIT" \
            --sampler sequential --model "$dir/sudoku_mdm.safetensors" --json "$dir/bench_${set%.*}.json" > /dev/null
    done
done
python3 - "$OUT" <<'PY'
import json, sys
from pathlib import Path
for path in sorted(Path(sys.argv[1]).glob("*/bench_*.json")):
    r = json.loads(path.read_text())
    levels = " ".join(f"{k} {v['accuracy']:.3f}" for k, v in (r.get("by_level") or {}).items())
    print(f"{path.parent.name} {path.stem[6:]}: {r['accuracy']:.3f} of {r['n']} in {r['mean_passes']:.1f} passes {levels}")
PY
rm -f "$OUT"/*/*.ckpt  # the optimiser state stays behind: only weights and figures come back
ls -la "$OUT"/*
exit $status
