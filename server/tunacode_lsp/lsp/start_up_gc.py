"""The garbage collector while the server starts: its full pass waits until `initialize` is
answered, and what start-up built is frozen after it.

Importing pygls, lsprotocol and the server makes ~55,000 objects that live as long as the
process (modules, classes, functions). Python's collector passes over all of them once
while they are imported (~30 ms, to free a few hundred objects); that pass now comes right
after the `initialize` answer is written, not before it (the young generations are still
collected during start-up: they free the imports' short-lived cycles). Then `gc.freeze`
moves the survivors out of every later pass, so each full collection of the server's life
skips them; nothing more is kept alive (the pass before the freeze freed what start-up
left). What the pass freed is handed back to the system (glibc's `malloc_trim`): freed later
than before, it would otherwise stay in the process (~0.2 MB of idle RSS).
"""

from __future__ import annotations

import gc
import sys

NO_FULL_PASS = 1_000_000  # young collections before a full one: far more than start-up makes
_held: tuple[int, int, int] | None = None


def hold_full_collections() -> None:
    """First thing at start-up: the full pass waits for `start_up_done`."""

    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(_held[0], _held[1], NO_FULL_PASS)


def start_up_done() -> None:
    """Once `initialize` is answered: the full pass, the survivors frozen, thresholds back."""

    global _held
    if _held is None:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*_held)
    _held = None
    release_free_memory()


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc); elsewhere nothing."""

    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):  # not glibc (musl has no malloc_trim)
        pass
