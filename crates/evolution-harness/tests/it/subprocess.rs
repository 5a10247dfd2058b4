use std::time::{Duration, Instant};

use evolution_harness::{
    AgentRunner, InheritedEnv, OutputLimits, ProcessMode, QuestionOutcome, RunnerError,
    SubprocessConfig, SubprocessRunner, Workspace,
};
use evolution_testkit::fixtures::question;
use evolution_types::GeneratedQuestion;

fn agent(mode: ProcessMode, concurrency: usize) -> SubprocessRunner {
    let mut config = SubprocessConfig::new(env!("CARGO_BIN_EXE_rule-agent"));
    config.mode = mode;
    config.concurrency = concurrency;
    config.question_timeout = Duration::from_secs(20);
    SubprocessRunner::new(config).unwrap()
}

fn q(id: &str, task_type: &str, text: &str, answer: &str) -> GeneratedQuestion {
    let mut q = question(id, task_type, "v");
    q.question = text.into();
    q.answer = answer.into();
    q
}

fn workspace() -> Workspace {
    Workspace::new("v7")
        .with_skill("counting.md", "# Counting\nRULE counting => 3\n")
        .with_skill("default-strategy.md", "RULE color => red\n")
        .with_prompt("system.md", "You are an agent.")
}

fn pid(outcome: &QuestionOutcome) -> u64 {
    outcome
        .prediction
        .extra
        .get("pid")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

#[tokio::test]
async fn answers_from_the_materialized_workspace_with_streamed_steps() {
    let runner = agent(ProcessMode::PerQuestion, 1);
    let qs = vec![
        q("q1", "counting", "how many?", "3"),
        q("q2", "color", "which color?", "blue"),
        q("q3", "shape", "which shape?", "round"),
    ];
    let out = runner.run("run-a", &workspace(), &qs).await.unwrap();
    let answers: Vec<_> = out
        .iter()
        .map(|o| (o.prediction.prediction.as_str(), o.prediction.correct))
        .collect();
    assert_eq!(answers, [("3", true), ("red", false), ("unknown", false)]);
    let first = &out[0];
    assert_eq!(first.trace.len(), 1);
    assert_eq!(first.trace[0].tool_name, "read_skill");
    assert_eq!(
        first.trace[0].tool_input,
        serde_json::json!({"file": "counting.md"})
    );
    assert_eq!(first.trace[0].step, 1);
    assert_eq!(first.trace[0].run_id, "run-a");
    assert_eq!(first.prediction.steps_used, 1);
    assert_eq!(first.prediction.max_steps, 5);
    assert_eq!(first.prediction.answer_confidence, Some(0.9));
    assert!(out.iter().all(|o| !o.is_infra_error()));
    // One process per question.
    assert_ne!(pid(&out[0]), pid(&out[1]));
}

#[tokio::test]
async fn crash_hang_and_garbage_are_infra_errors_for_that_question_only() {
    let mut config = SubprocessConfig::new(env!("CARGO_BIN_EXE_rule-agent"));
    config.question_timeout = Duration::from_millis(1500);
    config.concurrency = 2;
    let runner = SubprocessRunner::new(config).unwrap();
    let qs = vec![
        q("ok1", "counting", "how many?", "3"),
        q("crash", "counting", "crash", "3"),
        q("hang", "counting", "hang", "3"),
        q("garbage", "counting", "garbage", "3"),
        q("wrong", "counting", "wrong-id", "3"),
        q("ok2", "counting", "how many?", "3"),
    ];
    let started = Instant::now();
    let out = runner.run("run-b", &workspace(), &qs).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the hung agent was not killed"
    );
    let infra: Vec<_> = out.iter().map(QuestionOutcome::is_infra_error).collect();
    assert_eq!(infra, [false, true, true, true, true, false]);
    let error = |i: usize| out[i].prediction.error.clone().unwrap_or_default();
    assert!(
        error(1).contains("ended before answering") && error(1).contains("boom"),
        "{}",
        error(1)
    );
    assert!(error(2).contains("no answer within"), "{}", error(2));
    assert!(
        error(3).contains("garbage output line: this is not json"),
        "{}",
        error(3)
    );
    assert!(error(4).contains("someone-else"), "{}", error(4));
    assert!(out[5].prediction.correct);
    assert!(out.iter().all(|o| o.prediction.stop_reason
        == if o.is_infra_error() {
            "error"
        } else {
            "submit"
        }));
}

