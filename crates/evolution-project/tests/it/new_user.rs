//! A new user's project, as one tried it: three skills, each missing two rules, 76 questions
//! split by `run`'s default shares, an agent right about 60 % of the time and a little random
//! (each answer right with probability 0.9 when the skill has what the question needs, 0.1
//! when not), and a proposer that offers, every epoch, each skill's good edit (both missing
//! rules), a bad one (a rule that breaks most answers) and a mixed one (one missing rule and
//! a rule that breaks as many answers as it fixes). The loop runs with the gate `run` builds
//! from the configuration file ([`GateSettings::gatekeeper`]), over the horizon `run` computes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use evolution_harness::{
    AgentReply, Budget, EventLog, EvolutionReport, InProcessRunner, LoopContext, Proposal,
    Proposals, ProposeError, ProposeRequest, Proposer, ValidationContext, Workspace, run_evolution,
};
use evolution_project::run::config::{RunConfig, RunOptions, load};
use evolution_store_fs::{FileCheckpoint, FsStore, FsVersionedStore};
use evolution_testkit::{MemoryRunLog, ScriptedLlm};
use evolution_types::{Edit, EvolutionRecord, GeneratedQuestion, TargetType};

const SKILLS: [&str; 3] = ["billing", "deploy", "reports"];
const RULE_ONE: &str = "Rule one: quote the ticket number.";
const RULE_TWO: &str = "Rule two: name the owning team.";
/// Breaks every answer but those that need a missing rule.
const HARM: &str = "Answer in one word.";
/// Breaks the answers of the plain questions, two in five of all: with rule one, the mixed
/// edit fixes one question in five and breaks two.
const SLOPPY: &str = "Skip the greeting and the sign-off.";

/// What a question needs, by its number: rule one, rule two, a careful answer, or nothing.
fn needs(number: usize) -> &'static str {
    match number % 5 {
        0 => RULE_ONE,
        1 => RULE_TWO,
        4 => "care",
        _ => "",
    }
}

/// The project: `skills/<name>/SKILL.md` for each skill, `questions.jsonl` (26 + 25 + 25),
/// and `evolve.toml` with `extra` in its `[gate]` section.
fn project(dir: &Path, split_seed: u64, extra: &str) {
    for skill in SKILLS {
        let folder = dir.join("skills").join(skill);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("SKILL.md"),
            format!(
                "---\nname: {skill}\ndescription: Answers {skill} questions.\n---\n\n\
                 # {skill}\n\nAnswer the user's {skill} question in one short paragraph.\n"
            ),
        )
        .unwrap();
    }
    let mut lines = String::new();
    for (s, skill) in SKILLS.iter().enumerate() {
        for i in 0..if s == 0 { 26 } else { 25 } {
            lines.push_str(&format!(
                "{{\"question_id\": \"{skill}-{i:02}\", \"task_type\": \"{skill}\", \
                 \"question\": \"{skill} question {i}\", \"answer\": \"ok\"}}\n"
            ));
        }
    }
    std::fs::write(dir.join("questions.jsonl"), lines).unwrap();
    std::fs::write(
        dir.join("evolve.toml"),
        format!(
            "[run]\nname = \"user\"\nskills = \"skills\"\n\n\
             [agent]\ncommand = [\"python3\", \"agent.py\"]\n\n\
             [questions]\nfile = \"questions.jsonl\"\ntrain = 0.5\ngate = 0.3\nholdout = 0.2\nseed = {split_seed}\n\n\
             [gate]\n{extra}\n\n\
             [llm]\nprovider = \"openai\"\n\n\
             [llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"
        ),
    )
    .unwrap();
}

/// The agent: right with probability 0.9 when the skill has what the question needs and no
/// rule breaks its answer, 0.1 otherwise; every answer a fresh draw.
struct Agent {
    seed: u64,
    calls: AtomicU64,
}

impl Agent {
    fn draw(&self, id: &str) -> f64 {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let mut x = self.seed ^ call.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for b in id.bytes() {
            x = (x ^ u64::from(b)).wrapping_mul(0x0100_0000_01B3);
        }
        // SplitMix64's finaliser.
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        #[expect(clippy::cast_precision_loss, reason = "53 bits of a uniform draw")]
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        u
    }

