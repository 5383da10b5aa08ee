"""``python -m mi_core probe DOMAIN --state STRING [--eps E] --json OUT``: exact pairwise MI of one state.

``python -m mi_core probe sudoku --puzzle STRING`` (``--puzzle`` and ``--state`` are the same option on a grid)

The state is read by the domain (``Domain.parse_input``: a Sudoku state may have several solutions but must
have one, its givens not in conflict) and probed with ``--model`` (default the domain's shipped one). A domain that reads its probe
input otherwise brings its own options and run (``Domain.probe_command``), e.g. ``probe protein --sequence``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import torch

from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domain import Domain, get_domain
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.probe import ProbeResult, probe
from mi_core.models.loading import load_model_described
from mi_core.options import Device, Force, JsonOut, counted, option, plural, under_one


@dataclass
class ProbeOptions:
    eps: float = option(0.0, "skip values below this probability (0: exact; under 1)", range=(0, 1), check=under_one)
    max_batch: int = option(512, "most sequences per forward pass", range=(1, 65_536))
    bf16: bool = option(False, "forward passes under bf16 autocast")
    no_progress: bool = option(False, "no progress bar on stderr")


@dataclass
class GridState:
    state: str = option(None, "grid string, row by row, '.' or '0' for blanks", flags=("--puzzle", "--state"),
                        required=True)
    model: str | None = option(None, "weights (.safetensors + .json)", default_for=lambda d: d.default_file("model"))


@dataclass
class TextState:
    state: str = option(None, "the state, one character a position, _ for masked", required=True)
    model: str | None = option(None, "weights file (unset: the domain's own model)",
                               default_for=lambda d: d.default_file("model"))


COMMON = [ProbeOptions, JsonOut, Device, Force]


def describe(domain: Domain) -> str:
    return (domain.probe_command or sys.modules[__name__]).__doc__


def options(domain: Domain) -> list:
    if domain.probe_command is not None:
        return domain.probe_command.options(domain)
    return [GridState if domain.layout == "grid" else TextState, *COMMON]


def mask_marks(domain: Domain) -> list[str]:
    """The characters that mark a masked position in ``domain``'s states (a sequence's are tried one by one)."""
    if domain.layout == "grid":  # a grid's state is read whole: its own mark and the dot
        return list(dict.fromkeys((domain.mask_char, ".")))

    def masks(ch: str) -> bool:
        try:
            return list(domain.parse_input(ch)) == [domain.mask_id]
        except ValueError:
            return False

    return [ch for ch in dict.fromkeys((domain.mask_char, ".", "X")) if masks(ch)] or [domain.mask_char]


def state_key(domain: Domain) -> str:
    """The JSON key of the state a command read: ``"puzzle"`` on a grid, else ``"sequence"``."""
    return "puzzle" if domain.layout == "grid" else "sequence"


def load_state(domain: Domain, text: str, model_spec: str | None, device: torch.device, verb: str = "probe",
               other: str = ""):
    """``(model, description, tokens (N,))``; a ValueError names bad input or a bad model file (``other``: another
    way to mask, said when nothing is)."""
    tokens = domain.parse_input(text)
    if domain.mask_id not in tokens:
        marks = " or ".join(mask_marks(domain))
        raise ValueError(f"nothing to {verb}: the state has no masked position (write {marks} where one is{other})")
    model, description = load_model_described(model_spec, device, domain)
    model.check_length(len(tokens), f"the model {model_spec}" if model_spec not in (None, "auto") else "the model",
                       plural(domain.nouns[0]))  # 'auto' is no name: it read "longer than the 256 the model auto takes"
    return model, description, torch.tensor(tokens, device=device)


def run_probe(model, tokens: torch.Tensor, args) -> ProbeResult:
    """:func:`probe` of ``tokens`` ``(N,)`` with the command's options and a progress bar on stderr."""
    from tqdm import tqdm

    first: tuple[int, float] | None = None  # passes done and the clock at the first report (the unperturbed pass)
    noted = False
    # shown from half a second on, when the total is known (a bar without one printed "0pass [00:00, ?pass/s]")
    with tqdm(unit="pass", file=sys.stderr, disable=args.no_progress, leave=False, delay=0.5) as bar:

        def update(done: int, total: int) -> None:
            nonlocal first, noted
            if first is None:
                first = (done, time.perf_counter())
            elif not noted:  # the first batch of perturbations: its pace says what the rest costs
                cost_note(total, done, done - first[0], time.perf_counter() - first[1], tqdm.write)
                noted = True
            bar.total = total
            bar.update(done - bar.n)

        return probe(model, tokens, eps=args.eps, max_batch=args.max_batch, progress=update, autocast=args.bf16)


def cost_note(total: int, done: int, timed: int, seconds: float, write) -> None:
    """``write`` a note to stderr when the ``total - done`` passes left, at the pace of ``timed`` passes in
    ``seconds``, take a minute or more."""
    left = seconds * (total - done) / max(timed, 1)
    if left >= 60:
        write(f"note: this probe runs {total:,} passes, about {left / 60:.0f} min more at this pace (Ctrl-C stops "
              "it; the estimate command reads the MI matrix from an estimator in one pass)", file=sys.stderr)


def summary(result: ProbeResult, domain: Domain) -> str:
    """A few lines for the terminal: cost, strongest pair (:func:`strongest_pair`), diagnostics."""
    return "\n".join([
        f"probed {counted(int(result.probed.sum()), domain.nouns[0], 'masked')}: {result.passes} passes in "
        f"{result.seconds:.2f} s",
        strongest_pair(result.mi, domain, int(result.probed.sum())),
        f"max asymmetry |I(i->j) - I(j->i)| {float(result.asymmetry.max()):.3g}; "
        f"max gap to the paper form {float(result.form_gap.max()):.3g}",
        f"eps {result.eps:g}: error bound {float(result.error_bound.max()):.3g} nats"])


def strongest_pair(mi: torch.Tensor, domain: Domain, masked: int) -> str:
    """The line naming the largest MI of ``mi`` ``(N, N)`` (``masked`` positions masked) and its pair, each by
    ``Domain.cell_label`` (what every command and the app call a position: 1-based, or ``r1c2`` on a grid)."""
    if masked < 2:  # a pair needs two
        return f"no pair to measure: MI needs two masked {plural(domain.nouns[0])}, and this state has {masked}"
    if not bool((mi > 0).any()):  # none that depend: argmax would name a cell twice
        return f"every MI is 0: no two masked {plural(domain.nouns[0])} depend on each other"
    i, j = divmod(int(mi.argmax()), mi.shape[0])
    return (f"largest MI {float(mi[i, j]):.4g} nats between {plural(domain.nouns[0])} {domain.cell_label(i)} and "
            f"{domain.cell_label(j)}")


def main(args) -> int:
    check_output(args.json, args.force)
    domain = get_domain(args.domain)
    if domain.probe_command is not None:
        return domain.probe_command.run(args, domain)
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model, description, tokens = load_state(domain, args.state, args.model, device)
    result = run_probe(model, tokens, args)
    if args.json is not None:
        payload = {"domain": domain.cli_name, state_key(domain): domain.state_text(tokens.cpu()), "device": str(device),
                   "model": None if args.model is None else display_path(args.model), "eps": args.eps,
                   **result.to_json_dict()}
        atomic_write_json(args.json, payload, indent=None)
    print(summary(result, domain))
    return 0
