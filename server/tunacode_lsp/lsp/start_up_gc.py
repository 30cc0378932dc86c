"""The garbage collector while the server starts: no full pass over what start-up builds,
which is frozen once `initialize` is answered.

Importing pygls, lsprotocol and the server makes ~55,000 objects that live as long as the
process (modules, classes, functions). Python's collector passed over all of them once while
they were imported (~30 ms before the `initialize` answer, or on the first request when put
after it) to free ~150 objects. Now start-up runs without full passes (the young
generations are still collected: they free the imports' short-lived cycles), and once the
`initialize` answer is written `gc.freeze` moves everything start-up made out of every later
pass, so each full collection of the server's life skips it. The price: those ~150 objects
(~0.1 MB) are never freed. The C heap's free pages go back to the system then (glibc's
`malloc_trim`): idle RSS 45.8 -> 45.1 MB (docs/performance.md, "Start-up").
"""

from __future__ import annotations

import gc
import sys

NO_FULL_PASS = 1_000_000  # young collections before a full one: far more than start-up makes
_held: tuple[int, int, int] | None = None


def hold_full_collections() -> None:
    """First thing at start-up: no full pass until `start_up_done`."""

    global _held
    if _held is None:
        _held = gc.get_threshold()
        gc.set_threshold(_held[0], _held[1], NO_FULL_PASS)


def start_up_done() -> None:
    """Once `initialize` is answered: what start-up made frozen, thresholds back."""

    global _held
    if _held is None:
        return
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
