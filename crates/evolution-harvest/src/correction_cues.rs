//! The words by which a user's next message corrects the agent: the cues
//! [`crate::corrections::correction_phrase`] looks for.
//!
//! A cue is a pattern over the message in lower case (curly apostrophes made straight, runs of
//! whitespace made one space, its first [`MAX_READ_CHARS`] characters). Cues come in two
//! strengths. A strong cue says that the work failed whatever the message asks next ("did not
//! fix", "still fails", "you broke", "why did you", "not what I asked", "there is no …"). A
//! weak cue corrects only when the message is not a question or a next step ("revert",
//! "wrong", "X, not Y", "should be", "instead of", a failure reported in passing: "it crashes on
//! startup now") does not count in a question, a next step or a message saying a problem is
//! gone: "How do I revert this if needed?", "Then revert the debug flag we added last week",
//! "Fix the broken link in the docs" and "It doesn't fail anymore" do not correct. A message
//! opening with a question word (`how`, `what`, `is`, `does`, …) and holding a `?` is a
//! question; one opening with `now`, `next`, `then`, `also`, `let's` or a verb that asks for
//! work (`fix`, `add`, `write`, …) is a next step.
//!
//! The cues cover English in the forms people write corrections, and the commonest forms in
//! German, French, Spanish, Portuguese, Italian, Dutch, Russian, Chinese and Japanese. Their
//! precision and recall are measured on a labelled corpus of follow-ups written for this
//! project (`tests/data/followups.jsonl` of this crate), tuned on one part of it and checked on
//! the other (`cargo xtask bench followups`).

use std::sync::LazyLock;

use regex::Regex;

/// Most characters of a message read for cues.
pub(crate) const MAX_READ_CHARS: usize = 1_000;

/// How much a cue says alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    /// A correction whatever else the message says.
    Strong,
    /// A correction unless the message is a question or a next step.
    Weak,
}

use Strength::{Strong, Weak};

