"""What the index's dense part costs: embedding time, disk, memory and exact search latency, at each size.

    python benchmarks/dense_scale.py --data ../shared/bench/popqa --sizes 10000,100000,1000000 [--sample 512]

* **embed**: all-MiniLM-L6-v2 (crag index's encoder, float, 256 tokens) over ``--sample`` passages of
  ``DATA/corpus.jsonl`` (or ``DATA/docs``' index, as crag reads it): passages a second on this machine, and what
  that makes for each size (embedding is linear in the passages; BM25's part is ``benchmarks/scale.py``'s).
* **vectors**: for each size N, N rows written by :func:`crag_cli.index.dense.write_vectors` (rows from a seeded
  random reader standing in for the encoder: the write, not the model, is measured), then, in a fresh process,
  mapped and searched as ``crag ask`` does (:func:`crag_cli.index.dense.cosines` and the top 50): seconds to
  write, bytes on disk, resident memory after 20 searches, and the p50 / p99 search latency.

* **a folder** (``--files N``): N ``.txt`` files of one passage each (the data's first N passages, title and
  text; past its size, its passages again), indexed by ``crag index`` in a fresh process (its peak memory alone) with and without ``--no-dense``, then one file changed and
  indexed again: seconds and peak resident memory (``ru_maxrss`` of the child) of each.

Prints a Markdown table; ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)

DIM = 384


class RandomEncoder:
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        import numpy as np

        self.rng = np.random.default_rng(seed)

    def encode(self, texts):
        v = self.rng.normal(size=(len(texts), DIM)).astype("float32")
        return v / (v**2).sum(1, keepdims=True) ** 0.5


def embed_rate(data: Path, sample: int) -> float:
    """Passages a second embedded by crag index's encoder (a sample of the data's passages)."""
    from crag_cli.index.dense import MiniLMEncoder

    rows = [json.loads(line) for line in open(data / "corpus.jsonl")][:sample]
    texts = [f"{r.get('title', '')}\n{r['text']}" if r.get("title") else r["text"] for r in rows]
    enc = MiniLMEncoder()
    enc.encode(texts[:16])  # (the model loaded)
    t = time.perf_counter()
    enc.encode(texts)
    return len(texts) / (time.perf_counter() - t)


def write(n: int, path: Path) -> float:
    from crag_cli.index.dense import write_vectors

    t = time.perf_counter()
    write_vectors([(False, 0, n)], lambda old, a, b: [""] * (b - a), None, RandomEncoder(), path, batch=65536)
    return time.perf_counter() - t


def search(path: str, n: int) -> dict:
    """(In a fresh process) map the vectors, search 20 random questions: latency and memory."""
    import numpy as np

    from crag_cli.index import top_k
    from crag_cli.index.dense import DenseInfo, as_rows, cosines

    vectors = as_rows(np.load(path, mmap_mode="r"), DenseInfo("random", DIM), n)
    q = RandomEncoder(1).encode([""] * 25)
    seconds = []
    for i, query in enumerate(q):
        t = time.perf_counter()
        top_k(cosines(vectors, query), 50)
        if i >= 5:
            seconds.append(time.perf_counter() - t)
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return {
        "p50_ms": 1000 * float(np.percentile(seconds, 50)),
        "p99_ms": 1000 * float(np.percentile(seconds, 99)),
        "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
        "rss_anon_mb": int(status["RssAnon"].split()[0]) / 1024,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def folder(data: Path, n: int) -> list[dict]:
    """``crag index`` of a folder of ``n`` one-passage files, with and without the dense part, then one change."""
    corpus = [json.loads(line) for _, line in zip(range(n), open(data / "corpus.jsonl"))]
    rows = [corpus[i % len(corpus)] for i in range(n)]  # past the corpus's size its passages again, as other files
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        for i, r in enumerate(rows):
            path = docs / f"d{i % 100:02d}" / f"p{i}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{r.get('title') or 'Passage'}\n\n{r['text']}\n")
        for dense in ("dense", "no-dense"):
            ix = Path(tmp) / f"ix-{dense}"
            for step in ("build", "one file changed"):
                if step != "build":
                    (docs / "d00" / "p0.txt").write_text("Changed\n\nThe harbour keeper logged a quokka.\n")
                t = time.perf_counter()
                said = subprocess.run([sys.executable, __file__, "--data", str(data), "--child", str(docs), str(ix),
                                       dense], check=True, capture_output=True, text=True)  # fmt: skip
                out.append({"files": len(rows), "index": dense, "step": step, "seconds": time.perf_counter() - t,
                            "peak_mb": float(said.stdout)})  # fmt: skip
                print(f"(done: {out[-1]})", file=sys.stderr, flush=True)  # a later failure keeps what was measured
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=data.on_demand, required=True)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--sample", type=int, default=512)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--files", type=int, help="also: crag index of a folder of this many one-passage files")
    parser.add_argument("--search", nargs=2, help=argparse.SUPPRESS)  # (the fresh process)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # (crag index, its peak memory alone)
    args = parser.parse_args()
    if args.child:
        docs, ix, dense = args.child
        subprocess.run([sys.executable, "-m", "crag_cli", "index", docs, "--index", ix, f"--{dense}"], check=True,
                       capture_output=True)  # fmt: skip
        print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        return
    if args.search:
        print(json.dumps(search(args.search[0], int(args.search[1]))))
        return
    rate = embed_rate(args.data, args.sample)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",") if s]:
            path = Path(tmp) / f"v{n}.npy"
            seconds = write(n, path)
            said = subprocess.run(
                [sys.executable, __file__, "--data", str(args.data), "--search", str(path), str(n)],
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append({"passages": n, "embed_hours": n / rate / 3600, "write_s": seconds,
                         "disk_mb": path.stat().st_size / 2**20, **json.loads(said.stdout)})  # fmt: skip
            path.unlink()
    print(f"embedding: {rate:.1f} passages/s (all-MiniLM-L6-v2, float, {args.sample} passages)\n")
    print("| passages | embedding (h, at that rate) | write (s) | disk (MB) | search p50 / p99 (ms) | RSS after (MB) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['passages']:,} | {r['embed_hours']:.2f} | {r['write_s']:.1f} | {r['disk_mb']:.0f} | "
              f"{r['p50_ms']:.0f} / {r['p99_ms']:.0f} | {r['rss_mb']:.0f} (anon {r['rss_anon_mb']:.0f}) |")  # fmt: skip
    made = folder(args.data, args.files) if args.files else []
    if made:
        print("\n| files | index | step | seconds | peak memory (MB) |\n|---|---|---|---|---|")
        for r in made:
            print(f"| {r['files']:,} | --{r['index']} | {r['step']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"embed_per_s": rate, "sizes": rows, "folder": made}, indent=1))


if __name__ == "__main__":
    main()
