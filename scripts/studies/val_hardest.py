"""Write the chained Sudoku run's validation puzzles as a CSV that `bench sudoku --puzzles` reads:

    PYTHONPATH=. python scripts/studies/val_hardest.py runs/val_hard200.csv [N]

the N (default 200) hardest puzzles by grade of `assets/sudoku_pools/val_hard.txt.gz`, in file order, with
their solutions: the same puzzles the trainer validates on (`--val-file ... --eval-puzzles N`).
"""
import sys
from pathlib import Path

import numpy as np

from mi_core.domains.sudoku.pool import read_pool_file

VAL_FILE = Path("assets/sudoku_pools/val_hard.txt.gz")


def main(out: str, n: int = 200) -> None:
    pool = read_pool_file(VAL_FILE)
    hardest = np.sort(np.argsort(-pool["grades"], kind="stable")[:n])  # as the trainer picks them
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as handle:
        handle.write("puzzle,solution\n")
        for puzzle, solution in pool["puzzles"][hardest]:
            handle.write("".join(map(str, puzzle)) + "," + "".join(map(str, solution)) + "\n")
    print(f"{out}: the {n} hardest of {len(pool['grades'])} validation puzzles")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
