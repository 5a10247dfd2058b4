//! Watching provisionally accepted versions: each is judged on the
//! probation pool right after its accept, and rolled back on a `rollback`
//! verdict.

use std::collections::BTreeSet;

use super::documents::workspace_at;
use super::{LoopConfig, LoopContext, LoopError, LoopState};
use crate::validate::ValidationError;

/// Judges every pending probation on the probation pool, right after the
/// provisional accept that started it (or, after a kill, when the loop
/// resumes), before anything else is gated on top of it. The verdict is
/// saved before a rollback moves the store, and a resumed run keeps it. A `rollback`
/// verdict restores the version it replaced (when the watched version is
/// still current, so a rollback already done before a kill is not done
/// twice); every verdict ends the watch and is kept in the accept's
/// [`GateRecord::probation`]. With an empty pool the watch ends
/// `unverified` at once.
pub(super) async fn settle_probations(
    ctx: LoopContext<'_>,
    config: &LoopConfig,
    provenance: &BTreeSet<String>,
    state: &mut LoopState,
) -> Result<(), LoopError> {
    while let Some(mut watch) = state.probations.first().cloned() {
        super::phases(ctx, state.epoch).start(crate::phase::Phase::Probation, &watch.version);
        let verdict = match watch.verdict {
            // Judged before a kill: the saved verdict stands.
            Some(verdict) => verdict,
            None => {
                let previous = workspace_at(ctx.store, config, &watch.previous_version)?;
                let watched = workspace_at(ctx.store, config, &watch.version)?;
                let verdict = watch
                    .judge(
                        ctx.validation,
                        state.gatekeeper.config(),
                        &previous,
                        &watched,
                        provenance,
                        &config.probation,
                    )
                    .await?;
                // The verdict is saved before the store is rolled back.
                if let Some(first) = state.probations.first_mut() {
                    first.clone_from(&watch);
                }
                state.checkpoint(ctx)?;
                verdict
            }
        };
        if verdict == evolution_gate::ProbationVerdict::Rollback {
            watch
                .settle(
                    ctx.store,
                    &evolution_gate::Gate::new(*state.gatekeeper.params())
                        .map_err(ValidationError::from)?,
                )
                .map_err(ValidationError::from)?;
        }
        if let Some(record) = state
            .records
            .iter_mut()
            .rev()
            .find(|r| r.new_version.as_deref() == Some(watch.version.as_str()))
        {
            record.probation = Some(watch);
        }
        state.probations.remove(0);
        state.checkpoint(ctx)?;
    }
    Ok(())
}
