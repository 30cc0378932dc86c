"""The contract's names as plain constants: the protocol version, the error codes, the
command names and the event notification.

contract/protocol.py holds the same names beside the wire types (~65 attrs classes and a
cattrs converter, ~25 ms to import). The LSP server needs only the names before it answers
`initialize` (its capabilities list the commands) and loads the types with the first
command (docs/performance.md, start-up). tests/unit/test_startup_imports.py keeps every name
here equal to the contract's, and every command of the contract in `COMMAND_NAMES`.
"""

from __future__ import annotations

PROTOCOL_VERSION = 3

UNKNOWN_SESSION = -32001
SESSION_BUSY = -32002
MODEL_NOT_USABLE = -32003
REQUEST_CANCELLED = -32800
COMPACTION_FAILED = -32603
CHANGED_SINCE = -32004
CHECKPOINTS_UNAVAILABLE = -32603
REQUEST_RUNNING = -32005

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
COMMAND_SETTINGS_CONSENT = "tunacode.settings.consent"
COMMAND_COMMANDS_LIST = "tunacode.commands.list"
COMMAND_STEER = "tunacode.steer"
COMMAND_SESSION_ALLOWS = "tunacode.session.allows"
COMMAND_REQUEST_RESULT = "tunacode.request.result"

# every command the server offers, in the order it registers them
COMMAND_NAMES = (
    COMMAND_REQUEST, COMMAND_REQUEST_RESULT, COMMAND_ABORT, COMMAND_STEER, COMMAND_SESSION_ALLOWS, COMMAND_STATUS,
    COMMAND_COMMANDS_LIST, COMMAND_SETTINGS_CONSENT, COMMAND_MODELS_LIST, COMMAND_SESSION_NEW, COMMAND_SESSION_LIST,
    COMMAND_SESSION_GET, COMMAND_SESSION_DELETE, COMMAND_SESSION_EXPORT, COMMAND_SESSION_IMPORT, COMMAND_SESSION_FORK,
    COMMAND_SESSION_COMPACT, COMMAND_CHANGES, COMMAND_SESSION_REWIND,
)

EVENT_NOTIFICATION = "tunacode/event"
