import pytest
import torch

from crag_cli.evaluator import EvaluatorError, MiniLMEvaluator, T5Evaluator, build_evaluator

PAIRS = [
    ("what is the capital of france ?", "paris is the capital city of france ."),
    ("what is the capital of france ?", "berlin is in germany ."),
    ("who was born in paris ?", "a painter was born in paris"),
    ("what does yield do ?", "yield in a generator function does pass the value ."),
    ("what does pass do ?", "unknownword " * 300),
]


def test_t5_scores_are_the_clipped_raw_logit_of_question_sep_passage(tiny_t5):
    from transformers import AutoTokenizer, T5ForSequenceClassification

    ev = T5Evaluator(tiny_t5, batch_size=2, max_length=512)
    scores = ev.score(PAIRS)
    assert ev.forward_passes == 3  # 5 pairs in batches of 2
    tok = AutoTokenizer.from_pretrained(str(tiny_t5))
    model = T5ForSequenceClassification.from_pretrained(str(tiny_t5)).eval()
    for (q, p), s in zip(PAIRS, scores):
        enc = tok(f"{q} [SEP] {p}", truncation=True, max_length=512, return_tensors="pt")
        assert enc["input_ids"][0, -1].item() == tok.eos_token_id
        with torch.inference_mode():
            logit = float(model(**enc).logits[0, 0])
        assert s == pytest.approx(max(-1.0, min(1.0, logit)), abs=1e-4)
        assert -1.0 <= s <= 1.0


def test_t5_batched_equals_one_by_one(tiny_t5):
    batched = T5Evaluator(tiny_t5, batch_size=8, max_length=512).score(PAIRS)
    single = T5Evaluator(tiny_t5, batch_size=1, max_length=512).score(PAIRS)
    assert batched == pytest.approx(single, abs=1e-4)


def test_t5_errors(tmp_path):
    with pytest.raises(EvaluatorError, match="not found"):
        T5Evaluator(tmp_path / "none", batch_size=16, max_length=512).score(PAIRS[:1])
    with pytest.raises(EvaluatorError, match="needs a path"):
        build_evaluator("t5", 10, 512, "float")
    with pytest.raises(EvaluatorError, match="unknown evaluator"):
        build_evaluator("bert", 10, 512, "float")


def test_minilm_prefers_the_relevant_passage_and_batches():
    ev = MiniLMEvaluator(batch_size=4, max_length=256)
    q = "What is the capital of France?"
    texts = [
        "Paris is the capital and largest city of France.",
        "The mitochondrion is the powerhouse of the cell.",
        "Berlin is the capital of Germany.",
        "Bananas are yellow.",
    ]
    scores = ev.score([(q, t) for t in texts])
    assert scores[0] == max(scores) and scores[1] < scores[0] - 0.3
    assert all(-1 <= s <= 1 for s in scores)
    assert ev.forward_passes == 2  # 5 unique texts, batches of 4
    assert ev.score([(q, texts[0])])[0] == pytest.approx(scores[0], abs=1e-5)
    assert ev.forward_passes == 2  # both texts embedded before: remembered, not embedded again
    alone = MiniLMEvaluator(batch_size=4, max_length=256).embed([texts[3]])[0]
    ev.REMEMBERED = 5
    assert ev.embed(["Rome is in Italy.", texts[3]])[1] == pytest.approx(alone, abs=1e-5)
    assert ev.forward_passes == 3  # one new text; the least lately used (texts[1]) is forgotten
    ev.embed([q, texts[0]])
    assert ev.forward_passes == 3
    ev.embed([texts[1]])
    assert ev.forward_passes == 4


@pytest.mark.slow
def test_int8_precision_quantizes_the_linear_layers_and_keeps_the_scores(tiny_t5):
    """``--evaluator-precision int8`` scores about as float does (a few hundredths), every evaluator kind."""
    from crag_cli.evaluator import CrossEncoderEvaluator, EMBEDDED_EVALUATOR

    q = "What is the capital of France?"
    pairs = [(q, "Paris is the capital and largest city of France."), (q, "Bananas are yellow."), *PAIRS]
    for make in (
        lambda p: MiniLMEvaluator(batch_size=32, max_length=256, precision=p),
        lambda p: CrossEncoderEvaluator(EMBEDDED_EVALUATOR, 32, 512, precision=p),
        lambda p: T5Evaluator(tiny_t5, 16, 512, precision=p),
    ):
        exact, fast = make("float"), make("int8")
        want, got = exact.score(pairs), fast.score(pairs)
        assert got != want and sum(abs(x - y) for x, y in zip(got, want)) / len(pairs) < 0.08
        assert (got[0] > got[1]) == (want[0] > want[1])  # Paris's passage against the bananas, as float ranks them
        assert not any(type(m) is torch.nn.Linear for m in fast._model.modules())
        assert any(type(m) is torch.ao.nn.quantized.dynamic.Linear for m in fast._model.modules())
        assert any(type(m) is torch.nn.Linear for m in exact._model.modules())
        alone = [fast.score([pair])[0] for pair in pairs]  # one pair a pass: a score never depends on its batch
        assert alone == got
    guard = CrossEncoderEvaluator(EMBEDDED_EVALUATOR, 32, 512, precision="int8")
    guard.load()
    assert guard._cosine.precision == "int8"  # the topic guard's and the domain's encoder compute alike


def test_evaluator_precision_is_a_setting_and_a_bad_one_is_refused():
    from crag_cli import assemble
    from crag_cli.evaluator.base import with_precision
    from crag_cli.settings import Settings

    assert assemble.evaluator(Settings()).precision == "float"
    assert assemble.evaluator(Settings(evaluator_precision="int8", evaluator="minilm-cosine")).precision == "int8"
    with pytest.raises(EvaluatorError, match="unknown evaluator precision 'half'"):
        with_precision(object(), "half")
