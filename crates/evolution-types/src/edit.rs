//! Edits proposed by an LLM and the per-edit report of applying them.
//!
//! The wire format is SkillOpt's: `{"op", "target", "content"}` objects, and
//! reports with snake_case status strings, so documents and patch files move
//! between the two tools unchanged.

use serde::{Deserialize, Serialize};

use crate::JsonMap;

/// The operation of one edit.
///
/// Deserializes from any string: an operation this crate does not know is
/// kept as [`EditOp::Other`] so that the patch engine can report it as
/// skipped instead of the whole patch failing to parse.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EditOp {
    /// Add the content at the end of the editable body.
    Append,
    /// Insert the content on its own line after the line holding the target.
    InsertAfter,
    /// Replace the first occurrence of the target.
    Replace,
    /// Delete the first occurrence of the target.
    Delete,
    /// Any other operation name, kept verbatim.
    Other(String),
}

impl EditOp {
    /// The wire spelling of the operation.
    pub fn as_str(&self) -> &str {
        match self {
            EditOp::Append => "append",
            EditOp::InsertAfter => "insert_after",
            EditOp::Replace => "replace",
            EditOp::Delete => "delete",
            EditOp::Other(name) => name,
        }
    }
}

impl From<String> for EditOp {
    fn from(value: String) -> Self {
        match value.as_str() {
            "append" => EditOp::Append,
            "insert_after" => EditOp::InsertAfter,
            "replace" => EditOp::Replace,
            "delete" => EditOp::Delete,
            _ => EditOp::Other(value),
        }
    }
}

impl From<&str> for EditOp {
    fn from(value: &str) -> Self {
        EditOp::from(value.to_owned())
    }
}

impl From<EditOp> for String {
    fn from(value: EditOp) -> Self {
        match value {
            EditOp::Other(name) => name,
            known => known.as_str().to_owned(),
        }
    }
}

impl std::fmt::Display for EditOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One proposed edit.
///
/// Fields other than `op`, `target`, `content` and `support_count` (for
/// example SkillOpt's `source_type` or an LLM's `reason`) are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edit {
    /// What to do.
    pub op: EditOp,
    /// Text the edit anchors on; never trimmed. Empty for `append`.
    #[serde(default)]
    pub target: String,
    /// The payload; trimmed when applied.
    #[serde(default)]
    pub content: String,
    /// How many reflection batches proposed this edit (the aggregation step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support_count: Option<u32>,
    /// Every other field of the edit object.
    #[serde(flatten)]
    pub extra: JsonMap,
}

impl Edit {
    /// An edit with no support count and no extra fields.
    pub fn new(
        op: impl Into<EditOp>,
        target: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Edit {
            op: op.into(),
            target: target.into(),
            content: content.into(),
            support_count: None,
            extra: JsonMap::new(),
        }
    }

    /// An `append` edit.
    pub fn append(content: impl Into<String>) -> Self {
        Edit::new(EditOp::Append, "", content)
    }

    /// An `insert_after` edit.
    pub fn insert_after(target: impl Into<String>, content: impl Into<String>) -> Self {
        Edit::new(EditOp::InsertAfter, target, content)
    }

    /// A `replace` edit.
    pub fn replace(target: impl Into<String>, content: impl Into<String>) -> Self {
        Edit::new(EditOp::Replace, target, content)
    }

    /// A `delete` edit.
    pub fn delete(target: impl Into<String>) -> Self {
        Edit::new(EditOp::Delete, target, "")
    }
}

/// What happened to one edit, in the reference implementation's and SkillOpt's status strings.
///
/// Deserializes from any string; statuses written by other tools that this
/// crate does not know are kept as [`EditStatus::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum EditStatus {
    /// Appended at the end of a document without protected regions.
    AppliedAppend,
    /// Appended just before the earliest protected region.
    AppliedAppendBeforeProtectedRegion,
    /// Inserted after the line holding the target.
    AppliedInsertAfter,
    /// Target absent: appended at the end instead.
    AppliedInsertAfterFallbackAppend,
    /// Target absent: appended before the earliest protected region instead.
    AppliedInsertAfterFallbackBeforeProtectedRegion,
    /// First occurrence replaced.
    AppliedReplace,
    /// First occurrence deleted.
    AppliedDelete,
    /// The target lies (at least partly) inside a protected region.
    SkippedProtected,
    /// The payload or target would create or destroy a region marker.
    SkippedMarkerInPayload,
    /// An `append` or `insert_after` with nothing to insert.
    SkippedEmptyContent,
    /// `insert_after` with an empty target.
    SkippedInsertAfterMissingTarget,
    /// `replace` with an empty target.
    SkippedReplaceMissingTarget,
    /// `replace` whose target does not occur.
    SkippedReplaceTargetNotFound,
    /// `delete` with an empty target.
    SkippedDeleteMissingTarget,
    /// `delete` whose target does not occur.
    SkippedDeleteTargetNotFound,
    /// An operation name the engine does not know.
    SkippedUnknownOp,
    /// A status string this crate does not know, kept verbatim.
    Other(String),
}

