#!/usr/bin/env bash
# Train Sudoku MDMs on one GPU within one device call (at most 600 s) and bring back the weights and figures.
#
# ARCHS lists the configurations trained side by side on the one GPU, each LAYERS:LOOPS (default "8:1 8:2":
# the 8-layer stack once, and the same weights looped twice, a looped transformer). With both sharing the
# GPU for the same wall-clock budget, the comparison is the one that matters at a fixed budget: depth from
# tied blocks against more steps. Each run starts from INIT (default assets/sudoku_mdm_hard, which travels
# with the repository; LAYERS must then be its 8; INIT= trains from scratch, where LAYERS may be anything).
#
# The repository travels to the GPU machine; ../shared does not. Before the call, copy the evaluation sets
# into device_data/ (git-ignored):
#   mkdir -p device_data/sudoku && cp ../shared/data/sudoku/{kaggle_graded_dev.csv,clue17_dev.txt,top1465.txt} device_data/sudoku/
# and call:  run(command="bash scripts/train_gpu.sh", carry=["device_data"], timeout_s=600)
# The data pool (POOL_PUZZLES graded puzzles) is built there on every CPU and cached in device_data/pools; a
# pool built here with the same settings and carried along is used as it is. Training gets what is left of
# DEADLINE (seconds since the start, default 540) after the pool, less RESERVE (default 100) for start-up
# and the benchmarks, unless BUDGET gives the seconds.
# $OUT (the device tool's folder; runs/gpu when unset) gets 4 files per shape, whatever happens (at most 8
# files come back): <L>x<K>_sudoku_mdm.safetensors and .json, <L>x<K>_train.log, and <L>x<K>_bench.json
# (sequential decoding, fp32, first 500 puzzles of each set; accuracy, passes and levels, not the grids).
# Settings: BATCH (default 1024), LR (default 5e-4 from INIT, 1e-3 from scratch), D_MODEL (from scratch),
# POOL_PUZZLES (default 2000), ARCHS, INIT, SMALL=1 (a CPU check of this script with tiny models).
# PEER=1 trains the peer-recurrent shape of the chained CPU run instead (docs/sudoku_training.md): ARCHS
# "1:16" (one tied block applied 16 times), attention masked to the 20 peers, the input re-injected, loss on
# the last 8 iterations and gradients through them, a random 8..16 iterations per step, EMA 0.999, from the
# chain's best weights (INIT default checkpoints/sudoku_chain/model.safetensors; INIT= from scratch). With
# INIT, LAYERS must be its file's (1); LOOPS may change. From INIT the learning rate is 5e-4 (a fine-tune; the
# chain trains at 1e-3): LR overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/gpu}
WORK=runs/gpu_work
mkdir -p "$OUT" "$WORK"
DEVICE=cuda; SETS="kaggle_graded_dev.csv clue17_dev.txt top1465.txt"; LIMIT=500; EXTRA=()
if [ "${PEER:-0}" = 1 ]; then INIT=${INIT-checkpoints/sudoku_chain/model.safetensors}; else INIT=${INIT-assets/sudoku_mdm_hard.safetensors}; fi
POOL_PUZZLES=${POOL_PUZZLES:-2000}; MAX_HARDEN=500; DEADLINE=${DEADLINE:-540}; RESERVE=${RESERVE:-100}
SHAPE_EXTRA=()
if [ "${PEER:-0}" = 1 ]; then
    ARCHS=${ARCHS:-1:16}
    SHAPE_EXTRA=(--attention peer --inject --supervise 8 --grad-iters 8 --min-loops 8 --ema 0.999)
fi
ARCHS=${ARCHS:-8:1 8:2}
if [ "${SMALL:-0}" = 1 ]; then
    DEVICE=cpu; LIMIT=20; POOL_PUZZLES=40; MAX_HARDEN=50; DEADLINE=${DEADLINE_SMALL:-150}
    if [ "${PEER:-0}" != 1 ]; then INIT=""; ARCHS="1:1 1:2"; fi  # PEER=1 keeps the chain's weights and shape
    EXTRA=(--eval-puzzles 10 --eval-every 20 --onpolicy-puzzles 8 --onpolicy-every 10 --threads 1 --no-bf16)
    BATCH=${BATCH:-32}; D_MODEL=${D_MODEL:-32}
fi
for arch in $ARCHS; do
    if ! [[ $arch =~ ^[0-9]+:[0-9]+$ ]]; then echo "ARCHS: '$arch' is not LAYERS:LOOPS (e.g. 8:2)" >&2; exit 2; fi
