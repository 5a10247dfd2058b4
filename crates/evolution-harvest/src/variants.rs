//! Variants of a reviewed task: an LLM rewrites the question so that the task's own check
//! still judges it, and each variant becomes a task of its own, unreviewed, marked as a variant
//! of its source, for the person who reviewed the source to review in turn.
//!
//! The prompt is the built-in template [`TASK_VARIANTS`] (`prompts/task_variants.md`). The
//! reply is untrusted: it is read leniently ([`read_variants`]), at most the number asked for is
//! kept, a variant longer than [`MAX_VARIANT_CHARS`] characters, empty, holding a control
//! character other than a line break or a tab, or equal to the source or to another variant
//! (ignoring case and spacing) is left out and counted, never cut or repaired. A variant's text
//! is only ever a question: it names no file and chooses no path; the task it becomes is
//! written as JSON, and whoever prints it escapes it.
//!
//! ```
//! use evolution_harvest::variants::{read_variants, variant_lines};
//! use serde_json::json;
//!
//! let source = json!({"question_id": "task-refund", "task_type": "support",
//!     "question": "Is ticket 12 refundable?", "check": {"kind": "contains", "value": "yes"},
//!     "reviewed": true});
//! let read = read_variants(r#"{"variants": ["Can ticket 40 be refunded?",
//!     "is ticket 12 refundable?", "Bad\u001b[2J"]}"#, "Is ticket 12 refundable?", 3);
//! assert_eq!(read.variants, ["Can ticket 40 be refunded?"]);
//! assert_eq!(read.left_out, 2);
//! let lines = variant_lines(source.as_object().unwrap(), &read.variants);
//! assert_eq!(lines[0]["question_id"], "task-refund-variant-1");
//! assert_eq!(lines[0]["variant_of"], "task-refund");
//! assert_eq!(lines[0]["reviewed"], false);
//! assert_eq!(lines[0]["check"], json!({"kind": "contains", "value": "yes"}));
//! ```

use evolution_diagnose::json::extract_json_from_response;
use evolution_types::template::{TemplateSpec, render, truncate_chars};
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider};
use serde_json::{Map, Value, json};

/// The built-in prompt: `{{question}}` is the source task's question, `{{check}}` its check
/// (JSON), `{{count}}` how many variants to write, `{{max_chars}}` the longest one kept.
pub const TASK_VARIANTS: TemplateSpec = TemplateSpec {
    name: "task_variants",
    placeholders: &["question", "check", "count", "max_chars"],
    builtin: include_str!("../prompts/task_variants.md"),
};

/// Most variants asked of one task.
pub const MAX_VARIANTS: usize = 20;

/// Longest variant kept, in characters; a longer one is left out.
pub const MAX_VARIANT_CHARS: usize = 2_000;

/// Most characters of a source question shown to the LLM.
pub const MAX_SOURCE_CHARS: usize = 4_000;

/// Most characters of a source task's check shown to the LLM.
pub const MAX_CHECK_CHARS: usize = 2_000;

/// Most characters of a reply read.
pub const MAX_REPLY_CHARS: usize = 100_000;

/// The field that marks a task as a variant, naming its source's `question_id`.
pub const VARIANT_OF: &str = "variant_of";

/// The fields of a source task a variant does not inherit: its id, its question, its review,
/// the sessions it was mined from and a user's correction of one of them (they are the
/// source's, not the variant's).
const NOT_INHERITED: [&str; 6] = [
    "question_id",
    "question",
    "reviewed",
    "sessions",
    "correction",
    VARIANT_OF,
];

/// The request for up to `count` variants (at most [`MAX_VARIANTS`]) of a task asking
/// `question`, checked by `check`.
pub fn variant_messages(question: &str, check: &Value, count: usize) -> Vec<ChatMessage> {
    let question = truncate_chars(question.trim(), MAX_SOURCE_CHARS);
    let check = truncate_chars(&check.to_string(), MAX_CHECK_CHARS);
    let prompt = render(
        TASK_VARIANTS.builtin,
        &[
            ("question", &question),
            ("check", &check),
            ("count", &count.clamp(1, MAX_VARIANTS).to_string()),
            ("max_chars", &MAX_VARIANT_CHARS.to_string()),
        ],
    );
    vec![ChatMessage::user(prompt)]
}

/// The reply's schema: an object with a list of strings.
pub fn reply_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "variants": {
                "type": "array",
                "items": {"type": "string", "maxLength": MAX_VARIANT_CHARS},
                "maxItems": MAX_VARIANTS
            }
        },
        "required": ["variants"],
        "additionalProperties": false
    })
}