/// The three families of [`EditStatus`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EditStatusKind {
    /// The edit changed the document where it asked to.
    Applied,
    /// The edit changed the document, but somewhere else than it asked (fallback append).
    Fallback,
    /// The document is unchanged by this edit.
    Skipped,
}

impl EditStatus {
    const KNOWN: [EditStatus; 16] = [
        EditStatus::AppliedAppend,
        EditStatus::AppliedAppendBeforeProtectedRegion,
        EditStatus::AppliedInsertAfter,
        EditStatus::AppliedInsertAfterFallbackAppend,
        EditStatus::AppliedInsertAfterFallbackBeforeProtectedRegion,
        EditStatus::AppliedReplace,
        EditStatus::AppliedDelete,
        EditStatus::SkippedProtected,
        EditStatus::SkippedMarkerInPayload,
        EditStatus::SkippedEmptyContent,
        EditStatus::SkippedInsertAfterMissingTarget,
        EditStatus::SkippedReplaceMissingTarget,
        EditStatus::SkippedReplaceTargetNotFound,
        EditStatus::SkippedDeleteMissingTarget,
        EditStatus::SkippedDeleteTargetNotFound,
        EditStatus::SkippedUnknownOp,
    ];

    /// The wire spelling of the status.
    pub fn as_str(&self) -> &str {
        match self {
            EditStatus::AppliedAppend => "applied_append",
            EditStatus::AppliedAppendBeforeProtectedRegion => {
                "applied_append_before_protected_region"
            }
            EditStatus::AppliedInsertAfter => "applied_insert_after",
            EditStatus::AppliedInsertAfterFallbackAppend => "applied_insert_after_fallback_append",
            EditStatus::AppliedInsertAfterFallbackBeforeProtectedRegion => {
                "applied_insert_after_fallback_before_protected_region"
            }
            EditStatus::AppliedReplace => "applied_replace",
            EditStatus::AppliedDelete => "applied_delete",
            EditStatus::SkippedProtected => "skipped_protected",
            EditStatus::SkippedMarkerInPayload => "skipped_marker_in_payload",
            EditStatus::SkippedEmptyContent => "skipped_empty_content",
            EditStatus::SkippedInsertAfterMissingTarget => "skipped_insert_after_missing_target",
            EditStatus::SkippedReplaceMissingTarget => "skipped_replace_missing_target",
            EditStatus::SkippedReplaceTargetNotFound => "skipped_replace_target_not_found",
            EditStatus::SkippedDeleteMissingTarget => "skipped_delete_missing_target",
            EditStatus::SkippedDeleteTargetNotFound => "skipped_delete_target_not_found",
            EditStatus::SkippedUnknownOp => "skipped_unknown_op",
            EditStatus::Other(s) => s,
        }
    }

    /// Whether the edit was applied, applied by fallback, or skipped.
    ///
    /// Unknown statuses count as applied when they start with `applied_`
    /// (and as fallback when they also mention `fallback`), else as skipped.
    pub fn kind(&self) -> EditStatusKind {
        let s = self.as_str();
        if s.starts_with("applied_") {
            if s.contains("fallback") {
                EditStatusKind::Fallback
            } else {
                EditStatusKind::Applied
            }
        } else {
            EditStatusKind::Skipped
        }
    }

    /// True when the document changed (applied or fallback).
    pub fn is_applied(&self) -> bool {
        self.kind() != EditStatusKind::Skipped
    }
}

impl From<String> for EditStatus {
    fn from(value: String) -> Self {
        // SkillOpt spells the protected skip with a `_region` suffix.
        if value == "skipped_protected_region" {
            return EditStatus::SkippedProtected;
        }
        EditStatus::KNOWN
            .iter()
            .find(|known| known.as_str() == value)
            .cloned()
            .unwrap_or(EditStatus::Other(value))
    }
}

impl From<EditStatus> for String {
    fn from(value: EditStatus) -> Self {
        match value {
            EditStatus::Other(s) => s,
            known => known.as_str().to_owned(),
        }
    }
}

impl std::fmt::Display for EditStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The report entry of one edit; exactly one per edit, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditReport {
    /// 1-based position of the edit in the patch (SkillOpt's convention).
    pub index: usize,
    /// The edit's operation.
    pub op: EditOp,
    /// What happened.
    pub status: EditStatus,
    /// The edit's target, cut to at most 200 characters.
    pub target: String,
    /// The trimmed payload, cut to at most 200 characters.
    pub content_preview: String,
}
