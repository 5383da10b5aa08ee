"""The protein domain; the token API of :mod:`mi_core.domains.protein.tokens` is importable from here."""

from mi_core.domains.protein.tokens import *  # noqa: F403  (the token API: tokenize, read_fasta, MASK_ID, ...)
from mi_core.domains.protein.tokens import __all__  # noqa: F401
