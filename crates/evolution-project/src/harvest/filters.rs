//! The session filters of the command line: the project, the first day and the skill, and
//! the rollouts a replay leaves, which are never the user's.

use std::path::{Path, PathBuf};

use evolution_harvest::session::Session;

use crate::error::bad_option;

/// The session filters of the command line.
pub(super) struct Filters {
    pub(super) project: Option<String>,
    pub(super) since: Option<String>,
    pub(super) skill: Option<String>,
    /// The host-agent adapter's rollouts folder: a session that ran only there (or in a run's
    /// question folder) is a replay, never the user's.
    pub(super) rollouts: Option<PathBuf>,
}

impl Filters {
    pub(super) fn keep(&self, session: &Session) -> bool {
        if !session.projects.is_empty()
            && session
                .projects
                .iter()
                .all(|p| crate::rollout::is_rollout_folder(Path::new(p), self.rollouts.as_deref()))
        {
            return false;
        }
        if let Some(project) = &self.project
            && !session.ran_in(project)
        {
            return false;
        }
        if let Some(since) = &self.since
            && session
                .last_timestamp
                .as_deref()
                .is_none_or(|last| last < since.as_str())
        {
            return false;
        }
        if let Some(skill) = &self.skill
            && !session.used_skill(skill)
        {
            return false;
        }
        true
    }
}

/// `YYYY-MM-DD` with a plausible month and day.
pub(super) fn check_date(raw: &str) -> anyhow::Result<String> {
    let bad = || {
        bad_option(format!(
            "--since {raw:?}: expected a day as YYYY-MM-DD, such as 2026-01-31"
        ))
    };
    let parts: Vec<&str> = raw.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(bad());
    };
    let number = |s: &str, len: usize| {
        (s.len() == len && s.chars().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    match (number(year, 4), number(month, 2), number(day, 2)) {
        (Some(_), Some(m), Some(d)) if (1..=12).contains(&m) && (1..=31).contains(&d) => {
            Ok(raw.to_owned())
        }
        _ => Err(bad()),
    }
}
