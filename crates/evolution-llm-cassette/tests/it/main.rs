//! Integration tests of `evolution-llm-cassette` through its public API: the
//! cassette and the journal over a scripted provider (record, replay offline,
//! a reopened journal that answers from disk).

use evolution_llm_cassette::{
    CassetteError, CassetteMode, LLM_JOURNAL_FILE, LlmJournal, Recorder, cassette_key,
};
use evolution_testkit::ScriptedLlm;
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider};

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
async fn recording_over_a_cassette_keeps_it_until_a_call_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.cassette.jsonl");
    let opts = ChatOptions::default();
    let first = ScriptedLlm::with_replies(["four"]);
    let recorder = Recorder::open(&first, &path, CassetteMode::Record, "m")
        .await
        .unwrap();
    recorder.chat(&ask("2+2?"), &opts).await.unwrap();
    drop(recorder);
    let old = std::fs::read(&path).unwrap();
    assert!(!old.is_empty());

    // Recording again with a provider that fails: the old cassette is
    // untouched, and no temporary file is left beside it.
    let failing = ScriptedLlm::new();
    failing.push_error(LlmError::new(LlmErrorKind::Connection, "down"));
    let recorder = Recorder::open(&failing, &path, CassetteMode::Record, "m")
        .await
        .unwrap();
    recorder.chat(&ask("2+3?"), &opts).await.unwrap_err();
    assert_eq!(std::fs::read(&path).unwrap(), old);
    drop(recorder);
    assert_eq!(std::fs::read(&path).unwrap(), old);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["run.cassette.jsonl"]);

    // The first successful call replaces it; later calls append.
    let live = ScriptedLlm::with_replies(["five", "six"]);
    let recorder = Recorder::open(&live, &path, CassetteMode::Record, "m")
        .await
        .unwrap();
    recorder.chat(&ask("2+3?"), &opts).await.unwrap();
    recorder.chat(&ask("3+3?"), &opts).await.unwrap();
    drop(recorder);
    let replay = Recorder::open(ScriptedLlm::new(), &path, CassetteMode::Replay, "m")
        .await
        .unwrap();
    assert_eq!(
        replay.chat(&ask("2+3?"), &opts).await.unwrap().content,
        "five"
    );
    assert_eq!(
        replay.chat(&ask("3+3?"), &opts).await.unwrap().content,
        "six"
    );
    assert!(replay.chat(&ask("2+2?"), &opts).await.is_err());
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

#[tokio::test]
async fn replay_refuses_a_cassette_whose_last_line_is_cut_short() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.cassette.jsonl");
    let live = ScriptedLlm::with_replies(["four", "five"]);
    let recorder = Recorder::open(&live, &path, CassetteMode::Record, "m")
        .await
        .unwrap();
    let opts = ChatOptions::default();
    recorder.chat(&ask("2+2?"), &opts).await.unwrap();
    recorder.chat(&ask("2+3?"), &opts).await.unwrap();
    drop(recorder);
    // Cut the second line in half, as a kill during its write would.
    let text = std::fs::read_to_string(&path).unwrap();
    let first_end = text.find('\n').unwrap() + 1;
    let cut = first_end + (text.len() - first_end) / 2;
    std::fs::write(&path, &text[..cut]).unwrap();

    let opened = Recorder::open(ScriptedLlm::new(), &path, CassetteMode::Replay, "m").await;
    match opened {
        Err(CassetteError::TornLine { line, .. }) => assert_eq!(line, 2),
        other => panic!("expected a torn-line error, got {other:?}"),
    }
    // Nothing was repaired behind the user's back.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), &text[..cut]);
}
