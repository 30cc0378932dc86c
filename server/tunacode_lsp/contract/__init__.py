"""The wire contract, one source: command names and params/results, events, error codes.

Plain typed classes (attrs) converted with one strict cattrs converter. Knows nothing of
pygls, the agent or the store, so every front end (LSP, CLI, ACP) and the agent share it.
"""
