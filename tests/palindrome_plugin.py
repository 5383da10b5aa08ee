"""The palindrome domain as a plugin: ``MI_LENS_DOMAINS=palindrome_plugin`` (with ``tests/`` on the path)."""

from palindrome_domain import PALINDROME

from mi_core.domain import register

register(PALINDROME)
