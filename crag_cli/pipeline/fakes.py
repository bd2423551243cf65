"""Stand-ins for each pipeline stage, for tests and for trying a stage in isolation.

Each satisfies the stage's Protocol (:class:`~crag_cli.index.Retriever`,
:class:`~crag_cli.evaluator.Evaluator`, :class:`~crag_cli.web.WebCorrector`,
:class:`~crag_cli.reader.Reader`) without a model or a network:

>>> from crag_cli.action.trigger import Thresholds
>>> from crag_cli.pipeline.corrective import Pipeline
>>> pipe = Pipeline(FakeRetriever(["Paris is the capital of France."]), FakeEvaluator({"Paris": 0.9}),
...                 Thresholds(0.5, 0.0, -1.0), FakeReader("Paris"))
>>> pipe.run("What is the capital of France?").answer
'Paris'
"""

from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..documents.passages import Passage
from ..reader import Generation, Reader
from ..index import Hit
from ..reader.prompts import JUDGE, TASKS
from ..action.refine import Strip, Unread
from ..settings.info import default
from ..web import ExternalKnowledge


class FakeRetriever:
    """Returns the given texts, in order, as passages ``p0``, ``p1``, ... (the first ``k``).

    Every hit has lexical ``support`` (``None``: the retriever does not say).
    """

    manifest: dict = {}

    def __init__(self, texts: Sequence[str], title: str = "", support: float | None = None) -> None:
        self.passages = [Passage(f"p{i}", f"d{i}", title, text) for i, text in enumerate(texts)]
        self.support = support

    def search(self, query: str, k: int) -> list[Hit]:
        return [Hit(p, float(len(self.passages) - i), i + 1, self.support) for i, p in enumerate(self.passages[:k])]

    def text_support(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """The share of the query's distinct words (lower-cased) each text holds; ``None`` without ``support``."""
        if self.support is None:
            return None
        words = set(re.findall(r"\w+", query.lower()))
        return [len(words & set(re.findall(r"\w+", t.lower()))) / max(len(words), 1) for t in texts]


def by_key(table: Mapping[str, float], text: str, default: float) -> float:
    """The value of the first key of ``table`` that ``text`` contains, else ``default``."""
    return next((v for k, v in table.items() if k in text), default)


class FakeEvaluator:
    """Scores a text by the first key of ``scores`` it contains (``default`` when none).

    With ``domain`` (words), it knows a question that holds any of them (see
    :meth:`crag_cli.evaluator.CrossEncoderEvaluator.knows`); without, it cannot tell.
    """

    name = "fake"

    def __init__(self, scores: Mapping[str, float], default: float = -1.0, domain: Sequence[str] | None = None) -> None:
        self.scores, self.default = dict(scores), default
        self.domain = domain
        self.calls = 0

    def knows(self, questions: Sequence[str]) -> list[bool] | None:
        if self.domain is None:
            return None
        return [any(w in q for w in self.domain) for q in questions]

    def load(self) -> None:
        pass

    def score(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.calls += 1
        return [by_key(self.scores, text, self.default) for _, text in pairs]


@dataclass
class FakeWeb:
    """A web stage that always finds ``texts`` (a page and one strip each, scored ``score``, ranked in order); when
    ``unread`` says none can be read, the pages stay fetched and no strip is made, as the real stage does."""

    texts: Sequence[str] = ()
    score: float = 0.0
    queries: list[str] = field(default_factory=list)
    reader: Reader | None = None  # no query rewriter

    def run(self, question: str, timings: dict[str, float], unread: Unread | None = None) -> ExternalKnowledge:
        self.queries.append(question)
        urls = [f"https://example.org/{i}" for i in range(len(self.texts))]
        pages = [{"url": u, "status": 200, "error": None, "chars": len(t)} for u, t in zip(urls, self.texts)]
        if unread is not None and unread(list(self.texts)):
            return ExternalKnowledge(backend="fake", query=question, pages=pages)
        strips = [Strip(t, u, "", (i, 0), self.score, i) for i, (u, t) in enumerate(zip(urls, self.texts))]
        return ExternalKnowledge(backend="fake", query=question, pages=pages, strips=strips)


class FakeReader:
    """Replies ``reply``, streamed word by word; remembers the messages it was given.

    ``reply`` may be a sequence: each call replies the next one (the last one from then on). A task's check
    (:attr:`crag_cli.reader.prompts.Task.check`, the prompt's last line) is answered ``check`` instead, its messages
    remembered apart in ``checks``; the reader's judge of one passage (:data:`crag_cli.reader.prompts.JUDGE`) is
    answered ``judge`` (a sequence: the next one each time, the last from then on), remembered in ``judges``.
    ``engine_cache``: each reply says, as an engine with a prompt cache does, how many leading tokens (words) of its
    prompt the one before had (:attr:`~crag_cli.reader.Generation.cached_tokens`); else it does not say.
    """

    model = "fake"

    def __init__(
        self,
        reply: str | Sequence[str],
        n_ctx: int = default("n_ctx"),
        check: str = "Yes.",
        judge: str | Sequence[str] = "Yes.",
        engine_cache: bool = False,
    ) -> None:
        self.replies, self.n_ctx = [reply] if isinstance(reply, str) else list(reply), n_ctx
        self.check, self.judge = check, [judge] if isinstance(judge, str) else list(judge)
        self.engine_cache, self._held = engine_cache, []  # the last prompt's words (the engine's cache)
        self.messages: list[list[dict]] = []
        self.checks: list[list[dict]] = []
        self.judges: list[list[dict]] = []
        self.max_tokens: list[int] = []  # each call's budget

    def load(self) -> None:
        pass

    def fork(self, n_ctx: int | None = None) -> "FakeReader":
        """A reader with the same replies and its own record of messages."""
        return FakeReader(self.replies, n_ctx or self.n_ctx, self.check, self.judge, self.engine_cache)

    def count_tokens(self, messages: list[dict]) -> int:
        return sum(len(m["content"].split()) for m in messages)

    def _cached(self, messages: list[dict]) -> int | None:
        """With ``engine_cache``, the prompt's leading words that the prompt before had, and this one held from now on."""
        if not self.engine_cache:
            return None
        words = [w for m in messages for w in m["content"].split()]
        n = next((i for i, (a, b) in enumerate(zip(words, self._held)) if a != b), min(len(words), len(self._held)))
        self._held = words
        return n

    def generate(
        self, messages: list[dict], max_tokens: int, on_token: Callable[[str], None] | None = None
    ) -> Generation:
        tokens, cached = self.count_tokens(messages), self._cached(messages)
        if any(t.check and messages[-1]["content"].endswith("\n" + t.check) for t in TASKS.values()):
            self.checks.append(messages)
            return Generation(self.check, tokens, 1, cached)
        if messages[-1]["content"].endswith("\n" + JUDGE):
            self.judges.append(messages)
            return Generation(self.judge[min(len(self.judges), len(self.judge)) - 1], tokens, 1, cached)
        self.messages.append(messages)
        self.max_tokens.append(max_tokens)
        reply = self.replies[min(len(self.messages), len(self.replies)) - 1]
        pieces = reply.split(" ")
        for i, piece in enumerate(pieces):
            if on_token is not None:
                on_token(piece if i == 0 else " " + piece)
        return Generation(reply, tokens, len(pieces), cached)


class FakeEvidenceEvaluator(FakeEvaluator):
    """A :class:`FakeEvaluator` that stores an ``evidence`` fit and gives raw ``logits`` (by the first key a text
    contains, ``default_logit`` when none) with its scores, as :class:`~crag_cli.evaluator.EvidenceEvaluator`."""

    def __init__(self, scores, logits, evidence, default_logit: float = -5.0, **kwargs) -> None:
        super().__init__(scores, **kwargs)
        self.logits, self.default_logit, self.evidence = dict(logits), default_logit, evidence

    def score_logits(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[float], list[float]]:
        return self.score(pairs), [by_key(self.logits, text, self.default_logit) for _, text in pairs]
