//! A Claude Code or Codex user's whole journey by commands, without writing an agent: their
//! own sessions (`~/.claude/projects`, `~/.codex/sessions`) harvested into a question set of
//! the requests they repeat, reviewed, replayed through the real `claude -p` or `codex exec`
//! behind the gate, and the accepted skill adopted into their Agent Skills folder. The host's
//! model calls are answered by the scripted model of `host_model.rs` on 127.0.0.1, the
//! optimizer's by the fake LLM.

use crate::fake_llm::QA_RULE;
use crate::host_agents::host_cli;
use crate::host_model::SKILL;
use crate::run::{live_config, one_epoch};
use crate::support::skill_evolve;

/// The places the user asked about, each in two sessions: fourteen recurring requests.
pub(crate) const REGIONS: [&str; 14] = [
    "north",
    "south",
    "east",
    "west",
    "centre",
    "coast",
    "valley",
    "harbour",
    "plains",
    "islands",
    "uplands",
    "lowlands",
    "delta",
    "highlands",
];

/// One Claude Code session of the project `cwd`: the request, the skill loaded with the
/// `Skill` tool, and a one-word answer.
pub(crate) fn session(cwd: &str, id: &str, request: &str, minute: usize) -> String {
    let line = |kind: &str, message: serde_json::Value, second: usize| {
        serde_json::json!({
            "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": cwd,
            "sessionId": id, "version": "2.1.0", "gitBranch": "main",
            "timestamp": format!("2026-11-20T10:{minute:02}:{second:02}.000Z"),
            "type": kind, "message": message,
        })
        .to_string()
    };
    [
        line(
            "user",
            serde_json::json!({"role": "user", "content": request}),
            0,
        ),
        line(
            "assistant",
            serde_json::json!({"model": "claude-test", "id": format!("{id}-a"), "type": "message",
                "role": "assistant", "content": [{"type": "tool_use", "id": format!("{id}-t"),
                "name": "Skill", "input": {"skill": SKILL}}]}),
            1,
        ),
        line(
            "user",
            serde_json::json!({"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": format!("{id}-t"), "content": format!("Launching skill: {SKILL}")}]}),
            2,
        ),
        line(
            "assistant",
            serde_json::json!({"model": "claude-test", "id": format!("{id}-b"), "type": "message",
                "role": "assistant", "content": [{"type": "text", "text": "yes"}]}),
            3,
        ),
    ]
    .join("\n")
        + "\n"
}

/// One Codex session of the project `cwd`: the request, the skill read from its `SKILL.md`
/// in the shell, and a one-word answer.
pub(crate) fn codex_session(cwd: &str, id: &str, request: &str, minute: usize) -> String {
    let at = |second: usize| format!("2026-11-20T10:{minute:02}:{second:02}.000Z");
    let line = |kind: &str, payload: serde_json::Value, second: usize| {
        serde_json::json!({"timestamp": at(second), "type": kind, "payload": payload}).to_string()
    };
    let read = format!("cat ~/.codex/skills/{SKILL}/SKILL.md");
    [
        line(
            "session_meta",
            serde_json::json!({"id": id, "timestamp": at(0), "cwd": cwd,
                "originator": "codex_cli_rs", "cli_version": "0.171.0"}),
            0,
        ),
        line(
            "response_item",
            serde_json::json!({"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": request}]}),
            1,
        ),
        line(
            "event_msg",
            serde_json::json!({"type": "user_message", "message": request, "kind": "plain"}),
            1,
        ),
        line(
            "response_item",
            serde_json::json!({"type": "function_call", "name": "shell",
                "arguments": serde_json::json!({"command": ["bash", "-lc", read]}).to_string(),
                "call_id": format!("{id}-c")}),
            2,
        ),
        line(
            "response_item",
            serde_json::json!({"type": "function_call_output", "call_id": format!("{id}-c"),
                "output": serde_json::json!({"output": "# Answering",
                    "metadata": {"exit_code": 0}}).to_string()}),
            3,
        ),
        line(
            "response_item",
            serde_json::json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "yes"}]}),
            4,
        ),
    ]
    .join("\n")
        + "\n"
}

/// The host a journey goes through.
#[derive(Clone, Copy)]
enum Host {
    ClaudeCode,
    Codex,
}

#[test]
fn a_claude_code_user_goes_from_their_sessions_to_an_adopted_gated_skill() {
    journey(Host::ClaudeCode);
}

#[test]
fn a_codex_user_goes_from_their_sessions_to_an_adopted_gated_skill() {
    journey(Host::Codex);
}

