"""A hostile user's probe of the installed ``crag``: bad input, files and faults, resource bounds; held / broke / lost.

    python benchmarks/hostile_probe.py --work /tmp/probe [--kills 20] [--model smollm2-135m] [--seed 0]

Categories (each probe is one ``crag`` process, run as a user would):

- **bad input**: names longer than the system allows for every command that
  takes a path, outputs that are loops of symbolic links, ``CRAG_CACHE_DIR``
  naming a file, a 10 MB value in ``crag.toml``. Held: exit 1, one
  ``crag: error:`` line under 600 characters, no traceback.
- **hostile content**: an index file garbled behind a valid header (NaN
  weights, offsets past the end), a questions line that is not UTF-8. Held: one
  line, or that line's error record with id ``line-N`` while the rest go on.
- **resource bounds**: ``crag batch --limit 3`` on a 60 MB questions file
  (held: its peak memory is within 50 MB of the same batch on a 3-line file;
  GNU time) and ``crag index`` of one 60 MB text file under ``prlimit --as`` of
  1.5 GiB (held: it finishes, or refuses in one line).
- **files and faults**: ``crag batch --workers 2`` killed with SIGKILL (the
  whole process group) at a random moment ``--kills`` times, each time taken
  up with ``--resume``, then run to the end. Held per kill: the inputs are
  unchanged, the output is absent or whole. Lost: at the end, a question
  missing, twice, out of order, an error record, or an answer other than an
  uninterrupted run's.
- **served faults**: the same with ``crag batch --parallel 2 --reader-url``
  against a deterministic OpenAI-style reader on 127.0.0.1 (this process: its
  answer is a digest of the prompt, so every uninterrupted run gives the same
  records) over a BM25-only index (``--no-dense``); lost: any record, error
  field aside, other than the uninterrupted run's.
- **hostile servers**: ``crag batch`` against that reader when it floods (each answer 60 MB in 4 KB events,
  ``max_tokens`` ignored) and when it answers: every flooded answer an error record, and peak memory within
  100 MB of the well-served run's.
- **hostile documents**: ``crag index`` of a folder holding a PDF whose page
  unpacks to ten million ``(x) Tj``, a ``.docx`` whose zip directory lists 1,000
  bytes for 1 GiB, a FIFO and links to ``/dev/zero`` and ``/dev/urandom``.
  Held: each named among the skipped files, the other files indexed, peak
  memory under 1.5 GiB (GNU time), under 120 s.

Prints one line per probe and a summary; writes ``WORK/probe.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRAG = [sys.executable, "-m", "crag_cli"]
LONG = "a" * 300


def crag(*args, cwd: Path, env: dict | None = None, limit: int | None = None, timeout: float = 600, raw: bool = False):
    """Run crag; ``limit``: an address-space ceiling in bytes (``prlimit --as``); ``raw``: ``args`` is the command."""
    command = [*(["prlimit", f"--as={limit}"] if limit else []), *([] if raw else CRAG), *map(str, args)]
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(command, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


def one_line(r) -> str | None:
    """None when ``r`` failed as crag promises (exit 1, one short error line, no traceback), else what broke."""
    lines = r.stderr.strip().splitlines()
    if r.returncode != 1:
        return f"exit {r.returncode}"
    if "Traceback" in r.stderr or len(lines) != 1 or not lines[0].startswith("crag: error: "):
        return "not one error line: " + r.stderr.strip()[-200:]
    if len(lines[0]) > 600:
        return f"an error line of {len(lines[0])} characters"
    return None


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(folder).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def bad_input(work: Path, ix: Path, gold: Path, model: str) -> list[tuple[str, str | None]]:
    (work / "A").unlink(missing_ok=True), (work / "B").unlink(missing_ok=True)
    os.symlink("B", work / "A"), os.symlink("A", work / "B")
    cache_file = work / "a-file"
    cache_file.write_text("mine\n")
    config = work / "big.toml"
    probes = {
        "ask --index LONG": ["ask", "x", "--index", LONG],
        "index LONG": ["index", LONG],
        "index DOCS --index LONG": ["index", work / "docs", "--index", LONG],
        "batch LONG.jsonl": ["batch", LONG + ".jsonl", "--index", ix],
        "evaluate --index LONG": ["evaluate", "x", "--index", LONG],
        "evaluate --input LONG": ["evaluate", "--input", LONG, "--index", ix],
        "evaluator-test LONG": ["evaluator-test", LONG, "--index", ix],
        "calibrate LONG": ["calibrate", LONG, "--index", ix],
        "calibrate --write LONG": ["calibrate", gold, "--index", ix, "--write", LONG],
        "train-evaluator --out LONG": ["train-evaluator", "--synthetic", "5", "--index", ix, "--out", LONG],
        "batch -o LONG": ["batch", gold, "--index", ix, "-o", LONG],
        "batch -o LOOP": ["batch", gold, "--index", ix, "-o", "A"],
        "calibrate --write LOOP": ["calibrate", gold, "--index", ix, "--write", "A"],
    }
    results = [(name, one_line(crag(*args, cwd=work))) for name, args in probes.items()]
    for name, cache in [("CRAG_CACHE_DIR=FILE", cache_file), ("CRAG_CACHE_DIR=FILE/below", cache_file / "x")]:
        split = "qwen2.5-coder-0.5b"  # assembled into the cache folder (a model in one file needs none)
        r = crag("ask", "x", "--index", ix, "--model", split, cwd=work, env={"CRAG_CACHE_DIR": str(cache)})
        results.append((name, one_line(r)))
    r = crag("ask", "x", "--index", ix, cwd=work, env={"CRAG_CACHE_DIR": "/tmp/" + LONG})
    results.append(("CRAG_CACHE_DIR=LONG", one_line(r)))
    for key in ("model", "index"):
        config.write_text(f'{key} = "{"a" * 10_000_000}"\n')
        where = ["--index", ix] if key == "model" else []
        r = crag("ask", "x", *where, cwd=work, env={"CRAG_CONFIG": str(config)})
        results.append((f"crag.toml {key} = 10 MB", one_line(r)))
    if cache_file.read_text() != "mine\n":
        results.append(("CRAG_CACHE_DIR file untouched", "the file was changed"))
    return results


def hostile_content(work: Path, ix: Path, model: str) -> list[tuple[str, str | None]]:
    results = []
    import numpy as np

    for name, damage in [("NaN weights", _nan_weights), ("offsets past the end", _offsets_past_end)]:
        copy = work / f"ix-{name.split()[0].lower()}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(ix, copy)
        damage(copy, np)
        r = crag("ask", "What does pass do?", "--index", copy, "--model", model, cwd=work)
        broke = one_line(r) or (None if "corrupt index" in r.stderr else "said: " + r.stderr.strip()[-200:])
        results.append((f"index with {name}", broke))
    sys.path.insert(0, str(ROOT / "tests"))
    from webserver import LocalWeb  # the tests' loopback web: a SearxNG and its pages

    httpd, url = fake_reader(0)  # the model's time out of the measure: what is bounded is the page's
    bm25 = work / "ix-bm25"
    crag("index", work / "docs", "--index", bm25, "--no-dense", "--force", cwd=work)
    with LocalWeb(result_paths=("/bomb",)) as web:  # 1 GiB behind Content-Encoding: gzip, gzip
        web_flags = ["--web", "searxng", "--searxng-url", web.url, "--allow-private"]
        started = time.perf_counter()
        reader = ["--reader-url", url, "--model", "m1"]
        r = crag("ask", "Who is Zorblat Quintana?", "--index", bm25, *reader, *web_flags, cwd=work, limit=3 << 30)
        took = time.perf_counter() - started
    httpd.shutdown()
    results.append(
        ("a gzip, gzip page of 1 GiB", None if r.returncode == 0 and took < 120 else f"{took:.0f} s, {r.stderr[-200:]}")
    )
    questions = work / "not-utf8.jsonl"
    questions.write_bytes(b'{"question": "What does pass do?"}\n{"question": "caf\xe9"}\n')
    r = crag("batch", questions, "--index", ix, "--model", model, cwd=work)
    records = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    ok = len(records) == 2 and records[1].get("id") == "line-2" and records[1].get("error")
    results.append(("questions line not UTF-8", None if ok else f"records: {[x.get('id') for x in records]}"))
    return results


def _nan_weights(ix: Path, np) -> None:
    for path in sorted(ix.rglob("*.npy")):
        array = np.load(path)
        if array.dtype.kind == "f" and array.size:
            array[:: max(1, array.size // 7)] = np.nan
            np.save(path, array)
            return


def _offsets_past_end(ix: Path, np) -> None:
    path = ix / "passages.offsets.npy"
    array = np.load(path)
    array[len(array) // 2] = np.iinfo(array.dtype).max // 2
    np.save(path, array)


def resource_bounds(work: Path, ix: Path, model: str) -> list[tuple[str, str | None]]:
    limit = 3 << 29  # 1.5 GiB of address space for crag index
    big_questions = work / "big.jsonl"
    line = json.dumps({"question": "What does the pass statement do? " + "x" * 200}) + "\n"
    with open(big_questions, "w") as f:
        f.write(line * (60_000_000 // len(line)))
    small = work / "small.jsonl"
    small.write_text(line * 3)
    peaks = []
    for questions in (small, big_questions):  # the 60 MB file must cost what 3 lines cost
        r = crag(
            "time",
            "-f",
            "%M",
            *CRAG,
            "batch",
            questions,
            "--index",
            ix,
            "--model",
            model,
            "--limit",
            "3",
            cwd=work,
            raw=True,
        )
        peaks.append(int(r.stderr.strip().splitlines()[-1]) // 1024)
        got = [x for x in r.stdout.splitlines() if x.strip()]
    extra = peaks[1] - peaks[0]
    ok = r.returncode == 0 and len(got) == 3 and extra < 50
    results = [
        (f"batch --limit 3 on 60 MB (peak {peaks[1]} MB, 3 lines {peaks[0]} MB)", None if ok else f"{extra} MB more")
    ]
    big_docs = work / "big-docs"
    big_docs.mkdir(exist_ok=True)
    sentence = "The pass statement is a null operation used where a statement is required. "
    (big_docs / "big.txt").write_text(sentence * (60_000_000 // len(sentence)))
    r = crag("index", big_docs, "--index", work / "big-ix", "--force", cwd=work, limit=limit, timeout=1800)
    results.append(("index of one 60 MB file", None if r.returncode == 0 else one_line(r)))
    big_questions.unlink()
    shutil.rmtree(big_docs)
    shutil.rmtree(work / "big-ix", ignore_errors=True)
    return results


def kills(
    work: Path, ix: Path, questions: Path, args: list, n: int, rng: random.Random, same=None, window: float = 15.0
) -> dict:
    """``args`` (a ``crag batch``) killed ``n`` times, each 0.5 to ``window`` s after it started, and resumed;
    ``same(record, reference)``: whether a record is the uninterrupted run's (default: the same answer)."""
    reference = work / "reference.jsonl"
    crag(*args, "-o", reference, "--overwrite", cwd=work, timeout=3600)
    inputs = (digest(ix), questions.read_bytes())
    out = work / "killed.jsonl"
    for stale in work.glob("killed.jsonl*"):
        stale.unlink()
    held, broke, runs = 0, [], 0
    while held + len(broke) < n:
        resume = ["--resume"] if (out.exists() or Path(f"{out}.partial").exists()) else []
        proc = subprocess.Popen(
            [*CRAG, *map(str, args), "-o", str(out), *resume],
            cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        runs += 1
        time.sleep(rng.uniform(0.5, window))
        if proc.poll() is not None:  # finished before its kill: start the batch again from nothing
            out.unlink(missing_ok=True)
            Path(f"{out}.run.json").unlink(missing_ok=True)
            continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        problem = _after_kill(out, inputs, ix, questions)
        held, broke = (held + 1, broke) if problem is None else (held, [*broke, problem])
    r = crag(*args, "-o", out, "--resume", cwd=work, timeout=3600)
    lost = _lost(out, reference, questions, same) if r.returncode == 0 else [f"final resume failed: {r.stderr[-300:]}"]
    return {"kills": n, "runs": runs, "held": held, "broke": broke, "lost": lost}


def _after_kill(out: Path, inputs: tuple, ix: Path, questions: Path) -> str | None:
    if (digest(ix), questions.read_bytes()) != inputs:
        return "an input changed"
    if out.exists():
        try:
            [json.loads(line) for line in out.read_text().splitlines()]
        except ValueError:
            return "the output is torn"
    return None


def _lost(out: Path, reference: Path, questions: Path, same=None) -> list[str]:
    same = same or (lambda rec, ref: rec.get("answer") == ref.get("answer"))
    want = [json.loads(line)["id"] for line in questions.read_text().splitlines()]
    got = [json.loads(line) for line in out.read_text().splitlines()]
    ref = {r["id"]: r for r in map(json.loads, reference.read_text().splitlines())}
    lost = [] if [r["id"] for r in got] == want else ["ids missing, doubled or out of order"]
    lost += [f"{r['id']}: error {r['error']}" for r in got if r.get("error")]
    lost += [f"{r['id']}: record differs" for r in got if not r.get("error") and not same(r, ref.get(r["id"], {}))]
    return lost


_TIMES = ("seconds", "timings", "elapsed", "started", "finished")  # what differs between two runs of a record


def _without_times(value):
    if isinstance(value, dict):
        return {k: _without_times(v) for k, v in value.items() if not any(t in k for t in _TIMES)}
    if isinstance(value, list):
        return [_without_times(v) for v in value]
    return value


def fake_reader(delay: float = 0.2, flood: int = 0):
    """A deterministic OpenAI-style reader on 127.0.0.1 in a thread of this process: ``(server, url)``;
    ``flood``: each answer is that many 4 KB events, whatever ``max_tokens`` says."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Reader(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, data: bytes, kind: str = "application/json") -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            self._send(json.dumps({"data": [{"id": "m1", "owned_by": "probe"}]}).encode())

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt = json.dumps(body.get("messages"), sort_keys=True).encode()
            answer = "The answer is " + hashlib.sha256(prompt).hexdigest()[:12] + "."
            time.sleep(delay)
            events = [{"choices": [{"index": 0, "delta": {"content": answer}}]}]
            events += [{"choices": [{"index": 0, "delta": {"content": "x" * 4000}}]}] * flood
            events.append({"choices": [], "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 5}})
            data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
            self._send(data, "text/event-stream")

    class Quiet(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address) -> None:  # a killed batch hangs up: what the probe does
            pass

    httpd = Quiet(("127.0.0.1", 0), Reader)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/v1"


def served_kills(work: Path, questions: Path, n: int, rng: random.Random) -> dict:
    ix = work / "ix-bm25"
    crag("index", work / "docs", "--index", ix, "--no-dense", "--force", cwd=work)
    httpd, url = fake_reader()
    try:
        args = ["batch", questions, "--index", ix, "--reader-url", url, "--model", "m1", "--parallel", "2"]
        same = lambda rec, ref: _without_times(rec) == _without_times(ref)  # noqa: E731
        return kills(work, ix, questions, args, n, rng, same, window=45.0)  # (a whole batch: about 50 s here)
    finally:
        httpd.shutdown()


def hostile_servers(work: Path, questions: Path) -> list[tuple[str, str | None]]:
    """``crag batch`` against a reader that floods (60 MB an answer) and one that answers: peak memory of each."""
    peaks = {}
    for name, flood in (("well-behaved", 0), ("flooding", 15000)):
        httpd, url = fake_reader(delay=0, flood=flood)
        try:
            out = work / f"served-{name}.jsonl"
            command = ["time", "-f", "%M", *CRAG, "batch", questions, "-o", out, "--overwrite", "--mode",
                       "no-retrieval", "--reader-url", url, "--model", "m1"]  # fmt: skip
            r = crag(*command, cwd=work, raw=True)
            peaks[name] = int(r.stderr.strip().splitlines()[-1]) // 1024
        finally:
            httpd.shutdown()
    records = [json.loads(line) for line in (work / "served-flooding.jsonl").read_text().splitlines()]
    cut = all("the answer was cut at crag's bound" in (rec["error"] or "") for rec in records)
    return [
        (f"a flood is each question's error ({len(records)} records)", None if cut else "an answer passed"),
        (
            f"peak {peaks['flooding']} MB flooded, {peaks['well-behaved']} MB well served",
            None if peaks["flooding"] - peaks["well-behaved"] < 100 else "over 100 MB more",
        ),  # fmt: skip
    ]


def hostile_documents(work: Path) -> list[tuple[str, str | None]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_hostile import _docx, _lying_sizes, _paragraphs, pdf_bomb

    docs = work / "hostile-docs"
    shutil.rmtree(docs, ignore_errors=True)
    shutil.copytree(ROOT / "sample_corpus", docs)
    pdf_bomb(docs / "bomb.pdf", 10_000_000)
    _lying_sizes(_docx(docs / "lies.docx", _paragraphs(1 << 30)))
    os.mkfifo(docs / "pipe.txt")
    os.symlink("/dev/zero", docs / "zero.txt")
    os.symlink("/dev/urandom", docs / "random.md")
    started = time.perf_counter()
    command = ["time", "-f", "%M", *CRAG, "index", docs, "--index", work / "ix-hostile", "--no-dense", "--force"]
    r = crag(*command, cwd=work, raw=True, timeout=600)
    took, peak = time.perf_counter() - started, int(r.stderr.strip().splitlines()[-1]) // 1024
    skipped = {line.split(":")[0][len("skipped ") :] for line in r.stderr.splitlines() if line.startswith("skipped")}
    results = [(f"{name} named as skipped", None if name in skipped else "not named") for name in (
        "bomb.pdf", "lies.docx", "pipe.txt", "zero.txt", "random.md")]  # fmt: skip
    results.append(
        (
            f"index of them (peak {peak} MB, {took:.0f} s)",
            None if r.returncode == 0 and peak < 1536 and took < 120 else r.stderr[-300:],
        )
    )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only",
        choices=[
            "bad-input",
            "hostile-content",
            "resource-bounds",
            "hostile-documents",
            "hostile-servers",
            "files-and-faults",
            "served-faults",
        ],
    )
    a = parser.parse_args()
    work = a.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "docs", ignore_errors=True)
    shutil.copytree(ROOT / "sample_corpus", work / "docs")
    ix = work / "ix"
    crag("index", work / "docs", "--index", ix, "--force", cwd=work)
    gold = work / "gold.jsonl"
    base = [json.loads(line) for line in (ROOT / "tests/data/sample_corpus_questions.jsonl").read_text().splitlines()]
    gold.write_text("".join(json.dumps(q) + "\n" for q in base))
    questions = work / "questions.jsonl"
    questions.write_text("".join(json.dumps({**q, "id": f"{q['id']}-{k}"}) + "\n" for k in range(2) for q in base))
    report: dict = {}
    steps = {
        "bad-input": lambda: bad_input(work, ix, gold, a.model),
        "hostile-content": lambda: hostile_content(work, ix, a.model),
        "resource-bounds": lambda: resource_bounds(work, ix, a.model),
        "hostile-documents": lambda: hostile_documents(work),
        "hostile-servers": lambda: hostile_servers(work, questions),
    }
    for category, step in steps.items():
        if a.only in (None, category):
            report[category] = step()
            for name, problem in report[category]:
                print(f"{category}: {name}: {'held' if problem is None else 'BROKE: ' + problem}", flush=True)
    batch = ["batch", questions, "--index", ix, "--model", a.model, "--workers", "2"]
    faults = {
        "files-and-faults": lambda: kills(work, ix, questions, batch, a.kills, random.Random(a.seed)),
        "served-faults": lambda: served_kills(work, questions, a.kills, random.Random(a.seed)),
    }
    for category, step in faults.items():
        if a.only in (None, category):
            report[category] = step()
            print(f"{category}: {json.dumps(report[category])}", flush=True)
    probes = [p for c in steps if c in report for p in report[c]]
    killed = [report[c] for c in faults if c in report]
    held = sum(p[1] is None for p in probes) + sum(k["held"] for k in killed)
    broke = sum(p[1] is not None for p in probes) + sum(len(k["broke"]) for k in killed)
    print(f"summary: {held} held, {broke} broke, {sum(len(k['lost']) for k in killed)} lost")
    (work / "probe.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
