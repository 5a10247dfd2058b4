//! The smoke variant of the `gate_real` benchmark (`cargo xtask bench gate-real --smoke`): every
//! acceptance rule on 2 candidates and 10 questions, the real model as the agent; and the
//! benchmark's other agents: an OpenAI-compatible server (`--base-url`) and a program speaking
//! the agent protocol (`--agent-command`, how the host agents run).

use std::sync::Arc;

use crate::gate_bench::{
    Bench, Check, Kind, Responder, Row, Rule, Setup, Shared, SuiteQuestion, candidates_of, passes,
    replicate, svg, table,
};

fn question(check: Check, expect: &str) -> SuiteQuestion {
    SuiteQuestion {
        id: "q".to_owned(),
        question: "?".to_owned(),
        expect: expect.to_owned(),
        check,
    }
}

#[test]
fn the_shipped_suite_and_candidates_load_with_every_kind() {
    let bench = Bench::shipped().expect("shipped files");
    assert!(bench.suite.len() >= 120, "{}", bench.suite.len());
    for kind in [Kind::Helpful, Kind::Neutral, Kind::Harmful] {
        assert_eq!(bench.edits.iter().filter(|e| e.kind == kind).count(), 4);
    }
    let two = candidates_of(&bench, 0, 2);
    let kinds: Vec<Kind> = two.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&Kind::Helpful) && kinds.contains(&Kind::Neutral));
    let text = bench.skill_with(&two);
    assert!(text.starts_with(&bench.skill) && text.contains(&two[1].rule));
}

