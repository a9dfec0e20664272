"""A database store lists sessions a page at a time (``store.fast`` ``list_page``): the pages,
read one after another from each page's last row, are ``list_sessions`` exactly — ties on the
times included — and each page reads that page's rows alone."""

from __future__ import annotations

import uuid

from agentsession.store import Store
from agentsession.store.base import SessionInfo
from agentsession.store.fast import fast_paths


async def test_pages_follow_each_other_without_gaps_or_repeats(db_store: Store) -> None:
    page_of = fast_paths(db_store).list_page
    assert page_of is not None
    # Three sessions share each pair of times: only the id orders them.
    for n in range(21):
        stamp = f"2026-01-01T00:00:{n // 3:02d}+00:00"
        await db_store.create_session(SessionInfo(uuid.uuid4().hex, stamp, stamp))
    listed = [info.id for info in await db_store.list_sessions()]
    paged: list[str] = []
    after: tuple[str, str, str] | None = None
    while True:
        page = await page_of(4, after)
        assert len(page) <= 4
        paged += [info.id for info in page]
        if len(page) < 4:
            break
        last = page[-1]
        after = (last.updated_at, last.created_at, last.id)
    assert paged == listed and len(listed) == 21
