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

    with LocalWeb(result_paths=("/bomb",)) as web:  # 1 GiB behind Content-Encoding: gzip, gzip
        web_flags = ["--web", "searxng", "--searxng-url", web.url, "--allow-private"]
        started = time.perf_counter()
        r = crag(
            "ask", "Who is Zorblat Quintana?", "--index", ix, "--model", model, *web_flags, cwd=work, limit=3 << 30
        )
        took = time.perf_counter() - started
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


def kills(work: Path, ix: Path, questions: Path, model: str, n: int, rng: random.Random) -> dict:
    reference = work / "reference.jsonl"
    args = ["batch", questions, "--index", ix, "--model", model, "--workers", "2"]
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
        time.sleep(rng.uniform(0.5, 15.0))
        if proc.poll() is not None:  # finished before its kill: start the batch again from nothing
            out.unlink(missing_ok=True)
            Path(f"{out}.run.json").unlink(missing_ok=True)
            continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        problem = _after_kill(out, inputs, ix, questions)
        held, broke = (held + 1, broke) if problem is None else (held, [*broke, problem])
    r = crag(*args, "-o", out, "--resume", cwd=work, timeout=3600)
    lost = _lost(out, reference, questions) if r.returncode == 0 else [f"final resume failed: {r.stderr[-300:]}"]
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


def _lost(out: Path, reference: Path, questions: Path) -> list[str]:
    want = [json.loads(line)["id"] for line in questions.read_text().splitlines()]
    got = [json.loads(line) for line in out.read_text().splitlines()]
    ref = {r["id"]: r.get("answer") for r in map(json.loads, reference.read_text().splitlines())}
    lost = [] if [r["id"] for r in got] == want else ["ids missing, doubled or out of order"]
    lost += [f"{r['id']}: error {r['error']}" for r in got if r.get("error")]
    lost += [f"{r['id']}: answer differs" for r in got if not r.get("error") and r.get("answer") != ref.get(r["id"])]
    return lost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["bad-input", "hostile-content", "resource-bounds", "files-and-faults"])
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
    }
    for category, step in steps.items():
        if a.only in (None, category):
            report[category] = step()
            for name, problem in report[category]:
                print(f"{category}: {name}: {'held' if problem is None else 'BROKE: ' + problem}", flush=True)
    if a.only in (None, "files-and-faults"):
        report["files-and-faults"] = kills(work, ix, questions, a.model, a.kills, random.Random(a.seed))
        print(f"files-and-faults: {json.dumps(report['files-and-faults'])}", flush=True)
    probes = [p for c in steps if c in report for p in report[c]]
    faults = report.get("files-and-faults", {"held": 0, "broke": [], "lost": []})
    held = sum(p[1] is None for p in probes) + faults["held"]
    broke = sum(p[1] is not None for p in probes) + len(faults["broke"])
    print(f"summary: {held} held, {broke} broke, {len(faults['lost'])} lost")
    (work / "probe.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
