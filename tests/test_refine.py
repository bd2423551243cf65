import math

import pytest

from crag_cli.action.refine import (
    KnowledgeSource,
    Strip,
    decompose,
    excerption,
    fixed_num,
    fuse_ranks,
    lexical_scores,
    refine,
    select_strips,
    strongest_first,
)


class OverlapEvaluator:
    """A deterministic evaluator for testing selection: share of question words found in the text."""

    name = "overlap"

    def __init__(self):
        self.calls = []

    def score(self, pairs):
        self.calls.append(len(pairs))
        out = []
        for q, t in pairs:
            qs = {w.strip("?.,").lower() for w in q.split()}
            ts = {w.strip("?.,").lower() for w in t.split()}
            out.append(2 * len(qs & ts) / len(qs) - 1)
        return out


def test_excerption_groups_three_sentences_and_merges_fragments():
    text = (
        "One two three four five six. Short bit. Seven eight nine ten eleven twelve. "
        "Alpha beta gamma delta epsilon zeta. Eta theta iota kappa lambda mu. Last sentence has six words."
    )
    strips = excerption(text)
    assert (
        strips[0] == "One two three four five six. Short bit. Seven eight nine ten eleven twelve. "
        "Alpha beta gamma delta epsilon zeta."
    )
    assert strips[1] == "Eta theta iota kappa lambda mu. Last sentence has six words."
    assert " ".join(strips).split() == text.split()


def test_fixed_num_windows_and_tail_merge():
    words = [f"w{i}" for i in range(109)]
    strips = fixed_num(" ".join(words))
    assert [len(s.split()) for s in strips] == [50, 59]  # tail of 9 merged into the previous window
    assert [len(s.split()) for s in fixed_num(" ".join(words + ["w109"]))] == [50, 50, 10]


def test_selection_keeps_the_whole_passage():
    assert decompose("A  passage\nwith lines.", "selection") == ["A passage with lines."]


