"""Shared fixtures: tiny real models built in-process, small corpora, a built index."""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SHARED_POPQA = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "popqa"
# the benchmark scripts (popqa.py, webstandin.py) are imported by their tests as top-level modules
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

# Keep model caches and config discovery inside the test's temporary area.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# The pipeline settings the fake-stage tests (test_pipeline.py, test_evidence.py) were written for, where they
# differ from the settings' defaults: the paper's rules (no lexical support, strips ranked by the evaluator's score)
# and no bound on the words of one source; Correct reads as many strips as the others (``strips``) unless told.
PAPER_RULES = {"lexical_support": 1.0, "ranking": "evaluator", "knowledge_words": 100000}


def fake_pipeline(retriever, evaluator, thresholds, reader=None, web=None, reading=None, **settings):
    """A :class:`crag_cli.pipeline.corrective.Pipeline` of the given stages, with :data:`PAPER_RULES` and ``settings``."""
    from crag_cli.pipeline.corrective import Pipeline
    from crag_cli.settings import Settings

    chosen = {**PAPER_RULES, **settings}
    chosen.setdefault("strips_correct", chosen.get("strips", Settings().strips))
    return Pipeline(retriever, evaluator, thresholds, reader, web, settings=Settings(**chosen), reading=reading)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable-character table (the byte-level BPE alphabet)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def write_tiny_gguf(
    path: Path,
    seed: int = 0,
    n_embd: int = 32,
    n_ff: int = 64,
    chat_template: str | None = None,
    controls: tuple[str, ...] = (),
) -> Path:
    """A ~100 KB llama-architecture GGUF: byte-level vocabulary (256 bytes, ``controls``, an end token), one
    layer, random weights."""
    import gguf

    rng = np.random.default_rng(seed)
    table = _bytes_to_unicode()
    # 256 byte tokens, one merged token (llama.cpp insists on a non-empty merge list) and an end token
    tokens = [table[b] for b in range(256)] + [table[32] * 2, *controls, "<|end|>"]
    n_vocab = len(tokens)
    eos = n_vocab - 1
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-test")
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(1)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(n_embd // 2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * 257 + [gguf.TokenType.CONTROL] * (len(controls) + 1))
    w.add_token_merges([f"{table[32]} {table[32]}"])
    w.add_bos_token_id(eos)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)
    w.add_chat_template(
        chat_template
        or "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}"
    )

    def t(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    w.add_tensor("token_embd.weight", t(n_vocab, n_embd))
    w.add_tensor("blk.0.attn_norm.weight", np.ones(n_embd, np.float32))
    for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
        w.add_tensor(f"blk.0.{name}.weight", t(n_embd, n_embd))
    w.add_tensor("blk.0.ffn_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("blk.0.ffn_gate.weight", t(n_ff, n_embd))
    w.add_tensor("blk.0.ffn_up.weight", t(n_ff, n_embd))
    w.add_tensor("blk.0.ffn_down.weight", t(n_embd, n_ff))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", t(n_vocab, n_embd))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


T5_WORDS = (
    "what who where when which is the of a an in was born occupation capital city country genre "
    "python yield generator function statement pass does do how with context manager lambda "
    "[ ] sep . , ? paris france berlin germany painter politician composer"
).split()


def write_tiny_t5(path: Path, seed: int = 0) -> Path:
    """A random one-label T5ForSequenceClassification with a WordLevel tokenizer that ends inputs with </s>."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForSequenceClassification

    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for word in T5_WORDS:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(vocab),
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        num_labels=1,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    model = T5ForSequenceClassification(config)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path))
    fast.save_pretrained(str(path))
    return path


BERT_WORDS = (
    "what who is the capital of france germany paris berlin yes no answer here not a an city country "
    "painter politician composer born in was it lies river"
).split()


def write_tiny_bert(path: Path, seed: int = 0) -> Path:
    """A random one-layer BERT encoder (no head) with a WordLevel tokenizer that encodes sentence pairs."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for word in BERT_WORDS:
        vocab.setdefault(word, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    path.mkdir(parents=True, exist_ok=True)
    BertModel(config).save_pretrained(str(path))
    fast.save_pretrained(str(path))
    return path


_VM_PEAK = """
import atexit, sys
atexit.register(lambda: print(next(l for l in open("/proc/self/status") if l.startswith("VmPeak")), file=sys.stderr))
sys.argv = ["crag", *sys.argv[1:]]
from crag_cli.cli import run
run()
"""


def crag_process(*args, cwd: Path, limit: int | None = None) -> subprocess.CompletedProcess:
    """``crag ARGS`` in a new process (one BLAS thread), under an address-space limit of ``limit`` bytes."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])

    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    cmd = [sys.executable, "-c", _VM_PEAK, *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, preexec_fn=cap)


def vm_peak(r: subprocess.CompletedProcess) -> int:
    """The most address space (bytes) a :func:`crag_process` run used."""
    return int(re.search(r"VmPeak:\s+(\d+) kB", r.stderr).group(1)) << 10


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("bert") / "bert")


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    return write_tiny_t5(tmp_path_factory.mktemp("t5") / "t5")


DOCS = {
    "paris.txt": "Paris is the capital and largest city of France. It lies on the Seine river. "
    "The city is known for the Eiffel Tower, built in 1889.",
    "berlin.md": "# Berlin\n\nBerlin is the capital of Germany. It is the largest city of the country by population. "
    "The Berlin Wall divided the city from 1961 to 1989.",
    "painter.html": "<html><head><title>Anna Example</title></head><body><nav>menu home about</nav>"
    "<article><h1>Anna Example</h1><p>Anna Example was a Dutch painter born in Utrecht in 1901. "
    "She painted landscapes and portraits of fishermen.</p><p>Her work hangs in the Rijksmuseum.</p>"
    "</article><footer>copyright</footer></body></html>",
}


@pytest.fixture()
def docs_dir(tmp_path) -> Path:
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    for name, text in DOCS.items():
        (d / name).write_text(text, encoding="utf-8")
    (d / "sub" / "people.jsonl").write_text(
        json.dumps(
            {"id": "p1", "title": "John Smithson", "text": "John Smithson is a British politician and composer."}
        )
        + "\n",
        encoding="utf-8",
    )
    return d


@pytest.fixture()
def built_index(docs_dir, tmp_path) -> Path:
    from crag_cli.index import build_index

    out = tmp_path / "index"
    build_index(docs_dir, out)
    return out


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """No CRAG_* variables or crag.toml from the developer's machine leak into tests."""
    for key in list(os.environ):
        if key.startswith("CRAG_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("CRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