/// The options of the call: the reply's schema, a token limit, tagged `tasks.variants`.
pub fn variant_options() -> ChatOptions {
    ChatOptions::json()
        .with_json_schema(reply_schema())
        .with_temperature(0.7)
        .with_max_tokens(4_000)
        .with_tag("tasks.variants")
}

/// What a reply gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadVariants {
    /// The variants kept, in the reply's order.
    pub variants: Vec<String>,
    /// Items of the reply left out: past the count asked, not a string, too long, empty,
    /// holding a control character, or a repeat of the source or of an earlier variant.
    pub left_out: usize,
}

/// Reads a reply leniently: the `variants` list of its JSON object (a bare list too); a reply
/// that holds neither gives nothing. At most `count` (and [`MAX_VARIANTS`]) are kept; see the
/// module's documentation for what is left out.
pub fn read_variants(reply: &str, source: &str, count: usize) -> ReadVariants {
    let reply: String = reply.chars().take(MAX_REPLY_CHARS).collect();
    let items = match extract_json_from_response(&reply) {
        Ok(object) => match object.get("variants") {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        },
        Err(_) => match serde_json::from_str::<Value>(reply.trim()) {
            Ok(Value::Array(items)) => items,
            _ => Vec::new(),
        },
    };
    let limit = count.min(MAX_VARIANTS);
    let mut seen = vec![normalized(source)];
    let mut read = ReadVariants::default();
    for item in items {
        let kept = match item {
            Value::String(text) => {
                let text = text.trim().to_owned();
                let key = normalized(&text);
                let fine = !text.is_empty()
                    && text.chars().count() <= MAX_VARIANT_CHARS
                    && !text
                        .chars()
                        .any(|c| c.is_control() && c != '\n' && c != '\t')
                    && !seen.contains(&key)
                    && read.variants.len() < limit;
                fine.then(|| {
                    seen.push(key);
                    text
                })
            }
            _ => None,
        };
        match kept {
            Some(text) => read.variants.push(text),
            None => read.left_out = read.left_out.saturating_add(1),
        }
    }
    read
}

/// `text` in lower case with runs of whitespace made one space, to compare variants.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The id of the `n`th variant (from 1) of the task `source_id`.
pub fn variant_id(source_id: &str, n: usize) -> String {
    format!("{source_id}-variant-{n}")
}

/// Whether `id` is the id of a variant of `source_id` ([`variant_id`]).
pub fn is_variant_id(source_id: &str, id: &str) -> bool {
    id.strip_prefix(source_id)
        .and_then(|rest| rest.strip_prefix("-variant-"))
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The task lines of `variants` of the task `source`: each a copy of the source (its task
/// type, its check and every other field it has) with its own id ([`variant_id`]), the
/// variant as its question, `"reviewed": false` and `variant_of` naming the source; the
/// source's sessions and correction are not copied. A source without a `question_id` gives
/// none.
pub fn variant_lines(source: &Map<String, Value>, variants: &[String]) -> Vec<Value> {
    let Some(source_id) = source.get("question_id").and_then(Value::as_str) else {
        return Vec::new();
    };
    variants
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let mut line = Map::new();
            line.insert(
                "question_id".to_owned(),
                Value::String(variant_id(source_id, i.saturating_add(1))),
            );
            for (key, value) in source {
                if !NOT_INHERITED.contains(&key.as_str()) {
                    line.insert(key.clone(), value.clone());
                }
            }
            line.insert("question".to_owned(), Value::String(text.clone()));
            line.insert(VARIANT_OF.to_owned(), Value::String(source_id.to_owned()));
            line.insert("reviewed".to_owned(), Value::Bool(false));
            Value::Object(line)
        })
        .collect()
}

