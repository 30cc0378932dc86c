"""SessionService's in-memory history cache: reused while the store's version matches,
extended by this server's appends, reloaded after a write from another process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tunacode_lsp.agent.sessions import SessionService
from tunacode_lsp.contract.protocol import Usage

WORKER = Path(__file__).with_name("store_worker.py")


def text(role: str, body: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": body}]}


async def test_cache_is_reused_extended_and_invalidated_by_another_process(tmp_path: Path) -> None:
    service = SessionService(tmp_path / "sessions.sqlite3")
    try:
        record = await service.create(cwd=str(tmp_path), model="m")
        sid = record.session_id
        await service.append(sid, text("user", "q0"), usage=None, thoughts=None, model=None)
        await service.append(sid, text("assistant", "a0"), usage=Usage(), thoughts=None, model=None)

        first = await service.history(sid)
        entry = service._histories[sid]
        again = await service.history(sid)
        assert again == first and service._histories[sid] is entry  # no reload
        assert all(a is b for a, b in zip(again, first, strict=True))  # the same cleaned messages

        await service.append(sid, text("user", "q1"), usage=None, thoughts=None, model=None)
        extended = await service.history(sid)
        assert service._histories[sid] is entry  # our own append extended the entry
        assert [m["content"][0]["text"] for m in extended] == ["q0", "a0", "q1"]

        # Another OS process appends two messages to the same session.
        worker = subprocess.run(
            [sys.executable, str(WORKER), "append", str(service.path), sid, "2", "other"],
            input="go\n", capture_output=True, text=True, timeout=60, check=True,
        )
        assert worker.stdout.split()[-1] == "5"
        reloaded = await service.history(sid)
        assert service._histories[sid] is not entry
        # q1 + "other 0" (user, merged by cleaning) and "other 1" (assistant)
        assert [m["role"] for m in reloaded] == ["user", "assistant", "user", "assistant"]
        assert "other 1" in reloaded[-1]["content"][0]["text"]

        entry = service._histories[sid]
        await service.set_plan(sid, [{"content": "a", "status": "pending", "activeForm": "b"}])
        assert service._histories[sid] is entry  # a plan update of ours keeps the messages
        assert entry.version == await service._call("version_of", sid)
        kept = await service.history(sid)
        assert kept == reloaded and all(a is b for a, b in zip(kept, reloaded, strict=True))

        # Another process writes, then we update the plan: the entry is stale, dropped.
        worker = subprocess.run(
            [sys.executable, str(WORKER), "append", str(service.path), sid, "1", "late"],
            input="go\n", capture_output=True, text=True, timeout=60, check=True,
        )
        await service.set_plan(sid, [{"content": "b", "status": "pending", "activeForm": "c"}])
        assert sid not in service._histories
        assert "late 0" in (await service.history(sid))[-1]["content"][-1]["text"]
    finally:
        service.close()
