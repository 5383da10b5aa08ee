#!/usr/bin/env bash
# Train the Sudoku MDM on one GPU within about 12 minutes and bring back the weights and their figures.
#
# The repository travels to the GPU machine; ../shared does not. Before the call, copy into device_data/
# (ignored through .git/info/exclude) what the run reads:
#   device_data/sudoku/{kaggle_graded_dev.csv,clue17_dev.txt,top1465.txt}   the evaluation sets
#   device_data/pools/pool_<key>.npz    a data pool built here (python -m mi_core train sudoku builds and
#                                       caches it under --pool-dir; building 4,000 graded puzzles takes
#                                       ~20 min on 2 CPU cores, ~2 min on 16)
#   device_data/init/sudoku_mdm.{safetensors,json}   optional warm start (INIT=device_data/init/...)
# and call:  run(command="bash scripts/train_gpu.sh", carry=["device_data"], timeout_s=780)
# Everything it writes goes to $OUT (the device tool's folder), or runs/gpu when OUT is unset.
# Settings: BUDGET (training seconds, default 540), BATCH (default 1024), LR (default 1e-3), LAYERS,
# D_MODEL, LOOPS, INIT, SMALL=1 (a two-minute CPU check of this script with a tiny model).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu}
mkdir -p "$OUT"
DEVICE=cuda; SETS="kaggle_graded_dev.csv clue17_dev.txt top1465.txt"; LIMIT=500; EXTRA=()
if [ "${SMALL:-0}" = 1 ]; then
    DEVICE=cpu; LIMIT=20; EXTRA=(--eval-puzzles 10 --eval-every 20 --onpolicy-puzzles 8 --onpolicy-every 10)
    POOL_PUZZLES=${POOL_PUZZLES:-40}; BUDGET=${BUDGET:-30}; BATCH=${BATCH:-32}; LAYERS=${LAYERS:-1}; D_MODEL=${D_MODEL:-32}
fi
INIT_ARGS=()
if [ -n "${INIT:-}" ]; then INIT_ARGS=(--init "$INIT"); fi
python3 -m mi_core train sudoku --device "$DEVICE" --out "$OUT/sudoku_mdm.safetensors" --pool-dir device_data/pools \
    --time-budget "${BUDGET:-540}" --steps 100000000 --batch "${BATCH:-1024}" --lr "${LR:-1e-3}" \
    --n-layers "${LAYERS:-8}" --d-model "${D_MODEL:-128}" --loops "${LOOPS:-1}" \
    --puzzle-pool "${POOL_PUZZLES:-4000}" --max-harden 500 --eval-every 1000 --log-every 100 \
    --exclude device_data/sudoku/kaggle_graded_dev.csv --exclude device_data/sudoku/clue17_dev.txt \
    --exclude device_data/sudoku/top1465.txt "${INIT_ARGS[@]}" "${EXTRA[@]}" 2>&1 | tee "$OUT/train.log"
for set in $SETS; do
    python3 -m mi_core bench sudoku --device "$DEVICE" --puzzles "device_data/sudoku/$set" --limit "$LIMIT" \
        --sampler sequential --bf16 --model "$OUT/sudoku_mdm.safetensors" --json "$OUT/bench_${set%.*}.json"
done
rm -f "$OUT"/*.ckpt  # the optimiser state stays behind: only weights and figures come back
ls -la "$OUT"