#[tokio::test]
async fn a_worker_serves_many_questions_and_is_replaced_after_a_failure() {
    let runner = agent(ProcessMode::Worker, 1);
    let qs = vec![
        q("a", "counting", "how many?", "3"),
        q("b", "counting", "how many?", "3"),
        q("boom", "counting", "crash", "3"),
        q("c", "counting", "how many?", "3"),
        q("d", "counting", "how many?", "3"),
    ];
    let out = runner.run("run-c", &workspace(), &qs).await.unwrap();
    assert_eq!(pid(&out[0]), pid(&out[1]));
    assert!(out[2].is_infra_error());
    assert_eq!(pid(&out[3]), pid(&out[4]));
    assert_ne!(pid(&out[1]), pid(&out[3]));
    assert!([0, 1, 3, 4].iter().all(|&i| out[i].prediction.correct));
}

#[tokio::test]
async fn a_missing_program_makes_every_question_infra() {
    let runner =
        SubprocessRunner::new(SubprocessConfig::new("/nonexistent/agent-program")).unwrap();
    let out = runner
        .run("r", &workspace(), &[q("a", "t", "x", "y")])
        .await
        .unwrap();
    assert!(out[0].is_infra_error());
    assert!(
        out[0]
            .prediction
            .error
            .clone()
            .unwrap_or_default()
            .contains("could not start")
    );
}

#[tokio::test]
async fn bad_document_names_and_configs_are_errors() {
    let runner = agent(ProcessMode::PerQuestion, 1);
    let ws = Workspace::new("v").with_skill("../escape.md", "x");
    let err = runner
        .run("r", &ws, &[q("a", "t", "x", "y")])
        .await
        .unwrap_err();
    assert!(
        matches!(err, RunnerError::InvalidDocumentName { ref name, .. } if name == "../escape.md"),
        "{err}"
    );
    let mut config = SubprocessConfig::new("x");
    config.concurrency = 0;
    assert!(matches!(
        SubprocessRunner::new(config),
        Err(RunnerError::Config { .. })
    ));
    let mut config = SubprocessConfig::new("x");
    config.question_timeout = Duration::ZERO;
    assert!(matches!(
        SubprocessRunner::new(config),
        Err(RunnerError::Config { .. })
    ));
}

#[tokio::test]
async fn overlong_and_non_utf8_lines_are_garbage() {
    let runner = agent(ProcessMode::Worker, 1);
    let qs = vec![
        q("flood", "counting", "flood", "3"),
        q("binary", "counting", "binary", "3"),
        q("ok", "counting", "how many?", "3"),
    ];
    let out = runner.run("run-d", &workspace(), &qs).await.unwrap();
    let error = |i: usize| out[i].prediction.error.clone().unwrap_or_default();
    assert!(
        error(0).contains("longer than 16777216 bytes"),
        "{}",
        error(0)
    );
    assert!(error(1).contains("not UTF-8"), "{}", error(1));
    assert!(out[2].prediction.correct);
}

#[tokio::test]
async fn the_agent_never_sees_the_reference_answer() {
    let runner = agent(ProcessMode::PerQuestion, 1);
    let out = runner
        .run(
            "run-e",
            &workspace(),
            &[q("p", "counting", "peek", "secret")],
        )
        .await
        .unwrap();
    assert_eq!(out[0].prediction.prediction, "none");
    assert_eq!(out[0].prediction.answer, "secret");
    assert!(!out[0].prediction.correct);
}

