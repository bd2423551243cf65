"""Matching answers against text: gold aliases (the benchmark and calibration labels) and grounding.

Pure functions over strings; no model involved.
"""

from __future__ import annotations

import functools
import re
import string
from typing import Sequence

_ARTICLES = ("a ", "an ", "the ")
_EDGE = string.punctuation.replace("_", "") + "\u2018\u2019\u201c\u201d "  # "_": a name's (``__init__``)
STOP_WORDS = frozenset(
    "a an the of in on at to for and or by with from as is was are were be been his her their its "
    "he she they it this that who which".split()
)


def fold(text: str) -> str:
    """``text`` with case and runs of white space folded: the key under which two texts are the same text.

    >>> fold("  The  Pass\tStatement ")
    'the pass statement'
    """
    return " ".join(text.casefold().split())


def _phrase_pattern(phrase: str) -> str:
    return rf"(?<!\w){re.escape(fold(phrase))}(?!\w)"


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words, ignoring case and runs of white space.

    "Whole words": the match is not preceded or followed by a letter or digit,
    so "pol" is not found in "policy", but "U.S." is found in "the U.S. Navy".
    """
    return bool(fold(phrase)) and re.search(_phrase_pattern(phrase), fold(text)) is not None


def holds_answer(text: str, answers: Sequence[str], whole_word: bool = True) -> bool:
    """Whether some non-empty gold alias occurs in ``text``, ignoring case.

    The one definition of "holds the answer" for calibration labels, the
    benchmark, ``evaluator-test`` and a record's ``correct``.

    Parameters
    ----------
    text : str
    answers : sequence of str
        Gold aliases; empty ones never match.
    whole_word : bool
        ``True`` (default): as :func:`contains_phrase`. ``False``: PopQA's
        original substring metric, where an alias may occur inside a longer word
        ("pol" in "policy"); the benchmark reports it beside the other.
    """
    if not whole_word:
        low = text.lower()
        return any(a and a.lower() in low for a in answers)
    folded = fold(text)  # once, not once per alias
    return any(fold(a) and re.search(_phrase_pattern(a), folded) for a in answers)


def normalise_answer(answer: str) -> str:
    """A short answer without surrounding quotes and punctuation or a leading article.

    >>> normalise_answer('"The Beatles."'), normalise_answer("`__version__.py`")
    ('Beatles', '__version__.py')
    """
    text = " ".join(answer.split()).strip(_EDGE)
    low = text.lower()
    for article in _ARTICLES:
        if low.startswith(article):
            text = text[len(article) :].strip(_EDGE)
            break
    return text


def content_words(text: str) -> list[str]:
    """The words of ``text`` (letters and digits) that are not stop words, case-folded."""
    return [w for w in re.findall(r"\w+", text.casefold()) if w not in STOP_WORDS]


def restates(answer: str, question: str) -> bool:
    """Whether an answer only restates its question: every content word of it is a word of the question.

    Such an answer names what was asked about ("pass" for "What does the pass
    statement do?") and says nothing the question does not. An answer without
    content words (empty, "It is") does not restate.

    Examples
    --------
    >>> restates("pass", "What does the pass statement do?"), restates("The pass statement.", "What does pass do?")
    (True, False)
    >>> restates("A null operation.", "What does the pass statement do?"), restates("It is.", "What is it?")
    (False, False)
    """
    return bool(content_words(answer)) and not new_words(answer, question)


def new_words(answer: str, question: str) -> list[str]:
    """The content words of ``answer`` that are not words of ``question`` (case-folded).

    >>> new_words("The pass statement is a null operation.", "What does the pass statement do?")
    ['null', 'operation']
    """
    asked = set(re.findall(r"\w+", question.casefold()))
    return [w for w in content_words(answer) if w not in asked]


_WORD = re.compile(r"\d+(?:\.\d+)+|\w+")  # a version or decimal ("1.2") is one word


def is_grounded(answer: str, texts: Sequence[str], question: str = "", missing: int = 5) -> bool:
    """Whether the knowledge an answer was read from states it.

    True when the normalised answer (see :func:`normalise_answer`) occurs in one of ``texts`` as whole words, or
    when the answer's own words (its words that are not stop words, less the question's) occur together in one
    sentence of one text (:func:`crag_cli.documents.passages.split_sentences`) that holds a word of the question too (a
    number that happens to occur elsewhere does not ground an answer), all but one in ``missing`` of them. "The
    `is_redirect` property says whether it is a redirect" is grounded by "`.is_redirect` - a redirect?" for
    "Which property says whether a response is a redirect?"; "Conservative politician" by "a Conservative Party
    politician". An answer's word is the question's when their English Snowball stems (PyStemmer, as BM25's)
    are one ("lasts" for "last"). A version or decimal number is one word ("1.2" is not grounded by "1" and
    "2"). An empty answer, an answer without words of its own that the texts do not hold as a phrase, or no
    texts: not grounded.

    Parameters
    ----------
    answer : str
        The generated answer.
    texts : sequence of str
        The knowledge given to the reader.
    question : str, optional
        The question asked: its words need no support (a sentence answer restates them).
    missing : int
        One word in ``missing`` of the answer's own may be absent from the sentence (a long answer's reworded
        word); a shorter answer than ``missing`` words needs all.

    Examples
    --------
    >>> texts = ["Limits. The default is 100 connections.", "Timeouts default to 5 seconds."]
    >>> is_grounded("100", texts), is_grounded("100 seconds", texts), is_grounded("200", texts)
    (True, False, False)
    >>> is_grounded("The pool opens at most 100 connections by default.", texts, "How many connections by default?")
    False
    >>> is_grounded("Up to 100 connections by default.", texts, "Up to how many connections by default?")
    True
    >>> is_grounded("The `is_redirect` property says whether it is a redirect.", ["`.is_redirect` - a redirect?"],
    ...             "Which property says whether a response is a redirect?")
    True
    >>> is_grounded("The `is_redirect` property says whether it is a redirect.", ["* `.is_redirect` - **bool**"],
    ...             "Which property says whether a response is a redirect?")  # no word of the question there
    False
    """
    answer = normalise_answer(answer)
    if not answer or not texts:
        return False
    if any(contains_phrase(text, answer) for text in texts):
        return True
    asked = set(_stems(question))
    own = {w for w in _words(answer) if _stem(w) not in asked}
    if not own:
        return False
    from ..documents.passages import split_sentences

    allowed = len(own) // missing

    def states(sentence: str) -> bool:
        words = _words(sentence)
        return len(own - set(words)) <= allowed and (not asked or not asked.isdisjoint(_stemmer().stemWords(words)))

    return any(states(sentence) for text in texts for sentence in split_sentences(text))


@functools.cache
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _words(text: str) -> list[str]:
    """``text``'s words that are not stop words, case-folded (a version or decimal is one word)."""
    return [w for w in _WORD.findall(text.casefold()) if w not in STOP_WORDS]


