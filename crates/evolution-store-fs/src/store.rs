//! The store: layout on disk, readers, and the locked, crash-safe writer.
//!
//! Layout of a store directory:
//!
//! ```text
//! manifest.json        the pointer: current version + history (replaced atomically)
//! .lock                writers hold an exclusive lock on it
//! versions/v000001/    one directory per version, never changed once renamed in
//! staging/v000002/     a version being built; renamed into versions/ when complete
//! ```
//!
//! A version directory appears in `versions/` only by a rename of a complete, synced staging
//! directory, and it becomes current only when the manifest is replaced. A crash at any point
//! therefore leaves the manifest pointing at a complete version: the old one, or the new one
//! once the manifest rename reached the disk. Leftovers (staging directories, versions the
//! manifest never pointed at, temporary manifests) are removed by the next writer.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use atomic_write_file::AtomicWriteFile;
use evolution_types::{PromptStore, SkillStore, StoreError};

use crate::diff::diff_file;
use crate::manifest::{MANIFEST_FORMAT, Manifest};
use crate::name::validate_name;
use crate::private::{create_private_dir, make_private, open_private};
use crate::{FsStoreError, HistoryEntry, HistoryKind, VersionDiff, VersionId};

const MANIFEST: &str = "manifest.json";
/// Prefix of the temporary files `atomic-write-file` may leave behind when killed.
const MANIFEST_TEMP_PREFIX: &str = ".manifest.json.";
const LOCK: &str = ".lock";
const VERSIONS: &str = "versions";
const STAGING: &str = "staging";

type Result<T> = std::result::Result<T, FsStoreError>;

/// One edit of a document in [`FsStore::advance_version`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Create the document, or replace its text if it exists.
    Write {
        /// The document's name.
        name: String,
        /// Its new full text.
        content: String,
    },
    /// Remove the document; it must exist in the current version.
    Delete {
        /// The document's name.
        name: String,
    },
}

impl Change {
    /// A change that creates or replaces `name` with `content`.
    pub fn write(name: impl Into<String>, content: impl Into<String>) -> Self {
        Change::Write {
            name: name.into(),
            content: content.into(),
        }
    }

    /// A change that removes `name`.
    pub fn delete(name: impl Into<String>) -> Self {
        Change::Delete { name: name.into() }
    }

    /// The document this change touches.
    pub fn name(&self) -> &str {
        match self {
            Change::Write { name, .. } | Change::Delete { name } => name,
        }
    }
}

/// A versioned document store in one directory; serves skills and prompts alike.
///
/// Layout: `manifest.json` (current version and history, replaced atomically), `.lock`
/// (held exclusively by writers), `versions/v000001/…` (one directory of documents per
/// version, never changed once in place) and `staging/` (versions being built).
///
/// Reads resolve the manifest pointer on every call, so a long-lived handle sees versions
/// advanced by other handles or processes; use [`FsStore::snapshot`] to pin one version
/// across several reads. Writers serialize on an exclusive file lock.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
}

/// A read-only view of one version of a store, unaffected by later advances or rollbacks.
#[derive(Debug, Clone)]
pub struct FsSnapshot {
    store: FsStore,
    version: VersionId,
}

impl FsStore {
    /// Creates a store in `root` (missing or empty) whose first version holds `files`.
    pub fn init<I, N, C>(root: impl AsRef<Path>, files: I, message: &str) -> Result<FsStore>
    where
        I: IntoIterator<Item = (N, C)>,
        N: Into<String>,
        C: Into<String>,
    {
        let changes: Vec<Change> = files
            .into_iter()
            .map(|(name, content)| Change::write(name, content))
            .collect();
        check_changes(&changes)?;
        let root = root.as_ref().to_path_buf();
        fs::create_dir_all(&root).map_err(FsStoreError::io("create directory", &root))?;
        let store = FsStore { root };
        store.ensure_fresh_root()?;
        let _lock = WriterLock::acquire(&store.root)?;
        // Another process may have finished an init while we waited for the lock.
        store.ensure_fresh_root()?;
        store.clean_up(None)?;
        for dir in [VERSIONS, STAGING] {
            let path = store.root.join(dir);
            match create_private_dir(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(FsStoreError::io("create directory", path)(e)),
            }
        }
        sync_dir(&store.root)?;
        let first = VersionId::new(1);
        store.stage_version(first, None, &changes)?;
        store.write_manifest(&Manifest {
            format: MANIFEST_FORMAT,
            current: first,
            history: vec![HistoryEntry {
                version: first,
                previous: None,
                kind: HistoryKind::Init,
                message: message.to_owned(),
                unix_ms: now_unix_ms(),
            }],
        })?;
        Ok(store)
    }

