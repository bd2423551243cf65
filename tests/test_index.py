import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from rank_bm25 import BM25Okapi
from test_safety import snapshot

from crag_cli.index import BM25Index, IndexUnusableError, TokenizerSettings, build_index


def _corpus(tmp_path, texts):
    d = tmp_path / "c"
    d.mkdir()
    with open(d / "docs.jsonl", "w") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": f"d{i}", "title": "", "text": t}) + "\n")
    return d


def _doc_freqs(tokens):
    df = {}
    for toks in tokens:
        for t in set(toks):
            df[t] = df.get(t, 0) + 1
    return df


def _bm25s_of(index):
    """bm25s's BM25 over the index's passages (title and text, as crag indexes them)."""
    import bm25s

    texts = [f"{p.title}\n{p.text}" if p.title else p.text for p in index.passages]
    reference = bm25s.BM25(k1=1.5, b=0.75, method="atire", idf_method="lucene")
    reference.index(TokenizerSettings().tokenize_ids(texts), show_progress=False)
    return reference


def _bm25s_scores(reference, query):
    tokens = [t for t in TokenizerSettings().tokenize([query])[0] if t in reference.vocab_dict]
    return reference.get_scores(tokens) if tokens else np.zeros(reference.scores["num_docs"], dtype=np.float32)


def test_scores_equal_rank_bm25_okapi_with_lucenes_idf_on_the_same_tokens(tmp_path):
    rng = np.random.default_rng(0)
    vocab = [f"term{i}" for i in range(60)]
    texts = [" ".join(rng.choice(vocab, size=rng.integers(5, 40))) + "." for _ in range(200)]
    texts += ["term0 " + t for t in texts[:150]]  # a term in most passages counts too
    build_index(_corpus(tmp_path, texts), tmp_path / "ix")
    index = BM25Index.load(tmp_path / "ix")
    tokens = TokenizerSettings().tokenize([p.text for p in index.passages])
    reference = BM25Okapi(tokens)
    n = len(tokens)
    reference.idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in _doc_freqs(tokens).items()}
    assert _doc_freqs(tokens)["term0"] > n / 2
    for query in ["term1 term7", "term3 term3 term59", "term10 term20 term30 term40", "term0 term5"]:
        q = TokenizerSettings().tokenize([query])[0]
        np.testing.assert_allclose(index.scores(query), reference.get_scores(q), rtol=1e-5, atol=1e-5)


def test_search_ranks_best_first_and_drops_zero_scores(built_index):
    index = BM25Index.load(built_index)
    hits = index.search("capital of Germany", 10)
    assert hits[0].passage.title == "Berlin"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(h.score > 0 for h in hits)
    assert index.search("zzzz qqqq", 5) == []


def test_query_uses_the_manifests_tokenizer(tmp_path):
    # stemming is on: "painting" finds "painted"
    d = _corpus(tmp_path, ["She painted landscapes.", "He wrote novels.", "They sang songs.", "It rained."])
    build_index(d, tmp_path / "ix")
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["tokenizer"]["stemmer"] == "english" and manifest["tokenizer"]["stopwords"] == "en"
    assert BM25Index.load(tmp_path / "ix").search("painting", 1)[0].passage.text == "She painted landscapes."


def test_manifest_and_unchanged_and_changed(docs_dir, tmp_path):
    out = tmp_path / "ix"
    first = build_index(docs_dir, out)
    assert first.status == "built"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    assert manifest["passage_count"] == first.passages
    src = {s["path"]: s for s in manifest["sources"]}
    assert src["paris.txt"]["size"] == (docs_dir / "paris.txt").stat().st_size
    assert len(src["paris.txt"]["sha256"]) == 64
    mtime = os.stat(out / "manifest.json").st_mtime_ns
    assert build_index(docs_dir, out).status == "unchanged"
    assert os.stat(out / "manifest.json").st_mtime_ns == mtime
    (docs_dir / "paris.txt").write_text("Paris is the capital of France. Lyon is not.")
    again = build_index(docs_dir, out)
    assert again.status == "built"
    assert "Lyon" in " ".join(p.text for p in BM25Index.load(out).passages)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ix")]  # no temporary left behind


def test_empty_folder_is_an_error_and_leaves_no_index(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexUnusableError, match="no documents to index"):
        build_index(tmp_path / "empty", tmp_path / "ix")
    assert not (tmp_path / "ix").exists()


