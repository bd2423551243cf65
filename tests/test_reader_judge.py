"""The reader as the retrieval evaluator (``reader_judge``): out of the evaluator's domain with no web knowledge,
an answer the reader's check declines is not yet "Not found": the reader is asked of the first passage it read, alone,
whether it answers the question, and answers from it when it says yes.
"""

import json

import pytest

from conftest import fake_pipeline
from crag_cli.action.trigger import Action, Thresholds
from crag_cli.app.ask import answer_notes
from crag_cli.pipeline.fakes import FakeEvaluator, FakeReader, FakeRetriever, FakeWeb
from crag_cli.reader.prompts import CHECK, JUDGE, TASKS
from crag_cli.batch.records import to_record
from test_cli import invoke

TH = Thresholds(upper=0.5, lower=0.0, filter=-0.5)
PASSAGES = [
    "Sessions expire after 2 weeks unless max_age is given.",
    "The session cookie is signed with the secret key.",
    "The pool opens at most 100 connections by default.",
]
QUESTION = "How long does a session last by default?"


def run(
    judge, check="No.", domain=("capital",), web=None, answer=("Two weeks", "2 weeks"), engine_cache=False, **settings
):
    """crag over PASSAGES with an evaluator that doubts them all, out of its domain unless ``domain`` says so."""
    gen = FakeReader(list(answer), judge=judge, check=check, engine_cache=engine_cache)
    ev = FakeEvaluator({}, default=-0.9, domain=list(domain))
    pipe = fake_pipeline(FakeRetriever(PASSAGES), ev, TH, gen, web=web, task="docqa", **settings)
    streamed: list[str] = []
    return pipe.run(QUESTION, on_token=streamed.append), gen, "".join(streamed)


def test_a_declined_answer_is_read_again_from_the_first_passage_when_the_reader_says_it_answers_the_question():
    result, gen, streamed = run("Yes.")
    assert result.action is Action.AMBIGUOUS and result.in_domain is False
    # first all three passages together, the answer checked and declined
    assert all(p in gen.messages[0][1]["content"] for p in PASSAGES) and gen.checks[0][1]["content"].endswith(CHECK)
    # then the first passage alone is judged; the others are never asked
    assert len(gen.judges) == 1 and gen.judges[0][1]["content"].endswith("\n" + JUDGE)
    assert [p in gen.judges[0][1]["content"] for p in PASSAGES] == [True, False, False]
    # the answer's prompt holds that passage alone and shares all but its last line with its judge's
    answer_prompt = gen.messages[1][1]["content"]
    assert [p in answer_prompt for p in PASSAGES] == [True, False, False]
    assert answer_prompt.endswith(TASKS["docqa"].instruction)
    assert answer_prompt.rsplit("\n", 1)[0] == gen.judges[0][1]["content"].rsplit("\n", 1)[0]
    assert len(gen.checks) == 1 and len(gen.messages) == 2  # the new answer is not checked again
    assert result.answer == "2 weeks" == streamed and result.not_found is None and result.grounded is True
    record = to_record(result)
    assert [j["answers"] for j in record["judged"]] == [True] and record["basis"] == "knowledge"
    assert record["checked"] == "No." and record["reader_answer"] is None
    assert [k.text for k in result.knowledge_used] == [PASSAGES[0]]  # what the answer was read from
    assert answer_notes(result)[0].startswith("note: the reader judged the first passage alone")
    # every prompt counted: the first answer, the check's last line, the judge, the answer's last line
    first = gen.count_tokens(gen.messages[0]) + len(CHECK.split())
    assert result.prompt_tokens == first + gen.count_tokens(gen.judges[0]) + len(TASKS["docqa"].instruction.split())


def words(messages: list[dict]) -> list[str]:
    return [w for m in messages for w in m["content"].split()]


def read_anew_by_hand(prompts: list[list[dict]]) -> int:
    """The words an engine that keeps the last prompt reads: the first prompt whole, then each one's words after
    its common start with the prompt before."""
    total, held = 0, []
    for p in map(words, prompts):
        common = next((i for i, (a, b) in enumerate(zip(p, held)) if a != b), min(len(p), len(held)))
        total, held = total + len(p) - common, p
    return total


