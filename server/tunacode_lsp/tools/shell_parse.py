"""A shell command line as the simple commands it runs, parsed by tree-sitter's bash grammar.

Permission rules (agent/permissions.py) match these, never the raw string. The parse says
what it could not see through, so a rule never allows what it did not understand:

- `literal`: every simple command is a list of fixed words (no `$X`, `$(...)`, backquotes,
  process substitution, `$'...'`), no redirection to a file (`2>&1` and `/dev/null` are
  fine), no control structure, function or here-document with expansions, and the input
  parsed without an error. Only then can allow rules allow it.
- `opaque`: something could run that no rule can see: unparseable input, a command name that
  is not a fixed word (`$X`, `` `x` ``, a glob), `eval`/`sh -c` of something that is not a fixed
  string, `source`, a shell reading a script. Deny and ask rules cannot vouch for it.

Each simple command is kept as its words and as one canonical text: the words joined by
blanks, each quoted only when it needs to be (`npm\\ test` is `'npm test'`, `'npm' test` is
`npm test`), so a rule matches what runs, not how it was spelled.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

MAX_COMMAND_CHARS = 20_000  # longer command lines are not checked (never allowed by rules)
MAX_SIMPLE_COMMANDS = 200
MAX_NESTING = 3  # sh -c 'sh -c "..."'

_STRUCTURE = frozenset({
    "program", "list", "pipeline", "subshell", "compound_statement", "redirected_statement", "negated_command",
})
_PUNCTUATION = frozenset({"&&", "||", ";", ";;", "|", "|&", "&", "(", ")", "{", "}", "!", "\n", "comment"})
_LITERAL_LEAVES = frozenset({"word", "number"})
_DYNAMIC = frozenset({
    "simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion",
    "ansi_c_string", "translated_string",
})
_SAFE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./~*?^\[\]{}!#-]+")
_GLOB = re.compile(r"[*?\[\]{}]")
# an odd run of backslashes before a newline (a line continuation) with a non-blank on each side
_JOINED_LINES = re.compile(r"(?<![\\\s])(?:\\\\)*\\\n(?=[^\s])")
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
# commands that run the rest of their words as another command
WRAPPERS = frozenset({
    "env", "xargs", "nohup", "timeout", "sudo", "doas", "exec", "command", "builtin", "nice", "ionice", "time",
    "stdbuf", "setsid", "chroot", "unbuffer", "flock", "watch", "strace", "ltrace", "caffeinate", "systemd-run",
    "coproc",
})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
OPAQUE_COMMANDS = frozenset({"source", "."})
_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_content", "heredoc_end", "word", "string", "raw_string", "concatenation"})


@dataclass(frozen=True)
class SimpleCommand:
    words: tuple[str, ...]  # the words as the shell passes them ("" for a part that is not fixed)
    text: str  # canonical text (see the module docstring); for a non-literal command, its source
    literal: bool


@dataclass
class ShellParse:
    commands: list[SimpleCommand] = field(default_factory=list)
    literal: bool = True
    opaque: bool = False
    why: str | None = None  # the first reason it is not literal
    inner: list[ShellParse] = field(default_factory=list)  # parses of `sh -c STR` / `eval STR`

    def refuse(self, why: str, *, opaque: bool = False) -> None:
        self.literal = False
        self.opaque = self.opaque or opaque
        if self.why is None:
            self.why = why

    def all_commands(self) -> list[SimpleCommand]:
        found = list(self.commands)
        for inner in self.inner:
            found += inner.all_commands()
        return found

    @property
    def any_opaque(self) -> bool:
        return self.opaque or any(inner.any_opaque for inner in self.inner)


@functools.cache
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def quote_word(word: str) -> str:
    return word if _SAFE_WORD.fullmatch(word) else shlex.quote(word)


def parse_command(command: str, depth: int = 0) -> ShellParse:
    """The simple commands of a command line (see the module docstring). Never raises."""

    result = ShellParse()
    if not command.strip():
        result.refuse("an empty command", opaque=True)
        return result
    if len(command) > MAX_COMMAND_CHARS:
        result.refuse(f"longer than {MAX_COMMAND_CHARS:,} characters", opaque=True)
        return result
    if "\x00" in command:
        result.refuse("a NUL character", opaque=True)
        return result
    if _JOINED_LINES.search(command):  # bash joins `r\<newline>m` into `rm`; tree-sitter splits it
        result.refuse("a line continuation inside a word", opaque=True)
        return result
    tree = _parser().parse(command.encode("utf-8", "surrogateescape"))
    if tree.root_node.has_error:
        result.refuse("it does not parse as a shell command", opaque=True)
    _Walker(result, depth).node(tree.root_node)
    if len(result.commands) > MAX_SIMPLE_COMMANDS:
        result.refuse(f"more than {MAX_SIMPLE_COMMANDS} commands", opaque=True)
    return result


def _text(node: Any) -> str:
    return bytes(node.text).decode("utf-8", "replace")


def _unescape_unquoted(text: str) -> str:
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text, flags=re.DOTALL)


def _unescape_double_quoted(text: str) -> str:
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


class _Walker:
    def __init__(self, result: ShellParse, depth: int) -> None:
        self.result = result
        self.depth = depth

    def node(self, node: Any) -> None:
        kind = node.type
        if kind in _PUNCTUATION or not node.is_named and kind not in _STRUCTURE:
            return
        if kind in _STRUCTURE:
            for child in node.children:
                self.node(child)
        elif kind == "command":
            self.command(node)
        elif kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            self.redirect(node)
        elif kind == "ERROR":
            self.result.refuse("it does not parse as a shell command", opaque=True)
            self.descend(node)
        else:  # if/for/while/case, functions, declarations, [[ ]], a bare assignment, ...
            self.result.refuse(f"a {kind.replace('_', ' ')} is not checked by rules")
            self.descend(node)

    def descend(self, node: Any) -> None:
        """Find the commands nested anywhere below (for deny rules)."""

        for child in node.children:
            if child.type in ("command", "command_substitution", "process_substitution"):
                self.node(child) if child.type == "command" else self.descend(child)
            else:
                self.descend(child)

    def word(self, node: Any) -> str | None:
        """The word's value when it is fixed; None otherwise (its substitutions are walked)."""

        kind = node.type
        if kind in _LITERAL_LEAVES:
            return _unescape_unquoted(_text(node))
        if kind == "raw_string":
            return _text(node)[1:-1]
        if kind == "string":
            parts = []
            for child in node.children:
                if child.type == '"':
                    continue
                if child.type == "string_content":
                    parts.append(_unescape_double_quoted(_text(child)))
                else:
                    self.dynamic(child)
                    return None
            return "".join(parts)
        if kind == "concatenation":
            values = [self.word(child) for child in node.children]
            return None if any(v is None for v in values) else "".join(v or "" for v in values)
        self.dynamic(node)
        return None

    def dynamic(self, node: Any) -> None:
        kind = node.type
        name = "a substitution" if "substitution" in kind else f"a {kind.replace('_', ' ')}"
        self.result.refuse(f"{name} ({_text(node)[:40]})")
        if kind in ("command_substitution", "process_substitution"):
            for child in node.children:
                self.node(child)
        else:
            self.descend(node)

    def command(self, node: Any) -> None:
        words: list[str] = []
        literal = True
        name_seen = False
        for child in node.children:
            kind = child.type
            if kind in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.redirect(child)
                continue
            if kind == "comment":
                continue
            if kind == "variable_assignment":
                value = self.assignment(child)
                literal = literal and value is not None
                words.append(value or "")
                continue
            target = child.children[0] if kind == "command_name" and child.children else child
            value = self.word(target)
            if kind == "command_name":
                name_seen = True
                if value is None or _GLOB.search(value):
                    self.result.refuse(f"the command name is not a fixed word ({_text(child)[:40]})", opaque=True)
                    value = None
            literal = literal and value is not None
            words.append(value if value is not None else "")
        if not name_seen:
            self.result.refuse("an assignment without a command is not checked by rules")
        text = " ".join(quote_word(w) for w in words) if literal else _text(node)
        self.result.commands.append(SimpleCommand(tuple(words), text, literal))
        if not literal:
            self.result.refuse(f"not a fixed command ({_text(node)[:40]})")
        self.nested(words, literal)

    def assignment(self, node: Any) -> str | None:
        parts = node.children
        name = _text(parts[0]) if parts else ""
        value = self.word(parts[2]) if len(parts) > 2 else ""
        return None if value is None else f"{name}={value}"

    def nested(self, words: list[str], literal: bool) -> None:
        """`sh -c STR`, `eval ...`, `source`, and the same behind wrappers."""

        start = next((i for i, w in enumerate(words) if "=" not in w), len(words))
        if start == len(words):
            return
        wrapped = words[start].rsplit("/", 1)[-1] in WRAPPERS
        for i in range(start, len(words) if wrapped else start + 1):
            base = words[i].rsplit("/", 1)[-1]
            if base in OPAQUE_COMMANDS:
                self.result.refuse(f"{base} runs a file no rule can see", opaque=True)
                return
            if base == "eval":
                rest = words[i + 1:]
                if not literal or not rest:
                    self.result.refuse("eval of something that is not fixed", opaque=True)
                else:
                    self.inner(" ".join(rest))
                return
            if base in ("trap", "alias", "find", "env"):  # strings they run later or split into a command
                for later in _scripts_of(base, words[i + 1:]):
                    self.inner(later)
                if base != "env":
                    return
            if base in SHELLS:
                script = _shell_script(words[i + 1:])
                if script is None or not literal:
                    self.result.refuse(f"{base} runs something no rule can see", opaque=True)
                else:
                    self.inner(script)
                return

    def inner(self, script: str) -> None:
        if self.depth >= MAX_NESTING:
            self.result.refuse("nested too deep", opaque=True)
            return
        self.result.inner.append(parse_command(script, self.depth + 1))

    def redirect(self, node: Any) -> None:
        kind = node.type
        operator = ""
        target: Any = None
        for child in node.children:
            if not child.is_named:
                operator = child.type
            elif child.type not in ("file_descriptor",):
                target = child
        if kind == "file_redirect":
            value = self.word(target) if target is not None else None
            if operator in (">&", "<&", ">&-", "<&-") and (value is None or value.isdigit() or value == "-"):
                if value is None:
                    self.result.refuse("a redirection to a target that is not fixed")
                return
            if value == "/dev/null":
                return
            self.result.refuse(f"a redirection ({_text(node)[:40]})")
            return
        for child in node.children:  # here-documents and here-strings: input, fine when nothing expands
            if child.type in _HEREDOC_PARTS or not child.is_named:
                self.descend_dynamic(child)
            else:  # tree-sitter hangs the rest of the line on the here-document (`<<EOF | sh`, `<<EOF >f`)
                self.node(child)

    def descend_dynamic(self, node: Any) -> None:
        for child in node.children:
            if child.type in _DYNAMIC:
                self.dynamic(child)
            else:
                self.descend_dynamic(child)


