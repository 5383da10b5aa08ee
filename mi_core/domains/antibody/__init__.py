"""The antibody domain: one variable domain (VH or VL) at a time, read by AntiBERTy (Ruffolo, Gray and
Sulam 2021, arXiv:2112.07782), with CDRs by Kabat's definition."""