@pytest.mark.parametrize("judge", ["Yes.", "No."])
def test_an_engine_that_says_what_it_had_cached_is_charged_only_what_it_read_anew(judge):
    result, gen, _ = run(judge, engine_cache=True)
    prompts = [gen.messages[0], gen.checks[0], gen.judges[0]] + gen.messages[1:]
    assert len(prompts) == (4 if judge == "Yes." else 3)
    assert result.prompt_tokens == read_anew_by_hand(prompts)
    # the judge's prompt starts as the answer's did, up to the first passage's end: it costs what follows
    judge_anew = read_anew_by_hand(prompts[:3]) - read_anew_by_hand(prompts[:2])
    assert 0 < judge_anew < gen.count_tokens(gen.judges[0]) - gen.count_tokens([gen.judges[0][0]])
    uncached, _, _ = run(judge)
    assert uncached.prompt_tokens > result.prompt_tokens  # counted whole when the engine does not say


def test_no_to_the_first_passage_is_not_found_and_no_later_passage_is_asked():
    result, gen, streamed = run(["No.", "Yes."])
    assert len(gen.judges) == 1 and len(gen.messages) == 1 and streamed == ""
    record = to_record(result)
    assert record["answer"] is None and record["basis"] == "none" and record["reader_answer"] == "Two weeks"
    nf = "Not found in the indexed documents: the reader found no answer in the 1 passage it read."
    assert record["not_found"] == nf and [j["answers"] for j in record["judged"]] == [False]
    first = gen.count_tokens(gen.messages[0]) + len(CHECK.split())
    assert record["prompt_tokens"] == first + sum(gen.count_tokens(m) for m in gen.judges)


def test_the_reader_does_not_judge_an_answer_its_check_keeps_in_the_domain_with_web_strips_or_turned_off():
    result, gen, _ = run("Yes.", check="Yes.", answer=("2 weeks",))  # the check keeps the first answer
    assert gen.judges == [] and result.judged is None and result.answer == "2 weeks"
    for result, gen, _ in (
        run("Yes.", domain=("session",)),  # in the evaluator's domain: its doubt stands (Incorrect, read doubted)
        run("Yes.", web=FakeWeb(["Sessions last two weeks."], score=-0.9)),  # the web gave strips
        run("Yes.", reader_judge=False),  # --no-reader-judge: the declined answer is Not found
    ):
        assert gen.judges == [] and to_record(result)["judged"] is None and result.not_found is not None
    gen = FakeReader("2 weeks", judge="Yes.", check="No.")
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator({}, default=-0.9, domain=["capital"]), TH, gen)
    assert pipe.run(QUESTION, mode="rag", task="docqa").not_found is not None and gen.judges == []  # plain RAG
    result, gen, _ = run("Yes.", web=FakeWeb([]))  # a web stage that finds nothing: no web strip
    assert len(gen.judges) == 1 and result.answer == "2 weeks"


def test_a_judge_that_fails_is_the_questions_error():
    class Fails(FakeReader):
        def generate(self, messages, max_tokens, on_token=None):
            if messages[-1]["content"].endswith(JUDGE):
                raise RuntimeError("model gone")
            return super().generate(messages, max_tokens, on_token)

    gen = Fails("2 weeks", check="No.")
    ev = FakeEvaluator({}, default=-0.9, domain=["capital"])
    result = fake_pipeline(FakeRetriever(PASSAGES), ev, TH, gen, task="docqa").run(QUESTION)
    assert result.error == "generation failed: RuntimeError: model gone" and result.answer is None
    assert result.not_found is None and to_record(result)["basis"] is None  # a failure, not "Not found"


@pytest.mark.slow
def test_ask_with_the_tiny_model_records_the_readers_judgements(built_index, tiny_gguf):
    """The plumbing on a real (tiny, random) model: the first passage is judged exactly when its check's reply is no."""
    common = ("--index", built_index, "--model", tiny_gguf, "--max-tokens", "4")
    question = "What is the population of Berlin?"  # out of the embedded evaluator's domain
    rec = json.loads(invoke("ask", question, *common, "--json").stdout)
    assert rec["in_domain"] is False and rec["checked"] is not None
    assert (rec["judged"] is None) == (not rec["checked"].lower().startswith("no"))