def test_missing_and_corrupt_index(built_index, tmp_path):
    with pytest.raises(IndexUnusableError, match="no index at"):
        BM25Index.load(tmp_path / "nope")
    (built_index / "passages.jsonl").write_text('{"id": "x", "text": "y"}\n')
    with pytest.raises(IndexUnusableError, match="corrupt index"):
        BM25Index.load(built_index)
    (built_index / "manifest.json").write_text("{not json")
    with pytest.raises(IndexUnusableError, match="corrupt index"):
        BM25Index.load(built_index)


def test_top_k_equals_a_full_stable_sort():
    from crag_cli.index import top_k

    rng = np.random.default_rng(1)
    for n, k in [(1, 1), (10, 3), (10, 10), (10, 25), (1000, 5), (1000, 0), (5000, 50)]:
        scores = rng.integers(0, 6, size=n).astype(np.float32)  # many ties, also at the k-th score
        assert top_k(scores, k) == [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def test_loaded_passages_are_read_from_disk_on_demand(built_index, tmp_path):
    from crag_cli.index import PASSAGE_OFFSETS, PASSAGES, PassageStore

    lines = (built_index / PASSAGES).read_text(encoding="utf-8").splitlines()
    index = BM25Index.load(built_index)
    assert isinstance(index.passages, PassageStore) and len(index.passages) == len(lines) > 2
    assert [p.to_dict() for p in index.passages] == [json.loads(x) for x in lines]  # iteration, in order
    assert index.passages[-1].to_dict() == json.loads(lines[-1]) and index.passages[1:3] == list(index.passages)[1:3]
    assert isinstance(index.terms.weights, np.memmap) and isinstance(index.terms.indices, np.memmap)  # mapped, not read
    import pickle

    assert list(pickle.loads(pickle.dumps(index.passages))) == list(index.passages)  # reaches a worker process
    hits = index.search("Paris", 3)
    assert hits
    assert BM25Index.load(built_index).search("Paris", 3) == hits
    np.save(built_index / PASSAGE_OFFSETS, np.array([0, 5], dtype=np.int64))
    with pytest.raises(IndexUnusableError, match="corrupt index"):
        BM25Index.load(built_index)


def test_search_reads_only_the_query_terms_and_ranks_as_the_full_scores_do(tmp_path):
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(vocab, size=rng.integers(3, 25))) + "." for _ in range(300)]
    texts[10:13] = [
        "rare1 w1 rare3.",
        "rare2 rare1 rare1 rare3.",
        "rare2 rare3.",
    ]  # few matches: summed by sorting, not densely
    build_index(_corpus(tmp_path, texts), tmp_path / "ix")
    index = BM25Index.load(tmp_path / "ix")
    reference = _bm25s_of(index)
    for query in [
        "rare1 rare2",
        "rare3 rare1 rare2 rare3",
        "rare2 w1",
        "rare1 rare2 w1 w2 w3",
        "w1",
        "w1 w2",
        "w3 w3 w39",
        "w5 w6 w7 w8 w9 w10",
        "nothing here",
        "w11 unknown",
    ]:
        dense = _bm25s_scores(reference, query)  # bm25s's own scoring of every passage: the reference
        idx, val = index.matched(query)
        assert list(idx) == [int(i) for i in np.flatnonzero(dense)]
        np.testing.assert_array_equal(val, dense[idx])  # bm25s's own float32 sums, to the bit
        np.testing.assert_array_equal(index.scores(query), dense)
        for k in (1, 5, 300):
            want = [int(i) for i in np.argsort(-dense, kind="stable")[:k] if dense[i] > 0]
            got = index.search(query, k)
            assert [h.passage.id for h in got] == [index.passages[i].id for i in want]
            assert [h.rank for h in got] == list(range(1, len(want) + 1))