    /// Opens the store in `root`, or creates it with `files` as its first version when `root`
    /// holds none. The second value says which happened.
    ///
    /// Safe when several processes start on a new `root` at once: one creates the store, the
    /// others open what it created (a plain `open` then `init` would fail for them with
    /// [`FsStoreError::AlreadyExists`]). A `root` holding someone else's files is still refused.
    pub fn open_or_init<I, N, C>(
        root: impl AsRef<Path>,
        files: I,
        message: &str,
    ) -> Result<(FsStore, Opened)>
    where
        I: IntoIterator<Item = (N, C)>,
        N: Into<String>,
        C: Into<String>,
    {
        let root = root.as_ref();
        match FsStore::open(root) {
            Ok(store) => return Ok((store, Opened::Existing)),
            Err(FsStoreError::NotAStore { .. }) => {}
            Err(e) => return Err(e),
        }
        match FsStore::init(root, files, message) {
            Ok(store) => Ok((store, Opened::Created)),
            // Someone else created it between our `open` and `init`: use theirs.
            Err(refused @ FsStoreError::AlreadyExists { .. }) => match FsStore::open(root) {
                Ok(store) => Ok((store, Opened::Existing)),
                Err(_) => Err(refused),
            },
            Err(e) => Err(e),
        }
    }

    /// Creates a store in `root` from the plain files directly inside `source`.
    ///
    /// Subdirectories, symbolic links, non-UTF-8 names or text are refused rather than skipped.
    pub fn import_dir(
        root: impl AsRef<Path>,
        source: impl AsRef<Path>,
        message: &str,
    ) -> Result<FsStore> {
        let source = source.as_ref();
        let mut files = Vec::new();
        for entry in fs::read_dir(source).map_err(FsStoreError::io("read directory", source))? {
            let entry = entry.map_err(FsStoreError::io("read directory", source))?;
            let path = entry.path();
            let name =
                entry
                    .file_name()
                    .into_string()
                    .map_err(|raw| FsStoreError::InvalidName {
                        name: raw.to_string_lossy().into_owned(),
                        reason: "not valid UTF-8",
                    })?;
            let kind = entry
                .file_type()
                .map_err(FsStoreError::io("inspect", &path))?;
            if !kind.is_file() {
                return Err(FsStoreError::InvalidName {
                    name,
                    reason: "not a plain file (directories and links cannot be imported)",
                });
            }
            let bytes = fs::read(&path).map_err(FsStoreError::io("read", &path))?;
            let text = String::from_utf8(bytes).map_err(|_| FsStoreError::InvalidName {
                name: name.clone(),
                reason: "content is not valid UTF-8",
            })?;
            files.push((name, text));
        }
        FsStore::init(root, files, message)
    }

    /// Opens an existing store.
    pub fn open(root: impl AsRef<Path>) -> Result<FsStore> {
        let store = FsStore {
            root: root.as_ref().to_path_buf(),
        };
        store.read_manifest()?;
        Ok(store)
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The version the manifest points at now.
    pub fn current_version(&self) -> Result<VersionId> {
        Ok(self.read_manifest()?.current)
    }

    /// A view pinned to the current version.
    pub fn snapshot(&self) -> Result<FsSnapshot> {
        Ok(FsSnapshot {
            store: self.clone(),
            version: self.current_version()?,
        })
    }

    /// The text of `name` in the current version.
    pub fn read(&self, name: &str) -> Result<String> {
        validate_name(name)?;
        let version = self.current_version()?;
        self.read_known(version, name)
    }

    /// The document names of the current version, sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        let version = self.current_version()?;
        self.list_known(version)
    }