/// Asks `llm` for up to `count` variants of the task `source` (a task line: its `question`
/// and `check`). A reply the provider marks unusable (class `Content`) gives none.
///
/// # Errors
/// Any other error of the provider, as it returned it.
pub async fn write_variants(
    llm: &dyn LlmProvider,
    source: &Map<String, Value>,
    count: usize,
) -> Result<ReadVariants, LlmError> {
    let question = source
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let check = source.get("check").cloned().unwrap_or(Value::Null);
    let messages = variant_messages(question, &check, count);
    match llm.chat(&messages, &variant_options()).await {
        Ok(response) => Ok(read_variants(&response.content, question, count)),
        Err(e) if e.is_content() => Ok(ReadVariants::default()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(reply: &str, count: usize, expect: &[&str], left_out: usize) {
        let read = read_variants(reply, "Is ticket 12 refundable?", count);
        assert_eq!(read.variants, expect, "{reply}");
        assert_eq!(read.left_out, left_out, "{reply}");
    }

    #[test]
    fn replies_are_read_within_their_caps() {
        check(r#"{"variants": ["a", "b"]}"#, 5, &["a", "b"], 0);
        check(
            r#"```json
{"variants": ["a"]}
```"#,
            5,
            &["a"],
            0,
        );
        check(r#"["a", "b"]"#, 5, &["a", "b"], 0);
        // Past the count asked.
        check(r#"{"variants": ["a", "b", "c"]}"#, 2, &["a", "b"], 1);
        // Not a string, empty, a repeat, the source itself.
        check(
            r#"{"variants": [1, " ", "a", "A ", "is  ticket 12 REFUNDABLE?"]}"#,
            5,
            &["a"],
            4,
        );
        // A control character other than a line break or a tab.
        check(
            "{\"variants\": [\"one\\u0007\", \"two\\nlines\\tok\"]}",
            5,
            &["two\nlines\tok"],
            1,
        );
        // Too long: left out whole, never cut.
        let long = "x".repeat(MAX_VARIANT_CHARS + 1);
        check(&format!(r#"{{"variants": ["{long}", "b"]}}"#), 5, &["b"], 1);
        // Nothing usable.
        check("no JSON here", 5, &[], 0);
        check(r#"{"verdict": "x"}"#, 5, &[], 0);
        // Never more than the most asked of one task.
        let many: Vec<String> = (0..MAX_VARIANTS + 5).map(|i| format!("v{i}")).collect();
        let reply = json!({ "variants": many }).to_string();
        let read = read_variants(&reply, "s", 1_000);
        assert_eq!(read.variants.len(), MAX_VARIANTS);
        assert_eq!(read.left_out, 5);
    }

    #[test]
    fn a_variant_is_its_sources_task_with_its_own_question() {
        let source = json!({"question_id": "t", "task_type": "qa", "question": "q",
            "check": {"kind": "regex", "value": "^yes"}, "sessions": ["s1"], "reviewed": true,
            "correction": {"said": "no"}, "reference_answer": "yes"});
        let lines = variant_lines(source.as_object().unwrap(), &["q2".into(), "q3".into()]);
        assert_eq!(
            lines[1],
            json!({"question_id": "t-variant-2", "task_type": "qa", "question": "q3",
                "check": {"kind": "regex", "value": "^yes"}, "reference_answer": "yes",
                "variant_of": "t", "reviewed": false})
        );
        assert!(variant_lines(&Map::new(), &["q".into()]).is_empty());
        assert!(is_variant_id("t", "t-variant-12"));
        assert!(!is_variant_id("t", "t-variant-"));
        assert!(!is_variant_id("t", "t-other-1"));
        assert!(!is_variant_id("t", "tt-variant-1"));
    }

    #[test]
    fn the_prompt_holds_the_task_and_its_check_capped() {
        let question = "q".repeat(MAX_SOURCE_CHARS + 10);
        let messages = variant_messages(&question, &json!({"kind": "contains"}), 500);
        let text = &messages[0].content;
        assert!(text.contains("{\"kind\":\"contains\"}"), "{text}");
        assert!(text.contains(&format!("Write up to {MAX_VARIANTS} variants")));
        assert!(!text.contains(&"q".repeat(MAX_SOURCE_CHARS + 1)));
        assert!(!text.contains("{{"), "{text}");
    }

    #[tokio::test]
    async fn an_unusable_reply_gives_no_variant_and_other_errors_are_returned() {
        use async_trait::async_trait;
        use evolution_types::{LlmErrorKind, LlmResponse};

        struct Fixed(Result<String, LlmErrorKind>);
        #[async_trait]
        impl LlmProvider for Fixed {
            async fn chat(
                &self,
                _: &[ChatMessage],
                _: &ChatOptions,
            ) -> Result<LlmResponse, LlmError> {
                match &self.0 {
                    Ok(text) => Ok(LlmResponse {
                        content: text.clone(),
                        ..LlmResponse::default()
                    }),
                    Err(kind) => Err(LlmError::new(*kind, "no")),
                }
            }
        }
        let source = json!({"question_id": "t", "question": "q", "check": null});
        let source = source.as_object().unwrap();
        let read = write_variants(&Fixed(Ok(r#"{"variants": ["q2"]}"#.into())), source, 3)
            .await
            .unwrap();
        assert_eq!(read.variants, ["q2"]);
        let none = write_variants(&Fixed(Err(LlmErrorKind::EmptyContent)), source, 3)
            .await
            .unwrap();
        assert_eq!(none, ReadVariants::default());
        assert!(
            write_variants(&Fixed(Err(LlmErrorKind::Auth)), source, 3)
                .await
                .is_err()
        );
    }
}
