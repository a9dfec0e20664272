"""The session's provider cache policy: which lifetime to ask for, and the controls of a request.

``Config(cache_ttl="auto")`` asks for the long lifetime (Anthropic's 1 h) only when the gaps
measured between this session's requests make it cheaper. Per request, with the prefix
``P`` already cached and ``N`` new tokens written (``r = N / P``), relative to the input price:

- short (5 min): a gap within it reads the prefix (0.1·P) and writes the new part (1.25·N);
  a longer gap writes everything again (1.25·(P + N));
- long (1 h): the same with a write price of 2 and a lifetime of an hour.

The expected cost of each over the measured gaps decides; fewer than ``MIN_GAPS`` gaps keep
the short lifetime (nothing measured yet argues for paying double for writes). Where the
session's idle time is tended (``Config(idle_policy="auto")``, ``lift``), a gap between the
lifetimes need not write everything again at 5 minutes: a keep-warm call near its end can lift
the prefix to the hour for one read (0.1·P), and the next request reads it, so such a gap costs
``min(2·0.1·P + 1.25·N, 1.25·(P + N))`` on the short lifetime; only where the hour still
costs less is it asked for on every write. Gaps are taken
with the runtime's clock, so a test or a replay with the same clock makes the same choices.

``cache_lifetime`` is how long the prefix a request leaves behind stays warm, for every shape:
the chosen lifetime where the profile offers a choice (Anthropic), else the profile's documented
one (OpenAI: 30 min with explicit breakpoints, its in-memory retention otherwise). The window
policy calls the cache cold past it, and ``preview_cost`` expects no read after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..ledger import LONGEST_TTL, SHORTEST_TTL, GapCounts
from .base import ModelProfile
from .cache_controls import offers_prewarm

__all__ = [
    "LONG_TTL",
    "MIN_GAPS",
    "OPENAI_LIFT_TTL",
    "SHORT_TTL",
    "GapCounts",
    "cache_lifetime",
    "choose_ttl",
    "expected_cost",
    "lift_lifetime",
]

SHORT_TTL = SHORTEST_TTL
LONG_TTL = LONGEST_TTL
MIN_GAPS = 3
OPENAI_LIFT_TTL = 12 * 3600.0
"""OpenAI's longer retention (``prompt_cache_options.ttl`` ``"12h"``, Responses, GPT-5.6+)."""
_READ = 0.1
_WRITE = {"5m": 1.25, "1h": 2.0}


def expected_cost(
    ttl: Literal["5m", "1h"],
    gaps: Sequence[float] | GapCounts,
    ratio: float,
    *,
    lift: bool = False,
) -> float:
    """Mean input cost per request, in units of the prefix at the input price.

    ``lift``: a keep-warm call may lift a short-lived prefix to the hour in a pause.
    """
    counts = gaps if isinstance(gaps, GapCounts) else GapCounts.of(gaps)
    if not counts.total:
        return 0.0
    write = _WRITE[ttl]
    within = counts.within_short if ttl == "5m" else counts.within_long
    read_again = within * (_READ + write * ratio)
    written_again = (counts.total - within) * write * (1.0 + ratio)
    if ttl == "5m" and lift:
        lifted = counts.within_long - counts.within_short
        saved = write * (1.0 + ratio) - min(2 * _READ + write * ratio, write * (1.0 + ratio))
        written_again -= lifted * saved
    return (read_again + written_again) / counts.total


def choose_ttl(
    setting: str, gaps: Sequence[float] | GapCounts, ratio: float = 0.1, *, lift: bool = False
) -> Literal["5m", "1h"]:
    """The lifetime to ask for: the configured one, or for ``"auto"`` the cheaper one.

    ``lift``: the session's idle time is tended, so a short-lived prefix can be lifted to the
    hour at a pause that needs it (``Config(idle_policy="auto")``).
    """
    if setting == "1h":
        return "1h"
    counts = gaps if isinstance(gaps, GapCounts) else GapCounts.of(gaps)
    if setting != "auto" or counts.total < MIN_GAPS:
        return "5m"
    ratio = max(0.0, ratio)
    short = expected_cost("5m", counts, ratio, lift=lift)
    return "1h" if expected_cost("1h", counts, ratio) < short else "5m"


def cache_lifetime(profile: ModelProfile, ttl: Literal["5m", "1h"]) -> float:
    """Seconds the prefix of a request to ``profile``'s model stays cached, asking ``ttl``."""
    if profile.cache_ttl:
        return LONG_TTL if ttl == "1h" else max(SHORT_TTL, profile.cache_lifetime)
    return profile.cache_lifetime


def lift_lifetime(profile: ModelProfile) -> float:
    """The longer lifetime a keep-warm call can lift ``profile``'s prefix to (``0``: none).

    Anthropic's hour where the profile offers a choice; OpenAI's 12 hours on Responses with
    explicit breakpoints (the lift is a prewarm asking for ``ttl: "12h"``).
    """
    if profile.cache_ttl:
        return cache_lifetime(profile, "1h")
    if offers_prewarm(profile.wire_format, profile):
        return OPENAI_LIFT_TTL
    return 0.0
