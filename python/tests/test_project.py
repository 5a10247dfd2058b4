"""The project operations in process (``run``, ``status``, ``adopt``, ``harvest``), through the
installed wheel's native module: the same library functions the ``skill-evolve`` command calls."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

import skill_evolve
from skill_evolve import InputError, SkillEvolveError, adopt, harvest, run, status

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "crates/skill-evolve/examples/rule-agent-demo"
RULE_AGENT = REPO / "crates/skill-evolve/examples/agents/rule_agent.py"


def demo_project(tmp_path: Path) -> Path:
    """The shipped offline demo in ``tmp_path``, its agent the Python rule agent."""
    folder = tmp_path / "demo"
    (folder / "skills").mkdir(parents=True)
    for name in ("questions.jsonl", "demo.cassette", "skills/default-strategy.md"):
        shutil.copy(DEMO / name, folder / name)
    config = (DEMO / "evolve.toml").read_text()
    agent = json.dumps([sys.executable, str(RULE_AGENT)])
    replaced = config.replace('command = ["rule-agent"]', f"command = {agent}")
    assert replaced != config
    (folder / "evolve.toml").write_text(replaced)
    return folder


def test_input_errors_are_skill_evolve_errors() -> None:
    assert issubclass(InputError, SkillEvolveError)
    with pytest.raises(InputError) as caught:
        run(Path("/nonexistent/evolve.toml"))
    assert "\n" not in str(caught.value)


def test_a_dry_run_checks_and_writes_nothing(tmp_path: Path) -> None:
    folder = demo_project(tmp_path)
    result = run(folder / "evolve.toml", dry_run=True)
    assert result["dry_run"] is True
    assert 'run "demo"' in result["preflight"]
    assert not (folder / ".skill-evolve").exists()


def test_a_run_takes_the_house_rules_file(tmp_path: Path) -> None:
    folder = demo_project(tmp_path)
    rules = folder / "rules.md"
    rules.write_text("Keep the tone terse.\n\n```checks\nmax_lines = 400\n```\n")
    result = run(folder / "evolve.toml", dry_run=True, preferences=rules)
    assert "house rules:" in result["preflight"] and "1 check(s)" in result["preflight"]
    rules.write_text("```checks\nmax_lines = \"many\"\n```\n")
    with pytest.raises(InputError) as caught:
        run(folder / "evolve.toml", dry_run=True, preferences=rules)
    assert "rules.md" in str(caught.value)
    assert not (folder / ".skill-evolve").exists()


def test_run_status_and_adopt_in_process(tmp_path: Path) -> None:
    """The demo run in process: events reach the callback, the run stages its accepted
    document, ``status`` lists it, ``adopt`` shows the diff and writes only once confirmed."""
    folder = demo_project(tmp_path)
    events: List[Dict[str, Any]] = []
    result = run(folder / "evolve.toml", events.append)
    assert result["interrupted"] is False
    kinds = {e["event"] for e in events}
    assert {"question_done", "line"} <= kinds, kinds
    lines = [e["text"] for e in events if e["event"] == "line"]
    assert any(line.startswith("accepted ") for line in lines), lines
    report = result["report"]
    assert report["final_version"] != report["initial_version"]
    assert sum(1 for r in report["records"] if r["accepted"]) == 1
    assert Path(result["report_md"]).is_file() and Path(result["report_html"]).is_file()
    assert result["staged"] == 1

    (listed,) = status(folder)
    assert listed["name"] == "demo" and listed["state"] == "finished"
    assert listed["staged"] == 1 and listed["waiting"] == 1
    assert listed["lines"][0].startswith("demo: finished")

    skill = folder / "skills/default-strategy.md"
    before = skill.read_text()
    shown = adopt("demo", project=folder)
    assert shown["confirmed"] is False and shown["adopted"] == []
    assert "+++ b/" in shown["diff"] and len(shown["documents"]) == 1
    assert skill.read_text() == before, "nothing is written without confirm=True"

    done = adopt("demo", project=folder, confirm=True)
    assert [Path(a["file"]).name for a in done["adopted"]] == ["default-strategy.md"]
    assert skill.read_text() != before
    (listed,) = status(folder)
    assert listed["waiting"] == 0
    again = adopt("demo", project=folder, confirm=True)
    assert again["adopted"] == [] and again["nothing"] == "nothing left to adopt"

    # The skill the run started from was adopted: the same run does not resume.
    with pytest.raises(InputError, match=r"cannot resume: the skills \(default-strategy.md\)"):
        run(folder / "evolve.toml")

    # The adoption is taken back the same way: the diff first, the write once confirmed.
    adopted = skill.read_text()
    shown = adopt("demo", project=folder, undo=True)
    assert shown["adopted"] == [] and "+++ b/" in shown["diff"]
    assert skill.read_text() == adopted
    undone = adopt("demo", project=folder, undo=True, confirm=True)
    assert [Path(a["file"]).name for a in undone["adopted"]] == ["default-strategy.md"]
    assert skill.read_text() == before
    (listed,) = status(folder)
    assert listed["waiting"] == 1


def test_an_exception_in_the_callback_stops_the_run_and_is_raised(tmp_path: Path) -> None:
    folder = demo_project(tmp_path)

    class Stop(Exception):
        pass

    def on_event(event: Dict[str, Any]) -> None:
        if event["event"] == "question_done":
            raise Stop

    with pytest.raises(Stop):
        run(folder / "evolve.toml", on_event)
    # The run stopped cleanly: the same call resumes it to the end.
    assert run(folder / "evolve.toml")["staged"] == 1


def test_harvest_a_trajectory_folder_in_process(tmp_path: Path) -> None:
    source = tmp_path / "trajectories"
    source.mkdir()
    trajectory = {
        "id": "t1",
        "task_description": "account help",
        "question": "How do I reset my password?",
        "fail_reason": "wrong form",
        "predicted_answer": "Use the form.",
        "reference_text": "Use the reset page.",
        "notes": "DB_PASSWORD=hunter2hunter2xyz",
    }
    (source / "t1.json").write_text(json.dumps(trajectory))
    notes: List[Dict[str, Any]] = []
    out = tmp_path / "out"
    summary = harvest("dir", from_=source, out=out, on_note=notes.append)
    assert summary["counts"]["sessions"] == 1 and summary["counts"]["written"] == 1
    assert [n["kind"] for n in notes] == ["session"]
    written = (out / f"{notes[0]['id']}.json").read_text()
    assert "hunter2hunter2xyz" not in written
    assert "[REDACTED:" in written
    assert summary["lines"][0].startswith("source: dir")
    with pytest.raises(InputError):
        harvest("nowhere")


def test_the_operations_are_exported() -> None:
    for name in ("run", "status", "adopt", "harvest", "InputError"):
        assert name in skill_evolve.__all__
