"""Which edit format a model gets: `apply_patch` (Codex's patch format) beside `edit_file`
for the GPT/Codex family, which OpenAI trained on that format; `edit_file` alone for others.

The family is the model catalog's (models.dev `family`: gpt, gpt-codex, gpt-mini, o, o-mini,
...) when the model is catalogued, else read from the model id (`gpt-*`, `*codex*`, `o1`/`o3`/
`o4`, also behind a router prefix such as `openai/gpt-5`). edit_file stays offered beside it:
its line+hash references have no equivalent in a patch. bench/edit_bench.py measures both
formats on the same corpus (docs/performance.md).
"""

from __future__ import annotations

import re

from tunacode_lsp.agent.catalog import card_of

PATCH_TOOL = "apply_patch"
_GPT_ID = re.compile(r"^(gpt-(?!image)|o[134](?:$|-)|chatgpt-)|codex")
_NOT_GPT_FAMILIES = ("gpt-image",)


def _gpt_family(family: str) -> bool:
    family = family.lower()
    if family.startswith(_NOT_GPT_FAMILIES):
        return False
    return family.startswith("gpt") or family in ("o", "o-mini", "o-pro") or "codex" in family


def uses_apply_patch(provider: str, model_id: str) -> bool:
    """True for the GPT/Codex family. Looks the catalog up (blocks on its first use)."""

    try:
        card = card_of(provider, model_id)
    except Exception:  # an unreadable catalog: the id decides
        card = None
    if card is not None and card.family:
        return _gpt_family(card.family)
    name = model_id.lower().rsplit("/", 1)[-1]
    return bool(_GPT_ID.search(name))
