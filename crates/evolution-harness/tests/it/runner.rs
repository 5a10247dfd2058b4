use evolution_harness::{
    AgentReply, AgentRunner, InProcessRunner, RunnerError, Scoring, Workspace,
};
use evolution_testkit::fixtures::question;
use serde_json::json;

fn reply(prediction: &str) -> AgentReply {
    AgentReply {
        prediction: prediction.to_owned(),
        ..AgentReply::default()
    }
}

#[tokio::test]
async fn in_process_runner_scores_by_exact_match_and_keeps_order() {
    let runner = InProcessRunner::new(|ws: &Workspace, q: &evolution_types::GeneratedQuestion| {
        if q.question_id == "q2" {
            return Err("tool server down".to_owned());
        }
        let answer = ws.skills.get("a.md").map_or("B", |_| " a ");
        Ok(AgentReply {
            correct: Some(false),
            ..reply(answer)
        })
    });
    let ws = Workspace::new("v1").with_skill("a.md", "rule");
    let questions = vec![
        question("q1", "t", "v"),
        question("q2", "t", "v"),
        question("q3", "t", "v"),
    ];
    let out = runner.run("r1", &ws, &questions).await.unwrap();
    let ids: Vec<_> = out
        .iter()
        .map(|o| o.prediction.question_id.as_str())
        .collect();
    assert_eq!(ids, ["q1", "q2", "q3"]);
    // " a " matches the reference "A" after trim and case folding; the agent's
    // own `correct: false` is ignored under exact match.
    assert!(out[0].prediction.correct);
    assert_eq!(out[0].prediction.stop_reason, "submit");
    assert_eq!(out[0].prediction.run_id, "r1");
    assert!(out[1].is_infra_error());
    assert_eq!(out[1].prediction.stop_reason, "error");
    assert_eq!(out[1].prediction.error.as_deref(), Some("tool server down"));
    assert!(!out[1].prediction.correct);
}

#[tokio::test]
async fn agent_reported_scoring_trusts_the_agent_and_falls_back() {
    let runner = InProcessRunner::new(|_: &Workspace, q: &evolution_types::GeneratedQuestion| {
        Ok(AgentReply {
            correct: (q.question_id == "q1").then_some(true),
            ..reply("A")
        })
    })
    .with_scoring(Scoring::AgentReported);
    let qs = vec![question("q1", "t", "v"), question("q2", "t", "v")];
    let mut wrong = question("q3", "t", "v");
    wrong.answer = "Z".into();
    let qs = [qs, vec![wrong]].concat();
    let out = runner.run("r", &Workspace::new("v"), &qs).await.unwrap();
    let correct: Vec<_> = out.iter().map(|o| o.prediction.correct).collect();
    assert_eq!(correct, [true, true, false]);
}

