"""What crag may write, replace and delete: only what it made itself.

Rules every command follows (docs/files-and-safety.md, "Your files"):

* An output is written to a temporary beside its target and renamed into place,
  so a crash never leaves half a file under the target's name.
* An output is refused when it is one of the command's inputs.
* A temporary is named ``.TARGET.crag-tmp-PID-XXXX``: a later run removes the
  ones whose process is gone (a killed run's leftovers), never another
  process's, never anything else.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable

from .errors import CragError

TEMP_TAG = ".crag-tmp-"
_TEMP = re.compile(r"^\.(?P<target>.+)\.crag-tmp-(?P<pid>\d+)-[^/]+$")


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name the same file (or would: compared resolved when either is missing)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def refuse_input(output: Path, inputs: Iterable[Path]) -> None:
    """Raise :class:`CragError` when ``output`` is one of ``inputs`` (``-`` = stdin is never a file)."""
    for inp in inputs:
        if inp is not None and str(inp) != "-" and same_file(output, inp):
            raise CragError(f"the output {output} is the input {inp}: crag never writes over its input")


def check_output_file(path: Path, what: str = "output") -> None:
    """An output file must be a file name in an existing folder (checked before any model loads)."""
    path = Path(path)
    try:
        os.path.realpath(path, strict=True)
    except FileNotFoundError:
        pass  # a new name (or a link to one): written in place
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CragError(f"the {what} {path} is a loop of symbolic links; give a file name") from None
        raise CragError(f"cannot write the {what} {path}: {exc.strerror or exc}") from None
    if str(path).endswith(("/", os.sep)) or path.is_dir():
        raise CragError(f"the {what} {path} is a folder; give a file name")
    parent = path.parent
    if not parent.exists():
        raise CragError(f"cannot write the {what} {path}: no such folder {parent}")
    if not parent.is_dir():
        raise CragError(f"cannot write the {what} {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CragError(f"cannot write the {what} {path}: folder {parent} is not writable")


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (on this machine)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):  # another user's process, or not a pid at all: not ours to judge
        return True
    return True


def temp_prefix(target: Path) -> str:
    return f".{Path(target).name}{TEMP_TAG}{os.getpid()}-"


def default_mode(folder: bool = False) -> int:
    """The permissions a new file (or folder) gets under the process's umask (mkstemp would give 0600/0700)."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if folder else 0o666) & ~mask


def temp_file(target: Path, suffix: str = "", mode: int | None = None) -> Path:
    """A new empty temporary file beside ``target``, named so that a later run can clean it up.

    It gets ``mode``, or the permissions of a normal new file (the umask applied).
    """
    fd, name = tempfile.mkstemp(prefix=temp_prefix(target), suffix=suffix, dir=Path(target).parent)
    os.close(fd)
    os.chmod(name, default_mode() if mode is None else mode)
    return Path(name)


def temp_dir(target: Path) -> Path:
    """A new temporary folder beside ``target``, with the permissions of a normal new folder."""
    path = Path(tempfile.mkdtemp(prefix=temp_prefix(target), dir=Path(target).parent))
    os.chmod(path, default_mode(folder=True))
    return path


def check_name_length(target: Path) -> None:
    """A temporary's name is the target's plus about 30 characters: refuse names that leave no room."""
    limit = os.pathconf(Path(target).parent, "PC_NAME_MAX") if Path(target).parent.exists() else 255
    if len(temp_prefix(target)) + 20 > limit:
        raise CragError(f"the name {Path(target).name[:40]}... is too long for crag to write it safely beside itself")


def stale_temporaries(target: Path) -> list[Path]:
    """Temporaries of ``target`` left by processes that no longer run."""
    target = Path(target)
    try:
        entries = list(target.parent.iterdir()) if target.parent.is_dir() else []
    except OSError:
        return []
    out = []
    for entry in entries:
        m = _TEMP.match(entry.name)
        if m and m.group("target") == target.name and not pid_alive(int(m.group("pid"))):
            out.append(entry)
    return out


