"""Pipeline.run with the shipped fakes: what reaches the reader, and what the record says."""

from crag_cli.action.trigger import Action, Thresholds
from crag_cli.pipeline.fakes import FakeEvaluator, FakeReader, FakeRetriever, FakeWeb
from conftest import PAPER_RULES, fake_pipeline
from crag_cli.app.ask import answer_notes
from crag_cli.reader.prompts import CHECK, TASKS, build_messages
from crag_cli.batch.records import to_record
from crag_cli.settings import Settings

TH = Thresholds(upper=0.5, lower=0.0, filter=-0.5)
PASSAGES = [
    "Anna Berg was a Swedish seal hunter. Seal hunting was her occupation for years. She lived in Umea.",
    "Ole Krarup was a Danish politician. He was a professor of law. He wrote several books.",
    "Ole Krarup sat in the European Parliament. He was born in 1935. He died in 2017 in Copenhagen.",
]
SCORES = {"politician": 0.8, "European Parliament": 0.6, "seal": 0.3}


def reference(gen: FakeReader) -> list[str]:
    user = gen.messages[-1][1]["content"]
    block = user[user.index("<<<REFERENCE") : user.index("REFERENCE>>>")]
    return [line for line in block.splitlines() if line.startswith("[")]


def test_correct_gives_the_kept_passages_in_retrieval_order_unlabelled_and_fewer():
    """The evaluator chooses which passages are kept (over the lower threshold); they keep the index's order."""
    gen = FakeReader("politician")
    scores = {"politician": 0.6, "European Parliament": 0.9, "seal": -0.2}
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator(scores), TH, gen, strips=5, strips_correct=2)
    result = pipe.run("What is Ole Krarup's occupation?", answers=["politician"])
    assert result.action is Action.CORRECT
    lines = reference(gen)
    assert len(lines) == 2  # Correct: strips_correct, not strips; the seal hunter (below lower) is not kept
    assert lines[0].startswith("[1] ") and "Danish politician" in lines[0]
    assert lines[1].startswith("[2] ") and "European Parliament" in lines[1]
    # the evaluator's verdicts stay out of the prompt: it is plain RAG's prompt over crag's knowledge
    assert "relevance" not in gen.messages[-1][1]["content"]
    assert gen.messages[-1] == build_messages(result.question, result.knowledge_used, "popqa")
    assert [k.relevance for k in result.knowledge_used] == ["high", "high"]  # kept for crag ask's listing
    assert result.grounded is True and to_record(result)["grounded"] is True


def test_ambiguous_lets_the_web_lead_when_no_passage_has_support_and_flags_an_unsupported_answer():
    """A retriever that cannot weigh strips: no passage has lexical support, so the web's strips lead and the
    passages' best follows them."""
    gen = FakeReader("seal hunter and sailor")
    web = FakeWeb(["Ole Krarup (1935-2017) was a Danish jurist.", "Ole Krarup was a Danish jurist and writer."])
    web.score = 0.4
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator({"seal": 0.3}), TH, gen, web=web)
    result = pipe.run("What is Ole Krarup's occupation?")
    assert result.action is Action.AMBIGUOUS and web.queries
    lines = reference(gen)
    assert ["Danish jurist." in lines[0], "jurist and writer" in lines[1], "seal hunter" in lines[2]] == [True] * 3
    assert len(lines) == 3 and "the web's strips, then the best of the passages" in result.reading
    assert result.grounded is False  # "sailor" occurs nowhere in the knowledge


def test_a_question_outside_the_evaluators_domain_is_not_judged_correct_and_reads_its_passages_first():
    """The evaluator is sure, but of a question unlike those it was trained on: both sources, the passages first."""
    scores = {"politician": 0.6, "European Parliament": 0.9, "seal": -0.2}
    web = FakeWeb(["Ole Krarup was a Danish jurist."], score=0.4)

    def run(domain, **kwargs):
        gen = FakeReader("politician")
        ev = FakeEvaluator(scores, domain=domain)
        pipe = fake_pipeline(FakeRetriever(PASSAGES), ev, TH, gen, web=web, strips=5, strips_correct=2, **kwargs)
        return pipe.run("What is Ole Krarup's occupation?"), reference(gen)

    result, lines = run(["capital"])  # not in the domain: Ambiguous, though no passage has lexical support
    assert result.action is Action.AMBIGUOUS and result.in_domain is False and to_record(result)["in_domain"] is False
    # the passages lead (one scores over upper; those over the filter threshold, in retrieval order), then the web
    assert ["seal hunter" in lines[0], "Danish politician" in lines[1], "Danish jurist" in lines[3]] == [True] * 3
    assert run(["occupation"])[0].action is Action.CORRECT  # in the domain: Correct as before
    assert run(["capital"], domain_guard=False)[0].action is Action.CORRECT  # the paper's rule
    result, _ = run(None)  # an evaluator that cannot tell: Correct, and the record says it cannot tell
    assert result.action is Action.CORRECT and to_record(result)["in_domain"] is None


