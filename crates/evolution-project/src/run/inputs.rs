//! What a run's results depend on, recorded in its folder when it starts (`inputs.json`)
//! and compared when the same command runs again: a run resumes only with the inputs it
//! started with.
//!
//! The record holds the SHA-256 of every skill and prompt document (and of every other file
//! of an Agent Skills skill's folder, which the agent is given), and of every setting
//! that changes what the run does: the question set and its split (shares, shuffle,
//! probation share; or each file of a suite folder), the agent (its command and the files
//! of the project it names, mode, timeout, scoring, environment, output bounds), the gate, the epochs, the edit settings,
//! the source trees, the task types' skills, the profile, the model and the house rules
//! (the preferences file's text and checks). The budget caps are
//! left out (a run stopped at a cap continues once it is raised), and so are the agent's
//! concurrency and how the model is reached (its key's variable, timeouts, retries).
//! Values are stored hashed only, so no value of `[agent] env` is written down.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::{RunConfig, SplitSource};
use super::dir::RunDir;
use super::stage::sha256_hex;
use crate::error::{bad_at, bad_option};
use crate::input::{InputKind, read_input_text};
use crate::render::terminal_safe;
use crate::working_copy::write_atomically;

/// The format of `inputs.json` this version writes and reads.
pub const INPUTS_FORMAT: u32 = 1;

/// `inputs.json`: what a run was started with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInputs {
    /// The record's format ([`INPUTS_FORMAT`]).
    pub format: u32,
    /// Every skill document: its name in the run's store → SHA-256 of its user file's text;
    /// and every other file of an Agent Skills skill's folder given to the agent
    /// (`<name>/<path>`) → SHA-256 of its bytes.
    pub skills: BTreeMap<String, String>,
    /// Every prompt document, the same way.
    pub prompts: BTreeMap<String, String>,
    /// Every setting that changes what the run does: its key (`[questions] seed`) →
    /// SHA-256 of its value.
    pub settings: BTreeMap<String, String>,
}

/// The keys of the settings that decide which question falls in which part of the split.
const SPLIT_KEYS: [&str; 5] = [
    "[questions] train",
    "[questions] gate",
    "[questions] holdout",
    "[questions] seed",
    "[gate] probation",
];

/// The key of the question set's own text.
const QUESTION_SET: &str = "[questions] file";

/// The start of the key of each file of a suite (`[questions] suite gate.jsonl`).
const SUITE_PREFIX: &str = "[questions] suite ";

impl RunInputs {
    /// The inputs of `config` as they are now: its documents read from the user's files.
    ///
    /// # Errors
    /// A document that cannot be read (a bad input).
    pub fn of(config: &RunConfig) -> anyhow::Result<Self> {
        let mut skills = BTreeMap::new();
        for doc in config.skill_docs.iter().chain(&config.reference_docs) {
            let text = read_input_text(&doc.path, InputKind::SkillDocument)?;
            skills.insert(doc.document.clone(), sha256_hex(&text));
        }
        let planned =
            crate::agent_workspace::planned(&config.skill_docs, &config.reference_docs, None, &[]);
        skills.extend(crate::skill_package::file_digests(&planned)?);
        let mut prompts = BTreeMap::new();
        if let Some(dir) = &config.prompts {
            for name in &config.prompt_files {
                let text = read_input_text(&dir.join(name), InputKind::PromptDocument)?;
                prompts.insert(name.clone(), sha256_hex(&text));
            }
        }
        let split = &config.split_inputs;
        let mut owned: Vec<(String, String)> = Vec::new();
        let mut values: Vec<(&str, String)> = Vec::new();
        match &split.source {
            SplitSource::Shares {
                questions_sha256,
                shares: [train, gate, holdout],
                seed,
            } => values.extend([
                (QUESTION_SET, questions_sha256.clone()),
                ("[questions] train", format!("{train:?}")),
                ("[questions] gate", format!("{gate:?}")),
                ("[questions] holdout", format!("{holdout:?}")),
                ("[questions] seed", seed.to_string()),
            ]),
            SplitSource::Suite { files } => owned.extend(files.iter().map(|(name, hash)| {
                (
                    format!("{SUITE_PREFIX}{name}"),
                    hash.clone().unwrap_or_else(|| "absent".to_owned()),
                )
            })),
        }
        values.extend([
            ("[gate] probation", format!("{:?}", split.probation)),
            ("[run] max_epochs", config.max_epochs.to_string()),
            ("[run] tree", serde_json::to_string(&config.tree_data)?),
            (
                "[evolve] schedule, max_edits, min_edits",
                format!("{:?}", config.schedule),
            ),
            ("[evolve] system_prompt", config.system_prompt.clone()),
            (
                "[evolve] skill_update",
                format!("{:?}", config.skill_update),
            ),
            (
                "[evolve] consolidate_notes",
                config.consolidate_notes.to_string(),
            ),
            (
                "[evolve] consolidate_chars",
                config.consolidate_chars.to_string(),
            ),
            ("[skills]", format!("{:?}", config.task_skills)),
            ("[profile]", serde_json::to_string(&config.profile)?),
            ("[llm]", config.llm.answers_identity()),
        ]);
        // Only a project with house rules records them, so a run started before they
        // existed resumes as it was.
        if config.preferences.file.is_some() {
            values.push((
                "[preferences]",
                serde_json::to_string(&config.preferences.preferences)?,
            ));
        }
        values.extend(config.gate_settings.resume_settings());
        values.extend(config.agent.resume_settings().iter().cloned());
        let settings = values
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .chain(owned)
            .map(|(key, value)| (key, sha256_hex(&value)))
            .collect();
        Ok(RunInputs {
            format: INPUTS_FORMAT,
            skills,
            prompts,
            settings,
        })
    }

