"""A separate OS process that uses the session store, driven by the multi-process tests.

    python store_worker.py append DB SESSION COUNT TAG   # "ready", waits for "go", appends, "done N"
    python store_worker.py append-forever DB SESSION     # appends one by one, prints each committed count
    python store_worker.py create DB CWD                 # "ready", waits for "go", opens, creates a session, "ok"
    python store_worker.py hold DB SESSION               # acquires the lease, prints "acquired OWNER" or
                                                         # "busy", then waits for stdin to close
"""

from __future__ import annotations

import sys
from pathlib import Path

from tunacode_lsp.store.leases import new_owner
from tunacode_lsp.store.session_store import SessionStore


def text_message(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def main(argv: list[str]) -> None:
    command, db, session_id = argv[:3]
    if command == "create":  # the database may not exist yet: open it only after "go"
        print("ready", flush=True)
        sys.stdin.readline()
        with SessionStore(Path(db)) as store:
            store.create_session(cwd=argv[2], model="m")
        print("ok", flush=True)
        return
    store = SessionStore(Path(db))
    if command == "append":
        count, tag = int(argv[3]), argv[4]
        print("ready", flush=True)
        sys.stdin.readline()
        for n in range(count):
            role = "user" if n % 2 == 0 else "assistant"
            total = store.append_messages(session_id, [text_message(role, f"{tag} {n}")], usage_delta={"output_tokens": 1})
        print(f"done {total}", flush=True)
    elif command == "append-forever":
        n = 0
        while True:
            total = store.append_messages(session_id, [text_message("assistant", f"msg {n}")])
            n += 1
            print(total, flush=True)
    elif command == "hold":
        owner = new_owner()
        print(f"acquired {owner}" if store.acquire(session_id, owner) else "busy", flush=True)
        sys.stdin.read()
    store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
