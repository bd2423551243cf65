"""``crag index`` on a folder of PDFs against the same text as ``.txt`` files: seconds and peak memory.

    python benchmarks/index_pdf.py [--files 200] [--pages 10] [--work DIR]

Makes FILES PDFs of PAGES pages each with fpdf2 (about 330 words a page, the
sentences of ``pdf_extract.py``), writes the same text as ``.txt`` files (a
page per paragraph), indexes each folder in a fresh ``crag index`` process,
and prints the wall seconds and the process's peak resident memory
(``wait4``'s ``ru_maxrss``), and the passages each index holds.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pdf_extract import sentence


def page_text(file: int, page: int, sentences: int = 22) -> str:
    start = (file * 1000 + page * sentences) % 100_000
    return " ".join(sentence(start + i) for i in range(sentences))


def make_folders(work: Path, files: int, pages: int) -> tuple[Path, Path]:
    from fpdf import FPDF

    pdfs, txts = work / "pdf", work / "txt"
    pdfs.mkdir(parents=True, exist_ok=True)
    txts.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        texts = [page_text(f, p) for p in range(pages)]
        if not (pdfs / f"doc{f:04d}.pdf").exists():
            pdf = FPDF()
            pdf.set_title(f"Survey report {f}")
            pdf.set_font("Helvetica", size=10)
            for text in texts:
                pdf.add_page()
                pdf.multi_cell(0, 5, text)
            pdf.output(str(pdfs / f"doc{f:04d}.pdf"))
        (txts / f"doc{f:04d}.txt").write_text(f"Survey report {f}\n\n" + "\n\n".join(texts) + "\n")
    return pdfs, txts


def index(folder: Path, target: Path) -> tuple[float, int, str]:
    """Seconds, peak RSS (KiB) and crag's last line for one ``crag index`` run in its own process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "crag_cli", "index", str(folder), "--index", str(target), "--force"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"crag index failed: {err}")
    return seconds, usage.ru_maxrss, err.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--work", type=Path, help="where the folders and indexes go (kept; default a temporary folder)")
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="index-pdf-"))
    t0 = time.perf_counter()
    pdfs, txts = make_folders(work, args.files, args.pages)
    print(
        f"made {args.files} PDFs of {args.pages} pages and the same text as .txt in {time.perf_counter() - t0:.0f} s "
        f"({sum(p.stat().st_size for p in pdfs.iterdir()) / 1e6:.1f} MB of PDF) in {work}"
    )
    print("\n| folder | files | pages | seconds | pages/s | peak memory | result |\n|---|---|---|---|---|---|---|")
    for name, folder in (("PDF", pdfs), (".txt", txts)):
        seconds, rss, last = index(folder, work / f"index-{name.strip('.').lower()}")
        pages = args.files * args.pages
        print(
            f"| {name} | {args.files} | {pages} | {seconds:.1f} | {pages / seconds:.0f} | {rss / 1024:.0f} MiB | {last} |"
        )


if __name__ == "__main__":
    main()
