//! `[questions]`: the question set, its shares and its seeded split; or a suite folder
//! already split into `train.jsonl`, `gate.jsonl` and `holdout.jsonl`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evolution_harness::fixed_question_order;
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

use super::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QuestionsSection {
    file: Option<Spanned<PathBuf>>,
    suite: Option<Spanned<PathBuf>>,
    train: Option<Spanned<f64>>,
    gate: Option<Spanned<f64>>,
    holdout: Option<Spanned<f64>>,
    seed: Option<Spanned<u64>>,
}

impl QuestionsSection {
    /// `file` or `suite`, as the configuration writes it (empty when it names neither,
    /// which [`check_questions`] refuses).
    pub(super) fn source(&self) -> PathBuf {
        self.file
            .as_ref()
            .or(self.suite.as_ref())
            .map(|path| path.get_ref().clone())
            .unwrap_or_default()
    }
}

/// The files of a suite folder, in the order of the split's parts: training, gate, held out.
pub const SUITE_FILES: [&str; 3] = ["train.jsonl", "gate.jsonl", "holdout.jsonl"];

pub(super) type Split = (
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
);

/// `[questions]`: the question set and its split, from one `file` divided by shares or from
/// a `suite` folder already split into files. The gate always needs a question; the
/// training part only when `need_train`. Also the number of unreviewed questions (refused
/// unless `allow_unreviewed`), and what the split was made from (its probation share still
/// zero: `[gate]` sets it).
pub(super) fn check_questions(
    src: &Source<'_>,
    q: &QuestionsSection,
    base: &Path,
    need_train: bool,
    allow_unreviewed: bool,
) -> anyhow::Result<(Split, usize, SplitInputs)> {
    match (&q.file, &q.suite) {
        (Some(file), None) => check_shares(src, q, file, base, need_train, allow_unreviewed),
        (None, Some(suite)) => check_suite(src, q, suite, base, need_train, allow_unreviewed),
        (Some(_), Some(suite)) => Err(src.at(
            suite.span(),
            "[questions] file and suite cannot both be set: use file (one question set, \
             split by shares) or suite (a folder already split into train.jsonl, gate.jsonl \
             and holdout.jsonl)"
                .to_owned(),
        )),
        (None, None) => {
            let at = src.text.find("[questions]").unwrap_or(0);
            Err(src.at(
                at..at.saturating_add(1),
                "[questions] needs file (one question set, split by the shares train, gate \
                 and holdout) or suite (a folder of train.jsonl, gate.jsonl and holdout.jsonl)"
                    .to_owned(),
            ))
        }
    }
}

/// `[questions] file`, divided by its shares after a shuffle.
fn check_shares(
    src: &Source<'_>,
    q: &QuestionsSection,
    file: &Spanned<PathBuf>,
    base: &Path,
    need_train: bool,
    allow_unreviewed: bool,
) -> anyhow::Result<(Split, usize, SplitInputs)> {
    let (Some(train), Some(gate)) = (&q.train, &q.gate) else {
        return Err(src.at(
            file.span(),
            "[questions] file needs the shares train and gate (and optionally holdout), \
             each from 0 to 1"
                .to_owned(),
        ));
    };
    let holdout = q.holdout.clone().unwrap_or_else(no_share);
    for (label, share) in [("train", train), ("gate", gate), ("holdout", &holdout)] {
        let v = *share.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(src.at(
                share.span(),
                format!("[questions] {label} must be a share from 0 to 1, not {v}"),
            ));
        }
    }
    let (train_share, gate_share, holdout_share) =
        (*train.get_ref(), *gate.get_ref(), *holdout.get_ref());
    let sum = train_share + gate_share + holdout_share;
    if (sum - 1.0).abs() > 1e-6 {
        return Err(src.at(
            train.span(),
            format!("[questions] train + gate + holdout must be 1, not {sum}"),
        ));
    }
    let seed = q.seed.as_ref().map_or(0, |seed| *seed.get_ref());
    let questions_path = base.join(file.get_ref());
    let questions = load_questions(&questions_path)?;
    let unreviewed = check_review(&questions_path, &questions, allow_unreviewed)?;
    let (train, gate_part, holdout) = split(&questions, seed, train_share, gate_share);
    if (need_train && train.is_empty()) || gate_part.is_empty() {
        let needs = if need_train {
            "both need at least one"
        } else {
            "the gate needs at least one"
        };
        return Err(src.at(
            gate.span(),
            format!(
                "[questions] the split leaves {} training and {} gate questions of {}; {needs}",
                train.len(),
                gate_part.len(),
                questions.len()
            ),
        ));
    }
    let inputs = SplitInputs {
        path: file.get_ref().clone(),
        source: SplitSource::Shares {
            questions_sha256: question_set_sha256(&questions),
            shares: [train_share, gate_share, holdout_share],
            seed,
        },
        probation: 0.0,
    };
    Ok(((train, gate_part, holdout), unreviewed, inputs))
}

