//! The model's answers for `gate_real`: generated once per replication, question and skill
//! text and cached ([`Shared`]), and the agent each rule of a replication talks to, which counts
//! the rollouts and model seconds that rule spent ([`Agent`]).

use super::*;

/// One generated answer.
#[derive(Debug, Clone)]
struct Answer {
    correct: bool,
    seconds: f64,
    error: Option<String>,
}

/// The skill's file name in a program agent's workspace: a host agent installs a skill under
/// its file's stem (`.claude/skills/helpdesk/SKILL.md`).
const PROGRAM_SKILL_FILE: &str = "helpdesk.md";

/// Who answers the suite's questions.
pub(crate) enum Responder {
    /// A model, asked with the skill as its system prompt and the question as the user's
    /// message, sampled at the benchmark's temperature with a seed per replication and question.
    Model(Arc<dyn LlmProvider>),
    /// A program speaking the agent protocol (what `run`'s `[agent] command` starts, such as
    /// `skill-evolve host-agent claude-code`), given the skill as the workspace's
    /// `helpdesk.md` and the question alone; its `prediction` is the reply. Its sampling is
    /// its own.
    Program(SubprocessRunner),
}

impl Responder {
    /// The reply to `question` under `skill` in replication `rep`, or what went wrong.
    async fn reply(
        &self,
        rep: u64,
        skill: &str,
        question: &SuiteQuestion,
        temperature: f32,
        max_tokens: u32,
    ) -> Result<String, String> {
        match self {
            Responder::Model(llm) => {
                let messages = [
                    ChatMessage::system(skill),
                    ChatMessage::user(&question.question),
                ];
                let options = ChatOptions {
                    temperature: Some(temperature),
                    max_tokens: Some(max_tokens),
                    seed: Some(rep.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ fnv(&question.id)),
                    ..ChatOptions::default()
                };
                let reply = llm.chat(&messages, &options).await;
                reply.map(|r| r.content).map_err(|e| e.to_string())
            }
            Responder::Program(runner) => {
                let run_id = format!("gate-real-{rep}");
                let workspace = Workspace::new(&run_id).with_skill(PROGRAM_SKILL_FILE, skill);
                let asked = GeneratedQuestion {
                    question_id: question.id.clone(),
                    question: question.question.clone(),
                    ..GeneratedQuestion::default()
                };
                let outcome = runner
                    .run(&run_id, &workspace, std::slice::from_ref(&asked))
                    .await
                    .map_err(|e| e.to_string())?
                    .into_iter()
                    .next()
                    .ok_or("the agent gave no outcome")?;
                match outcome.prediction.error {
                    Some(error) => Err(error),
                    None if outcome.is_infra_error() => Err(format!(
                        "the agent stopped: {}",
                        outcome.prediction.stop_reason
                    )),
                    None => Ok(outcome.prediction.prediction),
                }
            }
        }
    }
}

/// The model, the suite and the answers generated so far.
pub(crate) struct Shared {
    responder: Responder,
    questions: HashMap<String, SuiteQuestion>,
    temperature: f32,
    max_tokens: u32,
    cache: Mutex<HashMap<(u64, String, String), Answer>>,
    generated: AtomicU64,
    compute_micros: AtomicU64,
    errors: AtomicU64,
    last_error: Mutex<Option<String>>,
    show_replies: bool,
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Shared {
    /// Answers for `bench`'s questions from `responder` (a model samples at `temperature`).
    pub(crate) fn new(
        responder: Responder,
        bench: &Bench,
        temperature: f32,
        max_tokens: u32,
    ) -> Self {
        Shared {
            responder,
            questions: bench
                .suite
                .iter()
                .map(|q| (q.id.clone(), q.clone()))
                .collect(),
            temperature,
            max_tokens,
            cache: Mutex::new(HashMap::new()),
            generated: AtomicU64::new(0),
            compute_micros: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            last_error: Mutex::new(None),
            show_replies: false,
        }
    }

    /// The same, printing every generated reply on stderr (escaped, cut), with whether it
    /// passed its check: to see what a model makes of the suite.
    pub(crate) fn showing_replies(mut self) -> Self {
        self.show_replies = true;
        self
    }

    /// Answers generated (not served from the cache), model seconds they took, and errors.
    pub(crate) fn generated(&self) -> (u64, f64, u64) {
        (
            self.generated.load(Ordering::Relaxed),
            self.compute_micros.load(Ordering::Relaxed) as f64 / 1e6,
            self.errors.load(Ordering::Relaxed),
        )
    }

    /// What the last failed answer said went wrong (escaped, cut), if one failed.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|e| e.clone())
    }

