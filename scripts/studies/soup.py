"""Average the weights of several Sudoku MDM checkpoints of one shape into one model (a uniform model soup).

    PYTHONPATH=. python scripts/studies/soup.py A.safetensors B.safetensors C.safetensors --loops 24 \\
        --out checkpoints/sudoku_chain/soup3.safetensors --chosen "how the soup was chosen"

Every weight of the output is the mean of the inputs' (in float32); their configs must agree but for the iterations
per pass and the dropout. The output's JSON is the first input's (its training record) with the iterations per pass
set to ``--loops`` and a ``soup`` field naming each input by path and sha256. An existing output is kept unless
``--force``. The soup's weights are then benchmarked like any checkpoint.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig
from mi_core.io import check_weights_output, display_path, file_sha256
from mi_core.models.base import ModelFileError, load_checked, save_model

FREE = ("loops", "dropout")  # config fields the inputs may differ in: the same weights fit either


def soup(paths: list[Path]) -> tuple[torch.nn.Module, SudokuMDMConfig]:
    """The first checkpoint's model holding the mean of every checkpoint's weights; ValueError when configs (but for
    :data:`FREE`) or shapes differ."""
    loaded = [load_checked(SudokuMDMConfig, SudokuMDM, p, "cpu", "a Sudoku MDM") for p in paths]
    model, config = loaded[0][0], loaded[0][1]
    for path, (_, other) in zip(paths[1:], loaded[1:]):
        differ = [f"{k} {getattr(other, k)}" for k in dataclasses.asdict(config) if k not in FREE
                  and getattr(other, k) != getattr(config, k)]
        if differ:
            raise ValueError(f"{path} has {', '.join(differ)}, unlike {paths[0]}: a soup averages checkpoints of one "
                             "model")
    states = [m.state_dict() for m, _ in loaded]
    for path, state in zip(paths[1:], states[1:]):
        if {k: v.shape for k, v in state.items()} != {k: v.shape for k, v in states[0].items()}:
            raise ValueError(f"{path}: its weights do not have the shapes of {paths[0]}'s")
    mean = {k: torch.stack([s[k].float() for s in states]).mean(0).to(states[0][k].dtype) for k in states[0]}
    model.load_state_dict(mean)
    return model, config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--loops", type=int, help="iterations per pass of the soup (default: the first input's)")
    parser.add_argument("--chosen", default="", help="how the soup was chosen, recorded in its JSON")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out")
    args = parser.parse_args(argv)
    if len(args.inputs) < 2:
        parser.error("give at least two checkpoints to average")
    try:
        if args.loops is not None and args.loops < 1:
            raise ValueError(f"--loops {args.loops}: give 1 or more iterations per pass")
        check_weights_output(args.out, args.force)
        model, config = soup(args.inputs)
    except (ModelFileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.loops:
        config = dataclasses.replace(config, loops=args.loops)
    record = json.loads(args.inputs[0].with_suffix(".json").read_text())
    extra = {k: v for k, v in record.items() if k not in ("config", "domain", "save_id", "curve", "soup")}
    extra["soup"] = {"about": f"the uniform average of {len(args.inputs)} checkpoints (a model soup): every weight is "
                              "their mean", "of": [{"path": display_path(p), "sha256": file_sha256(p)} for p in args.inputs],
                     **({"chosen": args.chosen} if args.chosen else {})}
    save_model(model, config, args.out, extra=extra, domain=record.get("domain"))
    print(f"wrote {display_path(args.out)}: the mean of {len(args.inputs)} checkpoints, {config.loops} iterations a pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
