"""The reader as the retrieval evaluator (``reader_judge``): out of the evaluator's domain with no web knowledge,
the reader is asked of each passage alone whether it answers the question, and answers from the first it says yes to.
"""

import json

import pytest

from conftest import fake_pipeline
from crag_cli.actions import Action, Thresholds
from crag_cli.app.ask import answer_notes
from crag_cli.fakes import FakeEvaluator, FakeGenerator, FakeRetriever, FakeWeb
from crag_cli.prompts import JUDGE, TASKS
from crag_cli.records import to_record
from test_cli import invoke

TH = Thresholds(upper=0.5, lower=0.0, filter=-0.5)
PASSAGES = [
    "The session cookie is signed with the secret key.",
    "Sessions expire after 2 weeks unless max_age is given.",
    "The pool opens at most 100 connections by default.",
]
QUESTION = "How long does a session last by default?"


def run(judge, domain=("capital",), web=None, answer="2 weeks", **settings):
    """crag over PASSAGES with an evaluator that doubts them all, out of its domain unless ``domain`` says so."""
    gen = FakeGenerator(answer, judge=judge, check="No.")
    ev = FakeEvaluator({}, default=-0.9, domain=list(domain))
    pipe = fake_pipeline(FakeRetriever(PASSAGES), ev, TH, gen, web=web, task="docqa", **settings)
    streamed: list[str] = []
    return pipe.run(QUESTION, on_token=streamed.append), gen, "".join(streamed)


def test_the_answer_is_read_from_the_first_passage_the_reader_says_answers_the_question_alone_and_unchecked():
    result, gen, streamed = run(["No.", "Yes."])
    assert result.action is Action.AMBIGUOUS and result.in_domain is False
    # one passage a prompt, in reading order, up to the first yes; the third is never asked
    assert len(gen.judges) == 2 and all(m[1]["content"].endswith("\n" + JUDGE) for m in gen.judges)
    assert [[p in m[1]["content"] for p in PASSAGES] for m in gen.judges] == [
        [True, False, False],
        [False, True, False],
    ]
    # the answer's prompt holds that passage alone and shares all but its last line with its judge's
    answer_prompt = gen.messages[0][1]["content"]
    assert PASSAGES[1] in answer_prompt and PASSAGES[0] not in answer_prompt and PASSAGES[2] not in answer_prompt
    assert answer_prompt.endswith(TASKS["docqa"].instruction)
    assert answer_prompt.rsplit("\n", 1)[0] == gen.judges[1][1]["content"].rsplit("\n", 1)[0]
    assert gen.checks == []  # docqa's check is not asked again: the judge asked it first
    assert result.answer == "2 weeks" == streamed and result.not_found is None and result.grounded is True
    record = to_record(result)
    assert [j["answers"] for j in record["judged"]] == [False, True] and record["basis"] == "knowledge"
    assert [k.text for k in result.knowledge_used] == [PASSAGES[1]]  # what the answer was read from
    assert answer_notes(result)[0].startswith("note: the reader judged the passages one by one")
    # both judges' prompts are counted whole, the answer's by its last line (the rest is cached)
    judged = sum(gen.count_tokens(m) for m in gen.judges)
    assert result.prompt_tokens == judged + len(TASKS["docqa"].instruction.split())


def test_no_to_every_passage_is_not_found_and_says_how_many_were_read():
    result, gen, streamed = run("No.")
    assert len(gen.judges) == 3 and gen.messages == [] and streamed == ""
    record = to_record(result)
    assert record["answer"] is None and record["basis"] == "none"
    assert (
        record["not_found"]
        == "Not found in the indexed documents: the reader found no answer in the 3 passages it read."
    )
    assert [j["answers"] for j in record["judged"]] == [False] * 3
    assert record["prompt_tokens"] == sum(gen.count_tokens(m) for m in gen.judges)


def test_the_reader_does_not_judge_in_the_domain_with_web_strips_when_turned_off_or_in_plain_rag():
    for result, gen, _ in (
        run("No.", domain=("session",)),  # in the evaluator's domain: its doubt stands (Incorrect, read doubted)
        run("No.", web=FakeWeb(["Sessions last two weeks."], score=-0.9)),  # the web gave strips
        run("No.", reader_judge=False),  # --no-reader-judge: read together, then checked
    ):
        assert gen.judges == [] and result.judged is None and to_record(result)["judged"] is None
        assert len(gen.messages) == 1
    gen = FakeGenerator("2 weeks", judge="No.")
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator({}, default=-0.9, domain=["capital"]), TH, gen)
    assert pipe.run(QUESTION, mode="rag").answer == "2 weeks" and gen.judges == []
    # a web stage that finds nothing is no web strip: the reader judges
    result, gen, _ = run(["No.", "Yes."], web=FakeWeb([]))
    assert len(gen.judges) == 2 and result.answer == "2 weeks"


def test_a_judge_that_fails_is_the_questions_error():
    class Fails(FakeGenerator):
        def generate(self, messages, max_tokens, on_token=None):
            if messages[-1]["content"].endswith(JUDGE):
                raise RuntimeError("model gone")
            return super().generate(messages, max_tokens, on_token)

    gen = Fails("2 weeks")
    ev = FakeEvaluator({}, default=-0.9, domain=["capital"])
    result = fake_pipeline(FakeRetriever(PASSAGES), ev, TH, gen, task="docqa").run(QUESTION)
    assert result.error == "generation failed: RuntimeError: model gone" and result.answer is None


@pytest.mark.slow
def test_ask_and_batch_with_the_tiny_model_record_the_readers_judgements(built_index, tiny_gguf, tmp_path):
    """The plumbing on a real (tiny, random) model: its replies are no yes, so every passage read is judged and
    the answer is Not found; --no-reader-judge reads them together."""
    common = ("--index", built_index, "--model", tiny_gguf, "--max-tokens", "4")
    question = "What is the population of Berlin?"  # out of the embedded evaluator's domain
    r = invoke("ask", question, *common, "--json")
    rec = json.loads(r.stdout)
    assert r.exit_code == 0 and rec["in_domain"] is False, r.output
    assert rec["judged"] and all(j["answers"] is False for j in rec["judged"])
    assert len(rec["judged"]) == len(rec["internal_knowledge"]) and rec["basis"] == "none"
    assert rec["not_found"].startswith("Not found in the indexed documents: the reader found no answer in the")
    r = invoke("ask", question, *common)
    assert r.stdout.startswith("Not found in the indexed documents") and "judged the passages one by one" in r.stderr
    rec = json.loads(invoke("ask", question, *common, "--no-reader-judge", "--json").stdout)
    assert rec["judged"] is None and rec["prompt_tokens"] > 0
