"""The package's one place that turns written source into code, and when it is worth doing.

Each class met often gets functions written out for it (an encoder, a canonical-text writer,
a lean encoder and its text, a straight-line decoder). ``generate`` compiles such source under
a file name that says what it is and for which class, and registers the source in
``linecache``: a traceback through generated code shows the line that failed, and a debugger
can list it. ``evaluate`` is the same for an expression (annotations evaluated in one go);
``define`` for a function made as ``dataclasses`` makes its methods (``_frozen``'s
``__init__``: defaults and annotations read from names it is given).

``COMPILE_AFTER`` is the one threshold: values of a class handled by a walk over its fields
before its code is written (compiling costs 0.1–1 ms a class; a process that handles a
handful of values never pays for it). ``Counter`` counts per class.
"""

from __future__ import annotations

import itertools
import linecache
import threading
import types
from collections.abc import Mapping
from typing import Any

__all__ = ["COMPILE_AFTER", "Counter", "define", "evaluate", "generate"]

#: Values of a class walked before its generated code takes over (each generator's own count).
COMPILE_AFTER = 32

_NUMBERS = itertools.count(1)
_LOCK = threading.Lock()


class Counter:
    """Values met per class, for one generator: whether the class has been met often."""

    def __init__(self) -> None:
        self._met: dict[type, int] = {}

    def often(self, cls: type) -> bool:
        """Counts one value of ``cls``; whether more than ``COMPILE_AFTER`` have been met."""
        count = self._met[cls] = self._met.get(cls, 0) + 1
        return count > COMPILE_AFTER

    def __contains__(self, cls: type) -> bool:
        return cls in self._met


def _filename(what: str, source: str) -> str:
    """A name for ``source`` that no other generated source has (one class may get two)."""
    name = f"<agentsession generated {what}>"
    lines = source.splitlines(True)
    with _LOCK:
        held = linecache.cache.get(name)
        if held is not None and held != (len(source), None, lines, name):
            name = f"<agentsession generated {what} #{next(_NUMBERS)}>"
        linecache.cache[name] = (len(source), None, lines, name)
    return name


def _code(source: str, what: str, mode: str, inherit: bool = True) -> types.CodeType:
    # ``inherit=False``: without this module's ``from __future__ import annotations``.
    return compile(source, _filename(what, source), mode, dont_inherit=not inherit)  # the one site


def generate(what: str, lines: list[str], scope: dict[str, Any], module: str) -> types.FunctionType:
    """The function that ``lines`` (one ``def``, no defaults, no imports) define; globals ``scope``.

    ``what`` names the source in tracebacks (``"encoder for UserEntry"``); ``module`` is the
    generating module's name, the function's ``__module__``. The source is written from field
    names only, never from data. The function is made from its compiled code directly: no
    module body runs.
    """
    scope.setdefault("__name__", module)
    compiled = _code("\n".join(lines) + "\n", what, "exec")
    (code,) = (c for c in compiled.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(code, scope, code.co_name)


def define(
    what: str, lines: list[str], scope: dict[str, Any], names: dict[str, Any]
) -> types.FunctionType:
    """The function that ``lines`` (one ``def``) define, run the way ``dataclasses`` runs its own.

    The ``def`` runs inside a function whose parameters are ``names``: its defaults and
    annotations are evaluated from them and its body reads them as closure variables; its
    globals are ``scope`` (the defining class's module). ``what`` names the source as for
    ``generate``. (``_frozen`` writes a frozen dataclass's ``__init__`` this way.)
    """
    name = lines[0].removeprefix("def ").partition("(")[0]
    source = [f"def __create_fn__({', '.join(names)}):", *(f" {line}" for line in lines)]
    # Annotations evaluated, as ``dataclasses`` has them (its module imports no ``__future__``).
    compiled = _code("\n".join([*source, f" return {name}"]) + "\n", what, "exec", inherit=False)
    made: dict[str, Any] = {}
    exec(compiled, scope, made)  # defines ``__create_fn__`` only
    function: types.FunctionType = made["__create_fn__"](**names)
    return function


def evaluate(what: str, expression: str, scope: dict[str, Any], names: Mapping[str, Any]) -> Any:
    """``eval(expression, scope, names)``, the source named as ``generate`` names it.

    (Annotations are evaluated, not generated: their text is the class's own source.)
    """
    return eval(_code(expression, what, "eval"), scope, names)
