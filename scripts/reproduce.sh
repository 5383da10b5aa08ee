#!/usr/bin/env bash
# How the shipped weights and the figures in BENCHMARKS.md and docs/archive/ were produced, in order (run from
# the repository root). On a 2-core machine run the two columns below side by side with OMP_NUM_THREADS=1
# each: two torch processes with two threads each on two cores slow each other down several-fold.
set -euo pipefail
export PYTHONPATH=. OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
DATA=${DATA:-../shared/data/sudoku}

# 1. the Sudoku MDM (stopped by hand at step 4,000 for the shipped weights: assets/sudoku_mdm_training.md)
#    (made by the trainer as it was at commit d3e5657, NumPy batches of generated puzzles; the trainer now
#    draws graded and on-policy states on the device, see step 1b: check out d3e5657 to rerun this line)
python -m mi_core train sudoku --out runs/sudoku_mdm/sudoku_mdm.safetensors --steps 1000000 --time-budget 5600 \
    --n-layers 6 --d-model 128 --eval-every 250 --seed 0 --threads 1 --force
cp runs/sudoku_mdm/sudoku_mdm.safetensors runs/sudoku_mdm/sudoku_mdm.json assets/
python scripts/training_summary.py assets/sudoku_mdm.json assets/sudoku_mdm_training.md --command "(the command above)"

# 1b. the hard-data fine-tune of the H200 checkpoint (8 layers; the default Sudoku model from 2026-11-30 until
#     2026-12-01): the graded pool (4,000 puzzles, ~20 min on 2 cores), then 6,000 s of training on one thread.
#     Its tables (this step, 1c and the 2026-12-01 block below) are in its archive, $ARCHIVE8
ARCHIVE8=docs/archive/sudoku_8layer_model.md
python -m mi_core train sudoku --out runs/s13/sudoku_mdm.safetensors --threads 1 --time-budget 6000 \
    --steps 100000000 --batch 256 --lr 3e-4 --warmup 100 --puzzle-pool 4000 --max-harden 500 --hard-power 1.0 \
    --puzzle-frac 0.4 --onpolicy-frac 0.2 --onpolicy-every 100 --onpolicy-puzzles 128 --eval-every 500 \
    --eval-puzzles 200 --log-every 50 --init ../shared/models/sudoku_mdm_h200/sudoku_mdm.safetensors \
    --exclude $DATA/kaggle_graded_dev.csv --exclude $DATA/top1465.txt --exclude $DATA/clue17_dev.txt
python scripts/studies/grade_report.py --dev $DATA/kaggle_graded_dev.csv --pool runs/pools/pool_4e5cabd516c8.npz \
    --json assets/benchmarks/sudoku_grade.json
python scripts/studies/bench_data.py --pool runs/pools/pool_4e5cabd516c8.npz --json assets/benchmarks/sudoku_data_speed.json
cp runs/s13/sudoku_mdm.safetensors assets/sudoku_mdm_hard.safetensors; cp runs/s13/sudoku_mdm.json assets/sudoku_mdm_hard.json
for m in assets/sudoku_mdm_hard ../shared/models/sudoku_mdm_h200/sudoku_mdm; do for set in kaggle_graded_dev.csv clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$set --limit 500 --sampler sequential --bf16 --model $m.safetensors \
        --json runs/bench_$(basename $(dirname $m))_$set.json --force
done; done  # copied to assets/benchmarks/sudoku_mdm_{hard,h200}_{kaggle,clue17,top1465}.json
python scripts/studies/paired_sudoku.py ../shared/models/sudoku_mdm_h200/sudoku_mdm.safetensors assets/sudoku_mdm_hard.safetensors
# 1c. what stands on it, re-derived (about 25 min of probing, 6 min of estimator training, 45 min of selector
#     training, 70 min of questions on one thread): estimator data, estimator, order selector, fidelity, and
#     the three decoding questions (tuned on other puzzles than those scored)
python -m mi_core make-estimator-data sudoku --model assets/sudoku_mdm_hard.safetensors --out runs/estimator_data/hard \
    --states 400 --shard-size 8 --pool 500 --eps 0 --max-batch 512 --mix 0.4,0.2,0.4 --seed 0 --threads 1
python -m mi_core train-estimator --data runs/estimator_data/hard --out runs/sudoku_mi_estimator_hard.safetensors --threads 1
python -m mi_core train-order sudoku --model assets/sudoku_mdm_hard.safetensors --steps-budget 5,10,15,20 \
    --out runs/sudoku_order_selector_hard.safetensors --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 2700
for f in sudoku_mi_estimator_hard sudoku_order_selector_hard sudoku_order_selector_hard_posterior; do
    cp runs/$f.safetensors runs/$f.json assets/; done
PYTHONPATH=. python scripts/training_summary.py assets/sudoku_order_selector_hard.json \
    assets/sudoku_order_selector_hard_training.md --command "python -m mi_core train-order sudoku ..."
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model assets/sudoku_mdm_hard.safetensors --estimator assets/sudoku_mi_estimator_hard.safetensors \
    --json assets/benchmarks/eval_estimator_hard.json --section eval-estimator-hard --markdown "$ARCHIVE8" --force
PYTHONPATH=. python scripts/studies/hard_questions.py --model assets/sudoku_mdm_hard.safetensors \
    --estimator assets/sudoku_mi_estimator_hard.safetensors --json assets/benchmarks/hard_questions.json --bf16
PYTHONPATH=. python scripts/studies/hard_questions.py --model assets/sudoku_mdm_hard.safetensors \
    --estimator assets/sudoku_mi_estimator_hard.safetensors --selector assets/sudoku_order_selector_hard.safetensors \
    --merge --json assets/benchmarks/hard_questions.json --markdown "$ARCHIVE8" --bf16

# Every step below was run with the first Sudoku model (6 layers), the default before 2026-11-30; these
# variables make the commands that name no model use it again (the app and the CLI read them).
export MI_LENS_SUDOKU_MODEL=assets/sudoku_mdm.safetensors MI_LENS_SUDOKU_ESTIMATOR=assets/sudoku_mi_estimator.safetensors
# their tables are in the archive (docs/archive/sudoku_first_model.md), except the proteins'
ARCHIVE=docs/archive/sudoku_first_model.md
export MI_LENS_SUDOKU_SELECTOR=assets/sudoku_order_selector.safetensors

# 2a. column 1: estimator data, estimator, fidelity
python -m mi_core make-estimator-data sudoku --model assets/sudoku_mdm.safetensors --out runs/estimator_data/final \
    --states 320 --threads 1
python -m mi_core train-estimator --data runs/estimator_data/final --out assets/sudoku_mi_estimator.safetensors --threads 1 \
    --force
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --json assets/benchmarks/eval_estimator.json --markdown "$ARCHIVE" --force

# 2b. column 2: decoding and probe benchmarks
python -m mi_core bench-suite sudoku --data "$DATA" --limit 500 --bf16 --json assets/benchmarks/foundation.json \
    --markdown "$ARCHIVE" --force
python -m mi_core bench-probe --threads 1 --json assets/benchmarks/bench_probe.json --markdown "$ARCHIVE" --force
for set in "kaggle_graded_dev.csv Expert" "kaggle_graded_dev.csv Hard" "top1465.txt" "clue17_dev.txt"; do
    read -r file level <<<"$set"
    name=${file%.*}${level:+_$level}
    python -m mi_core sweep sudoku --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --bf16 --merge \
        --samplers sequential,topk,top_margin,eb,threshold,mask_predict --name "$name" \
        --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE"
    python -m mi_lens_app.sweep_plot "assets/benchmarks/sweep_${name}.json" "assets/benchmarks/sweep_${name}.html" --plotlyjs beside --force
    # after 2a: the MI-guided rows join the same table
    python -m mi_core sweep sudoku --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --bf16 --merge \
        --samplers mi --name "$name" --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE"
    python -m mi_lens_app.sweep_plot "assets/benchmarks/sweep_${name}.json" "assets/benchmarks/sweep_${name}.html" --plotlyjs beside --force
done
for level in Expert Hard; do  # larger lambda, tried after the default grid
    python -m mi_core sweep sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --level $level --limit 200 --bf16 --merge \
        --grid "mi:gamma=0.3,0.6,1;lam=5,10" --name "kaggle_graded_dev_$level" \
        --json "assets/benchmarks/sweep_kaggle_graded_dev_$level.json" --markdown "$ARCHIVE"
    python -m mi_lens_app.sweep_plot "assets/benchmarks/sweep_kaggle_graded_dev_$level.json" "assets/benchmarks/sweep_kaggle_graded_dev_$level.html" --plotlyjs beside --force
done

# 3. app speed (needs both models)
python scripts/bench_app.py --browser

# ---- session 2 ----
PROTEIN=${PROTEIN:-../shared/data/protein/cath-dataset-nonredundant-S40.fa}

# 4. column 1: the protein MDM (48 min), then its MI estimator and fidelity (scripts/protein_estimator.sh)
python -m mi_core train protein --fasta "$PROTEIN" --out assets/protein_mdm.safetensors --threads 1 \
    --d-model 128 --n-heads 4 --d-ff 512 --n-layers 4 --lr 2e-3 --warmup 300 --steps 100000 --time-budget 2900 \
    --eval-every 250 --force
python scripts/training_summary.py assets/protein_mdm.json assets/protein_mdm_training.md --command "(the command above)"
FASTA="$PROTEIN" bash scripts/protein_estimator.sh
python -m mi_core sweep protein --reference "$PROTEIN" --samples 300 --lengths 50-100 \
    --estimator assets/protein_mi_estimator.safetensors --name cath_reference --json assets/benchmarks/sweep_protein_cath.json --markdown BENCHMARKS.md --force --threads 1
python -m mi_lens_app.sweep_plot assets/benchmarks/sweep_protein_cath.json assets/benchmarks/sweep_protein_cath.html --plotlyjs beside --force
python scripts/make_protein_presets.py --fasta "$PROTEIN"

