//! The repository's own promises: README's test command is what CI runs.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fenced_commands(markdown: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            command if in_sh && !command.is_empty() => commands.push(command.to_owned()),
            _ => {}
        }
    }
    commands
}

#[test]
fn ci_runs_the_readme_test_command() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let commands = fenced_commands(&readme);
    assert_eq!(
        commands.len(),
        2,
        "README keeps exactly two set-up commands: {commands:?}"
    );
    let test_command = &commands[1];
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        ci_commands.contains(&test_command.as_str()),
        ".ci/run must run README's test command {test_command:?}; it runs {ci_commands:?}"
    );
}