    /// The answer of replication `rep` to question `id` under `skill` (cached).
    async fn answer(&self, rep: u64, skill: &str, id: &str) -> Answer {
        let key = (rep, id.to_owned(), skill.to_owned());
        if let Some(found) = self.cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return found;
        }
        let Some(question) = self.questions.get(id) else {
            return Answer {
                correct: false,
                seconds: 0.0,
                error: Some(format!("unknown question {id}")),
            };
        };
        let started = Instant::now();
        let result = self
            .responder
            .reply(rep, skill, question, self.temperature, self.max_tokens)
            .await;
        let seconds = started.elapsed().as_secs_f64();
        let done = self.generated.fetch_add(1, Ordering::Relaxed) + 1;
        let micros = self
            .compute_micros
            .fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
        if done.is_multiple_of(PROGRESS_EVERY) {
            eprintln!(
                "gate_real: {done} answers generated, {:.0} model seconds",
                micros as f64 / 1e6 + seconds
            );
        }
        let answer = match result {
            Ok(reply) => {
                let text: String = reply.chars().take(MAX_REPLY_CHARS).collect();
                let correct = passes(question, &text);
                if self.show_replies {
                    eprintln!(
                        "gate_real: {} {}: {}",
                        shown(id, 40),
                        if correct { "right" } else { "wrong" },
                        shown(&text, 160)
                    );
                }
                Answer {
                    correct,
                    seconds,
                    error: None,
                }
            }
            Err(e) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                let error = shown(&e, 400);
                if let Ok(mut last) = self.last_error.lock() {
                    *last = Some(error.clone());
                }
                Answer {
                    correct: false,
                    seconds,
                    error: Some(error),
                }
            }
        };
        if answer.error.is_none()
            && let Ok(mut cache) = self.cache.lock()
        {
            cache.insert(key, answer.clone());
        }
        answer
    }

    /// Share of `questions` answered rightly under `skill` in replication `rep`.
    pub(crate) async fn accuracy(&self, rep: u64, skill: &str, questions: &[SuiteQuestion]) -> f64 {
        let mut right = 0usize;
        for q in questions {
            right += usize::from(self.answer(rep, skill, &q.id).await.correct);
        }
        right as f64 / questions.len().max(1) as f64
    }
}

/// The agent one rule of one replication talks to: counts its rollouts and model seconds.
pub(super) struct Agent<'a> {
    shared: &'a Shared,
    rep: u64,
    rollouts: AtomicU64,
    micros: AtomicU64,
}

impl<'a> Agent<'a> {
    pub(super) fn new(shared: &'a Shared, rep: u64) -> Self {
        Agent {
            shared,
            rep,
            rollouts: AtomicU64::new(0),
            micros: AtomicU64::new(0),
        }
    }

    pub(super) fn spent(&self) -> (f64, f64) {
        (
            self.rollouts.load(Ordering::Relaxed) as f64,
            self.micros.load(Ordering::Relaxed) as f64 / 1e6,
        )
    }
}

#[async_trait]
impl AgentRunner for Agent<'_> {
    async fn run(
        &self,
        run_id: &str,
        workspace: &Workspace,
        questions: &[GeneratedQuestion],
    ) -> Result<Vec<QuestionOutcome>, RunnerError> {
        let skill = workspace
            .skills
            .get(SKILL_FILE)
            .map(String::as_str)
            .unwrap_or_default();
        let mut outcomes = Vec::with_capacity(questions.len());
        for q in questions {
            let answer = self.shared.answer(self.rep, skill, &q.question_id).await;
            self.rollouts.fetch_add(1, Ordering::Relaxed);
            self.micros
                .fetch_add((answer.seconds * 1e6) as u64, Ordering::Relaxed);
            outcomes.push(match answer.error {
                Some(message) => QuestionOutcome::infra_error(run_id, q, message),
                None => AgentReply {
                    prediction: if answer.correct { "right" } else { "wrong" }.to_owned(),
                    correct: Some(answer.correct),
                    ..AgentReply::default()
                }
                .into_outcome(run_id, q, Vec::new(), Scoring::AgentReported),
            });
        }
        Ok(outcomes)
    }
}
