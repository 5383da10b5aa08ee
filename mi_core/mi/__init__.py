"""Entropies and pairwise mutual information: exact probing and estimation."""
