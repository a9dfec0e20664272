"""Where the real foreign session files are: read in place beside the repository, never copied.

``shared/testdata`` beside the repository (or beside a folder above it); ``AGENTSESSION_TESTDATA``
names the test-data folder when it is elsewhere; tests that need the
files skip cleanly when they are absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).absolute().parents[2]


def testdata() -> Path:
    """The shared test-data folder (it may not exist)."""
    told = os.environ.get("AGENTSESSION_TESTDATA")
    if told:
        return Path(told)
    for folder in REPO.parents:  # beside the repository, or beside a folder holding it
        if (folder / "shared" / "testdata").is_dir():
            return folder / "shared" / "testdata"
    return REPO.parent / "shared" / "testdata"


FOREIGN = testdata() / "foreign-sessions"


@pytest.fixture
def foreign() -> Path:
    if not FOREIGN.is_dir():
        pytest.skip(f"foreign session files not present at {FOREIGN} (test data beside the repo)")
    return FOREIGN
