"""Property: a line reference, however stale, edits the line it was taken from or is refused.

Files are made of few distinct lines (blank lines, `}`), so hashes collide all the time. Every
reference is remembered with the identity of the line it named when it was taken; after each
edit_file call the file must equal the expected result of editing exactly that line, or be
unchanged (a refusal)."""

from __future__ import annotations

import asyncio
import itertools
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tunacode_lsp.tools import ToolError, build_tools
from tunacode_lsp.tools.textfile import line_hash

ALPHABET = ["", "}", "x", "pass"]

steps = st.lists(
    st.tuples(
        st.booleans(),  # True: take a fresh reference now; False: reuse an earlier one
        st.integers(min_value=0, max_value=10_000),  # which line / which earlier reference
        st.lists(st.sampled_from(ALPHABET), min_size=0, max_size=3),  # replacement lines
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=12), plan=steps)
def test_line_references_never_hit_the_wrong_line(initial: list[str], plan) -> None:
    asyncio.run(_run(initial, plan))


async def _run(initial: list[str], plan) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(os.path.realpath(folder))
        path = root / "f.txt"
        path.write_text("".join(f"{line}\n" for line in initial))
        tools = {tool.name: tool for tool in build_tools(root)}
        fresh_ids = itertools.count()
        lines = list(initial)
        ids = [next(fresh_ids) for _ in lines]
        assert tools["read_file"].execute is not None and tools["edit_file"].execute is not None
        await tools["read_file"].execute("r", {"filepath": "f.txt"}, None, None)
        # references the model holds: (line number, hash, identity of the line it named)
        refs = [(index + 1, line_hash(text), ids[index]) for index, text in enumerate(lines)]
        for take_fresh, pick, replacement in plan:
            if take_fresh or not refs:
                if not lines:
                    return
                index = pick % len(lines)
                ref = (index + 1, line_hash(lines[index]), ids[index])
                refs.append(ref)
            else:
                ref = refs[pick % len(refs)]
            number, digest, identity = ref
            before = path.read_text()
            edit = {"line": number, "hash": digest, "new_text": "".join(f"{r}\n" for r in replacement)}
            try:
                await tools["edit_file"].execute("e", {"filepath": "f.txt", "edits": [edit]}, None, None)
            except ToolError:
                assert path.read_text() == before
                continue
            assert identity in ids, f"edited a line that no longer exists: {ref}"
            target = ids.index(identity)
            new_ids = [next(fresh_ids) for _ in replacement]
            lines[target : target + 1] = replacement
            ids[target : target + 1] = new_ids
            assert path.read_text() == "".join(f"{line}\n" for line in lines), f"wrong line for {ref}"