/// The cues: (strength, pattern).
const CUES: [(Strength, &str); 48] = [
    // The work did not do what it should.
    (
        Strong,
        r"\b(did ?n[o']?t|does ?n[o']?t|do ?n[o']?t|has ?n[o']?t|have ?n[o']?t|is ?n[o']?t|was ?n[o']?t|not) (really |actually )?(fix|solve|resolve|help|work|change|do)\w*",
    ),
    (Strong, r"\b(not|n't|isn't|aren't) working\b"),
    (
        Strong,
        r"\bstill (fail|failing|fails|failed|broken|crash\w*|red|slow|not|no|nothing|exists|doesn't|does not|don't|isn't|won't|can't|throw\w*|reject\w*|times? out|timing out|the same|same|there|get|getting|see|seeing|happen\w*|error\w*|wrong|missing|empty|show\w*|hang\w*|return\w*|leak\w*|flak\w*|freez\w*|panic\w*|stuck|loop\w*|break\w*|off|stale|buggy)\b",
    ),
    (
        Strong,
        r"\bsame (error|problem|bug|issue|stack ?trace|failure|result|thing|exception|crash|output|message)\b",
    ),
    (
        Strong,
        r"\b(fails|failing|failed|broken|crashes|crashing|breaks|errors?|red|down|wrong) again\b",
    ),
    (
        Strong,
        r"\bsame (\w+ )?(test|tests|check|job|step) (fails|failed|is failing)\b",
    ),
    (
        Strong,
        r"\bnothing (changed|happens|happened|works)\b|\b(changed|fixed|helped|solved) nothing\b|\b(do|does|did) ?n[o']?t (match|look right|line up)\b|\bdon'?t match\b|\bsupposed to\b",
    ),
    (
        Strong,
        r"\b(can'?t|cannot|could ?n[o']?t) (find|open|load|connect|reach|import|resolve|read)\b|\bwho (asked|told|said)\b|\bwhy (is|are) there\b",
    ),
    // The work broke something.
    (Strong, r"\bbroke\b"),
    (
        Strong,
        r"\b(is|are|'s|was|were|got|been|'ve|have|has|still|now|all) broken\b",
    ),
    (
        Strong,
        r"\bregression\b|\bworse\b|\bbackwards\b|\bthe other way (round|around)\b|\buseless\b|\bpointless\b|\bno luck\b|\bas (\w+ )?as (before|ever)\b",
    ),
    (
        Strong,
        r"\b(won't|will not|wo n't|doesn't|does not|can't|cannot|no longer) (start|build|compile|run|load|boot|open)\b",
    ),
    (Strong, r"\bnothing (compiles|builds|runs|loads|starts)\b"),
    (
        Strong,
        r"\b(other|more|two|three|four|several|\d+) (other )?(tests?|checks?|jobs?) (now )?(fail|fails|are failing|broke|break)\b",
    ),
    (
        Strong,
        r"\bnow (the |every |all |it |this |that )?\w*( \w+)? (returns?|throws?|gives?|shows?) (a |an )?(\d{3}|error|exception|blank|nothing)\b",
    ),
    (Strong, r"\btimes out\b.*\bnow\b|\bnow\b.*\btimes out\b"),
    // The user objects to what was done.
    (
        Strong,
        r"\bwhy\b( on earth| the hell| exactly)? (did|would|are|were|have|do) you\b",
    ),
    (Strong, r"\bwho (asked|told) you\b"),
    (
        Strong,
        r"\b(i|we) (don't|do not|didn't|did not) (want|need|ask|use)\b",
    ),
    (
        Strong,
        r"\bnot what i (asked|meant|wanted|said|needed|had|expected|was)\b|\bnot the point\b|\bmisunderst\w*\b|\bmisread\b|\bthat'?s not it\b|\bnot how we\b|\bi (told|asked) you\b",
    ),
    (
        Strong,
        r"\b(i|we) (said|asked for|meant)\b|\bi wanted (a|an|the|it|to|you)\b",
    ),
    (
        Strong,
        r"\b(you )?forgot\b|\byou missed\b|\bhalf of it\b|\bnot quite\b|\boff by (one|\d+)\b|\bdon'?t add up\b|\b(a |another )?new error\b",
    ),
    // The answer was wrong or made up.
    (
        Strong,
        r"\b(incorrect|not (right|correct|true|valid)|is ?n[o']?t (right|correct|true|valid)|makes no sense|doesn'?t make sense|you'?re wrong|you are wrong|(that|it|this|what|answer|which|everything|all)('s| is| was) wrong)\b",
    ),
    (
        Strong,
        r"\b(there is|there's|there are) no\b|\b(does ?n[o']?t|do ?n[o']?t) exist\b|\bis ?n[o']?t (even )?(in|there)\b",
    ),
    (
        Strong,
        r"\byou (did ?n[o']?t|never) (actually |even )?(run|add|test|change|do|update|commit|push|save|write)\b|\bwas ?n[o']?t (even )?run\b|\byou (said|claimed)\b",
    ),
    // What to do instead, or to undo.
    (
        Weak,
        r"\b(revert|undo|roll (it |that |this |them )?back|back out|change (it|that|this) back|restore|go back to)\b|\b(put|add|bring) (the \w+ |it |them |that )?\w* ?back\b",
    ),
    (Weak, r"\bwrong\b[^-]|\bwrong$"),
    (
        Weak,
        r"\w[`'\x22)]?, not\b|\binstead of\b|\brather than\b|\bnot like (that|this)\b",
    ),
    (
        Weak,
        r"\b(should|needs to|must|has to) (be|use|call|have|return|go)\b",
    ),
    (
        Weak,
        r"\b(don't|do not|never) (use|add|call|touch|change|edit|create|push)\b|\bno new (dependenc\w*|files?)\b|\bstick to\b",
    ),
    (Weak, r"\b(is|are|comes back|was) (empty|missing)\b"),
    (
        Weak,
        r"^(almost|close, but|not that|not the|not in|not on)\b",
    ),
    (
        Weak,
        r"\byou\b.*\bagain\b|\bwe (can'?t|cannot|don'?t|never)\b|\b(is|are|was|were) ?n[o']?t \w+(ed|en)\b|\bignor(es|ed|ing)\b|\b(after|with|since) your (change|commit|edit|fix|patch)\b|\b(way |far |much )?too (long|short|slow|big|small|verbose|complicated)\b|\bno \w+ (shows? up|appears?|arrives?)\b|\b(resets|disappears|goes away|vanishes)\b",
    ),
    (
        Strong,
        r"\byour (\w+ )?(fix|change|changes|patch|commit|edit|code|cache|test|version|migration|update|query|function|script|solution)\b.*(\bnever\b|\bonly\b|n't\b|\bnot\b|\bfails?\b|\bbroke\b|\bwrong\b|\bmissing\b)",
    ),
    (
        Strong,
        r"\bnever (expires|works|runs|finishes|loads|returns|stops|ends|completes)\b|\bonly works\b",
    ),
    (Weak, r"\b(prints|shows|returns|outputs|does|did) nothing\b"),
    (
        Strong,
        r"\byou (removed|deleted|broke|forgot|ignored|skipped|missed|overwrote|dropped|documented the old|misread|reverted|lost)\b|\byou'?re (editing|changing|modifying|touching|using) the\b",
    ),
    (
        Strong,
        r"^stop\b|\bstop (changing|touching|editing|adding|doing|deleting|removing|using|reformatting)\b",
    ),
    (
        Weak,
        r"\b(returns?|gives?|throws?|shows?|get|getting|got|see|seeing) (a |an |me )?[\w' ]{0,25}\b(\d{3}|error|exception|failure|crash|nothing|blank|null)\b",
    ),
    (
        Weak,
        r"\b(fail\w*|crash\w*|broken|breaks|leak\w*|flaky|hangs|hanging|freez\w*|panic\w*|exception|errors?|denied|refused|404|500|502|503|stale|invalid|times? out|timing out)\b",
    ),
    // Other languages.
    (
        Strong,
        r"nicht (funktioniert|geklappt)|funktioniert (immer noch )?nicht|immer noch|\bfalsch|rückgängig|geht (immer )?noch nicht|^nein\b|schlägt .*fehl|kaputt|fehler",
    ),
    (
        Strong,
        r"toujours pas|ne (marche|fonctionne) pas|c'est faux|^non\b|annule|ce n'est pas ce que|pas ce que j'ai demandé|plante|toujours (la même|le même|cassé|en erreur)|erreur",
    ),
    (
        Strong,
        r"no funciona|sigue (fallando|sin funcionar|roto|igual|sin)|está mal|deshaz|no (es|era) (lo que|eso)|no, eso|todavía (no|falla)",
    ),
    (
        Strong,
        r"não funcion|continua (falhando|com erro|quebrad)|está errado|desfaça|ainda (está|não)|quebrad",
    ),
    (
        Strong,
        r"è sbagliato|non funziona|annulla|non è (corretto|giusto)|non va\b|ancora (non|rotto)",
    ),
    (
        Strong,
        r"klopt niet|werkt (nog steeds )?niet|^nee\b|maak .*ongedaan|nog steeds|kapot|niet wat ik",
    ),
    (
        Strong,
        r"не работает|та же ошибка|неправильно|^нет\b|отмени|вс[её] ещ[её]|падает|сломал",
    ),
    (
        Strong,
        r"不对|还是(不行|报错|失败|有问题|不对|泄漏|没|崩)|错了|改错|撤销|没用|不是我要的|违い|違い|違う|まだ(失敗|エラー|動|直って)|元に戻|間違|ダメ|だめ",
    ),
];

