"""crag's BM25 weights against bm25s's (the reference crag used to call) on the same token ids."""

import bm25s
import numpy as np

from crag_cli.index.bm25 import BM25Params, TermMatrix, count_terms, idf


def _bm25s(docs, n_terms, params=BM25Params()):
    reference = bm25s.BM25(k1=params.k1, b=params.b, method="atire", idf_method="lucene")
    vocab = {f"t{i}": i for i in range(n_terms)}
    reference.index(bm25s.tokenization.Tokenized(ids=docs, vocab=vocab), show_progress=False)
    return reference.scores


def test_weights_equal_bm25s_to_the_bit():
    rng = np.random.default_rng(0)
    for n_terms, n_docs, params in [
        (300, 2000, BM25Params()),
        (20, 50, BM25Params(k1=0.9, b=0.4)),
        (5, 3, BM25Params()),
        (6, 2, BM25Params()),  # a folder of two passages, and of one
        (6, 1, BM25Params()),
    ]:
        docs = [[int(x) for x in rng.integers(0, n_terms, size=rng.integers(1, 60))] for _ in range(n_docs)]
        if n_docs > 2:
            docs[0] = []  # a passage without any token still counts in N and in the average length
        used = sorted({t for d in docs for t in d})
        ref = _bm25s(docs, n_terms, params)
        terms = TermMatrix.from_counts(count_terms(docs, n_terms), [f"t{i}" for i in range(n_terms)], params)
        assert terms.n == n_docs
        np.testing.assert_array_equal(terms.indptr, ref["indptr"])
        np.testing.assert_array_equal(terms.indices, ref["indices"])
        np.testing.assert_array_equal(terms.weights, ref["data"])  # same float32 values, bit for bit
        assert (terms.weights > 0).all()  # every term a passage holds weighs something
        assert int(terms.tf.sum()) == sum(len(d) for d in docs) and len(used) == int((np.diff(terms.indptr) > 0).sum())


def test_counts_round_trip_and_saved_matrix_loads_mapped(tmp_path):
    docs = [[0, 1, 1, 2], [2, 2, 2], [], [3]]
    counts = count_terms(docs, 4)
    assert counts.toarray().tolist() == [[1, 2, 1, 0], [0, 0, 3, 0], [0, 0, 0, 0], [0, 0, 0, 1]]
    terms = TermMatrix.from_counts(counts, ["a", "b", "c", "d"])
    assert (terms.counts() != counts).nnz == 0
    terms.save(tmp_path / "m")
    loaded = TermMatrix.load(tmp_path / "m")
    assert isinstance(loaded.weights, np.memmap) and loaded.vocab == ["a", "b", "c", "d"] and loaded.n == 4
    np.testing.assert_array_equal(loaded.weights, terms.weights)


def test_idf_is_lucenes_and_positive_for_every_term_a_passage_holds():
    df = np.array([1, 5, 10, 11, 20])
    got = idf(df, 20)
    want = [np.log(1 + (20 - d + 0.5) / (d + 0.5)) for d in df]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (got > 0).all() and (np.diff(got) < 0).all()  # rarer weighs more, the commonest still counts
    assert idf(np.array([1]), 1)[0] > 0 and idf(np.array([1, 2]), 2).min() > 0  # one passage, two passages


def test_weights_weighed_a_block_at_a_time_equal_bm25s_to_the_bit(monkeypatch):
    import crag_cli.index.bm25 as bm25

    monkeypatch.setattr(bm25, "WEIGHT_BLOCK", 7)  # blocks that cut terms' entries anywhere
    test_weights_equal_bm25s_to_the_bit()
