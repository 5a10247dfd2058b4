//! A scripted provider answering a chat through `&dyn LlmProvider`.
//!
//! Run with `cargo run -p evolution-testkit --example scripted_chat`.
#![expect(clippy::print_stdout, reason = "an example prints what it shows")]

use evolution_testkit::ScriptedLlm;
use evolution_types::{ChatMessage, ChatOptions, LlmProvider};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scripted = ScriptedLlm::with_replies([
        r#"{"edits": [{"op": "append", "content": "Check the timestamp first."}]}"#,
    ]);
    let provider: &dyn LlmProvider = &scripted;

    let messages = [
        ChatMessage::system("You improve skill documents."),
        ChatMessage::user("Propose one edit for skill.md."),
    ];
    let reply = provider
        .chat(&messages, &ChatOptions::json().with_tag("example"))
        .await?;

    println!("provider: {} / model: {}", reply.provider, reply.model);
    println!("reply: {}", reply.content);
    let recorded = scripted.requests();
    println!(
        "the provider saw {} call(s); last user message: {:?}",
        recorded.len(),
        recorded[0].last_user()
    );
    Ok(())
}
