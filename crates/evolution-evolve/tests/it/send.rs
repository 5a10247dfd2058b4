//! The evolve futures can be awaited inside `Send` contexts (spawned tasks,
//! `async_trait` methods), as an app's proposer does.

use evolution_evolve::EvolvePrompts;
use evolution_evolve::{EvolveOptions, Evolver};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{SkillCasePack, SystemCasePack, ToolCasePack};

fn assert_send<T: Send>(_: T) {}

#[test]
fn evolve_futures_are_send() {
    let llm = ScriptedLlm::new();
    let store = MemoryStore::new();
    let prompts = EvolvePrompts::default();
    let options = EvolveOptions::default();
    assert_send(
        Evolver::new(&llm)
            .with_prompts(prompts.clone())
            .with_options(options.clone())
            .skill(&SkillCasePack::default(), &store),
    );
    assert_send(
        Evolver::new(&llm)
            .with_prompts(prompts.clone())
            .with_options(options.clone())
            .system_prompt(&SystemCasePack::default(), &store),
    );
    assert_send(
        Evolver::new(&llm)
            .with_prompts(prompts.clone())
            .with_options(options.clone())
            .tool(&ToolCasePack::default(), &store),
    );
}

#[test]
fn the_reflect_loop_future_is_send() {
    use evolution_evolve::reflect::{ReflectOptions, ReflectPrompts, reflect_loop};
    let llm = ScriptedLlm::new();
    let prompts = ReflectPrompts::builtin();
    let options = ReflectOptions {
        rounds: 1,
        batch_size: 1,
        schedule: evolution_evolve::EditBudgetSchedule::default(),
        rank_prompts: EvolvePrompts::builtin(),
        checks: Default::default(),
    };
    assert_send(reflect_loop(
        &llm,
        &prompts,
        "doc",
        &[],
        &options,
        &|_: &str| {},
    ));
}

#[test]
fn builtin_prompts_are_the_default_and_use_declared_placeholders() {
    use evolution_types::template::{check, placeholders};
    let mut prompts = EvolvePrompts::default();
    assert_eq!(prompts, EvolvePrompts::builtin());
    for spec in EvolvePrompts::TEMPLATES {
        assert_eq!(prompts.get(spec.name), Some(spec.builtin));
        assert_eq!(
            check(spec.builtin, spec.placeholders),
            Ok(()),
            "{}",
            spec.name
        );
        // The engine fills exactly what each template uses.
        assert_eq!(
            placeholders(spec.builtin).len(),
            spec.placeholders.len(),
            "{}",
            spec.name
        );
        if let Some(slot) = prompts.get_mut(spec.name) {
            slot.clear();
        }
    }
    assert!(prompts.evolve_rewrite.is_empty());
    assert_eq!(prompts.get("nope"), None);
}
