use evolution_evolve::budget::edit_budget_at;
use evolution_evolve::{BudgetError, EditBudgetSchedule};

fn check(step: u64, total: u64, start: usize, end: usize, expect: usize) {
    assert_eq!(
        edit_budget_at(step, total, start, end),
        Ok(expect),
        "step {step}/{total} {start}→{end}"
    );
}

#[test]
fn linear_budget_cases() {
    check(0, 100, 5, 2, 5); // plan: start at zero
    check(100, 100, 5, 2, 2); // plan: end at total
    check(0, 1, 5, 2, 5); // plan: total_steps = 1
    check(7, 0, 5, 2, 5); // total 0 behaves like 1
    check(500, 100, 5, 2, 2); // past the end clamps
    check(50, 100, 5, 2, 4); // 3.5 → 4 (half to even)
    check(1, 4, 4, 2, 4); // 3.5 → 4
    check(3, 4, 4, 2, 2); // 2.5 → 2
    check(1, 2, 5, 0, 2); // 2.5 → 2
    check(1, 2, 3, 0, 2); // 1.5 → 2
    check(1, 3, 5, 5, 5);
}

#[test]
fn start_below_end_is_an_error() {
    assert_eq!(
        edit_budget_at(0, 100, 2, 5),
        Err(BudgetError::StartBelowEnd { start: 2, end: 5 })
    );
    assert!(
        EditBudgetSchedule::Cosine { start: 1, end: 3 }
            .budget_at(0, 10)
            .is_err()
    );
}

#[test]
fn schedules() {
    let constant = EditBudgetSchedule::Constant { max_edits: 8 };
    assert_eq!(EditBudgetSchedule::default(), constant);
    assert_eq!(constant.budget_at(3, 10), Ok(Some(8)));
    let linear = EditBudgetSchedule::Linear { start: 8, end: 2 };
    assert_eq!(linear.budget_at(5, 10), Ok(Some(5)));
    let cosine = EditBudgetSchedule::Cosine { start: 8, end: 2 };
    let values: Vec<_> = (0..=4)
        .map(|s| cosine.budget_at(s, 4).ok().flatten())
        .collect();
    // 8, 2+6·(1+cos(π/4))/2 = 7.12 → 7, 5, 2.88 → 3, 2.
    assert_eq!(values, vec![Some(8), Some(7), Some(5), Some(3), Some(2)]);
    assert_eq!(cosine.budget_at(0, 1), Ok(Some(8)));
    assert_eq!(EditBudgetSchedule::Autonomous.budget_at(1, 2), Ok(None));
}

#[test]
fn schedule_serializes_with_a_mode_tag() {
    let json = serde_json::to_string(&EditBudgetSchedule::Cosine { start: 8, end: 2 }).unwrap();
    assert_eq!(json, r#"{"mode":"cosine","start":8,"end":2}"#);
    let back: EditBudgetSchedule = serde_json::from_str(r#"{"mode":"autonomous"}"#).unwrap();
    assert_eq!(back, EditBudgetSchedule::Autonomous);
}
