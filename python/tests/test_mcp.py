"""``skill-evolve mcp``: the command's operations over the Model Context Protocol, driven by
the official Python MCP client as an agent host would: the tools listed, each one called,
inputs checked like the command's flags, nothing written outside the project, and ``adopt``
writing only once confirmed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "crates/skill-evolve/examples/rule-agent-demo"
RULE_AGENT = REPO / "crates/skill-evolve/examples/agents/rule_agent.py"

TOOLS = {
    "adopt",
    "answer",
    "handoff_prompts",
    "dry_run",
    "gate",
    "harvest",
    "report",
    "run",
    "run_progress",
    "schedule",
    "status",
    "stop_run",
    "unschedule",
}

TRAJECTORY = {
    "id": "t1",
    "task_description": "orders",
    "question": "Where is order 7?",
    "fail_reason": "the status was misread",
    "predicted_answer": "lost",
    "reference_text": "shipped",
    "steps": [{"step": 1, "tool_name": "lookup_order", "tool_input": {"id": "7"}, "tool_output": "shipped"}],
}


def command() -> str:
    """The ``skill-evolve`` of the installed wheel (CI), else a built one."""
    named = os.environ.get("SKILL_EVOLVE_BIN")
    if named:
        assert Path(named).exists(), f"SKILL_EVOLVE_BIN={named} does not exist"
        return named
    found = shutil.which("skill-evolve", path=str(Path(sys.executable).parent)) or shutil.which(
        "skill-evolve"
    )
    if found is None:
        pytest.skip("no skill-evolve command: install the wheel or set SKILL_EVOLVE_BIN")
    return found


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


class Calls:
    """A session's tool calls, each returning ``(is_error, text)``."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def __call__(self, name: str, arguments: Dict[str, Any]) -> "tuple[bool, str]":
        result = await self.session.call_tool(name, arguments)
        text = "".join(getattr(block, "text", "") for block in result.content)
        return bool(result.is_error), text

    async def ok(self, name: str, arguments: Dict[str, Any]) -> str:
        failed, text = await self(name, arguments)
        assert not failed, f"{name}: {text}"
        return text


async def drive(project: Path, script) -> None:
    params = StdioServerParameters(command=command(), args=["mcp", "--project", str(project)])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await script(session, Calls(session))


def test_the_tools_are_listed_with_their_inputs(tmp_path: Path) -> None:
    folder = demo_project(tmp_path)

    async def script(session: ClientSession, call: Calls) -> None:
        listed = await session.list_tools()
        names = {tool.name for tool in listed.tools}
        assert names == TOOLS, names
        for tool in listed.tools:
            assert tool.description, tool.name
            assert tool.input_schema.get("type") == "object", tool.name
        adopt = next(t for t in listed.tools if t.name == "adopt")
        assert adopt.input_schema["required"] == ["run"]
        assert "confirm" in adopt.input_schema["properties"]

    asyncio.run(drive(folder, script))


