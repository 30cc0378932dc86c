"""The contract's names as plain constants: the protocol version, the error codes, the
command names and the event notification.

contract/protocol.py re-exports them beside the wire types (~65 attrs classes and a cattrs
converter, ~25 ms to import). The LSP server needs only the names before it answers
`initialize` (its capabilities list the commands) and loads the types with the first
command (docs/performance.md, start-up). tests/unit/test_startup_imports.py checks that every
command of the contract is in `COMMAND_NAMES` and has a handler.
"""

from __future__ import annotations

PROTOCOL_VERSION = 3  # 2: protocol-v2 (edits, checkpoints, context, MCP, plan, compaction); 3: protocol-v3 (docs/protocol.md)

# JSON-RPC error codes of the contract (beyond the standard ones).

UNKNOWN_SESSION = -32001
SESSION_BUSY = -32002
MODEL_NOT_USABLE = -32003
REQUEST_CANCELLED = -32800  # LSP: a command stopped by $/cancelRequest or tunacode.abort
COMPACTION_FAILED = -32603  # JSON-RPC internal error: the summary call failed, nothing changed
CHANGED_SINCE = -32004  # tunacode.session.rewind: files changed since by someone else (data.files)
CHECKPOINTS_UNAVAILABLE = -32603  # JSON-RPC internal error: the checkpoints cannot be read
REQUEST_RUNNING = -32005  # tunacode.request.result: the detached request has not ended yet

COMMAND_REQUEST = "tunacode.request"
COMMAND_ABORT = "tunacode.abort"
COMMAND_SESSION_NEW = "tunacode.session.new"
COMMAND_SESSION_LIST = "tunacode.session.list"
COMMAND_SESSION_GET = "tunacode.session.get"
COMMAND_SESSION_DELETE = "tunacode.session.delete"
COMMAND_SESSION_EXPORT = "tunacode.session.export"
COMMAND_SESSION_IMPORT = "tunacode.session.import"
COMMAND_SESSION_FORK = "tunacode.session.fork"
COMMAND_SESSION_COMPACT = "tunacode.session.compact"
COMMAND_MODELS_LIST = "tunacode.models.list"
COMMAND_STATUS = "tunacode.status"
COMMAND_CHANGES = "tunacode.changes"
COMMAND_SESSION_REWIND = "tunacode.session.rewind"
COMMAND_SETTINGS_CONSENT = "tunacode.settings.consent"  # v3
COMMAND_COMMANDS_LIST = "tunacode.commands.list"  # v3
COMMAND_STEER = "tunacode.steer"
COMMAND_SESSION_ALLOWS = "tunacode.session.allows"  # v3: the session's "Allow for this session" tools; revoke them
COMMAND_REQUEST_RESULT = "tunacode.request.result"

# every command the server offers, in the order it registers them
COMMAND_NAMES = (
    COMMAND_REQUEST, COMMAND_REQUEST_RESULT, COMMAND_ABORT, COMMAND_STEER, COMMAND_SESSION_ALLOWS, COMMAND_STATUS,
    COMMAND_COMMANDS_LIST, COMMAND_SETTINGS_CONSENT, COMMAND_MODELS_LIST, COMMAND_SESSION_NEW, COMMAND_SESSION_LIST,
    COMMAND_SESSION_GET, COMMAND_SESSION_DELETE, COMMAND_SESSION_EXPORT, COMMAND_SESSION_IMPORT, COMMAND_SESSION_FORK,
    COMMAND_SESSION_COMPACT, COMMAND_CHANGES, COMMAND_SESSION_REWIND,
)

EVENT_NOTIFICATION = "tunacode/event"
