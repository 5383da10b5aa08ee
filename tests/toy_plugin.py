"""The toy domain as a plugin: ``MI_LENS_DOMAINS=toy_plugin`` (with ``tests/`` on the path) registers it in any process."""

from toy_domain import TOY

from mi_core.domain import register

register(TOY)
