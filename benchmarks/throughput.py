"""Throughput of ``crag batch`` with workers and threads: questions per second, same answers?

    python benchmarks/throughput.py --data ../shared/bench/popqa --sample 100 --model smollm2-135m \
        [--runs 1x0,1x1,2x1,ray2x1,p2] [--mode crag] [--web-off] --out OUTDIR

Each run ``WxT`` is one ``crag batch`` process with ``--workers W`` and
``--threads W*T`` (T generation threads per worker; ``T = 0`` means the default,
all cores, in one process); ``rayWxT`` is the same with ``--ray`` (a local Ray
on 127.0.0.1, W actors of T threads; Ray's start-up is in the time); ``pN`` is one process answering N groups
at once over one reader (``--parallel N``), on the same spread sample of a bench folder's dev questions
(``corpus.jsonl`` or ``docs/``), index and web stand-in as ``benchmarks/popqa.py`` (no web cache; ``--web-off``:
crag's default, no web). Reported per
run: wall-clock seconds of the whole command (start-up and model loading
included, as a user waits for it), questions per second over that time, and
whether its records equal the first run's (answers and actions; the ids that
differ are listed). Writes ``OUTDIR/throughput.json`` and ``OUTDIR/throughput.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from popqa import spread_sample  # noqa: E402  (the benchmark's own sample: one definition)
import data  # noqa: E402  (a path under benchmarks/DOMAIN/ is unpacked on demand)


def parse_run(text: str) -> tuple[int, int, bool, int]:
    """``"2x1"`` -> ``(2, 1, False, 1)``, ``"ray2x1"`` -> ``(2, 1, True, 1)``, ``"p4"`` -> ``(1, 0, False, 4)``:
    workers (or Ray actors), generation threads per worker (0 = crag's default), on Ray or not, questions at once
    per process (``--parallel``)."""
    text = text.lower()
    if text.startswith("p"):
        return 1, 0, False, int(text[1:])
    ray = text.startswith("ray")
    workers, threads = text.removeprefix("ray").split("x")
    return int(workers), int(threads), ray, 1


def differing(records: list[dict], reference: list[dict]) -> list[str]:
    """Ids whose answer or action differs between two runs over the same questions."""
    ref = {r["id"]: (r.get("answer"), r.get("action")) for r in reference}
    return [r["id"] for r in records if ref.get(r["id"]) != (r.get("answer"), r.get("action"))]


def main() -> None:
    parser = argparse.ArgumentParser(description="Throughput of crag batch with workers and threads.")
    parser.add_argument("--data", type=data.on_demand, required=True)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--mode", default="crag", choices=["crag", "rag"])
    parser.add_argument("--runs", default="1x0,1x1,2x1,ray2x1", help="[ray]WORKERSxTHREADS_EACH, comma separated")
    parser.add_argument("--web-off", action="store_true", help="crag's default configuration: no web")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from crag_cli.index import build_index
    from webstandin import start_in_thread

    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    lines = [x for x in (args.data / "questions.dev.jsonl").read_text().splitlines() if x.strip()]
    questions = out / "questions.jsonl"
    questions.write_text("\n".join(spread_sample(lines, args.sample)) + "\n")
    index = out / "index"
    corpus = args.data / "corpus.jsonl"
    build_index(corpus if corpus.exists() else args.data / "docs", index)
    server, url = start_in_thread(args.data / "web.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAG_") or k == "CRAG_CACHE_DIR"}
    results, reference = [], None
    try:
        for run in args.runs.split(","):
            workers, threads, ray, parallel = parse_run(run)
            name = f"p{parallel}" if parallel > 1 else f"{'ray' if ray else ''}{workers}x{threads}"
            records_path = out / f"records-{name}.jsonl"
            cmd = [
                sys.executable,
                "-m",
                "crag_cli",
                "batch",
                str(questions),
                "-o",
                str(records_path),
                "--overwrite",
                "--index",
                str(index),
                "--model",
                args.model,
                "--mode",
                args.mode,
                "--workers",
                str(workers),
            ]
            if threads:
                cmd += ["--threads", str(workers * threads)]
            if ray:
                cmd += ["--ray"]
            if parallel > 1:
                cmd += ["--parallel", str(parallel)]
            if args.mode == "crag" and not args.web_off:
                cmd += ["--web", "searxng", "--searxng-url", url, "--allow-private", "--no-cache"]
            print(" ".join(cmd), file=sys.stderr)
            start = time.perf_counter()
            with open(out / f"log-{name}.txt", "w") as log:
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, check=False)
            wall = time.perf_counter() - start
            records = [json.loads(x) for x in records_path.read_text().splitlines()]
            reference = reference or records
            diff = differing(records, reference)
            results.append(
                {
                    "run": name,
                    "ray": ray,
                    "workers": workers,
                    "threads_per_worker": threads or os.cpu_count(),
                    "parallel": parallel,
                    "questions": len(records),
                    "seconds": round(wall, 1),
                    "questions_per_second": round(len(records) / wall, 3),
                    "errors": sum(bool(r.get("error")) for r in records),
                    "differ_from_first": diff,
                }
            )
            print(json.dumps(results[-1]), file=sys.stderr)
    finally:
        server.shutdown()
    (out / "throughput.json").write_text(
        json.dumps({"model": args.model, "mode": args.mode, "web": not args.web_off, "runs": results}, indent=1)
    )
    table = [
        "| run | workers × threads | at once | questions | seconds | questions/min | errors | answers differing from the first run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        table.append(
            f"| {'Ray actors' if r['ray'] else 'processes'} | {r['workers']} × {r['threads_per_worker']} | {r['parallel']} | "
            f"{r['questions']} | {r['seconds']} | {60 * r['questions_per_second']:.1f} | {r['errors']} | "
            f"{len(r['differ_from_first'])} |"
        )
    (out / "throughput.md").write_text(f"model {args.model}, mode {args.mode}\n\n" + "\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
