"""Compare PDF text extractors for ``crag index``: text quality and pages per second.

Three PDFs are made here with fpdf2 (a two-column paper, a report with tables
and a header and footer on every page, a slide deck), whose sentences are
known, so that recall and reading order can be counted; any other PDFs given
on the command line (real ones: manuals, specifications) are measured for
speed, hyphenated line ends, and lines repeated on most pages.

    python benchmarks/pdf_extract.py [--out DIR] [REAL.pdf ...]

Prints one Markdown table per PDF (library, pages/s, sentences found, order,
lines repeated on most pages as the library gives them (the report's running
header and its table's header row are 2), words left split by a hyphen at a
line end, empty pages). PDFium marks a line-end hyphenation with ``\x02``,
which crag joins: it is not counted as split.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

WORDS = (
    "quokka lantern harbour granite meadow falcon copper violet orchard tundra beacon saffron glacier "
    "willow ember canyon walnut prairie cobalt juniper"
).split()


def sentence(n: int) -> str:
    """A sentence that occurs once: its number spelled in words it alone holds together."""
    a, b, c = WORDS[n % 20], WORDS[(n // 20) % 20], WORDS[(n * 7 + 3) % 20]
    return f"Finding {n} shows that the {a} survey near the {b} station recorded {c} samples in season {n % 9 + 1}."


def two_column_paper(path: Path) -> list[str]:
    """300 known sentences in two justified columns (about 6 pages)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    pdf.cell(0, 10, "A Survey of Coastal Quokka Colonies", new_x="LMARGIN", new_y="NEXT", align="C")
    pdf.set_font("Times", size=10)
    known = [sentence(i) for i in range(300)]
    paras = [" ".join(known[i : i + 5]) for i in range(0, len(known), 5)]
    with pdf.text_columns(ncols=2, gutter=8, text_align="J") as cols:
        for para in paras:
            cols.write(para + "\n\n")
    pdf.output(str(path))
    return known


def table_report(path: Path, pages: int = 5) -> list[str]:
    from fpdf import FPDF

    class Report(FPDF):
        def header(self):
            self.set_font("Helvetica", "I", 8)
            self.cell(
                0, 8, "Annual Report 2025 - Harbour Authority - CONFIDENTIAL", align="C", new_x="LMARGIN", new_y="NEXT"
            )

        def footer(self):
            self.set_y(-12)
            self.set_font("Helvetica", "I", 8)
            self.cell(0, 8, f"Page {self.page_no()}", align="C")

    pdf = Report()
    known, n = [], 1000
    for page in range(pages):
        pdf.add_page()
        pdf.set_font("Helvetica", size=10)
        for _ in range(3):
            pdf.multi_cell(0, 5, sentence(n), new_x="LMARGIN", new_y="NEXT")
            known.append(sentence(n))
            n += 1
        with pdf.table(col_widths=(30, 50, 40, 40)) as table:
            table.row(("Station", "Species", "Count", "Season"))
            for i in range(8):  # rows that differ from page to page: only the header row recurs
                table.row(
                    (WORDS[(i + page) % 20], WORDS[(i + 5 + 3 * page) % 20], str(100 + i * 7 + page), str(i % 4 + 1))
                )
        pdf.ln(4)
        for _ in range(3):
            pdf.multi_cell(0, 5, sentence(n), new_x="LMARGIN", new_y="NEXT")
            known.append(sentence(n))
            n += 1
    pdf.output(str(path))
    return known


def slide_deck(path: Path, slides: int = 12) -> list[str]:
    from fpdf import FPDF

    pdf = FPDF(orientation="L")
    known = []
    for s in range(slides):
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 28)
        pdf.cell(0, 20, f"Slide {s + 1}: {WORDS[s % 20].title()} results", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=18)
        for b in range(4):
            text = sentence(2000 + s * 4 + b)
            pdf.multi_cell(0, 10, "- " + text, new_x="LMARGIN", new_y="NEXT")
            known.append(text)
    pdf.output(str(path))
    return known


# --------------------------------------------------------------------------- the extractors


def pypdf_pages(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def pdfminer_pages(path: Path) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return [
        "".join(el.get_text() for el in layout if isinstance(el, LTTextContainer))
        for layout in extract_pages(str(path))
    ]


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return [pdf[i].get_textpage().get_text_bounded() for i in range(len(pdf))]
    finally:
        pdf.close()


EXTRACTORS = {"pypdf": pypdf_pages, "pdfminer.six": pdfminer_pages, "pypdfium2": pdfium_pages}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00ad", "")).strip()


def quality(pages: list[str], known: list[str]) -> dict:
    """Sentences found whole, consecutive pairs in order, repeated lines, hyphen-split words."""
    flat = _norm(" ".join(pages))
    at = [flat.find(s) for s in known]
    found = [p for p in at if p >= 0]
    pairs = [(a, b) for a, b in zip(at, at[1:]) if a >= 0 and b >= 0]
    lines = Counter(line.strip() for page in pages for line in set(page.splitlines()) if line.strip())
    repeated = sum(1 for line, c in lines.items() if c >= max(3, 0.6 * len(pages)) and not line.isdigit())
    hyphen = len(re.findall(r"[a-z]-\s*\n\s*[a-z]", "\n".join(pages)))
    return {
        "found": f"{len(found)}/{len(known)}" if known else "-",
        "order": f"{sum(a < b for a, b in pairs) / len(pairs):.0%}" if pairs else "-",
        "repeated": repeated,
        "hyphen": hyphen,
        "empty": sum(1 for p in pages if not p.strip()),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("real", nargs="*", type=Path, help="other PDFs to measure (speed, hyphens, repeated lines)")
    ap.add_argument("--out", type=Path, help="keep the generated PDFs here")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per PDF and library (the median is shown)")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="pdf-extract-"))
    out.mkdir(parents=True, exist_ok=True)
    made = {}
    for name, maker in (
        ("two-column paper", two_column_paper),
        ("report with tables", table_report),
        ("slide deck", slide_deck),
    ):
        path = out / (name.replace(" ", "-") + ".pdf")
        made[path] = (name, maker(path))
    for path in args.real:
        made[path] = (path.name, [])
    for path, (name, known) in made.items():
        print(f"\n### {name} ({path.name})\n")
        print(
            "| library | pages | pages/s | sentences found | in order | repeated lines | hyphen-split | empty pages |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for lib, fn in EXTRACTORS.items():
            times, pages = [], []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                pages = fn(path)
                times.append(time.perf_counter() - t0)
            q = quality(pages, known)
            rate = len(pages) / statistics.median(times)
            print(
                f"| {lib} | {len(pages)} | {rate:.1f} | {q['found']} | {q['order']} | {q['repeated']} | "
                f"{q['hyphen']} | {q['empty']} |"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
