#!/usr/bin/env bash
# The chained CPU training run of the Sudoku MDM, resumed across work sessions (see docs/sudoku_training.md).
#
#   scripts/sudoku_chain.sh start    resume the run (or begin it from checkpoints/sudoku_chain/options) in the
#                                    background, from its own worktree of HEAD, at low priority, one thread
#   scripts/sudoku_chain.sh save     copy the latest checkpoint, weights and log into checkpoints/sudoku_chain/
#                                    (commit them before the session stops: the next start resumes from them)
#   scripts/sudoku_chain.sh stop     stop the run (its checkpoint is at most --checkpoint-minutes old)
#   scripts/sudoku_chain.sh status   the last lines of the run's log
#
# The run lives outside the work tree, in CHAIN_DIR (default /work/chain/run), which a new session may not
# have: `start` then restores it from checkpoints/sudoku_chain/. The schedule is one cosine over the whole
# chained budget (--time-budget, in CPU seconds with --cpu-clock), so every stretch continues it.
#
# A run may go on in phases: a new phase is a new run (its own cosine, usually `--init` from the last
# phase's weights). Its number is in checkpoints/sudoku_chain/phase (none: 1); when it differs from the run
# directory's, `start` moves the old phase's directory aside (CHAIN_DIR.phaseN) and begins the new one.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
run=${CHAIN_DIR:-/work/chain/run}
tracked=checkpoints/sudoku_chain
case "${1:-status}" in
start)
    mkdir -p "$run"
    if pgrep -f "train sudoku --out $run/model.safetensors" >/dev/null; then echo "already running"; exit 0; fi
    phase=$(cat "$tracked/phase" 2>/dev/null || echo 1)
    was=$(cat "$run/phase" 2>/dev/null || echo 1)
    if [ -f "$run/model.ckpt" ] && [ "$was" != "$phase" ]; then
        old="$run.phase$was"
        rm -rf "$old"; mv "$run" "$old"; mkdir -p "$run"; rm -rf "$old/src"
        echo "moved the previous phase's run to $old"
    fi
    echo "$phase" > "$run/phase"
    if [ ! -f "$run/model.ckpt" ] && [ -f "$tracked/model.ckpt" ]; then
        saved=$(cat "$tracked/model.ckpt.phase" 2>/dev/null || echo "$phase")
        if [ "$saved" != "$phase" ]; then  # a new phase begins its own run (usually --init from the last weights)
            echo "error: $tracked/model.ckpt is phase $saved's, the chain is at phase $phase: move it aside" \
                 "(or set $tracked/phase back) before starting" >&2
            exit 2
        fi
        cp "$tracked"/model.ckpt "$run/"
        for f in "$tracked"/model*.safetensors "$tracked"/model*.json; do [ -f "$f" ] && cp "$f" "$run/"; done
    fi
    rm -rf "$run/src"; git worktree prune
    git worktree add -q --detach "$run/src" HEAD
    ln -sfn "$(cd .. && pwd)/shared" "$run/shared"  # ../shared (the evaluation sets to --exclude) as seen from the checkout
    read -r -a options < "$tracked/options"
    if [ -f "$run/model.ckpt" ]; then mode=(--resume); else mode=(--force); fi
    (cd "$run/src" && nohup nice -n 5 python3 -m mi_core train sudoku --out "$run/model.safetensors" "${mode[@]}" \
        "${options[@]}" >> "$run/train.log" 2>&1 &)
    echo "started (${mode[*]}), log: $run/train.log";;
save)
    mkdir -p "$tracked"
    cp "$run/model.ckpt" "$tracked/"
    cat "$run/phase" > "$tracked/model.ckpt.phase"  # what start checks before resuming it
    for f in "$run"/model*.safetensors "$run"/model*.json; do [ -f "$f" ] && cp "$f" "$tracked/"; done
    # the whole curve, every stretch of this phase, from the checkpoint (a new session's log holds its own only)
    python3 -c 'import json, sys, torch; [print(json.dumps(p)) for p in json.loads(torch.load(sys.argv[1],
        weights_only=True)["curve"])]' "$run/model.ckpt" > "$tracked/curve.jsonl"
    echo "saved to $tracked: commit it";;
stop)
    pkill -f "train sudoku --out $run/model.safetensors" || true;;
status)
    if [ ! -f "$run/train.log" ]; then echo "error: no run at $run (start begins one)" >&2; exit 1; fi
    tail -n 3 "$run/train.log";;
*)
    echo "usage: $0 start|save|stop|status" >&2; exit 2;;
esac
