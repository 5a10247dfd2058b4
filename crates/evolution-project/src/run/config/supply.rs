//! How many gate questions a question set gives each skill under the run `skill-evolve init`
//! writes (its split, its epochs, `[gate]` left at its defaults), and how many the gate needs
//! to decide: what `harvest --tasks` says of the tasks it mined before anyone writes a run
//! configuration. The numbers come from the pre-flight's own computation
//! ([`GateSettings::reach`]), so they are the ones `run --dry-run` states for that run.

use std::collections::{BTreeMap, BTreeSet};

use evolution_types::GeneratedQuestion;

use super::gate::{GateSection, check_gate};
use super::probation::hold_back_probation;
use super::questions::split;
use super::*;

/// The training share of the split `skill-evolve init` writes (`[questions] train`).
pub const DEFAULT_TRAIN_SHARE: f64 = 0.5;
/// The gate share of the split `skill-evolve init` writes (`[questions] gate`).
pub const DEFAULT_GATE_SHARE: f64 = 0.5;
/// The epochs `skill-evolve init` writes (`[run] max_epochs`).
pub const DEFAULT_MAX_EPOCHS: u32 = 3;

/// What a question set gives one task type's skill under the default run.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSupply {
    /// The task type (the skill a mined task names).
    pub task_type: String,
    /// Its questions in the set.
    pub questions: usize,
    /// Those not marked `"reviewed": false`.
    pub reviewed: usize,
    /// Those the default split makes gate questions.
    pub gate: usize,
    /// The gate questions 50 % and 80 % power at a 70 % win rate need (`None`: more than
    /// the pre-flight searches, 200).
    pub needed: Vec<(f64, Option<u64>)>,
    /// The exact power with `gate` questions at each win rate the pre-flight states.
    pub power: Vec<(f64, f64)>,
}

impl GateSupply {
    /// The gate questions 50 % power needs, when it is within the search.
    pub fn needed_for_half(&self) -> Option<u64> {
        self.needed
            .iter()
            .find(|(power, _)| (*power - 0.5).abs() < 1e-9)
            .and_then(|(_, n)| *n)
    }

    /// Whether the gate questions fall short of 50 % power (or of any the search found).
    pub fn too_few(&self) -> bool {
        self.needed_for_half()
            .is_none_or(|n| u64::try_from(self.gate).unwrap_or(u64::MAX) < n)
    }
}

