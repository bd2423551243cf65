import doctest

import pytest

import crag_cli.fakes
import crag_cli.match
from crag_cli.match import contains_phrase, holds_answer, is_grounded, normalise_answer


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


def test_grounded_needs_the_answer_or_all_its_content_words_in_one_text():
    texts = ["Henry Feilden was a Conservative Party politician.", "He lived in Lancashire."]
    assert is_grounded("a Conservative Party politician", texts)
    assert is_grounded("Conservative politician", texts)  # every content word, same text
    assert not is_grounded("Lancashire politician", texts)  # words spread over two texts
    assert not is_grounded("seal hunter", texts)
    assert not is_grounded("", texts) and not is_grounded("politician", [])
    assert contains_phrase("Politician", "politician") and not contains_phrase("politicians", "politician")


def test_doctests():
    for module in (crag_cli.match, crag_cli.fakes):
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
    from crag_cli.match import token_scores

    got = token_scores(prediction, answers)
    assert got == pytest.approx((f1, recall))