def _same_index(a, b, queries):
    """Two index folders hold the same passages (byte for byte) and score every query the same."""
    from crag_cli.index import PASSAGE_OFFSETS, PASSAGES

    assert (a / PASSAGES).read_bytes() == (b / PASSAGES).read_bytes()
    assert np.array_equal(np.load(a / PASSAGE_OFFSETS), np.load(b / PASSAGE_OFFSETS))
    ia, ib = BM25Index.load(a), BM25Index.load(b)
    assert ia.terms.vocab == ib.terms.vocab  # no term of a removed file is left behind; in one order
    assert snapshot(a / "bm25") == snapshot(b / "bm25")  # the term files byte for byte
    ma, mb = (json.loads((x / "manifest.json").read_text()) for x in (a, b))
    strip = lambda m: [{k: v for k, v in s.items() if k != "mtime_ns"} for s in m["sources"]]  # noqa: E731
    assert strip(ma) == strip(mb) and ma["skipped"] == mb["skipped"]
    assert (ma["passage_count"], ma["document_count"]) == (mb["passage_count"], mb["document_count"])
    for q in queries:
        np.testing.assert_array_equal(ia.scores(q), ib.scores(q))  # the same float32 scores, bit for bit
        assert ia.search(q, 5) == ib.search(q, 5)


def test_rebuild_reads_only_new_and_changed_files_and_equals_a_full_build(docs_dir, tmp_path):
    out = tmp_path / "ix"
    rng = np.random.default_rng(5)
    words = [f"word{i}" for i in range(80)]
    for i in range(4):
        (docs_dir / f"bulk{i}.jsonl").write_text(
            "".join(
                json.dumps({"id": f"b{i}-{j}", "title": f"Bulk {j}", "text": " ".join(rng.choice(words, 30)) + "."})
                + "\n"
                for j in range(50)
            )
        )
    (docs_dir / "broken.jsonl").write_text(
        '{"id": "x", "text": "fine"}\nnot json\n'
    )  # a line skipped, kept in the manifest
    first = build_index(docs_dir, out)
    assert (first.read, first.reused) == (first.files, 0)
    queries = ["capital of France", "word1 word2 word3", "word7 word7 Lyon", "Smithson composer", "word79 Bulk"]

    (docs_dir / "bulk1.jsonl").write_text(
        json.dumps({"id": "n", "title": "", "text": "Lyon is a city in France."}) + "\n"
    )
    (docs_dir / "bulk2.jsonl").unlink()
    (docs_dir / "sub" / "added.txt").write_text("Marseille is a port on the Mediterranean with a unique term zyxxy.")
    again = build_index(docs_dir, out)
    assert again.status == "built" and (again.read, again.reused) == (2, again.files - 2)
    assert BM25Index.load(out).search("zyxxy", 1)[0].passage.source == "sub/added.txt"
    full = build_index(docs_dir, tmp_path / "full", force=True)
    assert (full.read, full.reused) == (full.files, 0) and full.passages == again.passages
    _same_index(out, tmp_path / "full", queries + ["Marseille zyxxy", "Lyon city"])

    os.utime(docs_dir / "bulk0.jsonl")  # touched, not changed: still up to date
    assert build_index(docs_dir, out).status == "unchanged"
    (docs_dir / "bulk0.jsonl").unlink()  # a removal alone
    (docs_dir / "sub" / "added.txt").unlink()
    third = build_index(docs_dir, out)
    assert third.read == 0 and not BM25Index.load(out).search("zyxxy", 1)
    _same_index(out, _full(docs_dir, tmp_path / "full2"), queries)


def _full(docs, out):
    build_index(docs, out, force=True)
    return out


def test_other_passage_size_rereads_every_file_and_an_old_format_index_is_replaced(docs_dir, tmp_path):
    out = tmp_path / "ix"
    build_index(docs_dir, out)
    again = build_index(docs_dir, out, passage_words=20)
    assert again.status == "built" and again.reused == 0
    old = tmp_path / "v1"  # what crag 0.x wrote: bm25s's files, format 1
    (old / "bm25").mkdir(parents=True)
    (old / "bm25" / "params.index.json").write_text("{}")
    (old / "passages.jsonl").write_text("")
    (old / "manifest.json").write_text(
        json.dumps({"format_version": 1, "passage_count": 0, "tokenizer": {}, "sources": []})
    )
    with pytest.raises(IndexUnusableError, match="format version 1.*re-run crag index"):
        BM25Index.load(old)
    report = build_index(docs_dir, old)
    assert report.status == "built" and report.reused == 0 and BM25Index.load(old).search("Paris", 1)


