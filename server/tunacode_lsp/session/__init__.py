"""Session storage: the SQLite store, session records, export/import documents. No LSP here.

Import the modules you need (`session.store`, `session.errors`, ...): the package itself
imports nothing, so the server starts without loading the store's dependencies.
"""
