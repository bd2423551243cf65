"""Out of the evaluator's domain with no web knowledge, an answer that the passages read do not state is withheld:
"Not found", the reader's words kept in the record (the default; ``--model-knowledge`` gives it)."""

import json

import pytest

from conftest import fake_pipeline
from crag_cli.action.trigger import Thresholds
from crag_cli.app.ask import answer_notes
from crag_cli.pipeline.fakes import FakeEvaluator, FakeReader, FakeRetriever, FakeWeb
from crag_cli.action.knowledge import Evidence, Reading
from crag_cli.batch.records import to_record
from test_cli import invoke

TH = Thresholds(upper=0.5, lower=0.0, filter=-0.5)
PASSAGES = [
    "The session cookie is signed with the secret key.",
    "Sessions expire after 2 weeks unless max_age is given.",
]
QUESTION = "How long does a session last by default?"


class PassagesOnly:
    """A reading policy that reads the passages and leaves the web's strips unread."""

    def read(self, evidence: Evidence) -> Reading:
        return Reading(evidence.internal, "the passages")

    def web_unread(self, internal, web_supports) -> bool:
        return False


def run(answer, domain=("capital",), web=None, check="Yes.", judge="Yes.", mode="crag", reading=None, **settings):
    """crag over PASSAGES with an evaluator that doubts them all, out of its domain unless ``domain`` says so."""
    gen = FakeReader(answer, check=check, judge=judge)
    ev = FakeEvaluator({}, default=-0.9, domain=list(domain))
    pipe = fake_pipeline(FakeRetriever(PASSAGES), ev, TH, gen, web=web, reading=reading, task="docqa", **settings)
    streamed: list[str] = []
    return pipe.run(QUESTION, mode=mode, on_token=streamed.append), "".join(streamed)


def test_an_answer_the_passages_do_not_state_is_not_found_and_nothing_streams():
    result, streamed = run("Sessions last one hour by default.")
    record = to_record(result)
    assert record["answer"] is None and record["basis"] == "none" and streamed == ""
    assert record["not_found"] == (
        "Not found in the indexed documents: the reader's answer is not stated in the 2 passages it read."
    )
    assert record["reader_answer"] == "Sessions last one hour by default." and record["grounded"] is False
    assert any("which the passages it read do not state" in n for n in answer_notes(result))


def test_a_stated_answer_stands_even_as_a_sentence_that_restates_the_question():
    for answer in ("2 weeks", "A session lasts 2 weeks by default."):
        result, streamed = run(answer)
        assert result.answer == answer == streamed and result.grounded is True and result.not_found is None


def test_the_answer_is_given_with_model_knowledge_in_the_domain_with_web_knowledge_and_in_plain_rag():
    unstated = "Sessions last one hour by default."
    for result, streamed in (
        run(unstated, model_knowledge=True),
        run(unstated, domain=("session",)),  # in the evaluator's domain
        run(unstated, web=FakeWeb(["Cookies are signed with a key."], score=-0.9)),  # the web gave strips
        run(unstated, mode="rag"),
    ):
        assert result.answer == unstated == streamed and result.grounded is False and result.not_found is None
        assert "grounded: false" in answer_notes(result)[-1]
    # pages fetched, their strips left unread for the passages: the web had knowledge, the answer stands
    result, streamed = run(unstated, web=FakeWeb(["Cookies."], score=-0.9), reading=PassagesOnly())
    assert result.external_knowledge.pages and result.external_knowledge.strips == []
    assert result.answer == unstated == streamed and result.grounded is False
    result, _ = run(unstated, web=FakeWeb([]))  # a web stage that finds nothing: no page, no strip
    assert result.answer is None and result.reader_answer == unstated


def test_an_answer_read_from_the_one_passage_judged_is_withheld_when_that_passage_does_not_state_it():
    # the check declines the answer over both; the judge says yes to the first passage, which does not say 2 weeks
    result, _ = run(["2 weeks", "2 weeks"], check="No.", judge="Yes.")
    assert [j["answers"] for j in result.judged] == [True] and result.answer is None
    assert result.reader_answer == "2 weeks" and "not stated in the 1 passage it read" in result.not_found


@pytest.mark.slow
def test_ask_with_the_tiny_model_gives_no_answer_that_its_passages_do_not_state(built_index, tiny_gguf):
    """The plumbing on a real (tiny, random) model, web off, out of the evaluator's domain: an answer given is
    grounded in what it was read from; one that is not is withheld, its words kept, and --model-knowledge gives it."""
    common = ("ask", "What is the population of Berlin?", "--index", built_index, "--model", tiny_gguf)
    rec = json.loads(invoke(*common, "--max-tokens", "4", "--json").stdout)
    assert rec["in_domain"] is False and rec["external_knowledge"]["strips"] == []
    if rec["answer"] is not None:
        assert rec["grounded"] is True
    elif rec["judged"] is None or any(j["answers"] for j in rec["judged"]):  # read, then withheld
        assert rec["grounded"] is False and rec["reader_answer"] and "not stated" in rec["not_found"]
        given = json.loads(invoke(*common, "--max-tokens", "4", "--model-knowledge", "--json").stdout)
        assert given["answer"] == rec["reader_answer"] and given["grounded"] is False