done
for set in $SETS; do
    if [ ! -f "device_data/sudoku/$set" ]; then echo "missing device_data/sudoku/$set (copy it from ../shared/data/sudoku)" >&2; exit 2; fi
done

collect() {  # the 4 files per shape that come back, also after a failure or a kill
    for arch in $ARCHS; do
        tag="${arch%%:*}x${arch##*:}"; dir="$WORK/$tag"
        [ -d "$dir" ] || continue
        for f in sudoku_mdm.safetensors sudoku_mdm.json train.log; do
            [ -f "$dir/$f" ] && cp "$dir/$f" "$OUT/${tag}_$f"
        done
        python3 - "$dir" "$OUT/${tag}_bench.json" <<'PY' || true
import json, sys
from pathlib import Path
rows = []
for path in sorted(Path(sys.argv[1]).glob("bench_*.json")):
    r = json.loads(path.read_text())
    rows.append({k: v for k, v in r.items() if k not in ("passes", "sequences")})
    levels = " ".join(f"{k} {v['accuracy']:.3f}" for k, v in (r.get("by_level") or {}).items())
    print(f"{Path(sys.argv[1]).name} {path.stem[6:]}: {r['accuracy']:.3f} of {r['n']} in {r['mean_passes']:.1f} passes {levels}")
if rows:
    Path(sys.argv[2]).write_text(json.dumps(rows, indent=1))
PY
    done
    ls -la "$OUT"
}
trap collect EXIT
trap "exit 143" TERM INT  # a kill at the time limit still collects

# the pool first, once, on every CPU: the runs below read the same cached file
python3 - "$POOL_PUZZLES" "$MAX_HARDEN" <<'PY'
import os, sys, time
from mi_core.domains.sudoku.pool import load_or_build_pools
from mi_core.domains.sudoku.train import TrainConfig
t0 = time.time()
spec = TrainConfig(puzzle_pool=int(sys.argv[1]), max_harden=int(sys.argv[2])).pool_spec()
pools = load_or_build_pools(spec, root="device_data/pools", workers=os.cpu_count() or 1)
print(f"pool {spec.key()}: {len(pools['puzzles'])} graded puzzles, {len(pools['grids'])} grids in {time.time() - t0:.0f}s", flush=True)
PY
BUDGET=${BUDGET:-$((DEADLINE - SECONDS - RESERVE))}
if [ "$BUDGET" -lt 30 ]; then echo "only ${BUDGET}s left to train after the pool (${SECONDS}s); stopping" >&2; exit 1; fi
echo "training ${BUDGET}s per shape from ${SECONDS}s: $ARCHS"
INIT_ARGS=(); DEFAULT_LR=1e-3
if [ -n "$INIT" ]; then INIT_ARGS=(--init "$INIT"); DEFAULT_LR=5e-4; fi
LR=${LR:-$DEFAULT_LR}

train_and_bench() {  # layers loops dir
    local layers=$1 loops=$2 dir=$3 shape=(--loops "$2" --n-layers "$1" "${SHAPE_EXTRA[@]}")
    if [ -z "$INIT" ]; then shape+=(--d-model "${D_MODEL:-128}"); fi
    python3 -m mi_core train sudoku --device "$DEVICE" --out "$dir/sudoku_mdm.safetensors" --pool-dir device_data/pools \
        --pool-workers 0 --time-budget "$BUDGET" --steps 100000000 --batch "${BATCH:-1024}" --lr "$LR" \
        "${shape[@]}" --puzzle-pool "$POOL_PUZZLES" --max-harden "$MAX_HARDEN" --eval-every 1000 --log-every 100 \
        --exclude device_data/sudoku/kaggle_graded_dev.csv --exclude device_data/sudoku/clue17_dev.txt \
        --exclude device_data/sudoku/top1465.txt "${INIT_ARGS[@]}" "${EXTRA[@]}" > "$dir/train.log" 2>&1 || return 1
    local status=0
    for set in $SETS; do
        python3 -m mi_core bench sudoku --device "$DEVICE" --puzzles "device_data/sudoku/$set" --limit "$LIMIT" \
            --sampler sequential --model "$dir/sudoku_mdm.safetensors" --json "$dir/bench_${set%.*}.json" --force \
            > /dev/null 2>> "$dir/train.log" || status=1
    done
    return $status
}

pids=()
for arch in $ARCHS; do
    dir="$WORK/${arch%%:*}x${arch##*:}"
    rm -rf "$dir" && mkdir -p "$dir"
    train_and_bench "${arch%%:*}" "${arch##*:}" "$dir" &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
echo "done at ${SECONDS}s"
exit $status