/// The gate questions each of `task_types` gets from `questions` under the run
/// `skill-evolve init` writes: the questions split with [`DEFAULT_TRAIN_SHARE`] and
/// [`DEFAULT_GATE_SHARE`] (seed 0), [`DEFAULT_MAX_EPOCHS`] epochs, one skill per task type
/// of the set, `[gate]` at its defaults (probation held back as it chooses); and, from the
/// pre-flight, the gate questions a decision needs. A task type the set does not hold gets
/// no entry.
///
/// # Errors
/// The gate's computation refusing its defaults (not expected), as
/// [`GateSettings::reach`].
pub fn default_gate_supply(
    questions: &[GeneratedQuestion],
    task_types: &BTreeSet<String>,
) -> anyhow::Result<Vec<GateSupply>> {
    let src = Source {
        path: Path::new("evolve.toml"),
        text: "",
    };
    let settings = check_gate(&src, &GateSection::default())?;
    let (train, gate, _) = split(questions, 0, DEFAULT_TRAIN_SHARE, DEFAULT_GATE_SHARE);
    let skills: BTreeSet<&str> = questions.iter().map(|q| q.task_type.as_str()).collect();
    let horizon = capped_horizon(
        horizon_of(
            &train,
            0,
            DEFAULT_MAX_EPOCHS,
            skills.len(),
            &BTreeMap::new(),
            &crate::layout::TaskSkills::default(),
        ),
        DEFAULT_MAX_EPOCHS,
        settings.best_per_epoch,
    );
    let gate = hold_back_probation(&src, None, &settings, gate, horizon)?.gate;
    let mut supply = Vec::new();
    for task_type in task_types {
        let of_type = |q: &&GeneratedQuestion| &q.task_type == task_type;
        let total = questions.iter().filter(of_type).count();
        if total == 0 {
            continue;
        }
        let unreviewed = questions
            .iter()
            .filter(of_type)
            .filter(|q| q.extra.get("reviewed") == Some(&serde_json::Value::Bool(false)))
            .count();
        let n = gate.iter().filter(of_type).count();
        let reach = settings.reach(n, horizon)?;
        let (needed, power) = match reach.pool {
            Some(pool) => (pool.needed, pool.power),
            None => (Vec::new(), reach.power),
        };
        supply.push(GateSupply {
            task_type: task_type.clone(),
            questions: total,
            reviewed: total - unreviewed,
            gate: n,
            needed,
            power,
        });
    }
    Ok(supply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn questions(counts: &[(&str, usize)]) -> Vec<GeneratedQuestion> {
        counts
            .iter()
            .flat_map(|(task, n)| {
                (0..*n).map(move |i| GeneratedQuestion {
                    question_id: format!("{task}-{i}"),
                    task_type: (*task).to_owned(),
                    ..GeneratedQuestion::default()
                })
            })
            .collect()
    }

    fn types(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn each_skill_gets_its_share_of_the_split_and_the_pre_flights_needs() {
        let set = questions(&[("refunds", 30), ("invoices", 4)]);
        let supply = default_gate_supply(&set, &types(&["refunds", "invoices", "absent"])).unwrap();
        assert_eq!(supply.len(), 2);
        let total_gate: usize = supply.iter().map(|s| s.gate).sum();
        // Half of 34 questions, seeded: the split itself decides which.
        assert_eq!(total_gate, 17);
        let (_, gate, _) = split(&set, 0, DEFAULT_TRAIN_SHARE, DEFAULT_GATE_SHARE);
        for s in &supply {
            let expected = gate.iter().filter(|q| q.task_type == s.task_type).count();
            assert_eq!(s.gate, expected, "{s:?}");
            assert_eq!(s.reviewed, s.questions);
        }
        // The needs are the pre-flight's for this run: 2 skills, 3 epochs.
        let settings = check_gate(
            &Source {
                path: Path::new("x"),
                text: "",
            },
            &GateSection::default(),
        )
        .unwrap();
        let (train, _, _) = split(&set, 0, DEFAULT_TRAIN_SHARE, DEFAULT_GATE_SHARE);
        let horizon = horizon_of(
            &train,
            0,
            3,
            2,
            &BTreeMap::new(),
            &crate::layout::TaskSkills::default(),
        );
        let reach = settings.reach(supply[0].gate, horizon).unwrap();
        assert_eq!(supply[0].needed, reach.pool.unwrap().needed);
        let half = supply[0].needed_for_half().unwrap();
        assert!(half > 30, "{half}");
        assert!(supply.iter().all(GateSupply::too_few));
    }

    #[test]
    fn unreviewed_questions_are_counted_apart() {
        let mut set = questions(&[("refunds", 3)]);
        set[0]
            .extra
            .insert("reviewed".to_owned(), serde_json::Value::Bool(false));
        set[1]
            .extra
            .insert("reviewed".to_owned(), serde_json::Value::Bool(true));
        let supply = default_gate_supply(&set, &types(&["refunds"])).unwrap();
        assert_eq!((supply[0].questions, supply[0].reviewed), (3, 2));
    }

    #[test]
    fn enough_gate_questions_are_not_too_few() {
        let set = questions(&[("refunds", 400)]);
        let supply = default_gate_supply(&set, &types(&["refunds"])).unwrap();
        let half = supply[0].needed_for_half().unwrap();
        assert!(
            supply[0].gate >= usize::try_from(half).unwrap(),
            "{supply:?}"
        );
        assert!(!supply[0].too_few());
    }
}
