"""The cyclic garbage collector paused while the command line makes long-lived objects.

A command makes objects in two bursts that hold no garbage cycles worth looking for: its imports
(the package's modules, classes and functions, alive until the process ends) and, for the
inspection commands, a whole log read, rebuilt and rendered. Left on, the collector walks those
objects again and again while they are made. Paused, reference counting still frees everything
as usual; when the pause ends the survivors go straight to the oldest generation, without a
collection (re-enabled as it is, the collector would walk all of them at the next allocation, as
young objects). Nothing is frozen for good: a later full collection still looks at them.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection inside; the survivors moved to the oldest generation at the end.

    A pause inside another changes nothing.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
