//! What a diagnosis tells an observer while it works: which pass runs, how
//! many items it has, and when each item starts and finishes. The kernel
//! only calls the observer; drawing a bar or printing a line is the front
//! end's business.

/// A pass of a diagnosis whose items are judged by the LLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiagnosePass {
    /// Stage 1: one item per diagnosed question (its judges and, for a
    /// wrong answer, the defect-vs-lapse call with, for a reasoning failure,
    /// its sub-type call beside it).
    Questions,
}

impl DiagnosePass {
    /// The pass in a word: `questions`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosePass::Questions => "questions",
        }
    }
}

/// Told what a [`crate::Diagnoser`] is doing, for a front end to show.
///
/// Each pass is announced once with its number of items, even when it has no
/// item; then every item is
/// started once and finished once, in any order across items (they run
/// concurrently). An item whose provider error aborts the diagnosis is never
/// finished. Calls come from the diagnosis's own tasks, so they must be
/// quick; every method does nothing by default.
pub trait DiagnoseProgress: Send + Sync {
    /// `pass` begins with `total` items.
    fn pass_started(&self, pass: DiagnosePass, total: usize) {
        let _ = (pass, total);
    }

    /// Judging question `question_id` in `pass` began.
    fn item_started(&self, pass: DiagnosePass, question_id: &str) {
        let _ = (pass, question_id);
    }

    /// Judging question `question_id` in `pass` ended (a degraded question
    /// ends too).
    fn item_finished(&self, pass: DiagnosePass, question_id: &str) {
        let _ = (pass, question_id);
    }
}

/// The observer of a diagnoser that was given none.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Silent;

impl DiagnoseProgress for Silent {}
