"""``python -m mi_core train sudoku [options]``: train the Sudoku MDM (see ``mi_core.train.sudoku_mdm``)."""

from __future__ import annotations

TRAINERS = {"sudoku": "mi_core.train.sudoku_mdm", "protein": "mi_core.train.protein_mdm"}


def main(argv: list[str] | None = None) -> int:
    import importlib

    argv = list(argv or [])
    if argv[:1] in (["-h"], ["--help"]):
        print("usage: python -m mi_core train {" + ",".join(TRAINERS) + "} [options]\n\n"
              "Train a masked diffusion model; 'train DOMAIN --help' lists its options. Weights go to\n"
              "runs/<domain>_mdm_<time>.safetensors unless --out is given; --force overwrites an existing file.")
        return 0
    if not argv or argv[0] not in TRAINERS:
        raise ValueError(f"train expects a domain first, one of {', '.join(TRAINERS)}; e.g. train sudoku --help")
    importlib.import_module(TRAINERS[argv[0]]).main(argv[1:])
    return 0