def test_support_is_the_share_of_the_questions_idf_a_passage_holds(tmp_path):
    """Hit.support against a direct count: each distinct question term weighs Lucene's IDF over the passages."""
    import math

    from crag_cli.index import BM25Index, build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    texts = {
        "a.txt": "The bovine coronavirus genome is about 31 kb long.",
        "b.txt": "Coronavirus outbreaks in cattle herds are studied every year.",
        "c.txt": "Seal hunting was an occupation in the north.",
        "d.txt": "Cattle herds graze in the north in summer.",
        **{f"other{i}.txt": f"Unrelated note number {i} on sailing boats." for i in range(6)},
    }
    for name, text in texts.items():
        (docs / name).write_text(text, encoding="utf-8")
    build_index(docs, tmp_path / "ix")
    index = BM25Index.load(tmp_path / "ix")
    question = "How long is the bovine coronavirus genome of cattle in Antarctica?"
    hits = index.search(question, 10)
    assert len(hits) == 3  # passages a, b and d; the seal passage and the notes hold no question term
    tokens = [set(index.tokenizer.tokenize([p.text])[0]) for p in index.passages]
    terms = list(dict.fromkeys(index.tokenizer.tokenize([question])[0]))
    n = len(tokens)
    weight = {
        t: math.log(1 + (n - sum(t in p for p in tokens) + 0.5) / (sum(t in p for p in tokens) + 0.5)) for t in terms
    }
    for hit in hits:
        held = set(index.tokenizer.tokenize([hit.passage.text])[0])
        expected = sum(w for t, w in weight.items() if t in held) / sum(weight.values())
        assert math.isclose(hit.support, expected, rel_tol=1e-9), hit
    assert hits[0].passage.text.startswith("The bovine") and 0 < hits[0].support < 1  # it lacks "cattle", "antarctica"


def test_a_file_name_that_is_not_utf8_is_indexed_and_found_again_by_the_next_build(docs_dir, tmp_path):
    from test_safety import invoke

    odd = os.path.join(os.fsencode(docs_dir), b"odd\x01\xff\xfe name.txt")
    with open(odd, "wb") as f:
        f.write(b"Quokkas are small marsupials that live on Rottnest Island.\n")
    out = tmp_path / "ix"
    first = invoke("index", docs_dir, "--index", out)
    assert first.exit_code == 0, first.output
    assert "indexed 5 documents from 5 files" in first.stderr and "skipped" not in first.stderr
    index = BM25Index.load(out)
    hit = index.search("quokkas rottnest", 1)[0].passage
    assert (hit.source, hit.title) == (
        "odd\ufffd\ufffd\ufffd name.txt",
        "odd\ufffd\ufffd\ufffd name",
    )  # shown so: no control character
    assert index.search("capital of France", 1)[0].passage.source == "paris.txt"  # and the rest as ever
    paths = [s["path"] for s in json.loads((out / "manifest.json").read_text())["sources"]]
    assert os.fsencode(docs_dir / "x").replace(b"x", b"odd\x01\xff\xfe name.txt") in [
        os.fsencode(docs_dir / p) for p in paths
    ]  # the manifest keeps the name itself
    assert "up to date" in invoke("index", docs_dir, "--index", out).stderr
    with open(odd, "ab") as f:
        f.write(b"They are known for their smile.\n")
    (docs_dir / "paris.txt").write_text("Paris is the capital of France. Lyon is not.")
    again = build_index(docs_dir, out)
    assert again.status == "built" and (again.read, again.reused) == (2, 3)
    assert BM25Index.load(out).search("smile", 1)[0].passage.source == "odd\ufffd\ufffd\ufffd name.txt"
    os.remove(odd)
    assert build_index(docs_dir, out).reused == 4 and not BM25Index.load(out).search("quokkas", 1)


