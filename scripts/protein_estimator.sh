#!/usr/bin/env bash
# The protein MI estimator, from the final protein MDM (run from the repository root once
# `tail -2 runs/protein_mdm.log` shows "best_val_ce"): exact-probe data from the train split, training
# (variants compared on held-out training states), fidelity on val-split states into BENCHMARKS.md.
# Cost on one CPU thread: the exact probe takes 1 + 20 x masked passes per state, about 4 s for an average
# state (78 residues, 32 masked) when the core is free, so 320 states take 20-25 minutes (about 55 minutes
# with the other core busy). The data step is resumable: rerun the same command after an interruption;
# train-estimator also accepts a partly written directory.
set -euo pipefail
export PYTHONPATH=. OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
FASTA=${FASTA:-../shared/data/protein/cath-dataset-nonredundant-S40.fa}
OUT=${OUT:-runs/estimator_data/protein_final}

python -m mi_core make-estimator-data protein --model assets/protein_mdm.safetensors --fasta "$FASTA" --out "$OUT" \
    --states 320 --shard-size 8 --max-batch 128 --seed 0 --threads 1
python -m mi_core train-estimator --data "$OUT" --out assets/protein_mi_estimator.safetensors --threads 1 --force
python -m mi_core eval-estimator protein --model assets/protein_mdm.safetensors \
    --estimator assets/protein_mi_estimator.safetensors --fasta "$FASTA" --states 40 --seed 0 --threads 1 \
    --json assets/benchmarks/eval_estimator_protein.json --markdown BENCHMARKS.md --force
