//! `rewrite_from_suggestions`: whole-document rewrite, skill branch B.

use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmProvider};

use serde_json::Value;

use crate::prompts::EvolvePrompts;
use crate::replies::RewriteReply;

/// What [`rewrite_from_suggestions`] produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    /// The rewritten document, or why there is none.
    pub outcome: Result<String, String>,
    /// LLM calls made (always 1).
    pub llm_calls: u32,
}

/// Rewrites `document` following `suggestions` in one call.
///
/// The `evolve_rewrite` template gets `{{document}}`, `{{suggestions}}`
/// (pretty JSON) and `{{max_chars}}` (the document's length in characters)
/// and must answer `{"rewritten": "<the whole new document>"}`. The rewrite
/// is declined — `outcome` is `Err(reason)` — when the reply is not a JSON
/// object, `rewritten` is missing, not a string or blank, or the rewrite is
/// longer than the original (in characters): the reference implementation's rule that a
/// rewrite may only tighten a document. A content failure of the provider
/// declines too; transient and permanent provider errors propagate (the
/// reference implementation caught only `ValueError`, `KeyError`, `TypeError`, `AttributeError`).
pub async fn rewrite_from_suggestions(
    llm: &dyn LlmProvider,
    prompts: &EvolvePrompts,
    document: &str,
    suggestions: &[Value],
) -> Result<Rewrite, LlmError> {
    let listed = serde_json::to_string_pretty(suggestions).unwrap_or_default();
    let original_chars = document.chars().count();
    let max_chars = original_chars.to_string();
    let prompt = prompts.render(
        &prompts.evolve_rewrite,
        &[
            ("document", document),
            ("suggestions", &listed),
            ("max_chars", &max_chars),
        ],
    );
    const TAG: &str = "evolve.rewrite";
    let options = ChatOptions::json().with_tag(TAG);
    let declined = |reason: String| {
        Ok(Rewrite {
            outcome: Err(reason),
            llm_calls: 1,
        })
    };
    let reply = match llm.chat(&[ChatMessage::user(prompt)], &options).await {
        Ok(reply) => reply,
        Err(error) if error.is_content() => {
            return declined(format!("the rewrite call failed: {error}"));
        }
        Err(error) => return Err(error),
    };
    let text = match RewriteReply::read(TAG, &reply.content) {
        Ok(read) if read.rewritten.trim().is_empty() => {
            return declined("the rewrite is blank".to_owned());
        }
        Ok(read) => read.rewritten,
        Err(unreadable) => return declined(unreadable.to_string()),
    };
    let chars = text.chars().count();
    if chars > original_chars {
        return declined(format!(
            "the rewrite has {chars} characters, more than the original's {original_chars}"
        ));
    }
    Ok(Rewrite {
        outcome: Ok(text),
        llm_calls: 1,
    })
}
