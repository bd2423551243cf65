"""The ``crag`` command: a thin typer layer over the library. Data on stdout, everything else on stderr.

Every error, a mistyped flag included, is one ``crag: error: ...`` line on
stderr and exit status 1. The options that set a :class:`~crag_cli.settings.Settings`
field are generated from its declaration (:func:`setting_options`), so a flag,
its ``CRAG_*`` variable and its ``crag.toml`` key are checked the same way.

Modules: ``base`` (the app, errors, the options made from the settings),
``indexing`` (index), ``answering`` (evaluate, ask, batch), ``training`` (calibrate,
evaluator-test, train-evaluator).
"""

from . import indexing, answering, training  # noqa: F401  (their commands register on the app)
from .base import app


def run() -> None:  # console-script entry point
    app()


__all__ = ["app", "run"]
