"""Learned generation orders for masked diffusion by variational inference (Fox et al. 2026).

The order networks live in :mod:`mi_core.decoding.selector`, inference in :mod:`mi_core.decoding.learned`.
"""