def test_task_auto_answers_a_question_out_of_the_evaluators_domain_with_the_references_sentence():
    """``auto``: docqa's instruction (and its 64 tokens) out of the domain, popqa's in it, in every mode."""

    def run(domain, mode="crag", task="auto"):
        gen = FakeReader("politician")
        pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator(SCORES, domain=domain), TH, gen, task=task)
        result = pipe.run("What is Ole Krarup's occupation?", mode=mode)
        return result, gen.messages[0][1]["content"], gen.max_tokens[0]  # the answer's prompt (docqa's check follows)

    docqa, popqa = TASKS["docqa"].instruction, TASKS["popqa"].instruction
    for mode in ("crag", "rag"):  # plain RAG asks the evaluator's domain too (no passage is scored)
        result, prompt, max_tokens = run(["capital"], mode)  # out of the domain
        assert prompt.endswith(docqa) and max_tokens == TASKS["docqa"].max_tokens, mode
        assert to_record(result)["task"] == "auto" and to_record(result)["prompt_task"] == "docqa"
        assert result.in_domain is False and result.evaluator == "fake"
        result, prompt, max_tokens = run(["occupation"], mode)  # in the domain
        assert prompt.endswith(popqa) and max_tokens == TASKS["popqa"].max_tokens and result.prompt_task == "popqa"
    assert run(None)[1].endswith(popqa)  # an evaluator that cannot tell: the short phrase, as before
    assert run(["capital"], "no-retrieval")[1].endswith(popqa)  # no reference to quote a sentence of
    gen = FakeReader("politician")  # nor when crag found nothing: Incorrect, no web
    pipe = fake_pipeline(FakeRetriever([]), FakeEvaluator({}, domain=["capital"]), TH, gen, task="auto")
    result = pipe.run("What is Ole Krarup's occupation?")
    assert result.action is Action.INCORRECT and not result.knowledge_used and result.prompt_task == "popqa"
    assert result.not_found == "Not found in the indexed documents; web search is off." and not gen.messages
    assert run(["occupation"], task="docqa")[1].endswith(docqa)  # a task asked for is the task used


def test_a_docqa_answer_that_only_restates_the_question_is_asked_again_for_the_references_sentence():
    """ "pass" for "What does the pass statement do?" names what was asked about: the reader is asked once more,
    for the reference's sentence; the stream shows only the answer given, the record keeps the first."""
    passages = ["The pass statement is a null operation: when it is executed, nothing happens."]
    question = "What does the pass statement do?"

    def run(*replies, task="docqa", stream=True, gen=None):
        gen = gen or FakeReader(list(replies))
        streamed: list[str] = []
        pipe = fake_pipeline(FakeRetriever(passages), FakeEvaluator({}, default=0.9), TH, gen, task=task)
        result = pipe.run(question, on_token=streamed.append if stream else None)
        run.pieces = streamed
        return result, gen, "".join(streamed)

    result, gen, streamed = run("The pass statement", "When it is executed, nothing happens.")
    assert result.answer == "When it is executed, nothing happens." and result.restated == "The pass statement"
    assert len(gen.messages) == 2 and gen.messages[1][1]["content"].endswith(TASKS["sentence"].instruction)
    assert "null operation" in gen.messages[1][1]["content"]  # the same knowledge, asked again
    assert streamed == "When it is executed, nothing happens."  # the restating answer was held back, not shown
    record = to_record(result)
    assert record["restated"] == "The pass statement" and record["answer"] == result.answer
    assert result.grounded is True  # judged on the answer given
    # the first prompt read, then the last lines of the second and the check (the rest is the first's, cached)
    again = len(TASKS["sentence"].instruction.split())
    assert result.prompt_tokens == gen.count_tokens(gen.messages[0]) + again + len(CHECK.split())

    result, gen, streamed = run("A null operation: when it is executed", "never asked")  # an answer of its own
    assert result.answer == "A null operation: when it is executed" and result.restated is None
    assert len(gen.messages) == 1 and run.pieces == [result.answer]  # shown whole, once it stands
    assert run("Nothing", "never asked")[2] == "Nothing"
    result, gen, streamed = run("pass\nA null operation.", "Nothing happens.")  # the first line is the answer
    assert result.restated == "pass" and streamed == "Nothing happens."  # the restating line never streamed
    result, gen, streamed = run("pass", "")  # a second ask that answers nothing: the first answer stands
    assert result.answer == "pass" and result.restated is None and streamed == "pass"

    class FailsSecond(FakeReader):
        def generate(self, messages, max_tokens, on_token=None):
            if self.messages:
                raise RuntimeError("model gone")
            return super().generate(messages, max_tokens, on_token)

    result, gen, streamed = run(gen=FailsSecond("pass"))  # a second ask that fails: the first answer stands
    assert result.answer == "pass" and result.restated is None and result.error is None and streamed == "pass"
    assert result.grounded is True and result.prompt_tokens
    result, gen, _ = run("pass", "Nothing happens.", stream=False)
    assert result.answer == "Nothing happens." and result.restated == "pass"
    # popqa's short phrase may rightly repeat the question's words (a sport in a club's name): never asked again
    result, gen, _ = run("pass", "never asked", task="popqa")
    assert result.answer == "pass" and result.restated is None and len(gen.messages) == 1