def test_select_strips_keeps_top_k_above_threshold_in_original_order():
    strips = [
        Strip(f"s{i}", "p", "", (i // 3, i % 3), score) for i, score in enumerate([0.1, 0.9, -0.8, 0.5, 0.7, 0.2, -0.6])
    ]
    kept = select_strips(strips, top_k=3, threshold=0.0, ranking="evaluator")
    assert [s.text for s in kept] == ["s1", "s3", "s4"]
    assert [s.text for s in select_strips(strips, top_k=10, threshold=0.15, ranking="evaluator")] == [
        "s1",
        "s3",
        "s4",
        "s5",
    ]


def test_refine_scores_all_strips_in_one_call_and_recomposes_in_order():
    ev = OverlapEvaluator()
    sources = [
        KnowledgeSource(
            "a", "A", "The weather was cold that year in the north. Nothing about the question here at all."
        ),
        KnowledgeSource(
            "b", "B", "Anna Example was a Dutch painter born in Utrecht. She painted landscapes for years."
        ),
    ]
    kept = refine(
        "Where was the painter Anna Example born?",
        sources,
        ev,
        mode="excerption",
        top_k=1,
        threshold=-1,
        ranking="evaluator",
    )
    assert ev.calls == [2]
    assert [s.source for s in kept] == ["b"]
    kept = refine(
        "Where was the painter Anna Example born?",
        sources,
        ev,
        mode="fixed_num",
        top_k=2,
        threshold=-1,
        ranking="evaluator",
    )
    assert [s.source for s in kept] == ["a", "b"]  # original order, not score order


def test_fuse_ranks_is_reciprocal_rank_fusion():
    fused = fuse_ranks([0.2, 0.9, 0.5], [0, 1, 2], constant=60)
    # score ranks (1-based): item 1 first, item 2 second, item 0 third; retrieval ranks 1, 2, 3
    assert fused == pytest.approx([1 / 63 + 1 / 61, 1 / 61 + 1 / 62, 1 / 62 + 1 / 63])


def test_fused_ranking_keeps_retrieval_order_when_the_evaluator_barely_separates():
    # The evaluator prefers the last retrieved strip; retrieval put it last. Fused, the first passage's strip,
    # second by score, comes first: agreement of the two orders wins over one order alone.
    strips = [
        Strip("first", "p1", "", (0, 0), 0.50, 0),
        Strip("mid", "p2", "", (1, 0), 0.10, 1),
        Strip("last", "p3", "", (2, 0), 0.51, 2),
    ]
    assert [s.text for s in strongest_first(strips, "evaluator")] == ["last", "first", "mid"]
    assert [s.text for s in strongest_first(strips, "fused")] == ["first", "last", "mid"]
    assert [s.text for s in select_strips(strips, 1, -1.0, "fused")] == ["first"]
    with pytest.raises(ValueError, match="unknown ranking"):
        strongest_first(strips, "bm25")


def test_lexical_scores_equal_rank_bm25_with_lucene_idf():
    from rank_bm25 import BM25Okapi

    from crag_cli.index import TokenizerSettings

    texts = [
        "The bovine coronavirus genome is 31 kb long.",
        "Cats sleep all day long.",
        "Coronaviruses have the largest genomes of RNA viruses.",
        "the a of",
        "Bovine herds and cats.",
    ]
    question = "How long is the bovine coronavirus genome?"
    tok = TokenizerSettings()
    ref = BM25Okapi(tok.tokenize(texts), k1=1.5, b=0.75)
    n = len(texts)
    ref.idf = {
        t: math.log(1 + (n - df + 0.5) / (df + 0.5))
        for t, df in ((t, sum(t in d for d in ref.doc_freqs)) for t in ref.idf)
    }
    expected = ref.get_scores(tok.tokenize([question])[0]) / (1.5 + 1)  # Lucene drops Okapi's constant (k1 + 1)
    assert lexical_scores(question, texts) == pytest.approx(expected, rel=1e-5)
    assert lexical_scores("zebra", texts).tolist() == [0.0] * 5
    assert lexical_scores("the of", ["the a of", "x"]).tolist() == [0.0, 0.0]
    assert lexical_scores("cats", []).tolist() == []


def test_refine_bounds_the_strips_scored_by_a_bm25_first_pass():
    ev = OverlapEvaluator()
    filler = " ".join(f"Sentence number {i} says nothing useful about anything here." for i in range(300))
    page = filler + " The bovine coronavirus genome is about 31 kb long, the largest of RNA viruses. " + filler
    sources = [KnowledgeSource("https://a.example/page", "A", page)]
    kept = refine(
        "How long is the bovine coronavirus genome?",
        sources,
        ev,
        top_k=1,
        threshold=-1,
        ranking="fused",
        max_scored=10,
        lexical_rank=True,
        mode="excerption",
    )
    assert ev.calls == [10]  # of the 200 or so strips, only the 10 best by BM25 reached the evaluator
    assert "31 kb" in kept[0].text
    assert kept[0].rank == 0  # the best by BM25 within the page
    ev.calls.clear()
    refine(
        "How long is the bovine coronavirus genome?",
        sources,
        ev,
        top_k=1,
        threshold=-1,
        mode="excerption",
        ranking="evaluator",
    )
    assert ev.calls == [len(decompose(page))] and len(decompose(page)) > 150  # unbounded: every strip scored


def test_refine_scores_nothing_when_the_strips_cannot_be_read():
    ev = OverlapEvaluator()
    sources = [KnowledgeSource("https://a.example", "A", "The genome is 31 kb long. It is large. " * 4)]
    seen = []
    question, rule = (
        "How long is the genome?",
        {"mode": "excerption", "top_k": 5, "threshold": -1, "ranking": "evaluator"},
    )
    kept = refine(question, sources, ev, **rule, unread=lambda texts: seen.append(texts) or True)
    assert kept == [] and ev.calls == [] and seen == [decompose(sources[0].text)]
    kept = refine(question, sources, ev, **rule, unread=lambda texts: False)
    assert kept == refine(question, sources, ev, **rule) and ev.calls
