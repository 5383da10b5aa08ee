"""A domain module that registers one domain, then fails on a name a shipped domain holds (for the plugin tests)."""

import dataclasses

from toy_domain import TOY

from mi_core.domain import register

register(dataclasses.replace(TOY, key="half", names=("half",), short="half"))
register(dataclasses.replace(TOY, key="copy", names=("copy",), short="protein"))  # the app's protein button
