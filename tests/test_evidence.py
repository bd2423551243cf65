"""Correct out of the evaluator's domain by combined evidence (``--evidence``): the fit, its storage, the pipeline."""

import json
import shutil

import numpy as np
import pytest

from crag_cli.action.trigger import Action, Thresholds
from crag_cli.app.ask import knowledge_notes
from crag_cli.evaluator import EMBEDDED_EVALUATOR, CrossEncoderEvaluator, EvaluatorError, EvidenceFit
from crag_cli.evaluator import read_evidence, read_trained, write_evidence
from crag_cli.assemble import evaluator_of
from crag_cli.pipeline.fakes import FakeEvidenceEvaluator, FakeReader, FakeRetriever, FakeWeb
from conftest import fake_pipeline
from crag_cli.batch.records import to_record

TH = Thresholds(upper=0.5, lower=0.0, filter=-0.5)
PASSAGES = [
    "Anna Berg was a Swedish seal hunter. Seal hunting was her occupation for years. She lived in Umea.",
    "Ole Krarup was a Danish politician. He was a professor of law. He wrote several books.",
    "Ole Krarup sat in the European Parliament. He was born in 1935. He died in 2017 in Copenhagen.",
]
SCORES = {"politician": 0.3, "European Parliament": 0.2, "seal": -0.2}  # the evaluator unsure: Ambiguous
FIT = EvidenceFit(logit=1.0, support=1.0, rank=-1.0, bias=0.0, threshold=1.0)
QUESTION = "What is Ole Krarup's occupation?"


def test_the_combination_is_the_fitted_linear_score_of_logit_support_and_rank():
    rng = np.random.default_rng(0)
    z, s = rng.normal(size=10), rng.uniform(size=10)
    w, b = rng.normal(size=3), float(rng.normal())
    fit = EvidenceFit(*map(float, w), bias=b, threshold=0.0)
    want = np.column_stack([z, s, np.arange(10) / 10]) @ w + b  # the regression's decision function
    assert fit.combined(list(z), list(s)) == pytest.approx(list(want))
    assert fit.best(list(z), list(s)) == pytest.approx(want.max())
    assert fit.best([], []) is None and fit.best([1.0], [None]) is None  # nothing, or a retriever without support


def run(logits, evidence=True, domain=("capital",), fit=FIT, ahead=False, scores=SCORES, support=0.4, **kwargs):
    gen, web = FakeReader("politician"), FakeWeb(["Ole Krarup was a Danish jurist."], score=0.4)
    ev = FakeEvidenceEvaluator(scores, logits, fit, domain=None if domain is None else list(domain))
    pipe = fake_pipeline(FakeRetriever(PASSAGES, support=support), ev, TH, gen, web=web, evidence=evidence, **kwargs)
    if ahead:
        pipe.score_ahead([QUESTION, "Where did Ole Krarup die?"])
        assert ev.calls == 1  # every passage of both questions, with their logits, in one call
    result = pipe.run(QUESTION)
    assert not ahead or ev.calls == 1  # nothing scored again
    return result, web


def test_out_of_the_domain_clear_evidence_makes_correct_and_the_web_is_not_searched():
    result, web = run({"politician": 0.8})  # 0.8 logit + 0.4 support - 0.1 rank = 1.1 >= 1.0
    assert result.action is Action.CORRECT and result.in_domain is False and web.queries == []
    assert result.evidence_score == pytest.approx(1.1) and to_record(result)["evidence_score"] == pytest.approx(1.1)
    assert [k.source for k in result.knowledge_used] == ["p1", "p2"]  # the passages scoring at least lower
    assert "judged Correct by the evaluator's logit, BM25 support and rank combined (+1.10)" in knowledge_notes(result)
    assert to_record(run({"politician": 0.8}, ahead=True)[0]) | {"timings": 0} == to_record(result) | {"timings": 0}


def test_weak_evidence_no_fit_or_no_evidence_leave_an_out_of_domain_question_ambiguous():
    for result, web in (
        run({"politician": 0.5}),  # 0.5 + 0.4 - 0.1 = 0.8 < 1.0
        run({"politician": 0.8}, evidence=False),  # --no-evidence: the guard alone
        run({"politician": 0.8}, fit=None),  # an evaluator that stores no fit
    ):
        assert result.action is Action.AMBIGUOUS and web.queries == [QUESTION]
    assert run({"politician": 0.5})[0].evidence_score == pytest.approx(0.8)  # consulted, and said
    assert run({"politician": 0.8}, evidence=False)[0].evidence_score is None


