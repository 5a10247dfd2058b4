//! Running the binary in a clean environment.

use std::path::Path;

use assert_cmd::Command;

/// The binary, run in `dir` with no terminal on stdin, no colour and none of
/// the `SKILL_EVOLVE_*` variables of the caller's environment, nor any of
/// the variables an API key is read from by default.
pub(crate) fn skill_evolve(dir: &Path) -> Command {
    let mut cmd = assert_cmd::cargo::cargo_bin_cmd!("skill-evolve");
    cmd.current_dir(dir).env("NO_COLOR", "1").write_stdin("");
    for var in [
        "SKILL_EVOLVE_CONFIG",
        "SKILL_EVOLVE_PROVIDER",
        "SKILL_EVOLVE_BASE_URL",
        "SKILL_EVOLVE_MODEL",
        "SKILL_EVOLVE_API_KEY_ENV",
        "SKILL_EVOLVE_CASSETTE",
        "OPENAI_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY",
        "GROQ_API_KEY",
        "MISTRAL_API_KEY",
        "TOGETHER_API_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// `skill-evolve run --config evolve.toml` in `dir` with `extra` arguments
/// (`--dry-run`, …), the API key the test configurations name
/// (`SKILL_EVOLVE_TEST_KEY`) set.
pub(crate) fn run_config(dir: &Path, extra: &[&str]) -> std::process::Output {
    skill_evolve(dir)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .args(["run", "--config", "evolve.toml"])
        .args(extra)
        .output()
        .unwrap()
}

/// `skill-evolve run --config evolve.toml` started in `dir` and not waited for: stdin
/// empty, stdout and stderr piped, the test configurations' API key set.
#[cfg(unix)]
pub(crate) fn spawn_run(dir: &Path) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"))
        .args(["run", "--config", "evolve.toml"])
        .current_dir(dir)
        .env("SKILL_EVOLVE_TEST_KEY", "k")
        .env("NO_COLOR", "1")
        .env_remove("SKILL_EVOLVE_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Interrupts `child` with SIGINT, as Ctrl-C does, and waits for it: it must stop with
/// exit code 130 and say how to resume. Returns what it printed on stdout.
#[cfg(unix)]
pub(crate) fn interrupt(child: std::process::Child) -> String {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("run the same command to resume"),
        "{stdout}"
    );
    stdout
}

/// `skill-evolve diagnose` of run `run_id` of the run log `run.sqlite` in
/// `dir`, rule metrics only (no LLM).
pub(crate) fn diagnose_rules(dir: &Path, run_id: &str) -> Command {
    let mut cmd = skill_evolve(dir);
    cmd.args(["diagnose", "--runlog", "run.sqlite", "--run-id", run_id])
        .arg("--no-llm");
    cmd
}

/// `skill-evolve history --json` of `document` in `dir` (in the store folder `store`, when
/// given), parsed; the command must succeed.
pub(crate) fn history_json(dir: &Path, document: &str, store: Option<&str>) -> serde_json::Value {
    let mut cmd = skill_evolve(dir);
    cmd.args(["history", document, "--json"]);
    if let Some(store) = store {
        cmd.args(["--store", store]);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every file under `dir` with its bytes, sorted by path: to show that a
/// command wrote nothing.
pub(crate) fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Asserts that stderr is exactly one line starting with `error: ` and containing `needle`.
pub(crate) fn assert_one_line_error(output: &std::process::Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    assert!(stderr.starts_with("error: "), "{stderr:?}");
    assert!(stderr.contains(needle), "{needle:?} not in {stderr:?}");
}