def test_a_docqa_answer_is_one_sentence_given_as_the_knowledge_has_it_when_reworded():
    """A reader that shortens or rewords its reference's sentence gets the sentence back: the user reads the
    document's own words (the record keeps the reader's); an answer that is a phrase of it stays as it is; a
    reader that runs on past the sentence asked for is cut to it."""
    passages = [
        "Adults are rarely infected. Children are infected two to three times more often than adults, mostly by RSV.",
        "Influenza is an acute respiratory disease.",
    ]
    question = "How much more often are children infected than adults?"

    def run(reply, task="docqa"):
        streamed: list[str] = []
        pipe = fake_pipeline(FakeRetriever(passages), FakeEvaluator({}, default=0.9), TH, FakeReader(reply), task=task)
        result = pipe.run(question, on_token=streamed.append)
        return result, streamed

    result, streamed = run("Children get infected more often than adults.")
    sentence = "Children are infected two to three times more often than adults, mostly by RSV."
    assert result.answer == sentence and result.reader_answer == "Children get infected more often than adults."
    assert streamed == [sentence] and result.grounded is True  # the stream shows the answer given, whole
    record = to_record(result)
    assert record["answer"] == sentence and record["reader_answer"] == "Children get infected more often than adults."
    assert answer_notes(result) == [
        "note: the reader answered 'Children get infected more often than adults.': given as the sentence asked for"
    ]
    result, _ = run("two to three times more often")  # the document's own words already: kept as they are
    assert result.answer == "two to three times more often" and result.reader_answer is None
    result, _ = run("Mostly in winter.")  # nothing like it in the knowledge: the reader's answer stands
    assert result.answer == "Mostly in winter." and result.reader_answer is None and result.grounded is False
    ran_on = "Children are infected two to three times more often than adults. Adults are rarely infected, and"
    result, _ = run(ran_on)  # the sentence asked for, not the reader's run on to max_tokens
    assert result.answer == "Children are infected two to three times more often than adults."
    assert result.reader_answer == ran_on
    result, _ = run("Children get infected more often than adults. And so on")  # its first sentence judged
    assert result.answer == sentence
    result, streamed = run("Children get infected more often than adults.", task="popqa")  # a short phrase: never
    assert result.reader_answer is None and result.answer == "Children get infected more often than adults."
    assert len(streamed) > 1  # and it streams piece by piece


def _ambiguous(web_texts, passages=None, **kwargs):
    """An Ambiguous question (every strip scored between the thresholds) over a retriever that weighs strips by
    the share of the question's words they hold."""
    passages = passages or [f"Ole Krarup fact {i} in five more words." for i in range(6)]  # 2 of 6 words
    scores = {f"fact {i}": 0.1 + 0.05 * i for i in range(6)}
    web = FakeWeb(web_texts, score=0.25)
    gen = FakeReader("jurist")
    pipe = fake_pipeline(FakeRetriever(passages, support=0.8), FakeEvaluator(scores), TH, gen, web=web, **kwargs)
    result = pipe.run("Where did Ole Krarup study law?")
    assert result.action is Action.AMBIGUOUS
    return result, reference(gen)


