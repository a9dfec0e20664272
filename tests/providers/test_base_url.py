"""A malformed base URL is refused when the model is made, never retried as a connection failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.cli_helpers import assert_clean_error, cli

import agentsession as ags

MALFORMED = [
    "localhost:8080/v1",  # no scheme
    "htp://127.0.0.1:8080/v1",  # not http(s)
    "http//127.0.0.1:8080/v1",  # a colon missing
    "http:///v1",  # no host
    "http://127.0.0.1:99999/v1",  # no such port
    "http://127.0.0.1:80a/v1",  # not a port
    "http://127.0.0.1 :8080/v1",  # a space
]


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_compatible_base_url_is_refused_at_once(url: str) -> None:
    with pytest.raises(ags.UsageError, match="base URL"):
        ags.get_model(f"openai-compatible:{url}#local")


@pytest.mark.parametrize("url", MALFORMED[:3])
def test_a_malformed_base_url_override_is_refused_at_once(url: str) -> None:
    with pytest.raises(ags.UsageError, match="base URL"):
        ags.get_model("anthropic:claude-opus-4-8", base_url=url)


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080/v1", "https://gateway.example/v1", "http://[::1]:8080"]
)
def test_well_formed_base_urls_are_taken(url: str) -> None:
    assert ags.get_model(f"openai-compatible:{url}#local").base_url == url


def test_the_cli_refuses_it_and_leaves_no_empty_session(tmp_path: Path) -> None:
    result = cli(tmp_path, "run", "--model", "openai-compatible:localhost:8080/v1#m", "hello")
    assert_clean_error(result, "base URL")
    listed = cli(tmp_path, "sessions")
    assert "hello" not in listed.out
