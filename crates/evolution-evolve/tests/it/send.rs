//! The evolve futures can be awaited inside `Send` contexts (spawned tasks,
//! `async_trait` methods), as an app's proposer does.

use evolution_evolve::{
    EvolveOptions, evolve_single_skill, evolve_single_tool, evolve_system_prompt,
};
use evolution_testkit::{MemoryStore, ScriptedLlm};
use evolution_types::{EvolvePrompts, SkillCasePack, SystemCasePack, ToolCasePack};

fn assert_send<T: Send>(_: T) {}

#[test]
fn evolve_futures_are_send() {
    let llm = ScriptedLlm::new();
    let store = MemoryStore::new();
    let prompts = EvolvePrompts::default();
    let options = EvolveOptions::default();
    assert_send(evolve_single_skill(
        &llm,
        &SkillCasePack::default(),
        &store,
        &prompts,
        &options,
    ));
    assert_send(evolve_system_prompt(
        &llm,
        &SystemCasePack::default(),
        &store,
        &prompts,
        &options,
    ));
    assert_send(evolve_single_tool(
        &llm,
        &ToolCasePack::default(),
        &store,
        &prompts,
        &options,
    ));
}