#[tokio::test]
async fn the_agent_never_sees_the_check_which_scores_its_answer() {
    let runner = agent(ProcessMode::PerQuestion, 1);
    let with_check = |id: &str, text: &str, check: serde_json::Value| {
        let mut question = q(id, "counting", text, "");
        question.extra.insert("check".into(), check);
        question
    };
    let questions = [
        // `peek` answers with the check's JSON if the request carried it.
        with_check(
            "p",
            "peek",
            serde_json::json!({"kind": "regex", "pattern": "^none$"}),
        ),
        with_check(
            "c3",
            "how many?",
            serde_json::json!({"kind": "contains", "value": "3"}),
        ),
        with_check(
            "c4",
            "how many?",
            serde_json::json!({"kind": "contains", "value": "4"}),
        ),
    ];
    let out = runner
        .run("run-check", &workspace(), &questions)
        .await
        .unwrap();
    let scored: Vec<_> = out
        .iter()
        .map(|o| (o.prediction.prediction.as_str(), o.prediction.correct))
        .collect();
    assert_eq!(scored, [("none", true), ("3", true), ("3", false)]);
}

#[tokio::test]
async fn workers_stay_alive_across_runs_until_shutdown() {
    let runner = agent(ProcessMode::Worker, 2);
    let qs = |tag: &str| {
        (0..4)
            .map(|i| q(&format!("{tag}{i}"), "counting", "how many?", "3"))
            .collect::<Vec<_>>()
    };
    let first = runner.run("run-w1", &workspace(), &qs("a")).await.unwrap();
    let pids = |out: &[QuestionOutcome]| {
        out.iter()
            .map(pid)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let workers = pids(&first).len();
    assert!((1..=2).contains(&workers));
    assert_eq!(runner.idle_workers(), workers);
    let second = runner.run("run-w2", &workspace(), &qs("b")).await.unwrap();
    assert!(first.iter().chain(&second).all(|o| o.prediction.correct));
    assert!(
        pids(&second).is_subset(&pids(&first)),
        "the second run spawned new workers"
    );
    // A failure replaces its worker; the other idle one stays.
    let boom = runner
        .run(
            "run-w3",
            &workspace(),
            &[q("boom", "counting", "crash", "3")],
        )
        .await
        .unwrap();
    assert!(boom[0].is_infra_error());
    assert_eq!(runner.idle_workers(), workers - 1);
    runner.shutdown().await;
    assert_eq!(runner.idle_workers(), 0);
    let after = runner.run("run-w4", &workspace(), &qs("c")).await.unwrap();
    assert!(pids(&after).is_disjoint(&pids(&second)));
}

/// Whether `pid` is gone (or a zombie waiting for a parent that is not us to reap it).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_agent_is_stopped_with_the_processes_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("child.pid");
    let mut config = SubprocessConfig::new("/bin/sh");
    config.args = vec![
        "-c".into(),
        format!("sleep 60 & echo $! > '{}'; sleep 60", pid_file.display()),
    ];
    config.question_timeout = Duration::from_millis(800);
    let runner = SubprocessRunner::new(config).unwrap();
    let out = runner
        .run(
            "run-g",
            &workspace(),
            &[q("slow", "counting", "how many?", "3")],
        )
        .await
        .unwrap();
    assert!(out[0].is_infra_error());
    runner.shutdown().await;
    let child: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(child) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone(child), "the agent's child {child} outlived it");
}

/// Waits up to 5 seconds for the pid written in `pid_file` to be gone; whether it is.
async fn pid_in_file_gone(pid_file: &std::path::Path) -> (u32, bool) {
    let pid: u32 = std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (pid, gone(pid))
}