# 4b. column 2: the learned order selector (50 min) and its benchmark
python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors --steps-budget 5,10,15,20 \
    --out assets/sudoku_order_selector.safetensors --log runs/order_sudoku.jsonl --batch 16 --samples 4 --tau 0.1 \
    --lr 1e-3 --eval-every 50 --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 3000 --force
python -m mi_core bench-order sudoku --puzzles "$DATA/kaggle_graded_dev.csv" \
    --selector assets/sudoku_order_selector.safetensors --per-level 100 --threads 1 \
    --json assets/benchmarks/order_kaggle_graded_dev.json --force

# 5. MI-guided decoding analysis: where failures start, then the relative-MI cost on every set, then equal-pass comparison
python -m mi_core diagnose sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --level Hard --limit 200 \
    --sampler "mi:gamma=0.3;lam=1" --sampler "mi:gamma=1;lam=1" --sampler "mi:gamma=1;lam=0.5;relative=true" \
    --sampler "mi:gamma=2;lam=1;relative=true" --sampler "eb:gamma=0.2" --sampler "eb:gamma=0.5" \
    --sampler "topk:k=4" --bf16 --threads 1 --json assets/benchmarks/diagnose_kaggle_Hard.json \
    --section diagnose-kaggle-hard --markdown "$ARCHIVE" --force
for set in "kaggle_graded_dev.csv Expert" "kaggle_graded_dev.csv Hard" "top1465.txt" "clue17_dev.txt"; do
    read -r file level <<<"$set"
    name=${file%.*}${level:+_$level}
    python -m mi_core sweep sudoku --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --bf16 --merge \
        --grid "mi:gamma=0.3,0.6,1,1.5,2,3;lam=0.25,0.5,1,2;relative=true" --name "$name" \
        --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE"
    python -m mi_lens_app.sweep_plot "assets/benchmarks/sweep_${name}.json" "assets/benchmarks/sweep_${name}.html" --plotlyjs beside --force
done
python scripts/studies/compare_frontiers.py assets/benchmarks/sweep_kaggle_graded_dev_Hard.json \
    assets/benchmarks/sweep_kaggle_graded_dev_Expert.json assets/benchmarks/sweep_top1465.json \
    assets/benchmarks/sweep_clue17_dev.json --markdown "$ARCHIVE"
# the learned order's rank-mode ablation (numbers quoted in the bench-order section)
python - <<'PY'
from pathlib import Path
from mi_core.domains.sudoku.mdm import load_sudoku_mdm
from mi_core.domains.sudoku.bench_order import pick_records, run
model = load_sudoku_mdm("assets/sudoku_mdm.safetensors")
recs = pick_records(Path("../shared/data/sudoku/kaggle_graded_dev.csv"), 100)
for T in (10, 15, 20):
    r = run(model, recs, "learned", {"steps": T, "mode": "rank"}, Path("assets/sudoku_order_selector.safetensors"), 0)
    print(T, r["accuracy"], r["mean_passes"], r["by_level"])
PY
bash scripts/studies/protein_seed_noise.sh
for v in false true; do  # estimated vs exact MI in the loop (section mi-exact-check, written by hand from these JSONs)
    python -m mi_core sweep sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --level Hard --limit 40 \
        --grid "mi:gamma=1;lam=1;relative=$v" --grid "mi_exact:gamma=1;lam=1;eps=0.001;relative=$v" \
        --name "kaggle_Hard_first40_exact_$v" --markdown - --json "assets/benchmarks/mi_exact_hard40_relative_$v.json" --force
    python -m mi_lens_app.sweep_plot "assets/benchmarks/mi_exact_hard40_relative_$v.json" "assets/benchmarks/mi_exact_hard40_relative_$v.html" --plotlyjs beside --force
done

# --- session 3 (learned order: proteins, joint fine-tuning, paced and learned_mi) ---
# the protein order selector (20 min; the ELBO collapses to one step: docs/learned_order.md, "Proteins")
python -m mi_core train-order protein --fasta "$PROTEIN" --steps-budget 5,10,15,20 \
    --out assets/protein_order_selector.safetensors --log runs/order_protein.jsonl --batch 16 --samples 4 \
    --tau 0.1 --lr 1e-3 --eval-every 100 --threads 1 --time-budget 1200 --force
# the same with a KL weight of 0.1 (300 updates; it collapses too)
python -m mi_core train-order protein --fasta "$PROTEIN" --steps-budget 5,10,15,20 --kl-weight 0.1 \
    --updates 300 --eval-every 50 --threads 1 --out runs/protein_beta01/selector.safetensors \
    --log assets/benchmarks/order_protein_kl0.1.jsonl --force
python -m mi_core bench-order protein --reference "$PROTEIN" --samples 300 --lengths 50-100 --seeds 0,1,2 \
    --json assets/benchmarks/order_protein_cath.json --threads 1 --force
# joint fine-tuning of the Sudoku denoiser from the shipped selector (stopped after the first evaluation)
for lr in 1e-4 1e-5; do
    python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors --init assets/sudoku_order_selector.safetensors --finetune \
        --denoiser-lr $lr --steps-budget 5,10,15,20 --out runs/joint/sudoku_order_joint.safetensors \
        --log assets/benchmarks/order_joint_sudoku_lr$lr.jsonl --batch 16 --samples 4 --tau 0.1 --lr 1e-3 \
        --eval-every 100 --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --updates 100 --force
done
# paced thresholds and learned_mi budgets on puzzles 101-200 per level; the denoising term alone
python scripts/studies/order_experiments.py paced learned_mi finetune  # variants: after the two runs below
# the Sudoku benchmark with paced, learned_mi and the sequential ceiling (section bench-order)
python -m mi_core bench-order sudoku --model assets/sudoku_mdm.safetensors --selector assets/sudoku_order_selector.safetensors --puzzles "$DATA/kaggle_graded_dev.csv" --per-level 100 --threads 1 \
    --json assets/benchmarks/order_kaggle_graded_dev.json --force
# training summaries of the two order selectors (written from their JSON)
PYTHONPATH=. python scripts/training_summary.py assets/protein_order_selector.json \
    assets/protein_order_selector_training.md --command "python -m mi_core train-order protein ..."
PYTHONPATH=. python scripts/training_summary.py assets/sudoku_order_selector.json \
    assets/sudoku_order_selector_training.md --command "python -m mi_core train-order sudoku ..."
# two selector variants (30 min each, side by side): a colder posterior and a beta-ELBO (KL weight 0.3)
python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors --steps-budget 5,10,15,20 --out runs/order_v2/tau003/selector.safetensors \
    --log runs/order_v2/tau003.jsonl --batch 16 --samples 4 --tau 0.03 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 1800 --force
python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors --steps-budget 5,10,15,20 --out runs/order_v2/kl03/selector.safetensors \
    --log runs/order_v2/kl03.jsonl --kl-weight 0.3 --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 1800 --force
cp runs/order_v2/kl03/selector.safetensors assets/sudoku_order_selector_kl0.3.safetensors  # and .json, _posterior.*
python -m mi_core bench-order sudoku --model assets/sudoku_mdm.safetensors --puzzles "$DATA/kaggle_graded_dev.csv" --per-level 100 --gammas "" \
    --selector assets/sudoku_order_selector_kl0.3.safetensors --json assets/benchmarks/order_kaggle_graded_dev_kl0.3.json --threads 1 --force
python scripts/studies/order_experiments.py variants
# the spread of trained selectors: KL weight 0.1, and KL weight 0.3 with seed 1 (25 min each, side by side)
python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors --steps-budget 5,10,15,20 --out runs/order_v3/kl01/selector.safetensors \
    --log runs/order_v3/kl01.jsonl --kl-weight 0.1 --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 1500 --force
python -m mi_core train-order sudoku --model assets/sudoku_mdm.safetensors --steps-budget 5,10,15,20 --seed 1 --out runs/order_v3/kl03s1/selector.safetensors \
    --log runs/order_v3/kl03s1.jsonl --kl-weight 0.3 --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 1500 --force
python scripts/studies/order_experiments.py variants
python scripts/studies/order_experiments.py spread
# the first model's steps end here: the commands below that name no model, estimator or selector ran on the
# default of their day, the files then at assets/sudoku_peer_recurrent* (copied in below at each switch)
unset MI_LENS_SUDOKU_MODEL MI_LENS_SUDOKU_ESTIMATOR MI_LENS_SUDOKU_SELECTOR

# --- 2026-12-01: the older Sudoku tables on the hard-data model (fp32: this session's CPU has no native
# bf16, where autocast ran 5-9x slower than fp32); two of these loops ran side by side, one thread each ---
HARD=assets/sudoku_mdm_hard.safetensors
for set in "kaggle_graded_dev.csv Expert" "kaggle_graded_dev.csv Hard" "top1465.txt" "clue17_dev.txt"; do
    read -r file level <<<"$set"
    name=hard_${file%.*}${level:+_$level}
    python -m mi_core sweep sudoku --model $HARD --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --merge \
        --name "$name" --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE8"
    python -m mi_core sweep sudoku --model $HARD --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --merge \
        --grid "mi:gamma=0.3,0.6,1,1.5,2,3;lam=0.25,0.5,1,2;relative=true" --name "$name" \
        --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE8"
    if [ -n "$level" ]; then
        python -m mi_core sweep sudoku --model $HARD --puzzles "$DATA/$file" --level $level --limit 200 --merge \
            --grid "mi:gamma=0.3,0.6,1;lam=5,10" --name "$name" --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE8"
    fi
done
for set in "kaggle_graded_dev.csv Expert" "kaggle_graded_dev.csv Hard" "top1465.txt" "clue17_dev.txt"; do  # EB past 15 passes
    read -r file level <<<"$set"
    name=hard_${file%.*}${level:+_$level}
    python -m mi_core sweep sudoku --model $HARD --puzzles "$DATA/$file" ${level:+--level $level} --limit 200 --merge \
        --grid "eb:gamma=0.01,0.02,0.05" --name "$name" --json "assets/benchmarks/sweep_${name}.json" --markdown "$ARCHIVE8"