    /// What differs between `before` (the record of the run's start) and these inputs, one
    /// phrase per kind of input, in a fixed order: `the skills (refunds.md)`, `the question
    /// split ([questions] seed)`. `questions_file` names the question set (or the suite
    /// folder, before the name of its file that changed) in its phrase.
    pub fn changes_since(&self, before: &RunInputs, questions_file: &str) -> Vec<String> {
        let mut phrases = Vec::new();
        for (what, now, then) in [
            ("the skills", &self.skills, &before.skills),
            ("the prompts", &self.prompts, &before.prompts),
        ] {
            let changed = changed_keys(now, then);
            if !changed.is_empty() {
                phrases.push(format!("{what} ({})", changed.join(", ")));
            }
        }
        let mut groups: Vec<(&'static str, Vec<String>)> = Vec::new();
        for key in changed_keys(&self.settings, &before.settings) {
            let group = group_of(&key);
            let shown = if key == QUESTION_SET {
                terminal_safe(questions_file).into_owned()
            } else if let Some(name) = key.strip_prefix(SUITE_PREFIX) {
                format!("{}/{name}", terminal_safe(questions_file))
            } else {
                key
            };
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, keys)) => keys.push(shown),
                None => groups.push((group, vec![shown])),
            }
        }
        groups.sort_by_key(|(group, _)| GROUPS.iter().position(|g| g == group));
        phrases.extend(
            groups
                .into_iter()
                .map(|(group, keys)| format!("{group} ({})", keys.join(", "))),
        );
        phrases
    }

    /// Refuses to resume the run of `config` in `dir` unless it was started with these
    /// inputs. A folder with nothing to resume from (no checkpoint, store or run log) passes;
    /// one with something but without a record (made by an earlier version) is refused, as
    /// a change of its inputs cannot be ruled out.
    ///
    /// # Errors
    /// One bad-input line saying what changed and naming `--fresh`.
    pub fn check_resumable(&self, config: &RunConfig, dir: &RunDir) -> anyhow::Result<()> {
        let state = dir.checkpoint().is_file() || dir.store().exists() || dir.runlog().exists();
        if !state {
            return Ok(());
        }
        let refuse = |why: String| {
            bad_option(format!(
                "run {:?} cannot resume: {why}; start over with --fresh, or use another run name",
                config.name
            ))
        };
        let Some(before) = read_inputs(dir)? else {
            return Err(refuse(
                "it was started by an earlier version that did not record its inputs, so a \
                 change to its skills, questions or settings cannot be ruled out"
                    .to_owned(),
            ));
        };
        if before.format != INPUTS_FORMAT {
            return Err(refuse(format!(
                "its record of its inputs ({}) is in another format (version {}, this one \
                 reads {INPUTS_FORMAT})",
                dir.inputs().display(),
                before.format
            )));
        }
        let changes = self.changes_since(&before, &config.split_inputs.path.display().to_string());
        if changes.is_empty() {
            return Ok(());
        }
        Err(refuse(format!(
            "{} changed since it started",
            join_words(&changes)
        )))
    }

    /// Writes the record to `dir`'s `inputs.json`, replacing any earlier one.
    ///
    /// # Errors
    /// A file that cannot be written.
    pub fn record(&self, dir: &RunDir) -> anyhow::Result<()> {
        write_atomically(&dir.inputs(), &serde_json::to_string_pretty(self)?)
    }
}

