from pathlib import Path

import pytest

from crag_cli.documents.passages import chunk_sentences, split_passages, split_sentences
from crag_cli.documents.formats import Document
from crag_cli.documents.types import html_main_text
from crag_cli.documents.folder import read_folder


def test_split_sentences_keeps_abbreviations_and_initials():
    text = "Dr. Smith met J. Doe in Paris. They talked, e.g. about art! Was it 1901? Yes."
    assert split_sentences(text) == [
        "Dr. Smith met J. Doe in Paris.",
        "They talked, e.g. about art!",
        "Was it 1901?",
        "Yes.",
    ]


def test_split_sentences_breaks_at_blank_lines_and_collapses_space():
    assert split_sentences("A title\n\nFirst   line\nwraps here. Second one.") == [
        "A title",
        "First line wraps here.",
        "Second one.",
    ]


def test_chunk_sentences_keeps_every_word_once_in_order():
    sentences = [" ".join(f"w{i}_{j}" for j in range(n)) for i, n in enumerate([30, 50, 40, 250, 5, 99])]
    chunks = chunk_sentences(sentences, 100)
    assert " ".join(chunks).split() == " ".join(sentences).split()
    assert all(len(c.split()) <= 100 for c in chunks)
    # sentence boundaries are respected: the 30- and 50-word sentences share a chunk, the 40 does not fit
    assert chunks[0] == " ".join(sentences[:2])


def test_split_passages_keeps_title_and_ids():
    doc = Document("d1", "Title", "One two three. " * 80, "d1.txt")
    passages = split_passages(doc, 100)
    assert len(passages) == 3
    assert [p.id for p in passages] == ["d1#0", "d1#1", "d1#2"]
    assert all(p.title == "Title" and p.doc_id == "d1" for p in passages)


def test_html_main_text_drops_boilerplate():
    from conftest import DOCS

    title, text = html_main_text(DOCS["painter.html"])
    assert title == "Anna Example"
    assert "Dutch painter born in Utrecht" in text
    assert "menu home about" not in text and "copyright" not in text


def test_read_folder_reads_all_types_and_reports_every_skip(docs_dir: Path):
    (docs_dir / "latin1.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    (docs_dir / "image.png").write_bytes(b"\x89PNG")
    (docs_dir / "empty.txt").write_text("   \n")
    (docs_dir / "sub" / "people.jsonl").write_text(
        '{"id": "p1", "title": "T", "text": "A politician."}\n{broken\n{"id": "p3"}\n', encoding="utf-8"
    )
    report = read_folder(docs_dir)
    ids = sorted(d.id for d in report.documents)
    assert ids == ["berlin.md", "p1", "painter.html", "paris.txt"]
    skipped = dict(report.skipped)
    assert skipped["latin1.txt"] == "not UTF-8"
    assert skipped["image.png"] == "unsupported file type"
    assert skipped["empty.txt"] == "no text"
    assert skipped["sub/people.jsonl:2"].startswith("malformed JSON")
    assert "sub/people.jsonl:3" in skipped
    berlin = next(d for d in report.documents if d.id == "berlin.md")
    assert berlin.title == "Berlin"
    assert {f.path for f in report.files} >= {"paris.txt", "sub/people.jsonl"}


def test_a_short_document_is_one_passage_as_the_sentence_splitter_would_make_it():
    import random

    from crag_cli.documents.passages import chunk_sentences

    rng = random.Random(5)
    pieces = [
        "Dr.",
        "J.",
        "Smith",
        "went",
        "home.",
        "It",
        "rained!",
        "Why?",
        "\n\n",
        "\t",
        "  ",
        "e.g.",
        "42.",
        "\u00a0",
    ]
    for _ in range(300):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        for max_words in (5, 30, 100):
            slow = chunk_sentences(split_sentences(text), max_words)  # the splitter, always
            got = [p.text for p in split_passages(Document("d", "", text, "f.txt"), max_words)]
            assert got == slow, (text, max_words)


@pytest.mark.slow
def test_a_sentence_that_abbreviations_join_is_joined_once():
    """600,000 initials in a row are one sentence (each piece was added to a growing string: minutes, not 0.5 s)."""
    text = "A. B. C. " * 200_000
    assert split_sentences(text) == [text.strip()]
