//! The simulated world of one replication: which rules the proposals add,
//! how each rule changes each question, and the exact distribution of a
//! skill's latent score over fresh questions (what an oracle knows).

/// Proposals per run.
pub(crate) const PROPOSALS: usize = 60;
/// Share of questions on which a rule changes nothing.
pub(crate) const TIE_RATE: f64 = 0.7;
/// Win probabilities of the helpful rules, cycled over a third of the proposals.
const HELPFUL: [f64; 4] = [0.6, 0.7, 0.8, 0.9];
/// Win probabilities of the harmful rules, cycled over another third.
const HARMFUL: [f64; 4] = [0.1, 0.2, 0.3, 0.4];

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(crate) fn uniform(a: u64, b: u64, c: u64) -> f64 {
    let x = mix(mix(mix(a) ^ b) ^ c);
    (x >> 11) as f64 / (1_u64 << 53) as f64
}

/// One replication: every proposal's rule and every question's outcome
/// follow from `seed`.
pub(crate) struct World {
    seed: u64,
    /// `p[rule]`: the chance that rule `rule` fixes a question it touches
    /// (it breaks it otherwise).
    pub(crate) p: Vec<f64>,
}

impl World {
    /// The world of replication `seed`: a third of the rules helpful, a
    /// third harmful, a third neutral (`p = 0.5`).
    pub(crate) fn new(seed: u64) -> Self {
        let p = (0..PROPOSALS)
            .map(|i| match i % 3 {
                0 => HELPFUL[(i / 3) % HELPFUL.len()],
                1 => HARMFUL[(i / 3) % HARMFUL.len()],
                _ => 0.5,
            })
            .collect();
        World { seed, p }
    }

    /// Effect of rule `rule` on question `q`: -1, 0 or +1.
    pub(crate) fn effect(&self, rule: usize, q: u64) -> i32 {
        let u = uniform(self.seed, rule as u64 + 1, q);
        if u < TIE_RATE {
            0
        } else if (u - TIE_RATE) / (1.0 - TIE_RATE) < self.p[rule] {
            1
        } else {
            -1
        }
    }

    /// The latent score of a skill made of `rules` on question `q`: a
    /// base of 0 or 1 plus every rule's effect.
    pub(crate) fn latent(&self, rules: &[usize], q: u64) -> i32 {
        let base = i32::from(uniform(self.seed, 0, q) < 0.5);
        base + rules.iter().map(|&r| self.effect(r, q)).sum::<i32>()
    }

    /// Whether a skill made of `rules` answers question `q` right.
    pub(crate) fn correct(&self, rules: &[usize], q: u64) -> bool {
        self.latent(rules, q) >= 1
    }

    /// Share of `questions` a skill made of `rules` answers right.
    pub(crate) fn accuracy(&self, rules: &[usize], questions: std::ops::Range<u64>) -> f64 {
        let n = questions.end - questions.start;
        questions.filter(|&q| self.correct(rules, q)).count() as f64 / n as f64
    }
}

/// The distribution of the latent score over fresh questions for a skill
/// whose rules have win probabilities `ps`, as `(lowest score, masses)`.
///
/// The base is 0 or 1 with probability one half each; each rule adds +1
/// with probability `(1 − TIE_RATE)·p`, −1 with `(1 − TIE_RATE)·(1 − p)`,
/// independently: a convolution.
pub(crate) fn latent_distribution(ps: impl IntoIterator<Item = f64>) -> (i32, Vec<f64>) {
    let mut low = 0_i32;
    let mut mass = vec![0.5, 0.5];
    for p in ps {
        let up = (1.0 - TIE_RATE) * p;
        let down = (1.0 - TIE_RATE) * (1.0 - p);
        let mut next = vec![0.0; mass.len() + 2];
        for (i, m) in mass.iter().enumerate() {
            next[i] += m * down;
            next[i + 1] += m * TIE_RATE;
            next[i + 2] += m * up;
        }
        low -= 1;
        mass = next;
    }
    (low, mass)
}

/// What a candidate rule with win probability `p` shows against a skill
/// with latent distribution `latent`, on one fresh question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Visible {
    /// Chance the question is a discordant pair (a win or a loss).
    pub(crate) discordance: f64,
    /// Chance a discordant pair is a win (the gate's `p`).
    pub(crate) win: f64,
}

/// The candidate's visible effect: it wins where the latent score is 0
/// (a +1 makes the answer right) and loses where it is 1 (a −1 makes it
/// wrong); everywhere else its effect changes nothing.
pub(crate) fn visible_effect(latent: &(i32, Vec<f64>), p: f64) -> Visible {
    let (low, mass) = latent;
    let at = |score: i32| {
        usize::try_from(score - low)
            .ok()
            .and_then(|i| mass.get(i))
            .copied()
            .unwrap_or(0.0)
    };
    let win = (1.0 - TIE_RATE) * p * at(0);
    let loss = (1.0 - TIE_RATE) * (1.0 - p) * at(1);
    let discordance = win + loss;
    Visible {
        discordance,
        win: if discordance > 0.0 {
            win / discordance
        } else {
            0.5
        },
    }
}