def test_a_whole_run_through_the_tools(tmp_path: Path) -> None:
    """dry run, run in the background, progress, status, adopt (diff first, write on
    confirm), report, gate, schedule and unschedule, each through the client."""
    folder = demo_project(tmp_path)
    skill = folder / "skills/default-strategy.md"
    before = skill.read_text()

    async def script(session: ClientSession, call: Calls) -> None:
        empty = json.loads(await call.ok("status", {}))
        assert empty["runs"] == []

        dry = await call.ok("dry_run", {})
        assert 'run "demo"' in dry and "nothing was run or written" in dry
        assert "house rules:" not in dry
        (folder / "rules.md").write_text("Keep the tone terse.\n\n```checks\nmax_lines = 400\n```\n")
        ruled = await call.ok("dry_run", {"preferences": "rules.md"})
        assert "house rules:" in ruled and "rules.md" in ruled and "1 check(s)" in ruled, ruled
        (folder / "rules.md").unlink()
        failed, text = await call("dry_run", {"preferences": "../rules.md"})
        assert failed and "outside the project" in text, text
        assert not (folder / ".skill-evolve").exists()

        started = json.loads(await call.ok("run", {}))
        assert started["job"] == 1 and started["run"] == "demo"
        view: Dict[str, Any] = {}
        for _ in range(600):
            view = json.loads(await call.ok("run_progress", {"job": 1}))
            if view["state"] != "running":
                break
            await asyncio.sleep(0.2)
        assert view["state"] == "finished", view
        assert "1 accepted" in view["summary"], view
        assert view["rollouts"] > 0
        assert any(line.startswith("accepted ") for line in view["lines"]), view

        runs = json.loads(await call.ok("status", {}))["runs"]
        assert [r["name"] for r in runs] == ["demo"]
        assert runs[0]["lines"][0].startswith("demo: finished")

        shown = json.loads(await call.ok("adopt", {"run": "demo"}))
        assert shown["written"] is False
        assert "+RULE qa => yes" in shown["diff"], shown
        assert skill.read_text() == before, "nothing is written without confirm"

        done = json.loads(await call.ok("adopt", {"run": "demo", "confirm": True}))
        assert done["written"] is True and len(done["adopted"]) == 1
        assert "RULE qa => yes" in skill.read_text()

        # Taken back the same way: the diff first, the write once confirmed.
        undo = json.loads(await call.ok("adopt", {"run": "demo", "undo": True}))
        assert undo["written"] is False and "-RULE qa => yes" in undo["diff"], undo
        assert "RULE qa => yes" in skill.read_text()
        undone = json.loads(await call.ok("adopt", {"run": "demo", "undo": True, "confirm": True}))
        assert undone["written"] is True and len(undone["restored"]) == 1
        assert skill.read_text() == before
        done = json.loads(await call.ok("adopt", {"run": "demo", "confirm": True}))
        assert done["written"] is True and "RULE qa => yes" in skill.read_text()

        report = json.loads(await call.ok("report", {"run": "demo"}))
        assert Path(report["html"]).is_file()
        assert report["report_md"].startswith("# Run report")

        verdict = json.loads(await call.ok("gate", {"wins": 9, "losses": 0, "used": 10, "remaining": 10}))
        assert verdict["decision"] == "accept_confirmed"
        raised = json.loads(
            await call.ok(
                "gate",
                {"wins": 9, "losses": 0, "used": 10, "remaining": 10, "fdr_level": 0.05, "horizon": 3},
            )
        )
        assert raised["decision"] == "accept_confirmed"  # E = 102.3 ≥ 60

        entry = await call.ok("schedule", {"every": "night"})
        assert entry.startswith("# skill-evolve") and "0 3 * * *" in entry
        crontab = folder / "crontab.txt"
        crontab.write_bytes(b"MAILTO=me@example.com\r\n15 2 * * * backup.sh\n")
        await call.ok("schedule", {"every": "hour", "install": "crontab.txt"})
        assert "0 * * * *" in crontab.read_text()
        removed = await call.ok("unschedule", {"file": "crontab.txt"})
        assert "removed this folder's entry" in removed, removed
        assert crontab.read_bytes() == b"MAILTO=me@example.com\r\n15 2 * * * backup.sh\n"
        nothing = await call.ok("unschedule", {"file": "crontab.txt"})
        assert "nothing removed" in nothing, nothing

    asyncio.run(drive(folder, script))


def test_inputs_are_checked_and_nothing_is_written_outside(tmp_path: Path) -> None:
    folder = demo_project(tmp_path)
    traces = folder / "traces"
    traces.mkdir()
    (traces / "t1.json").write_text(json.dumps(TRAJECTORY))
    outside = tmp_path / "outside"

    async def script(session: ClientSession, call: Calls) -> None:
        failed, text = await call("adopt", {"run": "demo", "confirm": True, "force": True})
        assert failed and "unknown field `force`" in text, text
        failed, text = await call("gate", {"wins": "nine", "losses": 0, "used": 10, "remaining": 0})
        assert failed, text
        failed, text = await call("gate", {"wins": 12, "losses": 0, "used": 10, "remaining": 0})
        assert failed and "exceeds --used" in text, text
        failed, text = await call("run_progress", {})
        assert failed and "no run was started" in text, text
        failed, text = await call("stop_run", {"job": 7})
        assert failed and "no job 7" in text, text
        failed, text = await call("adopt", {"run": "nothing-here"})
        assert failed, text

        for args in (
            {"source": "dir", "from": "traces", "out": "../outside"},
            {"source": "dir", "from": "traces", "out": str(outside)},
            {"source": "dir", "from": "traces", "tasks": "../outside/tasks.jsonl"},
        ):
            failed, text = await call("harvest", args)
            assert failed and "outside the project" in text, (args, text)
        failed, text = await call("schedule", {"every": "night", "install": "../crontab.txt"})
        assert failed and "outside the project" in text, text
        (tmp_path / "crontab.txt").write_text("15 2 * * * backup.sh\n")
        failed, text = await call("unschedule", {"file": "../crontab.txt"})
        assert failed and "outside the project" in text, text
        (tmp_path / "crontab.txt").unlink()
        failed, text = await call("unschedule", {"file": "no-crontab.txt"})
        assert failed and "no such crontab file" in text, text
        failed, text = await call("unschedule", {})
        assert failed, text
        failed, text = await call("dry_run", {"config": "../evolve.toml"})
        assert failed and "outside the project" in text, text

        summary = json.loads(await call.ok("harvest", {"source": "dir", "from": "traces", "out": "harvested"}))
        assert "sessions: 1" in summary["lines"], summary
        assert (folder / "harvested/t1.json").is_file()

    asyncio.run(drive(folder, script))
    assert not outside.exists()
    assert not (tmp_path / "crontab.txt").exists()


