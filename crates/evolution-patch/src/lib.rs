//! The patch engine of the evolution kernel: applies an LLM's edits to a
//! skill or prompt document and maintains its two protected regions, the
//! execution-notes appendix and the momentum (slow-update guidance) region.
//!
//! Pure text in, text and reports out: no I/O, no async, no panics on any
//! input. Bad edits are reported per edit with a `skipped_*` status; region
//! writers return a typed error naming the marker and its line.
//!
//! Key design choice: documents stay interchangeable with Microsoft
//! SkillOpt's — the same marker literals, the same `## Execution Notes
//! Appendix` heading and `- ` bullet notes, the same edit and report wire
//! format — while the protected ranges (all protected spans and all markers)
//! are found in one pass over the document and then kept exact across edits
//! by rescanning only the window each edit can affect, so a patch costs one
//! linear scan plus a small window per edit, whatever the number of spans.

mod engine;
mod markers;
mod regions;
mod text;

pub use crate::engine::apply_patch_with_report;
pub use crate::markers::{
    APPENDIX_END, APPENDIX_HEADING, APPENDIX_MAX_CHARS, APPENDIX_START, MOMENTUM_END,
    MOMENTUM_HEADING, MOMENTUM_MAX_CHARS, MOMENTUM_START, RegionError, appendix_region_bounds,
    momentum_region_bounds,
};
pub use crate::regions::{
    PatchError, append_to_appendix, extract_appendix_notes, momentum_inner, replace_appendix_notes,
    replace_momentum,
};
