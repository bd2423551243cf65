"""A text file too large to hold is read and split piece by piece, into the passages and title of a whole read."""

from __future__ import annotations

import json
import random
import re

import pytest
from conftest import crag_process, vm_peak

import crag_cli.documents.bigtext as bigtext
from crag_cli.documents.passages import split_passages
from crag_cli.documents.formats import Document, Unreadable
from crag_cli.documents.types import read_text_file
from crag_cli.documents.folder import read_file, split_documents
from crag_cli.documents.titles import first_heading, first_line_title, markdown_title, text_title

TOKENS = [
    *("Dr.", "J.", "Mr.", "e.g.", "etc.", "a.b.", "42.", "1999.", "(Paren.)", '"Quoted."', "end.)", "[x].", "Ok?!"),
    *("Smith", "went", "home.", "It", "rained!", "Why?", "A", "b", "'s", "Zed", "word", "longerword", "x" * 12),
    *(".", "?", '"', "(", "#", "# Head", "\ufeff", "é", "日本語.", "\u00a0", "\x1c", "\u2028"),
    *("\n\n", "\n", "\t", "  ", "\r\n", "\n \n", "\n\n\n\n", " " * 30),
]


def _text(rng: random.Random, n: int) -> str:
    if rng.random() < 0.5:
        return " ".join(rng.choice(TOKENS) for _ in range(n))
    return "".join(rng.choice(TOKENS) + rng.choice(["", " ", "\n"]) for _ in range(n))


def _cut(rng: random.Random, text: str) -> list[str]:
    """``text`` in pieces of random sizes."""
    out, i = [], 0
    while i < len(text):
        n = rng.choice([1, 2, 3, 7, 20, 100, 1000])
        out.append(text[i : i + n])
        i += n
    return out


def _same(a: list, b: list) -> bool:
    return [(p.id, p.title, p.text, p.source) for p in a] == [(p.id, p.title, p.text, p.source) for p in b]


@pytest.mark.slow
def test_passages_of_a_text_in_pieces_are_those_of_the_whole_text(monkeypatch):
    rng = random.Random(7)
    for _ in range(400):
        text = _text(rng, rng.choice([0, 3, 30, 200, 1000]))
        for piece in (40, 200, 5000):  # a piece shorter than a sentence: its words are passed on as they come
            monkeypatch.setattr(bigtext, "PIECE_BYTES", piece)
            for max_words in (1, 5, 30, 100):
                whole = split_passages(Document("d", "T", text, "s"), max_words)
                try:
                    got = list(bigtext.stream_passages(_cut(rng, text), "d", "T", "s", max_words))
                except Unreadable:  # only a text with a run longer than a piece without white space
                    assert any(len(run) > piece for run in re.findall(r"\S+", text)), text
                    continue
                assert _same(got, whole), (text, piece, max_words)


def test_titles_from_the_first_pieces_are_those_of_the_whole_text():
    rng = random.Random(8)
    for _ in range(1000):
        text = _text(rng, rng.choice([0, 1, 3, 30, 200]))
        has_text = bool(text.strip())
        assert first_line_title(_cut(rng, text)) == (text_title(text) if has_text else None, has_text), text
        assert first_heading(_cut(rng, text)) == (markdown_title(text), has_text), text


def _prose(rng: random.Random, size: int) -> str:
    """Paragraphs of sentences, some very long (no end for thousands of words), long runs of white space
    and of blank lines, multi-byte characters, CR LF line ends."""
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyzéü") for _ in range(rng.randint(1, 9))) for _ in range(800)]
    words += ["Dr.", "e.g.", "J.", "U.S.", "(see", "it)."]
    out, total = [], 0
    while total < size:
        kind = rng.random()
        if kind < 0.02:
            block = " ".join(rng.choice(words) for _ in range(rng.randint(2000, 9000)))  # one sentence, no end
        elif kind < 0.03:
            block = "\n" * rng.randint(1, 3) + " \t" * rng.randint(100, 20000)
        elif kind < 0.04:  # blank lines by the thousand (at a piece's end, a pattern that backtracked took hours)
            block = "\n" * rng.randint(1000, 30000)
        else:
            sentences = [
                rng.choice(words).capitalize() + " " + " ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
                for _ in range(rng.randint(1, 12))
            ]
            block = " ".join(s + rng.choice([".", ".", "?", "!", '."', ".)"]) for s in sentences)
        block += rng.choice(["\n\n", "\n", " ", "\r\n\r\n", "\n \n"])
        out.append(block)
        total += len(block)
    return "".join(out)


