"""A body another process wrote to a file (``server.spooled_body``).

Small bodies stay inline; a large one is written to the file the serving process made, read
back in ``CHUNK``-sized pieces with the event loop free between them, and the file's name is
gone as soon as it is opened; its descriptor closes when the stream ends or is dropped.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
from pathlib import Path

import pytest

from agentsession.server.spooled_body import CHUNK, INLINE, SpooledBody, spool, spool_file


@pytest.fixture
def spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import tempfile

    folder = tmp_path / "spool"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_a_small_body_stays_inline_and_a_large_one_is_written(spool_dir: Path) -> None:
    path = spool_file()
    assert Path(path).parent == spool_dir and Path(path).stat().st_size == 0
    assert Path(path).stat().st_mode & 0o077 == 0  # the user's own
    assert spool(b"x" * INLINE, path) is None
    body = os.urandom(INLINE + 1)
    assert spool(body, path) == len(body)
    assert Path(path).read_bytes() == body


def test_a_file_the_server_gave_up_on_is_not_made_again(spool_dir: Path) -> None:
    path = spool_file()
    os.unlink(path)
    assert spool(b"y" * (INLINE + 1), path) is None  # answered inline instead
    assert list(spool_dir.iterdir()) == []


async def test_a_spooled_body_is_read_in_chunks_with_the_loop_free_between(
    spool_dir: Path,
) -> None:
    body = os.urandom(3 * CHUNK + 17)
    path = spool_file()
    assert spool(body, path) == len(body)
    spooled = SpooledBody.open(path, len(body))
    assert os.listdir(spool_dir) == []  # the name is gone, the data is not
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    chunks, seen = [], []
    async for chunk in spooled.chunks():
        chunks.append(chunk)
        seen.append(ticks)
    ticking.cancel()
    assert b"".join(chunks) == body
    assert [len(c) for c in chunks] == [CHUNK, CHUNK, CHUNK, 17]
    # Every chunk was read while the loop ran other tasks: never the whole body in one step.
    assert all(later > earlier for earlier, later in itertools.pairwise(seen))
    with pytest.raises(OSError):
        os.fstat(spooled._fd)  # closed at the end of the stream


async def test_a_body_never_streamed_is_closed_when_dropped(spool_dir: Path) -> None:
    path = spool_file()
    assert spool(b"z" * (INLINE + 5), path) == INLINE + 5
    spooled = SpooledBody.open(path, INLINE + 5)
    fd = spooled._fd
    os.fstat(fd)
    del spooled
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)
    assert os.listdir(spool_dir) == []
