#!/usr/bin/env bash
# One GPU check of the MI Lens core, within 8 minutes on one GPU (see docs/gpu.md):
#   1. the CUDA tests (pytest -m cuda): probe, estimator, every sampler and one training step vs the CPU;
#   2. bench-probe (forward throughput, probe one state at a time and all at once, pruning, bf16);
#   3. eval-estimator, Sudoku (Kaggle puzzles) and protein (CATH val split);
#   4. a decoding sweep on 500 Kaggle puzzles: sequential, topk, eb, mi, learned;
#   5. bench.scaling: probe_many and estimator states/s by states per call, Sudoku and protein MDM.
# Writes into $OUT (the device runner's folder) or runs/device_check: one JSON per step, device_check.json
# (everything together, with each step's exit status and seconds) and gpu_section.md, a "GPU" section
# ready to paste into BENCHMARKS.md. A failing step is recorded and the script goes on; it exits 1 if
# any step failed.
#
# Data: ../shared is not on the GPU machine. Copy first (device_data/ is git-ignored; carry it):
#   mkdir -p device_data && cp ../shared/data/sudoku/kaggle_graded_dev.csv \
#       ../shared/data/protein/cath-dataset-nonredundant-S40.fa device_data/
# Environment: DEVICE_CHECK_DEVICE (default cuda), DEVICE_CHECK_SMALL=1 (tiny settings, e.g. to check
# the script on a CPU: DEVICE_CHECK_DEVICE=cpu DEVICE_CHECK_SMALL=1 scripts/device_check.sh),
# DEVICE_CHECK_DATA (default device_data), DEVICE_CHECK_OUT (default $OUT or runs/device_check).
set -u
cd "$(dirname "$0")/.."

DEVICE="${DEVICE_CHECK_DEVICE:-cuda}"
DATA="${DEVICE_CHECK_DATA:-device_data}"
OUTDIR="${DEVICE_CHECK_OUT:-${OUT:-runs/device_check}}"
SMALL="${DEVICE_CHECK_SMALL:-0}"
PY="${PYTHON:-python3}"
mkdir -p "$OUTDIR"
MD="$OUTDIR/benchmarks_gpu_raw.md"
STATUS="$OUTDIR/steps.jsonl"
rm -f "$MD" "$STATUS"
PUZZLES="$DATA/kaggle_graded_dev.csv"
FASTA="$DATA/cath-dataset-nonredundant-S40.fa"
for f in "$PUZZLES" "$FASTA"; do
    [ -f "$f" ] || { echo "error: $f missing: copy the data first (see the top of this script)" >&2; exit 2; }
done

if [ "$SMALL" = "1" ]; then
    T_TEST=300 T_BENCH=120 T_EVAL=300 T_SWEEP=180 T_SCALE=120  # the recurrent default probes ~10 s a state on one busy CPU thread
    PROBE_ARGS=(--batch-sizes 4,16 --masked 3,5 --states 1 --min-seconds 0.05 --eps 0.05)
    EVAL_ARGS=(--states 3 --timing-states 2)
    EVAL_P_ARGS=(--states 2 --min-len 30 --max-len 40)
    SWEEP_LIMIT=4
    SWEEP_GRID=(--grid sequential --grid "topk:k=4" --grid "eb:gamma=0.5" --grid "mi:gamma=0.5;lam=1"
                --grid "learned:steps=10;selector=assets/sudoku_order_selector_recurrent.safetensors")
    SCALE_ARGS=(--batch-sizes 1,2 --peak-batches 8 --masked 2 --lengths 30 --protein-batch-sizes 1
                --protein-peak-batches 8 --no-esmc --min-seconds 0.05 --time-cap 20)
    TEST_ARGS=(tests/test_cuda.py -k "not checks_run_on_cpu")
else
    T_TEST=120 T_BENCH=60 T_EVAL=60 T_SWEEP=100 T_SCALE=60  # at most 460 s in all
    PROBE_ARGS=(--batch-sizes 256,1024,4096,16384 --masked 20,40,60 --states 5)
    EVAL_ARGS=(--states 200 --timing-states 20 --max-batch 8192)
    EVAL_P_ARGS=(--states 40 --max-batch 4096)
    SWEEP_LIMIT=500
    SWEEP_GRID=(--grid sequential --grid "topk:k=2,4,7" --grid "eb:gamma=0.2,0.5,1"
                --grid "mi:gamma=0.3,0.6,1;lam=1"
                --grid "learned:steps=10,20;selector=assets/sudoku_order_selector_recurrent.safetensors")
    SCALE_ARGS=(--batch-sizes 1,4,16,64,256,1024 --peak-batches 1024,4096,16384 --masked 40
                --lengths 50,100,300 --protein-batch-sizes 1,4,16,64,256 --protein-peak-batches 64,256,1024
                --no-esmc --time-cap 20)
    TEST_ARGS=(tests/test_cuda.py)
fi

FAILED=0
step() {  # step NAME TIMEOUT_S COMMAND...: run, log to $OUTDIR/NAME.log, record status and seconds
    local name="$1" limit="$2"; shift 2
    local start ms rc
    start=$(date +%s%N)
    echo "== $name: $*" >&2
    timeout "$limit" "$@" > "$OUTDIR/$name.log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    [ $rc -eq 0 ] || FAILED=1
    tail -n 3 "$OUTDIR/$name.log" >&2
    printf '{"step": "%s", "rc": %d, "seconds": %d.%03d, "timed_out": %s}\n' "$name" "$rc" \
        $((ms / 1000)) $((ms % 1000)) "$([ $rc -eq 124 ] && echo true || echo false)" >> "$STATUS"
}

step cuda_tests "$T_TEST" "$PY" -m pytest -q -rs -m cuda -p no:cacheprovider "${TEST_ARGS[@]}"
step bench_probe "$T_BENCH" "$PY" -m mi_core bench-probe --device "$DEVICE" "${PROBE_ARGS[@]}" \
    --json "$OUTDIR/bench_probe.json" --markdown "$MD"
step eval_estimator "$T_EVAL" "$PY" -m mi_core eval-estimator sudoku --device "$DEVICE" --puzzles "$PUZZLES" \
    "${EVAL_ARGS[@]}" --json "$OUTDIR/eval_estimator.json" --markdown "$MD"
step eval_estimator_protein "$T_EVAL" "$PY" -m mi_core eval-estimator protein --device "$DEVICE" --fasta "$FASTA" \
    "${EVAL_P_ARGS[@]}" --json "$OUTDIR/eval_estimator_protein.json" --markdown "$MD"
step sweep "$T_SWEEP" "$PY" -m mi_core sweep sudoku --device "$DEVICE" --puzzles "$PUZZLES" --limit "$SWEEP_LIMIT" \
    --name "kaggle${SWEEP_LIMIT}_${DEVICE}" "${SWEEP_GRID[@]}" --json "$OUTDIR/sweep.json" --markdown "$MD"
step scaling "$T_SCALE" "$PY" -m scripts.probe_scaling --device "$DEVICE" "${SCALE_ARGS[@]}" \
    --json "$OUTDIR/scaling.json" --markdown "$MD"

"$PY" scripts/device_report.py "$OUTDIR" "$DEVICE" || FAILED=1
echo "wrote $OUTDIR/device_check.json and $OUTDIR/gpu_section.md" >&2
exit $FAILED