def test_links_out_of_the_folder_are_followed_each_target_once_and_never_in_a_loop(docs_dir, tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "tides.txt").write_text("Tides at Zorbville rise twice a day.")
    (outside / "deep" / "gulls.txt").write_text("Gulls of Zorbville nest on the pier.")
    (outside / "deep" / "up").symlink_to(outside)  # a loop outside the folder
    (docs_dir / "linked").symlink_to(outside)  # a folder outside: followed
    (docs_dir / "sub" / "again").symlink_to(outside / "deep")  # into what linked/ leads to: read once
    (docs_dir / "tides-link.txt").symlink_to(outside / "tides.txt")  # a file outside, that linked/ holds too
    (tmp_path / "ferry.md").write_text("The ferry to Zorbville leaves at noon.")
    (docs_dir / "sub" / "ferry.md").symlink_to(tmp_path / "ferry.md")  # a file outside: followed
    (docs_dir / "sub" / "top").symlink_to(docs_dir)  # back to the top: a loop
    (docs_dir / "paris-again.txt").symlink_to(docs_dir / "paris.txt")  # inside: read under its own name
    (docs_dir / "gone.txt").symlink_to(tmp_path / "missing.txt")
    report = build_index(docs_dir, tmp_path / "ix")
    skipped = dict(report.skipped)
    assert skipped == {
        "gone.txt": "a link that leads nowhere (its target is missing, or links loop)",
        "linked/deep/up/": "a link to what linked/ leads to, read under that name",
        "paris-again.txt": "a link to paris.txt in the documents folder, read under its own name",
        "sub/again/": "a link to what linked/ leads to, read under that name",
        "sub/top/": "a link to the folder itself in the documents folder, read under its own name",
        "tides-link.txt": "a link to what linked/ leads to, read under that name",  # (a folder's links go first)
    }
    sources = sorted(p.source for p in BM25Index.load(tmp_path / "ix").passages)
    assert sources == [
        "berlin.md",
        "linked/deep/gulls.txt",
        "linked/tides.txt",
        "painter.html",
        "paris.txt",
        "sub/ferry.md",
        "sub/people.jsonl:1",
    ]
    assert build_index(docs_dir, tmp_path / "ix").status == "unchanged"


# ----------------------------------------------------------------------------- a load while a rebuild replaces the index


def _generation(folder, name, n):
    """A documents folder of ``n`` one-passage lines, each naming ``name``: its index is told apart by both."""
    folder.mkdir()
    lines = (json.dumps({"id": f"{name}{i}", "title": "", "text": f"{name} note {i} on the harbour"}) for i in range(n))
    (folder / "notes.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _whole(index) -> str:
    """Which generation a loaded index is (``alpha``: 30 passages, ``beta``: 50), every part of it agreeing."""
    name = {30: "alpha", 50: "beta"}[len(index.passages)]
    assert index.manifest["passage_count"] == index.terms.n == len(index.passages)
    assert all(p.text.startswith(name + " note") for p in index.passages)
    assert name in index.term_id and ({"alpha", "beta"} - {name}).isdisjoint(index.term_id)
    assert len(index.search("harbour", 100)) == len(index.passages)
    return name


REBUILDS = """
import sys
from crag_cli.index import build_index
alpha, beta, ix, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
print("ready", flush=True)
for i in range(rounds):
    build_index(beta if i % 2 == 0 else alpha, ix, force=True)
"""


@pytest.mark.slow
def test_loads_beside_a_process_that_rebuilds_the_index_get_the_old_or_the_new_one_whole(tmp_path):
    alpha, beta = _generation(tmp_path / "alpha", "alpha", 30), _generation(tmp_path / "beta", "beta", 50)
    ix = tmp_path / "ix"
    build_index(alpha, ix)
    args = [sys.executable, "-c", REBUILDS, alpha, beta, ix, "150"]
    rebuilds = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert rebuilds.stdout.readline() == b"ready\n"
        seen, failed, loads = set(), [], 0
        while rebuilds.poll() is None:
            loads += 1
            try:
                index = BM25Index.load(ix)
            except IndexUnusableError as exc:
                failed.append(str(exc))
                continue
            seen.add(_whole(index))
            index.passages.close()
    finally:
        rebuilds.kill()
    assert rebuilds.wait() == 0, rebuilds.stderr.read().decode()
    assert not failed, f"{len(failed)} of {loads} loads failed, the first: {failed[0]}"
    assert seen == {"alpha", "beta"}  # (the rebuilds did replace it under the loads)


@pytest.mark.parametrize("old", ["deleted", "kept"])
def test_an_index_replaced_between_the_opening_of_two_of_its_files_is_read_whole(old, tmp_path, monkeypatch):
    alpha, beta = _generation(tmp_path / "alpha", "alpha", 30), _generation(tmp_path / "beta", "beta", 50)
    ix = tmp_path / "ix"
    build_index(alpha, ix)
    if old == "deleted":  # a rebuild, as crag index --force does it: the old folder renamed aside, then deleted
        replace = [lambda: build_index(beta, ix, force=True)]
    else:  # another index renamed into place, the old one still beside it
        build_index(beta, tmp_path / "ix-beta")
        replace = [lambda: (os.replace(ix, tmp_path / "aside"), os.replace(tmp_path / "ix-beta", ix))]
    real_open = os.open

    def open_then_replace(path, *args, **kwargs):  # the passages are opened after the manifest was read
        if os.fspath(path).endswith("passages.jsonl") and replace:
            replace.pop()()
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_then_replace)
    index = BM25Index.load(ix)
    monkeypatch.undo()
    assert not replace  # (it was replaced)
    assert _whole(index) == ("beta" if old == "deleted" else "alpha")


