//! The documents of a version as a [`Workspace`], and how a stale
//! proposal's change is carried over to documents changed since.

use std::collections::BTreeMap;

use evolution_types::VersionedStore;

use super::{LoopConfig, Proposal};
use crate::runner::Workspace;
use crate::validate::ValidationError;

/// The documents of the store's current version.
pub(super) fn workspace(
    store: &dyn VersionedStore,
    config: &LoopConfig,
) -> Result<Workspace, ValidationError> {
    let version = store.current_version()?;
    workspace_at(store, config, &version)
}

/// The documents of `version`, prompts and skills apart.
pub(super) fn workspace_at(
    store: &dyn VersionedStore,
    config: &LoopConfig,
    version: &str,
) -> Result<Workspace, ValidationError> {
    Ok(Workspace::of_documents(
        version,
        store.documents(version)?,
        &config.prompt_files,
    ))
}

/// `base` with `writes` in place, named `label` (a candidate's documents).
pub(super) fn with_writes(
    base: &Workspace,
    label: &str,
    writes: &BTreeMap<String, String>,
    config: &LoopConfig,
) -> Workspace {
    let mut ws = base.clone();
    ws.version = label.to_owned();
    for (name, text) in writes {
        if config.prompt_files.contains(name) {
            ws.prompts.insert(name.clone(), text.clone());
        } else {
            ws.skills.insert(name.clone(), text.clone());
        }
    }
    ws
}

/// The text of document `name`, a skill or a prompt.
pub(super) fn document<'w>(ws: &'w Workspace, name: &str) -> Option<&'w String> {
    ws.skills.get(name).or_else(|| ws.prompts.get(name))
}

/// A stale proposal's change carried over to the current documents: when
/// it writes one document, its record's target, its edits are its whole
/// change (re-applied to the text it was written against they give its
/// text) and each of them still applies where it asked on the current
/// text, the result is the new write. `None` otherwise: the proposal is
/// skipped.
pub(super) fn rebase(
    proposal: &Proposal,
    then: &Workspace,
    now: &Workspace,
) -> Option<BTreeMap<String, String>> {
    let mut writes = proposal.writes.iter();
    let (name, written) = writes.next()?;
    let record = &proposal.record;
    if writes.next().is_some() || *name != record.target_file || record.edits.is_empty() {
        return None;
    }
    let applied = |text: &str| {
        let (out, reports) = evolution_patch::apply_patch_with_report(text, &record.edits, &[]);
        let clean = reports
            .iter()
            .all(|r| r.status.kind() == evolution_types::EditStatusKind::Applied);
        clean.then_some(out)
    };
    if applied(document(then, name)?)? != *written {
        return None;
    }
    let current = document(now, name)?;
    let rebased = applied(current)?;
    (rebased != *current).then(|| BTreeMap::from([(name.clone(), rebased)]))
}
