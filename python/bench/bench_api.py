"""The Python API's speed next to Rust's and SkillOpt's (``cargo xtask bench python``).

Two steps, with the Rust side run in between by xtask:

``bench_api.py cases CASES.json``
    writes the cases: 400 gate tallies, and a 10 KB and a 100 KB skill document
    each with a 24-edit patch (inserts, replaces, deletes, appends, an edit
    aimed at the protected appendix and one whose target is absent).
``bench_api.py run CASES.json RUST.json``
    times the same work through ``skill_evolve`` and, for patches, through
    SkillOpt's ``apply_patch_with_report`` (loaded from its installed file, so
    its LLM client dependencies are not needed), and prints one table with the
    Rust figures of ``RUST.json``.

Each figure is operations per second over at least 0.8 s of repeated calls
(for patches: edits applied, i.e. calls × edits per patch).
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import skill_evolve

BUDGET_SECS = 0.8
SIZES = (("10 KB", 10_000), ("100 KB", 100_000))
EDITS_PER_PATCH = 24

WORDS = (
    "check the units before answering cite the source of every number prefer the latest "
    "document when two disagree read the whole table first never guess a date"
).split()


def make_document(rng: random.Random, size: int) -> str:
    """A skill document of about ``size`` characters: frontmatter, numbered steps under
    section headings, and an execution-notes appendix at the end."""
    lines = ["---", "name: bench-skill", "description: a generated skill", "---", "# Skill"]
    step = 0
    while sum(len(line) + 1 for line in lines) < size - 400:
        if step % 12 == 0:
            lines.append(f"\n## Section {step // 12}")
        step += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        lines.append(f"{step}. Step {step}: {words}.")
    body = "\n".join(lines) + "\n"
    return skill_evolve.append_to_appendix(body, ["Keep answers short.", "Name the tool you used."])


def make_edits(rng: random.Random, document: str) -> List[Dict[str, str]]:
    """A patch over ``document``: targets are whole step lines, spread over the document."""
    steps = [line for line in document.splitlines() if line[:1].isdigit()]
    picks = rng.sample(steps, EDITS_PER_PATCH)
    edits: List[Dict[str, str]] = []
    for i, line in enumerate(picks[: EDITS_PER_PATCH - 2]):
        kind = i % 4
        if kind == 0:
            edits.append({"op": "insert_after", "target": line, "content": f"Also verify claim {i}."})
        elif kind == 1:
            edits.append({"op": "replace", "target": line, "content": f"{line} (confirmed {i})"})
        elif kind == 2:
            edits.append({"op": "delete", "target": line, "content": ""})
        else:
            edits.append({"op": "append", "target": "", "content": f"New rule {i}: state the unit."})
    edits.append({"op": "replace", "target": "Keep answers short.", "content": "anything"})
    edits.append({"op": "insert_after", "target": "no such line", "content": "Fallback note."})
    return edits


def write_cases(path: Path) -> None:
    rng = random.Random(7)
    gate = []
    for _ in range(400):
        n_used = rng.randint(1, 200)
        w = rng.randint(0, n_used)
        l = rng.randint(0, n_used - w)
        gate.append([w, l, n_used, rng.randint(0, 200)])
    documents = []
    for name, size in SIZES:
        document = make_document(rng, size)
        documents.append({"name": name, "document": document, "edits": make_edits(rng, document)})
    path.write_text(json.dumps({"gate": gate, "documents": documents}), encoding="utf-8")


def rate(per_call: int, once: Callable[[], Any]) -> float:
    """Operations per second of ``once`` (``per_call`` operations a call)."""
    once()
    calls = 0
    started = time.perf_counter()
    while time.perf_counter() - started < BUDGET_SECS:
        once()
        calls += 1
    return calls * per_call / (time.perf_counter() - started)


def skillopt_patcher() -> Optional[Callable[[str, Dict[str, Any]], Any]]:
    """SkillOpt's ``apply_patch_with_report``, loaded from its file; ``None`` without it."""
    spec = importlib.util.find_spec("skillopt")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "optimizer" / "skill.py"
    module_spec = importlib.util.spec_from_file_location("skillopt_patch_engine", path)
    if module_spec is None or module_spec.loader is None:
        return None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.apply_patch_with_report  # type: ignore[no-any-return]


def fmt(value: Optional[float]) -> str:
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} M/s"
    if value >= 1e3:
        return f"{value / 1e3:.1f} k/s"
    return f"{value:.0f} /s"


def ratio(a: Optional[float], b: Optional[float]) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.1f}×"


def run(cases_path: Path, rust_path: Path) -> int:
    cases = json.loads(cases_path.read_text(encoding="utf-8"))
    rust = json.loads(rust_path.read_text(encoding="utf-8"))
    gate = skill_evolve.Gate()
    tallies = [tuple(t) for t in cases["gate"]]

    def decide_all() -> None:
        for w, l, n_used, n_remaining in tallies:
            gate.decide(w, l, n_used, n_remaining)

    rows = [
        (
            "gate decisions",
            rate(len(tallies), decide_all),
            rust["gate_decisions_per_s"],
            None,
        )
    ]
    skillopt = skillopt_patcher()
    for doc in cases["documents"]:
        document, edits = doc["document"], doc["edits"]
        ours = rate(len(edits), lambda: skill_evolve.apply_patch_with_report(document, edits))
        theirs = None
        if skillopt is not None:
            patch = {"edits": edits}
            theirs = rate(len(edits), lambda: skillopt(document, patch))
        rows.append((f"patch edits, {doc['name']} document", ours, rust["patch_edits_per_s"][doc["name"]], theirs))

    print(f"Python {sys.version.split()[0]}, skill_evolve {skill_evolve.__version__}")
    header = ("operation", "Python API", "Rust", "SkillOpt (Python)", "API / SkillOpt", "Rust / API")
    table = [header] + [
        (name, fmt(py), fmt(rs), fmt(so), ratio(py, so), ratio(rs, py)) for name, py, rs, so in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("| " + " | ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    if skillopt is None:
        print("SkillOpt is not installed: its column is empty (pip install --no-deps skillopt).")
    return 0


def main(argv: List[str]) -> int:
    if len(argv) == 2 and argv[0] == "cases":
        write_cases(Path(argv[1]))
        return 0
    if len(argv) == 3 and argv[0] == "run":
        return run(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
