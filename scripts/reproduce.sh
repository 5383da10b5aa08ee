#!/usr/bin/env bash
# How the shipped weights and the figures in BENCHMARKS.md were produced, in order (run from the repository
# root). On a 2-core machine run the two columns below side by side with OMP_NUM_THREADS=1 each: two torch
# processes with two threads each on two cores slow each other down several-fold.
set -euo pipefail
export PYTHONPATH=. OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
DATA=${DATA:-../shared/data/sudoku}

# 1. the Sudoku MDM (stopped by hand at step 4,000 for the shipped weights: assets/sudoku_mdm_training.md)
python -m mi_core train sudoku --out runs/sudoku_mdm/sudoku_mdm.safetensors --steps 1000000 --time-budget 5600 \
    --n-layers 6 --d-model 128 --eval-every 250 --seed 0 --threads 1
cp runs/sudoku_mdm/sudoku_mdm.safetensors runs/sudoku_mdm/sudoku_mdm.json assets/
python scripts/training_summary.py assets/sudoku_mdm.json assets/sudoku_mdm_training.md --command "(the command above)"

# 2a. column 1: estimator data, estimator, fidelity
python -m mi_core make-estimator-data sudoku --model assets/sudoku_mdm.safetensors --out runs/estimator_data/final \
    --states 320 --threads 1
python -m mi_core train-estimator --data runs/estimator_data/final --out assets/sudoku_mi_estimator.safetensors --threads 1
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --json assets/benchmarks/eval_estimator.json

# 2b. column 2: decoding and probe benchmarks
python -m mi_core bench-suite sudoku --data "$DATA" --limit 500 --bf16
python -m mi_core bench-probe --threads 1 --json assets/benchmarks/bench_probe.json
for set in "kaggle_graded_dev.csv Expert" "kaggle_graded_dev.csv Hard" "top1465.txt" "clue17_dev.txt"; do
    read -r file level <<<"$set"
    name=${file%.*}${level:+_$level}
    python -m mi_core sweep sudoku --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --bf16 --merge \
        --samplers sequential,topk,top_margin,eb,threshold,mask_predict --name "$name" \
        --json "assets/benchmarks/sweep_${name}.json"
    # after 2a: the MI-guided rows join the same table
    python -m mi_core sweep sudoku --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --bf16 --merge \
        --samplers mi --name "$name" --json "assets/benchmarks/sweep_${name}.json"
done
for level in Expert Hard; do  # larger lambda, tried after the default grid
    python -m mi_core sweep sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --level $level --limit 200 --bf16 --merge \
        --grid "mi:gamma=0.3,0.6,1;lam=5,10" --name "kaggle_graded_dev_$level" \
        --json "assets/benchmarks/sweep_kaggle_graded_dev_$level.json"
done

# 3. app speed (needs both models)
python scripts/bench_app.py --browser
