"""Workspaces: the folder each server session's tools work in, never the server's own.

With a root (``serve --workspaces DIR``) every owner gets a folder of its own under it, and
every session a folder under its owner's: ``DIR/<owner>/<session id>``, or a named workspace
``DIR/<owner>/<name>`` chosen when the session is created (several sessions of one owner may
share it; no owner can name another's). The folder is recorded as the session's project folder
in its row, so every process serving the same root (shared storage) opens the session in it;
a recorded folder outside the owner's own is never used — the session gets its own folder
instead. Without a root the server gives sessions no folder of their own, and ``serve`` then
offers no built-in file or command tool at all.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path
from typing import TypeVar

from ..errors import UsageError
from ..runtime import Runtime
from ..session import Session
from ..store.fast import reopening
from .models import ServerModels, SessionSettings, Settings
from .owners import Owners

__all__ = ["Workspaces"]

T = TypeVar("T")

#: A named workspace: letters, digits, dot, dash and underscore; not hidden, not an id's form.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_SESSION_ID = re.compile(r"[0-9a-f]{32}")
#: The owner folder of sessions created without a token.
_NOBODY = "local"


def _owner_folder(owner: str | None) -> str:
    """An owner's folder name: a digest, so no owner name ever becomes a path."""
    if owner is None:
        return _NOBODY
    return "o-" + hashlib.sha256(owner.encode()).hexdigest()[:24]


def check_name(name: object) -> str:
    """A workspace name a client gave, or ``UsageError``."""
    # A session id in capitals too: on storage that ignores case (an SMB share) it is that
    # session's own folder.
    is_id = isinstance(name, str) and _SESSION_ID.fullmatch(name.lower())
    if not isinstance(name, str) or not _NAME.fullmatch(name) or is_id:
        raise UsageError(
            "'workspace' names a folder of yours: 1-64 letters, digits, '.', '-' or '_',"
            " not starting with '.' or '-', and not a session id"
        )
    return name


async def _given(value: T) -> T:
    return value


def _make(folder: Path) -> Path:
    """``folder`` made when missing; refused unless it is a real folder at that very place.

    The root is resolved, so ``folder`` holds no link; a link planted under the root (by a
    command run without a sandbox, say) would make a session work wherever it points.
    """
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.resolve() != folder or not folder.is_dir():
        raise UsageError(
            f"the workspace folder {folder.name!r} is a link or not a folder; the server works"
            " only in folders it made"
        )
    return folder


class Workspaces:
    """Where the sessions of one server work (``root`` ``None``: nowhere of their own)."""

    def __init__(
        self,
        root: str | Path | None,
        runtime: Runtime,
        owners: Owners,
        models: ServerModels | None = None,
        settings: SessionSettings | None = None,
    ) -> None:
        self.root = Path(root).resolve() if root is not None else None
        self._runtime = runtime
        self._owners = owners
        self.models = models or ServerModels(runtime.model)
        self.settings = settings or SessionSettings(runtime.store)

    @property
    def enabled(self) -> bool:
        """Whether sessions get folders of their own."""
        return self.root is not None

    def _area(self, owner: str | None) -> Path:
        assert self.root is not None
        return self.root / _owner_folder(owner)

    async def create(self, owner: str | None, name: str | None) -> Session:
        """A new session in its owner's workspace: ``name``d, or a fresh one of its own."""
        if self.root is None:
            if name is not None:
                raise UsageError("this server has no workspaces (serve --workspaces DIR)")
            return await self._runtime.create_session()
        if name is not None:
            folder = await asyncio.to_thread(_make, self._area(owner) / check_name(name))
            return await self._runtime.create_session(project_dir=folder)
        # The session's id names its folder, and creating the session makes the id: its row
        # records the owner's area (its folder is the area's entry named by its id), and it is
        # opened there right after.
        area = await asyncio.to_thread(_make, self._area(owner))
        session = await self._runtime.create_session(project_dir=area)
        await session.close()
        return await self.open(session.id, owner)

    async def open(self, session_id: str, owner: str | None = None) -> Session:
        """Open a session in its workspace with its model (``owner`` read when not given)."""
        session, _ = await self.open_with_settings(session_id, owner)
        return session

    async def open_with_settings(
        self, session_id: str, owner: str | None = None
    ) -> tuple[Session, Settings]:
        """``open``, and the session's settings it read on the way (its default skills)."""
        # Its settings and owner (the server's own table) are read while the store reads what
        # opening the session needs (in one round trip where it can, ``store.fast``): a turn's
        # start waits for one round trip to the database here, not one per read.
        store = self._runtime.store
        sides = asyncio.gather(
            self.settings.get(session_id),
            self._owners.get(session_id) if owner is None and self.root else _given(owner),
        )
        try:
            async with reopening(store, session_id):
                settings, owner = await sides
                model = self.models.opened(settings.model)
                if self.root is None:
                    return await self._runtime.open_session(session_id, model=model), settings
                info = await store.get_session(session_id)
                folder = await asyncio.to_thread(self._folder, owner, session_id, info.project_dir)
                opened = self._runtime.open_session(session_id, model=model, project_dir=folder)
                return await opened, settings
        finally:
            sides.cancel()  # nothing, unless the block ended before it was awaited

    def _folder(self, owner: str | None, session_id: str, recorded: str | None) -> Path:
        area = self._area(owner)
        if recorded:
            chosen = Path(recorded)
            if chosen.parent == area:
                # A named workspace of this owner, or a fork's source's folder, as recorded (not
                # resolved: one replaced by a link is refused, never swapped for a fresh folder).
                return _make(chosen)
        return _make(area / session_id)

    def name_of(self, project_dir: str | None) -> str | None:
        """The name of a session's named workspace (``None``: its own folder); never a path."""
        if self.root is None or not project_dir:
            return None
        chosen = Path(project_dir)
        named = chosen.parent.parent == self.root and not _SESSION_ID.fullmatch(chosen.name)
        return chosen.name if named else None
