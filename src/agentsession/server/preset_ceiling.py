"""Which permission presets a server's clients may choose for a session: the operator's ceiling.

A client's token lets it drive its own sessions, not decide what the server's OS user lets tools
do. So the presets a client may name (``POST``/``PATCH /sessions``) are bounded by the operator:
the server's default preset and every preset within it (``PermissionPreset.within``: no
capability more permissive), plus the ones the operator names explicitly
(``create_app(allow_presets=…)``, ``serve --allow-preset``). Any other known preset is refused
(403) before anything is stored; an unknown name stays a 400. A session keeps the preset it
already has (an import starts at the server's default; a fork keeps its source's), so a session
created before the ceiling with a stronger preset keeps it until someone lowers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .._frozen import frozen
from ..errors import UsageError
from ..permissions import PermissionPreset, get_preset, presets_within

__all__ = ["PresetCeiling", "PresetNotAllowedError"]


class PresetNotAllowedError(UsageError):
    """A client asked for a permission preset this server does not let clients choose (403)."""

    def __init__(self, message: str, allowed: tuple[str, ...]) -> None:
        super().__init__(message)
        self.allowed = allowed


@frozen
class PresetCeiling:
    """The presets clients of one server may choose, and the table that defines every name."""

    presets: Mapping[str, PermissionPreset]
    allowed: tuple[str, ...]

    @classmethod
    def of(
        cls, presets: Mapping[str, PermissionPreset], default: str, extra: Iterable[str] = ()
    ) -> PresetCeiling:
        """The default preset and those within it, plus ``extra`` (``UsageError``: unknown)."""
        ceiling = get_preset(default, presets)
        named = [get_preset(name, presets).name for name in extra]
        return cls(presets, tuple(sorted({*presets_within(presets, ceiling), *named})))

    def check(self, name: str) -> None:
        """Refuse ``name`` unless clients may choose it: unknown is 400, not allowed is 403."""
        get_preset(name, self.presets)
        if name not in self.allowed:
            raise PresetNotAllowedError(
                f"permission preset {name!r} is not allowed on this server; clients may choose: "
                f"{', '.join(self.allowed)} (the operator allows more with --allow-preset)",
                self.allowed,
            )
