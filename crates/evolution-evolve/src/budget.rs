//! Edit budgets: how many edits one evolution step may apply.

use serde::{Deserialize, Serialize};

use crate::error::BudgetError;

/// The edit budget at `step` of `total` steps, annealed linearly from
/// `start` down to `end`.
///
/// `t = min(step, total) / total` and the budget is `start + (end − start)·t`
/// rounded half to even (Python's `round`). With `total ≤ 1` the budget is
/// `start`. `start < end` is an error: a budget only shrinks.
pub fn edit_budget_at(
    step: u64,
    total: u64,
    start: usize,
    end: usize,
) -> Result<usize, BudgetError> {
    check_order(start, end)?;
    if total <= 1 {
        return Ok(start);
    }
    if step >= total {
        return Ok(end);
    }
    let t = progress(step, total);
    Ok(to_budget(
        start as f64 + (end as f64 - start as f64) * t,
        start,
        end,
    ))
}

/// How the edit budget evolves over the steps of a run (the workflow's scheduler).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EditBudgetSchedule {
    /// The same budget at every step.
    Constant {
        /// The budget.
        max_edits: usize,
    },
    /// Linear decay from `start` to `end` ([`edit_budget_at`]).
    Linear {
        /// Budget at step 0.
        start: usize,
        /// Budget at the last step.
        end: usize,
    },
    /// Cosine annealing from `start` to `end`:
    /// `end + (start − end)·(1 + cos(π·t))/2`, rounded half to even.
    Cosine {
        /// Budget at step 0.
        start: usize,
        /// Budget at the last step.
        end: usize,
    },
    /// No limit: the model decides how many edits to make.
    Autonomous,
}

impl Default for EditBudgetSchedule {
    /// The workflow's default: a constant budget of 8 edits.
    fn default() -> Self {
        EditBudgetSchedule::Constant { max_edits: 8 }
    }
}

impl EditBudgetSchedule {
    /// The budget at `step` of `total` steps; `None` means unlimited.
    ///
    /// Pass `usize::MAX` in [`crate::EvolveOptions`] for an unlimited budget
    /// (`budget_at(..).map_or(usize::MAX, ..)`).
    pub fn budget_at(&self, step: u64, total: u64) -> Result<Option<usize>, BudgetError> {
        match *self {
            EditBudgetSchedule::Constant { max_edits } => Ok(Some(max_edits)),
            EditBudgetSchedule::Linear { start, end } => {
                edit_budget_at(step, total, start, end).map(Some)
            }
            EditBudgetSchedule::Cosine { start, end } => {
                check_order(start, end)?;
                if total <= 1 {
                    return Ok(Some(start));
                }
                if step >= total {
                    return Ok(Some(end));
                }
                let t = progress(step, total);
                let span = start as f64 - end as f64;
                let value = end as f64 + span * (1.0 + (std::f64::consts::PI * t).cos()) / 2.0;
                Ok(Some(to_budget(value, start, end)))
            }
            EditBudgetSchedule::Autonomous => Ok(None),
        }
    }
}

fn check_order(start: usize, end: usize) -> Result<(), BudgetError> {
    if start < end {
        Err(BudgetError::StartBelowEnd { start, end })
    } else {
        Ok(())
    }
}

fn progress(step: u64, total: u64) -> f64 {
    step.min(total) as f64 / total as f64
}

/// Rounds half to even and keeps the result within `[end, start]`, which
/// also guards the float-to-integer conversion for huge budgets.
fn to_budget(value: f64, start: usize, end: usize) -> usize {
    let rounded = value.round_ties_even();
    if rounded >= start as f64 {
        start
    } else if rounded <= end as f64 {
        end
    } else {
        // In range of usize by the two checks above.
        rounded as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_rounds_half_to_even() {
        // 5 + (2 - 5) * 0.5 = 3.5 → 4; 6 + (1 - 6) * 0.5 = 3.5 → 4; 5 + (0-5)*0.5 = 2.5 → 2.
        assert_eq!(edit_budget_at(50, 100, 5, 2), Ok(4));
        assert_eq!(edit_budget_at(1, 2, 5, 0), Ok(2));
        assert_eq!(edit_budget_at(1, 2, 7, 0), Ok(4));
    }

    #[test]
    fn huge_budgets_do_not_overflow() {
        assert_eq!(edit_budget_at(0, 3, usize::MAX, 0), Ok(usize::MAX));
        assert_eq!(
            edit_budget_at(3, 3, usize::MAX, usize::MAX - 1),
            Ok(usize::MAX - 1)
        );
    }
}
