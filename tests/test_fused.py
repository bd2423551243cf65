"""The fused evaluator: its features, its fit (against scikit-learn), its thresholds, and how the pipeline uses it."""

import json
from dataclasses import replace

import numpy as np
import pytest

from crag_cli.action.trigger import CALIBRATED, FUSED, Action, Thresholds
from crag_cli.documents.passages import Passage
from crag_cli.evaluator import EvaluatorError
from crag_cli.evaluator.fused import FEATURES, FusedFit, features, read_fused, write_fused
from crag_cli.index import Hit
from crag_cli.pipeline.corrective import Pipeline
from crag_cli.train.fused import Question, calibrate, fit_logistic


def _fit(cosine_weight=4.0):
    weights = [0.0] * len(FEATURES)
    weights[FEATURES.index("cosine")] = cosine_weight
    return FusedFit(tuple(weights), -2.0, (0.0,) * len(FEATURES), (1.0,) * len(FEATURES))


class DenseRetriever:
    """Hits with both retrievers' evidence: BM25 order as given, each with its cosine."""

    manifest: dict = {}
    dense = True

    def __init__(self, cosines):
        self.cosines = cosines

    def search(self, query, k):
        order = np.argsort(-np.asarray(self.cosines), kind="stable")
        dense_rank = {int(i): r for r, i in enumerate(order, 1)}
        return [
            Hit(Passage(f"p{i}", f"d{i}", "", f"passage {i} text"), 1.0 / (i + 1), i + 1, 0.2, c, dense_rank[i])
            for i, c in enumerate(self.cosines[:k])
        ]

    def text_support(self, query, texts):
        return None


class LogitEvaluator:
    """Gives scores and raw logits (all 0), knows no question (every one out of its domain), stores ``fused``."""

    name = "logit-fake"

    def __init__(self, fused):
        self.fused = fused

    def score_logits(self, pairs):
        return [-0.9] * len(pairs), [0.0] * len(pairs)

    def score(self, pairs):
        return self.score_logits(pairs)[0]

    def knows(self, questions):
        return [False] * len(questions)

    def nearness(self, questions, others=False):
        return [0.1] * len(questions)


def _pipeline(cosines, fit, source="its own"):
    th = Thresholds(0.9, -0.9, -0.95, source)
    return Pipeline(DenseRetriever(cosines), LogitEvaluator(fit), th)


def test_features_are_the_declared_ones_in_order():
    rows = features([2.0, 1.0, 0.0], [0.1, 0.6, 0.3], [0.5, 0.2, 0.9], [1, 2, 30], [3, 2, 1], 0.5)
    assert rows.shape == (3, len(FEATURES))
    col = {name: rows[:, i] for i, name in enumerate(FEATURES)}
    np.testing.assert_allclose(col["logit_gap"], [0.0, 1.0, 2.0])
    np.testing.assert_allclose(col["support_gap"], [0.5, 0.0, 0.3])
    np.testing.assert_allclose(col["cosine_gap"], [0.4, 0.7, 0.0])
    np.testing.assert_allclose(col["log_bm25_rank"], np.log([1, 2, 30]))
    np.testing.assert_allclose(col["logit_in_domain"], [1.0, 0.5, 0.0])
    np.testing.assert_allclose(col["logit_gap_in_domain"], [0.0, 0.5, 1.0])


def test_the_passages_are_read_in_the_fits_order_and_the_action_stays_the_evaluators():
    pipe = _pipeline([0.1, 0.9, 0.7, 0.2], _fit())
    result = pipe.evaluate("a question out of the evaluator's domain")
    assert [h.passage.id for h in result.hits] == ["p1", "p2", "p3", "p0"]
    assert result.scores == [-0.9] * 4 and result.action is Action.AMBIGUOUS  # its own scores and domain guard
    pipe.act(result)
    assert [s.source for s in result.internal_knowledge] == ["p1", "p2", "p3", "p0"]  # read in that order


def test_without_the_dense_part_or_a_fit_the_retrieval_order_stays():
    assert [h.passage.id for h in _pipeline([0.1, 0.9], None).evaluate("q").hits] == ["p0", "p1"]
    plain = _pipeline([0.1, 0.9], _fit())
    plain.retriever.dense = False
    assert [h.passage.id for h in plain.evaluate("q").hits] == ["p0", "p1"]


