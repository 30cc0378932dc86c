"""The session store: SQLite database, schema migrations, leases, records, export/import
documents and where the data folder lives. Knows nothing of the agent loop or of LSP.

Import the modules you need (`store.session_store`, `store.errors`, ...): the package itself
imports nothing, so the server starts without loading the store's dependencies.
"""
