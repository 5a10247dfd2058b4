//! What a harvest's tasks file gives each skill its mined tasks touch: the tasks, the gate
//! questions `run`'s default split makes of them and the gate questions the gate needs to
//! decide ([`crate::run::config::default_gate_supply`]), one line per skill, and a hint when
//! they fall short.

use std::collections::BTreeSet;
use std::path::Path;

use evolution_harvest::tasks::MinedTask;

use crate::render::terminal_safe;
use crate::run::config::{
    DEFAULT_GATE_SHARE, DEFAULT_MAX_EPOCHS, DEFAULT_TRAIN_SHARE, GateSupply, default_gate_supply,
};

/// The supply of each skill `mined` touches, from the tasks file at `path` as written (the
/// tasks `run` would read from it).
///
/// # Errors
/// A tasks file that cannot be read as a question set.
pub(super) fn supply_of(path: &Path, mined: &[MinedTask]) -> anyhow::Result<Vec<GateSupply>> {
    let touched: BTreeSet<String> = mined.iter().map(|t| t.task_type.clone()).collect();
    if touched.is_empty() {
        return Ok(Vec::new());
    }
    let questions = crate::questions::load_questions(path)?;
    default_gate_supply(&questions, &touched)
}

/// `n gate question(s)` needed, or past the search.
fn needed_words(needed: Option<u64>) -> String {
    needed.map_or_else(|| "more than 200".to_owned(), |n| n.to_string())
}

/// The lines the summary prints: a heading naming the run assumed, one line per skill, and
/// a hint per skill whose gate questions fall short of 50 % power.
pub(super) fn supply_lines(supply: &[GateSupply], min_sessions: usize) -> Vec<String> {
    if supply.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "gate questions per skill, under the run `init` writes (train {DEFAULT_TRAIN_SHARE} / \
         gate {DEFAULT_GATE_SHARE}, seed 0, {DEFAULT_MAX_EPOCHS} epochs, one skill per task \
         type, [gate] defaults; `run --dry-run` states your own run's):"
    )];
    for s in supply {
        let skill = terminal_safe(&s.task_type).into_owned();
        let needs: Vec<String> = s
            .needed
            .iter()
            .map(|(power, n)| format!("{} for {:.0} %", needed_words(*n), power * 100.0))
            .collect();
        let reviewed = if s.reviewed == s.questions {
            "all reviewed".to_owned()
        } else {
            format!("{} reviewed", s.reviewed)
        };
        lines.push(format!(
            "  {skill}: {} task{} ({reviewed}), {} gate question{}; a decision needs {} power \
             at a 70 % win rate",
            s.questions,
            if s.questions == 1 { "" } else { "s" },
            s.gate,
            if s.gate == 1 { "" } else { "s" },
            needs.join(", "),
        ));
        if s.too_few() {
            let half = s.needed_for_half();
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            let tasks = half.map(|n| ((n as f64) / DEFAULT_GATE_SHARE).ceil() as u64);
            let more = if min_sessions > 1 {
                "; --min-sessions 1 also mines requests asked once"
            } else {
                ""
            };
            lines.push(format!(
                "  hint: {skill} has too few gate questions to decide (about {} tasks give the \
                 {} gate questions of 50 % power){more}; questions you write yourself can be \
                 added to the file too",
                needed_words(tasks),
                needed_words(half),
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn supply(gate: usize, half: Option<u64>, reviewed: usize) -> GateSupply {
        GateSupply {
            task_type: "refunds".to_owned(),
            questions: 2 * gate,
            reviewed,
            gate,
            needed: vec![(0.5, half), (0.8, half.map(|n| n * 2))],
            power: Vec::new(),
        }
    }

    #[test]
    fn a_skill_short_of_gate_questions_gets_a_hint() {
        let lines = supply_lines(&[supply(3, Some(35), 6)], 2);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(
            lines[1],
            "  refunds: 6 tasks (all reviewed), 3 gate questions; a decision needs 35 for 50 %, \
             70 for 80 % power at a 70 % win rate"
        );
        assert!(lines[2].contains("about 70 tasks give the 35 gate questions"));
        assert!(lines[2].contains("--min-sessions 1"));
        // Already mining single sessions: no flag to suggest.
        let lines = supply_lines(&[supply(3, None, 1)], 1);
        assert!(lines[1].contains("(1 reviewed)"));
        assert!(lines[1].contains("more than 200 for 50 %"));
        assert!(!lines[2].contains("--min-sessions"));
    }

    #[test]
    fn enough_gate_questions_need_no_hint_and_nothing_prints_for_no_skill() {
        assert_eq!(supply_lines(&[supply(40, Some(35), 80)], 2).len(), 2);
        assert!(supply_lines(&[], 2).is_empty());
    }

    #[test]
    fn a_hostile_task_type_is_escaped() {
        let mut s = supply(40, Some(35), 80);
        s.task_type = "a\u{1b}[31mb".to_owned();
        let lines = supply_lines(&[s], 2);
        assert!(!lines[1].contains('\u{1b}'), "{lines:?}");
    }
}
