from crag_cli.refine import KnowledgeSource, Strip, decompose, excerption, fixed_num, refine, select_strips


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
    text = "One two three four five six. Short bit. Seven eight nine ten eleven twelve. " \
           "Alpha beta gamma delta epsilon zeta. Eta theta iota kappa lambda mu. Last sentence has six words."
    strips = excerption(text)
    assert strips[0] == "One two three four five six. Short bit. Seven eight nine ten eleven twelve. " \
                        "Alpha beta gamma delta epsilon zeta."
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
    strips = [Strip(f"s{i}", "p", "", (i // 3, i % 3), score) for i, score in
              enumerate([0.1, 0.9, -0.8, 0.5, 0.7, 0.2, -0.6])]
    kept = select_strips(strips, top_k=3, threshold=0.0)
    assert [s.text for s in kept] == ["s1", "s3", "s4"]
    assert [s.text for s in select_strips(strips, top_k=10, threshold=0.15)] == ["s1", "s3", "s4", "s5"]


def test_refine_scores_all_strips_in_one_call_and_recomposes_in_order():
    ev = OverlapEvaluator()
    sources = [
        KnowledgeSource("a", "A", "The weather was cold that year in the north. Nothing about the question here at all."),
        KnowledgeSource("b", "B", "Anna Example was a Dutch painter born in Utrecht. She painted landscapes for years."),
    ]
    kept = refine("Where was the painter Anna Example born?", sources, ev, mode="excerption", top_k=1, threshold=-1)
    assert ev.calls == [2]
    assert [s.source for s in kept] == ["b"]
    kept = refine("Where was the painter Anna Example born?", sources, ev, mode="fixed_num", top_k=2, threshold=-1)
    assert [s.source for s in kept] == ["a", "b"]  # original order, not score order