#[tokio::test]
async fn inline_steps_are_numbered_and_malformed_steps_are_infra() {
    let runner = InProcessRunner::new(|_: &Workspace, q: &evolution_types::GeneratedQuestion| {
        let steps = if q.question_id == "bad" {
            vec![
                json!({"tool_name": 7})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ]
        } else {
            vec![
                json!({"tool_name": "search", "thought": "look"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                json!({"tool_name": "submit", "custom": 1})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ]
        };
        Ok(AgentReply {
            steps,
            ..reply("A")
        })
    });
    let qs = vec![question("ok", "t", "v"), question("bad", "t", "v")];
    let out = runner.run("r", &Workspace::new("v"), &qs).await.unwrap();
    let trace = &out[0].trace;
    assert_eq!(trace.len(), 2);
    assert_eq!((trace[0].step, trace[1].step), (1, 2));
    assert_eq!(trace[1].question_id, "ok");
    assert_eq!(trace[1].extra.get("custom"), Some(&json!(1)));
    assert_eq!(out[0].prediction.steps_used, 2);
    assert!(out[1].is_infra_error());
    assert!(
        out[1]
            .prediction
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("trace step 1")
    );
}

#[tokio::test]
async fn an_agent_reported_error_is_infra() {
    let runner = InProcessRunner::new(|_: &Workspace, _: &evolution_types::GeneratedQuestion| {
        Ok(AgentReply {
            error: Some("rate limited".into()),
            ..reply("A")
        })
    });
    let out = runner
        .run("r", &Workspace::new("v"), &[question("q", "t", "v")])
        .await
        .unwrap();
    assert!(out[0].is_infra_error());
    assert!(!out[0].prediction.correct);
    assert_eq!(out[0].prediction.stop_reason, "error");
}

#[tokio::test]
async fn duplicate_question_ids_are_refused() {
    let runner = InProcessRunner::new(|_: &Workspace, _: &evolution_types::GeneratedQuestion| {
        Ok(reply("A"))
    });
    let qs = vec![question("q", "t", "v"), question("q", "t", "v")];
    let err = runner
        .run("r", &Workspace::new("v"), &qs)
        .await
        .unwrap_err();
    assert!(matches!(err, RunnerError::DuplicateQuestion(id) if id == "q"));
}

#[tokio::test]
async fn a_check_replaces_the_exact_match_and_a_rubric_passes_nothing() {
    let runner = InProcessRunner::new(|_: &Workspace, _: &evolution_types::GeneratedQuestion| {
        Ok(reply(r#"{"result": {"count": 3}}"#))
    });
    let with_check = |id: &str, check: serde_json::Value| {
        let mut q = question(id, "t", "v");
        q.answer = "not the prediction".into();
        q.extra.insert("check".into(), check);
        q
    };
    let qs = [
        with_check(
            "field",
            json!({"kind": "json_field", "path": "result.count", "equals": 3}),
        ),
        with_check(
            "other",
            json!({"kind": "json_field", "path": "result.count", "equals": 4}),
        ),
        with_check("rubric", json!({"kind": "rubric", "text": "counts well"})),
    ];
    let out = runner.run("r", &Workspace::new("v"), &qs).await.unwrap();
    let correct: Vec<_> = out.iter().map(|o| o.prediction.correct).collect();
    assert_eq!(correct, [true, false, false]);
    // A question with an answer records it; the check scored it all the same.
    assert_eq!(out[0].prediction.answer, "not the prediction");
    let mut bare = question("bare", "t", "v");
    bare.answer = String::new();
    bare.extra.insert(
        "check".into(),
        json!({"kind": "regex", "pattern": "count\": 3"}),
    );
    let out = runner
        .run("r", &Workspace::new("v"), &[bare])
        .await
        .unwrap();
    assert!(out[0].prediction.correct);
    assert_eq!(
        out[0].prediction.answer,
        "an answer matching the pattern \"count\\\": 3\""
    );
}

#[tokio::test]
async fn a_users_correction_reaches_the_reference_answer_verbatim() {
    let runner = InProcessRunner::new(|_: &Workspace, _: &evolution_types::GeneratedQuestion| {
        Ok(reply("Ran alembic revision --autogenerate."))
    });
    let said = "no, that's wrong, use `make migration …`: it keeps our dated rev-id";
    let mut checked = question("checked", "t", "v");
    checked.answer = String::new();
    checked.extra.insert(
        "check".into(),
        json!({"kind": "contains", "value": "make migration"}),
    );
    checked
        .extra
        .insert("correction".into(), json!({"said": said, "answer": "old"}));
    let mut bare = question("bare", "t", "v");
    bare.answer = String::new();
    bare.extra
        .insert("correction".into(), json!({"said": said}));
    let mut empty = question("empty", "t", "v");
    empty.answer = "42".into();
    empty
        .extra
        .insert("correction".into(), json!({"said": "  "}));
    let out = runner
        .run("r", &Workspace::new("v"), &[checked, bare, empty])
        .await
        .unwrap();
    assert!(!out[0].prediction.correct);
    assert_eq!(
        out[0].prediction.answer,
        format!(
            "an answer containing \"make migration\" (a user corrected an earlier answer to \
             this question: \"{said}\")"
        )
    );
    assert_eq!(
        out[1].prediction.answer,
        format!("an answer that heeds a user's correction of an earlier one: \"{said}\"")
    );
    assert_eq!(out[2].prediction.answer, "42");
}

#[tokio::test]
async fn a_tool_called_check_reads_the_steps_the_agent_reported() {
    // The agent answers the same text every time; only its steps differ.
    let runner = InProcessRunner::new(|_: &Workspace, q: &evolution_types::GeneratedQuestion| {
        let tool = if q.question_id == "looked" {
            "lookup_order"
        } else {
            "guess"
        };
        let step = json!({"tool_name": tool})
            .as_object()
            .cloned()
            .unwrap_or_default();
        Ok(AgentReply {
            steps: vec![step],
            ..reply("## Answer\nshipped")
        })
    });
    let with_check = |id: &str| {
        let mut q = question(id, "t", "v");
        q.extra.insert(
            "check".into(),
            json!({"kind": "all_of", "checks": [
                {"kind": "tool_called", "tool": "lookup_order"},
                {"kind": "section_contains", "heading": "Answer", "value": "shipped"},
            ]}),
        );
        q
    };
    let qs = [with_check("looked"), with_check("guessed")];
    let out = runner.run("r", &Workspace::new("v"), &qs).await.unwrap();
    let correct: Vec<_> = out.iter().map(|o| o.prediction.correct).collect();
    assert_eq!(correct, [true, false]);
}
