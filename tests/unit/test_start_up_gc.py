"""The collector's policy while the server starts (lsp/start_up_gc.py): no full pass before
`initialize` is answered, then what start-up made frozen and the thresholds back."""

from __future__ import annotations

import gc

from tunacode_lsp.lsp import start_up_gc


def test_no_full_pass_during_start_up_then_what_it_made_is_frozen():
    before = gc.get_threshold()
    try:
        start_up_gc.hold_full_collections()
        assert gc.get_threshold() == (before[0], before[1], start_up_gc.NO_FULL_PASS)
        start_up_gc.hold_full_collections()  # twice: the first thresholds are still the ones kept
        full_passes = gc.get_stats()[2]["collections"]
        made = [[object()] for _ in range(200_000)]  # what start-up imports, roughly: ~300 young passes
        assert gc.get_stats()[2]["collections"] == full_passes
        start_up_gc.start_up_done()
        assert gc.get_threshold() == before
        assert gc.get_freeze_count() >= len(made)
        frozen = gc.get_freeze_count()
        start_up_gc.start_up_done()  # once only
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
