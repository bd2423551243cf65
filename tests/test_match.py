import doctest

import pytest

import crag_cli.pipeline.fakes
import crag_cli.action.match
from crag_cli.action.match import contains_phrase, holds_answer, is_grounded, normalise_answer


@pytest.mark.parametrize(
    "text, alias, substring, word",
    [
        ("He was a Politician.", "politician", True, True),
        ("a policy maker", "pol", True, False),  # the alias inside a longer word
        ("served in the U.S.  Navy", "U.S. Navy", False, True),  # white space runs count as one space
        ("Napoleon", "leon", True, False),
        ("singer-songwriter", "singer", True, True),  # a hyphen is a word boundary
        ("Zürich", "zürich", True, True),
        ("anything", "", False, False),  # empty aliases never match
    ],
)
def test_gold_alias_matching(text, alias, substring, word):
    assert holds_answer(text, [alias], whole_word=False) is substring
    assert holds_answer(text, [alias], whole_word=True) is word


def test_normalise_answer_strips_quotes_punctuation_and_articles():
    assert normalise_answer('  "The Beatles."  ') == "Beatles"
    assert normalise_answer("an actor") == "actor"
    assert normalise_answer("Theodore") == "Theodore"  # "The" only as a word
    assert normalise_answer("...") == ""


def test_grounded_needs_the_answer_or_its_own_words_in_one_sentence():
    texts = ["Henry Feilden was a Conservative Party politician.", "He lived in Lancashire."]
    assert is_grounded("a Conservative Party politician", texts)
    assert is_grounded("Conservative politician", texts)  # every content word, same text
    assert not is_grounded("Lancashire politician", texts)  # words spread over two texts
    assert not is_grounded("seal hunter", texts)
    assert not is_grounded("", texts) and not is_grounded("politician", [])
    # a sentence answer is judged by the words it adds to the question, in one sentence of one text
    docs = [
        "Limits. The pool opens at most 100 connections. Sessions last 2 weeks.",
        "The version is in httpx/__version__.py.",
    ]
    question = "How many connections does the pool open at most?"
    assert is_grounded("The pool opens at most 100 connections.", docs, question)
    assert not is_grounded("The pool opens at most 2 connections.", docs, question)
    assert not is_grounded("The pool opens 100 connections for 2 weeks.", docs, question)  # two sentences' words
    assert not is_grounded("The pool opens at most connections.", docs, question)  # adds nothing
    assert is_grounded("`__version__.py`", docs, "Which file holds the version?")  # a name's underscores stay
    assert is_grounded("TLS 1.2 only", ["Only TLS 1.2 is used."]) and not is_grounded("TLS 1.2", ["TLS 1.1 or 2"])
    assert contains_phrase("Politician", "politician") and not contains_phrase("politicians", "politician")


def test_doctests():
    for module in (crag_cli.action.match, crag_cli.pipeline.fakes):
        assert doctest.testmod(module).failed == 0


@pytest.mark.parametrize(
    "prediction, answers, f1, recall",
    [
        ("31 kb", ["31 kb"], 1.0, 1.0),
        ("The genome is about 31 kb.", ["31 kb"], 2 * (2 / 5) / (2 / 5 + 1), 1.0),  # genome is about 31 kb: 5 tokens
        (
            "Mother-to-child transmission",
            ["Mother-to-child transmission (MTCT) is the main cause"],
            2 * (2 / 6) / (1 + 2 / 6),
            2 / 6,
        ),
        ("bats", ["camels", "bats and camels"], 2 * (1 / 3) / (1 + 1 / 3), 1 / 3),  # the best of the golds
        ("", ["anything"], 0.0, 0.0),
        ("the the the", ["a"], 1.0, 1.0),  # both empty once articles go
        ("virus virus", ["virus"], 2 * 0.5 * 1 / 1.5, 1.0),  # tokens count as a multiset
    ],
)
def test_squad_token_f1_and_recall(prediction, answers, f1, recall):
    from crag_cli.action.match import token_scores

    got = token_scores(prediction, answers)
    assert got == pytest.approx((f1, recall))


def _quote_by_brute_force(answer, texts, min_f1=0.5, max_f1=0.9, min_shared=3):
    """The reference for :func:`crag_cli.action.match.quote`: every run of words scored by ``token_scores`` itself."""
    from collections import Counter

    from crag_cli.documents.passages import split_sentences
    from crag_cli.action.match import squad_tokens, token_scores

    if not answer.strip() or any(contains_phrase(t, normalise_answer(answer)) for t in texts):
        return None
    size = len(squad_tokens(answer))
    best, found = min_f1, None
    for text in texts:
        for sentence in split_sentences(text):
            words = sentence.split()
            for i in range(len(words)):
                for j in range(i + 1, min(len(words), i + 2 * size + 5) + 1):
                    run = " ".join(words[i:j])
                    shared = sum((Counter(squad_tokens(run)) & Counter(squad_tokens(answer))).values())
                    f1 = token_scores(run, [answer])[0]
                    if shared >= min_shared and (f1 > best or (found is None and f1 >= best)):
                        best, found = f1, sentence
    return found if best < max_f1 else None


@pytest.mark.slow
def test_quote_gives_the_sentence_a_reworded_answer_was_drawn_from_as_a_brute_force_search_does():
    import random

    from crag_cli.action.match import quote

    rng = random.Random(7)
    vocabulary = "the virus cells infection children adults two three times more often is a of RSV 34.0% (MTCT)".split()
    for _ in range(300):
        texts = [
            ". ".join(" ".join(rng.choices(vocabulary, k=rng.randint(3, 12))).capitalize() for _ in range(3)) + "."
            for _ in range(rng.randint(1, 3))
        ]
        answer = " ".join(rng.choices(vocabulary, k=rng.randint(1, 8)))
        assert quote(answer, texts) == _quote_by_brute_force(answer, texts), (answer, texts)
    sentence = "Children are infected two to three times more often than adults."
    assert quote("Children get infected more often than adults.", ["Adults rarely are.", sentence]) == sentence
    assert quote("more often", [sentence]) is None  # a phrase of it already
    assert quote("Infected more.", [sentence]) is None  # two tokens shared: a short phrase stays
    assert quote("Children get infected more often.", []) is None and quote("", [sentence]) is None
    # the text's words but for a word or two: kept (the splitter's sentence here carries a heading and a grammar)
    rst = 'The "pass" statement ******** pass_stmt ::= "pass" "pass" is a null operation — when it is executed.'
    assert quote('The "pass" statement is a null operation — when it is executed.', [rst]) is None
    assert quote("The statement is a no-op — when it is executed.", [rst]) == rst  # below 0.9: quoted
