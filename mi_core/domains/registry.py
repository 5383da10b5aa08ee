"""The domains MI Lens knows: Sudoku 9x9 (a trained MDM), the exact 4x4 Sudoku oracle, proteins and antibodies.

Every command, benchmark and app page looks a domain up here (:func:`get_domain`, by key or by a name the
command line accepts) and reads what it needs from the :class:`~mi_core.domains.base.Domain`. A new domain
registers itself with :func:`register` from its own module; nothing else in the core changes.
"""

from __future__ import annotations

import argparse

from mi_core.domains.antibody.domain import AntibodyDomain
from mi_core.domains.base import Domain
from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, PAD_ID, ProteinDomain
from mi_core.domains.sudoku import SUDOKU4, SUDOKU9, GridDomain, digits
from mi_core.options import ArgumentParser

DOMAINS: dict[str, Domain] = {}


def register(domain: Domain, *, replace: bool = False) -> Domain:
    """Add ``domain`` under its key (and its command-line names).

    Raises:
        ValueError: the key or one of its names is taken (unless ``replace``).
    """
    taken = {n for d in DOMAINS.values() if d.key != domain.key or not replace for n in (d.key, *d.names)}
    clash = sorted({domain.key, *domain.names} & taken)
    if clash:
        raise ValueError(f"domain name {clash[0]!r} is already registered")
    DOMAINS[domain.key] = domain
    return domain


def unregister(key: str) -> None:
    DOMAINS.pop(key, None)


def get_domain(name: str) -> Domain:
    """The domain with key or command-line name ``name``.

    Raises:
        ValueError: no such domain, naming the ones there are.
    """
    for domain in DOMAINS.values():
        if name == domain.key or name in domain.names:
            return domain
    raise ValueError(f"unknown domain {name!r}; choose one of {', '.join(cli_names())}")


def cli_names() -> list[str]:
    """The name each registered domain goes by on the command line."""
    return [d.cli_name for d in DOMAINS.values()]


def add_domain_parsers(parser: argparse.ArgumentParser, options, needs: str | None = None, when=None) -> None:
    """A subcommand per registered domain (``dest="domain"``, its registry key), each with the options
    ``options(subparser, domain)`` adds, so ``COMMAND DOMAIN --help`` lists that domain's own options.
    ``needs``: only domains that have this part (``states``, ``metric``, ...); ``when(domain)``: only the
    domains a command can serve."""
    subs = parser.add_subparsers(dest="domain", metavar="DOMAIN", required=True, parser_class=ArgumentParser)
    for domain in DOMAINS.values():
        if (needs is not None and getattr(domain, needs, None) is None) or (when is not None and not when(domain)):
            continue
        name, *aliases = domain.names or (domain.key,)
        sub = subs.add_parser(name, aliases=aliases, help=domain.label, description=domain.label)
        sub.set_defaults(domain=domain.key)
        options(sub, domain)


register(GridDomain(
    "sudoku9", "Sudoku 9x9 (trained MDM)", "9x9", digits(SUDOKU9), names=("sudoku", "sudoku9"), geometry=SUDOKU9,
    # the hard-data model (8 layers) and the estimator and selector trained on it; the first model
    # (assets/sudoku_mdm.safetensors, 6 layers) and its estimator and selectors stay for comparison
    model_env="MI_LENS_SUDOKU_MODEL", model_default="assets/sudoku_mdm_hard.safetensors",
    estimator_env="MI_LENS_SUDOKU_ESTIMATOR", estimator_default="assets/sudoku_mi_estimator_hard.safetensors",
    selector_env="MI_LENS_SUDOKU_SELECTOR", selector_default="assets/sudoku_order_selector_hard.safetensors",
    model_loader="mi_core.models.loading:load_sudoku", states="mi_core.decoding.sudoku_states:SudokuStates",
    metric="mi_core.bench.metrics:SolvedMetric", order_task="mi_core.order.sudoku", trainer="mi_core.train.sudoku_mdm:SudokuTask",
))
register(GridDomain(
    "sudoku4", "Sudoku 4x4 (exact oracle)", "4x4", digits(SUDOKU4), names=("oracle4", "sudoku4"), geometry=SUDOKU4,
    exact_model=True, fallback_eps=0.0, clue_range=(4, 12), require_unique=False,
    model_loader="mi_core.models.loading:load_oracle4", metric="mi_core.bench.metrics:SolvedMetric",
))
register(ProteinDomain(
    "protein", "Protein", "protein", tuple(AMINO_ACIDS), names=("protein",), mask_id=MASK_ID, pad_id=PAD_ID,
    model_env="MI_LENS_PROTEIN_MODEL", model_default="auto", model_fallback="assets/protein_mdm.safetensors",
    stamp_envs=("MI_LENS_ESMC_WEIGHTS",),
    estimator_env="MI_LENS_PROTEIN_ESTIMATOR", estimator_default="assets/protein_mi_estimator.safetensors",
    selector_env="MI_LENS_PROTEIN_SELECTOR", selector_default="assets/protein_order_selector.safetensors",
    probe_fallback=True, model_loader="mi_core.models.loading:load_protein",
    states="mi_core.decoding.protein_states:ProteinStates", metric="mi_core.bench.metrics:CompositionMetric",
    order_task="mi_core.order.protein", trainer="mi_core.train.protein_mdm:ProteinTask",
    bench_inputs="mi_core.bench.protein:GeneratedSequences",
))
register(AntibodyDomain(
    "antibody", "Antibody (AntiBERTy)", "antibody", tuple(AMINO_ACIDS), names=("antibody",), mask_id=MASK_ID,
    pad_id=PAD_ID, model_env="MI_LENS_ANTIBODY_MODEL", model_default="auto",
    estimator_env="MI_LENS_ANTIBODY_ESTIMATOR", estimator_default="assets/antibody_mi_estimator.safetensors",
    probe_fallback=True, model_loader="mi_core.domains.antibody.model:load",
    states="mi_core.domains.antibody.states:AntibodyStates", metric="mi_core.domains.antibody.infill:RecoveryMetric",
    bench_inputs="mi_core.domains.antibody.infill:CDRInfill", model_eval="mi_core.domains.antibody.evaluate:ModelEval",
))
