"""How the index's costs grow with the number of passages: build, disk, load, memory, query latency.

    python benchmarks/scale.py --data ../shared/bench/popqa --sizes 10000,100000,1000000 --out OUTDIR

For each size N a collection of N documents of 60 to 100 words (one passage
each) is made by recombining sentences of the shared corpus and web (seeded:
the same text every run; nothing downloaded), then, each in a fresh process so
that one step's memory does not count in another's:

* **build**: ``crag_cli.index.build_index`` of that folder: seconds and peak
  resident memory (``ru_maxrss``);
* **add one file**: a second file of ``ADDED`` documents is put beside the
  collection and the index rebuilt (``crag index`` again): seconds, peak memory,
  and how many files were read (the collection's file is reused, not read);
* **disk**: bytes of the index folder;
* **load**: ``BM25Index.load`` seconds, resident memory after the load and after
  the queries, which is what ``crag ask`` adds for its index; after the queries
  it is split into private memory (``RssAnon``) and pages of the memory-mapped
  index files (``RssFile``: page cache, shared between processes and given back
  under memory pressure);
* **query**: ``search(question, 10)`` latency over PopQA dev questions
  (``--queries``, after 5 warm-up ones): p50 and p99 in milliseconds.

Writes ``OUTDIR/scale.json``, ``OUTDIR/scale.md`` and ``OUTDIR/scale.png`` (each
cost against size, log-log). The collections and indexes are made in a new
folder ``OUTDIR/scale-work-*`` and removed after each size, unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 13
ADDED = 10  # documents in the file added to a built collection

BUILD = """
import json, resource, sys, time
from crag_cli.index import build_index
start = time.perf_counter()
report = build_index(sys.argv[1], sys.argv[2])
print(json.dumps({"build_s": time.perf_counter() - start, "passages": report.passages, "read": report.read,
                  "reused": report.reused, "build_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

QUERY = """
import json, resource, sys, time
import numpy as np
from crag_cli.index import BM25Index
def rss_mb(field="VmRSS"):
    with open("/proc/self/status") as f:
        return next(int(x.split()[1]) for x in f if x.startswith(field + ":")) / 1024
before = rss_mb()
start = time.perf_counter()
index = BM25Index.load(sys.argv[1])
load_s = time.perf_counter() - start
after_load = rss_mb()
questions = json.loads(sys.argv[2])
for q in questions[:5]:
    index.search(q, 10)
times = []
for q in questions[5:]:
    t = time.perf_counter()
    index.search(q, 10)
    times.append(time.perf_counter() - t)
print(json.dumps({"load_s": load_s, "rss_before_load_mb": before, "rss_after_load_mb": after_load,
                  "rss_after_queries_mb": rss_mb(), "anon_after_queries_mb": rss_mb("RssAnon"),
                  "file_after_queries_mb": rss_mb("RssFile"),
                  "query_p50_ms": 1000 * float(np.percentile(times, 50)),
                  "query_p99_ms": 1000 * float(np.percentile(times, 99)), "queries": len(times)}))
"""


def sentences(texts: list[str]) -> list[str]:
    """Split texts into sentences (at ``. ``, ``! ``, ``? ``), keeping those of 4 to 60 words."""
    out = []
    for text in texts:
        for s in re.split(r"(?<=[.!?])\s+", text):
            if 4 <= len(s.split()) <= 60:
                out.append(s.strip())
    return out


def make_collection(pool: list[str], n: int, path: Path, seed: int = SEED) -> None:
    """Write ``n`` documents of 60 to 100 words, each sentences drawn from ``pool`` (seeded), as JSON lines."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = np.array([len(s.split()) for s in pool])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        picks = iter(rng.integers(0, len(pool), size=8 * n + 64))
        for i in range(n):
            words, parts = 0, []
            while words < 60:
                j = int(next(picks))
                if words + lengths[j] > 100:
                    continue
                parts.append(pool[j])
                words += int(lengths[j])
            f.write(json.dumps({"id": f"s{i}", "title": "", "text": " ".join(parts)}) + "\n")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run_json(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"scale: a step failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def markdown(rows: list[dict], machine: str) -> str:
    lines = [
        f"Machine: {machine}. Command: `python benchmarks/scale.py --data ../shared/bench/popqa "
        f"--sizes {','.join(str(r['size']) for r in rows)} --out OUTDIR`.",
        "",
        "| passages | build s | build peak MB | add one file s | add peak MB | index MB on disk | load s | "
        "RSS after load MB | RSS after queries MB (private + mapped files) | query p50 ms | query p99 ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['passages']:,} | {r['build_s']:.1f} | {r['build_peak_mb']:.0f} | {r['add_s']:.1f} | "
            f"{r['add_peak_mb']:.0f} | {r['disk_mb']:.1f} | "
            f"{r['load_s']:.3f} | {r['rss_after_load_mb']:.0f} | {r['rss_after_queries_mb']:.0f} "
            f"({r['anon_after_queries_mb']:.0f} + {r['file_after_queries_mb']:.0f}) | "
            f"{r['query_p50_ms']:.2f} | {r['query_p99_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def chart(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["passages"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for key, label in [("build_s", "build (s)"), ("add_s", "add one file (s)"), ("load_s", "load (s)")]:
        axes[0].plot(x, [r[key] for r in rows], marker="o", label=label)
    for key, label in [("query_p50_ms", "query p50 (ms)"), ("query_p99_ms", "query p99 (ms)")]:
        axes[1].plot(x, [r[key] for r in rows], marker="o", label=label)
    for key, label in [
        ("disk_mb", "index on disk (MB)"),
        ("build_peak_mb", "build peak RSS (MB)"),
        ("anon_after_queries_mb", "loaded index, private RSS (MB)"),
        ("rss_after_queries_mb", "loaded index, all RSS (MB)"),
    ]:
        axes[2].plot(x, [r[key] for r in rows], marker="o", label=label)
    for ax, title in zip(axes, ["time", "query latency", "memory and disk"]):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages")
        ax.set_title(title)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description="Index cost against collection size.")
    parser.add_argument(
        "--data", type=Path, required=True, help="folder with corpus.jsonl, web.jsonl, questions.dev.jsonl"
    )
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=205, help="PopQA dev questions to time (5 warm up)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--keep", action="store_true", help="keep the generated collections and indexes")
    args = parser.parse_args()

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="scale-work-", dir=out))  # a new folder of this run's own: removed after
    texts = [
        json.loads(x)["text"]
        for name in ("corpus.jsonl", "web.jsonl")
        for x in (args.data / name).read_text(encoding="utf-8").splitlines()
        if x.strip()
    ]
    pool = sentences(texts)
    questions = [
        json.loads(x)["question"] for x in (args.data / "questions.dev.jsonl").read_text().splitlines() if x.strip()
    ][: args.queries]
    machine = f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}"
    print(f"scale: {len(pool)} sentences to recombine; {machine}", file=sys.stderr)
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        docs, index = work / f"docs-{size}", work / f"index-{size}"
        make_collection(pool, size, docs / "collection.jsonl")
        row = {"size": size, **run_json(BUILD, str(docs), str(index))}
        row["disk_mb"] = folder_bytes(index) / 1e6
        make_collection(pool, ADDED, docs / "added.jsonl", seed=SEED + 1)
        added = run_json(BUILD, str(docs), str(index))
        assert added["passages"] == row["passages"] + ADDED and (added["read"], added["reused"]) == (1, 1), added
        row.update(add_s=added["build_s"], add_peak_mb=added["build_peak_mb"])
        row.update(run_json(QUERY, str(index), json.dumps(questions)))
        print(f"scale: {json.dumps(row)}", file=sys.stderr)
        rows.append(row)
        if not args.keep:
            shutil.rmtree(docs)
            shutil.rmtree(index)
        (out / "scale.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n")
    if not args.keep:
        work.rmdir()
    (out / "scale.md").write_text(markdown(rows, machine))
    chart(rows, out / "scale.png")
    print(markdown(rows, machine))


if __name__ == "__main__":
    main()
