"""The GitHub action in a hostile checkout: every Python it starts runs with `-P`, so a pull
request's `tunacode_lsp/`, `pip/`, `venv/` or `json/` is never imported, in a job whose
environment holds the secrets. Run the way tests/clients/test_action.py runs the action."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from tests.clients.test_action import REPO, WRITE_FIX, make_job, scripted
from tests.clients.test_trust_start import imported, plant

PYTHON_CALL = re.compile(r'(\$py|python3?|\$TUNACODE_PYTHON|/bin/python)"?\s+(-\S+)')


def test_every_python_the_action_starts_runs_with_dash_p() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    calls = [m for step in action["runs"]["steps"] if "run" in step for m in PYTHON_CALL.finditer(step["run"])]
    assert len(calls) >= 6
    assert [m.group(0) for m in calls if m.group(2) != "-P"] == []


def test_the_action_in_a_hostile_checkout_imports_none_of_it(model, tmp_path: Path) -> None:
    model.set_script(WRITE_FIX)
    job = make_job(tmp_path, "job", {**scripted(model), "prompt": "fix it", "approve": "auto"},
                   extra_env={"GITHUB_TOKEN": "ghs_notarealtoken"})
    markers = tmp_path / "markers"
    plant(job.workspace, markers)
    for name in ("pip", "venv", "yaml"):
        (job.workspace / name).mkdir()
        (job.workspace / name / "__init__.py").write_text(f"open({str(markers / name)!r}, 'w').write('x')\n")
    code = job.run()
    assert imported(markers) == []
    assert code == 0, job.log
    assert job.outputs()["exit-code"] == "0"
