"""Step budgets T that fit the states a domain decodes.

A budget T unmasks every masked position within T passes (``steps=T``: :func:`~mi_core.decoding.base.uniform_count`
takes ``ceil(masked / steps left)`` a pass). On states of at most ``n`` positions, a budget ``T >= n`` lets every
state be decoded one position a pass, so it limits nothing and leaves the order nothing to trade; ``T = 1`` fills
everything at once and leaves it nothing to choose. The defaults of ``train-order`` and ``bench-order`` are those a
domain's order task declares (its ``budgets``), else :func:`derived_budgets` of the states' positions.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import numpy as np

from mi_core.decoding.base import MAX_COUNT

SIXTEENTHS = (1, 2, 3, 4)  # T = k n / 16: a fully masked state unmasked about 16, 8, 5 and 4 positions a pass


def derived_budgets(positions: int) -> tuple[int, ...]:
    """The budgets for states of up to ``positions`` (n) positions: ``round(k n / 16)`` for k = 1..4, each at least
    ``k + 1`` (so a short state keeps distinct budgets) and below n; ``(1,)`` where none is (n <= 2).

    81 positions give 5, 10, 15, 20; 16 give 2, 3, 4, 5; 6 give 2, 3, 4, 5; 3 give 2."""
    budgets = tuple(t for k in SIXTEENTHS if (t := max(k + 1, round(k * positions / 16))) < positions)
    return budgets or (1,)


def declared_budgets(domain) -> tuple[int, ...]:
    """The budgets ``domain``'s order task declares (its ``budgets``; empty where it has none or declares none);
    ValueError naming the domain where one is not an integer >= 1 (a registered domain's were checked as it
    registered). One above MAX_COUNT is left to the option it defaults (``--budgets``, ``--steps-budget``), which
    names it for this domain alone: raised here, it would fail the parser of every domain's command."""
    budgets = tuple(getattr(domain.order_task, "budgets", ()) or ())
    if any(isinstance(t, bool) or not isinstance(t, int) or t < 1 for t in budgets):
        raise ValueError(f"domain {domain.key}: its order task's budgets {budgets!r} must be integers in "
                         f"1..{MAX_COUNT}")
    return budgets


def default_budgets(domain) -> tuple[int, ...] | None:
    """The budgets T ``train-order`` and ``bench-order`` take for ``domain`` when none are given: declared, else
    derived from its fixed length; None where its length varies (then derived from the states at run time)."""
    declared = declared_budgets(domain)
    if declared:
        return declared
    return derived_budgets(domain.length) if domain.length else None


# a budget T is T passes to fill an input's masked positions: n counts those, not the input's length
FILLED = "the input with the most positions to fill (its masked ones)"


def positions_to_fill(templates, mask_id: int) -> int | None:
    """The most masked positions (``mask_id``) of one of ``templates`` (token ids ``(L,)`` each): the n that budgets
    are derived from and checked against; None where there are no templates."""
    return max((int((np.asarray(t) == mask_id).sum()) for t in templates), default=None)


def budgets_text(budgets: Sequence[int] | None) -> str | None:
    """``"5,10"`` as a command line gives them (None stays None)."""
    return None if budgets is None else ",".join(map(str, budgets))


def fit_budgets(budgets: Sequence[int] | None, positions: int | None, flag: str, what: str,
                say: Callable[[str], object] = lambda m: print(m, file=sys.stderr)) -> tuple[int, ...]:
    """``budgets``, or where None :func:`derived_budgets` of ``positions`` (said: ``flag`` unset); ``say`` a note
    naming the given budgets at or above ``positions``, the positions of ``what`` (``"the longest input"``), where
    they limit nothing. ValueError when neither budgets nor positions are known."""
    if budgets is None:
        if positions is None:
            raise ValueError(f"{flag}: the positions of {what} are not known here, so no budgets can be derived: give "
                             f"{flag} T1,T2,...")
        derived = derived_budgets(positions)
        say(f"note: {flag} unset: budgets T = {budgets_text(derived)}, derived from the {positions} positions of "
            f"{what} (round(k n / 16), k = 1..4, below n)")
        return derived
    over = [t for t in budgets if positions is not None and t >= positions]
    if over:
        say(f"note: {flag} {budgets_text(over)}: {what} has {positions} positions, so at T >= {positions} every state "
            f"can be decoded one position a pass and the budget limits nothing (budgets below {positions} do)")
    return tuple(budgets)