def test_fit_logistic_equals_scikit_learns_logistic_regression():
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 5)) * [1, 3, 0.1, 10, 1] + [0, 2, 0, -5, 1]
    y = (x @ [1.0, -0.5, 4.0, 0.1, 0.0] + rng.normal(size=400) > 0).astype(int)
    w = rng.uniform(0.5, 2.0, size=400)
    weights, bias, mean, scale = fit_logistic(x, y, w, l2=2.0)
    z = (x - mean) / scale
    ref = sklearn.LogisticRegression(C=1 / 2.0, tol=1e-10, max_iter=10000).fit(z, y, sample_weight=w / w.mean())
    np.testing.assert_allclose(weights, ref.coef_[0], rtol=1e-3, atol=1e-4)
    assert bias == pytest.approx(ref.intercept_[0], abs=1e-4)


def test_calibrate_finds_the_loosest_thresholds_at_the_precision_asked():
    rng = np.random.default_rng(3)
    questions = []
    for i in range(200):
        good = i % 2 == 0
        cos = rng.uniform(0.6, 1.0, 3) if good else rng.uniform(0.0, 0.6, 3)
        labels = [bool(good and j == int(np.argmax(cos))) for j in range(3)]
        questions.append(Question("s", str(i), features([0, 0, 0], [0, 0, 0], cos, [1, 2, 3], [1, 2, 3], 0.2), labels))
    fit = _fit(cosine_weight=10.0)
    upper, lower, keep = calibrate([(q.set, fit.probabilities(q.rows), q.labels) for q in questions], 0.9)
    p = lambda c: 1 / (1 + np.exp(-(10 * c - 2)))  # noqa: E731
    assert p(0.6) - 0.05 <= upper <= p(0.6) + 0.05 and lower <= upper
    assert lower >= p(0.5)  # every question below 0.6's probability has no answer: Incorrect right


def test_a_stored_fit_reads_back_and_a_bad_one_is_a_clear_error(tmp_path):
    (tmp_path / "crag-evaluator.json").write_text(json.dumps({"format": 1}))
    fit = _fit()
    write_fused(tmp_path, fit, "a test")
    manifest = json.loads((tmp_path / "crag-evaluator.json").read_text())
    assert read_fused(manifest, tmp_path) == fit and manifest["fused"]["fitted_by"] == "a test"
    manifest["fused"]["scale"][0] = 0.0
    with pytest.raises(EvaluatorError, match="bad 'fused' entry"):
        read_fused(manifest, tmp_path)
    assert read_fused({}, tmp_path) is None


