//! A workspace written to disk for a subprocess agent: its documents in `skills/` and
//! `prompts/` of a fresh temporary folder, and each skill's package in `skills/<folder>/`.

use std::path::Path;

use serde_json::Value;

use crate::package::{SkillPackage, package_only, write_packages};
use crate::runner::{RunnerError, Workspace};

/// Where a workspace was written; removed when dropped.
pub(crate) struct Materialized {
    dir: tempfile::TempDir,
}

impl Materialized {
    pub(crate) fn description(&self, version: &str) -> Value {
        let dir = self.dir.path();
        serde_json::json!({
            "version": version,
            "dir": dir,
            "skills_dir": dir.join("skills"),
            "prompts_dir": dir.join("prompts"),
        })
    }
}

/// Refuses a document name that is not a plain file name.
fn check_name(version: &str, name: &str) -> Result<(), RunnerError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name == "." || name == ".." {
        Some("a relative directory")
    } else if name.contains(['/', '\\', '\0']) {
        Some("contains a path separator or NUL")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(RunnerError::InvalidDocumentName {
            version: version.to_owned(),
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

pub(crate) fn materialize(
    workspace: &Workspace,
    root: Option<&Path>,
    packages: &[SkillPackage],
) -> Result<Materialized, RunnerError> {
    let io = |source| RunnerError::Materialize {
        version: workspace.version.clone(),
        source,
    };
    for name in workspace.skills.keys().chain(workspace.prompts.keys()) {
        check_name(&workspace.version, name)?;
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix("evolution-ws-");
    let dir = match root {
        Some(root) => builder.tempdir_in(root),
        None => builder.tempdir(),
    }
    .map_err(io)?;
    for (sub, docs) in [
        ("skills", &workspace.skills),
        ("prompts", &workspace.prompts),
    ] {
        let sub = dir.path().join(sub);
        std::fs::create_dir(&sub).map_err(io)?;
        for (name, text) in docs {
            if sub.ends_with("skills") && package_only(packages, name) {
                continue;
            }
            std::fs::write(sub.join(name), text).map_err(io)?;
        }
    }
    write_packages(&dir.path().join("skills"), workspace, packages)?;
    Ok(Materialized { dir })
}