/// A descendant that left the agent's process group and session (`setsid`) is stopped with
/// the agent all the same: it still carries the agent's token in its environment.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_agent_is_stopped_with_a_grandchild_in_its_own_session() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut config = SubprocessConfig::new("/bin/sh");
    config.args = vec![
        "-c".into(),
        format!(
            "setsid sleep 300 & echo $! > '{}'; sleep 60",
            pid_file.display()
        ),
    ];
    config.question_timeout = Duration::from_millis(800);
    let runner = SubprocessRunner::new(config).unwrap();
    let out = runner
        .run(
            "run-s",
            &workspace(),
            &[q("slow", "counting", "how many?", "3")],
        )
        .await
        .unwrap();
    assert!(out[0].is_infra_error());
    let (grandchild, gone) = pid_in_file_gone(&pid_file).await;
    assert!(gone, "the agent's grandchild {grandchild} outlived it");
}

/// An agent that answers and exits leaves nothing behind either, even a daemon it started in
/// a session of its own; and it sees the token in its environment.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_agents_daemon_in_its_own_session_is_stopped_too() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("daemon.pid");
    let runner = shell_agent(
        &format!(
            "(setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '{}'); \
             printf '{{\"type\":\"result\",\"prediction\":\"%s\"}}\n' \"${}\"",
            pid_file.display(),
            evolution_harness::AGENT_TREE_VAR
        ),
        OutputLimits::default(),
    );
    let out = runner
        .run(
            "run-d",
            &workspace(),
            &[q("d", "counting", "how many?", "3")],
        )
        .await
        .unwrap();
    assert!(!out[0].is_infra_error(), "{:?}", out[0]);
    assert!(!out[0].prediction.prediction.is_empty(), "{:?}", out[0]);
    let (daemon, gone) = pid_in_file_gone(&pid_file).await;
    assert!(gone, "the agent's daemon {daemon} outlived it");
}

/// An agent that answers with the values of three variables of its environment.
fn env_agent(inherit_env: InheritedEnv) -> SubprocessRunner {
    let mut config = SubprocessConfig::new("/bin/sh");
    config.args = vec![
        "-c".into(),
        r#"read -r line; printf '{"type":"result","prediction":"%s|%s|%s"}\n' "${HOME-unset}" "${CARGO_MANIFEST_DIR-unset}" "${EVOLUTION_TEST_FIXED-unset}""#.into(),
    ];
    config.env = [("EVOLUTION_TEST_FIXED".to_owned(), "fixed".to_owned())].into();
    config.inherit_env = inherit_env;
    SubprocessRunner::new(config).unwrap()
}

/// A shell agent running `script` for each question (after reading the
/// request), within `limits`.
fn shell_agent(script: &str, limits: OutputLimits) -> SubprocessRunner {
    let mut config = SubprocessConfig::new("/bin/sh");
    config.args = vec!["-c".into(), format!("read -r request\n{script}")];
    config.question_timeout = Duration::from_secs(60);
    config.limits = limits;
    SubprocessRunner::new(config).unwrap()
}

#[cfg(unix)]
#[tokio::test]
async fn the_agent_inherits_what_the_config_lets_through_plus_its_own_variables() {
    // CARGO_MANIFEST_DIR (set by the test runner) stands in for a secret: a variable this
    // process has and the agent may not get.
    let home = std::env::var("HOME").unwrap();
    let path = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect();
    let cases = [
        (InheritedEnv::default(), format!("{home}|{path}|fixed")),
        (
            InheritedEnv::AllExcept(names(&["CARGO_MANIFEST_DIR"])),
            format!("{home}|unset|fixed"),
        ),
        (
            InheritedEnv::Only(names(&["HOME", "NOT_SET_ANYWHERE"])),
            format!("{home}|unset|fixed"),
        ),
        (
            InheritedEnv::Only(names(&["CARGO_MANIFEST_DIR"])),
            format!("unset|{path}|fixed"),
        ),
    ];
    for (inherit, expected) in cases {
        let runner = env_agent(inherit.clone());
        let out = runner
            .run("run-env", &workspace(), &[q("e", "env", "?", "")])
            .await
            .unwrap();
        assert_eq!(out[0].prediction.prediction, expected, "{inherit:?}");
    }
}

