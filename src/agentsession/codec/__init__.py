"""The package's JSON codec for its frozen dataclasses, driven by their type hints.

- ``encode`` / ``canonical_json`` (``_encoding``): a value's JSON-ready form, and the sorted
  text digests are taken over;
- ``lean`` / ``lean_text`` (``_lean``): the stored form, fields at their defaults left out;
- ``decode`` / ``DecodeError`` (``_decoding``): a stored value back as exactly its type, or an
  error naming the path of what does not fit;
- ``decode_entry`` / ``fast_decoder`` (``_straight``): the same answers by decoders written
  out per entry type, for the rows a read decodes (``Mismatch``: give way to ``decode``);
- ``builder`` (``_build``): a frozen dataclass's values built many at a time, each with its
  ``__dict__`` set at once rather than a field at a time.

Every fast path has a slow twin it must agree with (property tests). Code is written out for
a class only after ``COMPILE_AFTER`` values of it, and only in ``_generate``, which names the
source so that tracebacks show it. ``_shape`` knows what each class looks like (field names,
hints, ``twin``), ``_json`` keeps the C JSON encoder per thread (``one_shot``).
"""

from __future__ import annotations

from ._build import builder
from ._decoding import DecodeError, Mismatch, decode
from ._encoding import canonical_json, canonical_json_seen, canonical_texts_held, encode
from ._generate import COMPILE_AFTER
from ._json import one_shot
from ._lean import lean, lean_text
from ._shape import field_names, twin
from ._straight import decode_entry, fast_decoder

__all__ = [
    "COMPILE_AFTER",
    "DecodeError",
    "Mismatch",
    "builder",
    "canonical_json",
    "canonical_json_seen",
    "canonical_texts_held",
    "decode",
    "decode_entry",
    "encode",
    "fast_decoder",
    "field_names",
    "lean",
    "lean_text",
    "one_shot",
    "twin",
]
