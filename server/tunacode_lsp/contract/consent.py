"""What marks a consent question (agent/workspace_consent.py) on the wire.

A consent question about a repository-defined executable is a `window/showMessageRequest`
whose message starts with `CONSENT_PROMPT_HEAD`, then the whole definition. A headless
client (`tunacode-lsp run`) answers it from `--trust-workspace`, never from `--approve`.
"""

CONSENT_PROMPT_HEAD = "The workspace file "
