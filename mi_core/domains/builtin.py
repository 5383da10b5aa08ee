"""The domains that ship with MI Lens (loaded by :func:`mi_core.domain.load_builtin` on the first lookup)."""

from mi_core.domain import register
from mi_core.domains.antibody.domain import ANTIBODY
from mi_core.domains.oracle4 import ORACLE4
from mi_core.domains.protein.domain import PROTEIN
from mi_core.domains.sudoku.domain import SUDOKU

for domain in (SUDOKU, ORACLE4, PROTEIN, ANTIBODY):  # in the order the command line lists them
    register(domain)