def test_ambiguous_reads_the_source_that_holds_more_of_the_question_alone():
    # the web's strips hold 5 of the question's 6 words, the passages 2: the web alone, as Incorrect reads it
    result, lines = _ambiguous([f"Ole Krarup did study law in town {i}." for i in range(3)])
    assert ["town" in line for line in lines] == [True] * 3 and result.internal_knowledge == []
    assert result.reading == "the web's strips (they hold more of the question)"
    town = [f"Ole Krarup did study law in town {i}." for i in range(6)]  # 8 words each
    _, lines = _ambiguous(town, knowledge_words=20, read_words=1000)  # --knowledge-words bounds the web alone
    assert len(lines) == 2 and "town 0" in lines[0]
    _, lines = _ambiguous(town, strips=4, read_words=1000)  # and --strips
    assert len(lines) == 4
    # the passages hold more than the web's strips (2 of 6 against 1): the passages alone, in retrieval order
    result, lines = _ambiguous([f"A page on Krarup, item {i}." for i in range(3)], passages=None, close_support=0.1)
    assert [f"fact {i}" in line for i, line in enumerate(lines)] == [True] * 6
    assert to_record(result)["external_knowledge"]["strips"] == []  # the record shows what the reader read


def test_ambiguous_reads_both_sources_when_they_hold_the_question_alike_within_read_words():
    web = [f"Ole Krarup was web item {i}." for i in range(4)]  # 2 of 6 words, as the passages: both are read
    result, lines = _ambiguous(web, read_words=30)  # 8-word passages: 3 of them and the web's best (5 words)
    assert [f"fact {i}" in line for i, line in enumerate(lines[:3])] == [True] * 3
    assert "web item 0" in lines[3] and len(lines) == 4
    assert [s["source"] for s in to_record(result)["internal_knowledge"]] == ["p0", "p1", "p2"]
    _, lines = _ambiguous(web, read_words=30, close_support=0.0)  # 0: one source, always
    assert len(lines) == 3 and not any("web item" in line for line in lines)
    _, lines = _ambiguous(web, read_words=10)  # the least allowed: one strip of the leading source, the other's best
    assert len(lines) == 2 and "fact 0" in lines[0] and "web item 0" in lines[1]


def test_plain_rag_prompt_is_unranked_and_no_retrieval_is_not_judged_for_grounding():
    gen = FakeReader("Copenhagen")
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator(SCORES), TH, gen, top_k=2)
    result = pipe.run("Where did Ole Krarup die?", mode="rag")
    lines = reference(gen)
    assert [line[:4] for line in lines] == ["[1] ", "[2] "] and "relevance" not in gen.messages[-1][1]["content"]
    assert "seal" in lines[0]  # retrieval order, unscored
    assert result.grounded is False  # Copenhagen is in passage 3, not among the top 2
    assert pipe.run("Where did Ole Krarup die?", mode="no-retrieval").grounded is None
    assert pipe.run("Tell me about Ole Krarup.", mode="rag", task="bio").grounded is None  # not a short answer


def test_batch_summary_counts_answers_given_that_their_knowledge_does_not_state():
    from crag_cli.batch import Summary

    s = Summary()
    for rec in (
        {"action": "correct", "grounded": True, "correct": True},
        {"action": "ambiguous", "grounded": False, "correct": False, "answer": "a sailor"},
        {"action": "ambiguous", "grounded": False, "answer": None, "basis": "none"},  # withheld: not found
        {"mode": "no-retrieval", "grounded": None},
    ):
        s.add(rec)
    assert s.ungrounded == 1 and s.to_dict()["ungrounded"] == 1 and s.not_found == 1
    assert "1 answer(s) their knowledge does not state (grounded: false)" in s.line()


def test_scoring_a_group_ahead_gives_the_same_records_in_two_evaluator_calls():
    questions = ["What is Ole Krarup's occupation?", "Where did Ole Krarup die?", "What did Anna Berg do?"]
    passages = [p + " It is a longer passage now. It has more strips than one." for p in PASSAGES]  # 2 strips each
    one_by_one = FakeEvaluator(SCORES)
    pipe = fake_pipeline(
        FakeRetriever(passages), one_by_one, TH, FakeReader("x"), strips=5, strips_correct=2, refine=True
    )
    want = [to_record(pipe.run(q)) for q in questions]
    assert one_by_one.calls == 2 * len(questions)  # passages, then strips, per question

    grouped = FakeEvaluator(SCORES)
    pipe = fake_pipeline(FakeRetriever(passages), grouped, TH, FakeReader("x"), strips=5, strips_correct=2, refine=True)
    pipe.score_ahead(questions)
    assert grouped.calls == 2  # every passage, then every strip refinement will need
    got = [pipe.run(q) for q in questions]
    assert grouped.calls == 2  # nothing scored again
    assert [{k: v for k, v in to_record(r).items() if k != "timings"} for r in got] == [
        {k: v for k, v in w.items() if k != "timings"} for w in want
    ]
    assert all(r.timings["evaluate"] > 0 and r.timings["total"] >= r.timings["evaluate"] for r in got)
    pipe.score_ahead([])  # forgets the group: a question asked again is scored again
    pipe.run(questions[0])
    assert grouped.calls == 4