/// Reads `inputs.json` of `dir`, `None` when the run has none.
///
/// # Errors
/// A file that cannot be read or is not such a record.
pub fn read_inputs(dir: &RunDir) -> anyhow::Result<Option<RunInputs>> {
    let path = dir.inputs();
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            bad_at(
                &path,
                None,
                format!(
                    "not a record of the run's inputs: {e}; start over with --fresh, or use \
                     another run name"
                ),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad_at(&path, None, format!("cannot read: {e}"))),
    }
}

/// The kinds of settings, in the order a refusal names them.
const GROUPS: [&str; 12] = [
    "the question set",
    "the question split",
    "the agent",
    "the gate settings",
    "the model",
    "the number of epochs",
    "the edit settings",
    "the task types' skills",
    "the source trees",
    "the profile",
    "the house rules",
    "the settings",
];

/// The kind of the setting `key`, as a refusal names it.
fn group_of(key: &str) -> &'static str {
    let [
        set,
        split,
        agent,
        gate,
        model,
        epochs,
        edits,
        skills,
        trees,
        profile,
        rules,
        other,
    ] = GROUPS;
    if key == QUESTION_SET || key.starts_with(SUITE_PREFIX) {
        set
    } else if SPLIT_KEYS.contains(&key) {
        split
    } else if key.starts_with("[agent]") {
        agent
    } else if key.starts_with("[gate]") {
        gate
    } else if key.starts_with("[llm]") {
        model
    } else if key == "[run] max_epochs" {
        epochs
    } else if key.starts_with("[evolve]") {
        edits
    } else if key == "[skills]" {
        skills
    } else if key == "[run] tree" {
        trees
    } else if key == "[profile]" {
        profile
    } else if key == "[preferences]" {
        rules
    } else {
        other
    }
}

