"""PDF and Word files in ``crag index``: real files built here (fpdf2, python-docx), never downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_safety import invoke

from crag_cli.documents.passages import split_passages
from crag_cli.documents.formats import Document
from crag_cli.documents.titles import text_title
from crag_cli.documents.formats import clean_page, drop_running_lines, join_pages
from crag_cli.index import BM25Index

KEEPER = "The new lighthouse keeper is Marta Quintero, appointed in the spring."


def ten_words(n: int) -> str:
    return f"Sentence {n} of page one tells of the harbour wall."


def make_pdf(
    path: Path, pages: list[str], title: str = "Harbour Report", header: str | None = None, **encryption
) -> Path:
    from fpdf import FPDF

    class Doc(FPDF):
        def header(self):
            if header:
                self.set_font("Helvetica", "I", 8)
                self.cell(0, 8, header, new_x="LMARGIN", new_y="NEXT")

        def footer(self):
            if header:
                self.set_y(-12)
                self.set_font("Helvetica", "I", 8)
                self.cell(0, 8, f"Page {self.page_no()}", align="C")

    pdf = Doc()
    pdf.set_title(title)
    if encryption:
        pdf.set_encryption(**encryption)
    for text in pages:
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


@pytest.fixture()
def pdf_docs(tmp_path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    page_one = " ".join(ten_words(i) for i in range(10))  # exactly 100 words: a passage ends with the page
    make_pdf(docs / "report.pdf", [page_one, KEEPER + " Other business was routine."])
    for name in ("tides", "gulls", "ferries"):  # a few other documents, so that BM25's term weights are positive
        (docs / f"{name}.txt").write_text(f"Notes on {name}\n\nThe {name} of the bay were counted in May.")
    return docs


@pytest.mark.slow
def test_a_pdf_is_indexed_page_by_page_and_its_source_names_the_page(pdf_docs, tiny_gguf, tmp_path):
    ix = tmp_path / "ix"
    r = invoke("index", pdf_docs, "--index", ix)
    assert r.exit_code == 0, r.output
    passages = [p for p in BM25Index.load(ix).passages if p.doc_id == "report.pdf"]
    assert [(p.title, p.page) for p in passages] == [("Harbour Report", "1"), ("Harbour Report", "2")]
    assert passages[1].text.startswith(KEEPER)
    question = "Who is the new lighthouse keeper?"
    common = ["--index", ix, "--model", tiny_gguf, "--max-tokens", "2", "--upper", "-1", "--lower", "-1"]
    common += ["--filter-threshold", "-1"]  # every passage kept: what is tested is where the answer's source is
    r = invoke("ask", question, *common, "--json")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    used = [s for s in rec["internal_knowledge"] if "Marta Quintero" in s["text"]]
    assert used and all(s["source"] == "report.pdf p. 2" for s in used)  # the answer's source: page 2
    shown = invoke("ask", question, *common)
    assert "source [1] report.pdf p. 2 (Harbour Report)" in shown.stderr
    qs = tmp_path / "q.jsonl"
    qs.write_text(json.dumps({"question": question}) + "\n")
    batch = json.loads(invoke("batch", qs, *common).stdout)
    assert any(s["source"] == "report.pdf p. 2" for s in batch["internal_knowledge"])
    scores = json.loads(invoke("evaluate", question, "--index", ix, "--json").stdout)["scores"]
    assert scores[0]["source"] == "report.pdf p. 2" and scores[0]["id"] == "report.pdf#1"


def test_running_headers_footers_and_line_end_hyphens_are_cleaned(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    body = "The board reviewed the dock {0} accounts and found them in order for the year. " * 6
    pages = [
        body.format(i) + f"Chapter {i}: the structures man-\nagement of dock {i} was reviewed." for i in range(1, 5)
    ]
    make_pdf(docs / "annual.pdf", pages, header="Harbour Authority - Annual Report 2025")
    assert invoke("index", docs, "--index", tmp_path / "ix").exit_code == 0
    text = " ".join(p.text for p in BM25Index.load(tmp_path / "ix").passages)
    assert "Annual Report 2025" not in text and "Page 3" not in text  # on every page: dropped
    assert text.count("structures management of dock") == 4  # the hyphen at the line end joined the word


def test_pdfs_and_word_files_that_yield_no_text_are_skipped_with_the_reason(pdf_docs, tmp_path):
    from fpdf import FPDF

    make_pdf(pdf_docs / "locked.pdf", ["Secret minutes."], owner_password="o", user_password="secret")
    whole = (pdf_docs / "report.pdf").read_bytes()
    (pdf_docs / "truncated.pdf").write_bytes(whole[: len(whole) // 3])
    scan = FPDF()
    scan.add_page()
    scan.rect(20, 20, 100, 150, style="F")  # a page with ink but no text layer, as a scan has
    scan.output(str(pdf_docs / "scan.pdf"))
    (pdf_docs / "notes.docx").write_text("this is not a zip")
    r = invoke("index", pdf_docs, "--index", tmp_path / "ix")
    assert r.exit_code == 0, r.output
    skipped = {
        line.split(": ", 1)[0][len("skipped ") :]: line.split(": ", 1)[1]
        for line in r.stderr.splitlines()
        if line.startswith("skipped ")
    }
    assert skipped["locked.pdf"] == "encrypted PDF (it needs a password)"
    assert skipped["truncated.pdf"].startswith("unreadable PDF")
    assert skipped["scan.pdf"].startswith("no text layer in 1 page(s)")
    assert skipped["notes.docx"].startswith("not a Word (.docx) file")
    assert "Traceback" not in r.output
    indexed = {p.doc_id for p in BM25Index.load(tmp_path / "ix").passages}
    assert indexed == {"report.pdf", "tides.txt", "gulls.txt", "ferries.txt"}  # the rest indexed all the same


def test_word_paragraphs_and_tables_in_order_with_headings_as_sections(tmp_path):
    import docx

    docs = tmp_path / "docs"
    docs.mkdir()
    d = docx.Document()
    d.add_heading("Board Minutes", 0)
    d.add_paragraph("Opened at nine by the chair.")
    d.add_heading("Attendance", 1)
    d.add_paragraph("Present: Ana and Ben.")
    table = d.add_table(rows=2, cols=2)
    for (r, c), text in {(0, 0): "Item", (0, 1): "Owner", (1, 0): "Budget", (1, 1): "Ana"}.items():
        table.cell(r, c).text = text
    d.add_paragraph("Apologies from Carla.")
    d.add_heading("Decisions", 1)
    d.add_paragraph("The budget was approved unanimously.")
    d.save(str(docs / "minutes.docx"))
    assert invoke("index", docs, "--index", tmp_path / "ix").exit_code == 0
    got = [(p.title, p.text) for p in BM25Index.load(tmp_path / "ix").passages]
    assert got == [
        ("Board Minutes", "Opened at nine by the chair."),
        ("Board Minutes › Attendance", "Present: Ana and Ben. Item | Owner. Budget | Ana. Apologies from Carla."),
        ("Board Minutes › Decisions", "The budget was approved unanimously."),
    ]


def test_pdfs_are_rebuilt_incrementally_like_other_files(pdf_docs, tmp_path):
    ix = tmp_path / "ix"
    assert invoke("index", pdf_docs, "--index", ix).exit_code == 0
    manifest = json.loads((ix / "manifest.json").read_text())
    pdf = next(s for s in manifest["sources"] if s["path"] == "report.pdf")
    assert pdf["size"] == (pdf_docs / "report.pdf").stat().st_size and len(pdf["sha256"]) == 64
    assert pdf["passages"][1] - pdf["passages"][0] == 2 and pdf["documents"] == 1
    assert "up to date" in invoke("index", pdf_docs, "--index", ix).stderr
    make_pdf(pdf_docs / "report.pdf", ["A single page now."])
    r = invoke("index", pdf_docs, "--index", ix)
    assert "(1 file(s) read, 3 unchanged taken from the old index)" in r.stderr
    assert "read, " not in invoke("index", pdf_docs, "--index", ix, "--force").stderr  # --force: all read again
    assert [p.page for p in BM25Index.load(ix).passages if p.doc_id == "report.pdf"] == ["1"]


# ----------------------------------------------------------------------------- the pure helpers


def test_running_lines_are_those_at_page_edges_on_most_pages():
    words = ["seabirds", "seals", "tides", "budget", "ferries"]
    pages = [
        f"Harbour Report\nOn {w} first\nmiddle\nHarbour Report\nmiddle\nOn {w} last\nPage {i}"
        for i, w in enumerate(words, 1)
    ]
    assert drop_running_lines(pages) == [f"On {w} first\nmiddle\nHarbour Report\nmiddle\nOn {w} last" for w in words]
    topics = ["Seabirds", "Seals", "Tides", "Budget"]
    slides = [f"{t}\nWhat we counted about {t.lower()}\nACME confidential\n{i} / 4" for i, t in enumerate(topics, 1)]
    assert drop_running_lines(slides) == [f"{t}\nWhat we counted about {t.lower()}" for t in topics]
    two = ["Harbour Report\nalpha", "Harbour Report\nbeta"]
    assert drop_running_lines(two) == two  # fewer than 3 pages: nothing is "running"
    mixed = ["Title\na", "Title\nb", "Other\nc", "Other\nd", "Else\ne"]
    assert drop_running_lines(mixed) == mixed  # no line on half of the pages


def test_table_rows_numbered_lines_and_dates_at_page_edges_stay():
    pages = [f"Question {i}\nWhat is {w}?\n{1000 + 31 * i} 5 {i}\n2024-03-0{i}" for i, w in enumerate("abcd", 1)]
    assert drop_running_lines(pages) == pages  # they differ from page to page: nothing recurs as it is
    numbered = [f"Harbour Report\nbody {w}\nPage {i} of 4" for i, w in enumerate("abcd", 1)]
    assert drop_running_lines(numbered) == [f"body {w}" for w in "abcd"]  # a page number matches, digits aside


def test_a_damaged_page_is_named_and_the_others_kept_and_reasons_are_the_files_own(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "a-locked.pdf", ["Secret."], owner_password="o", user_password="secret")
    three = make_pdf(tmp_path / "two.pdf", ["Quokkas live on Rottnest island.", "Seals rest on the breakwater."])
    (docs / "b-claims-three.pdf").write_bytes(three.read_bytes().replace(b"/Count 2", b"/Count 3"))  # one page missing
    import pypdfium2 as pdfium

    empty = pdfium.PdfDocument.new()  # a PDF with no page at all
    empty.save(str(docs / "c-no-pages.pdf"))
    empty.close()
    make_pdf(docs / "d-junk-title.pdf", ["Gulls nest on the pier."], title="Microsoft Word - Document1")
    r = invoke("index", docs, "--index", tmp_path / "ix")
    assert r.exit_code == 0, r.output
    assert "skipped a-locked.pdf: encrypted PDF (it needs a password)" in r.stderr
    assert "skipped b-claims-three.pdf p. 3: unreadable page" in r.stderr
    assert (
        "skipped c-no-pages.pdf: unreadable PDF" in r.stderr
    )  # not "encrypted", the error PDFium kept from a-locked.pdf
    passages = {p.doc_id: p for p in BM25Index.load(tmp_path / "ix").passages}
    assert "Seals rest on the breakwater." in passages["b-claims-three.pdf"].text  # its two good pages are kept
    assert passages["d-junk-title.pdf"].title == "d-junk-title"  # a tool's placeholder is not a title


def test_word_files_nested_tables_and_empty_files(tmp_path):
    import docx

    docs = tmp_path / "docs"
    docs.mkdir()
    d = docx.Document()
    d.add_heading("Part 1", 1)
    d.add_heading("Scope", 2)
    d.add_paragraph("The scope is the harbour.")
    outer = d.add_table(rows=1, cols=2)
    outer.cell(0, 0).text = "Owner"
    inner = outer.cell(0, 1).add_table(rows=1, cols=1)
    inner.cell(0, 0).text = "nested vicuna"
    d.save(str(docs / "nested.docx"))
    docx.Document().save(str(docs / "empty.docx"))
    r = invoke("index", docs, "--index", tmp_path / "ix")
    assert r.exit_code == 0 and "skipped empty.docx: no text" in r.stderr, r.output
    [passage] = BM25Index.load(tmp_path / "ix").passages
    assert passage.title == "nested › Part 1 › Scope"  # an empty section's heading leads the next one
    assert "nested vicuna" in passage.text and "Owner" in passage.text


def test_page_text_and_page_ranges_of_passages():
    assert clean_page("man\x02agement\r\nnext\x00line ") == "management\nnext line"
    text, breaks = join_pages(["One two three.", "Four five.", "Six."])
    doc = Document("d.pdf", "D", text, "d.pdf", breaks)
    assert [(p.text, p.page, p.cite) for p in split_passages(doc, 3)] == [
        ("One two three.", "1", "d.pdf p. 1"),
        ("Four five. Six.", "2-3", "d.pdf pp. 2-3"),
    ]
    assert [(p.text, p.page, p.cite) for p in split_passages(doc, 5)] == [
        ("One two three. Four five.", "1-2", "d.pdf pp. 1-2"),
        ("Six.", "3", "d.pdf p. 3"),
    ]
    plain = Document("a.txt", "A", "Plain text.", "a.txt")
    assert [(p.page, p.cite) for p in split_passages(plain)] == [("", "a.txt#0")]


@pytest.mark.parametrize(
    "text, title",
    [
        (
            "First Complete Genome of a Bovine Coronavirus\n\nhttps://example.org\nThe genome ...",
            "First Complete Genome of a Bovine Coronavirus",
        ),
        ('The "assert" statement\n**********************\n\nAssert statements are ...', 'The "assert" statement'),
        ("The virus was sequenced in 2017.\nIt is 31 kb long.", None),  # a sentence, not a title
        ("Only one line, no body", None),
        ("\n\nStarts after blank lines\nthen text", "Starts after blank lines"),
        ("id,name,value\n1,a,2", None),  # a row of values
        ("https://example.org/paper\nThe text", None),
        ("From: ann@example.org\nHello", None),
        ("COVID-19: a review of the first year\nText", "COVID-19: a review of the first year"),
        ("#!/bin/sh\necho", None),
        ("================\ntext", None),
        ("1\n00:00:01 --> 00:00:02", None),  # a subtitle file's first cue
        (" ".join(["word"] * 33) + "\nbody", None),  # too long for a title
        (
            "Design of 1-Substituted Pyridylimidazo[1,5-a]Pyridine Derivatives\nText",
            "Design of 1-Substituted Pyridylimidazo[1,5-a]Pyridine Derivatives",
        ),  # a comma in a name is not a row of values
    ],
)
def test_a_text_files_first_line_is_its_title_when_it_reads_as_one(text, title):
    assert text_title(text) == title


def test_a_word_file_with_a_missing_part_says_which(tmp_path):
    import zipfile

    import docx

    docs = tmp_path / "docs"
    docs.mkdir()
    d = docx.Document()
    d.add_paragraph("The harbour has a new crane.")
    d.save(str(tmp_path / "whole.docx"))
    for name, left_out in (("no-body.docx", "word/document.xml"), ("no-types.docx", "[Content_Types].xml")):
        with zipfile.ZipFile(tmp_path / "whole.docx") as whole, zipfile.ZipFile(docs / name, "w") as out:
            for item in whole.infolist():
                if item.filename != left_out:
                    out.writestr(item, whole.read(item))
    (docs / "text.docx").write_text("this is not a zip")
    (docs / "crane.txt").write_text("The crane lifts forty tonnes.")
    r = invoke("index", docs, "--index", tmp_path / "ix")
    assert r.exit_code == 0, r.output
    assert "skipped no-body.docx: a damaged Word file: missing word/document.xml" in r.stderr
    assert "skipped no-types.docx: a damaged Word file: missing [Content_Types].xml" in r.stderr
    assert "skipped text.docx: not a Word (.docx) file (not a zip archive)" in r.stderr


def test_a_restructuredtext_file_is_indexed_with_its_section_title(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tasks.rst").write_text(
        ".. _tasks:\n\n.. py:currentmodule:: anyio\n\nTask groups\n===========\n\n"
        "A task group waits for all of its child tasks to finish before it exits.\n"
    )
    (docs / "notes.rst").write_text("Some notes without a section title.\nThe ferry leaves at noon.\n")
    r = invoke("index", str(docs), "--index", str(tmp_path / "ix"))
    assert r.exit_code == 0 and "skipped" not in r.stderr, r.output
    index = BM25Index.load(tmp_path / "ix")
    hit = index.search("child tasks finish", 1)[0].passage
    assert (hit.source, hit.title) == ("tasks.rst", "Task groups")
    assert index.search("ferry noon", 1)[0].passage.title == "notes"  # no section title: the file's name
