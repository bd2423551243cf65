"""The llama.cpp backend: a GGUF chat model run by llama-cpp-python, its prompt tokenized safely."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..models import DEFAULT_MODEL
from .base import Generation, ModelError
from .embedded import canonical_name, resolve_model


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
        self._specials: list[str] | None = None
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
        if self._specials is None:
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

        steps = [0]

        def count_steps(input_ids, scores):  # called once per sampled token
            steps[0] += 1
            return scores

        stream = self._llm.create_completion(
            tokens,
            max_tokens=max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            stop=[self._eos] if self._eos else [],
            stopping_criteria=response.stopping_criteria,
            stream=True,
            logits_processor=LogitsProcessorList([count_steps]),
        )
        pieces: list[str] = []
        for chunk in stream:
            piece = chunk["choices"][0]["text"]
            if piece:
                pieces.append(piece)
                if on_token is not None:
                    on_token(piece)
        return Generation("".join(pieces), len(tokens), steps[0])


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
