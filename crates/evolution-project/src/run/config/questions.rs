//! `[questions]`: the question set, its shares and its seeded split.

use std::path::{Path, PathBuf};

use evolution_harness::fixed_question_order;
use evolution_types::GeneratedQuestion;
use serde::Deserialize;
use toml::Spanned;

use super::*;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct QuestionsSection {
    pub(super) file: Spanned<PathBuf>,
    train: Spanned<f64>,
    gate: Spanned<f64>,
    #[serde(default = "no_share")]
    holdout: Spanned<f64>,
    #[serde(default)]
    seed: u64,
}

pub(super) type Split = (
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
    Vec<GeneratedQuestion>,
);

/// `[questions]`: the shares, the question set, and its split. The gate
/// always needs a question; the training share only when `need_train`. Also the number of
/// unreviewed questions (refused unless `allow_unreviewed`), and what the split was made
/// from (its probation share still zero: `[gate]` sets it).
pub(super) fn check_questions(
    src: &Source<'_>,
    q: &QuestionsSection,
    base: &Path,
    need_train: bool,
    allow_unreviewed: bool,
) -> anyhow::Result<(Split, usize, SplitInputs)> {
    for (label, share) in [
        ("train", &q.train),
        ("gate", &q.gate),
        ("holdout", &q.holdout),
    ] {
        let v = *share.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(src.at(
                share.span(),
                format!("[questions] {label} must be a share from 0 to 1, not {v}"),
            ));
        }
    }
    let (train_share, gate_share, holdout_share) =
        (*q.train.get_ref(), *q.gate.get_ref(), *q.holdout.get_ref());
    let sum = train_share + gate_share + holdout_share;
    if (sum - 1.0).abs() > 1e-6 {
        return Err(src.at(
            q.train.span(),
            format!("[questions] train + gate + holdout must be 1, not {sum}"),
        ));
    }
    let questions_path = base.join(q.file.get_ref());
    let questions = load_questions(&questions_path)?;
    let unreviewed = check_review(&questions_path, &questions, allow_unreviewed)?;
    let (train, gate, holdout) = split(&questions, q.seed, train_share, gate_share);
    if (need_train && train.is_empty()) || gate.is_empty() {
        let needs = if need_train {
            "both need at least one"
        } else {
            "the gate needs at least one"
        };
        return Err(src.at(
            q.gate.span(),
            format!(
                "[questions] the split leaves {} training and {} gate questions of {}; {needs}",
                train.len(),
                gate.len(),
                questions.len()
            ),
        ));
    }
    let inputs = SplitInputs {
        file: q.file.get_ref().clone(),
        questions_sha256: question_set_sha256(&questions),
        shares: [train_share, gate_share, holdout_share],
        seed: q.seed,
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