    /// The text of `name` in `version`.
    pub fn read_at(&self, version: VersionId, name: &str) -> Result<String> {
        validate_name(name)?;
        self.require_known(version)?;
        self.read_known(version, name)
    }

    /// The document names of `version`, sorted.
    pub fn list_at(&self, version: VersionId) -> Result<Vec<String>> {
        self.require_known(version)?;
        self.list_known(version)
    }

    /// Every move of the current-version pointer, oldest first.
    pub fn history(&self) -> Result<Vec<HistoryEntry>> {
        Ok(self.read_manifest()?.history)
    }

    /// What changed from version `a` to version `b`.
    pub fn diff(&self, a: VersionId, b: VersionId) -> Result<VersionDiff> {
        self.require_known(a)?;
        self.require_known(b)?;
        let old = self.load_all(a)?;
        let new = self.load_all(b)?;
        let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        let files = names
            .into_iter()
            .filter_map(|name| {
                diff_file(
                    name,
                    old.get(name).map(String::as_str),
                    new.get(name).map(String::as_str),
                )
            })
            .collect();
        Ok(VersionDiff {
            from: a,
            to: b,
            files,
        })
    }

    /// Writes a new version: the current one with `changes` applied, then makes it current.
    ///
    /// The new version is built in a staging directory, synced, renamed into place and only
    /// then published by replacing the manifest atomically. Concurrent writers wait for each
    /// other; a crash leaves the previous version current.
    pub fn advance_version(&self, changes: &[Change], message: &str) -> Result<VersionId> {
        if changes.is_empty() {
            return Err(FsStoreError::NoChanges);
        }
        check_changes(changes)?;
        let _lock = WriterLock::acquire(&self.root)?;
        let mut manifest = self.read_manifest()?;
        self.clean_up(Some(&manifest))?;
        let base = manifest.current;
        let next = manifest
            .latest()
            .next()
            .ok_or_else(|| FsStoreError::corrupt("version numbers exhausted"))?;
        self.stage_version(next, Some(base), changes)?;
        failpoint_version_written();
        manifest.current = next;
        manifest.history.push(HistoryEntry {
            version: next,
            previous: Some(base),
            kind: HistoryKind::Advance,
            message: message.to_owned(),
            unix_ms: now_unix_ms(),
        });
        self.write_manifest(&manifest)?;
        Ok(next)
    }

    /// Makes the earlier version `to` current again; a no-op when it already is.
    pub fn rollback(&self, to: VersionId) -> Result<()> {
        let _lock = WriterLock::acquire(&self.root)?;
        let mut manifest = self.read_manifest()?;
        if !manifest.knows(to) {
            return Err(FsStoreError::UnknownVersion { version: to });
        }
        if manifest.current == to {
            return Ok(());
        }
        // Refuse to point at a version that cannot be read.
        self.list_known(to)?;
        let previous = manifest.current;
        manifest.current = to;
        manifest.history.push(HistoryEntry {
            version: to,
            previous: Some(previous),
            kind: HistoryKind::Rollback,
            message: format!("rollback from {previous} to {to}"),
            unix_ms: now_unix_ms(),
        });
        self.write_manifest(&manifest)
    }

    fn manifest_path(&self) -> PathBuf {
        self.root.join(MANIFEST)
    }

    fn version_dir(&self, version: VersionId) -> PathBuf {
        self.root.join(VERSIONS).join(version.dir_name())
    }

    fn read_manifest(&self) -> Result<Manifest> {
        let path = self.manifest_path();
        match fs::read(&path) {
            Ok(bytes) => Manifest::parse(&bytes),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(FsStoreError::NotAStore {
                root: self.root.clone(),
            }),
            Err(e) => Err(FsStoreError::io("read", path)(e)),
        }
    }

