//! Integration tests of `evolution-llm-cassette` through its public API: the
//! cassette and the journal over a scripted provider (record, replay offline,
//! a reopened journal that answers from disk).

use evolution_llm_cassette::{
    CassetteError, CassetteMode, LLM_JOURNAL_FILE, LlmJournal, Recorder, cassette_key,
};
use evolution_testkit::ScriptedLlm;
use evolution_types::{ChatMessage, ChatOptions, LlmErrorKind, LlmProvider};

fn ask(text: &str) -> Vec<ChatMessage> {
    vec![ChatMessage::user(text)]
}

#[tokio::test]
async fn a_recorded_cassette_replays_without_the_provider() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.cassette.jsonl");
    let live = ScriptedLlm::with_replies(["four"]);
    let recorder = Recorder::open(&live, &path, CassetteMode::Record, "m")
        .await
        .unwrap();
    let opts = ChatOptions::default();
    assert_eq!(
        recorder.chat(&ask("2+2?"), &opts).await.unwrap().content,
        "four"
    );
    assert_eq!(live.call_count(), 1);

    // Replay: the provider has no replies left and is never asked.
    let dead = ScriptedLlm::new();
    let replay = Recorder::open(&dead, &path, CassetteMode::Replay, "m")
        .await
        .unwrap();
    let answer = replay.chat(&ask("2+2?"), &opts).await.unwrap();
    assert_eq!(answer.content, "four");
    assert!(answer.cache_hit);
    assert_eq!(dead.call_count(), 0);

    // A request the cassette does not hold is a miss, named by its key.
    let miss = replay.chat(&ask("2+3?"), &opts).await.unwrap_err();
    assert_eq!(miss.kind(), LlmErrorKind::Other, "{miss:?}");
    assert!(
        miss.message()
            .contains(&cassette_key("m", &ask("2+3?"), &opts)),
        "{miss:?}"
    );
}

#[tokio::test]
async fn a_reopened_journal_answers_finished_calls_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let live = ScriptedLlm::with_replies(["one"]);
    let journal = LlmJournal::open(&live, dir.path(), "m").await.unwrap();
    assert_eq!(journal.path(), dir.path().join(LLM_JOURNAL_FILE));
    let opts = ChatOptions::default();
    assert_eq!(
        journal.chat(&ask("first"), &opts).await.unwrap().content,
        "one"
    );
    drop(journal);

    let again = ScriptedLlm::with_replies(["two"]);
    let journal = LlmJournal::open(&again, dir.path(), "m").await.unwrap();
    let answer = journal.chat(&ask("first"), &opts).await.unwrap();
    assert_eq!(answer.content, "one");
    assert!(answer.cache_hit);
    assert_eq!(again.call_count(), 0);
    assert_eq!(
        journal.chat(&ask("second"), &opts).await.unwrap().content,
        "two"
    );
    assert_eq!(again.call_count(), 1);
}

#[tokio::test]
async fn a_missing_cassette_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.jsonl");
    let opened = Recorder::open(ScriptedLlm::new(), &missing, CassetteMode::Replay, "m").await;
    assert!(
        matches!(opened, Err(CassetteError::Io { .. })),
        "{opened:?}"
    );
}
