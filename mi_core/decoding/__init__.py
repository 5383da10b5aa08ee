"""One decode loop (a generator of frames) and a registry of strategies that pick positions to unmask."""

from mi_core.decoding import learned as _learned  # noqa: F401  (registers learned)
from mi_core.decoding import strategies as _strategies  # noqa: F401  (registers the dependency-blind strategies)
from mi_core.decoding.base import STRATEGIES, FixedCount, Strategy, make_strategy, register, strategy_params
from mi_core.decoding.loop import Frame, StepContext, decode, decode_final
from mi_core.decoding.mi_guided import estimator_mi_fn, mi_greedy  # also registers mi and mi_exact

__all__ = ["STRATEGIES", "FixedCount", "Frame", "StepContext", "Strategy", "decode", "decode_final", "estimator_mi_fn",
           "make_strategy", "mi_greedy", "register", "strategy_params"]
