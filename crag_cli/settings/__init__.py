"""Settings: one declaration each, read from flags > ``CRAG_*`` environment variables > ``crag.toml`` > defaults.

Every setting is one field of :class:`Settings`: its type, allowed range or
choices, default, help text, the stage that uses it (its group) and whether it
changes answers (what ``--resume`` compares). From that one declaration follow

* the command-line option (``--top-k``; :func:`crag_cli.cli` generates it),
* the environment variable (``CRAG_TOP_K``),
* the config-file key (``top_k = 5`` in ``crag.toml``, optionally under ``[crag]``),
* the validation, which is the same whichever of the four places a value came
  from: a bad value is one error that names the setting, the value and where it
  came from.

Types, ranges and choices are checked by pydantic; :mod:`crag_cli.settings.layers` reads the four layers (one
``TypeAdapter`` per field, so that an error names the layer its value came from) and merges them;
:mod:`crag_cli.settings.info` reads the declarations back (groups, options, help lines, the docs table).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator

from ..action.trigger import PRESETS
from ..evaluator.base import PRECISIONS
from ..reader.backends import ReaderBackend, backend
from ..reader.wire import url_problem
from ..index.dense import RETRIEVALS
from ..reader.models import DEFAULT_MODEL, EMBEDDED
from ..reader.prompts import TASK_CHOICES
from ..action.refine import RANKINGS, STRIP_MODES
from ..web.rewrite import REWRITES
from .declare import SettingsError, setting

WEB_BACKENDS = ("none", "ddgs", "searxng")


class Settings(BaseModel):
    """Everything a run of crag can be told. ``None`` means "the evaluator's / task's own default"."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False, frozen=False)

    index: Path = setting(Path(".crag-index"), "Index directory.", "index", answers=True, everyday=True)
    top_k: int = setting(
        10, "Passages to retrieve.", "retrieval", ("-k", "--top-k"), answers=True, everyday=True, ge=1, le=1000
    )
    retrieval: Literal[RETRIEVALS] = setting(  # type: ignore[valid-type]
        "fused",
        "Retriever: fused (BM25 and the dense part), bm25 or dense.",
        "retrieval",
        answers=True,
        why="fused: reciprocal rank over BM25's and the dense part's top 50 (crag index embeds every passage); an "
        "index made with --no-dense is searched by BM25 alone (docs/benchmarks.md).",
    )
    evaluator: str = setting(
        "minilm",
        "Retrieval evaluator: minilm, minilm:PATH or PATH, t5:PATH, minilm-cosine.",
        "evaluator",
        answers=True,
        everyday=True,
        why="minilm is the embedded, trained evaluator; minilm:PATH or PATH one made by `crag train-evaluator`; "
        "t5:PATH the paper's T5 evaluator; minilm-cosine the untrained cosine, for comparison.",
    )
    batch_size: int = setting(
        10,
        "Evaluator pairs per forward pass (float; int8 scores one at a time).",
        "evaluator",
        answers=False,
        ge=1,
        le=4096,
    )
    max_length: int = setting(
        512,
        "Evaluator input tokens kept per pair.",
        "evaluator",
        answers=True,
        why="MiniLM stops at 256, its training length.",
        ge=16,
        le=512,
    )
    evaluator_precision: Literal[PRECISIONS] = setting(  # type: ignore[valid-type]
        "float",
        "Evaluator arithmetic: float, or int8 (faster on a CPU, scores a few hundredths off).",
        "evaluator",
        answers=True,
        why="int8 quantizes the evaluator's linear layers (PyTorch dynamic quantization, per channel), one pair a "
        "pass: less of a question's time, scores a few hundredths off (what that cost held out: "
        "docs/benchmarks.md). float: the scores as trained and calibrated.",
    )
    preset: Optional[Literal[tuple(PRESETS)]] = setting(  # type: ignore[valid-type]
        None, f"Paper thresholds for the T5 evaluator: {', '.join(PRESETS)}.", "thresholds", answers=True
    )
    upper: Optional[float] = setting(
        None, "Upper threshold: Correct if any score >= it.", "thresholds", answers=True, ge=-1, le=1
    )
    lower: Optional[float] = setting(
        None, "Lower threshold: Incorrect if all scores < it.", "thresholds", answers=True, ge=-1, le=1
    )
    filter_threshold: Optional[float] = setting(
        None,
        "Strips, and the passages of an Ambiguous question, scoring below it are dropped.",
        "thresholds",
        answers=True,
        ge=-1,
        le=1,
    )
    lexical_support: float = setting(
        0.5,
        "Share of the question's term weight that makes a passage supported; 1: off.",
        "action",
        answers=True,
        why="A retrieved passage that scores at least the filter threshold and holds more than this share of the "
        "question's term weight (IDF) is supported by its words. Retrieval with a supported passage is not judged "
        "Incorrect (Ambiguous instead: its passages are read first, beside the web's), and Correct keeps a "
        "supported passage. 1: off (the paper's evaluator-only rule).",
        ge=0,
        le=1,
    )
    domain_guard: bool = setting(
        True,
        "Correct by score only in the evaluator's domain; --any-domain: paper's rule.",
        "action",
        ("--domain-guard/--any-domain",),
        answers=True,
        why="Judge Correct by the evaluator's scores only questions like those it was trained on (an evaluator that "
        "stores its domain, as the embedded one does): a question unlike all of them is Ambiguous instead (its "
        "passages read first, beside the web's), because the evaluator's sureness does not carry to another kind "
        "of question; it is Correct only by combined evidence (--evidence).",
    )
    evidence: bool = setting(
        False,
        "Out of the evaluator's domain, Correct by its logit, BM25 support and rank.",
        "action",
        answers=True,
        why="With --domain-guard, a question out of the evaluator's domain is Correct when the combination of the "
        "evaluator's raw logit, a passage's lexical support and its rank stored with the evaluator (fitted on "
        "PopQA and SQuAD) reaches its threshold for one of the passages; otherwise never (the default: held "
        "out, it read fewer prompt tokens but lost token F1; docs/benchmarks.md). An evaluator that stores none "
        "never judges such a question Correct.",
    )
    strip_mode: Literal[STRIP_MODES] = setting(  # type: ignore[valid-type]
        "excerption",
        "How web pages (and, with --refine, passages) are cut into strips.",
        "refine",
        answers=True,
    )
    strips: int = setting(
        5,
        "Most web strips read when the web is read alone (Incorrect, or it leads).",
        "refine",
        answers=True,
        why="The web's strongest strips (--ranking) within --knowledge-words; Ambiguous reads its passages by "
        "--read-words.",
        ge=1,
        le=100,
    )
    strips_correct: int = setting(
        3,
        "Strips kept when the action is Correct, the evaluator sure.",
        "refine",
        answers=True,
        why="Fewer distractors (the first kept passages in retrieval order, within --knowledge-words).",
        ge=1,
        le=100,
    )
    refine: bool = setting(
        False,
        "Cut the retrieved passages into strips too (web pages always are).",
        "refine",
        answers=True,
        why="Off: each kept passage is one strip, whole (a passage is at most the index's 100 words; cutting it "
        "lost the sentences around the answer).",
    )
    ranking: Literal[RANKINGS] = setting(  # type: ignore[valid-type]
        "fused",
        "Strip ranking: fused = score and retrieval order; evaluator = score alone.",
        "refine",
        answers=True,
        why="Ranks the web's strips, and the passages' with --refine (whole passages keep their retrieval order): "
        "fused is the evaluator's score fused with the retrieval order, evaluator the score alone, as in the paper.",
    )
    knowledge_words: int = setting(
        300,
        "Most words of one source a Correct, Incorrect or web-led question reads.",
        "refine",
        answers=True,
        why="The first strips in reading order until this many (at least one): Correct's passages, Incorrect's "
        "web strips, and an Ambiguous question's web strips when they lead alone. 300 is what plain RAG with "
        "k = 3 gives of 100-word passages.",
        ge=10,
        le=100000,
    )
    read_words: int = setting(
        450,
        "Most words an Ambiguous question reads of its passages, or of both.",
        "refine",
        answers=True,
        why="Ambiguous (the evaluator unsure) reads the source whose best strip holds more of the question's "
        "term weight (the index's IDF; a term the folder never names weighs the most): the kept passages in "
        "retrieval order up to this many words, or the web's strips as Incorrect reads them (--strips, "
        "--knowledge-words); with --close-support, the other source's best strip too, within this many. 450 "
        "is about what plain RAG with k = 5 reads of 100-word passages.",
        ge=10,
        le=100000,
    )
    read_share: float = setting(
        0.0,
        "Ambiguous reads passages after the first with this share of the best's support.",
        "refine",
        answers=True,
        why="A passage's support is the share of the question's term weight it holds; after the first in reading "
        "order (retrieval order for whole passages), a passage is read only when its support is at least this fraction of the best passage's, so "
        "a question one passage holds reads little and one that several hold reads more (within --read-words). "
        "0: every kept passage.",
        ge=0,
        le=1,
    )
    close_support: float = setting(
        0.1,
        "Ambiguous reads both sources when their best supports are this close.",
        "refine",
        answers=True,
        why="When the best passage and the best web strip hold shares of the question's term weight within this "
        "of each other, the stronger source's strips are read and then the other's best strip, within "
        "--read-words; otherwise the stronger source alone. 0: always one source; 1: always both.",
        ge=0,
        le=1,
    )
    reader_url: Optional[str] = setting(
        None,
        "An OpenAI-compatible server to read with; --model names its model.",
        "reader",
        answers=True,
        everyday=True,
        why="llama.cpp's llama-server, vLLM, Ollama or any server of the OpenAI chat API (docs/models.md); the "
        "API key, if it needs one, only from the environment variable CRAG_READER_API_KEY.",
    )
    reader_timeout: float = setting(
        600.0, "Seconds the reader (engine or server) has for an answer.", "reader", answers=False, gt=0, le=86400
    )
    model: str = setting(
        DEFAULT_MODEL, "Reader: an embedded model (docs/models.md) or a .gguf path.", "reader", answers=True,
        everyday=True, why="The embedded models: " + ", ".join(EMBEDDED) + " (docs/models.md).",
    )  # fmt: skip
    task: Literal[TASK_CHOICES] = setting(  # type: ignore[valid-type]
        "auto",
        "Prompt; auto: docqa out of the evaluator's domain, else popqa.",
        "reader",
        answers=True,
        everyday=True,
        why="docqa: the reference's sentence unless a name or the like is asked for; auto: docqa for a question "
        "out of the evaluator's domain, such as one about your own documents, else popqa's short phrase.",
    )
    max_tokens: Optional[int] = setting(
        None, "Tokens to generate; default: per task.", "reader", answers=True, ge=1, le=8192
    )
    reader_judge: bool = setting(
        True,
        "No web, off domain: a declined answer is read again from the first passage.",
        "reader",
        ("--reader-judge/--no-reader-judge",),
        answers=True,
        why="A question out of the evaluator's domain (such as one about your own documents) that is not Correct "
        "and gets nothing from the web (the web off, failed or empty), whose answer over all the passages read the "
        "reader's check declines: the reader is asked of the first passage read, alone, whether it answers the "
        "question, and answers from it when it says yes; no is Not found. "
        "--no-reader-judge: the declined answer is Not found (docs/how-it-works.md).",
    )
    model_knowledge: bool = setting(
        False,
        "Answer from the model's memory when what is read states no answer.",
        "reader",
        answers=True,
        why="Nothing is read when no passage is retrieved or kept and the web gives nothing: the answer is then "
        "a not-found line, or with this flag the model's own memory (the record's basis: model). A question out of "
        "the evaluator's domain that is not Correct and gets nothing from the web has an answer that the passages read do "
        "not state (grounded: false) withheld as Not found, or with this flag given (docs/how-it-works.md).",
    )
    n_ctx: int = setting(4096, "Model context window in tokens.", "reader", answers=True, ge=256, le=131072)
    temperature: float = setting(0.0, "Sampling temperature; 0 = greedy.", "reader", answers=True, ge=0, le=5)
    seed: int = setting(0, "Sampling seed.", "reader", answers=True, ge=0, le=2**32 - 1)
    threads: Optional[int] = setting(
        None, "CPU threads for generation; default: all cores.", "reader", answers=False, ge=1, le=1024
    )
    parallel: int = setting(
        1, "Questions answered at once (batch), over one reader.", "reader", answers=False, ge=1, le=64
    )
    gpu_layers: int = setting(
        -1, "Model layers on a GPU (a GPU build); -1: all, 0: none.", "reader", answers=False, ge=-1, le=10000
    )
    web: Literal[WEB_BACKENDS] = setting(  # type: ignore[valid-type]
        "none", "Web search: " + ", ".join(WEB_BACKENDS) + ".", "web", answers=True, everyday=True
    )
    searxng_url: Optional[str] = setting(
        None, "Base URL of a SearxNG instance (http or https).", "web", answers=True, everyday=True
    )
    rewrite: Literal[REWRITES] = setting(  # type: ignore[valid-type]
        "words",
        "How the question becomes the web search query.",
        "web",
        answers=True,
        why="words: its content words, no model: instant; model: the reader's few-shot keyword query, at most "
        "--rewrite-tokens tokens (content words when its output is not one); none: the question itself.",
    )
    rewrite_tokens: int = setting(
        24,
        "Most tokens of the reader's keyword query with --rewrite model.",
        "web",
        answers=True,
        why="Bounds the rewrite's time.",
        ge=4,
        le=256,
    )
    web_results: int = setting(5, "Result pages to fetch.", "web", answers=True, ge=1, le=50)
    strips_scored: int = setting(
        10,
        "Web strips the evaluator scores per question, the best by BM25.",
        "web",
        answers=True,
        why="The best by BM25 within the fetched pages: a bound on the web's cost (each is an evaluator pair).",
        ge=1,
        le=10000,
    )
    wiki_first: bool = setting(False, "Wikipedia results first.", "web", answers=True)
    allow_private: bool = setting(False, "Allow fetching loopback/private/link-local addresses.", "web", answers=True)
    cache: bool = setting(True, "Use the on-disk web cache.", "web", answers=False)
    fetch_timeout: float = setting(
        10.0,
        "Connect/read timeout per page and search, seconds.",
        "web",
        answers=False,
        why="A whole page, or a search engine's answer, is given up after twice it (a server that drips bytes).",
        gt=0,
        le=600,
    )
    max_page_bytes: int = setting(
        2_000_000, "A page body is cut at this many bytes.", "web", answers=True, ge=1000, le=10**9
    )
    cache_ttl: float = setting(7 * 24 * 3600.0, "Web cache expiry, seconds.", "web", answers=False, ge=0)
    cache_max_mb: float = setting(
        200.0, "Web cache size bound in MB; the oldest entries go first.", "web", answers=False, gt=0
    )

    @field_validator("index", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("evaluator")
    @classmethod
    def _evaluator(cls, value: str) -> str:
        from ..evaluator import EvaluatorError, parse_spec

        try:
            parse_spec(value)
        except EvaluatorError as exc:
            raise ValueError(str(exc)) from None
        return value

    @property
    def reader_backend(self) -> ReaderBackend:
        """The backend that runs ``model`` (over ``reader_url`` when set): every caller asks here."""
        return backend(self.model, self.reader_url)

    @field_validator("model")
    @classmethod
    def _model(cls, value: str, info: ValidationInfo) -> str:
        reader = backend(value, info.data.get("reader_url"))
        problem = reader.problem(value)
        if problem is not None:
            raise ValueError(problem)
        return reader.canonical(value)

    @field_validator("searxng_url", "reader_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        problem = url_problem(value.strip())
        if problem is not None:
            raise ValueError(f"must be an http:// or https:// URL with a host: {problem}")
        return value.strip().rstrip("/")

    @model_validator(mode="after")
    def _together(self) -> "Settings":
        if self.web == "searxng" and not self.searxng_url:
            raise ValueError("web = searxng needs searxng_url (--searxng-url URL)")
        if self.max_tokens is not None and self.max_tokens >= self.n_ctx - 64:
            raise ValueError(f"max_tokens ({self.max_tokens}) leaves no room for a prompt in n_ctx ({self.n_ctx})")
        return self

    def replace(self, **changes: Any) -> "Settings":
        """A validated copy with ``changes`` applied."""
        return Settings.model_validate({**self.model_dump(), **changes})

    def warnings(self) -> list[str]:
        """Settings that are valid but probably not what the user meant."""
        out = []
        family = self.evaluator.partition(":")[0]
        if self.preset is not None and family == "minilm-cosine":
            out.append(
                f"preset {self.preset!r} holds the T5 evaluator's thresholds; on {self.evaluator} cosine scores "
                "(about -0.1 to 0.9) Incorrect can then never fire: calibrate instead (crag calibrate)"
            )
        elif self.preset is not None and family != "t5":
            out.append(
                f"preset {self.preset!r} holds the T5 evaluator's thresholds; {self.evaluator} carries thresholds "
                "calibrated for it, which the preset replaces"
            )
        return out


__all__ = ["Settings", "SettingsError", "setting", "WEB_BACKENDS"]
