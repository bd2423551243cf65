"""The benchmark domains' data: one archive a domain in ``benchmarks/data/``, unpacked on demand.

Standard library only. Each ``benchmarks/data/DOMAIN.tar.xz`` holds one folder, ``DOMAIN/``: ``docs/`` (the
other project's documentation folder, as copied), ``web.jsonl`` (the stand-in web), the question files
(``questions.jsonl`` and its splits), the licence files, the folder's ``README.md`` (sources, licences, how the
questions were written) and ``questions.py`` (the hand-written questions and the tables that check them; see
``docs_questions.py``). ``benchmarks/data/SHA256SUMS`` lists every file of every archive with its sha256.

    python benchmarks/data.py list                      # the domains and their files
    python benchmarks/data.py unpack docs6qa            # to benchmarks/docs6qa/ (git-ignored)
    python benchmarks/data.py unpack docs6qa --to DIR   # to DIR/docs6qa/
    python benchmarks/data.py check [DOMAIN ...]        # each archive's files against SHA256SUMS
    python benchmarks/data.py pack docs6qa [--from DIR] # rebuild the archive from DIR/docs6qa/ (byte-identical)

A benchmark script handed a path under ``benchmarks/DOMAIN/`` that is not there yet unpacks the domain first
(:func:`on_demand`, the scripts' ``type=`` for such paths), so ``--data benchmarks/docs6qa`` works on a fresh
checkout. Unpacking never replaces a file: it stops at the first one that is there with other content.
"""

import argparse
import hashlib
import io
import lzma
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHIVES = HERE / "data"
SUMS = ARCHIVES / "SHA256SUMS"
MTIME = 1767225600  # 2026-01-01T00:00:00Z: every member's time, so that packing again gives the same bytes
PRESET = 9 | lzma.PRESET_EXTREME  # xz -9e
RESULTS = HERE / "results"
RECORDS = RESULTS / "records.tar.xz"  # the run records behind docs/benchmarks.md's figures, one archive
# xz -9e, its 64 MiB dictionary spanning all the records (runs repeat one another), literals tuned for text
RECORDS_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": PRESET, "dict_size": 64 << 20, "lc": 4, "pb": 0}]


def domains():
    """The domains that have an archive, sorted."""
    return sorted(p.name[: -len(".tar.xz")] for p in ARCHIVES.glob("*.tar.xz"))


def members(domain):
    """``{path inside the archive: bytes}`` of a domain's archive (``results``: the records archive; files only)."""
    archive = RECORDS if domain == "results" else ARCHIVES / f"{domain}.tar.xz"
    with tarfile.open(archive, "r:xz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def manifest():
    """``{path: sha256}`` from SHA256SUMS (``HASH  DOMAIN/PATH`` lines, as sha256sum writes them)."""
    out = {}
    for line in SUMS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(None, 1)
            out[name.strip()] = digest
    return out


def check(names=None):
    """Compare each archive's files with SHA256SUMS; return the problems (empty when all agree)."""
    listed, problems = manifest(), []
    for domain in names or domains():
        if not (ARCHIVES / f"{domain}.tar.xz").is_file():
            problems.append(f"{domain}: no archive {ARCHIVES / domain}.tar.xz")
            continue
        files = members(domain)
        want = {k: v for k, v in listed.items() if k.startswith(f"{domain}/")}
        for name in sorted(set(files) | set(want)):
            if name not in want:
                problems.append(f"{name}: in the archive, not in SHA256SUMS")
            elif name not in files:
                problems.append(f"{name}: in SHA256SUMS, not in the archive")
            elif hashlib.sha256(files[name]).hexdigest() != want[name]:
                problems.append(f"{name}: sha256 differs from SHA256SUMS")
    return problems


def unpack(domain, to=None):
    """Write the domain's files under ``to/DOMAIN/`` (default: benchmarks/DOMAIN/; ``results``: the records, by
    default into benchmarks/results/); files already there with the same bytes are left as they are.

    Raises FileExistsError (nothing replaced, nothing written) when a file is there with other bytes."""
    files = members(domain)
    to = Path(to or (RESULTS if domain == "results" else HERE))
    for name, blob in files.items():  # look first, write after: a refusal leaves no half-written folder
        path = to / name
        if path.exists() and path.read_bytes() != blob:
            raise FileExistsError(f"{path} is there with other content; unpack elsewhere (--to DIR)")
    for name, blob in sorted(files.items()):
        path = to / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob)
    return to if domain == "results" else to / domain