/// Words that open a question.
const QUESTION_OPENERS: [&str; 22] = [
    "how",
    "what",
    "what's",
    "whats",
    "which",
    "where",
    "when",
    "who",
    "is",
    "are",
    "does",
    "do",
    "did",
    "can i",
    "should",
    "will",
    "would",
    "could this",
    "could it",
    "have you",
    "has",
    "why",
];

/// Words that open a next step.
const NEXT_STEP_OPENERS: [&str; 10] = [
    "now",
    "next",
    "then",
    "also",
    "let's",
    "lets",
    "after that",
    "great. now",
    "there's another",
    "another",
];

/// Verbs that open a new request: a weak cue after one names what to work on ("Fix the broken
/// link"), not what went wrong.
const REQUEST_OPENERS: [&str; 30] = [
    "fix",
    "add",
    "write",
    "make",
    "create",
    "update",
    "document",
    "run",
    "remove",
    "clean",
    "deploy",
    "implement",
    "generate",
    "rename",
    "refactor",
    "move",
    "open",
    "push",
    "commit",
    "merge",
    "bump",
    "install",
    "go ahead",
    "please add",
    "please fix",
    "please also",
    "please write",
    "please update",
    "can you also",
    "could you also",
];

/// Words that say a problem is gone ("no errors anymore"), or that the message is an aside
/// ("wrong window"): a weak cue beside one does not correct.
const RESOLVED: [&str; 18] = [
    "anymore",
    "any more",
    "no more",
    "no longer",
    "is gone",
    "are gone",
    "works now",
    "passes now",
    "all green",
    "thank",
    "fixed it",
    "solved",
    "wrong window",
    "wrong tab",
    "wrong chat",
    "wrong session",
    "never mind",
    "nevermind",
];

