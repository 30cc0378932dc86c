"""Usage normalisation and pricing; approval summaries."""

from __future__ import annotations

import pytest

from tunacode_lsp.agent.approvals import approval_view
from tunacode_lsp.agent.catalog import ModelCost
from tunacode_lsp.agent.usage import normalize_usage
from tunacode_lsp.contract.protocol import Usage
from tunacode_lsp.tools import LineRefLedger, ToolError


def test_reported_cost_wins():
    usage = normalize_usage({"input": 100, "output": 10, "cache_read": 20, "cache_write": 0, "total_tokens": 130,
                             "cost": {"total": 0.5}}, ModelCost(2.0, 8.0, 0.5))
    assert usage == Usage(100, 10, 20, 0, 130, 0.5)


def test_a_priced_model_costs_its_prices_cache_reads_and_writes_included():
    prices = ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    million = 1_000_000
    usage = normalize_usage({"input": million, "output": million, "cache_read": million, "cache_write": million,
                             "cost": {"total": 0}}, prices)
    assert usage.cost == 3.0 + 15.0 + 0.3 + 3.75 and usage.total_tokens == 4 * million
    # a cache price the catalog does not give is the input price
    assert normalize_usage({"cache_read": million, "cost": {}}, ModelCost(2.0, 8.0)).cost == 2.0


def test_unknown_model_costs_nothing_and_junk_is_zero():
    assert normalize_usage({"input": 5, "output": "x", "cost": None}, None).cost == 0.0
    assert normalize_usage(None) == Usage()


def test_usage_adds():
    assert Usage(1, 2, 3, 4, 10, 0.1) + Usage(1, 1, 1, 1, 4, 0.2) == Usage(2, 3, 4, 5, 14, 0.3)


def test_approval_views(tmp_path):
    (tmp_path / "a.py").write_text("a\nb\n")
    ledger = LineRefLedger()
    view = approval_view("bash", {"command": "make test", "cwd": "sub"}, tmp_path, ledger)
    assert (view.headline, view.detail, view.detail_kind) == ("run make test (in sub)", "make test", "command")
    padded = "echo hi" + " " * 400 + "; touch HIDDEN"
    view = approval_view("bash", {"command": padded}, tmp_path, ledger)
    assert view.detail == padded and "[400 blanks]; touch HIDDEN" in view.headline  # never cut, padding visible
    with pytest.raises(ToolError, match="characters long"):
        approval_view("bash", {"command": "x" * 5000}, tmp_path, ledger)

    view = approval_view("write_file", {"filepath": "n.py", "content": "x\ny\n"}, tmp_path, ledger)
    assert view.headline == "create n.py (2 lines)" and "+x\n+y" in view.detail and view.digest

    for args in (
        {"filepath": "a.py", "edits": [{"old_text": "a", "new_text": "b\nc"}]},
        {"filepath": "a.py", "edits": '[{"old_text": "a", "new_text": "b\\nc"}]'},  # edits as a JSON string
    ):
        view = approval_view("edit_file", args, tmp_path, ledger)
        assert view.headline == "edit a.py: 1 change (-1 +2 lines)", args
        assert {"-a", "+c"} <= set(view.detail.splitlines()) and view.detail_kind == "diff"
    assert approval_view("edit_file", {"filepath": "a.py", "old_text": "a\nb", "new_text": ""}, tmp_path, ledger).headline == \
        "edit a.py: 1 change (-2 +1 lines)"  # the real diff: an empty line is left