done
PYTHONPATH=. python scripts/studies/compare_frontiers.py assets/benchmarks/sweep_hard_*.json --budgets 8,10,12,15,20,25 \
    --section frontier-compare-hard --title "Samplers at equal passes on the hard-data model" --markdown "$ARCHIVE8"
python -m mi_core diagnose sudoku --model $HARD --puzzles "$DATA/kaggle_graded_dev.csv" --level Hard --limit 200 \
    --sampler "mi:gamma=0.3;lam=1" --sampler "mi:gamma=1;lam=1" --sampler "mi:gamma=1;lam=2" \
    --sampler "mi:gamma=1;lam=0.5;relative=true" --sampler "mi:gamma=2;lam=1;relative=true" \
    --sampler "eb:gamma=0.2" --sampler "eb:gamma=0.5" --sampler "topk:k=4" --threads 1 \
    --json assets/benchmarks/diagnose_hard_kaggle_Hard.json --section diagnose-hard-kaggle-hard --markdown "$ARCHIVE8" --force
# two processes side by side (T = 5, 10, 15 without the eb/mi grid; T = 20 with it), their rows then joined
python -m mi_core bench-order sudoku --model $HARD --puzzles "$DATA/kaggle_graded_dev.csv" --per-level 100 --threads 1 \
    --no-bf16 --budgets 5,10,15 --gammas "" --selector assets/sudoku_order_selector_hard.safetensors \
    --json runs/order_hard_T5-15.json --force
python -m mi_core bench-order sudoku --model $HARD --puzzles "$DATA/kaggle_graded_dev.csv" --per-level 100 --threads 1 \
    --no-bf16 --budgets 20 --selector assets/sudoku_order_selector_hard.safetensors \
    --json runs/order_hard_T20.json --force
# which model shapes the CPU app can afford (one thread)
PYTHONPATH=. python scripts/studies/arch_budget.py --json assets/benchmarks/arch_budget.json --markdown BENCHMARKS.md
# the looped warm start before any training: the default weights applied twice, on dev puzzles 501-600
python -m mi_core bench sudoku --model runs/loop2/sudoku_mdm.safetensors --puzzles runs/tune_dev.csv --limit 100 \
    --sampler sequential --json runs/loop2_b100.json   # runs/loop2: the default model's files, "loops": 2 in its .json; runs/tune_dev.csv: the header and puzzles 501-1000 (assets/benchmarks/loop_warm_start_dev501_600.json)

# ---- session 5 (2026-12-01): Sudoku on the CPU ----
# the hard validation set (650 puzzles hardened by up to 1,000 moves; the 200 hardest are validated on) and
# the graded training pool (10,000 puzzles, grown in chunks of 50), both as gzip text under assets/sudoku_pools
python -c "from mi_core.domains.sudoku.pool import grow_pool_file; grow_pool_file('assets/sudoku_pools/val_hard.txt.gz', 777, 650, 1000)"
python -c "from mi_core.domains.sudoku.pool import grow_pool_file; grow_pool_file('assets/sudoku_pools/train_graded.txt.gz', 4242, 10000, 500)"
# the default model then (the 8-layer one) on the validation set (a CSV of the 200 hardest: puzzle,solution), then
# the candidates at 480 CPU-seconds each on the first 250 pool puzzles, and their table
python -m mi_core bench sudoku --puzzles runs/val200.csv --sampler sequential --model assets/sudoku_mdm_hard.safetensors \
    --json runs/compare/default_val200.json
bash scripts/studies/sudoku_compare.sh runs/pool250.txt.gz assets/sudoku_pools/val_hard.txt.gz runs/compare 480
python scripts/studies/sudoku_compare_table.py runs/compare --baseline runs/compare/default_val200.json \
    --json assets/benchmarks/sudoku_cpu_candidates.json
# the chained run: resumed each session, saved into checkpoints/sudoku_chain before it stops
scripts/sudoku_chain.sh start
scripts/sudoku_chain.sh save
# its step-7,000 weights become the default (checkpoints/sudoku_chain/model.safetensors as of commit 8ccbf20):
# Kaggle, 17-clue and top1465 (first 500 each), paired on Kaggle against the 8-layer model, iterations per pass
cp checkpoints/sudoku_chain/model.safetensors assets/sudoku_peer_recurrent.safetensors
cp checkpoints/sudoku_chain/model.json assets/sudoku_peer_recurrent.json
for m in sudoku_peer_recurrent sudoku_mdm_hard; do
    python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler sequential --threads 1 \
        --model assets/$m.safetensors --json runs/kaggle500_$m.json --force
done  # copied to assets/benchmarks/sudoku_chain_kaggle500_step7000.json and sudoku_mdm_hard_kaggle500_fp32.json
python scripts/studies/paired_bench.py runs/kaggle500_sudoku_peer_recurrent.json runs/kaggle500_sudoku_mdm_hard.json \
    $DATA/kaggle_graded_dev.csv assets/benchmarks/sudoku_chain_paired_step7000.json
for set in clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$set --limit 500 --sampler sequential --threads 1 \
        --model assets/sudoku_peer_recurrent.safetensors --json runs/${set%%.*}_500_step7000.json --force
done  # copied to assets/benchmarks/sudoku_chain_{clue17,top1465}_500_step7000.json
python scripts/studies/val_hardest.py runs/val_hard200.csv
for T in 8 12 16; do python -m mi_core bench sudoku --puzzles runs/val_hard200.csv --sampler sequential --threads 1 \
    --model assets/sudoku_peer_recurrent.safetensors --iterations $T --json runs/val200_T$T.json --force; done
# what stands on the new default, re-derived (the two columns side by side): the estimator's probe data
# (62 min on one thread) and estimator, its fidelity on held-out Kaggle states; the order selector (45 min)
python -m mi_core make-estimator-data sudoku --model assets/sudoku_peer_recurrent.safetensors \
    --out runs/estimator_data/recurrent --states 400 --shard-size 8 --pool 500 --eps 0 --max-batch 512 \
    --mix 0.4,0.2,0.4 --seed 0 --threads 1
python -m mi_core train-estimator --data runs/estimator_data/recurrent --out runs/sudoku_mi_estimator_recurrent.safetensors \
    --threads 1
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model assets/sudoku_peer_recurrent.safetensors --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --json assets/benchmarks/eval_estimator_recurrent.json --section eval-estimator-recurrent --markdown BENCHMARKS.md --force
python -m mi_core train-order sudoku --model assets/sudoku_peer_recurrent.safetensors --steps-budget 5,10,15,20 \
    --out runs/sudoku_order_selector_recurrent.safetensors --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 2700
for f in sudoku_mi_estimator_recurrent sudoku_order_selector_recurrent sudoku_order_selector_recurrent_posterior; do
    cp runs/$f.safetensors runs/$f.json assets/; done
python scripts/training_summary.py assets/sudoku_order_selector_recurrent.json \
    assets/sudoku_order_selector_recurrent_training.md --command "python -m mi_core train-order sudoku ..."
# phase 1 of the chain ends at its budget (step 8,865): its weights become the default (2026-12-02); the dev sets,
# paired against step 7,000, the step-7,000 estimator on them, and the selector on both (200 Kaggle puzzles, T=15)
scripts/sudoku_chain.sh save   # then checkpoints/sudoku_chain/{model*,curve.jsonl} -> checkpoints/sudoku_chain/phase1/
cp checkpoints/sudoku_chain/phase1/model.safetensors assets/sudoku_peer_recurrent.safetensors
cp checkpoints/sudoku_chain/phase1/model.json assets/sudoku_peer_recurrent.json
for set in kaggle_graded_dev.csv clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$set --limit 500 --sampler sequential --threads 1 \
        --model checkpoints/sudoku_chain/phase1/model.safetensors --json runs/${set%%.*}_step8865.json --force
done  # copied to assets/benchmarks/sudoku_chain_{kaggle500,clue17_500,top1465_500}_step8865.json
python scripts/studies/paired_bench.py runs/kaggle_graded_dev_step8865.json \
    assets/benchmarks/sudoku_chain_kaggle500_step7000.json $DATA/kaggle_graded_dev.csv \
    assets/benchmarks/sudoku_chain_paired_step8865.json
# (--transfer: since 2026-12-05 eval-estimator refuses an estimator trained on other weights unless told so)
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model checkpoints/sudoku_chain/phase1/model.safetensors --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --transfer --json assets/benchmarks/eval_estimator_recurrent_step8865.json --force
git show 5683ec9:assets/sudoku_peer_recurrent.safetensors > runs/step7000.safetensors  # the step-7,000 default
git show 5683ec9:assets/sudoku_peer_recurrent.json > runs/step7000.json
for m in assets/sudoku_peer_recurrent runs/step7000; do
    python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 200 --sampler learned --threads 1 \
        --set selector=assets/sudoku_order_selector_recurrent.safetensors --set steps=15 --model $m.safetensors \
        --json runs/learned15_$(basename $m).json --force
done  # assets/benchmarks/sudoku_learned15_kaggle200_step8865_vs_7000.json
# phase 2: checkpoints/sudoku_chain/options (--init phase1/model.safetensors, lr 5e-4, 8 CPU-hours), phase = 2
scripts/sudoku_chain.sh start
# 2026-12-02, second session. The default's app budget at 8-32 iterations per pass, app speed (training paused),
# and 24 against 16 iterations on the held-out puzzles
PYTHONPATH=. python scripts/studies/arch_budget.py --model assets/sudoku_peer_recurrent.safetensors \
    --estimator assets/sudoku_mi_estimator_recurrent.safetensors --iterations 8,12,16,24,32 \
    --json assets/benchmarks/arch_budget_recurrent.json --markdown BENCHMARKS.md
PYTHONPATH=. python scripts/bench_app.py --browser --crafted-link --repeats 5 --json assets/benchmarks/app_speed.json
for T in 16 24; do python -m mi_core bench sudoku --puzzles runs/val_hard200.csv --sampler sequential --threads 1 \
    --model checkpoints/sudoku_chain/phase1/model.safetensors --iterations $T --json runs/val200_8865_T$T.json --force; done
