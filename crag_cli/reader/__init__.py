"""Answer generation: the reader that ``--model`` names, built by its backend (``backends``).

By default a local GGUF model is read by llama.cpp's server in this process
(``engine``); ``--reader-url`` names any OpenAI-compatible server instead
(``served``). ``--model`` takes an embedded model's name (see :mod:`crag_cli.reader.models`: the
Qwen2.5-Coder 0.5B and 1.5B Instruct models, assembled once from the parts
their PyPI packages carry into the user cache directory and sha256-checked
before the first load in every process; SmolLM2-135M-Instruct, located inside
its package, which is never imported) or a path to any GGUF file.

Modules: ``base`` (the :class:`Reader` Protocol, :class:`Generation`,
:class:`ModelError`), ``embedded`` (the embedded models' files: found,
assembled, verified; :func:`resolve_model`), ``served`` (:class:`ServedReader`:
a model behind an HTTP server), ``connection`` (:class:`Connection`: the HTTP
connection to that server), ``wire`` (what crag reads of a server, bounded,
and the secrets it keeps out of what it shows), ``engine`` (:class:`EngineReader`: crag's
in-process llama.cpp server), ``template`` (the chat template's text cut into
trusted and untrusted pieces), ``backends`` (which reader runs a ``--model`` value:
:func:`backend`; :func:`~crag_cli.reader.backends.reader_backends`: the plugins' and :data:`BACKENDS`).
"""

from .base import Generation, Reader, ModelError, ReaderOptions
from .embedded import (
    LEGACY_PART_AGE,
    assemble,
    assembled_path,
    cache_dir,
    canonical_name,
    check_model,
    clean_stale_parts,
    missing_message,
    model_parts,
    packaged_path,
    resolve_model,
    sha256_file,
    smollm_path,
    verify,
)
from .backends import BACKENDS, EngineBackend, ReaderBackend, ServedBackend, backend
from .engine import EngineReader
from .served import Connection, ServedReader, defuse
from .template import PLAIN_TEMPLATE, split_rendered

__all__ = [
    "BACKENDS",
    "Connection",
    "EngineBackend",
    "EngineReader",
    "ReaderOptions",
    "ServedBackend",
    "ServedReader",
    "defuse",
    "ReaderBackend",
    "backend",
    "Generation",
    "Reader",
    "LEGACY_PART_AGE",
    "ModelError",
    "PLAIN_TEMPLATE",
    "assemble",
    "assembled_path",
    "cache_dir",
    "canonical_name",
    "check_model",
    "clean_stale_parts",
    "missing_message",
    "model_parts",
    "packaged_path",
    "resolve_model",
    "sha256_file",
    "smollm_path",
    "split_rendered",
    "verify",
]
