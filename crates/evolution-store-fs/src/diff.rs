//! Differences between two versions, as unified diffs per document.

use std::fmt;

use similar::TextDiff;

use crate::VersionId;

/// Lines of context around each change in a unified diff.
const CONTEXT_LINES: usize = 3;

/// How a document differs between two versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileChange {
    /// Present only in the newer version.
    Added,
    /// Present only in the older version.
    Removed,
    /// Present in both with different text.
    Modified,
}

/// One document that differs, with its unified diff (`a/name` → `b/name`, `/dev/null` when absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// The document's name.
    pub name: String,
    /// How it changed.
    pub change: FileChange,
    /// The unified diff text.
    pub unified: String,
}

/// Every document that differs between two versions, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionDiff {
    /// The older side.
    pub from: VersionId,
    /// The newer side.
    pub to: VersionId,
    /// The documents that differ; unchanged ones are left out.
    pub files: Vec<FileDiff>,
}

impl VersionDiff {
    /// True when both versions hold the same documents with the same text.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

impl fmt::Display for VersionDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.files
            .iter()
            .try_for_each(|file| f.write_str(&file.unified))
    }
}

/// Compares one document across versions; `None` when it is the same (or absent) on both sides.
pub(crate) fn diff_file(name: &str, old: Option<&str>, new: Option<&str>) -> Option<FileDiff> {
    let (change, old_header, new_header) = match (old, new) {
        (None, None) => return None,
        (Some(a), Some(b)) if a == b => return None,
        (None, Some(_)) => (
            FileChange::Added,
            "/dev/null".to_owned(),
            format!("b/{name}"),
        ),
        (Some(_), None) => (
            FileChange::Removed,
            format!("a/{name}"),
            "/dev/null".to_owned(),
        ),
        (Some(_), Some(_)) => (
            FileChange::Modified,
            format!("a/{name}"),
            format!("b/{name}"),
        ),
    };
    let unified = TextDiff::from_lines(old.unwrap_or(""), new.unwrap_or(""))
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&old_header, &new_header)
        .to_string();
    Some(FileDiff {
        name: name.to_owned(),
        change,
        unified,
    })
}