def test_the_plugin_commands_name_only_tools_the_server_has() -> None:
    """The Claude Code plugin's commands and the Codex prompts call the server's tools by
    name: every name they use must be one the server lists."""
    import re

    folders = [REPO / "plugins/skill-evolve/commands", REPO / "plugins/codex/prompts"]
    files = [path for folder in folders for path in sorted(folder.glob("*.md"))]
    assert len(files) == 10, files
    for path in files:
        text = path.read_text()
        assert text.startswith("---\ndescription: "), path
        allowed = set(re.findall(r"mcp__plugin_skill-evolve_skill-evolve__(\w+)", text))
        called = set(re.findall(r"`(\w+)` tool", text)) | set(re.findall(r"Call `(\w+)`", text))
        assert called, f"{path} calls no tool"
        assert allowed <= TOOLS and called <= TOOLS, (path, allowed - TOOLS, called - TOOLS)
    hooks = json.loads((REPO / "plugins/skill-evolve/hooks/hooks.json").read_text())
    (entry,) = hooks["hooks"]["SessionEnd"]
    assert entry["hooks"][0]["command"] == "skill-evolve hook session-end"
    mcp_json = json.loads((REPO / "plugins/skill-evolve/.mcp.json").read_text())
    assert mcp_json["mcpServers"]["skill-evolve"]["args"] == ["mcp"]


def test_a_run_without_an_api_key_is_answered_through_the_tools(tmp_path: Path) -> None:
    """provider = "handoff": the run stops waiting for answers, ``handoff_prompts`` lists the
    requests, ``answer`` adds each reply (here the demo cassette's), and ``run`` resumes, round
    after round, until the run ends as the replayed demo does."""
    folder = demo_project(tmp_path)
    config = (folder / "evolve.toml").read_text()
    handoff = config.replace('provider = "replay"', 'provider = "handoff"').replace(
        'cassette = "demo.cassette"\n', ""
    )
    assert handoff != config
    (folder / "evolve.toml").write_text(handoff)
    replies = {}
    for line in (folder / "demo.cassette").read_text().splitlines():
        if line.strip():
            entry = json.loads(line)
            replies[entry["key"]] = entry["response"]["content"]

    async def script(session: ClientSession, call: Calls) -> None:
        rounds = 0
        while True:
            job = json.loads(await call.ok("run", {}))["job"]
            view: Dict[str, Any] = {}
            for _ in range(600):
                view = json.loads(await call.ok("run_progress", {"job": job}))
                if view["state"] != "running":
                    break
                await asyncio.sleep(0.2)
            if view["state"] == "finished":
                break
            assert view["state"] == "waiting_for_answers", view
            rounds += 1
            assert rounds < 20
            waiting = json.loads(await call.ok("handoff_prompts", {"run": "demo"}))
            assert waiting["waiting"] == view["waiting"] > 0
            failed, text = await call("answer", {"run": "demo", "key": "0" * 64, "reply": "x"})
            assert failed and "no request waits under the key" in text, text
            done: Dict[str, Any] = {}
            for prompt in waiting["prompts"]:
                assert prompt["messages"], prompt
                done = json.loads(
                    await call.ok("answer", {"run": "demo", "key": prompt["key"], "reply": replies[prompt["key"]]})
                )
            assert done["answered"] == done["waiting"], done
        assert rounds >= 2
        assert "1 accepted" in view["summary"], view

    asyncio.run(drive(folder, script))
