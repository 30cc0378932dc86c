"""Permission rules: `permissions: {allow, ask, deny}`, each a list of `tool` or `tool(pattern)`.

`deny` beats `ask` beats `allow` beats the approval mode. Patterns:

- `bash(PATTERN)`: `*` is a wildcard, a trailing `:*` means "these words, then anything or
  nothing"; matched against each simple command of tree-sitter's parse (tools/shell_parse.py).
  Allow rules allow a command line only when every simple command in it matches one and the
  parse saw only fixed words; deny and ask rules look into substitutions, subshells,
  wrappers (`timeout 5 rm`, `sudo rm`) and `sh -c`/`eval` strings. A command line that deny
  or ask rules cannot see through is asked about, even under approval `auto`, when any bash
  deny or ask rule exists.
- file tools (`read_file`, `write_file`, `edit_file`, `grep`, `list_files`): a gitignore-style
  glob relative to the workspace root (pathspec), matched on the call's path; a path outside
  the root matches no rule.
- `apply_patch`: its rules match each path the patch names (moves included); so do the deny
  and ask rules of `edit_file` and `write_file` (a denied file stays denied whichever edit
  tool the model has). It is denied or asked when any path is, allowed by a rule when every
  path is allowed by an `apply_patch` rule.
- `mcp__server` names every tool of that MCP server, `mcp__server__tool` one tool.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pathspec, the patch parser and tree-sitter load with the first rule they match
    from tunacode_lsp.tools.shell_parse import ShellParse, SimpleCommand

EFFECTS = ("deny", "ask", "allow")
PATCH_TOOL = "apply_patch"
FILE_TOOLS: dict[str, str] = {
    "read_file": "filepath", "write_file": "filepath", "edit_file": "filepath", "grep": "path", "list_files": "path",
}
_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_\-]+)(?:\((?P<pattern>.*)\))?", re.DOTALL)
MAX_RULES = 500
MAX_RULE_CHARS = 1_000


@dataclass(frozen=True)
class Rule:
    effect: str  # allow | ask | deny
    tool: str
    pattern: str | None
    text: str  # as written, e.g. `bash(npm test:*)`
    source: str  # user | project | editor | cli | session

    def describe(self) -> str:
        return f"{self.effect} rule `{self.text}` ({self.source} settings)"


@dataclass(frozen=True)
class RuleDecision:
    effect: str  # allow | ask | deny
    rule: Rule | None  # None: asked because the rules could not see through the command
    why: str

    def describe(self) -> str:
        return self.rule.describe() if self.rule else self.why


@dataclass(frozen=True)
class PermissionRules:
    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    _globs: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.allow or self.ask or self.deny)

    def merged(self, other: PermissionRules) -> PermissionRules:
        return PermissionRules(self.allow + other.allow, self.ask + other.ask, self.deny + other.deny)

    def decide(self, tool: str, args: Mapping[str, Any], root: Path) -> RuleDecision | None:
        """Which rule decides this call, or None (the approval mode decides)."""

        if tool == "bash":
            return self._decide_bash(str(args.get("command", "")))
        if tool == PATCH_TOOL:
            return self._decide_patch(args.get("patch"), root)
        for effect in ("deny", "ask", "allow"):
            for rule in getattr(self, effect):
                if _tool_matches(rule.tool, tool) and self._args_match(rule, tool, args, root):
                    return RuleDecision(effect, rule, rule.describe())
        return None

    def _args_match(self, rule: Rule, tool: str, args: Mapping[str, Any], root: Path) -> bool:
        if rule.pattern is None:
            return True
        key = FILE_TOOLS.get(tool)
        if key is None:
            return False
        relative = relative_path(args.get(key) or ".", root)
        if relative is None:
            return False
        spec = self._globs.get(rule.pattern)
        if spec is None:
            spec = self._globs[rule.pattern] = _gitignore_spec(rule.pattern)
        return bool(spec.match_file(relative))

    def _path_matches(self, rule: Rule, relative: str) -> bool:
        if rule.pattern is None:
            return True
        spec = self._globs.get(rule.pattern)
        if spec is None:
            spec = self._globs[rule.pattern] = _gitignore_spec(rule.pattern)
        return bool(spec.match_file(relative))

    def _decide_patch(self, patch: Any, root: Path) -> RuleDecision | None:
        from tunacode_lsp.tools.patch_format import PatchError, parse_patch

        try:
            ops = parse_patch(patch) if isinstance(patch, str) else []
        except PatchError:
            ops = []  # the tool refuses it: no path to match
        paths = [relative_path(raw, root) for op in ops for raw in (op.path, op.move_to) if raw is not None]
        relatives = [p for p in paths if p is not None]
        for effect in ("deny", "ask"):
            for rule in getattr(self, effect):
                if rule.tool not in (PATCH_TOOL, "edit_file", "write_file"):
                    continue
                if rule.pattern is None or any(self._path_matches(rule, r) for r in relatives):
                    return RuleDecision(effect, rule, rule.describe())
        allows = [r for r in self.allow if r.tool == PATCH_TOOL]
        bare = next((r for r in allows if r.pattern is None), None)
        if bare is not None:
            return RuleDecision("allow", bare, bare.describe())
        if relatives and len(relatives) == len(paths):
            chosen = [next((r for r in allows if self._path_matches(r, rel)), None) for rel in relatives]
            if all(chosen):
                first = chosen[0]
                assert first is not None
                return RuleDecision("allow", first, first.describe())
        return None

    def _decide_bash(self, command: str) -> RuleDecision | None:
        rules = {e: [r for r in getattr(self, e) if r.tool == "bash"] for e in EFFECTS}
        if not any(rules.values()):
            return None
        from tunacode_lsp.tools.shell_parse import parse_command

        parse = parse_command(command)
        candidates = _deny_candidates(parse, command)
        for effect in ("deny", "ask"):
            for rule in rules[effect]:
                if rule.pattern is None or any(bash_pattern_matches(rule.pattern, c) for c in candidates):
                    return RuleDecision(effect, rule, rule.describe())
        bare = next((r for r in rules["allow"] if r.pattern is None), None)
        if bare is not None:
            return RuleDecision("allow", bare, bare.describe())
        if parse.literal and parse.commands:
            chosen: list[Rule] = []
            for simple in parse.commands:
                rule = next((r for r in rules["allow"] if bash_pattern_matches(r.pattern or "", simple.text)), None)
                if rule is None:
                    break
                chosen.append(rule)
            else:
                unique = list(dict.fromkeys(chosen))
                why = "; ".join(r.describe() for r in unique)
                return RuleDecision("allow", unique[0], why)
        if (rules["deny"] or rules["ask"]) and parse.any_opaque:
            return RuleDecision(
                "ask", None, f"asked: the deny and ask rules cannot see through this command ({parse.why})"
            )
        return None


def _tool_matches(rule_tool: str, tool: str) -> bool:
    if rule_tool == tool:
        return True
    return rule_tool.startswith("mcp__") and rule_tool.count("__") == 1 and tool.startswith(rule_tool + "__")


def relative_path(value: Any, root: Path) -> str | None:
    """The call's path relative to the root, normalised (`a/../b` is `b`); None outside it."""

    if not isinstance(value, str):
        return None
    path = Path(value)
    full = path if path.is_absolute() else root / path
    normal = os.path.normpath(str(full))
    base = os.path.normpath(str(root))
    if normal == base:
        return "."
    if not normal.startswith(base.rstrip("/") + "/"):
        return None
    return normal[len(base.rstrip("/")) + 1:]


