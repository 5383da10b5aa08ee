#!/usr/bin/env bash
# Seed-to-seed spread of the protein generation measure: three samplers, four seeds, 300 sequences each;
# then scripts/studies/protein_seed_noise.py writes the BENCHMARKS.md section. Run from the repository root.
set -euo pipefail
export PYTHONPATH=. OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
F=${FASTA:-../shared/data/protein/cath-dataset-nonredundant-S40.fa}
mkdir -p runs/noise
for seed in 0 1 2 3; do
  python -m mi_core bench protein --samples 300 --lengths 50-100 --sampler sequential --reference "$F" --seed $seed --json runs/noise/seq_$seed.json --force
  python -m mi_core bench protein --samples 300 --lengths 50-100 --sampler topk --set k=12 --reference "$F" --seed $seed --json runs/noise/topk12_$seed.json --force
  python -m mi_core bench protein --samples 300 --lengths 50-100 --sampler mi --set gamma=16 --set lam=1 --set relative=true \
      --set estimator=assets/protein_mi_estimator.safetensors --reference "$F" --seed $seed --json runs/noise/mi16_$seed.json --force
done
python scripts/studies/protein_seed_noise.py runs/noise
