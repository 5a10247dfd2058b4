//! `skill-evolve capture`: adds one rollout's result (question, prediction, whether it was
//! right, steps, skill, time, metadata) to a folder as a trajectory JSON file, the format
//! `evolve --trajectories` reads. An agent's harness calls it once per rollout; the folder is
//! then evolution input as it stands.
//!
//! A file is never replaced: a given `--id` that is already in the folder is refused, and a
//! generated id takes the next free number. The file appears whole or not at all, and its
//! text is redacted like everything `harvest` writes (`--no-redact` keeps it, and says so).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Args;
use evolution_harness::MAX_TRAJECTORY_FILE_BYTES;
use evolution_harvest::capture::{Rollout, iso_utc, rollout_trajectory};
use evolution_harvest::redact::Redactor;
use evolution_harvest::trajectory::{MAX_STEPS, safe_id};
use serde_json::{Map, Value};

use crate::out::outln;
use crate::render::terminal_safe;
use evolution_project::error::{bad_at, bad_option};
use evolution_project::harvest::read_bounded;

/// Options of `capture`.
#[derive(Debug, Args)]
pub(crate) struct CaptureArgs {
    /// The folder of trajectories to add the rollout to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: PathBuf,
    /// What the agent was asked.
    #[arg(long)]
    pub(crate) question: String,
    /// What the agent answered.
    #[arg(long)]
    pub(crate) prediction: String,
    /// Whether the answer was right.
    #[arg(long, value_name = "true|false", action = clap::ArgAction::Set, value_parser = clap::value_parser!(bool))]
    pub(crate) correct: bool,
    /// The expected answer.
    #[arg(long, default_value = "")]
    pub(crate) reference: String,
    /// Why the answer was wrong.
    #[arg(long, default_value = "")]
    pub(crate) fail_reason: String,
    /// What the agent was asked to do, in general.
    #[arg(long, default_value = "")]
    pub(crate) task: String,
    /// The skill the agent ran with.
    #[arg(long, value_name = "ID")]
    pub(crate) skill: Option<String>,
    /// The question's task type (the trajectory's `task_type`, a skill name: letters,
    /// digits, `-`, `_`, `.`).
    #[arg(long, value_name = "NAME")]
    pub(crate) task_type: Option<String>,
    /// A JSON array of the agent's steps (objects with `tool_name`, `tool_input`,
    /// `tool_output`, `thought`…).
    #[arg(long, value_name = "FILE")]
    pub(crate) steps: Option<PathBuf>,
    /// Metadata kept with the rollout (repeatable).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub(crate) metadata: Vec<String>,
    /// The rollout's id (letters, digits, `-`, `_`, `.`). Default: `rollout-<time>-<n>`.
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// When the rollout ran (ISO 8601). Default: now, in UTC.
    #[arg(long, value_name = "TIME")]
    pub(crate) timestamp: Option<String>,
    /// Keep secrets as written instead of replacing them with `[REDACTED:<kind>]`.
    #[arg(long)]
    pub(crate) no_redact: bool,
}

