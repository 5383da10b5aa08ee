"""``python -m mi_core probe DOMAIN --state STRING [--eps E] --json OUT``: exact pairwise MI of one state.

``python -m mi_core probe sudoku --puzzle STRING`` (``--puzzle`` and ``--state`` are the same option on a grid)

The state is read by the domain (``Domain.parse_input``: a Sudoku state may have several solutions, it is
a state to probe, not a puzzle to solve, but must not conflict) and probed with the domain's model
(``--model``, default its shipped one).

A domain that reads its probe input otherwise brings its own options and run (``Domain.probe_command``:
``add_arguments(parser, domain)`` and ``run(args, domain)``), e.g. ``probe protein --sequence TEXT``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domain import Domain, add_domain_parsers, get_domain
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.probe import ProbeResult, probe
from mi_core.models.loading import load_model_described
from mi_core.options import ArgumentParser, add_force


def common_options(parser: argparse.ArgumentParser, max_batch: int) -> None:
    parser.add_argument("--eps", type=float, default=0.0, help="skip values below this probability (0: exact)")
    parser.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--max-batch", type=int, default=max_batch, help="most sequences per forward pass")
    parser.add_argument("--bf16", action="store_true", help="forward passes under bf16 autocast")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_force(parser)


def state_options(parser: argparse.ArgumentParser, domain: Domain) -> None:
    """A domain probed on one state given as text (a Sudoku grid, or a toy domain's positions)."""
    flag = ("--puzzle", "--state") if domain.layout == "grid" else ("--state",)
    parser.add_argument(*flag, dest="state", required=True,
                        help="grid string, row by row, '.' or '0' for blanks" if domain.layout == "grid"
                        else f"the state, one character a position, {domain.mask_char} for masked")
    default = domain.default_file("model")
    parser.add_argument("--model", default=default,
                        help="weights (.safetensors + .json)" if default else "the model (built in: leave unset)")
    common_options(parser, 512)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m mi_core probe", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(parser, lambda sub, d: d.probe_command.add_arguments(sub, d) if d.probe_command else
                       state_options(sub, d))
    return parser


def load_state(domain: Domain, text: str, model_spec: str | None, device: torch.device):
    """``(model, description, tokens (N,))``; raises a ValueError naming bad input or a bad model file."""
    tokens = domain.parse_input(text)
    model, description = load_model_described(model_spec, device, domain)
    model.check_length(len(tokens), f"the model {model_spec}")
    return model, description, torch.tensor(tokens, device=device)


def run_probe(model, tokens: torch.Tensor, args) -> ProbeResult:
    """:func:`probe` of ``tokens`` ``(N,)`` with the command's options; a tqdm bar on stderr, opened at the
    first report."""
    from tqdm import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="pass", file=sys.stderr, disable=args.no_progress, leave=False)
        bar.update(done - bar.n)

    try:
        return probe(model, tokens, eps=args.eps, max_batch=args.max_batch, progress=update, autocast=args.bf16)
    finally:
        if bar is not None:
            bar.close()


def summary(result: ProbeResult, first: int = 0, unit: str = "positions") -> str:
    """A few lines for the terminal: cost, strongest pair (numbered from ``first``), diagnostics."""
    i, j = divmod(int(result.mi.argmax()), result.mi.shape[0])
    return "\n".join([
        f"probed {int(result.probed.sum())} masked {unit}: {result.passes} passes in {result.seconds:.2f} s",
        f"largest MI {float(result.mi[i, j]):.4g} nats between {unit} {i + first} and {j + first}",
        f"max asymmetry |I(i->j) - I(j->i)| {float(result.asymmetry.max()):.3g}; "
        f"max gap to the paper form {float(result.form_gap.max()):.3g}",
        f"eps {result.eps:g}: error bound {float(result.error_bound.max()):.3g} nats"])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_output(args.json, args.force)
    domain = get_domain(args.domain)
    if domain.probe_command is not None:
        return domain.probe_command.run(args, domain)
    device = pick_device(args.device)
    warn_if_slow_bf16(device, args.bf16)
    model, description, tokens = load_state(domain, args.state, args.model, device)
    result = run_probe(model, tokens, args)
    if args.json is not None:
        payload = {"domain": domain.cli_name, "puzzle": domain.state_text(tokens.cpu()), "device": str(device),
                   "model": None if args.model is None else display_path(args.model), "eps": args.eps,
                   **result.to_json_dict()}
        atomic_write_json(args.json, payload, indent=None)
    print(summary(result))
    return 0