/// Sessions → harvest → review → run through the host → adopt.
fn journey(host: Host) {
    let Some(cli) = host_cli(match host {
        Host::ClaudeCode => "claude",
        Host::Codex => "codex",
    }) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let skill = d.join("skills").join(SKILL).join("SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    let original = format!(
        "---\nname: {SKILL}\ndescription: How to answer questions about the service.\n---\n\
         # Answering\n\nAnswer with one word.\n"
    );
    std::fs::write(&skill, &original).unwrap();

    // 1. Their sessions, where the host keeps them.
    let (source, sessions) = match host {
        Host::ClaudeCode => ("claude-code", d.join("home/.claude/projects")),
        Host::Codex => ("codex", d.join("home/.codex/sessions")),
    };
    let folder = match host {
        Host::ClaudeCode => sessions.join("-work-service"),
        Host::Codex => sessions.join("2026/11/20"),
    };
    std::fs::create_dir_all(&folder).unwrap();
    let cwd = d.display().to_string();
    for (i, region) in REGIONS.iter().enumerate() {
        for copy in 0..2 {
            let n = i * 2 + copy;
            let id = format!("{n:08x}-0000-4000-8000-{n:012x}");
            let request = format!("Is the service available in the {region} region?");
            let (file, text) = match host {
                Host::ClaudeCode => (format!("{id}.jsonl"), session(&cwd, &id, &request, n)),
                Host::Codex => (
                    format!("rollout-2026-11-20T10-{n:02}-00-{id}.jsonl"),
                    codex_session(&cwd, &id, &request, n),
                ),
            };
            std::fs::write(folder.join(file), text).unwrap();
        }
    }

    // 2. Harvest: the requests they repeat become a question set to review.
    let out = skill_evolve(d)
        .args(["harvest", "--source", source, "--from"])
        .arg(&sessions)
        .args(["--tasks", "mined.jsonl", "--out", "harvested"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.contains("tasks: 14 recurring (seen in at least 2 sessions) mined into mined.jsonl"),
        "{stdout}"
    );
    let mined = std::fs::read_to_string(d.join("mined.jsonl")).unwrap();
    for task in mined.lines() {
        let task: serde_json::Value = serde_json::from_str(task).unwrap();
        assert_eq!(task["task_type"], SKILL, "{task}");
        assert_eq!(task["check"]["kind"], "contains", "{task}");
        assert_eq!(task["check"]["value"], "yes", "{task}");
        assert_eq!(task["reviewed"], false, "{task}");
    }

    // 3. Unreviewed, the set is refused; reviewed, it is the run's question set.
    let model = crate::host_model::start();
    let codex_home = d.join("codex-home");
    let agent = match host {
        Host::ClaudeCode => format!(
            "[agent]\nconcurrency = 2\ntimeout_secs = 120\n\
             env = {{ ANTHROPIC_BASE_URL = {:?}, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", \
             DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }}\n\n\
             [agent.host]\nname = \"claude-code\"\ncli = {:?}\nmodel = \"claude-scripted\"\n",
            model.origin,
            cli.display().to_string()
        ),
        Host::Codex => {
            crate::host_agents::write_codex_config(&codex_home, &model.origin);
            format!(
                "[agent]\nconcurrency = 2\ntimeout_secs = 120\n\n\
                 [agent.host]\nname = \"codex\"\ncli = {:?}\nsandbox = \"read-only\"\n",
                cli.display().to_string()
            )
        }
    };
    let optimizer = crate::fake_llm::start_loop();
    let config = one_epoch(&live_config(&optimizer.base_url))
        .replace("file = \"questions.jsonl\"", "file = \"mined.jsonl\"");
    let start = config.find("[agent]").unwrap();
    let end = config.find("[questions]").unwrap();
    let config = format!("{}{agent}\n{}", &config[..start], &config[end..]);
    std::fs::write(d.join("evolve.toml"), config).unwrap();
    let run = || {
        std::fs::create_dir_all(d.join("home")).unwrap();
        skill_evolve(d)
            .env("SKILL_EVOLVE_TEST_KEY", "optimizer-secret")
            .env("HOME", d.join("home"))
            .env("ANTHROPIC_API_KEY", "host-dummy-key")
            .env("CODEX_HOME", &codex_home)
            .env("SCRIPTED_MODEL_KEY", "host-dummy-key")
            .args(["run", "--config", "evolve.toml"])
            .output()
            .unwrap()
    };
    let refused = run();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("reviewed"),
        "{refused:?}"
    );
    std::fs::write(
        d.join("mined.jsonl"),
        mined.replace("\"reviewed\":false", "\"reviewed\":true"),
    )
    .unwrap();

    // 4. The run replays the tasks through `claude -p`, gates the proposed rule, stages it.
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 candidate(s), 1 accepted"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), original);

    // 5. Adopted: the skill in their folder holds the rule, its history the adoption.
    let out = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let adopted = std::fs::read_to_string(&skill).unwrap();
    assert!(adopted.contains(QA_RULE), "{adopted}");
    assert!(
        adopted.starts_with(&format!("---\nname: {SKILL}\n")),
        "{adopted}"
    );
    assert!(
        !skill.parent().unwrap().join(".skill-evolve").exists(),
        "the skill folder stays the skill's alone"
    );
    assert!(
        d.join(".skill-evolve/stores/skills")
            .join(SKILL)
            .join("SKILL.md")
            .is_dir(),
        "the adoption's history is in the project's store"
    );
}