def test_whole_passages_keep_retrieval_order_and_strips_follow_the_ranking():
    """An evaluator out of its domain may score a far-down passage highest: whole passages keep the index's order
    whatever the ranking; strips cut from them (--refine) follow it, fused keeping the top retrieved strip."""
    passages = [f"Filler passage number {i} about other things entirely. It says nothing here." for i in range(10)]
    passages[0] = "The bovine coronavirus genome is about 31 kb long. It is a large RNA genome."
    passages[9] = "Bovine herds are large. Coronavirus outbreaks in herds are studied."
    scores = {"31 kb": 0.6, "herds": 0.7}
    for refine, ranking, expected in (
        (False, "evaluator", "31 kb"),
        (True, "fused", "31 kb"),
        (True, "evaluator", "herds"),
    ):
        gen = FakeReader("31 kb")
        pipe = fake_pipeline(
            FakeRetriever(passages),
            FakeEvaluator(scores, default=0.1),
            TH,
            gen,
            strips=5,
            strips_correct=1,
            ranking=ranking,
            refine=refine,
        )
        result = pipe.run("What is the size of the bovine coronavirus genome?")
        assert result.action is Action.CORRECT
        lines = reference(gen)
        assert len(lines) == 1 and expected in lines[0], (refine, ranking, lines)


def test_read_words_bounds_what_an_ambiguous_question_reads_but_keeps_one_strip():
    long_passages = [f"Passage {i} " + " ".join(f"word{j}" for j in range(80)) + "." for i in range(5)]
    for budget, expected in ((450, 5), (200, 2), (10, 1)):
        gen = FakeReader("x")
        pipe = fake_pipeline(
            FakeRetriever(long_passages), FakeEvaluator({}, default=0.2), TH, gen, strips=5, read_words=budget
        )
        result = pipe.run("Which passage?")
        assert result.action is Action.AMBIGUOUS
        assert len(reference(gen)) == expected == len(result.internal_knowledge), budget


def test_read_share_reads_the_first_passage_and_those_holding_the_question_nearly_as_well_as_the_best():
    """--read-share: after the first (retrieval order), a passage is read only when its share of the question's
    words is at least that fraction of the best passage's; 0 reads every kept one (within --read-words)."""
    passages = [
        "Ole Krarup was a Danish politician.",  # 2 of the question's 6 words: first, always read
        "Law is a subject.",  # 1 of 6: under half the best's
        "Ole Krarup did study law in Copenhagen.",  # 5 of 6: the best
        "Law again.",  # 1 of 6: under half the best's
        "Krarup did study at a university.",  # 3 of 6: 0.6 of the best's
    ]
    for share, expected in ((0.0, [0, 1, 2, 3, 4]), (0.55, [0, 2, 4]), (0.7, [0, 2]), (1.0, [0, 2])):
        gen = FakeReader("Copenhagen")
        pipe = fake_pipeline(
            FakeRetriever(passages, support=1.0), FakeEvaluator({}, default=0.2), TH, gen, strips=5, read_share=share
        )
        result = pipe.run("Where did Ole Krarup study law?")
        assert result.action is Action.AMBIGUOUS
        assert [k.source for k in result.internal_knowledge] == [f"p{i}" for i in expected], share
        assert len(reference(gen)) == len(expected)


def test_kept_passages_go_whole_and_an_unsure_evaluator_keeps_more_of_them():
    """A passage is one strip; Correct keeps the passages over lower, Ambiguous every one over the filter."""
    passages = [
        "Intro sentence about viruses in general. The bovine coronavirus genome is about 31 kb long.",
        "Bovine coronavirus is studied in herds. Its genome size matters for sequencing.",
        "Unrelated text about seals and hunting.",
    ]
    question = "What is the size of the bovine coronavirus genome?"
    # 31 kb: under lower (0) but over the filter (-0.5); seals: under the filter
    for herds, action, kept in ((0.7, Action.CORRECT, [1]), (0.3, Action.AMBIGUOUS, [0, 1])):
        scores = {"31 kb": -0.2, "herds": herds, "seals": -0.9}
        gen = FakeReader("31 kb")
        pipe = fake_pipeline(FakeRetriever(passages), FakeEvaluator(scores), TH, gen, strips=5, strips_correct=3)
        result = pipe.run(question)
        assert result.action is action
        assert [s.text for s in result.internal_knowledge] == [passages[i] for i in kept]  # whole passages
        assert sorted(line.split("] ", 1)[1] for line in reference(gen)) == sorted(passages[i] for i in kept)