def remove(path: Path) -> None:
    """Delete one of crag's own files or folders (never follows a link into a folder)."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass  # left for the next run


def clean_stale(target: Path) -> int:
    """Remove the temporaries of ``target`` whose process is gone; return how many."""
    found = stale_temporaries(target)
    for path in found:
        remove(path)
    return len(found)


def older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except OSError:
        return False


def digest(path: Path) -> tuple[int, str] | None:
    """``(size, sha256)`` of a file, read in blocks; ``None`` when it cannot be read."""
    h = hashlib.sha256()
    size = 0
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 22):
                h.update(block)
                size += len(block)
    except OSError:
        return None
    return size, h.hexdigest()


_DIGESTS: dict[tuple, tuple[int, str]] = {}


def cached_digest(path: Path) -> tuple[int, str] | None:
    """:func:`digest`, remembered for the process by path, size and modification time.

    For inputs read more than once in a run (a model's or an evaluator's
    weights: fingerprinted for the run manifest, then checked before loading).
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        found = digest(path)
        if found is None:
            return None
        _DIGESTS[key] = found
    return _DIGESTS[key]


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to a temporary beside ``path`` and rename it into place.

    A symbolic link is followed (its target is replaced, the link stays), and an
    existing file keeps its permissions.
    """
    path = Path(os.path.realpath(path))
    clean_stale(path)
    mode = path.stat().st_mode & 0o777 if path.is_file() else None
    tmp = temp_file(path, mode=mode)
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- one writer per target

LOCK_TAG = ".crag-lock"


def lock_path(target: Path) -> Path:
    """The lock file of ``target``: ``.NAME.crag-lock`` beside it (never inside a folder crag replaces)."""
    target = Path(os.path.abspath(target))
    return target.parent / f".{target.name}{LOCK_TAG}"


class Lock:
    """An exclusive lock on an output or an index, held from before any check until the process lets go.

    The lock is an advisory ``flock`` on ``.NAME.crag-lock`` beside the target;
    the file holds the owner's pid and command for the message another run
    shows. The kernel releases a ``flock`` when its process dies, however it
    dies, so the lock of a killed run is free at once and the next run takes
    it over (and says so). The lock file is removed on release, while still
    locked; a run that locked a file in the meantime removed finds the path no
    longer names it and starts again, so two runs never hold two files.

    Parameters
    ----------
    target : Path
        The output file or index folder to be written.
    what : str
        What is written, for the message (``"output"``, ``"index"``).
    """

    def __init__(self, target: Path, what: str = "output") -> None:
        self.target = Path(target)
        self.path = lock_path(target)
        self.what = what
        self.took_over: str | None = None  # the previous owner, when a killed run had left its lock
        self._fd: int | None = None
        self._writable = True

    def acquire(self) -> "Lock":
        """Take the lock or raise :class:`CragError` naming the run that holds it (never waits)."""
        import fcntl

        while True:
            self._writable = True
            try:
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, default_mode())
                except PermissionError:  # another user's killed run left its lock file: flock works read-only too
                    self._writable = False
                    fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError as exc:
                raise self._cannot(exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_owner(fd)
                os.close(fd)
                if owner.startswith(f"pid {os.getpid()} "):
                    raise CragError(
                        f"{self.target} is named twice in this command: give each output its own name"
                    ) from None
                raise CragError(
                    f"the {self.what} {self.target} is being written by another crag run ({owner or 'pid unknown'}): "
                    "wait for it to finish, or stop it"
                ) from None
            except OSError as exc:
                os.close(fd)
                raise self._cannot(exc) from None
            try:  # the file we locked must still be the one at the path (not replaced meanwhile)
                same = os.fstat(fd).st_ino == os.stat(self.path, follow_symlinks=False).st_ino
            except OSError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _read_owner(fd)
        if previous and not previous.startswith(f"pid {os.getpid()} "):
            self.took_over = previous
        if self._writable:
            command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:200]
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} {command}\n".encode("utf-8", "replace"), 0)
        self._fd = fd
        return self

    def _cannot(self, exc: OSError) -> CragError:
        return CragError(f"cannot lock the {self.what} {self.target} ({self.path.name}: {exc.strerror or exc})")

    def release(self) -> None:
        if self._fd is not None:
            try:
                if os.fstat(self._fd).st_ino == os.stat(self.path, follow_symlinks=False).st_ino:
                    os.unlink(self.path)  # while still locked (see the class's notes)
            except OSError:
                pass
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> "Lock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _read_owner(fd: int) -> str:
    try:
        return os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def package_file(dist_name: str, suffix: str) -> Path | None:
    """The file of an installed distribution whose path ends with ``suffix``, found in its file list (its RECORD)
    without importing its code (models come from packages that carry their weights: only their data files are
    read); ``None`` when the distribution or the file is missing."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError:
        return None
    found = next((f for f in dist.files or [] if f.as_posix().endswith(suffix)), None)
    return Path(dist.locate_file(found)) if found is not None else None
