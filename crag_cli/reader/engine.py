"""crag's default reader: llama.cpp's own server in this process (xllamacpp, a prebuilt wheel), spoken to like any
other llama.cpp server (:mod:`crag_cli.reader.served`).

The server listens on a loopback port the system picks, behind an API key made for this process, and lives as
long as the process. Its slots (``parallel``) answer that many questions at once over one copy of the model;
each slot has the whole ``n_ctx``. ``gpu_layers`` layers go to a GPU when the wheel is a GPU build and finds one.
"""

from __future__ import annotations

import os
import secrets
import threading

from .base import ModelError, ReaderOptions
from .embedded import canonical_name, resolve_model
from .served import Connection, ServedReader


class Engine:
    """llama.cpp's server over one GGUF file, started on first use (:meth:`connection`) and shared."""

    def __init__(self, model: str, n_ctx: int, parallel: int, threads: int | None, gpu_layers: int) -> None:
        self.model, self.n_ctx, self.parallel, self.threads, self.gpu_layers = (
            model,
            n_ctx,
            parallel,
            threads,
            gpu_layers,
        )
        self._server = None
        self._connection: Connection | None = None
        self._lock = threading.Lock()

    def connection(self) -> Connection:
        """The connection to the running server (started now if it is not)."""
        with self._lock:
            if self._connection is None:
                self._connection = self._start()
            return self._connection

    def _start(self) -> Connection:
        path = resolve_model(self.model)  # an embedded model is assembled and checked first
        try:
            import xllamacpp
        except ImportError:
            raise ModelError("the reader engine is not installed: pip install xllamacpp") from None
        key = secrets.token_urlsafe(24)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = self.parallel
        params.n_ctx = self.n_ctx * self.parallel  # every slot gets the whole window
        params.kv_unified = False
        params.n_gpu_layers = self.gpu_layers
        threads = self.threads or os.cpu_count() or 1
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        params.port = 0  # the system picks a free one
        params.hostnames = ["127.0.0.1"]
        params.api_keys = [key]
        params.verbosity = -1  # llama.cpp's log stays quiet; crag says what matters
        params.warmup = False
        params.ctx_shift = False  # a prompt too long is an error, never silently cut
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises RuntimeError or its own types for a file it cannot load
            raise ModelError(f"cannot load model {path}: {exc}") from None
        return Connection(self._server.listening_address, api_key=key)


class EngineReader(ServedReader):
    """A GGUF model (an embedded name or a path) read by crag's in-process llama.cpp server (:class:`Engine`).

    Forks share the engine: a second prompt family (the query rewriter's) gets a slot of its own where the
    engine has one, so its prompt cache does not evict the answer prompt's.
    """

    in_process = True

    def __init__(self, model: str, options: ReaderOptions) -> None:
        o = options
        self.engine = Engine(model, o.n_ctx, o.parallel, o.threads, o.gpu_layers)
        name, timeout = canonical_name(model), o.reader_timeout
        super().__init__(None, model, o.n_ctx, o.temperature, o.seed, name=name, answer_timeout=timeout)  # type: ignore[arg-type]

    def _connection(self) -> Connection:
        return self.engine.connection()

    @property
    def n_ctx(self) -> int:
        return self._n_ctx  # each of the engine's slots holds the whole window (forks ask for less)

    @property
    def model_path(self):
        """The GGUF file read (resolved on the first load)."""
        return resolve_model(self.engine.model)
