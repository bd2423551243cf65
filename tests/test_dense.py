"""The index's dense part: embedded once, incrementally; searched exactly; fused with BM25 by reciprocal rank."""

import json
import shutil

import numpy as np
import pytest

from crag_cli.index import BM25Index, IndexUnusableError, Retrieval, build_index, fuse, is_crag_index
from crag_cli.index.dense import DENSE_DIR, VECTORS


class HashEncoder:
    """A tiny deterministic encoder: a text's words hashed into 16 buckets, L2-normalised; counts what it embeds."""

    name = "hash-16"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def encode(self, texts):
        self.embedded += list(texts)
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word.strip(".,?"))) % 16] += 1.0
        out[:, 0] += 1e-3  # (no zero row)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _folder(tmp_path, files):
    d = tmp_path / "docs"
    d.mkdir(exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


FILES = {
    "a.txt": "Apples grow on trees in orchards.\n\nThe orchard keeper prunes the trees in winter.",
    "b.txt": "Bread is baked in an oven.\n\nA baker kneads the dough before dawn.",
    "c.txt": "Rivers flow to the sea.\n\nSalmon swim up the river to spawn.",
}


def test_every_passage_is_embedded_once_and_a_rebuild_embeds_only_new_and_changed_files(tmp_path):
    docs = _folder(tmp_path, FILES)
    enc = HashEncoder()
    first = build_index(docs, tmp_path / "ix", passage_words=8, encoder=enc)
    index = BM25Index.load(tmp_path / "ix", encoder=enc)
    assert first.embedded == first.passages == len(index.passages) and first.dense == "hash-16"
    assert index.vectors.shape == (first.passages, 16) and index.vectors.dtype == np.float16
    texts = [f"{p.title}\n{p.text}" if p.title else p.text for p in index.passages]
    np.testing.assert_allclose(index.vectors, enc.encode(texts), atol=1e-3)  # row i is passage i's
    assert build_index(docs, tmp_path / "ix", passage_words=8, encoder=enc).status == "unchanged"

    (docs / "b.txt").write_text("Bread is baked in a stone oven by the village baker.")
    (docs / "d.txt").write_text("Mountains rise above the clouds.")
    enc.embedded.clear()
    second = build_index(docs, tmp_path / "ix", passage_words=8, encoder=enc)
    rebuilt = BM25Index.load(tmp_path / "ix", encoder=enc)
    new = [p for p in rebuilt.passages if p.doc_id.startswith(("b", "d"))]
    assert second.embedded == len(new) < second.passages and len(enc.embedded) == len(new)
    full = build_index(docs, tmp_path / "full", passage_words=8, encoder=HashEncoder())
    assert full.embedded == second.passages
    np.testing.assert_array_equal(rebuilt.vectors, BM25Index.load(tmp_path / "full").vectors)


def test_an_index_without_vectors_gets_them_on_the_next_build_and_no_dense_removes_them(tmp_path):
    docs = _folder(tmp_path, FILES)
    build_index(docs, tmp_path / "ix", passage_words=8)
    assert not (tmp_path / "ix" / DENSE_DIR).exists() and not BM25Index.load(tmp_path / "ix").has_dense
    again = build_index(docs, tmp_path / "ix", passage_words=8, encoder=HashEncoder())
    assert again.status == "built" and again.read == 0 and again.embedded == again.passages
    assert (tmp_path / "ix" / DENSE_DIR / VECTORS).is_file() and is_crag_index(tmp_path / "ix")
    off = build_index(docs, tmp_path / "ix", passage_words=8)
    assert off.status == "built" and off.dense is None and not (tmp_path / "ix" / DENSE_DIR).exists()


def test_a_folder_with_a_foreign_file_in_dense_is_not_crags(tmp_path):
    docs = _folder(tmp_path, FILES)
    build_index(docs, tmp_path / "ix", passage_words=8, encoder=HashEncoder())
    (tmp_path / "ix" / DENSE_DIR / "notes.txt").write_text("mine")
    assert not is_crag_index(tmp_path / "ix")


def test_damaged_vectors_are_a_corrupt_index(tmp_path):
    docs = _folder(tmp_path, FILES)
    build_index(docs, tmp_path / "ix", passage_words=8, encoder=HashEncoder())
    vectors = tmp_path / "ix" / DENSE_DIR / VECTORS
    np.save(vectors, np.zeros(7, dtype=np.float16))  # not passages x 16
    with pytest.raises(Exception, match="corrupt index"):
        BM25Index.load(tmp_path / "ix", encoder=HashEncoder())


def test_fuse_is_reciprocal_rank_fusion():
    def reference(rankings, k, c=60):
        seen = list(dict.fromkeys(i for r in rankings for i in r))  # ties: first seen first
        score = {i: sum(1 / (c + r.index(i) + 1) for r in rankings if i in r) for i in seen}
        return sorted(seen, key=lambda i: (-score[i], seen.index(i)))[:k]

    rng = np.random.default_rng(1)
    for _ in range(50):
        a = [int(x) for x in rng.permutation(30)[:10]]
        b = [int(x) for x in rng.permutation(30)[:10]]
        assert fuse([a, b], 10) == reference([a, b], 10)
        assert fuse([a], 5) == a[:5]


def test_fused_search_finds_what_bm25_misses_and_every_hit_carries_both_retrievers_evidence(tmp_path):
    docs = _folder(tmp_path, {**FILES, "e.txt": "Orchard orchard orchard apples apples."})
    enc = HashEncoder()
    build_index(docs, tmp_path / "ix", passage_words=8, encoder=enc)
    index = BM25Index.load(tmp_path / "ix", encoder=enc)
    query = "salmon swim river spawn"
    cos = index.cosines(query)
    nearest = int(np.argmax(cos))
    dense = index.dense(query, 3)
    assert dense[0].passage == index.passages[nearest] and dense[0].dense_rank == 1
    assert dense[0].cosine == pytest.approx(float(cos[nearest]), abs=1e-6)
    fused = Retrieval(index, "fused").search(query, 5)
    bm25 = index.search(query, 5)
    assert {h.passage for h in bm25} | {dense[0].passage} <= {h.passage for h in index.fused(query, 10)}
    for hit in fused:
        i = [p for p in index.passages].index(hit.passage)
        assert hit.cosine == pytest.approx(float(cos[i]), abs=1e-6) and hit.support is not None
        assert hit.dense_rank == int((cos > cos[i]).sum()) + 1
        bm25_scores = index.scores(query)
        assert hit.score == pytest.approx(float(bm25_scores[i]), rel=1e-5)
        ahead = bm25_scores > bm25_scores[i] if bm25_scores[i] > 0 else bm25_scores > 0  # none held: after them all
        assert hit.rank == int(ahead.sum()) + 1
    assert [h.passage for h in Retrieval(index, "bm25").search(query, 5)] == [h.passage for h in bm25]


def test_an_index_without_a_dense_part_is_searched_by_bm25_whatever_is_asked(tmp_path):
    docs = _folder(tmp_path, FILES)
    build_index(docs, tmp_path / "ix", passage_words=8)
    index = BM25Index.load(tmp_path / "ix")
    retrieval = Retrieval(index, "fused")
    assert retrieval.by == "bm25" and not retrieval.dense
    assert retrieval.search("baker dough", 3) == index.search("baker dough", 3)


def test_the_manifest_names_the_encoder_and_an_unknown_one_is_one_clear_error(tmp_path):
    docs = _folder(tmp_path, FILES)
    build_index(docs, tmp_path / "ix", passage_words=8, encoder=HashEncoder())
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["dense"] == {"encoder": "hash-16", "dim": 16}
    with pytest.raises(IndexUnusableError, match="'hash-16', an encoder this crag does not know: re-run crag index$"):
        BM25Index.load(tmp_path / "ix").fused("baker", 3)
    shutil.rmtree(tmp_path / "ix")


def test_running_out_of_memory_while_embedding_is_one_clear_error_and_leaves_the_old_index(tmp_path):
    class Greedy(HashEncoder):
        def encode(self, texts):
            if len(texts) > 1:
                raise MemoryError
            return super().encode(texts)

    docs = _folder(tmp_path, FILES)
    build_index(docs, tmp_path / "ix", passage_words=8)
    with pytest.raises(IndexUnusableError, match="not enough memory to embed the passages: --no-dense"):
        build_index(docs, tmp_path / "ix", passage_words=8, encoder=Greedy())
    assert not BM25Index.load(tmp_path / "ix").has_dense  # the old index, whole
    assert [p.name for p in tmp_path.iterdir() if "crag-tmp" in p.name] == []


def test_the_index_and_the_evaluators_domain_share_one_minilm_in_a_process():
    """One all-MiniLM-L6-v2 in memory for the dense retriever and the shipped evaluator's domain (the objects
    compared: nothing is loaded for it)."""
    from crag_cli.assemble import evaluator_of
    from crag_cli.evaluator.trained import EMBEDDED_BASE
    from crag_cli.index.dense import MiniLMEncoder
    from crag_cli.settings.info import default

    index_side = MiniLMEncoder().model
    assert index_side is MiniLMEncoder().model  # the next index opened in the process too
    assert evaluator_of(default("evaluator"))._encoder(EMBEDDED_BASE) is index_side


def test_train_evaluator_labels_the_fused_top_k_so_its_negatives_come_from_both_retrievers(tmp_path, monkeypatch):
    from crag_cli.app.train import TrainJob, TrainRun
    from crag_cli.index import dense
    from crag_cli.settings import Settings
    from crag_cli.train import TrainConfig

    monkeypatch.setitem(dense.ENCODERS, HashEncoder.name, HashEncoder)  # the index names it; it embeds the question
    docs = _folder(tmp_path, {**FILES, "e.txt": "Orchard orchard orchard apples apples."})
    build_index(docs, tmp_path / "ix", passage_words=8, encoder=HashEncoder())
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": "salmon swim river spawn", "answers": ["salmon"]}) + "\n")
    index = BM25Index.load(tmp_path / "ix")
    for retrieval in ("fused", "bm25"):
        settings = Settings(index=tmp_path / "ix", top_k=3, retrieval=retrieval)
        run = TrainRun(
            settings, TrainJob(out=tmp_path / f"ev-{retrieval}", config=TrainConfig(base="minilm"), questions=qs)
        )
        try:
            data, _, notes = run._pairs()
        finally:
            run.close()
        wanted = Retrieval(index, retrieval).search("salmon swim river spawn", 3)
        assert [p.passage for p in data] == [h.passage.text for h in wanted]
        assert f"({retrieval})" in notes[0]
    assert index.fused("salmon swim river spawn", 3) != index.search("salmon swim river spawn", 3)  # they differ
