//! The agent protocol as `docs/agent-protocol.md` documents it: the messages
//! `run` really sends fit the documented request schema, the example agents'
//! lines fit the step and result schemas, and the example agents (plain
//! Python, plain Node.js, and Python on the `skill_evolve.agent` helper) reach
//! the reference agent's decisions on the offline demo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::run::rule_agent;
use crate::support::skill_evolve;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

fn example_agent(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/agents")
        .join(name)
}

/// The schemas of the protocol page: each JSON block that follows a
/// `<!-- schema: NAME -->` line.
fn documented_schemas() -> BTreeMap<String, Value> {
    let page = std::fs::read_to_string(repo_root().join("docs/agent-protocol.md")).unwrap();
    let mut schemas = BTreeMap::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .trim()
            .strip_prefix("<!-- schema: ")
            .and_then(|rest| rest.strip_suffix(" -->"))
        else {
            continue;
        };
        assert_eq!(lines.next().map(str::trim), Some("```json"), "{name}");
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let schema: Value = serde_json::from_str(&block.join("\n"))
            .unwrap_or_else(|e| panic!("schema {name} is not JSON: {e}"));
        schemas.insert(name.to_owned(), schema);
    }
    schemas
}

/// Checks `value` against the subset of JSON Schema the page uses (`type`,
/// `const`, `required`, `properties`, `not: {required}`, `minimum`,
/// `maximum`); with `strict`, every field of an object whose schema lists
/// `properties` must be one of them (the page documents every field `run`
/// sends).
fn violations(schema: &Value, value: &Value, at: &str, strict: bool) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        found.push(format!("{at}: {value} is not {expected}"));
    }
    if let Some(kind) = schema.get("type").and_then(Value::as_str) {
        let fits = match kind {
            "object" => value.is_object(),
            "string" => value.is_string(),
            "integer" => value.is_u64() || value.is_i64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "array" => value.is_array(),
            other => panic!("type {other} not handled"),
        };
        if !fits {
            found.push(format!("{at}: {value} is not of type {kind}"));
        }
    }
    if let Some(n) = value.as_f64() {
        if schema["minimum"].as_f64().is_some_and(|min| n < min) {
            found.push(format!("{at}: {n} below its minimum"));
        }
        if schema["maximum"].as_f64().is_some_and(|max| n > max) {
            found.push(format!("{at}: {n} above its maximum"));
        }
    }
    let Some(object) = value.as_object() else {
        return found;
    };
    let names = |list: &Value| -> Vec<String> {
        list.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    for name in names(&schema["required"]) {
        if !object.contains_key(&name) {
            found.push(format!("{at}: required field {name} is missing"));
        }
    }
    for name in names(&schema["not"]["required"]) {
        if object.contains_key(&name) {
            found.push(format!("{at}: field {name} must never be present"));
        }
    }
    let properties = schema["properties"].as_object();
    for (name, field) in object {
        match properties.and_then(|p| p.get(name)) {
            Some(sub) => found.extend(violations(sub, field, &format!("{at}.{name}"), strict)),
            None if strict && properties.is_some() => {
                found.push(format!("{at}: field {name} is not documented"))
            }
            None => {}
        }
    }
    found
}

/// The shipped demo in a fresh folder, with its agent command replaced by `command`.
pub(crate) fn demo_with_agent(command: &[String]) -> tempfile::TempDir {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rule-agent-demo");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("skills")).unwrap();
    for name in [
        "questions.jsonl",
        "demo.cassette",
        "skills/default-strategy.md",
    ] {
        std::fs::copy(example.join(name), d.join(name)).unwrap();
    }
    let config = std::fs::read_to_string(example.join("evolve.toml")).unwrap();
    let command = serde_json::to_string(command).unwrap();
    let replaced = config.replace(
        r#"command = ["rule-agent"]"#,
        &format!("command = {command}"),
    );
    assert_ne!(replaced, config);
    std::fs::write(d.join("evolve.toml"), replaced).unwrap();
    dir
}

/// Runs the demo in `d` and returns the gate rows of its report (the table
/// lines that say whether a candidate was accepted).
fn demo_gate_row(d: &Path) -> String {
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(d.join(".skill-evolve/runs/demo/report.md")).unwrap();
    let rows: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("| ") && (l.contains(" | yes | ") || l.contains(" | no | ")))
        .collect();
    assert!(!rows.is_empty(), "no gate row in {report}");
    rows.join("\n")
}