def _shell_script(args: list[str]) -> str | None:
    """The script of `sh [options] -c SCRIPT`; None when it runs a file or stdin."""

    for i, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            return args[i + 1] if i + 1 < len(args) and args[i + 1] else None
        if not arg.startswith("-"):
            return None
    return None


def _scripts_of(base: str, args: list[str]) -> list[str]:
    """What `trap STR SIG`, `alias n=STR`, `find ... -exec CMD ;` and `env -S STR` run (for
    deny and ask rules: they look into these as into `sh -c`)."""

    if base == "trap":
        rest = [a for a in args if a != "--"]
        return [rest[0]] if len(rest) > 1 and not rest[0].startswith("-") else []
    if base == "alias":
        return [a.partition("=")[2] for a in args if "=" in a]
    if base == "env":
        found = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-S", "--split-string")]
        glued = [a[2:] if a.startswith("-S") else a.partition("=")[2] for a in args
                 if a.startswith("--split-string=") or (a.startswith("-S") and len(a) > 2)]
        return found + glued
    scripts = []
    for i, arg in enumerate(args):
        if arg in FIND_EXEC:
            tail = []
            for word in args[i + 1:]:
                if word in (";", "+"):
                    break
                tail.append(word)
            if tail:
                scripts.append(" ".join(quote_word(w) for w in tail))
    return scripts