def test_a_repeated_passage_reaches_the_reader_once():
    """The same paragraph in two files takes one place in the prompt, not two."""
    passages = [
        "Ole Krarup was a Danish politician.",
        "Exception handlers are specified with the try statement.",
        "Exception  handlers are specified with the try statement.",  # a copy (spacing aside)
        "Ole Krarup sat in the European Parliament.",
    ]
    gen = FakeReader("politician")
    pipe = fake_pipeline(FakeRetriever(passages), FakeEvaluator({}, default=0.2), TH, gen, strips=3)
    result = pipe.run("What is Ole Krarup's occupation?")
    texts = [line.split("] ", 1)[1] for line in reference(gen)]
    assert sum("Exception" in t for t in texts) == 1
    assert len(texts) == 3 and "European Parliament" in texts[2]
    assert len(result.internal_knowledge) == 3


def test_lexical_support_keeps_passages_the_evaluator_alone_would_drop_for_the_web(tmp_path):
    """Out of its domain the evaluator scores every passage under lower; a passage holding the question's
    words is still read (Ambiguous, beside the web's strips), and a question the folder lacks stays Incorrect."""
    from crag_cli.index import BM25Index, build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("The bovine coronavirus genome is about 31 kb long.", encoding="utf-8")
    (docs / "b.txt").write_text("Seal hunting was an occupation in the north.", encoding="utf-8")
    (docs / "c.txt").write_text("Coronavirus outbreaks in herds are studied.", encoding="utf-8")
    build_index(docs, tmp_path / "ix")
    index = BM25Index.load(tmp_path / "ix")
    low = FakeEvaluator({}, default=-0.3)  # under lower (0), over the filter (-0.5): the evaluator is unsure
    web = FakeWeb(["A web page about coronavirus genomes."], score=0.2)
    cases = (
        ("How long is the bovine coronavirus genome?", 0.6, Action.AMBIGUOUS),  # every term but "how"
        ("What is the size of the bovine coronavirus genome?", 0.6, Action.INCORRECT),  # "size": nowhere, weighs most
        ("Which coronavirus infects Antarctic penguins of Adelie Land?", 0.6, Action.INCORRECT),
    )
    for question, support, action in cases:
        gen = FakeReader("31 kb")
        pipe = fake_pipeline(index, low, TH, gen, web=web, lexical_support=support)
        result = pipe.run(question)
        assert result.action is action, (question, support)
        lines = reference(gen)
        if action is Action.AMBIGUOUS:
            # the passages hold more of the question than the web's strip does: they alone are read
            assert "31 kb long" in lines[0] and not any(web.texts[0] in line for line in lines)
        else:
            assert len(lines) == 1 and web.texts[0] in lines[0]


def test_lexical_support_needs_a_passage_the_evaluator_does_not_reject_and_one_turns_it_off():
    """Support counts only for a passage scoring at least the filter threshold; 1 gives the paper's rule."""
    web = FakeWeb(["A web page."], score=0.2)
    cases = (
        (-0.3, 0.9, 0.5, Action.AMBIGUOUS),  # under lower, over the filter, supported
        (-0.7, 0.9, 0.5, Action.INCORRECT),  # under the filter (-0.5): rejected outright, its words aside
        (-0.3, 1.0, 1.0, Action.INCORRECT),  # every term held, but 1 is off
        (-0.3, 0.5, 0.5, Action.INCORRECT),  # support must exceed the share
    )
    for score, support, share, action in cases:
        pipe = fake_pipeline(
            FakeRetriever(PASSAGES[:1], support=support),
            FakeEvaluator({}, default=score),
            TH,
            FakeReader("x"),
            web=web,
            lexical_support=share,
        )
        assert pipe.run("Which occupation?").action is action, (score, support, share)


def test_correct_keeps_a_supported_passage_the_evaluator_is_lukewarm_about():
    """Correct keeps passages over lower, and those over the filter threshold whose words hold the question."""
    scores = {"politician": 0.8, "European Parliament": -0.2, "seal": -0.2}  # lower 0, filter -0.5
    for share, kept in ((0.5, 3), (1.0, 1)):
        pipe = fake_pipeline(
            FakeRetriever(PASSAGES, support=0.7),
            FakeEvaluator(scores),
            TH,
            FakeReader("politician"),
            strips_correct=3,
            lexical_support=share,
        )
        result = pipe.run("What is Ole Krarup's occupation?")
        assert result.action is Action.CORRECT and len(result.internal_knowledge) == kept, share


