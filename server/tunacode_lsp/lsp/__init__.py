"""The language server: pygls glue, thin handlers, the runs service, the LSP sink
(tunacode/event, $/progress, approvals), logging. The only layer that imports pygls."""
