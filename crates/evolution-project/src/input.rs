//! Reading the files a user names: every one must be a regular file (checked
//! before it is opened, so a named pipe or a device never blocks or streams
//! forever) no larger than the limit of its kind. A refusal is one line naming
//! the file, its size and the limit, with exit code 2.

use std::io::Read as _;
use std::path::Path;

use evolution_harness::PromptTemplates;

use crate::error::{bad_at, line_of};

/// Mebibytes, for the limits below.
const MIB: u64 = 1024 * 1024;

/// What a file is for; each kind has its own size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    /// A skill document (`SKILL.md` and the files of a skills folder).
    SkillDocument,
    /// A prompt document (system or tool prompt).
    PromptDocument,
    /// A question set (JSON array or JSON lines).
    QuestionSet,
    /// Source trees for the missed-nodes judge.
    SourceTrees,
    /// A SESSION-STATE.md read as trajectories.
    SessionState,
    /// `skill-evolve.toml`.
    Config,
    /// A run configuration (`evolve.toml`).
    RunConfig,
    /// A cassette of recorded LLM calls.
    Cassette,
    /// A project's house rules (`preferences.md`); their text is held to a character limit
    /// of its own once read (`evolution_evolve::preferences::MAX_PREFERENCES_CHARS`).
    Preferences,
}

impl InputKind {
    /// The largest file of this kind that is read, in bytes.
    pub fn limit(self) -> u64 {
        match self {
            InputKind::SkillDocument | InputKind::PromptDocument => 4 * MIB,
            InputKind::QuestionSet => 256 * MIB,
            InputKind::SourceTrees => 256 * MIB,
            InputKind::SessionState => 64 * MIB,
            InputKind::Config | InputKind::RunConfig | InputKind::Preferences => MIB,
            InputKind::Cassette => 1024 * MIB,
        }
    }

    /// The kind's name in messages.
    fn name(self) -> &'static str {
        match self {
            InputKind::SkillDocument => "skill document",
            InputKind::PromptDocument => "prompt document",
            InputKind::QuestionSet => "question set",
            InputKind::SourceTrees => "tree data",
            InputKind::SessionState => "session state",
            InputKind::Config => "configuration",
            InputKind::RunConfig => "run configuration",
            InputKind::Cassette => "cassette",
            InputKind::Preferences => "preferences file",
        }
    }
}

/// Checks that `path` (symbolic links followed) is a regular file within the
/// limit of `kind`, without opening it; returns its size in bytes.
pub fn check_input(path: &Path, kind: InputKind) -> anyhow::Result<u64> {
    let what = kind.name();
    let meta = std::fs::metadata(path)
        .map_err(|e| bad_at(path, None, format!("cannot read the {what}: {e}")))?;
    if !meta.is_file() {
        return Err(bad_at(
            path,
            None,
            format!(
                "cannot read the {what}: {}, not a regular file",
                file_type_name(&meta.file_type())
            ),
        ));
    }
    within_limit(path, kind, meta.len())?;
    Ok(meta.len())
}

/// Reads the whole file at `path` after [`check_input`], never more than the
/// limit of `kind` (a file that grows while it is read is refused too).
pub fn read_input(path: &Path, kind: InputKind) -> anyhow::Result<Vec<u8>> {
    let size = check_input(path, kind)?;
    let what = kind.name();
    let io = |e: std::io::Error| bad_at(path, None, format!("cannot read the {what}: {e}"));
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(kind.limit().saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    within_limit(path, kind, u64::try_from(bytes.len()).unwrap_or(u64::MAX))?;
    Ok(bytes)
}

/// Reads a skill or prompt document as UTF-8, or a bad input naming it.
///
/// # Errors
/// As [`read_input_text`].
pub fn read_document(path: &Path) -> anyhow::Result<String> {
    read_input_text(path, InputKind::SkillDocument)
}

/// Like [`read_input`], as UTF-8 text; invalid UTF-8 names its line.
pub fn read_input_text(path: &Path, kind: InputKind) -> anyhow::Result<String> {
    let bytes = read_input(path, kind)?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let before = String::from_utf8_lossy(e.as_bytes().get(..valid).unwrap_or_default());
        bad_at(path, Some(line_of(&before, valid)), "not valid UTF-8")
    })
}

/// The built-in prompt templates with the overrides of the folder `dir`
/// (`<name>.md` each, checked against its template's placeholders), or the
/// built-in ones alone without a folder.
pub fn read_prompt_templates(dir: Option<&Path>) -> anyhow::Result<PromptTemplates> {
    let Some(dir) = dir else {
        return Ok(PromptTemplates::default());
    };
    if !dir.is_dir() {
        return Err(bad_at(dir, None, "no such prompt-template folder"));
    }
    Ok(PromptTemplates::with_overrides(dir)
        .map_err(|e| bad_at(dir, None, e.to_string()))?
        .0)
}

fn within_limit(path: &Path, kind: InputKind, size: u64) -> anyhow::Result<()> {
    let limit = kind.limit();
    if size > limit {
        return Err(bad_at(
            path,
            None,
            format!(
                "the {} is {} bytes, over the limit of {} bytes ({}) for this kind of file",
                kind.name(),
                size,
                limit,
                human(limit)
            ),
        ));
    }
    Ok(())
}

/// `4 MiB`, `1 GiB`: a limit as people say it.
fn human(bytes: u64) -> String {
    if bytes >= 1024 * MIB && bytes.is_multiple_of(1024 * MIB) {
        format!("{} GiB", bytes / (1024 * MIB))
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

/// What a path that is not a regular file is instead.
fn file_type_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a folder"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        assert_eq!(
            read_input_text(&path, InputKind::QuestionSet).unwrap(),
            "{}\n"
        );
        std::fs::write(&path, b"ok\n\xff").unwrap();
        let err = read_input_text(&path, InputKind::QuestionSet)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("q.jsonl:2: not valid UTF-8"), "{err}");
    }

    #[test]
    fn folders_devices_and_oversized_files_are_refused_before_reading() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_input(dir.path(), InputKind::SkillDocument)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("cannot read the skill document: a folder, not a regular file"),
            "{err}"
        );
        #[cfg(unix)]
        {
            let err = read_input(Path::new("/dev/zero"), InputKind::SkillDocument)
                .unwrap_err()
                .to_string();
            assert_eq!(
                err,
                "/dev/zero: cannot read the skill document: a device, not a regular file"
            );
        }
        let big = dir.path().join("big.toml");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MIB + 1).unwrap();
        let err = read_input(&big, InputKind::Config).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "big.toml: the configuration is 1048577 bytes, over the limit of 1048576 bytes \
                 (1 MiB) for this kind of file"
            ),
            "{err}"
        );
        assert_eq!(human(1024 * MIB), "1 GiB");
    }
}