_PATTERN_CACHE: dict[str, re.Pattern[str]] = {}


def bash_pattern_matches(pattern: str, text: str) -> bool:
    """`*` any characters (blanks too); a trailing `:*` the words before it, then nothing or
    a blank and anything. The whole text must match."""

    compiled = _PATTERN_CACHE.get(pattern)
    if compiled is None:
        body, tail = (pattern[:-2], r"(?: .*)?") if pattern.endswith(":*") else (pattern, "")
        regex = ".*".join(re.escape(part) for part in body.strip().split("*")) + tail
        compiled = re.compile(regex, re.DOTALL)
        if len(_PATTERN_CACHE) < 4_096:
            _PATTERN_CACHE[pattern] = compiled
    return compiled.fullmatch(text) is not None


def _deny_candidates(parse: ShellParse, command: str) -> list[str]:
    """Every text a deny or ask rule is matched against: each simple command (also inside
    substitutions and `sh -c` strings), the same with the command's folder dropped
    (`/bin/rm` as `rm`), every tail after a wrapper (`timeout 5 rm x`: `rm x`), and the
    whole line as written."""

    texts = [command.strip()]
    for simple in parse.all_commands():
        texts += _command_texts(simple)
    return list(dict.fromkeys(texts))


def _command_texts(simple: SimpleCommand) -> list[str]:
    from tunacode_lsp.tools.shell_parse import WRAPPERS, quote_word

    if not simple.literal:
        return [simple.text]
    words = list(simple.words)
    start = next((i for i, w in enumerate(words) if "=" not in w), len(words))
    texts = [simple.text]
    tails = range(start, len(words)) if start < len(words) and _base(words[start]) in WRAPPERS else range(start, start + 1)
    for i in tails:
        if i >= len(words):
            break
        tail = [_base(words[i]), *words[i + 1:]]
        texts.append(" ".join(quote_word(w) for w in words[i:]))
        texts.append(" ".join(quote_word(w) for w in tail))
    return texts


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1] or word


