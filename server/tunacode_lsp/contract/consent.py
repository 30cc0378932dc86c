"""What marks a plain client's questions that `--approve auto` must not answer, on the wire.

A consent question about a repository-defined executable (agent/workspace_consent.py) is a
`window/showMessageRequest` whose message starts with `CONSENT_PROMPT_HEAD`, then the whole
definition: a headless client (`tunacode-lsp run`) answers it from `--trust-workspace`, never
from `--approve`. An approval of an edit of a file that runs code outside the sandbox carries
`RUNS_CODE_OUTSIDE_WARNING` (rich clients get `runsCodeOutside: true` in `tunacode/approve`):
a headless client denies it whatever `--approve` says.
"""

CONSENT_PROMPT_HEAD = "The workspace file "
RUNS_CODE_OUTSIDE_WARNING = (
    "Warning: your editor or tools run this file by themselves, outside the sandbox "
    "(e.g. VS Code tasks on folder open, direnv, git hooks, CI)."
)
