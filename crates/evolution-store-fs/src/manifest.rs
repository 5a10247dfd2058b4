//! Version ids, history entries and the manifest (the pointer to the current version).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::FsStoreError;

/// Manifest format written and read by this crate; any other format is refused as corrupt.
pub(crate) const MANIFEST_FORMAT: u32 = 1;

/// Identifies one immutable version of a store. Written `v000001`; numbers grow by one per advance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VersionId(u64);

impl VersionId {
    /// The version numbered `n`.
    pub fn new(n: u64) -> Self {
        VersionId(n)
    }

    /// The version's number.
    pub fn number(self) -> u64 {
        self.0
    }

    /// The version after this one, if the number does not overflow.
    pub(crate) fn next(self) -> Option<Self> {
        self.0.checked_add(1).map(VersionId)
    }

    /// The name of the version's directory.
    pub(crate) fn dir_name(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for VersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{:06}", self.0)
    }
}

/// A string that is not a version id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a version id: {0:?} (expected `v` followed by digits)")]
pub struct ParseVersionIdError(String);

impl FromStr for VersionId {
    type Err = ParseVersionIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let digits = s
            .strip_prefix('v')
            .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ParseVersionIdError(s.to_owned()))?;
        digits
            .parse()
            .map(VersionId)
            .map_err(|_| ParseVersionIdError(s.to_owned()))
    }
}

impl Serialize for VersionId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for VersionId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What moved the pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum HistoryKind {
    /// The store was created with its first version.
    Init,
    /// A new version was written by `advance_version`.
    Advance,
    /// The pointer went back to an earlier version.
    Rollback,
}

/// One move of the current-version pointer, oldest first in [`crate::FsStore::history`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The version that became current.
    pub version: VersionId,
    /// The version that was current before (none for the first).
    pub previous: Option<VersionId>,
    /// What moved the pointer.
    pub kind: HistoryKind,
    /// The caller's message.
    pub message: String,
    /// When, in milliseconds since the Unix epoch.
    pub unix_ms: u64,
}

/// The pointer file: the current version and how it got there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) format: u32,
    pub(crate) current: VersionId,
    pub(crate) history: Vec<HistoryEntry>,
}

impl Manifest {
    pub(crate) fn parse(bytes: &[u8]) -> Result<Manifest, FsStoreError> {
        let manifest: Manifest = serde_json::from_slice(bytes)
            .map_err(|e| FsStoreError::corrupt(format!("manifest is not valid: {e}")))?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(FsStoreError::corrupt(format!(
                "manifest format {} is not supported (this build reads format {MANIFEST_FORMAT})",
                manifest.format
            )));
        }
        if !manifest
            .history
            .iter()
            .any(|e| e.version == manifest.current)
        {
            return Err(FsStoreError::corrupt(format!(
                "manifest points at {} which is not in its history",
                manifest.current
            )));
        }
        Ok(manifest)
    }

    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>, FsStoreError> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| FsStoreError::corrupt(format!("cannot encode manifest: {e}")))?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// True when `version` was ever written to this store.
    pub(crate) fn knows(&self, version: VersionId) -> bool {
        self.history.iter().any(|e| e.version == version)
    }

    /// The highest version ever written.
    pub(crate) fn latest(&self) -> VersionId {
        self.history
            .iter()
            .map(|e| e.version)
            .max()
            .unwrap_or(self.current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_id_round_trips_through_text() {
        for n in [0_u64, 1, 42, 999_999, 1_000_000, u64::MAX] {
            let id = VersionId::new(n);
            assert_eq!(id.to_string().parse::<VersionId>(), Ok(id));
        }
        assert_eq!(VersionId::new(7).to_string(), "v000007");
        assert_eq!("v7".parse::<VersionId>(), Ok(VersionId::new(7)));
    }

    #[test]
    fn bad_version_ids_are_refused() {
        for s in [
            "",
            "v",
            "7",
            "v-1",
            "vx",
            "v1.0",
            "V1",
            "v99999999999999999999999",
        ] {
            assert!(s.parse::<VersionId>().is_err(), "{s:?}");
        }
    }

    #[test]
    fn manifest_pointing_outside_history_is_corrupt() {
        let text = br#"{"format":1,"current":"v000002","history":[{"version":"v000001","previous":null,"kind":"init","message":"","unix_ms":0}]}"#;
        assert!(matches!(
            Manifest::parse(text),
            Err(FsStoreError::Corrupt { .. })
        ));
    }

    #[test]
    fn future_manifest_format_is_refused() {
        let text = br#"{"format":2,"current":"v000001","history":[{"version":"v000001","previous":null,"kind":"init","message":"","unix_ms":0}]}"#;
        assert!(matches!(
            Manifest::parse(text),
            Err(FsStoreError::Corrupt { .. })
        ));
    }
}