    fn write_manifest(&self, manifest: &Manifest) -> Result<()> {
        let path = self.manifest_path();
        let bytes = manifest.to_bytes()?;
        let mut file = AtomicWriteFile::open(&path).map_err(FsStoreError::io("open", &path))?;
        make_private(file.as_file()).map_err(FsStoreError::io("set permissions of", &path))?;
        file.write_all(&bytes)
            .map_err(FsStoreError::io("write", &path))?;
        file.commit().map_err(FsStoreError::io("commit", &path))
    }

    fn require_known(&self, version: VersionId) -> Result<()> {
        if self.read_manifest()?.knows(version) {
            Ok(())
        } else {
            Err(FsStoreError::UnknownVersion { version })
        }
    }

    fn read_known(&self, version: VersionId, name: &str) -> Result<String> {
        let path = self.version_dir(version).join(name);
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                if self.version_dir(version).is_dir() {
                    return Err(FsStoreError::NotFound {
                        name: name.to_owned(),
                        version,
                    });
                }
                return Err(FsStoreError::corrupt(format!(
                    "directory of version {version} is missing"
                )));
            }
            Err(e) => return Err(FsStoreError::io("inspect", path)(e)),
        };
        if !meta.is_file() {
            return Err(FsStoreError::corrupt(format!(
                "{name:?} in version {version} is not a plain file"
            )));
        }
        let bytes = fs::read(&path).map_err(FsStoreError::io("read", &path))?;
        String::from_utf8(bytes).map_err(|_| {
            FsStoreError::corrupt(format!("{name:?} in version {version} is not UTF-8"))
        })
    }

    fn list_known(&self, version: VersionId) -> Result<Vec<String>> {
        let dir = self.version_dir(version);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(FsStoreError::corrupt(format!(
                    "directory of version {version} is missing"
                )));
            }
            Err(e) => return Err(FsStoreError::io("read directory", dir)(e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(FsStoreError::io("read directory", &dir))?;
            let name = entry.file_name().into_string().map_err(|raw| {
                FsStoreError::corrupt(format!("version {version} holds a non-UTF-8 name {raw:?}"))
            })?;
            let kind = entry
                .file_type()
                .map_err(FsStoreError::io("inspect", entry.path()))?;
            if !kind.is_file() || validate_name(&name).is_err() {
                return Err(FsStoreError::corrupt(format!(
                    "version {version} holds {name:?}, which is not a plain document"
                )));
            }
            names.push(name);
        }
        names.sort();
        Ok(names)
    }

    fn load_all(&self, version: VersionId) -> Result<BTreeMap<String, String>> {
        self.list_known(version)?
            .into_iter()
            .map(|name| {
                let text = self.read_known(version, &name)?;
                Ok((name, text))
            })
            .collect()
    }

    /// Builds `version` in staging from `base` plus `changes`, then renames it into `versions/`.
    fn stage_version(
        &self,
        version: VersionId,
        base: Option<VersionId>,
        changes: &[Change],
    ) -> Result<()> {
        let base_names = match base {
            Some(base) => self.list_known(base)?,
            None => Vec::new(),
        };
        for change in changes {
            if let Change::Delete { name } = change
                && !base_names.contains(name)
            {
                return Err(FsStoreError::NotFound {
                    name: name.clone(),
                    version: base.unwrap_or(version),
                });
            }
        }
        let staging = self.root.join(STAGING).join(version.dir_name());
        create_private_dir(&staging).map_err(FsStoreError::io("create directory", &staging))?;
        let touched: BTreeSet<&str> = changes.iter().map(Change::name).collect();
        if let Some(base) = base {
            let base_dir = self.version_dir(base);
            for name in base_names.iter().filter(|n| !touched.contains(n.as_str())) {
                let to = staging.join(name);
                fs::copy(base_dir.join(name), &to).map_err(FsStoreError::io("copy", &to))?;
                // A copy keeps its source's mode; a store written before files were private
                // becomes private as its versions are copied forward.
                File::open(&to)
                    .and_then(|f| make_private(&f).and_then(|()| f.sync_all()))
                    .map_err(FsStoreError::io("sync", &to))?;
            }
        }
        for change in changes {
            if let Change::Write { name, content } = change {
                let to = staging.join(name);
                let mut file = File::create_new(&to).map_err(FsStoreError::io("create", &to))?;
                make_private(&file).map_err(FsStoreError::io("set permissions of", &to))?;
                file.write_all(content.as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(FsStoreError::io("write", &to))?;
            }
        }
        sync_dir(&staging)?;
        let target = self.version_dir(version);
        fs::rename(&staging, &target).map_err(FsStoreError::io("rename", &target))?;
        sync_dir(&self.root.join(VERSIONS))?;
        sync_dir(&self.root.join(STAGING))
    }

    /// Removes what a killed writer may have left: staging directories, versions the manifest
    /// never pointed at, temporary manifests. Called with the writer lock held.
    ///
    /// Only entries named as the store names its own (`v000001`, a temporary manifest) are
    /// removed, and only inside `staging/` and `versions/` when each is a plain directory:
    /// a symbolic link or a file there is refused ([`FsStoreError::NotOurs`]) and anything
    /// else is left alone.
    fn clean_up(&self, manifest: Option<&Manifest>) -> Result<()> {
        let staging = self.root.join(STAGING);
        plain_dir_or_missing(&staging)?;
        for path in dir_entries(&staging)? {
            if version_named(&path).is_some() {
                remove_any(&path)?;
            }
        }
        let versions = self.root.join(VERSIONS);
        plain_dir_or_missing(&versions)?;
        let mut removed = false;
        for path in dir_entries(&versions)? {
            let orphan =
                version_named(&path).is_some_and(|id| !manifest.is_some_and(|m| m.knows(id)));
            if orphan {
                remove_any(&path)?;
                removed = true;
            }
        }
        if removed {
            sync_dir(&versions)?;
        }
        for path in dir_entries(&self.root)? {
            let temp = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(MANIFEST_TEMP_PREFIX));
            if temp {
                remove_any(&path)?;
            }
        }
        Ok(())
    }

    /// Refuses to `init` over a store or over a directory holding anything but our leftovers:
    /// `staging/` and `versions/` must be plain directories holding only version-named entries.
    fn ensure_fresh_root(&self) -> Result<()> {
        for path in dir_entries(&self.root)? {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let ours = name == LOCK
                || name.starts_with(MANIFEST_TEMP_PREFIX)
                || ((name == VERSIONS || name == STAGING) && holds_only_versions(&path)?);
            if !ours {
                return Err(FsStoreError::AlreadyExists {
                    root: self.root.clone(),
                });
            }
        }
        Ok(())
    }
}

