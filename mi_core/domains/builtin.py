"""The domains that ship with MI Lens, one registry call each (loaded by :func:`mi_core.domain.load_builtin`
on the first lookup). A new domain adds its package and one line here, or calls ``register`` itself."""

from mi_core.domain import register
from mi_core.domains.antibody.domain import ANTIBODY
from mi_core.domains.oracle4 import ORACLE4
from mi_core.domains.protein.domain import PROTEIN
from mi_core.domains.sudoku.domain import SUDOKU

register(SUDOKU)
register(ORACLE4)
register(PROTEIN)
register(ANTIBODY)
