//! What happens to each session read, one at a time as the readers give them: a session left
//! out is counted and said; a kept one is filtered, judged (with the follow-up judge when it
//! runs), added to the task miner and written. Nothing of a session outlives this call but its
//! counts, so a harvest holds one session at a time.

use evolution_harvest::redact::Redactor;
use evolution_harvest::session::SourceKind;
use evolution_harvest::signals::{HarvestRules, judge_with_followup};
use evolution_harvest::tasks::TaskMiner;
use evolution_harvest::trajectory::{to_trajectory, trajectory_id};
use serde_json::Value;

use super::followup_judge::FollowupJudge;
use super::opencode_store::ReadSession;
use super::output::{Harvested, Writer};
use super::{Filters, HarvestCounts, HarvestNote, skip_note};

/// Where the sessions of one harvest go.
pub(super) struct Sink<'a> {
    /// The agent the sessions come from.
    pub kind: SourceKind,
    /// The counts of the harvest.
    pub counts: &'a mut HarvestCounts,
    /// Secrets redacted per kind, over the sessions kept.
    pub redactions: &'a mut Redactor,
    /// The trajectory files.
    pub writer: &'a mut Writer,
    /// The recurring tasks.
    pub miner: &'a mut TaskMiner,
    /// The follow-up judge, when it runs.
    pub followup: Option<&'a mut FollowupJudge>,
    /// The `[harvest]` rules.
    pub rules: &'a HarvestRules,
    /// The command line's filters.
    pub filters: &'a Filters,
}

impl Sink<'_> {
    /// Takes one session read, or the reason it was not.
    ///
    /// # Errors
    /// A trajectory that cannot be written.
    pub(super) fn take(
        &mut self,
        one: ReadSession,
        notes: &mut dyn FnMut(HarvestNote),
    ) -> anyhow::Result<()> {
        let (session, policy) = match one {
            Ok(read) => read,
            Err((path, problem)) => {
                self.counts.skipped_sessions = self.counts.skipped_sessions.saturating_add(1);
                notes(skip_note(&path, &problem));
                return Ok(());
            }
        };
        let counts = &mut *self.counts;
        counts.skipped_records = counts
            .skipped_records
            .saturating_add(session.skipped_records);
        // VS Code and Cursor store a chat as soon as its view opens: one with nothing in it is
        // no session.
        if matches!(self.kind, SourceKind::Cursor | SourceKind::Copilot)
            && session.turns.is_empty()
            && session.tool_calls.is_empty()
        {
            return Ok(());
        }
        if !self.filters.keep(&session) {
            counts.filtered_out = counts.filtered_out.saturating_add(1);
            return Ok(());
        }
        if let Some(r) = &policy.redactor {
            self.redactions.absorb(r);
        }
        let read = self
            .followup
            .as_mut()
            .and_then(|judge| judge.judge(&session, notes));
        let verdict = judge_with_followup(&session, self.rules, read.as_ref());
        self.miner.add_judged(&session, &verdict);
        counts.add_session(&session);
        let mut object = to_trajectory(&session, &verdict);
        if let Some(read) = &read
            && let Some(Value::Object(note)) = object.get_mut("harvest")
        {
            note.insert(
                "followup_judge".to_owned(),
                serde_json::json!({
                    "verdict": read.verdict.name(),
                    "evidence": read.evidence,
                }),
            );
        }
        self.writer.write(
            counts,
            notes,
            Harvested {
                id: trajectory_id(&session),
                object,
                passed: verdict.passed,
                reasons: verdict.describe(),
            },
        )
    }
}