/// Runs `capture`.
pub(crate) fn run(args: &CaptureArgs) -> anyhow::Result<ExitCode> {
    if args.dir.exists() && !args.dir.is_dir() {
        return Err(bad_at(
            &args.dir,
            None,
            "--dir must be a folder; this is a file",
        ));
    }
    if let Some(id) = &args.id
        && safe_id("", id) != *id
    {
        return Err(bad_option(format!(
            "--id {:?}: use letters, digits, '-', '_' and '.' only (at most 96, not starting \
             with '.'), so that it can name its file",
            id
        )));
    }
    if let Some(problem) = args
        .task_type
        .as_deref()
        .and_then(evolution_types::skill_name_problem)
    {
        return Err(bad_option(format!("--task-type: {problem}")));
    }
    let timestamp = match &args.timestamp {
        Some(t) => check_timestamp(t)?,
        None => iso_utc(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        ),
    };
    let mut metadata = Map::new();
    for pair in &args.metadata {
        let Some((key, value)) = pair.split_once('=').filter(|(k, _)| !k.trim().is_empty()) else {
            return Err(bad_option(format!(
                "--meta {pair:?}: expected KEY=VALUE, such as --meta model=gpt-5"
            )));
        };
        metadata.insert(key.trim().to_owned(), Value::String(value.to_owned()));
    }
    let (steps, omitted) = match &args.steps {
        Some(path) => read_steps(path)?,
        None => (Vec::new(), 0),
    };
    if omitted > 0 {
        eprintln!(
            "warning: --steps holds {} steps; the first {MAX_STEPS} are kept and \
             `steps_omitted` records the {omitted} left out",
            MAX_STEPS.saturating_add(omitted)
        );
    }
    if args.no_redact {
        eprintln!("warning: --no-redact: the rollout is written with its secrets as given");
    }
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.dir.display()))?;
    let compact: String = timestamp
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let mut rollout = Rollout {
        id: String::new(),
        question: args.question.clone(),
        prediction: args.prediction.clone(),
        correct: args.correct,
        reference: args.reference.clone(),
        fail_reason: args.fail_reason.clone(),
        task: args.task.clone(),
        skill: args.skill.clone(),
        task_type: args.task_type.clone(),
        steps,
        timestamp,
        metadata,
    };
    let mut redactor = Redactor::default();
    let mut n = 0u32;
    loop {
        n = n.saturating_add(1);
        rollout.id = match &args.id {
            Some(id) => id.clone(),
            None => format!("rollout-{compact}-{n}"),
        };
        let mut object = rollout_trajectory(&rollout, (!args.no_redact).then_some(&mut redactor));
        if omitted > 0 {
            object.insert("steps_omitted".to_owned(), Value::from(omitted));
        }
        let text = serde_json::to_string_pretty(&Value::Object(object))?;
        if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_TRAJECTORY_FILE_BYTES {
            return Err(bad_option(format!(
                "the rollout would be a {} byte trajectory, over the {MAX_TRAJECTORY_FILE_BYTES} \
                 bytes `evolve` reads; nothing written. Shorten its steps or texts",
                text.len()
            )));
        }
        let path = args.dir.join(format!("{}.json", rollout.id));
        match write_new(&args.dir, &path, &text)? {
            true => {
                outln!(
                    "captured {} ({}) in {}",
                    terminal_safe(&rollout.id),
                    if rollout.correct { "passed" } else { "failed" },
                    terminal_safe(&path.display().to_string())
                );
                if redactor.total() > 0 {
                    outln!("redacted secrets: {}", redactor.total());
                }
                return Ok(ExitCode::SUCCESS);
            }
            false if args.id.is_some() => {
                return Err(bad_at(
                    &path,
                    None,
                    "a rollout with this id is already captured; rollouts are never replaced",
                ));
            }
            false if n >= 10_000 => {
                return Err(anyhow::anyhow!(
                    "no free rollout name in {} after {n} tries",
                    args.dir.display()
                ));
            }
            false => redactor = Redactor::default(),
        }
    }
}