fn text(path: &Path) -> String {
    path.display().to_string()
}

/// The requests `run` sends carry exactly the documented fields, never the
/// reference answer, and every line the Python example writes back fits the
/// step and result schemas.
#[test]
fn what_run_sends_and_the_example_writes_back_fit_the_documented_schemas() {
    let schemas = documented_schemas();
    for name in ["request", "step", "result"] {
        assert!(schemas.contains_key(name), "no {name} schema in the page");
    }
    let agent = example_agent("rule_agent.py");
    let tap = tempfile::tempdir().unwrap();
    let script = tap.path().join("tap.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ntee \"{tap}/requests.$$\" | python3 '{agent}' | tee \"{tap}/replies.$$\"\n",
            tap = text(tap.path()),
            agent = text(&agent),
        ),
    )
    .unwrap();
    let dir = demo_with_agent(&["sh".to_owned(), text(&script)]);
    demo_gate_row(dir.path());

    // Each worker process taps into files of its own (named by its pid).
    let tapped = |prefix: &str| -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(tap.path()).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(prefix) {
                all.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
        all
    };
    let requests = tapped("requests.");
    let replies = tapped("replies.");
    assert!(requests.lines().count() >= 10, "{requests}");
    for line in requests.lines() {
        let request: Value = serde_json::from_str(line).unwrap();
        let problems = violations(&schemas["request"], &request, "request", true);
        assert!(problems.is_empty(), "{problems:?} in {line}");
    }
    let (mut steps, mut results) = (0, 0);
    for line in replies.lines() {
        let reply: Value = serde_json::from_str(line).unwrap();
        let kind = reply["type"].as_str().unwrap_or_default();
        let problems = violations(&schemas[kind], &reply, kind, true);
        assert!(problems.is_empty(), "{problems:?} in {line}");
        match kind {
            "step" => steps += 1,
            "result" => results += 1,
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(results, requests.lines().count());
    assert_eq!(steps, results);
}

/// The schema check itself: it notices a leaked answer, a missing field, an
/// undocumented field and a wrong type.
#[test]
fn the_schema_check_catches_what_breaks_the_contract() {
    let schemas = documented_schemas();
    let request: Value = serde_json::json!({
        "type": "question", "run_id": "r",
        "workspace": {"version": "v1", "dir": "/d", "skills_dir": "/d/skills"},
        "question": {"question_id": "q", "answer": "yes", "surprise": 1},
    });
    let problems = violations(&schemas["request"], &request, "request", true);
    for needle in [
        "required field prompts_dir is missing",
        "field answer must never be present",
        "field surprise is not documented",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "{needle}: {problems:?}"
        );
    }
    let result: Value =
        serde_json::json!({"type": "result", "answer_confidence": 1.5, "correct": "yes"});
    let problems = violations(&schemas["result"], &result, "result", true);
    assert!(
        problems.iter().any(|p| p.contains("above its maximum")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("not of type boolean")),
        "{problems:?}"
    );
}

/// The example agents, two written without any library and one on the
/// Python helper (`serve_agent.py`, with the package from `python/`), reach
/// the same gate decision on the offline demo as the reference agent.
#[test]
fn the_example_agents_reach_the_reference_agents_decisions() {
    let reference = demo_with_agent(&[text(&rule_agent())]);
    let expected = demo_gate_row(reference.path());
    assert!(
        expected.contains("| yes | 9 | 0 | 14 | 0 | 102.30 |"),
        "{expected}"
    );
    let helper = format!("PYTHONPATH={}", text(&repo_root().join("python")));
    for command in [
        vec!["python3".to_owned(), text(&example_agent("rule_agent.py"))],
        vec!["node".to_owned(), text(&example_agent("rule-agent.mjs"))],
        vec![
            "env".to_owned(),
            helper,
            "python3".to_owned(),
            text(&example_agent("serve_agent.py")),
        ],
    ] {
        let dir = demo_with_agent(&command);
        assert_eq!(demo_gate_row(dir.path()), expected, "{command:?}");
    }
}
