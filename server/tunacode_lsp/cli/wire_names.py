"""The contract's names the headless client speaks (commands, the event notification, error
codes, the protocol version), as plain constants.

They are contract/protocol.py's, copied: that module also builds the wire types (~65 attrs
classes and a cattrs converter, ~50 ms), which the client never uses, and `tunacode-lsp run`
imports the client while the server starts, on the same cores. tests/unit/
test_startup_imports.py keeps every name here equal to the contract's.
"""

from __future__ import annotations

PROTOCOL_VERSION = 3
UNKNOWN_SESSION = -32001
MODEL_NOT_USABLE = -32003
COMMAND_REQUEST = "tunacode.request"
COMMAND_ABORT = "tunacode.abort"
COMMAND_STATUS = "tunacode.status"
COMMAND_SETTINGS_CONSENT = "tunacode.settings.consent"
EVENT_NOTIFICATION = "tunacode/event"