def on_demand(text):
    """A path argument of a benchmark script: a path under ``benchmarks/DOMAIN/`` that is missing is unpacked first."""
    path = Path(text)
    if not path.exists():
        full = path.resolve()
        for domain in domains():
            if full == HERE / domain or HERE / domain in full.parents:
                print(f"unpacking {domain} to {HERE / domain}", file=sys.stderr)
                unpack(domain)
    return path


def _tar(files, root, filters):
    """xz-compressed tar of ``files`` (names relative to ``root``, in the order given; fixed time, owner, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path in files:
            blob = path.read_bytes()
            info = tarfile.TarInfo(path.relative_to(root).as_posix())
            info.size, info.mtime, info.mode, info.uname, info.gname = len(blob), MTIME, 0o644, "", ""
            tar.addfile(info, io.BytesIO(blob))
    return lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ, **filters)


def pack(domain, source=HERE):
    """Write ``benchmarks/data/DOMAIN.tar.xz`` from ``source/DOMAIN/`` (sorted names, fixed time and owner, xz -9e)
    and its lines in SHA256SUMS; return the archive's path."""
    root = Path(source) / domain
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    out = ARCHIVES / f"{domain}.tar.xz"
    out.write_bytes(_tar(files, Path(source), {"preset": PRESET}))
    sums = {k: v for k, v in manifest().items() if not k.startswith(f"{domain}/")} if SUMS.exists() else {}
    sums.update({p.relative_to(source).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files})
    SUMS.write_text("".join(f"{sums[k]}  {k}\n" for k in sorted(sums)), encoding="utf-8")
    return out


def pack_records():
    """Write ``benchmarks/results/records.tar.xz`` from the folders in ``benchmarks/results/``: files ordered by
    suffix, name and path (alike records side by side), fixed time and owner; return its path."""
    files = [p for p in RESULTS.glob("*/**/*") if p.is_file()]
    files.sort(key=lambda p: (p.suffix, p.name, p.relative_to(RESULTS).as_posix()))
    RECORDS.write_bytes(_tar(files, RESULTS, {"filters": RECORDS_FILTERS}))
    return RECORDS


def main(argv=None):
    parser = argparse.ArgumentParser(description="The benchmark domains' archives: list, unpack, check, pack.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the domains and how many files each holds")
    p = sub.add_parser("unpack", help="unpack domains (to benchmarks/DOMAIN/; results: to benchmarks/results/)")
    p.add_argument("domain", nargs="+")
    p.add_argument("--to", type=Path, default=None, help="the folder DOMAIN/ goes in")
    p = sub.add_parser("check", help="each domain archive's files against SHA256SUMS")
    p.add_argument("domain", nargs="*")
    p = sub.add_parser("pack", help="rebuild a domain's archive from FROM/DOMAIN/ (results: from benchmarks/results/)")
    p.add_argument("domain")
    p.add_argument("--from", dest="source", type=Path, default=HERE, help="the folder DOMAIN/ is in")
    args = parser.parse_args(argv)
    known = domains()
    names = getattr(args, "domain", [])
    for name in [names] if isinstance(names, str) else names:
        if args.command != "pack" and name not in known + ["results"] * (args.command == "unpack"):
            parser.error(f"unknown domain {name!r}; choose from {', '.join(known)} (unpack: or results)")
    if args.command == "list":
        for domain in known + ["results"]:
            print(f"{domain}: {len(members(domain))} files")
    elif args.command == "unpack":
        for domain in args.domain:
            try:
                print(unpack(domain, args.to))
            except FileExistsError as exc:
                sys.exit(f"data.py: error: {exc}")
    elif args.command == "check":
        problems = check(args.domain)
        print("\n".join(problems) or f"OK: {', '.join(args.domain or known)} agree with {SUMS.name}")
        return 1 if problems else 0
    else:
        print(pack_records() if args.domain == "results" else pack(args.domain, args.source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
