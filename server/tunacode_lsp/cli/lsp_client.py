"""Helpers for pygls clients of this server (tests, benchmarks; the headless CLI has its own, cli/rpc.py).

pygls turns the params of a notification it has no type for into namedtuples, renaming
keys that are not identifiers; `keep_raw_params` makes it hand ours over as plain dicts.
"""

from __future__ import annotations

from typing import Any

from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, _dict_to_object

from tunacode_lsp.contract.protocol import EVENT_NOTIFICATION


def keep_raw_params(client: Any, methods: frozenset[str] = frozenset({EVENT_NOTIFICATION})) -> None:
    converter = client.protocol._converter

    def structure(obj: dict[str, Any], cls: type) -> Any:
        if "params" in obj and obj.get("method") not in methods:
            obj["params"] = _dict_to_object(obj["params"])
        return cls(**obj)

    converter.register_structure_hook(JsonRPCNotification, structure)
    converter.register_structure_hook(JsonRPCRequestMessage, structure)
