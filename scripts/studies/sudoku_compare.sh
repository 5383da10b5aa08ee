#!/usr/bin/env bash
# Candidates for a strong CPU-trained Sudoku MDM, at equal CPU time (issue: strong Sudoku on these CPUs).
# Each trains BUDGET CPU-seconds on one thread (--cpu-clock), one after the other, validates on the 200
# hardest of VAL (generated, never a dev file) at its end, and writes OUT/<name>/. CANDIDATES (default:
# all) names those to run. Usage: scripts/studies/sudoku_compare.sh POOL_FILE VAL_FILE OUT [BUDGET]
set -euo pipefail
pool=$1 val=$2 out=$3 budget=${4:-480}
candidates=${CANDIDATES:-finetune peer_bias looped2 recurrent16}
init=assets/sudoku_mdm_hard.safetensors
common=(--pool-file "$pool" --val-file "$val" --eval-puzzles 200 --batch 64 --threads 1 --cpu-clock
        --time-budget "$budget" --steps 100000000 --onpolicy-every 200 --onpolicy-puzzles 64 --log-every 50
        --pool-dir "$out/pools" --checkpoint-minutes 5)
run() {  # name, options...
    local name=$1; shift
    [[ " $candidates " == *" $name "* ]] || return 0
    [ -f "$out/$name/done" ] && return 0
    mkdir -p "$out/$name"
    python3 -m mi_core train sudoku --out "$out/$name/model.safetensors" --force "${common[@]}" "$@" \
        > "$out/$name/train.log" 2>&1
    touch "$out/$name/done"
}
# warm starts from the default model (lr 3e-4, as its own fine-tune)
run finetune      --init "$init" --lr 3e-4 --eval-every 100000000
run peer_bias     --init "$init" --lr 3e-4 --eval-every 100000000 --attention peer_bias
run looped2       --init "$init" --lr 3e-4 --eval-every 100000000 --loops 2 --inject --supervise 2
# from scratch: one tied block x 16 on the peer mask, loss on the last 4 iterations, gradients through
# the last 4 after a random 4-12 iterations without gradient
run recurrent16   --lr 1e-3 --eval-every 100000000 --n-layers 1 --loops 16 --attention peer --inject \
                  --supervise 4 --grad-iters 4 --min-loops 8