    fn answer(&self, ws: &Workspace, q: &GeneratedQuestion) -> AgentReply {
        let skill = ws
            .skills
            .get(&format!("{}.md", q.task_type))
            .map(String::as_str)
            .unwrap_or_default();
        let number: usize = q
            .question_id
            .split(['-', '#'])
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let need = needs(number);
        let served = match need {
            "" => !skill.contains(HARM) && !skill.contains(SLOPPY),
            "care" => !skill.contains(HARM),
            rule => skill.contains(rule),
        };
        let p = if served { 0.9 } else { 0.1 };
        let right = self.draw(&q.question_id) < p;
        AgentReply {
            prediction: if right { "ok" } else { "not quite" }.to_owned(),
            ..AgentReply::default()
        }
    }
}

/// Every epoch, one edit for each skill still missing its rules, as the kernel's proposer
/// makes one candidate per task type: good, bad and mixed in turn, each skill starting at
/// another, so that over three epochs each skill is offered each kind once.
struct Offers;

fn offer(skill: &str, text: &str, kind: &str, rules: &[&str]) -> Proposal {
    let document = format!("{skill}.md");
    let mut new = text.to_owned();
    for rule in rules {
        new.push_str(rule);
        new.push('\n');
    }
    let mut record = EvolutionRecord::new(&document, TargetType::Skill, text.to_owned(), "");
    record.edits = rules.iter().map(|r| Edit::append(*r)).collect();
    record.evolved_content = new.clone();
    Proposal {
        label: format!("{kind}-{skill}"),
        writes: BTreeMap::from([(document, new)]),
        record,
    }
}

#[async_trait]
impl Proposer for Offers {
    async fn propose(&self, request: ProposeRequest<'_>) -> Result<Proposals, ProposeError> {
        let mut out = Vec::new();
        for skill in SKILLS {
            let Some(text) = request.workspace.skills.get(&format!("{skill}.md")) else {
                continue;
            };
            if text.contains(RULE_TWO) {
                continue;
            }
            let s = SKILLS.iter().position(|k| *k == skill).unwrap_or(0);
            out.push(match (s + request.epoch as usize) % 3 {
                0 => offer(skill, text, "good", &[RULE_ONE, RULE_TWO]),
                1 => offer(skill, text, "bad", &[HARM]),
                _ => offer(skill, text, "mixed", &[RULE_ONE, SLOPPY]),
            });
        }
        Ok(out.into())
    }
}

/// What one run did: its gate records and the agent's answers.
struct Outcome {
    report: EvolutionReport,
    rollouts: u64,
}

/// Runs the loop of the project in `dir` with the agent seeded by `seed`.
async fn run(dir: &Path, config: &RunConfig, seed: u64) -> Outcome {
    let files: Vec<(String, String)> = config
        .skill_docs
        .iter()
        .map(|d| {
            (
                d.document.clone(),
                std::fs::read_to_string(&d.path).unwrap(),
            )
        })
        .collect();
    let store_dir = dir.join(format!("store-{seed}"));
    FsStore::init(&store_dir, files, "the user's skills").unwrap();
    let store = FsVersionedStore::new(FsStore::open(&store_dir).unwrap());
    let log = MemoryRunLog::new();
    let checkpoint = FileCheckpoint::new(dir.join(format!("loop-{seed}.json")));
    let agent = Agent {
        seed,
        calls: AtomicU64::new(0),
    };
    let runner =
        InProcessRunner::new(|ws: &Workspace, q: &GeneratedQuestion| Ok(agent.answer(ws, q)));
    let budget = Budget::unlimited();
    let events = EventLog::new();
    let llm = ScriptedLlm::new();
    let ctx = LoopContext {
        validation: ValidationContext {
            runner: &runner,
            recorder: &log,
            budget: &budget,
            events: &events,
            resume_from: Some(&log),
        },
        store: &store,
        proposer: &Offers,
        llm: &llm,
        checkpoint: &checkpoint,
        ledger: None,
    };
    let loop_config = config.loop_config(None, Default::default(), None);
    let keeper = config
        .gate_settings
        .gatekeeper(format!("{}_gate_", config.name), config.horizon())
        .unwrap();
    let report = run_evolution(ctx, &loop_config, keeper).await.unwrap();
    Outcome {
        report,
        rollouts: agent.calls.load(Ordering::Relaxed),
    }
}

/// What a batch of runs accepted.
#[derive(Debug, Default)]
struct Tally {
    runs: u64,
    /// Good edits gated, and accepted, by skill.
    good: BTreeMap<String, (u64, u64)>,
    /// Bad and mixed edits gated, and accepted.
    other: (u64, u64),
    rollouts: u64,
}

