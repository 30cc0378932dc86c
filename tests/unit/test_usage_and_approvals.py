"""Usage normalisation and pricing; approval summaries."""

from __future__ import annotations

from tunacode_lsp.agent.approvals import approval_summary
from tunacode_lsp.agent.usage import normalize_usage
from tunacode_lsp.contract.protocol import Usage


def test_reported_cost_wins():
    usage = normalize_usage({"input": 100, "output": 10, "cache_read": 20, "cache_write": 0, "total_tokens": 130,
                             "cost": {"total": 0.5}}, "gpt-4.1")
    assert usage == Usage(100, 10, 20, 0, 130, 0.5)


def test_known_model_is_priced():
    usage = normalize_usage({"input": 1_000_000, "output": 1_000_000, "cache_read": 1_000_000, "cost": {"total": 0}}, "gpt-4.1")
    assert usage.cost == 2.0 + 8.0 + 0.5 and usage.total_tokens == 3_000_000
    assert normalize_usage({"input": 1_000_000, "cost": {}}, "openai/gpt-4.1").cost == 2.0


def test_unknown_model_costs_nothing_and_junk_is_zero():
    assert normalize_usage({"input": 5, "output": "x", "cost": None}, "qwen").cost == 0.0
    assert normalize_usage(None) == Usage()


def test_usage_adds():
    assert Usage(1, 2, 3, 4, 10, 0.1) + Usage(1, 1, 1, 1, 4, 0.2) == Usage(2, 3, 4, 5, 14, 0.3)


def test_approval_summaries():
    assert approval_summary("bash", {"command": "make test", "cwd": "sub"}) == "run `make test` (in sub)"
    assert approval_summary("write_file", {"filepath": "a.py", "content": "x\ny\n"}) == "create a.py (2 lines, 4 bytes)"
    assert approval_summary("edit_file", {"filepath": "a.py", "edits": [{"old_text": "a", "new_text": "b\nc"}]}) == \
        "edit a.py: 1 change (-1 +2 lines)"
    assert approval_summary("edit_file", {"filepath": "a.py", "old_text": "a\nb", "new_text": ""}) == \
        "edit a.py: 1 change (-2 +0 lines)"
    assert len(approval_summary("bash", {"command": "x" * 1000})) < 320