def test_the_fit_sample_keeps_questions_without_answers_only_when_asked(tmp_path):
    from crag_cli.train.data import question_fingerprint
    from crag_cli.train.fused import sample

    path = tmp_path / "q.jsonl"
    rows = [{"id": f"q{i}", "question": f"question {i}?", "answers": ["a"] if i % 2 else []} for i in range(8)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trained = {question_fingerprint("question 1?")}
    assert sorted(q["id"] for q in sample(path, None, 0, trained)) == ["q3", "q5", "q7"]
    every = sample(path, None, 0, trained, unanswered=True)
    assert sorted(q["id"] for q in every) == ["q0", "q2", "q3", "q4", "q5", "q6", "q7"]
    assert [q["id"] for q in sample(path, 3, 0, trained, unanswered=True)] == [q["id"] for q in every[:3]]


def _deciding(cosine_weight=4.0):
    return replace(_fit(cosine_weight), upper=0.75, lower=0.65)


def test_a_fit_with_thresholds_decides_the_action_in_or_out_of_the_domain():
    pipe = _pipeline([0.1, 0.9, 0.7, 0.2, 0.6], _deciding(), CALIBRATED)
    result = pipe.evaluate("a question out of the evaluator's domain")
    assert result.in_domain is False and result.action is Action.CORRECT  # p(0.9) = 0.83 >= 0.75; no domain guard
    assert result.evidence_score == pytest.approx(1 / (1 + np.exp(-(4 * 0.9 - 2))))
    assert result.probabilities == sorted(result.probabilities, reverse=True)
    assert (result.thresholds.upper, result.thresholds.lower, result.thresholds.source) == (0.75, 0.65, FUSED)
    pipe.act(result)
    # Correct keeps the passages whose probability reaches the fit's lower threshold, in the fused order (0.83,
    # 0.69; not 0.6, 0.23, 0.17), though the cross-encoder scored every one -0.9, below its own lower threshold
    assert [s.source for s in result.internal_knowledge] == ["p1", "p2"]
    assert [s.source for s in pipe.reader_strips(result)] == ["p1", "p2"]
    low = _pipeline([0.1, 0.2], _deciding(), CALIBRATED).evaluate("q")  # p(0.2) = 0.23 < 0.65, no lexical support
    assert low.action is Action.INCORRECT


def test_thresholds_the_user_gives_keep_the_cross_encoders_rule():
    pipe = _pipeline([0.1, 0.9], _deciding())  # "its own": not the evaluator's calibrated thresholds
    result = pipe.evaluate("q")
    assert result.action is Action.AMBIGUOUS and result.thresholds.source == "its own"
    assert _pipeline([0.1, 0.9], _deciding(), CALIBRATED).evaluate("q").action is Action.CORRECT


def test_stored_action_thresholds_read_back_and_half_a_pair_is_refused(tmp_path):
    (tmp_path / "crag-evaluator.json").write_text(json.dumps({"format": 1}))
    write_fused(tmp_path, _deciding(), "a test")
    manifest = json.loads((tmp_path / "crag-evaluator.json").read_text())
    assert read_fused(manifest, tmp_path) == _deciding() and read_fused(manifest, tmp_path).decides
    assert "upper" not in _fit().to_dict() and not _fit().decides
    for bad in ({"lower": None}, {"upper": 1.5}, {"upper": 0.2, "lower": 0.4}):
        broken = {**manifest, "fused": {**manifest["fused"], **bad}}
        with pytest.raises(EvaluatorError, match="bad 'fused' entry"):
            read_fused(broken, tmp_path)


@pytest.mark.parametrize("decide", [False, True])
def test_the_fit_command_stores_its_thresholds_only_with_decide(tmp_path, monkeypatch, decide):
    """``python -m crag_cli.train.fused``: the fit always, the calibrated thresholds with ``--decide`` only."""
    import crag_cli.evaluator
    import crag_cli.train.fused as fused

    def records(name, *args, **kwargs):  # 60 questions of 10 candidates: the answer's logit and cosine stand out
        rng, out = np.random.default_rng(ord(name)), []
        for q in range(60):
            y = [i == q % 10 and q % 3 != 0 for i in range(10)]
            cands = [
                {"support": 0.3, "cosine": 0.2 + 0.5 * a, "rank": i + 1, "dense_rank": i + 1, "logit": 2.0 * a - 1}
                for i, a in enumerate(np.asarray(y) + rng.normal(0, 0.3, 10))
            ]
            out.append({"id": f"{name}{q}", "question": f"{name} question {q}?", "cands": cands, "labels": y})
        return out

    monkeypatch.setattr(crag_cli.evaluator, "build_evaluator", lambda *a, **k: object())
    monkeypatch.setattr(fused, "cached", records)
    monkeypatch.setattr(fused, "nearness", lambda ev, qs: [0.5] * len(qs))
    (tmp_path / "crag-evaluator.json").write_text(json.dumps({"format": 1}))
    argv = ["--set", "a=q.jsonl@ix", "--set", "b=q.jsonl@ix", "--cache", str(tmp_path / "c"), "--out", str(tmp_path)]
    fused.main(argv + (["--decide"] if decide else []))
    stored = read_fused(json.loads((tmp_path / "crag-evaluator.json").read_text()), tmp_path)
    every = [fused.as_question(n, r, 0.5) for n in "ab" for r in records(n)]
    upper, lower, _ = calibrate(fused.out_of_fold(every), 0.85)
    assert stored.decides is decide
    if decide:
        assert (stored.upper, stored.lower) == pytest.approx((upper, lower)) and 0 < lower <= upper < 1
