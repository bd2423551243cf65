"""Synthetic training pairs: the local reader writes a question and its short answer for sampled passages of the index."""

from __future__ import annotations

import random
from typing import Callable

from ..action.match import contains_phrase

from .data import LabelledPair, question_key


SYNTHETIC_PROMPT = (
    "Read the passage and write one factual question that it answers, and the question's short answer "
    "(a name, a date or a few words copied from the passage). The question must name what it is about, "
    "so that it can be understood without the passage.\n"
    "Reply with exactly two lines:\nQuestion: ...\nAnswer: ...\n\n"
    "<passage>\n{passage}\n</passage>"
)
# Longer "answers" are paragraphs, not spans. A sentence copied from the passage is kept: documentation
# answers "what does X do?" with one (it must still occur in the passage word for word).
MAX_ANSWER_WORDS = 20


def parse_synthetic(reply: str) -> tuple[str, str] | None:
    """``(question, answer)`` from a ``Question: ... / Answer: ...`` reply, or ``None``.

    Lines may be marked up (``**Question:**``); an answer of more than
    :data:`MAX_ANSWER_WORDS` words is returned as it is (the caller drops it).
    """
    question = answer = None
    for line in reply.splitlines():
        head, _, rest = line.strip().partition(":")
        head, rest = head.strip(" *_#").lower(), rest.strip(" *_")
        if head == "question" and rest and question is None:
            question = rest
        elif head == "answer" and rest and answer is None:
            answer = rest.rstrip(".")
    if not question or not answer:
        return None
    return question, answer


def synthetic_pairs(
    index,
    reader,
    n: int,
    top_k: int,
    seed: int,
    tokens: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[LabelledPair], dict]:
    """Questions written by the reader for ``n`` sampled passages of ``index``, labelled by retrieval.

    For each sampled passage the reader writes a question and a short answer.
    The pair is dropped when the answer does not occur in the passage (whole
    words) or occurs in the question itself, and when the question does not
    retrieve its own passage among its top-k (a question too vague to find its
    source, "What is the name of the place?", is no question a user asks of
    the index: the round-trip filter of synthetic question generation). The
    passage is the positive; the question's retrieved top-k passages that do
    not hold the answer are the negatives (a retrieved passage that holds it,
    other than the source, is left out: it may well answer the question too).
    The reader writes at most ``tokens`` tokens for a question and its answer.

    Returns
    -------
    (pairs, counts)
        ``counts``: ``sampled``, ``kept``, ``dropped_unparsed``, ``dropped_long_answer``,
        ``dropped_not_in_passage``, ``dropped_not_retrieved``.
    """
    rng = random.Random(seed)
    passages = [p for p in index.passages if len(p.text.split()) >= 20] or list(index.passages)
    chosen = rng.sample(passages, min(n, len(passages)))
    counts = {
        "sampled": len(chosen),
        "kept": 0,
        "dropped_unparsed": 0,
        "dropped_long_answer": 0,
        "dropped_not_in_passage": 0,
        "dropped_not_retrieved": 0,
    }
    out: list[LabelledPair] = []
    for done, passage in enumerate(chosen, 1):
        reply = reader.generate(
            [{"role": "user", "content": SYNTHETIC_PROMPT.format(passage=passage.text)}], tokens
        ).text
        parsed = parse_synthetic(reply)
        if parsed is None:
            counts["dropped_unparsed"] += 1
        elif len(parsed[1].split()) > MAX_ANSWER_WORDS:
            counts["dropped_long_answer"] += 1
        else:
            question, answer = parsed
            if not contains_phrase(passage.text, answer) or contains_phrase(question, answer):
                counts["dropped_not_in_passage"] += 1
                hits = None
            else:  # searched only for a question whose answer is in its passage
                hits = index.search(question, top_k)
                if all(hit.passage.id != passage.id for hit in hits):
                    counts["dropped_not_retrieved"] += 1
                    hits = None
            if hits is not None:
                counts["kept"] += 1
                qid = f"synthetic:{question_key(question)}"  # two passages that gave one question: one question
                out.append(LabelledPair(qid, question, passage.text, 1, (answer,)))
                for hit in hits:
                    if hit.passage.id != passage.id and not contains_phrase(hit.passage.text, answer):
                        out.append(LabelledPair(qid, question, hit.passage.text, 0, (answer,)))
        if progress is not None:
            progress(done, len(chosen))
    return out, counts