# (assets/benchmarks/sudoku_chain_val200_iterations_step8865.json)
# The estimator re-derived on phase 1's end (step 8,865) with more probe data: the run was stopped at 70 shards
# (560 states); shard i depends only on (seed, i), so --states 560 makes the same ones. Variants chosen by
# validation Spearman on the generated states; :rules adds the Sudoku peer relation as a pair feature.
python -m mi_core make-estimator-data sudoku --model checkpoints/sudoku_chain/phase1/model.safetensors \
    --out runs/estimator_data/step8865 --states 560 --shard-size 8 --pool 500 --eps 0 --max-batch 512 \
    --mix 0.4,0.2,0.4 --seed 0 --threads 1
python -m mi_core train-estimator --data runs/estimator_data/step8865 --out runs/est_v1.safetensors --threads 1 \
    --variants log:free,log:bound,log:free:rules,log:bound:rules,sqrt:bound:rules
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model checkpoints/sudoku_chain/phase1/model.safetensors --estimator runs/est_v1.safetensors \
    --transfer --json runs/eval_est_v1.json --force   # assets/benchmarks/eval_estimator_recurrent_v2_step8865.json
# Phase 2's best weights by held-out at two points (steps 4,000 and 5,500, copied from the run's model.safetensors)
# on the Kaggle dev set, paired against phase 1's end; step 5,500 became the default
for s in 4000 5500; do
    python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler sequential --threads 1 \
        --model runs/p2_step$s.safetensors --json runs/kaggle500_p2_step$s.json --force
    python scripts/studies/paired_bench.py runs/kaggle500_p2_step$s.json \
        assets/benchmarks/sudoku_chain_kaggle500_step8865.json $DATA/kaggle_graded_dev.csv \
        assets/benchmarks/sudoku_chain_paired_p2_step$s.json
    cp runs/kaggle500_p2_step$s.json assets/benchmarks/sudoku_chain_kaggle500_p2_step$s.json
done
cp runs/p2_step5500.safetensors assets/sudoku_peer_recurrent.safetensors; cp runs/p2_step5500.json assets/sudoku_peer_recurrent.json
for set in clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$set --limit 500 --sampler sequential --threads 1 \
        --model assets/sudoku_peer_recurrent.safetensors --json runs/${set%%.*}_p2_step5500.json --force
done  # assets/benchmarks/sudoku_chain_{clue17,top1465}_500_p2_step5500.json
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model assets/sudoku_peer_recurrent.safetensors --estimator runs/est_v1.safetensors \
    --transfer --json assets/benchmarks/eval_estimator_recurrent.json --section eval-estimator-recurrent --markdown BENCHMARKS.md --force
cp runs/est_v1.safetensors runs/est_v1.json assets/  # then renamed sudoku_mi_estimator_recurrent.*, its JSON given a
# checked_on record naming the default's sha256, its held-out pooled Spearman (0.909) and the JSON above
python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 200 --sampler learned --threads 1 \
    --set selector=assets/sudoku_order_selector_recurrent.safetensors --set steps=15 \
    --model assets/sudoku_peer_recurrent.safetensors --json runs/learned15_p2_step5500.json --force
# the session's end: phase 2's step 6,500 (the run's model.safetensors then) on the Kaggle dev set, paired
# against the step-5,500 default (not switched then: nothing standing on it was re-measured yet; switched in the
# third session, below)
python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler sequential --threads 1 \
    --model runs/p2_step6500.safetensors --json runs/kaggle500_p2_step6500.json --force
python scripts/studies/paired_bench.py runs/kaggle500_p2_step6500.json \
    assets/benchmarks/sudoku_chain_kaggle500_p2_step5500.json $DATA/kaggle_graded_dev.csv \
    assets/benchmarks/sudoku_chain_paired_p2_step6500_vs_5500.json
PYTHONPATH=. python scripts/tour_screenshots.py   # docs/screenshots/tour_*.png
scripts/sudoku_chain.sh save   # checkpoints/sudoku_chain/ at step 6,878
# 2026-12-02, third session: phase 2's step 6,500 (checkpoints/sudoku_chain/model.safetensors, the run's best by
# held-out, benchmarked above as runs/p2_step6500) becomes the default, and what stands on it is re-measured
cp checkpoints/sudoku_chain/model.safetensors assets/sudoku_peer_recurrent.safetensors
cp checkpoints/sudoku_chain/model.json assets/sudoku_peer_recurrent.json
for set in clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$set --limit 500 --sampler sequential --threads 1 \
        --model assets/sudoku_peer_recurrent.safetensors --json runs/s2/${set%%.*}_p2_step6500.json --force
done  # assets/benchmarks/sudoku_chain_{clue17,top1465}_500_p2_step6500.json
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model assets/sudoku_peer_recurrent.safetensors --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --transfer --json runs/s2/eval_estimator_recurrent.json --force
# (checked_on of the estimator's JSON gains the default's sha256 and 0.908; the JSON is copied to
# assets/benchmarks/eval_estimator_recurrent.json and its section rendered with mi_core.bench.estimator.markdown)
python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 200 --sampler learned --threads 1 \
    --set selector=assets/sudoku_order_selector_recurrent.safetensors --set steps=15 \
    --model assets/sudoku_peer_recurrent.safetensors --json runs/s2/learned15_p2_step6500.json --force
PYTHONPATH=. python scripts/studies/hard_questions.py --model assets/sudoku_peer_recurrent.safetensors \
    --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --selector assets/sudoku_order_selector_recurrent.safetensors --json runs/hq/hard_questions_recurrent.json
# (copied to assets/benchmarks/hard_questions_recurrent.json; section hard-questions-recurrent rendered with the
# script's markdown())
N=recurrent_kaggle_graded_dev_Expert
python -m mi_core sweep sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --level Expert --limit 200 --threads 1 --name $N --json assets/benchmarks/sweep_$N.json --force
python -m mi_core sweep sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --level Expert --limit 200 --threads 1 --merge --grid 'mi:gamma=1,2,3;lam=0.25,0.5,1;relative=true' --name $N \
    --json assets/benchmarks/sweep_$N.json --markdown BENCHMARKS.md
python -m mi_core bench-order sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --per-level 40 --threads 1 --no-bf16 --selector assets/sudoku_order_selector_recurrent.safetensors \
    --json assets/benchmarks/order_recurrent_kaggle200.json --force   # its .md is the section bench-order-recurrent
PYTHONPATH=. python scripts/tour_screenshots.py   # docs/screenshots/tour_*.png (Decoding at step 2: the tuned defaults solve the hard preset in 3 passes)
scripts/sudoku_chain.sh save   # checkpoints/sudoku_chain/ at step 10,000 (phase 2, 4.83 CPU-hours)
# a selector retrained on the default (not shipped: assets/benchmarks/selector_retrained_p2_step6500_q3_hard.json)
python -m mi_core train-order sudoku --model assets/sudoku_peer_recurrent.safetensors --steps-budget 5,10,15,20 \
    --out runs/sel6500/selector.safetensors --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --puzzle-pool 2000 --threads 1 --time-budget 2400
cp runs/hq/hard_questions_recurrent.json runs/hq/hq_newsel.json
PYTHONPATH=. python scripts/studies/hard_questions.py --model assets/sudoku_peer_recurrent.safetensors \
    --estimator assets/sudoku_mi_estimator_recurrent.safetensors --selector runs/sel6500/selector.safetensors \
    --merge --json runs/hq/hq_newsel.json   # stopped during Kaggle Expert
python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler sequential --threads 1 \
    --model runs/s3/p2_step9000.safetensors --json runs/s3/kaggle500_p2_step9000.json --force  # the run's best at step 10,000
python scripts/studies/paired_bench.py runs/s3/kaggle500_p2_step9000.json \
    assets/benchmarks/sudoku_chain_kaggle500_p2_step6500.json $DATA/kaggle_graded_dev.csv runs/s3/paired_9000_vs_6500.json
scripts/sudoku_chain.sh save   # checkpoints/sudoku_chain/ at step 11,000 (phase 2, 5.05 CPU-hours)

# ---- 2026-12-02, fourth session ----
# the row-by-row check of the cuts (BENCHMARKS.md, "Reproduced after the fourth session's cuts"), then the
# protein sweep's two commands above (section 4) rerun
python -m mi_core sweep sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --level Expert --limit 200 --threads 1 --samplers topk,eb,mask_predict,mi --name recurrent_kaggle_graded_dev_Expert \
    --json runs/s4/sweep_sudoku.json --force
python scripts/diff_rows.py assets/benchmarks/sweep_recurrent_kaggle_graded_dev_Expert.json runs/s4/sweep_sudoku.json  # the 16 rows of other samplers count as missing
# the chained run's best held-out step (19,500, copied from /work/chain/run/model.safetensors during the stretch)
for SET in kaggle_graded_dev.csv clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$SET --limit 500 --sampler sequential --threads 1 \
        --model runs/s4/p2_step19500.safetensors --json runs/s4/${SET%%.*}_500_p2_step19500.json --force
done
python scripts/studies/paired_bench.py runs/s4/kaggle_graded_dev_500_p2_step19500.json \
    assets/benchmarks/sudoku_chain_kaggle500_p2_step6500.json $DATA/kaggle_graded_dev.csv runs/s4/paired_19500_vs_6500.json
scripts/sudoku_chain.sh save   # checkpoints/sudoku_chain/ at step 24,000 (phase 2, 7.64 CPU-hours)

# ---- 2026-12-02, fifth session ----
# phase 2 ends at step 26,000; its best by held-out (step 24,000) on the first 500 of each set, paired on Kaggle
scripts/sudoku_chain.sh save   # then moved to checkpoints/sudoku_chain/phase2/; phase 3 set up in options and phase
for SET in kaggle_graded_dev.csv clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$SET --limit 500 --sampler sequential --threads 1 \
        --model checkpoints/sudoku_chain/phase2/model.safetensors --json runs/s5/${SET%%.*}_500_p2_step24000.json --force