def parse_rule(text: Any, effect: str, source: str) -> tuple[Rule | None, str | None]:
    """(rule, None) or (None, what is wrong)."""

    if not isinstance(text, str) or not text.strip():
        return None, f"expected a rule such as \"bash(npm test:*)\", got {text!r}"
    if len(text) > MAX_RULE_CHARS:
        return None, f"a rule longer than {MAX_RULE_CHARS} characters"
    match = _RULE.fullmatch(text.strip())
    if match is None:
        return None, f"{text!r} is not `tool` or `tool(pattern)`"
    pattern = match.group("pattern")
    tool = match.group("tool")
    if pattern is not None:
        if not pattern.strip():
            return None, f"{text!r}: an empty pattern (write `{tool}` for every call)"
        if tool in FILE_TOOLS or tool == PATCH_TOOL:
            try:
                _gitignore_spec(pattern)
            except Exception as exc:  # pathspec raises several kinds for a bad glob
                return None, f"{text!r}: not a gitignore-style glob ({exc})"
        elif tool != "bash":
            return None, f"{text!r}: only bash and the file tools take a pattern"
    return Rule(effect, tool, pattern.strip() if pattern else None, text.strip(), source), None


def parse_rules(raw: Any, source: str) -> tuple[PermissionRules, list[str]]:
    """The `permissions` object of one settings source; bad rules are reported and dropped."""

    if raw is None:
        return PermissionRules(), []
    if not isinstance(raw, Mapping):
        return PermissionRules(), [f"permissions: expected an object with allow, ask, deny, got {type(raw).__name__}"]
    problems: list[str] = []
    found: dict[str, list[Rule]] = {e: [] for e in EFFECTS}
    for key, value in raw.items():
        if key not in EFFECTS:
            problems.append(f"permissions.{key}: unknown (expected allow, ask, deny)")
            continue
        if value is None:
            continue
        if not isinstance(value, list):
            problems.append(f"permissions.{key}: expected a list of rules")
            continue
        for item in value[:MAX_RULES]:
            rule, problem = parse_rule(item, key, source)
            if problem:
                problems.append(f"permissions.{key}: {problem}")
            elif rule is not None:
                found[key].append(rule)
        if len(value) > MAX_RULES:
            problems.append(f"permissions.{key}: more than {MAX_RULES} rules; the rest are ignored")
    return PermissionRules(tuple(found["allow"]), tuple(found["ask"]), tuple(found["deny"])), problems


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\!# ])")
MAX_SUGGESTED = 5


def suggested_rules(tool: str, args: Mapping[str, Any], root: Path) -> tuple[str, ...]:
    """The allow rules "Always allow" would save for this call, each matching exactly what
    it shows: one `bash(command)` per simple command (no wildcard), `tool(/path)` anchored
    at the root, the MCP tool's name. Empty when no rule could allow it (a command the
    parse cannot see through)."""

    if tool == "bash":
        from tunacode_lsp.tools.shell_parse import parse_command

        parse = parse_command(str(args.get("command", "")))
        if not parse.literal or not parse.commands:
            return ()
        texts = list(dict.fromkeys(c.text for c in parse.commands))
        if len(texts) > MAX_SUGGESTED or any("*" in t or t.endswith(":") for t in texts):
            return ()  # a `*` would be a wildcard: the rule would match more than this
        return tuple(f"bash({t})" for t in texts)
    key = FILE_TOOLS.get(tool)
    if key is not None:
        relative = relative_path(args.get(key) or ".", root)
        if relative is None or relative == ".":
            return ()
        escaped = _GLOB_SPECIAL.sub(lambda m: "\\" + m.group(1), relative)
        return (f"{tool}(/{escaped})",)
    return (tool,)


def _gitignore_spec(pattern: str) -> Any:
    """A gitignore-style glob (pathspec, imported with the first rule that needs one)."""

    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])