#[cfg(unix)]
#[tokio::test]
async fn an_agent_flooding_its_output_is_stopped_at_the_byte_limit() {
    // Step lines without end, each 1 KiB of raw content: only the limit stops it.
    let step = format!(r#"{{"type":"step","raw_content":"{}"}}"#, "x".repeat(1024));
    let limits = OutputLimits {
        max_output_bytes: 256 * 1024,
        ..OutputLimits::default()
    };
    let runner = shell_agent(&format!("yes '{step}'"), limits);
    let out = runner
        .run("run-f", &workspace(), &[q("flood", "counting", "x", "3")])
        .await
        .unwrap();
    assert!(out[0].is_infra_error());
    assert!(out[0].trace.is_empty());
    assert_eq!(
        out[0].prediction.error.as_deref(),
        Some(
            "the agent wrote more than 262144 bytes of output for one question (the limit); it \
             was stopped"
        )
    );
    // One line longer than what is left of the budget is refused before it is read whole.
    let long = r#"printf '{"type":"step","raw_content":"'
head -c 307200 /dev/zero | tr '\0' y
echo '"}'"#;
    let runner = shell_agent(long, limits);
    let out = runner
        .run("run-f", &workspace(), &[q("long", "counting", "x", "3")])
        .await
        .unwrap();
    assert!(
        out[0]
            .prediction
            .error
            .as_deref()
            .is_some_and(|e| e.contains("more than 262144 bytes")),
        "{:?}",
        out[0].prediction
    );
}

#[cfg(unix)]
#[tokio::test]
async fn too_many_steps_are_an_infra_error_streamed_or_inline() {
    let limits = OutputLimits {
        max_steps: 5,
        ..OutputLimits::default()
    };
    let expected = "the agent wrote more than 5 trace steps for one question (the limit); it was \
                    stopped";
    // Streamed: reading stops at the sixth step, though the agent would write more.
    let streamed = r#"while true; do echo '{"type":"step","tool_name":"t"}'; done"#;
    let out = shell_agent(streamed, limits)
        .run("run-s", &workspace(), &[q("s", "counting", "x", "3")])
        .await
        .unwrap();
    assert_eq!(out[0].prediction.error.as_deref(), Some(expected));
    // Inline in the result line, after three streamed ones.
    let inline = r#"for i in 1 2 3; do echo '{"type":"step"}'; done
echo '{"type":"result","prediction":"3","steps":[{},{},{}]}'"#;
    let out = shell_agent(inline, limits)
        .run("run-s", &workspace(), &[q("s", "counting", "x", "3")])
        .await
        .unwrap();
    assert_eq!(out[0].prediction.error.as_deref(), Some(expected));
    // Five in all are within the limit.
    let five = r#"for i in 1 2 3; do echo '{"type":"step"}'; done
echo '{"type":"result","prediction":"3","steps":[{},{}]}'"#;
    let out = shell_agent(five, limits)
        .run("run-s", &workspace(), &[q("s", "counting", "x", "3")])
        .await
        .unwrap();
    assert!(!out[0].is_infra_error(), "{:?}", out[0].prediction);
    assert_eq!(out[0].trace.len(), 5);
}

#[cfg(unix)]
#[tokio::test]
async fn long_step_fields_are_stored_cut_with_a_marker() {
    let limits = OutputLimits {
        max_field_chars: 10,
        ..OutputLimits::default()
    };
    let raw = "é".repeat(25);
    let script = format!(
        r#"echo '{{"type":"step","raw_content":"{raw}","tool_output":"short","thought":"{raw}"}}'
echo '{{"type":"result","prediction":"3"}}'"#
    );
    let out = shell_agent(&script, limits)
        .run("run-c", &workspace(), &[q("c", "counting", "x", "3")])
        .await
        .unwrap();
    assert!(out[0].prediction.correct, "{:?}", out[0].prediction);
    let step = &out[0].trace[0];
    assert_eq!(
        step.raw_content,
        format!("{}…[15 more chars]", "é".repeat(10))
    );
    assert_eq!(step.tool_output, "short");
    // Only the two fields that grow with the agent's output are cut.
    assert_eq!(step.thought, raw);
}