done  # assets/benchmarks/sudoku_chain_{kaggle500,clue17_500,top1465_500}_p2_step24000.json
for B in 6500 19500; do
    python scripts/studies/paired_bench.py runs/s5/kaggle_graded_dev_500_p2_step24000.json \
        assets/benchmarks/sudoku_chain_kaggle500_p2_step$B.json $DATA/kaggle_graded_dev.csv \
        assets/benchmarks/sudoku_chain_paired_p2_step24000_vs_$B.json
done
# step 24,000 becomes the default; the step-6,500 JSONs are renamed *_p2_step6500.json and their tables archived
# (docs/archive/sudoku_recurrent_p2_step6500.md)
cp checkpoints/sudoku_chain/phase2/model.safetensors assets/sudoku_peer_recurrent.safetensors
cp checkpoints/sudoku_chain/phase2/model.json assets/sudoku_peer_recurrent.json
python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 200 --sampler learned --threads 1 \
    --set selector=assets/sudoku_order_selector_recurrent.safetensors --set steps=15 \
    --model assets/sudoku_peer_recurrent.safetensors --json runs/s5/learned15_p2_step24000.json --force
# the estimator of phase 1's end (still at this path then) on the new default: pooled Spearman 0.820, under 0.90,
# so it is retrained (assets/benchmarks/eval_estimator_recurrent_step8865_on_p2_step24000.json)
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model assets/sudoku_peer_recurrent.safetensors --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --transfer --json runs/s5/eval_estimator_recurrent.json --force
# the estimator retrained on the default: pruned probe for the training targets (eps 1e-4; the data's manifest
# records the probe's error bound, at most 5.2e-3 nats a pair for the shipped estimator's data)
python -m mi_core make-estimator-data sudoku --model assets/sudoku_peer_recurrent.safetensors \
    --out runs/estimator_data/p2_step24000 --states 560 --shard-size 8 --pool 500 --eps 1e-4 --max-batch 512 \
    --mix 0.4,0.2,0.4 --seed 0 --threads 1 --engine ray --workers 2
python -m mi_core train-estimator --data runs/estimator_data/p2_step24000 \
    --out assets/sudoku_mi_estimator_recurrent.safetensors --threads 1 \
    --variants log:free,log:free:rules,log:bound:rules --force
python -m mi_core eval-estimator sudoku --puzzles "$DATA/kaggle_graded_dev.csv" --states 60 --threads 1 \
    --model assets/sudoku_peer_recurrent.safetensors --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --json runs/s5/eval_estimator_recurrent_new.json --force