def test_a_reading_policy_given_to_the_pipeline_chooses_what_the_reader_reads_and_a_benchmark_can_swap_it():
    from crag_cli.action.knowledge import ActionReading, Evidence, Reading

    class LastOnly:
        def __init__(self):
            self.seen: list[Evidence] = []

        def read(self, evidence: Evidence) -> Reading:
            self.seen.append(evidence)
            return Reading(evidence.internal[-1:], "the last kept passage")

        def web_unread(self, internal, web_supports) -> bool:
            return False

    gen = FakeReader("politician")
    scores = {"politician": 0.6, "European Parliament": 0.9, "seal": -0.2}
    policy = LastOnly()
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator(scores), TH, gen, strips=5, reading=policy)
    result = pipe.run("What is Ole Krarup's occupation?")
    assert result.action is Action.CORRECT and policy.seen[0].action is Action.CORRECT
    assert [len(policy.seen[0].internal), policy.seen[0].external] == [2, []]
    lines = reference(gen)
    assert len(lines) == 1 and "European Parliament" in lines[0]
    assert result.internal_knowledge and len(result.internal_knowledge) == 1  # the record shows what was read
    assert to_record(result)["reading"] == "the last kept passage"
    # without a policy, crag's own rule with the pipeline's settings
    default = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator(scores), TH, gen, strips=5, strips_correct=2)
    rule = default.reading
    assert rule == ActionReading.of(default.settings, TH.upper) and type(rule) is ActionReading
    assert (rule.strips, rule.strips_correct, rule.upper, rule.ranking, rule.refined) == (5, 2, 0.5, "evaluator", False)


def test_the_web_strips_go_unscored_only_when_the_reading_cannot_read_them():
    """Scoring keeps some of the web's strips, never more: when the passages lead even the best of them by
    --close-support, the reading is the same without scoring them; else they are scored and compared."""
    import random

    from crag_cli.action.knowledge import ActionReading, Evidence
    from crag_cli.action.refine import Strip

    paper = Settings(**PAPER_RULES, strips_correct=5, read_words=60, close_support=0.1)
    rule = ActionReading.of(paper, upper=1.0, knowledge_words=None)
    rng = random.Random(0)
    unread = 0
    for _ in range(2000):
        internal = [Strip(f"p{i} " * 5, f"p{i}", "", (i, 0), 0.1, i, rng.random()) for i in range(rng.randint(0, 3))]
        web = [Strip(f"w{i} " * 5, f"w{i}", "", (i, 0), rng.random(), i, rng.random()) for i in range(4)]
        kept = [s for s in web if rng.random() < 0.5]  # what scoring keeps: any of them
        if rule.web_unread(internal, [s.support for s in web]):
            unread += 1
            got = rule.read(Evidence(Action.AMBIGUOUS, (0.1,), internal=internal, external=kept))
            assert got.strips and not any(s.source.startswith("w") for s in got.strips)
    assert 200 < unread < 1800
    # in the pipeline: the passages hold 2 of 6 words, the pages 1: the pages go unscored, the reading the same
    offers = []

    class Web(FakeWeb):
        def run(self, question, timings, unread=None):
            offers.append(unread is not None and unread(list(self.texts)))
            return super().run(question, timings, unread)

    class Scores(ActionReading):
        def web_unread(self, internal, web_supports) -> bool:
            return False

    passages = [f"Ole Krarup fact {i} in five more words." for i in range(6)]
    pages = [f"A page on Krarup, item {i}." for i in range(3)]
    read = []
    for policy in (None, Scores(**{**vars(rule), "read_words": 450, "upper": TH.upper})):
        gen = FakeReader("jurist")
        ev = FakeEvaluator({f"fact {i}": 0.1 for i in range(6)}, default=0.25)
        pipe = fake_pipeline(
            FakeRetriever(passages, support=0.8), ev, TH, gen, web=Web(pages, score=0.25), reading=policy
        )
        result = pipe.run("Where did Ole Krarup study law?")
        assert result.action is Action.AMBIGUOUS and result.reading.startswith("the passages (")
        read.append(reference(gen))
    assert offers == [True, False] and read[0] == read[1]