def test_the_combination_reads_the_raw_logit_not_the_guarded_score():
    """The scores say 0.3, the logits -3 (as when a topic guard lifts a score): the combination reads the logit.
    (That the real evaluator gives the raw logit beside a lifted score: tests/test_train.py, the topic guard.)"""
    result, _ = run({"politician": -3.0, "European": -3.0})
    assert result.action is Action.AMBIGUOUS and result.evidence_score == pytest.approx(-3.0 + 0.4 - 0.1)


def test_in_the_domain_the_evidence_is_not_consulted():
    result, _ = run({"politician": 0.8}, domain=("occupation",))
    assert result.action is Action.AMBIGUOUS and result.in_domain is True and result.evidence_score is None


def test_the_embedded_evaluator_stores_its_fit_and_a_bad_one_is_one_line(tmp_path):
    fit = evaluator_of("minilm").evidence
    assert fit is not None and fit.logit > 0 and fit.support > 0 and fit.rank < 0  # each piece of evidence counts
    folder = tmp_path / "ev"
    shutil.copytree(EMBEDDED_EVALUATOR, folder)
    write_evidence(folder, FIT, "a test")
    manifest = read_trained(folder)
    assert read_evidence(manifest, folder) == FIT and manifest["evidence"]["fitted_by"] == "a test"
    assert read_trained(folder)["thresholds"] == read_trained(EMBEDDED_EVALUATOR)["thresholds"]  # the rest kept
    manifest["evidence"] = {"logit": "high"}
    (folder / "crag-evaluator.json").write_text(json.dumps(manifest))
    with pytest.raises(EvaluatorError, match="bad 'evidence' entry"):
        read_evidence(read_trained(folder), folder)


def test_the_threshold_itself_is_enough_and_every_unknown_leaves_the_rule_alone():
    exact = EvidenceFit(logit=1.0, support=0.0, rank=0.0, bias=0.0, threshold=0.5)
    assert run({"politician": 0.5}, fit=exact)[0].action is Action.CORRECT  # best == threshold: Correct
    for result, _ in (
        run({"politician": 0.8}, domain_guard=False),  # --any-domain: the paper's rule, scores alone
        run({"politician": 0.8}, domain=None),  # an evaluator that cannot tell its domain
        run({"politician": 0.8}, support=None),  # a retriever that gives no lexical support
    ):
        assert result.action is Action.AMBIGUOUS and result.evidence_score is None


def test_evidence_turns_incorrect_into_correct_only_when_correct_would_keep_a_passage():
    low = {"politician": -0.2, "European Parliament": -0.3, "seal": -0.4}  # all below lower (out of the domain)
    result, web = run({"politician": 0.8}, scores=low)  # nothing Correct would keep (no lexical support)
    assert result.action is Action.AMBIGUOUS and result.evidence_score == pytest.approx(1.1)  # doubt is no proof
    assert web.queries == [QUESTION]  # it searches, as before, rather than read nothing
    result, web = run({"politician": 0.8}, scores=low, lexical_support=0.3)  # every passage supported: kept
    assert result.action is Action.CORRECT and web.queries == [] and len(result.knowledge_used) == 3


def test_a_bad_stored_fit_stops_nothing_until_evidence_is_asked_for(tmp_path):
    folder = tmp_path / "ev"
    shutil.copytree(EMBEDDED_EVALUATOR, folder)
    manifest = read_trained(folder)
    manifest["evidence"] = {**manifest["evidence"], "threshold": "nan"}
    (folder / "crag-evaluator.json").write_text(json.dumps(manifest))
    ev = CrossEncoderEvaluator(folder, batch_size=32, max_length=512)
    fake_pipeline(FakeRetriever(PASSAGES), ev, TH)  # built without reading it (no model loads either)
    with pytest.raises(EvaluatorError, match="bad 'evidence' entry"):
        ev.evidence