# (copied to assets/benchmarks/eval_estimator_recurrent.json; section eval-estimator-recurrent rendered with
# mi_core.bench.estimator.markdown)
# the three questions, one process a set (two at a time), merged into assets/benchmarks/hard_questions_recurrent.json
# and its section rendered with the script's markdown()
for SET in "Kaggle Hard:hq_hard" "Kaggle Expert:hq_expert" "17-clue:hq_17"; do
    PYTHONPATH=. python scripts/studies/hard_questions.py --model assets/sudoku_peer_recurrent.safetensors \
        --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
        --selector assets/sudoku_order_selector_recurrent.safetensors --sets "${SET%%:*}" --json runs/s5/hq/${SET##*:}.json
done
N=recurrent_kaggle_graded_dev_Expert
python -m mi_core sweep sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --level Expert --limit 200 --threads 1 --name $N --json assets/benchmarks/sweep_$N.json --force
python -m mi_core sweep sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --level Expert --limit 200 --threads 1 --merge --grid 'mi:gamma=1,2,3;lam=0.25,0.5,1;relative=true' --name $N \
    --json assets/benchmarks/sweep_$N.json --markdown BENCHMARKS.md
python -m mi_core bench-order sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --per-level 40 --threads 1 --no-bf16 --selector assets/sudoku_order_selector_recurrent.safetensors \
    --json assets/benchmarks/order_recurrent_kaggle200.json --force   # its .md is the section bench-order-recurrent

# sixth session (2026-12-03): an order selector trained on graded puzzles, against the shipped one on the 100
# hardest validation puzzles (not shipped: assets/benchmarks/selector_graded_pool_val_hard.json)
python -m mi_core train-order sudoku --model assets/sudoku_peer_recurrent.safetensors --steps-budget 5,10,15,20 \
    --out runs/selector_graded/selector.safetensors --batch 16 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 \
    --eval-puzzles 100 --pool-file assets/sudoku_pools/train_graded.txt.gz --val-file assets/sudoku_pools/val_hard.txt.gz \
    --threads 1 --time-budget 2400
PYTHONPATH=. python scripts/studies/selector_val.py --model assets/sudoku_peer_recurrent.safetensors \
    --pool assets/sudoku_pools/val_hard.txt.gz --json assets/benchmarks/selector_graded_pool_val_hard.json \
    assets/sudoku_order_selector_recurrent.safetensors runs/selector_graded/selector.safetensors

# 2026-12-03 (seventh to ninth sessions): phase 4's checkpoints, the soup of three, and the switch to it.
# Each checkpoint benchmarked as below ($C = p4_step1000, p4_step4000, phase3/model; OUT names as in BENCHMARKS.md)
for C in p4_step1000 p4_step4000 phase3/model; do
    python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler sequential --threads 1 \
        --model checkpoints/sudoku_chain/$C.safetensors --json runs/kaggle500_${C//\//_}.json --force; done
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/p4_step1000.safetensors \
    checkpoints/sudoku_chain/p4_step4000.safetensors checkpoints/sudoku_chain/phase3/model.safetensors --loops 24 \
    --out checkpoints/sudoku_chain/soup3.safetensors --force
# tuning: Kaggle dev rows 501-1000 (header + sed -n 502,1001p), the soup against the default and a 4-way soup
(head -1 $DATA/kaggle_graded_dev.csv; sed -n 502,1001p $DATA/kaggle_graded_dev.csv) > runs/kaggle_tune500.csv
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/p4_step1000.safetensors \
    checkpoints/sudoku_chain/p4_step4000.safetensors checkpoints/sudoku_chain/phase3/model.safetensors \
    checkpoints/sudoku_chain/phase2/model.safetensors --loops 24 --out runs/soup4.safetensors
for M in checkpoints/sudoku_chain/soup3 runs/soup4 checkpoints/sudoku_chain/phase2/model; do
    python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --threads 1 --model $M.safetensors \
        --json runs/tune500_$(basename $M).json --force; done  # assets/benchmarks/sudoku_tune500_{soup3,soup4,default}.json
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_soup3.json \
    assets/benchmarks/sudoku_tune500_default.json runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_soup3.json
# scored: the first 500 of each set
for set in kaggle_graded_dev.csv clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles $DATA/$set --limit 500 --sampler sequential --threads 1 \
        --model checkpoints/sudoku_chain/soup3.safetensors --json runs/${set%%.*}_500_soup3.json --force; done
for set in clue17:clue17_dev.txt top1465:top1465.txt; do  # paired against the default before it, on the same 500
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_chain_${set%%:*}_500_soup3.json \
        assets/benchmarks/sudoku_chain_${set%%:*}_500_p2_step24000.json $DATA/${set#*:} \
        assets/benchmarks/sudoku_chain_paired_soup3_vs_p2_step24000_${set%%:*}_500.json; done
python -m mi_core make-estimator-data sudoku --model checkpoints/sudoku_chain/soup3.safetensors --out runs/estimator_data/soup3 \
    --seed 0 --states 560 --shard-size 8 --eps 0.0001 --max-batch 512 --pool 500 --mix 0.4,0.2,0.4
python -m mi_core train-estimator --data runs/estimator_data/soup3 --out checkpoints/sudoku_chain/soup3_mi_estimator.safetensors \
    --threads 1 --variants log:free:rules --force
python -m mi_core eval-estimator sudoku --puzzles $DATA/kaggle_graded_dev.csv --states 60 --threads 1 \
    --model checkpoints/sudoku_chain/soup3.safetensors --estimator checkpoints/sudoku_chain/soup3_mi_estimator.safetensors \
    --json assets/benchmarks/eval_estimator_soup3.json --force
python -m mi_core sweep sudoku --model checkpoints/sudoku_chain/soup3.safetensors \
    --estimator checkpoints/sudoku_chain/soup3_mi_estimator.safetensors --puzzles $DATA/kaggle_graded_dev.csv --level Expert \
    --limit 200 --threads 1 --name soup3_kaggle_graded_dev_Expert --json assets/benchmarks/sweep_recurrent_kaggle_graded_dev_Expert.json --force
# the switch (ninth session): the soup and its estimator become the shipped files (their JSONs name them), then
cp checkpoints/sudoku_chain/soup3.safetensors assets/sudoku_peer_recurrent.safetensors
cp checkpoints/sudoku_chain/soup3_mi_estimator.safetensors assets/sudoku_mi_estimator_recurrent.safetensors
PYTHONPATH=. python scripts/studies/hard_questions.py --model assets/sudoku_peer_recurrent.safetensors \
    --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --selector assets/sudoku_order_selector_recurrent.safetensors --json assets/benchmarks/hard_questions_recurrent.json
python -m mi_core bench-order sudoku --model assets/sudoku_peer_recurrent.safetensors --puzzles $DATA/kaggle_graded_dev.csv \
    --per-level 40 --threads 1 --no-bf16 --selector assets/sudoku_order_selector_recurrent.safetensors \
    --json assets/benchmarks/order_recurrent_kaggle200.json --force   # its .md is the section bench-order-recurrent
# app speed on the soup, with the chained training run paused (kill -STOP, then -CONT)
PYTHONPATH=. python scripts/bench_app.py --browser --crafted-link --repeats 5 --json assets/benchmarks/app_speed.json
PYTHONPATH=. python scripts/load_test.py --client protocol --sessions 30 --json assets/benchmarks/load_test_30_protocol_soup.json

# symmetric views at test time on the soup (BENCHMARKS.md, the summary; tenth session): 4 views, chosen on the tuning
# puzzles (assets/benchmarks/sudoku_tune500_views4_soup3.json, measured by a prototype of the same computation), then
# each set's first 500
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --views 4 --threads 1 --json runs/tune500_views4.json --force
for set in kaggle_graded_dev.csv clue17_dev.txt top1465.txt; do
    python -m mi_core bench sudoku --puzzles ../shared/data/sudoku/$set --limit 500 --views 4 --threads 1 \
        --json runs/views4_${set%%.*}_500.json --force; done  # assets/benchmarks/sudoku_views4_{kaggle500,clue17_500,top1465_500}_soup3.json
for pair in "kaggle500 kaggle_graded_dev.csv" "clue17_500 clue17_dev.txt" "top1465_500 top1465.txt"; do set -- $pair
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_views4_$1_soup3.json \
        assets/benchmarks/sudoku_chain_$1_soup3.json ../shared/data/sudoku/$2 assets/benchmarks/sudoku_paired_views4_vs_soup3_$1.json; done

# MI-guided decoding with the views (BENCHMARKS.md, the summary; eleventh session): tuning on Kaggle dev 501-700
# (runs/kaggle_tune200.csv: the header and lines 502-701 of the file), then gamma 0.6, lam 1 on each set's first 500
head -1 $DATA/kaggle_graded_dev.csv > runs/kaggle_tune200.csv && sed -n 502,701p $DATA/kaggle_graded_dev.csv >> runs/kaggle_tune200.csv
for v in 4 1; do python -m mi_core bench sudoku --puzzles runs/kaggle_tune200.csv --sampler mi --views $v --threads 1 \
    --json assets/benchmarks/sudoku_tune200_mi_gamma1_views${v}_soup3.json --force; done
python -m mi_core sweep sudoku --puzzles runs/kaggle_tune200.csv --views 4 --threads 1 --grid "mi:gamma=0.3,0.6,1.0;lam=1" \
    --grid "eb:gamma=0.5" --name tune200_views4 --json assets/benchmarks/sudoku_tune200_sweep_views4_soup3.json --force
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune200_mi_gamma1_views{4,1}_soup3.json \
    runs/kaggle_tune200.csv assets/benchmarks/sudoku_tune200_paired_mi_views4_vs_views1.json
# how many views (twelfth session): 2 and 8 beside the 1 and 4 above, each doubling paired
for v in 8 2; do python -m mi_core bench sudoku --puzzles runs/kaggle_tune200.csv --sampler mi --views $v --threads 1 \
    --json assets/benchmarks/sudoku_tune200_mi_gamma1_views${v}_soup3.json --force; done
for pair in "8 4" "4 2" "2 1"; do set -- $pair; PYTHONPATH=. python scripts/studies/paired_bench.py \
    assets/benchmarks/sudoku_tune200_mi_gamma1_views{$1,$2}_soup3.json runs/kaggle_tune200.csv \
    assets/benchmarks/sudoku_tune200_paired_mi_views$1_vs_views$2.json; done
for pair in "kaggle500 kaggle_graded_dev.csv" "clue17_500 clue17_dev.txt" "top1465_500 top1465.txt"; do set -- $pair
    for v in 4 1; do python -m mi_core bench sudoku --puzzles $DATA/$2 --limit 500 --sampler mi --set gamma=0.6 --set lam=1 \
        --views $v --threads 1 --json assets/benchmarks/sudoku_mi_views${v}_$1_soup3.json --force; done
    for other in mi_views1_$1 views4_$1 chain_$1; do
        PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_views4_$1_soup3.json \
            assets/benchmarks/sudoku_${other}_soup3.json $DATA/$2 \
            assets/benchmarks/sudoku_paired_mi_views4_vs_$(echo $other | sed "s/_$1//;s/mi_views1/mi/;s/chain/soup3/")_$1.json
    done
done
# the learned order at T = 15 with and without the views, on the tuning puzzles and the Kaggle 500
for v in 4 1; do
    python -m mi_core bench sudoku --puzzles runs/kaggle_tune200.csv --sampler learned --set steps=15 \
        --set selector=assets/sudoku_order_selector_recurrent.safetensors --views $v --threads 1 \
        --json assets/benchmarks/sudoku_tune200_learned15_views${v}_soup3.json --force
    python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler learned --set steps=15 \
        --set selector=assets/sudoku_order_selector_recurrent.safetensors --views $v --threads 1 \
        --json assets/benchmarks/sudoku_learned15_views${v}_kaggle500_soup3.json --force; done
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune200_learned15_views{4,1}_soup3.json \
    runs/kaggle_tune200.csv assets/benchmarks/sudoku_tune200_paired_learned15_views4_vs_views1.json
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_learned15_views{4,1}_kaggle500_soup3.json \
    $DATA/kaggle_graded_dev.csv assets/benchmarks/sudoku_paired_learned15_views4_vs_views1_kaggle500.json
# phase 4's end as a fourth soup ingredient, on the tuning puzzles (eleventh session; not kept)
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/p4_step1000.safetensors checkpoints/sudoku_chain/p4_step4000.safetensors \
    checkpoints/sudoku_chain/phase3/model.safetensors checkpoints/sudoku_chain/phase4/model_last.safetensors --loops 24 --out runs/s11/soup4c.safetensors
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --model runs/s11/soup4c.safetensors --threads 1 \
    --json assets/benchmarks/sudoku_tune500_soup4c_p4end.json --force
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_soup4c_p4end.json assets/benchmarks/sudoku_tune500_soup3.json \
    runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_soup4c_p4end_vs_soup3.json
# phase 5 on the tuning puzzles (twelfth session; not kept): its step 3,000 at its 32 iterations, and its step 4,500
# (its held-out best so far) averaged with the default soup at 24
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --model checkpoints/sudoku_chain/p5_step3000.safetensors \
    --threads 1 --json assets/benchmarks/sudoku_tune500_p5_step3000.json --force
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/soup3.safetensors checkpoints/sudoku_chain/p5_step4500.safetensors \
    --loops 24 --out runs/s12/soup2_p5.safetensors
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --model runs/s12/soup2_p5.safetensors --threads 1 \
    --json assets/benchmarks/sudoku_tune500_soup2_p5_step4500.json --force
for m in p5_step3000 soup2_p5_step4500; do PYTHONPATH=. python scripts/studies/paired_bench.py \
    assets/benchmarks/sudoku_tune500_$m.json assets/benchmarks/sudoku_tune500_soup3.json runs/kaggle_tune500.csv \
    assets/benchmarks/sudoku_tune_paired_${m}_vs_soup3.json; done
# phase 5's held-out best of its third stretch, step 10,500, at its 32 iterations and at the default's 24
# (fourteenth session; not kept)
for it in 32 24; do
    name=p5_step10500$([ $it = 24 ] && echo _it24 || true)  # || true: under set -e a failed test here stops the script
    python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --model checkpoints/sudoku_chain/p5_step10500.safetensors \
        --iterations $it --threads 1 --json assets/benchmarks/sudoku_tune500_$name.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_$name.json \
        assets/benchmarks/sudoku_tune500_soup3.json runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_${name}_vs_soup3.json
done
# the exact probe's speed on the default model (fourteenth session; the first model's table is in the archive)
python -m mi_core bench-probe --model assets/sudoku_peer_recurrent.safetensors --threads 1 \
    --json assets/benchmarks/bench_probe_recurrent.json --markdown BENCHMARKS.md --force
# phase 6 (fourteenth session): phase 4's recipe from the default soup; its validated weights every 1,000 steps
# are kept as checkpoints/sudoku_chain/p6_stepN.safetensors, and soups of them with the default are tried
for steps in "1000" "1000 3000" "1000 4000"; do
    set -- $steps
    name=soup$(($# + 1))_p6_step${steps// /_}
    PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/soup3.safetensors \
        $(printf 'checkpoints/sudoku_chain/p6_step%s.safetensors ' $steps) --loops 24 --out runs/s14/$name.safetensors
    python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --model runs/s14/$name.safetensors --threads 1 \
        --json assets/benchmarks/sudoku_tune500_$name.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_$name.json \
        assets/benchmarks/sudoku_tune500_soup3.json runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_${name}_vs_soup3.json
done
# phase 6's decline (sixteenth session): is it over-fitting to the 10,000 training puzzles? Steps 3,000 and
# 13,000 on the 200 hardest held-out puzzles (the run's validation set) and on the first 200 training-pool puzzles
# of grade >= 19 (median 26): both fall by the same margin, so it is not
mkdir -p runs/s16 && python - <<'PY'
import gzip
rows = [line.split() for line in gzip.open("assets/sudoku_pools/train_graded.txt.gz", "rt")]
hard = [r for r in rows if int(r[2]) >= 19][:200]
val = sorted((line.split() for line in gzip.open("assets/sudoku_pools/val_hard.txt.gz", "rt")), key=lambda r: -int(r[2]))[:200]
for name, chosen in (("pool_hard200", hard), ("val200", val)):
    open(f"runs/s16/{name}.txt", "w").write("".join(r[0].replace("0", ".") + "\n" for r in chosen))
PY
for f in pool_hard200 val200; do
    for s in 3000 13000; do
        python -m mi_core bench sudoku --puzzles runs/s16/$f.txt --model checkpoints/sudoku_chain/p6_step$s.safetensors \
            --threads 1 --json assets/benchmarks/sudoku_p6_step${s}_$f.json --force
    done
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_p6_step13000_$f.json \
        assets/benchmarks/sudoku_p6_step3000_$f.json runs/s16/$f.txt assets/benchmarks/sudoku_paired_p6_step13000_vs_3000_$f.json
done
# phase 6's end as a fourth soup ingredient, on the tuning puzzles (seventeenth session; not kept)
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/phase3/model.safetensors checkpoints/sudoku_chain/p4_step1000.safetensors \
    checkpoints/sudoku_chain/p4_step4000.safetensors checkpoints/sudoku_chain/phase6/model_last.safetensors --loops 24 \
    --out runs/s17/soup4_p6end.safetensors
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --model runs/s17/soup4_p6end.safetensors \
    --threads 1 --json assets/benchmarks/sudoku_tune500_soup4d_p6end.json --force
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_soup4d_p6end.json assets/benchmarks/sudoku_tune500_soup3.json \
    runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_soup4d_p6end_vs_soup3.json
# phase 7's end alone and as a fourth soup ingredient, on the tuning puzzles (seventeenth session; not kept)
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential \
    --model checkpoints/sudoku_chain/phase7/model_last.safetensors --threads 1 \
    --json assets/benchmarks/sudoku_tune500_p7end.json --force
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/phase3/model.safetensors checkpoints/sudoku_chain/p4_step1000.safetensors \
    checkpoints/sudoku_chain/p4_step4000.safetensors checkpoints/sudoku_chain/phase7/model_last.safetensors --loops 24 \
    --out runs/s17/soup4_p7end.safetensors
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --model runs/s17/soup4_p7end.safetensors \
    --threads 1 --json assets/benchmarks/sudoku_tune500_soup4e_p7end.json --force
for a in p7end soup4e_p7end; do
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_$a.json assets/benchmarks/sudoku_tune500_soup3.json \
        runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_${a}_vs_soup3.json
done
# phase 8's end alone and as a fourth soup ingredient, on the tuning puzzles (eighteenth session; not kept)
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential \
    --model checkpoints/sudoku_chain/phase8/model_last.safetensors --threads 1 \
    --json assets/benchmarks/sudoku_tune500_p8end.json --force
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/phase3/model.safetensors checkpoints/sudoku_chain/p4_step1000.safetensors \
    checkpoints/sudoku_chain/p4_step4000.safetensors checkpoints/sudoku_chain/phase8/model_last.safetensors --loops 24 \
    --out runs/s18/p8/soup4f_p8end.safetensors
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --model runs/s18/p8/soup4f_p8end.safetensors \
    --threads 1 --json assets/benchmarks/sudoku_tune500_soup4f_p8end.json --force
for a in p8end soup4f_p8end; do
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_$a.json assets/benchmarks/sudoku_tune500_soup3.json \
        runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_${a}_vs_soup3.json
done
# phase 9's warm start: the soup's block as two copies applied 12 times
PYTHONPATH=. python scripts/studies/grow_blocks.py checkpoints/sudoku_chain/soup3.safetensors --blocks 2 \
    --out checkpoints/sudoku_chain/grown2.safetensors

# Decoding again under another symmetric view while the result breaks the rules (eighteenth session, the default
# soup): the number of decodes chosen on the tuning puzzles (one run with 8 gives K = 1..8:
# scripts/studies/attempts_curve.py), then scored on the first 500 of each set, sequential and MI-guided
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --threads 1 --attempts 8 \
    --json assets/benchmarks/sudoku_tune500_attempts8_soup3.json --force
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler mi --set gamma=0.6 --set lam=1 --threads 1 \
    --attempts 8 --json assets/benchmarks/sudoku_tune500_mi_attempts8_soup3.json --force
for pair in kaggle_graded_dev.csv:kaggle500 clue17_dev.txt:clue17_500 top1465.txt:top1465_500; do
    python -m mi_core bench sudoku --puzzles $DATA/${pair%%:*} --limit 500 --sampler mi --set gamma=0.6 --set lam=1 \
        --threads 1 --attempts 8 --json assets/benchmarks/sudoku_mi_attempts8_${pair##*:}_soup3.json --force
done
python -m mi_core bench sudoku --puzzles $DATA/kaggle_graded_dev.csv --limit 500 --sampler sequential --threads 1 \
    --attempts 8 --json assets/benchmarks/sudoku_attempts8_kaggle500_soup3.json --force
# paired against one decode (the recorded runs of the same sampler and settings)
for pair in kaggle_graded_dev.csv:kaggle500 clue17_dev.txt:clue17_500 top1465.txt:top1465_500; do
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_attempts8_${pair##*:}_soup3.json \
        assets/benchmarks/sudoku_mi_views1_${pair##*:}_soup3.json $DATA/${pair%%:*} \
        assets/benchmarks/sudoku_paired_mi_attempts8_vs_mi_${pair##*:}.json
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_attempts8_${pair##*:}_soup3.json \
        assets/benchmarks/sudoku_views4_${pair##*:}_soup3.json $DATA/${pair%%:*} \
        assets/benchmarks/sudoku_paired_mi_attempts8_vs_views4_${pair##*:}.json
done
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_attempts8_kaggle500_soup3.json \
    assets/benchmarks/sudoku_chain_kaggle500_soup3.json $DATA/kaggle_graded_dev.csv \
    assets/benchmarks/sudoku_paired_attempts8_vs_soup3_kaggle500.json

# Up to 32 decodes (nineteenth session): chosen on the Kaggle tuning puzzles and on top1465 puzzles 501-1000 (one run
# of 32 holds every K up to 32; scripts/studies/attempts_curve.py RUN --against 8), then scored on the first 500
sed -n 501,1000p $DATA/top1465.txt > runs/top1465_tune500.txt
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler mi --set gamma=0.6 --set lam=1 --threads 1 \
    --attempts 32 --json assets/benchmarks/sudoku_tune500_mi_attempts32_soup3.json --force
python -m mi_core bench sudoku --puzzles runs/top1465_tune500.txt --sampler mi --set gamma=0.6 --set lam=1 --threads 1 \
    --attempts 32 --json assets/benchmarks/sudoku_top1465_tune500_mi_attempts32_soup3.json --force
for pair in kaggle_graded_dev.csv:kaggle500 clue17_dev.txt:clue17_500 top1465.txt:top1465_500; do
    python -m mi_core bench sudoku --puzzles $DATA/${pair%%:*} --limit 500 --sampler mi --set gamma=0.6 --set lam=1 \
        --threads 1 --attempts 32 --json assets/benchmarks/sudoku_mi_attempts32_${pair##*:}_soup3.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_attempts32_${pair##*:}_soup3.json \
        assets/benchmarks/sudoku_views4_${pair##*:}_soup3.json $DATA/${pair%%:*} \
        assets/benchmarks/sudoku_paired_mi_attempts32_vs_views4_${pair##*:}.json
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_attempts32_${pair##*:}_soup3.json \
        assets/benchmarks/sudoku_mi_views1_${pair##*:}_soup3.json $DATA/${pair%%:*} \
        assets/benchmarks/sudoku_paired_mi_attempts32_vs_mi_${pair##*:}.json
done
# the learned order (T = 15, the shipped selector) with the same retries, against MI-guided
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler learned --set steps=15 \
    --set selector=assets/sudoku_order_selector_recurrent.safetensors --threads 1 --attempts 32 \
    --json assets/benchmarks/sudoku_tune500_learned15_attempts32_soup3.json --force
for pair in kaggle_graded_dev.csv:kaggle500 clue17_dev.txt:clue17_500 top1465.txt:top1465_500; do
    python -m mi_core bench sudoku --puzzles $DATA/${pair%%:*} --limit 500 --sampler learned --set steps=15 --threads 1 \
        --attempts 32 --json assets/benchmarks/sudoku_learned15_attempts32_${pair##*:}_soup3.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_learned15_attempts32_${pair##*:}_soup3.json \
        assets/benchmarks/sudoku_mi_attempts32_${pair##*:}_soup3.json $DATA/${pair%%:*} \
        assets/benchmarks/sudoku_paired_learned15_attempts32_vs_mi_attempts32_${pair##*:}.json
done
# sequential decoding with the same retries on the scored sets (twentieth session; top1465 not run: over 90 minutes)
for pair in kaggle_graded_dev.csv:kaggle500 clue17_dev.txt:clue17_500; do
    python -m mi_core bench sudoku --puzzles $DATA/${pair%%:*} --limit 500 --sampler sequential --threads 1 --attempts 32 \
        --json assets/benchmarks/sudoku_sequential_attempts32_${pair##*:}_soup3.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_attempts32_${pair##*:}_soup3.json \
        assets/benchmarks/sudoku_sequential_attempts32_${pair##*:}_soup3.json $DATA/${pair%%:*} \
        assets/benchmarks/sudoku_paired_mi_attempts32_vs_sequential_attempts32_${pair##*:}.json
done
# which sampler to retry: 32 decodes at most for five samplers, merged into the soup's Expert sweep
python -m mi_core sweep sudoku --model checkpoints/sudoku_chain/soup3.safetensors \
    --estimator checkpoints/sudoku_chain/soup3_mi_estimator.safetensors --puzzles $DATA/kaggle_graded_dev.csv --level Expert \
    --limit 200 --threads 1 --name soup3_kaggle_graded_dev_Expert --json assets/benchmarks/sweep_recurrent_kaggle_graded_dev_Expert.json \
    --markdown BENCHMARKS.md --merge --attempts 32 --grid 'mi:gamma=0.6;lam=1' --grid learned:steps=15 --grid eb:gamma=0.2 \
    --grid topk:k=7 --grid sequential
# phase 9's held-out best (step 7,500, copied from the run's model.safetensors) on the tuning puzzles
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --threads 1 \
    --model checkpoints/sudoku_chain/phase9/p9_step7500.safetensors --json assets/benchmarks/sudoku_tune500_p9_step7500.json --force
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_p9_step7500.json \
    assets/benchmarks/sudoku_tune500_soup3.json runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_p9_step7500_vs_soup3.json
# phase 9 at step 21,000 (twentieth session; the run's model_last.safetensors then), the same way
python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --threads 1 \
    --model checkpoints/sudoku_chain/phase9/p9_step21000.safetensors --json assets/benchmarks/sudoku_tune500_p9_step21000.json --force
PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_p9_step21000.json \
    assets/benchmarks/sudoku_tune500_soup3.json runs/kaggle_tune500.csv assets/benchmarks/sudoku_tune_paired_p9_step21000_vs_soup3.json
# phase 10 (twenty-first session): the soup's own 4-view ensemble distilled into it (checkpoints/sudoku_chain/options);
# its validated weights (the run's model_last.safetensors at steps 500, 1,250 and 1,750) on the tuning puzzles, and the
# soup and step 1,250 on top1465 puzzles 501-1000, where views help most
for step in 500 1250 1750; do
    python -m mi_core bench sudoku --puzzles runs/kaggle_tune500.csv --sampler sequential --threads 1 \
        --model checkpoints/sudoku_chain/phase10/p10_step$step.safetensors \
        --json assets/benchmarks/sudoku_tune500_p10_step$step.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_tune500_p10_step$step.json \
        assets/benchmarks/sudoku_tune500_soup3.json runs/kaggle_tune500.csv \
        assets/benchmarks/sudoku_tune_paired_p10_step${step}_vs_soup3.json
done
for m in soup3:checkpoints/sudoku_chain/soup3 p10_step1250:checkpoints/sudoku_chain/phase10/p10_step1250 \
        p10_step1750:checkpoints/sudoku_chain/phase10/p10_step1750 p10_step2500:checkpoints/sudoku_chain/phase10/p10_step2500; do
    python -m mi_core bench sudoku --puzzles runs/top1465_tune500.txt --sampler sequential --threads 1 \
        --model ${m#*:}.safetensors --json assets/benchmarks/sudoku_top1465_tune500_${m%%:*}.json --force
done
for step in 1250 1750 2500; do
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_top1465_tune500_p10_step$step.json \
        assets/benchmarks/sudoku_top1465_tune500_soup3.json runs/top1465_tune500.txt \
        assets/benchmarks/sudoku_top1465_tune_paired_p10_step${step}_vs_soup3.json
done
# phase 10's late weights (twenty-second session): step 3,000 (model_last then), 3,250 (its best by held-out then), the
# end (step 3,672, phase10/model_last) and a soup of steps 1,250, 1,750, 2,500 and 3,000 (top1465 only: it trailed
# step 1,750 there), on both tuning sets
PYTHONPATH=. python scripts/studies/soup.py checkpoints/sudoku_chain/phase10/p10_step{1250,1750,2500,3000}.safetensors \
    --loops 24 --out checkpoints/sudoku_chain/phase10/p10soup4.safetensors --force
for m in p10_step3000:phase10/p10_step3000 p10_step3250:phase10/p10_step3250 p10_end:phase10/model_last \
        p10soup4:phase10/p10soup4; do
    for set in top1465_tune500.txt:sudoku_top1465_tune500 kaggle_tune500.csv:sudoku_tune500; do
        [ "${m%%:*}" = p10soup4 ] && [ "${set#*:}" = sudoku_tune500 ] && continue
        python -m mi_core bench sudoku --puzzles runs/${set%%:*} --sampler sequential --threads 1 \
            --model checkpoints/sudoku_chain/${m#*:}.safetensors --json assets/benchmarks/${set#*:}_${m%%:*}.json --force
        PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/${set#*:}_${m%%:*}.json \
            assets/benchmarks/${set#*:}_soup3.json runs/${set%%:*} \
            assets/benchmarks/$(echo ${set#*:} | sed 's/tune500/tune/')_paired_${m%%:*}_vs_soup3.json
    done
done
# phase 10's pick scored once (twenty-second session): the first 500 of each set, sequential, paired against the soup
for pair in "kaggle500 kaggle_graded_dev.csv" "clue17_500 clue17_dev.txt" "top1465_500 top1465.txt"; do set -- $pair
    python -m mi_core bench sudoku --puzzles $DATA/$2 --limit 500 --sampler sequential --threads 1 \
        --model checkpoints/sudoku_chain/phase10/p10_step1750.safetensors \
        --json assets/benchmarks/sudoku_chain_$1_p10_step1750.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_chain_$1_p10_step1750.json \
        assets/benchmarks/sudoku_chain_$1_soup3.json $DATA/$2 assets/benchmarks/sudoku_chain_paired_p10_step1750_vs_soup3_$1.json
done
# the shipped estimator (trained on the soup) on the pick: pooled Spearman 0.940 (0.938 on the soup), then a checked_on
# record naming the pick's sha256 and this JSON in assets/sudoku_mi_estimator_recurrent.json
python -m mi_core eval-estimator sudoku --puzzles $DATA/kaggle_graded_dev.csv --states 60 --threads 1 \
    --model checkpoints/sudoku_chain/phase10/p10_step1750.safetensors --estimator assets/sudoku_mi_estimator_recurrent.safetensors \
    --transfer --json assets/benchmarks/eval_estimator_transfer_p10_step1750.json --force
# MI-guided decoding with 4 views (gamma 0.6, lam 1, the app's setting) on the pick, Kaggle and top1465, paired
# against the soup's runs of the same command
for pair in "kaggle500 kaggle_graded_dev.csv" "top1465_500 top1465.txt"; do set -- $pair
    python -m mi_core bench sudoku --puzzles $DATA/$2 --limit 500 --sampler mi --set gamma=0.6 --set lam=1 --views 4 \
        --threads 1 --model checkpoints/sudoku_chain/phase10/p10_step1750.safetensors \
        --json assets/benchmarks/sudoku_mi_views4_$1_p10_step1750.json --force
    PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/sudoku_mi_views4_$1_p10_step1750.json \
        assets/benchmarks/sudoku_mi_views4_$1_soup3.json $DATA/$2 assets/benchmarks/sudoku_paired_mi_views4_p10_step1750_vs_soup3_$1.json
done
# phase 11 (twenty-third session): four validated weights and the end on both tuning sets, paired against its start,
# phase 10's step 1,750
for m in p11_step1500:phase11/p11_step1500 p11_step1750:phase11/p11_step1750 p11_step2000:phase11/p11_step2000 \
        p11_step2500:phase11/p11_step2500 p11_end:phase11/model_last; do
    for set in top1465_tune500.txt:sudoku_top1465_tune500 kaggle_tune500.csv:sudoku_tune500; do
        python -m mi_core bench sudoku --puzzles runs/${set%%:*} --sampler sequential --threads 1 \
            --model checkpoints/sudoku_chain/${m#*:}.safetensors --json assets/benchmarks/${set#*:}_${m%%:*}.json --force
        PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/${set#*:}_${m%%:*}.json \
            assets/benchmarks/${set#*:}_p10_step1750.json runs/${set%%:*} \
            assets/benchmarks/$(echo ${set#*:} | sed 's/tune500/tune/')_paired_${m%%:*}_vs_p10_step1750.json
    done
done
# phases 12 and 13 (twenty-third to twenty-fifth sessions): validated weights on the Kaggle tuning puzzles (and
# on top1465 501-1000 where listed), paired against phase 10's step 1,750 (phase 12's teacher, phase 13's start)
for m in phase12/p12_step250:top phase12/p12_step1000 phase12/p12_step1750 phase12/p12_step2250 phase13/p13_step250 \
        phase13/p13_step500:top phase13/p13_step1000 phase13/p13_step1250 phase13/p13_step1500 phase13/p13_step1750; do
    name=${m%:top}; name=${name#*/}
    sets="kaggle_tune500.csv:sudoku_tune500"
    [ "${m%:top}" != "$m" ] && sets="$sets top1465_tune500.txt:sudoku_top1465_tune500"
    for set in $sets; do
        python -m mi_core bench sudoku --puzzles runs/${set%%:*} --sampler sequential --threads 1 \
            --model checkpoints/sudoku_chain/${m%:top}.safetensors --json assets/benchmarks/${set#*:}_$name.json --force
        PYTHONPATH=. python scripts/studies/paired_bench.py assets/benchmarks/${set#*:}_$name.json \
            assets/benchmarks/${set#*:}_p10_step1750.json runs/${set%%:*} \
            assets/benchmarks/$(echo ${set#*:} | sed 's/tune500/tune/')_paired_${name}_vs_p10_step1750.json
    done
done

# the exact-MI decoder's probe pruning (thirty-sixth session): the first 40 Kaggle tuning puzzles at eps 0, 1e-4, 1e-3
(head -1 $DATA/kaggle_graded_dev.csv; sed -n 502,541p $DATA/kaggle_graded_dev.csv) > runs/kaggle_tune40.csv
for e in 0 1e-4 1e-3; do
    python -m mi_core bench sudoku --puzzles runs/kaggle_tune40.csv --sampler mi_exact --set gamma=0.6 --set lam=1 \
        --set eps=$e --threads 1 --json assets/benchmarks/mi_exact_eps_tune40_$e.json --force
done

# the learned order on antibodies (thirty-ninth session): train on rows 1-60, choose on 61-70, bench on 71-100 (CDR3);
# no selector ships (no learned row leads top_margin by 2 paired SEs)
python -m mi_core train-order antibody --steps-budget 2,4,8 --out runs/ab_order_selector.safetensors \
    --log runs/ab_order_log.jsonl --batch 8 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 --threads 1 --time-budget 2900
python -m mi_core bench-order antibody --rows 71-100 --region cdr3 --selector runs/ab_order_selector.safetensors \
    --budgets 2,4,8 --modes threshold,rank --gammas 0.5,1,2,4,8,16,32,64 --bf16 --threads 1 \
    --json assets/benchmarks/order_antibody_cdr3.json --markdown BENCHMARKS.md --force
python -m mi_core bench-order antibody --rows 71-100 --region cdr3 --selector runs/ab_order_selector.safetensors \
    --budgets 2,4,8 --modes threshold,rank --gammas '' --threads 1 --json assets/benchmarks/order_antibody_cdr3_fp32.json --force

# the learned order on antibodies with all six CDRs masked (fortieth session): train on rows 1-60, choose on 61-70,
# bench on 71-100; no selector ships (learned is level with top_margin or below it at T = 4, 8, 16)
python -m mi_core train-order antibody --region cdrs --steps-budget 4,8,16 --out runs/ab_cdrs_sel.safetensors \
    --log runs/ab_cdrs_log.jsonl --batch 8 --samples 4 --tau 0.1 --lr 1e-3 --eval-every 50 --threads 1 --time-budget 2900
python -m mi_core bench-order antibody --rows 71-100 --region cdrs --selector runs/ab_cdrs_sel.safetensors \
    --budgets 4,8,16 --modes threshold,rank --gammas 1,4,16 --threads 1 --json assets/benchmarks/order_antibody_cdrs.json --force