/// Runs the project split by `split_seed` (with `extra` in `[gate]`) once per agent seed.
async fn tally(split_seed: u64, extra: &str, seeds: std::ops::Range<u64>) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), split_seed, extra);
    let config = load(&dir.path().join("evolve.toml"), &RunOptions::default()).unwrap();
    let mut tally = Tally::default();
    for seed in seeds {
        let outcome = run(dir.path(), &config, seed).await;
        tally.runs += 1;
        tally.rollouts += outcome.rollouts;
        for record in outcome
            .report
            .records
            .iter()
            .filter(|r| r.validation.is_some())
        {
            let kind = record.candidate.rsplit('_').next().unwrap_or_default();
            let accepted = u64::from(record.accepted);
            if let Some(skill) = kind.strip_prefix("good-") {
                let entry = tally.good.entry(skill.to_owned()).or_default();
                entry.0 += 1;
                entry.1 += accepted;
            } else {
                tally.other.0 += 1;
                tally.other.1 += accepted;
            }
        }
    }
    tally
}

/// Gate questions of `skill` a good edit can turn from wrong to right, of its gate questions.
fn flippable(config: &RunConfig, skill: &str) -> (usize, usize) {
    let own: Vec<_> = config
        .gate
        .iter()
        .filter(|q| q.task_type == skill)
        .collect();
    let number = |id: &str| {
        id.rsplit('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let flips = own
        .iter()
        .filter(|q| needs(number(&q.question_id)).starts_with("Rule"))
        .count();
    (flips, own.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_the_defaults_a_new_users_good_edits_are_accepted_and_no_bad_or_mixed_one() {
    // Split seed 2 leaves each skill 6 to 9 gate questions, 3 or 4 of which a good edit
    // can turn from wrong to right (the user's trial had 3 to 6 per skill).
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), 2, "");
    let config = load(&dir.path().join("evolve.toml"), &RunOptions::default()).unwrap();
    for skill in SKILLS {
        let (flips, of) = flippable(&config, skill);
        assert!(
            (3..=4).contains(&flips) && (6..=9).contains(&of),
            "{skill}: {flips} of {of}"
        );
    }
    assert_eq!(
        config.horizon(),
        15,
        "3 epochs of 3 skills and 2 slow updates of each"
    );

    let defaults = tally(2, "", 0..8).await;
    // Each skill is offered a bad and a mixed edit while its good one is not accepted.
    assert!(defaults.other.0 >= 16, "{defaults:?}");
    assert_eq!(
        defaults.other.1, 0,
        "a bad or mixed edit was accepted: {defaults:?}"
    );
    for skill in SKILLS {
        let (gated, accepted) = defaults.good.get(skill).copied().unwrap_or_default();
        assert_eq!(gated, 8, "{skill}: {defaults:?}");
        assert!(
            accepted >= 5,
            "{skill}: {accepted} of 8 good edits accepted: {defaults:?}"
        );
    }

    // Asked once per question, the same gate questions decide nothing.
    let once = tally(2, "answers_per_question = 1", 0..8).await;
    let accepted: u64 = once.good.values().map(|(_, a)| a).sum::<u64>() + once.other.1;
    assert_eq!(accepted, 0, "{once:?}");

    // The figures of the closing measurement: every split seed from 0 to 11, ten agents each.
    if std::env::var_os("NEW_USER_SWEEP").is_some() {
        for extra in ["", "answers_per_question = 1"] {
            let mut all = Tally::default();
            for split in 0..12 {
                let t = tally(split, extra, 0..10).await;
                all.runs += t.runs;
                all.rollouts += t.rollouts;
                all.other.0 += t.other.0;
                all.other.1 += t.other.1;
                for (skill, (g, a)) in t.good {
                    let dir = tempfile::tempdir().unwrap();
                    project(dir.path(), split, extra);
                    let config =
                        load(&dir.path().join("evolve.toml"), &RunOptions::default()).unwrap();
                    let (flips, _) = flippable(&config, &skill);
                    let entry = all.good.entry(format!("{flips} flippable")).or_default();
                    entry.0 += g;
                    entry.1 += a;
                }
            }
            #[expect(
                clippy::print_stderr,
                reason = "the sweep's figures, asked for by name"
            )]
            {
                eprintln!("[gate] {extra:?}: {all:?}");
            }
        }
    }
}