/// What [`FsStore::open_or_init`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// A store was already there (possibly created a moment ago by another process).
    Existing,
    /// This call created the store.
    Created,
}

/// The version a directory entry is named after, if its name is exactly the one the store
/// gives that version (`v000001`; `v1` or `v0000001` are someone else's).
fn version_named(path: &Path) -> Option<VersionId> {
    let name = path.file_name()?.to_str()?;
    let id = name.parse::<VersionId>().ok()?;
    (id.dir_name() == name).then_some(id)
}

/// `Ok` for a plain directory or a missing path; [`FsStoreError::NotOurs`] for a symbolic
/// link or anything that is not a directory.
fn plain_dir_or_missing(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(FsStoreError::NotOurs {
            path: path.to_path_buf(),
            reason: "it is a symbolic link",
        }),
        Ok(meta) if !meta.is_dir() => Err(FsStoreError::NotOurs {
            path: path.to_path_buf(),
            reason: "it is not a directory",
        }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FsStoreError::io("inspect", path)(e)),
    }
}

/// Whether `dir` is a plain directory whose entries are all named as versions.
fn holds_only_versions(dir: &Path) -> Result<bool> {
    plain_dir_or_missing(dir)?;
    Ok(dir_entries(dir)?
        .iter()
        .all(|path| version_named(path).is_some()))
}

impl FsSnapshot {
    /// The version this view reads.
    pub fn version(&self) -> VersionId {
        self.version
    }

    /// The text of `name` in this version.
    pub fn read(&self, name: &str) -> Result<String> {
        validate_name(name)?;
        self.store.read_known(self.version, name)
    }