/// Writes `text` to `path` in one step (a temporary file in `dir`, then a link that fails
/// when `path` exists); `false` when `path` exists.
fn write_new(dir: &Path, path: &Path, text: &str) -> anyhow::Result<bool> {
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|e| anyhow::anyhow!("cannot write in {}: {e}", dir.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| anyhow::anyhow!("cannot write in {}: {e}", dir.display()))?;
    match file.persist_noclobber(path) {
        Ok(_) => Ok(true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(anyhow::anyhow!(
            "cannot write {}: {}",
            path.display(),
            e.error
        )),
    }
}

/// The steps file: a JSON array of objects, of which the first [`MAX_STEPS`] are kept (as
/// `harvest` keeps a session's first tool calls) and the rest only counted, never held in
/// memory. Returns the kept steps and how many were left out.
fn read_steps(path: &Path) -> anyhow::Result<(Vec<Value>, usize)> {
    let text = read_bounded(path).map_err(|reason| bad_at(path, None, reason))?;
    let mut de = serde_json::Deserializer::from_str(&text);
    let parsed = serde::Deserializer::deserialize_any(&mut de, StepsVisitor)
        .and_then(|steps| de.end().map(|()| steps))
        .map_err(|e| bad_at(path, Some(e.line()), format!("not JSON: {e}")))?;
    let Some(steps) = parsed else {
        return Err(bad_at(
            path,
            None,
            "the steps must be a JSON array of objects",
        ));
    };
    if let Some(index) = steps.not_object {
        return Err(bad_at(
            path,
            None,
            format!("step {} is not a JSON object", index.saturating_add(1)),
        ));
    }
    Ok((steps.kept, steps.omitted))
}

/// What [`StepsVisitor`] read of a steps array.
struct Steps {
    kept: Vec<Value>,
    omitted: usize,
    /// The index of the first element that is not an object.
    not_object: Option<usize>,
}

/// Reads a JSON array keeping its first [`MAX_STEPS`] elements; any other JSON value gives
/// `None`.
struct StepsVisitor;

impl<'de> serde::de::Visitor<'de> for StepsVisitor {
    type Value = Option<Steps>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON array of step objects")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut steps = Steps {
            kept: Vec::new(),
            omitted: 0,
            not_object: None,
        };
        let mut index = 0usize;
        loop {
            let is_object = if steps.kept.len() < MAX_STEPS {
                match seq.next_element::<Value>()? {
                    None => break,
                    Some(value) => {
                        let is_object = value.is_object();
                        steps.kept.push(value);
                        is_object
                    }
                }
            } else {
                match seq.next_element::<ObjectOrNot>()? {
                    None => break,
                    Some(kind) => {
                        steps.omitted = steps.omitted.saturating_add(1);
                        matches!(kind, ObjectOrNot::Object)
                    }
                }
            };
            if !is_object && steps.not_object.is_none() {
                steps.not_object = Some(index);
            }
            index = index.saturating_add(1);
        }
        Ok(Some(steps))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(None)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A step past the kept ones: only whether it is an object; its content is skipped.
enum ObjectOrNot {
    Object,
    Other,
}

impl<'de> serde::Deserialize<'de> for ObjectOrNot {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Kind;
        impl<'de> serde::de::Visitor<'de> for Kind {
            type Value = ObjectOrNot;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a step object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ObjectOrNot, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(ObjectOrNot::Object)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<ObjectOrNot, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(ObjectOrNot::Other)
            }

            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<ObjectOrNot, E> {
                Ok(ObjectOrNot::Other)
            }

            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<ObjectOrNot, E> {
                Ok(ObjectOrNot::Other)
            }

            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<ObjectOrNot, E> {
                Ok(ObjectOrNot::Other)
            }

            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<ObjectOrNot, E> {
                Ok(ObjectOrNot::Other)
            }

            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<ObjectOrNot, E> {
                Ok(ObjectOrNot::Other)
            }

            fn visit_unit<E: serde::de::Error>(self) -> Result<ObjectOrNot, E> {
                Ok(ObjectOrNot::Other)
            }
        }
        deserializer.deserialize_any(Kind)
    }
}

/// `YYYY-MM-DD`, optionally followed by `T` and a time: the form sessions are sorted by.
fn check_timestamp(raw: &str) -> anyhow::Result<String> {
    let bytes = raw.as_bytes();
    let date_ok = raw.len() >= 10
        && raw.is_char_boundary(10)
        && bytes.iter().take(10).enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    let rest_ok = raw.get(10..).is_some_and(|rest| {
        rest.is_empty()
            || (rest.starts_with('T')
                && rest
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, 'T' | ':' | '.' | 'Z' | '+' | '-')))
    });
    if date_ok && rest_ok {
        Ok(raw.to_owned())
    } else {
        Err(bad_option(format!(
            "--timestamp {raw:?}: expected ISO 8601, such as 2026-03-01T12:00:00Z"
        )))
    }
}
