#!/usr/bin/env bash
# How the shipped weights and the figures in BENCHMARKS.md were produced, in order.
# Each step is a plain command; on a 2-core machine run the two columns noted below side by side with
# OMP_NUM_THREADS=1 each (two torch processes with two threads each on two cores slow each other ~5x).
set -euo pipefail
DATA=${DATA:-../shared/data/sudoku}

# 1. the Sudoku MDM (see assets/sudoku_mdm_training.md for the run that produced the shipped weights)
python -m mi_core train sudoku --out runs/sudoku_mdm/sudoku_mdm.safetensors --n-layers 6 --d-model 128 \
    --time-budget 5600 --eval-every 250 --seed 0 --threads 1
cp runs/sudoku_mdm/sudoku_mdm.safetensors runs/sudoku_mdm/sudoku_mdm.json assets/

# 2a. estimator data, estimator, its fidelity (column 1)
python -m mi_core make-estimator-data sudoku --model assets/sudoku_mdm.safetensors --out runs/estimator_data/final \
    --states 400 --threads 1
python -m mi_core train-estimator --data runs/estimator_data/final --out assets/sudoku_mi_estimator.safetensors --threads 1
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --json assets/benchmarks/eval_estimator.json

# 2b. decoding and probe benchmarks (column 2)
python -m mi_core bench-suite sudoku --data "$DATA" --limit 500
python -m mi_core bench-probe --threads 1 --json assets/benchmarks/bench_probe.json
for set in "kaggle_graded_dev.csv Expert" "kaggle_graded_dev.csv Hard" "top1465.txt" "clue17_dev.txt"; do
    read -r file level <<<"$set"
    name=${file%.*}${level:+_$level}
    python -m mi_core sweep sudoku --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 \
        --json "assets/benchmarks/sweep_${name}.json"
done

# 3. app speed (needs the estimator)
python scripts/bench_app.py --browser