/// `[questions] suite`: a folder whose `train.jsonl`, `gate.jsonl` and `holdout.jsonl` are
/// the split's parts, each in its file's order. `gate.jsonl` is required, `train.jsonl` too
/// when `need_train`; a question id may appear in one file only.
fn check_suite(
    src: &Source<'_>,
    q: &QuestionsSection,
    suite: &Spanned<PathBuf>,
    base: &Path,
    need_train: bool,
    allow_unreviewed: bool,
) -> anyhow::Result<(Split, usize, SplitInputs)> {
    for (key, span) in [
        ("train", q.train.as_ref().map(Spanned::span)),
        ("gate", q.gate.as_ref().map(Spanned::span)),
        ("holdout", q.holdout.as_ref().map(Spanned::span)),
        ("seed", q.seed.as_ref().map(Spanned::span)),
    ] {
        if let Some(span) = span {
            return Err(src.at(
                span,
                format!(
                    "[questions] {key} divides a question file; a suite is already split into \
                     train.jsonl, gate.jsonl and holdout.jsonl: remove {key}"
                ),
            ));
        }
    }
    let dir = base.join(suite.get_ref());
    if !dir.is_dir() {
        return Err(src.at(
            suite.span(),
            format!("[questions] suite {}: not a folder", dir.display()),
        ));
    }
    let mut parts: Vec<Vec<GeneratedQuestion>> = Vec::with_capacity(SUITE_FILES.len());
    let mut files = Vec::with_capacity(SUITE_FILES.len());
    let mut unreviewed = 0;
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for (index, name) in SUITE_FILES.into_iter().enumerate() {
        let path = dir.join(name);
        let present = path
            .try_exists()
            .map_err(|e| bad_at(&path, None, format!("cannot read: {e}")))?;
        // The gate's file, and the training file when the caller trains.
        let needed = index == 1 || (need_train && index == 0);
        if !present {
            if needed {
                return Err(src.at(
                    suite.span(),
                    format!(
                        "[questions] suite {} has no {name}: {}",
                        dir.display(),
                        if index == 1 {
                            "the gate needs its questions"
                        } else {
                            "run trains on its questions"
                        }
                    ),
                ));
            }
            parts.push(Vec::new());
            files.push((name, None));
            continue;
        }
        let questions = load_questions(&path)?;
        unreviewed += check_review(&path, &questions, allow_unreviewed)?;
        for question in &questions {
            if let Some(other) = seen.insert(question.question_id.clone(), name) {
                return Err(bad_at(
                    &path,
                    None,
                    format!(
                        "question_id {:?} is also in {other}: each question belongs to one \
                         part of the suite",
                        question.question_id
                    ),
                ));
            }
        }
        files.push((name, Some(question_set_sha256(&questions))));
        parts.push(questions);
    }
    let mut parts = parts.into_iter();
    let (train, gate, holdout) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let inputs = SplitInputs {
        path: suite.get_ref().clone(),
        source: SplitSource::Suite { files },
        probation: 0.0,
    };
    Ok(((train, gate, holdout), unreviewed, inputs))
}

/// SHA-256 (hex) of a question set: every question, in file order, as one JSON line (the
/// fields in the order the file gives them).
fn question_set_sha256(questions: &[GeneratedQuestion]) -> String {
    use sha2::{Digest as _, Sha256};
    let mut hasher = Sha256::new();
    for question in questions {
        // A question read from JSON always writes back as JSON.
        if let Ok(line) = serde_json::to_vec(question) {
            hasher.update(&line);
        }
        hasher.update(b"\n");
    }
    hasher
        .finalize()
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            hex.push_str(&format!("{byte:02x}"));
            hex
        })
}

/// The number of questions marked `"reviewed": false`, in file order. Without `allow`, any
/// such question refuses the run, naming the count and the first id.
pub(super) fn check_review(
    path: &Path,
    questions: &[GeneratedQuestion],
    allow: bool,
) -> anyhow::Result<usize> {
    let unreviewed: Vec<&GeneratedQuestion> = questions
        .iter()
        .filter(|q| q.extra.get("reviewed") == Some(&serde_json::Value::Bool(false)))
        .collect();
    match unreviewed.first() {
        Some(first) if !allow => Err(bad_at(
            path,
            None,
            format!(
                "{} question(s) are marked \"reviewed\": false (first: {:?}); read each, fix \
                 its question and check, set \"reviewed\": true, or pass --allow-unreviewed",
                unreviewed.len(),
                first.question_id
            ),
        )),
        _ => Ok(unreviewed.len()),
    }
}

/// A seeded shuffle, then train, gate and holdout by share (holdout takes the rest).
pub(super) fn split(
    questions: &[GeneratedQuestion],
    seed: u64,
    train_share: f64,
    gate_share: f64,
) -> (
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
) {
    let ordered = fixed_question_order(questions, seed);
    let n = ordered.len();
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let count = |share: f64| ((n as f64) * share).round().max(0.0) as usize;
    let n_train = count(train_share).min(n);
    let n_gate = count(gate_share).min(n.saturating_sub(n_train));
    let mut rest = ordered;
    let holdout = rest.split_off(n_train.saturating_add(n_gate).min(rest.len()));
    let gate = rest.split_off(n_train.min(rest.len()));
    (rest, gate, holdout)
}