# ----------------------------------------------------------------------------- files garbled under a valid header


def _set(name, at, value):
    """A damage: ``name``'s array with entry ``at`` set to ``value`` (``at`` None: all of it), saved with the same
    type and shape (the header stays valid)."""

    def damage(ix):
        arr = np.load(ix / name)
        arr[slice(None) if at is None else at] = value
        np.save(ix / name, arr)

    return damage


def _swap(name, i, j):
    def damage(ix):
        arr = np.load(ix / name)
        arr[[i, j]] = arr[[j, i]]
        np.save(ix / name, arr)

    return damage


def _save_as(name, change):
    def damage(ix):
        np.save(ix / name, change(np.load(ix / name)))

    return damage


def _twice_a_term(ix):
    path = ix / "bm25" / "vocab.json"
    meta = json.loads(path.read_text())
    meta["terms"][1] = meta["terms"][0]
    path.write_text(json.dumps(meta))


GARBLED = {
    "a negative passage": _set("bm25/indices.npy", 0, -1),
    "every passage negative": _set("bm25/indices.npy", None, -3),
    "a passage past the end": _set("bm25/indices.npy", -1, 10**6),
    "a NaN weight": _set("bm25/weights.npy", 0, np.nan),
    "every weight NaN": _set("bm25/weights.npy", None, np.nan),
    "an infinite weight": _set("bm25/weights.npy", -1, np.inf),
    "a negative weight": _set("bm25/weights.npy", 2, -0.5),
    "a count of 0": _set("bm25/tf.npy", 1, 0),
    "term offsets out of order": _swap("bm25/indptr.npy", 1, 2),
    "passage offsets out of order": _swap("passages.offsets.npy", 1, 2),
    "passage offsets as floats": _save_as("passages.offsets.npy", lambda a: a.astype(np.float64)),
    "passages in two dimensions": _save_as("bm25/indices.npy", lambda a: a.reshape(-1, 1)),
    "weights as integers": _save_as("bm25/weights.npy", lambda a: np.ones(len(a), dtype=np.float32).view(np.int32)),
    "a term twice": _twice_a_term,
}


@pytest.mark.parametrize("damage", GARBLED.values(), ids=GARBLED.keys())
def test_an_index_garbled_under_a_valid_header_is_corrupt_at_load_and_a_rebuild_replaces_it(
    damage, built_index, docs_dir
):
    from test_safety import invoke, one_error_line

    damage(built_index)
    with pytest.raises(IndexUnusableError, match="corrupt index"):
        BM25Index.load(built_index)
    r = invoke("evaluate", "capital of Germany?", "--index", built_index)
    assert "Traceback" not in r.output and (r.exception is None or isinstance(r.exception, SystemExit))
    one_error_line(r, "corrupt index", "re-run crag index --force")
    report = build_index(docs_dir, built_index)  # nothing of it is taken over: read again, whole
    assert report.status == "built" and report.reused == 0
    assert BM25Index.load(built_index).search("capital of Germany", 1)[0].passage.source == "berlin.md"


def test_an_index_whose_manifest_says_readers_is_updated_without_reading_a_file(docs_dir, tmp_path):
    """Before 0.2.0 the manifest called the parsers' version ``readers``: such an index is not rebuilt whole."""
    out = tmp_path / "ix"
    first = build_index(docs_dir, out)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["readers"] = manifest.pop("parsers")
    path.write_text(json.dumps(manifest))
    again = build_index(docs_dir, out)
    assert (again.read, again.reused) == (0, first.files)
    assert "parsers" in json.loads(path.read_text()) and "readers" not in json.loads(path.read_text())
