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

#[tokio::test]
async fn a_miss_says_how_the_request_differs_from_the_closest_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.cassette.jsonl");
    let live = ScriptedLlm::with_replies(["ok", "ok"]);
    let recorder = Recorder::open(&live, &path, CassetteMode::Record, "m")
        .await
        .unwrap();
    let judge = ChatOptions::default().with_tag("judge");
    let reflect = ChatOptions::default().with_tag("reflect");
    let skill = |rule: &str| {
        vec![
            ChatMessage::system("You improve skills."),
            ChatMessage::user(format!("# Skill\n\n1. Read the task.\n2. {rule}\n")),
        ]
    };
    recorder
        .chat(&skill("Answer briefly."), &reflect)
        .await
        .unwrap();
    recorder.chat(&ask("Is it right?"), &judge).await.unwrap();
    drop(recorder);

    let replay = Recorder::open(ScriptedLlm::new(), &path, CassetteMode::Replay, "m")
        .await
        .unwrap();
    // The document changed on its third line: the miss names the message,
    // the line and both texts around the change.
    let miss = replay
        .chat(&skill("Answer at length."), &reflect)
        .await
        .unwrap_err();
    let text = miss.message();
    assert!(text.contains("tag \"reflect\" (line 1)"), "{text}");
    assert!(
        text.contains("message 2 of 2 (user) changed from line 4"),
        "{text}"
    );
    assert!(
        text.contains("Answer briefly") && text.contains("Answer at length"),
        "{text}"
    );
    assert!(!text.contains('\n'), "one line: {text}");

    // Another model: said so, beside the closest recording of the tag.
    let other = Recorder::open(ScriptedLlm::new(), &path, CassetteMode::Replay, "m2")
        .await
        .unwrap();
    let miss = other.chat(&ask("Is it right?"), &judge).await.unwrap_err();
    assert!(
        miss.message()
            .contains("the model changed: recorded \"m\", now \"m2\""),
        "{miss}"
    );
    assert!(!miss.message().contains("message 1"), "{miss}");

    // Other options: the changed option is named.
    let warmer = judge.clone().with_temperature(0.7);
    let miss = replay
        .chat(&ask("Is it right?"), &warmer)
        .await
        .unwrap_err();
    assert!(
        miss.message()
            .contains("the call's options changed (temperature)"),
        "{miss}"
    );
}

#[tokio::test]
async fn recording_into_a_folder_or_a_pipe_is_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let live = ScriptedLlm::with_replies(["never"]);
    let folder = dir.path().join("cassettes");
    std::fs::create_dir(&folder).unwrap();
    let opened = Recorder::open(&live, &folder, CassetteMode::Record, "m").await;
    assert!(
        matches!(&opened, Err(CassetteError::NotAFile { reason, .. }) if reason.contains("folder")),
        "{opened:?}"
    );
    #[cfg(unix)]
    {
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let opened = Recorder::open(&live, &fifo, CassetteMode::Record, "m").await;
        assert!(
            matches!(&opened, Err(CassetteError::NotAFile { reason, .. }) if reason.contains("not a regular file")),
            "{opened:?}"
        );
    }
    // A path through a file: the error names the cassette, not a temporary file.
    let file = dir.path().join("plain");
    std::fs::write(&file, "x").unwrap();
    let through = file.join("run.jsonl");
    match Recorder::open(&live, &through, CassetteMode::Record, "m").await {
        Err(CassetteError::Io { path, .. }) => assert_eq!(path, through),
        other => panic!("expected an I/O error, got {other:?}"),
    }
    assert_eq!(live.call_count(), 0);
    // Nothing was left behind in the folder tried.
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}

mod handoff;
