"""The collector's policy while the server starts (lsp/start_up_gc.py): no full pass before
`initialize` is answered, then one pass, the survivors frozen and the thresholds back."""

from __future__ import annotations

import gc
import weakref

from tunacode_lsp.lsp import start_up_gc


def test_full_collections_wait_for_the_end_of_start_up_then_survivors_are_frozen():
    before = gc.get_threshold()
    try:
        start_up_gc.hold_full_collections()
        assert gc.get_threshold() == (before[0], before[1], start_up_gc.NO_FULL_PASS)
        start_up_gc.hold_full_collections()  # twice: still the first thresholds are kept

        class Cycle:
            pass

        left = Cycle()
        left.me = left  # start-up garbage: freed by the pass before the freeze, never frozen
        gone = weakref.ref(left)
        del left
        start_up_gc.start_up_done()
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() > 0
        assert gone() is None
        frozen = gc.get_freeze_count()
        start_up_gc.start_up_done()  # once only
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