@pytest.mark.parametrize("suffix", [".txt", ".md"])
def test_a_large_text_file_gives_the_passages_and_title_of_a_whole_read(suffix, tmp_path, monkeypatch):
    """A file of 1.5 MB read in pieces of 64 KB and of 5 KB: what a whole read gives, passage for passage."""
    rng = random.Random(len(suffix))
    opening = "# The Heading\n\n" if suffix == ".md" else "The Title of It\n\n"
    text = "\ufeff" + opening + _prose(rng, 1_500_000)
    path = tmp_path / f"big{suffix}"
    path.write_bytes(text.encode("utf-8").replace(b"\n", b"\r\n", 3))
    data = path.read_bytes()
    whole = [p for d in read_text_file(path, path.name, data) for p in split_passages(d, 100)]
    assert whole[0].title == ("The Heading" if suffix == ".md" else "The Title of It") and len(whole) > 2000
    for piece in (64 << 10, 5 << 10):
        monkeypatch.setattr(bigtext, "PIECE_BYTES", piece)
        docs, skipped, size = read_file(path, path.name)
        assert [d.path for d in docs] == [path] and docs[0].text == "" and not skipped and size == len(data)
        got, documents = split_documents(docs, 100, skipped)
        assert documents == 1 and not skipped and _same(got, whole), piece


def test_a_large_text_file_that_is_not_text_all_through_is_skipped_with_the_reason(docs_dir, tmp_path, monkeypatch):
    from crag_cli.index import build_index

    monkeypatch.setattr(bigtext, "PIECE_BYTES", 4096)
    good = "A sentence of prose. " * 1000
    (docs_dir / "latin1-at-the-end.txt").write_bytes(good.encode() + "Ende: Grüße".encode("latin-1"))
    (docs_dir / "blob.md").write_text(good + "x" * 20_000 + " the end.")
    (docs_dir / "blank.txt").write_text(" \n\t" * 5000)
    fine_text = "Fine\n\n" + "The fine file holds a quokka. " * 1000
    (docs_dir / "fine.txt").write_text(fine_text)
    report = build_index(docs_dir, tmp_path / "ix")
    skipped = dict(report.skipped)
    assert skipped["latin1-at-the-end.txt"] == "not UTF-8"
    assert skipped["blob.md"] == "not text: more than 0.00390625 MB without a space or a line break"
    assert skipped["blank.txt"] == "no text"
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    fine = next(s for s in manifest["sources"] if s["path"] == "fine.txt")
    n = len(split_passages(Document("fine.txt", "Fine", fine_text, "fine.txt")))
    assert fine["documents"] == 1 and fine["passages"][1] - fine["passages"][0] == n


@pytest.mark.slow
def test_a_40_mb_text_file_is_indexed_in_memory_that_does_not_grow_with_it(tmp_path):
    """Before: read whole, its words listed to count them: 460 MB of address space more than a tiny folder's
    index, a MemoryError under the 260 MB more given here (300 MB files ran out of memory after 10 minutes)."""
    tiny, big = tmp_path / "tiny", tmp_path / "big"
    tiny.mkdir()
    big.mkdir()
    (tiny / "a.txt").write_text("Paris is the capital of France.")
    # (BM25's part is the point: --no-dense; the dense part's memory is benchmarks/dense_scale.py's)
    base = vm_peak(crag_process("index", tiny, "--index", tmp_path / "ix-tiny", "--no-dense", cwd=tmp_path))
    sentence = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Sed do eiusmod tempor incididunt ut labore. "
    paragraph = sentence * 20 + "\n\n"
    with open(big / "big.txt", "w") as f:
        f.write("A Large Text\n\n" + paragraph * (40_000_000 // len(paragraph)))
    r = crag_process("index", big, "--index", tmp_path / "ix", "--no-dense", cwd=tmp_path, limit=base + (260 << 20))
    assert r.returncode == 0 and "MemoryError" not in r.stderr, r.stderr[-2000:]
    assert "indexed 1 documents from 1 files into 60868 passages" in r.stderr
