//! `[preferences]`: the file of the project's house rules. `--preferences` wins over
//! `file`; without either, `preferences.md` beside the configuration is read when it exists.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::Source;
use crate::error::bad_option;
use crate::preferences::{PREFERENCES_FILE, ProjectPreferences};

/// The `[preferences]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PreferencesSection {
    /// The house rules' file, relative to the configuration.
    file: Option<Spanned<PathBuf>>,
}

/// The house rules of a configuration: `flag` (relative to the current folder), else the
/// `[preferences] file` key (relative to `base`, the configuration's folder), else
/// `preferences.md` in `base` when it exists, else none. A file named but missing is an
/// error naming the flag or the key's line; a bad file names its own line.
pub(super) fn check_preferences(
    src: &Source<'_>,
    flag: Option<&Path>,
    section: &PreferencesSection,
    base: &Path,
) -> anyhow::Result<ProjectPreferences> {
    let path = match (flag, &section.file) {
        (Some(flag), _) => {
            if !flag.exists() {
                return Err(bad_option(format!(
                    "--preferences {}: no such file",
                    flag.display()
                )));
            }
            flag.to_path_buf()
        }
        (None, Some(key)) => {
            let path = base.join(key.get_ref());
            if !path.exists() {
                return Err(src.at(
                    key.span(),
                    format!("[preferences] file {}: no such file", path.display()),
                ));
            }
            path
        }
        (None, None) => {
            let path = base.join(PREFERENCES_FILE);
            if !path.exists() {
                return Ok(ProjectPreferences::default());
            }
            path
        }
    };
    ProjectPreferences::read(&path)
}
