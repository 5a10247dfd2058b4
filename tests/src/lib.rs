//! Cross-crate end-to-end tests live in `tests/it`; this library is empty on purpose.
