"""Learned generation orders for masked diffusion by variational inference (Fox et al. 2026).

``posterior`` (Q_phi's exp-renormalised Bernoullis), ``selector`` (the order networks and features),
``elbo`` (rollouts, KL, RLOO, the teacher-forced schedule likelihood), ``train`` (the trainer behind
``python -m mi_core train-order``), ``sudoku`` and ``protein`` (their data and validation) and ``bench``
(``python -m mi_core bench-order``). The inference side is the ``learned`` and ``learned_mi`` strategies
in :mod:`mi_core.decoding.learned`.
"""
