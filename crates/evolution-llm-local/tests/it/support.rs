//! Loading the default model the same way the provider does, with a clear failure when absent.

use evolution_llm_local::{LocalConfig, LocalLlm, default_model_path};

/// The default model with `slots` slots; fails naming `cargo xtask fetch-model` when absent.
pub(crate) async fn model(slots: usize) -> LocalLlm {
    let path = default_model_path().expect("no model cache directory (HOME unset?)");
    assert!(
        path.is_file(),
        "the local model {} is missing: run `cargo xtask fetch-model` before these tests",
        path.display()
    );
    let config = LocalConfig::default_model()
        .expect("cache directory")
        .with_slots(slots)
        .with_threads(2);
    tokio::task::spawn_blocking(move || LocalLlm::load(config))
        .await
        .expect("load thread")
        .unwrap_or_else(|err| panic!("{err}"))
}