/// The keys whose values differ between `now` and `then`, or that only one of them has,
/// sorted and escaped for a terminal.
fn changed_keys(now: &BTreeMap<String, String>, then: &BTreeMap<String, String>) -> Vec<String> {
    let mut keys: Vec<String> = now
        .keys()
        .chain(then.keys())
        .filter(|key| now.get(*key) != then.get(*key))
        .map(|key| terminal_safe(key).into_owned())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// `a`, `a and b`, `a, b and c`.
fn join_words(items: &[String]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(skills: &[(&str, &str)], settings: &[(&str, &str)]) -> RunInputs {
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        RunInputs {
            format: INPUTS_FORMAT,
            skills: map(skills),
            prompts: BTreeMap::new(),
            settings: map(settings),
        }
    }

    #[test]
    fn changes_name_each_kind_of_input_once() {
        let before = inputs(
            &[("refunds.md", "a"), ("general.md", "b")],
            &[
                (QUESTION_SET, "q"),
                ("[questions] seed", "0"),
                ("[gate] probation", "0"),
                ("[agent] command", "sh"),
                ("[budget]", "x"),
            ],
        );
        assert!(before.changes_since(&before, "q.jsonl").is_empty());
        let now = inputs(
            &[("refunds.md", "A"), ("general.md", "b"), ("new.md", "c")],
            &[
                (QUESTION_SET, "Q"),
                ("[questions] seed", "3"),
                ("[gate] probation", "0.2"),
                ("[agent] command", "sh"),
            ],
        );
        assert_eq!(
            now.changes_since(&before, "q.jsonl"),
            [
                "the skills (new.md, refunds.md)",
                "the question set (q.jsonl)",
                "the question split ([gate] probation, [questions] seed)",
                "the settings ([budget])",
            ]
        );
        assert_eq!(
            join_words(&now.changes_since(&before, "q.jsonl")[..2]),
            "the skills (new.md, refunds.md) and the question set (q.jsonl)"
        );
    }

    /// The inputs of the configuration `config` in the project folder `d`.
    fn inputs_in(d: &std::path::Path, config: &str) -> RunInputs {
        std::fs::write(d.join("evolve.toml"), config).unwrap();
        let loaded = super::super::config::load(&d.join("evolve.toml"), &Default::default());
        RunInputs::of(&loaded.unwrap()).unwrap()
    }

    #[test]
    fn the_agents_script_and_the_question_set_are_inputs_and_the_caps_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("skills")).unwrap();
        std::fs::write(d.join("skills/general.md"), "RULE a => b\n").unwrap();
        std::fs::write(d.join("agent.sh"), "echo one\n").unwrap();
        let questions: String = (0..10)
            .map(|i| format!("{{\"question_id\": \"q{i}\", \"answer\": \"yes\"}}\n"))
            .collect();
        std::fs::write(d.join("questions.jsonl"), &questions).unwrap();
        let config = "[run]\nname = \"r\"\nskills = \"skills\"\n\n\
                      [agent]\ncommand = [\"sh\", \"agent.sh\"]\n\n\
                      [questions]\nfile = \"questions.jsonl\"\ntrain = 0.5\ngate = 0.5\n\n\
                      [budget]\nmax_llm_calls = 10\n";
        let before = inputs_in(d, config);
        let changes = |now: &RunInputs| now.changes_since(&before, "questions.jsonl");
        // What only bounds or speeds the run up is not an input.
        let raised = config
            .replace("max_llm_calls = 10", "max_llm_calls = 99")
            .replace("[questions]", "concurrency = 4\n\n[questions]");
        assert!(changes(&inputs_in(d, &raised)).is_empty());

        std::fs::write(d.join("agent.sh"), "echo two\n").unwrap();
        assert_eq!(
            changes(&inputs_in(d, config)),
            ["the agent ([agent] command)"]
        );
        std::fs::write(d.join("agent.sh"), "echo one\n").unwrap();

        std::fs::write(d.join("questions.jsonl"), questions.replace("yes", "no")).unwrap();
        let seeded = config.replace("gate = 0.5\n", "gate = 0.5\nseed = 4\n");
        assert_eq!(
            changes(&inputs_in(d, &seeded)),
            [
                "the question set (questions.jsonl)",
                "the question split ([questions] seed)"
            ]
        );
        std::fs::write(d.join("questions.jsonl"), &questions).unwrap();

        std::fs::write(d.join("skills/general.md"), "RULE a => c\n").unwrap();
        assert_eq!(changes(&inputs_in(d, config)), ["the skills (general.md)"]);
    }

    #[test]
    fn each_file_of_a_suite_is_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("suite/skills")).unwrap();
        std::fs::write(d.join("suite/skills/general.md"), "RULE a => b\n").unwrap();
        std::fs::write(d.join("agent.sh"), "echo one\n").unwrap();
        let part = |prefix: &str, n: usize| -> String {
            (0..n)
                .map(|i| format!("{{\"question_id\": \"{prefix}{i}\", \"answer\": \"yes\"}}\n"))
                .collect()
        };
        std::fs::write(d.join("suite/train.jsonl"), part("t", 2)).unwrap();
        std::fs::write(d.join("suite/gate.jsonl"), part("g", 8)).unwrap();
        let config = "[run]\nname = \"r\"\nskills = \"suite/skills\"\n\n\
                      [agent]\ncommand = [\"sh\", \"agent.sh\"]\n\n\
                      [questions]\nsuite = \"suite\"\n";
        let before = inputs_in(d, config);
        assert!(before.settings.contains_key("[questions] suite gate.jsonl"));
        assert!(!before.settings.contains_key(QUESTION_SET));
        let changes = |now: &RunInputs| now.changes_since(&before, "suite");
        assert!(changes(&inputs_in(d, config)).is_empty());
        std::fs::write(d.join("suite/gate.jsonl"), part("h", 8)).unwrap();
        std::fs::write(d.join("suite/holdout.jsonl"), part("o", 1)).unwrap();
        assert_eq!(
            changes(&inputs_in(d, config)),
            ["the question set (suite/gate.jsonl, suite/holdout.jsonl)"]
        );
    }

    #[test]
    fn every_setting_key_has_its_own_kind() {
        assert_eq!(group_of("[agent] env"), "the agent");
        assert_eq!(group_of("[gate] ladder"), "the gate settings");
        assert_eq!(group_of("[gate] probation"), "the question split");
        assert_eq!(group_of("[run] max_epochs"), "the number of epochs");
        assert_eq!(group_of("[run] tree"), "the source trees");
        assert_eq!(group_of("[llm]"), "the model");
        assert_eq!(group_of("[evolve] skill_update"), "the edit settings");
        assert_eq!(group_of("[skills]"), "the task types' skills");
        assert_eq!(group_of("[profile]"), "the profile");
        assert_eq!(
            group_of("[questions] suite train.jsonl"),
            "the question set"
        );
    }
}