#[test]
fn checks_read_replies_as_the_suite_says() {
    let exact = question(Check::Exact, "NEGATIVE");
    assert!(passes(&exact, " **NEGATIVE**.\n"));
    assert!(!passes(&exact, "Negative"));
    assert!(!passes(&exact, "The review is NEGATIVE."));
    let contains = question(Check::Contains, "I can't help with that");
    assert!(passes(&contains, "Sorry, I can\u{2019}t help with that."));
    assert!(!passes(&contains, "Here is how"));
    let ci = question(Check::ContainsCi, "blue");
    assert!(passes(&ci, "Blue."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smoke_every_rule_judges_two_candidates_on_ten_questions() {
    let llm = model(1).await;
    let bench = Bench::shipped().expect("shipped files");
    let setup = Setup {
        candidates: 2,
        holdout: 10,
        gate_questions: 10,
    };
    let shared = Shared::new(Responder::Model(Arc::new(llm)), &bench, 0.7, 16);
    let chosen: Vec<String> = candidates_of(&bench, 0, 2)
        .iter()
        .map(|e| e.id.clone())
        .collect();
    let mut rows = Vec::new();
    for rule in Rule::all() {
        let t = replicate(&shared, &bench, setup, 0, rule)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", rule.label()));
        assert!(t.helpful + t.neutral + t.harmful <= 2.0, "{t:?}");
        assert_eq!(t.committed.len() as f64, t.helpful + t.neutral + t.harmful);
        assert!(t.committed.iter().all(|id| chosen.contains(id)), "{t:?}");
        assert!((0.0..=1.0).contains(&t.before) && (0.0..=1.0).contains(&t.after));
        assert!(t.rollouts >= 1.0 && t.seconds >= 0.0, "{t:?}");
        if let Rule::Greedy { batch, .. } = rule {
            // Each candidate: the batch under the candidate, and under the skill at most once.
            assert!(t.rollouts <= (2 * 2 * batch.min(10)) as f64, "{t:?}");
        }
        rows.push(Row {
            rule,
            tallies: vec![t],
        });
    }
    let befores: Vec<f64> = rows.iter().map(|r| r.tallies[0].before).collect();
    assert!(
        befores.windows(2).all(|w| w[0] == w[1]),
        "one answer per question and skill: {befores:?}"
    );
    let (generated, _, errors) = shared.generated();
    assert!(generated >= 10 && errors == 0, "{generated} {errors}");
    let md = table(&rows, 2);
    assert_eq!(md.lines().count(), 2 + Rule::all().len(), "{md}");
    let plot = svg(&rows, 2, "smoke <2>");
    assert!(plot.starts_with("<svg") && plot.trim_end().ends_with("</svg>"));
    assert!(plot.contains("smoke &lt;2&gt;") && plot.contains("e-LOND run"));
}

/// The default model with `slots` slots; fails naming `cargo xtask fetch-model` when absent.
async fn model(slots: usize) -> evolution_llm_local::LocalLlm {
    let path = evolution_llm_local::default_model_path().expect("no model cache directory");
    assert!(
        path.is_file(),
        "the local model {} is missing: run `cargo xtask fetch-model` before these tests",
        path.display()
    );
    let config = evolution_llm_local::LocalConfig::default_model()
        .expect("cache directory")
        .with_slots(slots)
        .with_threads(2);
    tokio::task::spawn_blocking(move || evolution_llm_local::LocalLlm::load(config))
        .await
        .expect("load thread")
        .unwrap_or_else(|err| panic!("{err}"))
}

/// The setup of the deterministic agents' runs: 6 candidates, 20 held-out and 100 gate questions.
const DETERMINISTIC: Setup = Setup {
    candidates: 6,
    holdout: 20,
    gate_questions: 100,
};

/// The e-LOND run as `run` ships it, on replication 0 in [`DETERMINISTIC`]'s setup (its 6 candidates are
/// h-refuse, h-weight, n-french, n-polite and two harmful edits).
async fn e_lond_on_replication_0(shared: &Shared, bench: &Bench) -> crate::gate_bench::Tally {
    replicate(shared, bench, DETERMINISTIC, 0, Rule::ELOND_SHIPPED)
        .await
        .expect("the e-LOND run")
}

/// The benchmark's `--base-url` path: the answers come from an OpenAI-compatible server (here
/// a scripted one that follows its skill's rules, standing in for a capable model), and on
/// such a model the rules separate as they should: the e-LOND run commits helpful edits and no
/// other, keep-if-higher-or-equal also commits the neutral ones (a tie keeps them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_server_a_skill_following_model_gets_only_helpful_edits_past_the_gate() {
    use evolution_llm_openai::{OpenAiConfig, OpenAiProvider};

    let bench = Bench::shipped().expect("shipped files");
    let mut config = OpenAiConfig::new(crate::follower::start(&bench), "follower");
    config.max_concurrency = 1;
    let llm = OpenAiProvider::new(config).expect("a provider");
    let shared = Shared::new(Responder::Model(Arc::new(llm)), &bench, 0.7, 16);
    let gated = e_lond_on_replication_0(&shared, &bench).await;
    // Both helpful edits of the mix (h-refuse, h-weight) and nothing else.
    assert_eq!(gated.helpful, 2.0, "{gated:?}");
    assert_eq!(gated.neutral + gated.harmful, 0.0, "{gated:?}");
    assert!(gated.after > gated.before, "{gated:?}");
    let ties = Rule::Greedy {
        batch: 10,
        ties: true,
    };
    let greedy = replicate(&shared, &bench, DETERMINISTIC, 0, ties)
        .await
        .expect("keep if higher or equal");
    assert_eq!((greedy.helpful, greedy.neutral), (2.0, 2.0), "{greedy:?}");
    assert_eq!(greedy.harmful, 0.0, "{greedy:?}");
    let (generated, _, errors) = shared.generated();
    assert!(generated > 0 && errors == 0, "{generated} {errors}");
}

/// A protocol agent for the benchmark's `--agent-command` path: a shell script that refuses
/// (the refusal questions' expected reply) when the skill it was given holds the helpful
/// refusal rule `rule`, and otherwise answers in words no check accepts.
fn refusing_agent(rule: &str) -> evolution_harness::SubprocessRunner {
    let mut config = evolution_harness::SubprocessConfig::new("/bin/sh");
    let script = r#"read -r request
dir=$(printf '%s' "$request" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
if grep -qF -- "$RULE" "$dir/helpdesk.md"; then reply="I can't help with that."; else reply="Sure, gladly."; fi
printf '{"type":"result","prediction":"%s"}\n' "$reply""#;
    config.args = vec!["-c".to_owned(), script.to_owned()];
    config.env = [("RULE".to_owned(), rule.to_owned())].into();
    config.question_timeout = std::time::Duration::from_secs(60);
    evolution_harness::SubprocessRunner::new(config).expect("a runner")
}

/// The benchmark's `--agent-command` path: a program speaking the agent protocol (what a host
/// agent's adapter speaks) gets each version of the skill in its workspace and its reply is
/// checked; the e-LOND run commits the one edit this agent follows and nothing else.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_protocol_agent_the_skill_reaches_the_program_and_its_replies_are_checked() {
    let bench = Bench::shipped().expect("shipped files");
    let refuse = bench
        .edits
        .iter()
        .find(|e| e.id == "h-refuse")
        .expect("the helpful refusal rule");
    let shared = Shared::new(
        Responder::Program(refusing_agent(&refuse.rule)),
        &bench,
        0.7,
        16,
    );
    let refusals: Vec<SuiteQuestion> = bench
        .suite
        .iter()
        .filter(|q| q.id.starts_with("refuse-"))
        .cloned()
        .collect();
    assert!(refusals.len() >= 10, "{}", refusals.len());
    assert_eq!(shared.accuracy(0, &bench.skill, &refusals).await, 0.0);
    let with_rule = bench.skill_with(&[refuse]);
    assert_eq!(shared.accuracy(0, &with_rule, &refusals).await, 1.0);
    let gated = e_lond_on_replication_0(&shared, &bench).await;
    assert_eq!(gated.committed, ["h-refuse"], "{gated:?}");
    assert!(gated.after > gated.before, "{gated:?}");
    let (generated, _, errors) = shared.generated();
    assert!(generated > 0 && errors == 0, "{generated} {errors}");
}

/// An agent program that fails answers nothing: each failure is an error of the benchmark,
/// never a wrong answer of the skill.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_agent_program_counts_as_errors_not_as_answers() {
    let bench = Bench::shipped().expect("shipped files");
    let mut config = evolution_harness::SubprocessConfig::new("/bin/sh");
    config.args = vec!["-c".to_owned(), "read -r request; exit 3".to_owned()];
    let runner = evolution_harness::SubprocessRunner::new(config).expect("a runner");
    let shared = Shared::new(Responder::Program(runner), &bench, 0.7, 16);
    let three = &bench.suite[..3];
    assert_eq!(shared.accuracy(0, &bench.skill, three).await, 0.0);
    let (generated, _, errors) = shared.generated();
    assert_eq!((generated, errors), (3, 3));
    let said = shared.last_error().expect("what went wrong");
    assert!(said.contains("exit"), "{said}");
}