/// The cues, compiled once.
static COMPILED: LazyLock<Vec<(Strength, Regex)>> = LazyLock::new(|| {
    CUES.iter()
        .filter_map(|(strength, pattern)| Regex::new(pattern).ok().map(|r| (*strength, r)))
        .collect()
});

/// `text` as cues read it: its first [`MAX_READ_CHARS`] characters in lower case, curly
/// apostrophes straight, on one line with single spaces, trimmed of quotation marks.
pub(crate) fn normalise(text: &str) -> String {
    let lowered: String = text
        .chars()
        .take(MAX_READ_CHARS)
        .map(|c| if matches!(c, '’' | '‘') { '\'' } else { c })
        .flat_map(char::to_lowercase)
        .collect();
    let spaced = lowered.split_whitespace().collect::<Vec<_>>().join(" ");
    spaced
        .trim_start_matches(['"', '\'', '>', '*', ' '])
        .to_owned()
}

/// Whether `normal` (from [`normalise`]) opens with one of `openers` as whole words.
fn opens_with(normal: &str, openers: &[&str]) -> bool {
    openers.iter().any(|opener| {
        normal
            .strip_prefix(opener)
            .is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_alphanumeric()))
    })
}

/// Whether `normal` holds `words` starting and ending at word boundaries ("wrong tab", not
/// "wrong table"); `thank` also starts "thanks".
fn holds_words(normal: &str, words: &str) -> bool {
    normal.match_indices(words).any(|(at, _)| {
        let before = normal.get(..at).and_then(|b| b.chars().next_back());
        let after = normal
            .get(at.saturating_add(words.len())..)
            .and_then(|a| a.chars().next());
        before.is_none_or(|c| !c.is_alphanumeric())
            && (words == "thank" || after.is_none_or(|c| !c.is_alphanumeric()))
    })
}

/// The words of the first cue found in `normal` (from [`normalise`]), as they stand there.
pub(crate) fn find_cue(normal: &str) -> Option<String> {
    let question = normal.contains('?') && opens_with(normal, &QUESTION_OPENERS);
    let next_step = opens_with(normal, &NEXT_STEP_OPENERS) || opens_with(normal, &REQUEST_OPENERS);
    let resolved = RESOLVED.iter().any(|words| holds_words(normal, words));
    COMPILED.iter().find_map(|(strength, regex)| {
        if *strength == Weak && (question || next_step || resolved) {
            return None;
        }
        regex.find(normal).map(|m| {
            m.as_str()
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_owned()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cue_compiles() {
        assert_eq!(COMPILED.len(), CUES.len());
    }

    #[test]
    fn weak_cues_yield_to_questions_and_next_steps() {
        let cue = |text: &str| find_cue(&normalise(text));
        assert_eq!(cue("Revert that.").as_deref(), Some("revert"));
        assert_eq!(cue("How do I revert this if needed?"), None);
        assert_eq!(cue("Then revert the debug flag we added last week"), None);
        assert_eq!(
            cue("Now the login page is broken.").as_deref(),
            Some("is broken")
        );
        assert_eq!(
            cue("Why did you delete the tests?").as_deref(),
            Some("why did you")
        );
        assert_eq!(cue("Does the test still pass on Windows?"), None);
        assert_eq!(cue("Now do the wrong-password case"), None);
        assert_eq!(cue("Nothing else, wrong tab").as_deref(), None);
        assert_eq!(
            cue("Wrong table: the column belongs on users.").as_deref(),
            Some("wrong")
        );
        assert_eq!(
            cue("That did not fix it, payments still fail.").as_deref(),
            Some("did not fix")
        );
    }
}
