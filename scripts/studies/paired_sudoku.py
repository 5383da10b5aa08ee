"""Paired comparison of two Sudoku MDMs on the first 500 Kaggle dev puzzles (sequential, bf16):

    PYTHONPATH=. python scripts/studies/paired_sudoku.py MODEL_A MODEL_B

prints both accuracies, the puzzles only each solves, and the paired difference with its standard error.
"""
import csv
import json
import math
import sys

import torch

from mi_core.decoding import decode_final, make_strategy
from mi_core.domains.sudoku import to_tokens
from mi_core.domains.sudoku.mdm import load_sudoku_mdm

torch.set_num_threads(1)
rows = list(csv.DictReader(open('../shared/data/sudoku/kaggle_graded_dev.csv')))[:500]
sol = torch.tensor([[int(c) for c in r['solution']] for r in rows])
out = {}
for name, path in (("h200", sys.argv[1]), ("fine", sys.argv[2])):
    m = load_sudoku_mdm(path)
    solved = []
    for i in range(0, 500, 250):
        tok = to_tokens([r['puzzle'] for r in rows[i:i+250]])
        with torch.autocast('cpu', dtype=torch.bfloat16):
            f = decode_final(m, tok, make_strategy('sequential'))
        solved += (f.tokens == sol[i:i+250]).all(1).tolist()
    out[name] = solved
a, b = out["h200"], out["fine"]
only_a = sum(x and not y for x, y in zip(a, b))
only_b = sum(y and not x for x, y in zip(a, b))
n = 500
diff = (sum(b) - sum(a)) / n
d = [int(y) - int(x) for x, y in zip(a, b)]
mean = sum(d) / n
se = math.sqrt(sum((v - mean) ** 2 for v in d) / (n - 1) / n)
res = {"h200": sum(a) / n, "fine": sum(b) / n, "only_h200": only_a, "only_fine": only_b, "diff": diff, "paired_se": se}
print(json.dumps(res))
json.dump(res, open('assets/benchmarks/sudoku_mdm_hard_paired.json', 'w'))