def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


def _stems(text: str) -> list[str]:
    """The English stems of ``text``'s words (:func:`_words`)."""
    return _stemmer().stemWords(_words(text))


def quote(
    answer: str, texts: Sequence[str], min_f1: float = 0.5, max_f1: float = 0.9, min_shared: int = 3
) -> str | None:
    """The sentence of ``texts`` that an answer not found in them was drawn from, or ``None``.

    An answer that occurs in one of ``texts`` as a phrase (:func:`contains_phrase`,
    after :func:`normalise_answer`) is a quote already: ``None``. Otherwise every
    run of words of every sentence (:func:`crag_cli.documents.passages.split_sentences`) is
    compared with the answer by SQuAD token F1 (:func:`squad_tokens`); the
    sentence holding the best run (the first on a tie) is returned when that F1
    is at least ``min_f1`` and the run shares at least ``min_shared`` tokens with
    the answer (a short phrase stays as it is), and below ``max_f1`` (an answer
    that is the text's words but for a word or two stays too: a sentence as the
    splitter cuts it may carry a heading or markup before it). A reader that
    shortens or rewords its reference's sentence ("Children are more
    susceptible" for "Children are two to three times more susceptible to ...")
    is thus given back the sentence.

    Parameters
    ----------
    answer : str
        The reader's answer, one sentence.
    texts : sequence of str
        The knowledge it was given.
    min_f1, max_f1 : float
        The bounds of the token F1 between the answer and a run of the sentence's words.
    min_shared : int
        The fewest tokens that run and the answer share.

    Examples
    --------
    >>> quote("Children get infected more often.", ["Adults rarely do. Children are infected two times more often."])
    'Children are infected two times more often.'
    >>> quote("two times", ["Children are infected two times more often."]) is None  # a quote already
    True
    """
    from collections import Counter

    from ..documents.passages import split_sentences

    phrase = normalise_answer(answer)
    if not phrase or any(contains_phrase(t, phrase) for t in texts):
        return None
    wanted = Counter(squad_tokens(answer))
    size = sum(wanted.values())
    best, found = min_f1, None
    for text in texts:
        for sentence in split_sentences(text):
            words = [squad_tokens(w) for w in sentence.split()]
            for i in range(len(words)):
                run: Counter = Counter()
                common = length = 0  # tokens of the run shared with the answer (as multisets), and in it
                for j in range(i, min(len(words), i + 2 * size + 5)):  # a run at most about twice the answer
                    for token in words[j]:
                        run[token] += 1
                        common += run[token] <= wanted[token]
                    length += len(words[j])
                    if common >= min_shared:
                        f1 = 2 * common / (length + size)
                        if f1 > best or (found is None and f1 >= best):
                            best, found = f1, sentence
    return found if best < max_f1 else None


_SQUAD_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def squad_tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation as tokens: lower case, punctuation and articles removed.

    >>> squad_tokens("The 31-kb genome, of a virus.")
    ['31kb', 'genome', 'of', 'virus']
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return _SQUAD_ARTICLES.sub(" ", text).split()


def token_scores(prediction: str, answers: Sequence[str]) -> tuple[float, float]:
    """``(F1, recall)`` of a prediction's tokens against the best gold answer (SQuAD's token F1).

    Tokens are :func:`squad_tokens`, counted as a multiset; each score is the
    maximum over the gold answers; both are 0 for an empty prediction (and 1
    when a gold answer and the prediction are both empty of tokens).

    Parameters
    ----------
    prediction : str
        The generated answer.
    answers : sequence of str
        Gold answers (a span, or aliases).

    Returns
    -------
    (float, float)
        F1 and recall, each in [0, 1].

    Examples
    --------
    >>> token_scores("about 31 kb long", ["31 kb"])
    (0.6666666666666666, 1.0)
    """
    from collections import Counter

    pred = Counter(squad_tokens(prediction))
    best_f1 = best_recall = 0.0
    for answer in answers:
        gold = Counter(squad_tokens(answer))
        if not gold or not pred:
            if not gold and not pred:
                best_f1 = best_recall = 1.0
            continue
        common = sum((pred & gold).values())
        if common:
            precision, recall = common / sum(pred.values()), common / sum(gold.values())
            best_f1 = max(best_f1, 2 * precision * recall / (precision + recall))
            best_recall = max(best_recall, recall)
    return best_f1, best_recall
