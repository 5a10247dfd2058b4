use evolution_diagnose::rubric::{
    MAX_ANSWER_CHARS, RUBRIC_TAG, RubricCase, RubricVerdict, judge_rubric,
};
use evolution_diagnose::{DiagnosePrompts, JudgeError};
use evolution_testkit::ScriptedLlm;

fn case(prediction: &str) -> RubricCase<'_> {
    RubricCase {
        question_id: "rotate-keys",
        question: "Rotate the staging database credentials",
        rubric: "Names the new secret's location and confirms the old one was revoked.",
        prediction,
    }
}

#[tokio::test]
async fn a_boolean_verdict_passes_or_fails_the_answer() {
    for (reply, passed) in [
        (
            r#"{"passed": true, "reason": "Both requirements met."}"#,
            true,
        ),
        ("```json\n{\"passed\": false}\n```", false),
    ] {
        let llm = ScriptedLlm::with_replies([reply]);
        let verdict = judge_rubric(
            &llm,
            &DiagnosePrompts::builtin(),
            &case("Rotated; old revoked."),
        )
        .await
        .unwrap();
        assert_eq!(verdict.passed, passed, "{reply}");
        let requests = llm.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].options.tag.as_deref(), Some(RUBRIC_TAG));
        let prompt = requests[0].last_user();
        assert!(
            prompt.contains("confirms the old one was revoked"),
            "{prompt}"
        );
        assert!(prompt.contains("Rotated; old revoked."), "{prompt}");
    }
}

#[tokio::test]
async fn an_unreadable_reply_is_retried_then_an_error_not_a_failed_answer() {
    let llm = ScriptedLlm::with_replies(["I think it passes", "{\"passed\": \"yes\"}", "{}"]);
    let err = judge_rubric(&llm, &DiagnosePrompts::builtin(), &case("done"))
        .await
        .unwrap_err();
    match err {
        JudgeError::Unparseable { tag, attempts, .. } => {
            assert_eq!(tag, RUBRIC_TAG);
            assert_eq!(attempts, 3);
        }
        other => panic!("expected an unreadable reply, got {other:?}"),
    }
    assert_eq!(llm.call_count(), 3);

    let llm = ScriptedLlm::with_replies(["no JSON here", r#"{"passed": true}"#]);
    let verdict = judge_rubric(&llm, &DiagnosePrompts::builtin(), &case("done"))
        .await
        .unwrap();
    assert_eq!(
        verdict,
        RubricVerdict {
            passed: true,
            reason: String::new()
        }
    );
}

#[tokio::test]
async fn an_override_template_is_used_and_a_huge_answer_is_cut() {
    let mut prompts = DiagnosePrompts::builtin();
    prompts.rubric = "ID {{question_id}} | {{rubric}} | {{prediction}}".to_owned();
    let huge = "x".repeat(MAX_ANSWER_CHARS * 3);
    let llm = ScriptedLlm::with_replies([r#"{"passed": false, "reason": "no location"}"#]);
    let verdict = judge_rubric(&llm, &prompts, &case(&huge)).await.unwrap();
    assert!(!verdict.passed);
    let prompt = llm.requests()[0].last_user().to_owned();
    assert!(
        prompt.starts_with("ID rotate-keys | Names the new secret"),
        "{prompt}"
    );
    assert!(prompt.chars().count() < MAX_ANSWER_CHARS + 300);
    assert!(prompt.ends_with(&format!("…[{} more chars]", MAX_ANSWER_CHARS * 2)));
}