def test_incorrect_with_no_external_knowledge_reads_the_doubted_passages_and_says_so():
    """The web off, failed or empty: Incorrect's passages are what crag has, read as an unsure question's are;
    the record says the evaluator doubted them. With web strips, Incorrect reads those alone, as the paper does."""
    question = "What is Ole Krarup's occupation?"
    for web in (None, FakeWeb([])):  # no web stage; a web stage that finds nothing
        gen = FakeReader("politician")
        pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator({}, domain=["occupation"]), TH, gen, web=web)
        result = pipe.run(question)
        assert result.action is Action.INCORRECT and result.in_domain is True
        assert result.not_found is None and result.answer == "politician" and result.doubted is True
        assert len(reference(gen)) == 3 and "Danish politician" in reference(gen)[1]  # retrieval order
        record = to_record(result)
        assert record["doubted"] is True and record["basis"] == "knowledge" and record["action"] == "incorrect"
        assert record["reading"] == "the doubted passages (no web)"
    gen = FakeReader("jurist")
    web = FakeWeb(["Ole Krarup was a Danish jurist."])
    pipe = fake_pipeline(FakeRetriever(PASSAGES), FakeEvaluator({}, domain=["occupation"]), TH, gen, web=web)
    result = pipe.run(question)
    assert result.action is Action.INCORRECT and [line[4:] for line in reference(gen)] == [web.texts[0]]
    assert result.doubted is False and result.internal_knowledge is None


def test_out_of_its_domain_the_evaluators_doubt_is_not_proof_every_passage_is_read():
    """Every passage scores below the lower threshold, even below the filter one, of a question unlike the
    evaluator's training questions: Ambiguous (not Incorrect), and every passage kept (the scores prove
    nothing there). In the domain the same scores are Incorrect."""
    question = "What is Ole Krarup's occupation?"
    web = FakeWeb(["Ole Krarup was a Danish jurist."], score=-0.9)

    def run(domain, guard=True):
        gen = FakeReader("politician")
        ev = FakeEvaluator({}, default=-0.9, domain=domain)  # below lower (0.0) and filter (-0.5)
        pipe = fake_pipeline(FakeRetriever(PASSAGES, support=0.2), ev, TH, gen, web=web, domain_guard=guard)
        return pipe.run(question), gen

    result, gen = run(["capital"])
    assert result.action is Action.AMBIGUOUS and result.doubted is True and len(result.internal_knowledge) >= 1
    assert sum("Krarup" in line for line in reference(gen)) >= 2  # passages and the web's strip alike
    assert run(["occupation"])[0].action is Action.INCORRECT  # in the domain, the evaluator's doubt stands
    assert run(["capital"], guard=False)[0].action is Action.INCORRECT  # the paper's rule


def test_a_docqa_answer_the_reader_says_its_reference_does_not_state_is_a_not_found_record():
    """docqa's answer is checked over the same knowledge (a prompt that differs only in its last line): when the
    reader says the reference does not state the answer, there is no answer: ``not_found``, basis ``none``, the
    reader's words kept. popqa's short phrase is not checked (PopQA-like questions are answered as asked)."""
    passages = ["The pool opens at most 100 connections by default."]
    question = "Which licence is the library under?"

    def run(reply, check, task="docqa", gen=None):
        gen = gen or FakeReader(reply, check=check)
        streamed: list[str] = []
        pipe = fake_pipeline(FakeRetriever(passages), FakeEvaluator({}, default=0.9), TH, gen, task=task)
        return pipe.run(question, on_token=streamed.append), gen, "".join(streamed)

    result, gen, streamed = run("BSD", "No.")
    answer_prompt, check_prompt = gen.messages[0][1]["content"], gen.checks[0][1]["content"]
    assert answer_prompt.endswith(TASKS["docqa"].instruction) and check_prompt.endswith("\n" + CHECK)
    assert answer_prompt.rsplit("\n", 1)[0] == check_prompt.rsplit("\n", 1)[0]  # all but the last line shared
    record = to_record(result)
    assert record["answer"] is None and record["basis"] == "none" and record["reader_answer"] == "BSD"
    assert record["checked"] == "No." and result.correct is None and streamed == ""
    assert answer_notes(result) == ["note: the reader answered 'BSD', then said its reference does not state it"]
    nf = "Not found in the indexed documents: the reader found no answer in the 1 passage it read."
    assert record["not_found"] == nf
    assert result.prompt_tokens == gen.count_tokens(gen.messages[0]) + len(CHECK.split())
    result, gen, streamed = run("100", "Yes, it does.")
    assert result.not_found is None and result.answer == "100" == streamed and result.checked == "Yes, it does."
    result, gen, _ = run("BSD", "No.", task="popqa")  # popqa: never checked
    assert result.answer == "BSD" and gen.checks == [] and result.checked is None

    class CheckFails(FakeReader):
        def generate(self, messages, max_tokens, on_token=None):
            if messages[-1]["content"].endswith(CHECK):
                raise RuntimeError("model gone")
            return super().generate(messages, max_tokens, on_token)

    result, gen, streamed = run(None, None, gen=CheckFails("100"))  # a check that fails: the answer stands
    assert result.answer == "100" and result.error is None and result.checked is None