    /// The document names of this version, sorted.
    pub fn list(&self) -> Result<Vec<String>> {
        self.store.list_known(self.version)
    }
}

impl SkillStore for FsStore {
    fn read_skill(&self, filename: &str) -> std::result::Result<String, StoreError> {
        Ok(self.read(filename)?)
    }
    fn list_skill_files(&self) -> std::result::Result<Vec<String>, StoreError> {
        Ok(self.list()?)
    }
}

impl PromptStore for FsStore {
    fn read_prompt(&self, filename: &str) -> std::result::Result<String, StoreError> {
        Ok(self.read(filename)?)
    }
    fn list_prompt_files(&self) -> std::result::Result<Vec<String>, StoreError> {
        Ok(self.list()?)
    }
}

impl SkillStore for FsSnapshot {
    fn read_skill(&self, filename: &str) -> std::result::Result<String, StoreError> {
        Ok(self.read(filename)?)
    }
    fn list_skill_files(&self) -> std::result::Result<Vec<String>, StoreError> {
        Ok(self.list()?)
    }
}

impl PromptStore for FsSnapshot {
    fn read_prompt(&self, filename: &str) -> std::result::Result<String, StoreError> {
        Ok(self.read(filename)?)
    }
    fn list_prompt_files(&self) -> std::result::Result<Vec<String>, StoreError> {
        Ok(self.list()?)
    }
}

/// Checks every name and that no document is changed twice.
fn check_changes(changes: &[Change]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for change in changes {
        validate_name(change.name())?;
        if !seen.insert(change.name()) {
            return Err(FsStoreError::DuplicateChange {
                name: change.name().to_owned(),
            });
        }
    }
    Ok(())
}

/// An exclusive lock on the store's `.lock` file, released when dropped (or when the process dies).
struct WriterLock {
    _file: File,
}

impl WriterLock {
    fn acquire(root: &Path) -> Result<WriterLock> {
        let path = root.join(LOCK);
        // Owner-only like every file of the store, though it stays empty.
        let file = open_private(&path).map_err(FsStoreError::io("open", &path))?;
        file.lock().map_err(FsStoreError::io("lock", &path))?;
        Ok(WriterLock { _file: file })
    }
}

/// The paths inside `dir`; none when it does not exist.
fn dir_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(FsStoreError::io("read directory", dir)(e)),
    };
    entries
        .map(|entry| {
            entry
                .map(|e| e.path())
                .map_err(FsStoreError::io("read directory", dir))
        })
        .collect()
}

fn remove_any(path: &Path) -> Result<()> {
    let meta = fs::symlink_metadata(path).map_err(FsStoreError::io("inspect", path))?;
    let removed = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    removed.map_err(FsStoreError::io("remove", path))
}

/// Makes a directory's entries (creations, renames) durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(FsStoreError::io("sync directory", dir))
}

/// Test-only: with the `failpoints` feature and `SKILL_EVOLVE_FAILPOINT=version-written`
/// (or `version-written:<n>`, the `n`-th time) in the environment, aborts the process between
/// writing a version's directory and moving the head to it, as a kill there would. Without
/// the feature it does nothing.
#[inline]
fn failpoint_version_written() {
    #[cfg(feature = "failpoints")]
    {
        use std::sync::atomic::{AtomicU64, Ordering};
        static HITS: AtomicU64 = AtomicU64::new(0);
        const POINT: &str = "version-written";
        let Ok(spec) = std::env::var("SKILL_EVOLVE_FAILPOINT") else {
            return;
        };
        let (name, nth) = match spec.split_once(':') {
            Some((name, n)) => (name, n.trim().parse::<u64>().unwrap_or(1)),
            None => (spec.as_str(), 1),
        };
        if name.trim() == POINT && HITS.fetch_add(1, Ordering::SeqCst).saturating_add(1) == nth {
            #[expect(
                clippy::print_stderr,
                reason = "the test reads which point stopped the run"
            )]
            {
                eprintln!("failpoint {POINT} reached");
            }
            std::process::abort();
        }
    }
}

fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
