"""Learned generation orders for masked diffusion by variational inference (Fox et al. 2026).

``posterior`` (Q_phi's exp-renormalised Bernoullis), ``elbo`` (rollouts, KL, RLOO, the teacher-forced
schedule likelihood), ``loop`` (the trainer's updates, validation and checkpoints), ``train`` (the command
``python -m mi_core train-order``), ``sudoku`` and ``protein`` (their data and validation). The order
networks and their features live in :mod:`mi_core.decoding.selector` and the inference side in the
``learned`` and ``learned_mi`` strategies (:mod:`mi_core.decoding.learned`); the benchmark
``python -m mi_core bench-order`` is :mod:`mi_core.bench.order`.
"""
