//! Document names: plain file names, nothing that could leave the version directory.

use crate::FsStoreError;

/// Longest accepted name in bytes (the common file-system limit).
const MAX_NAME_BYTES: usize = 255;

/// Checks that `name` is a plain file name that stays inside a version directory.
pub(crate) fn validate_name(name: &str) -> Result<(), FsStoreError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name == "." || name == ".." {
        Some("refers to a directory")
    } else if name.starts_with('/') || name.starts_with('\\') || has_drive_prefix(name) {
        Some("absolute path")
    } else if name.split(['/', '\\']).any(|part| part == "..") {
        Some("contains `..`")
    } else if name.contains(['/', '\\']) {
        Some("contains a path separator")
    } else if name.chars().any(char::is_control) {
        Some("contains a control character")
    } else if name.len() > MAX_NAME_BYTES {
        Some("longer than 255 bytes")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(FsStoreError::InvalidName {
            name: name.to_owned(),
            reason,
        }),
    }
}

/// `C:` style prefixes, absolute on Windows and never a plain name.
fn has_drive_prefix(name: &str) -> bool {
    let mut chars = name.chars();
    matches!((chars.next(), chars.next()), (Some(c), Some(':')) if c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::validate_name;
    use crate::FsStoreError;

    fn check(name: &str, expect: Option<&str>) {
        let got = match validate_name(name) {
            Ok(()) => None,
            Err(FsStoreError::InvalidName { reason, .. }) => Some(reason),
            Err(other) => panic!("unexpected error {other}"),
        };
        assert_eq!(got, expect, "name {name:?}");
    }

    #[test]
    fn plain_names_pass() {
        check("SKILL.md", None);
        check("action-reasoning.md", None);
        check("view_node_extract.md", None);
        check(".hidden", None);
        check("技能.md", None);
        check("a..b.md", None);
    }

    #[test]
    fn bad_names_fail_with_reason() {
        check("", Some("empty"));
        check(".", Some("refers to a directory"));
        check("..", Some("refers to a directory"));
        check("/etc/passwd", Some("absolute path"));
        check("\\share\\x", Some("absolute path"));
        check("C:evil", Some("absolute path"));
        check("../outside.md", Some("contains `..`"));
        check("a/../../b", Some("contains `..`"));
        check("sub/file.md", Some("contains a path separator"));
        check("sub\\file.md", Some("contains a path separator"));
        check("nul\0byte", Some("contains a control character"));
        check("line\nbreak", Some("contains a control character"));
        check(&"x".repeat(256), Some("longer than 255 bytes"));
    }
}
