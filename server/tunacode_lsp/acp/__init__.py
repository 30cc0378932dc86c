"""The Agent Client Protocol front end (`tunacode-lsp acp`): ACP v1 on stdio over the agent layer.

A sibling of `lsp/`: it drives agent/runs.py and agent/sessions.py directly and never
imports pygls or lsprotocol (docs/acp.md).
"""
