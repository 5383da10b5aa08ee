"""The protein domain: tokens and FASTA, the protein MDM and the ESM-C adapter, estimator states, generation,
the composition metric and the order trainer's task. The token API (:mod:`mi_core.domains.protein.tokens`)
is importable from the package itself; the domain object is :data:`mi_core.domains.protein.domain.PROTEIN`.
"""

from mi_core.domains.protein.tokens import *  # noqa: F403  (the token API: tokenize, read_fasta, MASK_ID, ...)
from mi_core.domains.protein.tokens import __all__  # noqa: F401
