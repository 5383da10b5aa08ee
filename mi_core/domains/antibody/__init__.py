"""The antibody domain: one variable domain (VH or VL) at a time, read by AntiBERTy (Ruffolo, Gray and
Sulam 2021, arXiv:2112.07782), with CDRs by Kabat's definition.

``sequence`` (parsing, the variable-domain check, CDRs) and ``domain`` (the registered Domain) are pure and
sit with the other domain modules; ``model`` (AntiBERTy in plain torch), ``states`` (estimator data),
``infill`` (CDR in-filling benchmark) and ``evaluate`` (masked-residue perplexity) use the engine layers
and are reached from the registry only by ``"module:attribute"`` references.
"""
