use std::io::Write;

use evolution_llm_local::{
    FETCH_COMMAND, LocalConfig, LocalLlm, LocalLlmError, default_model_path,
};
use evolution_types::{ChatMessage, ChatOptions, LlmError, LlmErrorKind, LlmProvider};

use crate::support::model;

fn load(config: LocalConfig) -> Result<LocalLlm, LocalLlmError> {
    LocalLlm::load(config)
}

#[test]
fn a_missing_model_file_is_a_typed_error_naming_the_fetch_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent.gguf");
    let err = load(LocalConfig::new(&path)).expect_err("missing");
    assert_eq!(err, LocalLlmError::ModelMissing { path });
    assert!(err.to_string().contains(FETCH_COMMAND), "{err}");
    let as_llm: LlmError = err.into();
    assert_eq!(as_llm.kind(), LlmErrorKind::ModelNotFound);
    assert!(as_llm.is_permanent());
}

fn corrupt_reason(bytes: &[u8]) -> String {
    let mut file = tempfile::NamedTempFile::new().expect("tempfile");
    file.write_all(bytes).expect("write");
    file.flush().expect("flush");
    match load(LocalConfig::new(file.path())) {
        Err(err @ LocalLlmError::ModelCorrupt { .. }) => {
            assert!(err.to_string().contains(FETCH_COMMAND), "{err}");
            err.to_string()
        }
        other => panic!("expected ModelCorrupt, got {other:?}"),
    }
}

#[test]
fn a_corrupt_model_file_is_a_typed_error() {
    assert!(corrupt_reason(b"").contains("GGUF header"));
    assert!(corrupt_reason(b"PK\x03\x04 this is a zip, not a model").contains("bad magic"));
    // A GGUF header with garbage after it: llama.cpp refuses it.
    let mut garbage = b"GGUF\x03\x00\x00\x00".to_vec();
    garbage.extend((0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    assert!(corrupt_reason(&garbage).contains("llama.cpp cannot load it"));
}

#[test]
fn a_truncated_copy_of_the_real_model_is_corrupt() {
    let Some(path) = default_model_path().filter(|p| p.is_file()) else {
        panic!("the local model is missing: run `cargo xtask fetch-model` before these tests");
    };
    let bytes = std::fs::read(&path).expect("read model");
    let half = bytes.get(..bytes.len() / 2).expect("half");
    assert!(corrupt_reason(half).contains("llama.cpp cannot load it"));
}

#[test]
fn a_checksum_mismatch_is_corrupt() {
    let mut config = LocalConfig::default_model().expect("cache dir");
    assert!(
        config.model_path.is_file(),
        "the local model is missing: run `cargo xtask fetch-model` before these tests"
    );
    config.expected_sha256 = Some("00".repeat(32));
    match load(config) {
        Err(err @ LocalLlmError::ModelCorrupt { .. }) => {
            assert!(err.to_string().contains("SHA-256"), "{err}");
        }
        other => panic!("expected ModelCorrupt, got {other:?}"),
    }
}

#[test]
fn invalid_configurations_are_rejected() {
    let path = default_model_path().expect("cache dir");
    for config in [
        LocalConfig::new(&path).with_slots(0),
        LocalConfig::new(&path).with_threads(0),
        LocalConfig {
            context_tokens: 4,
            ..LocalConfig::new(&path)
        },
        LocalConfig::new(&path).with_chat_template("no-such-template"),
    ] {
        assert!(matches!(load(config), Err(LocalLlmError::InvalidConfig(_))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_does_not_fit_the_context_is_a_bad_request() {
    let small = model(1).await;
    let mut config = small.config().clone();
    config.context_tokens = 64;
    let small = tokio::task::spawn_blocking(move || LocalLlm::load(config))
        .await
        .expect("thread")
        .expect("load");
    let err = small
        .chat(
            &[ChatMessage::user(
                "Tell me everything about the history of Rome.",
            )],
            &ChatOptions::default().with_max_tokens(100),
        )
        .await
        .expect_err("too long");
    assert_eq!(err.kind(), LlmErrorKind::BadRequest, "{err}");
    assert!(err.message().contains("context window of 64"), "{err}");
}
