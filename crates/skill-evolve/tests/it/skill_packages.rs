//! Whole skill packages: an Agent Skills skill is its folder (`SKILL.md`, `references/`,
//! `scripts/`, assets). The agent of `run` gets the folder of the version under test as
//! `skills_dir/<name>/`, so the `SKILL.md`'s relative paths resolve, and the host-agent
//! adapter installs the same folder where the host reads skills.

use std::path::Path;

use crate::evolve_gated::{evolve_skill, json_of};
use crate::fake_llm::{REFUND_RULE, start_evolve_refund_rule, start_loop};
use crate::run::{live_config, one_epoch, run_to_end};
use crate::support::{assert_one_line_error, history_json, run_config, skill_evolve, snapshot};

/// An agent that answers from the skill's package: when the package's `SKILL.md` is the
/// version under test (the same text as `qa.md`) and holds `RULE qa => yes`, it runs the
/// package's script by its relative path from the skill's folder, and the script prints the
/// reference file it reads by a relative path. It logs each workspace's package listing.
const AGENT: &str = r#"#!/bin/sh
while IFS= read -r line; do
  skills=$(printf '%s' "$line" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
  qid=$(printf '%s' "$line" | sed -n 's/.*"question_id":"\([^"]*\)".*/\1/p')
  (cd "$skills/qa" && find . | sort | tr '\n' ' ') >> files.log
  printf '\n' >> files.log
  answer=unknown
  if cmp -s "$skills/qa.md" "$skills/qa/SKILL.md" && grep -qx 'RULE qa => yes' "$skills/qa/SKILL.md"; then
    answer=$(cd "$skills/qa" && ./scripts/answer.sh)
  fi
  printf '{"type":"result","question_id":"%s","prediction":"%s"}\n' "$qid" "$answer"
done
"#;

/// Writes the package `skills/qa/`: `SKILL.md` without the rule, `references/answer.md`,
/// the executable `scripts/answer.sh` that prints it, and a hidden file.
fn write_package(skills: &Path) {
    let qa = skills.join("qa");
    std::fs::create_dir_all(qa.join("references")).unwrap();
    std::fs::create_dir_all(qa.join("scripts")).unwrap();
    std::fs::write(
        qa.join("SKILL.md"),
        "---\nname: qa\ndescription: Answer questions.\n---\n\n# QA\n\nSee [the answer](references/answer.md).\n",
    )
    .unwrap();
    std::fs::write(qa.join("references/answer.md"), "yes\n").unwrap();
    std::fs::write(
        qa.join("scripts/answer.sh"),
        "#!/bin/sh\ncat references/answer.md\n",
    )
    .unwrap();
    make_executable(&qa.join("scripts/answer.sh"));
    std::fs::write(qa.join(".notes"), "private").unwrap();
}

fn make_executable(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(unix)]
#[test]
fn run_gives_the_agent_the_whole_skill_folder_of_the_version_under_test() {
    let fake = start_loop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_package(&d.join("skills"));
    std::fs::write(d.join("agent.sh"), AGENT).unwrap();
    let questions: String = (0..14)
        .map(|i| {
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"question\": \"?\", \
                 \"answer\": \"yes\"}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        one_epoch(&live_config(&fake.base_url)),
    )
    .unwrap();
    let finished = run_to_end(d);
    // The candidate's rule reached the package's SKILL.md, and the answer came from the
    // script reading the reference file: every gate question is a win.
    finished.assert_summary("1 candidate(s), 1 accepted");
    let listings: std::collections::BTreeSet<String> = std::fs::read_to_string(d.join("files.log"))
        .unwrap()
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    assert_eq!(
        listings,
        std::collections::BTreeSet::from([
            ". ./SKILL.md ./references ./references/answer.md ./scripts ./scripts/answer.sh"
                .to_owned()
        ]),
        "the folder is carried whole, hidden files left out"
    );
    // The user's folder is untouched: the run stages only the skill document.
    let skill = std::fs::read_to_string(d.join("skills/qa/SKILL.md")).unwrap();
    assert!(!skill.contains("RULE qa => yes"), "{skill}");
    // The folder's files are inputs of the run: once one changed, it does not resume.
    std::fs::write(d.join("skills/qa/references/answer.md"), "no\n").unwrap();
    let out = run_config(d, &[]);
    assert_one_line_error(
        &out,
        "cannot resume: the skills (qa/references/answer.md) changed since",
    );
}

/// A stand-in for Claude Code: in the folder the adapter made, it runs the installed
/// skill's script by its relative path and reports what it printed as its result.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
cat > /dev/null
answer=$(cd .claude/skills/qa && ./scripts/answer.sh | tr -d '\n')
head=$(head -n 2 .claude/skills/qa/SKILL.md | tail -n 1)
printf '{"type":"result","subtype":"success","is_error":false,"result":"%s|%s"}\n' "$answer" "$head"
"#;

#[cfg(unix)]
#[test]
fn the_host_agent_installs_the_whole_skill_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let workspace = d.join("ws");
    let skills = workspace.join("skills");
    write_package(&skills);
    std::fs::create_dir_all(workspace.join("prompts")).unwrap();
    let version_text = "---\nname: qa\ndescription: Answer questions.\n---\n\nRULE qa => yes\n";
    std::fs::write(skills.join("qa.md"), version_text).unwrap();
    std::fs::write(skills.join("qa/SKILL.md"), version_text).unwrap();
    std::fs::write(d.join("claude"), FAKE_CLAUDE).unwrap();
    make_executable(&d.join("claude"));
    let request = serde_json::json!({
        "type": "question", "run_id": "r",
        "workspace": {"version": "v2", "dir": workspace, "skills_dir": skills,
                      "prompts_dir": workspace.join("prompts")},
        "question": {"question_id": "q1", "task_type": "qa", "question": "Is it?"},
    });
    let out = skill_evolve(d)
        .args(["host-agent", "claude-code", "--cli"])
        .arg(d.join("claude"))
        .write_stdin(format!("{request}\n"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let result: serde_json::Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "result")
        .unwrap();
    assert_eq!(result["prediction"], "yes|name: qa", "{stdout}");
}

/// A failed refund trajectory whose question is in no question set below.
const REFUND_TRAJECTORY: &str = r#"{"id": "t1", "task_description": "refund", "question": "May I have my money back?",
  "fail_reason": "answered unknown", "predicted_answer": "unknown", "reference_text": "yes"}"#;

/// An agent that answers `yes` when the refunds skill's reference `references/rules.md`,
/// found beside its `SKILL.md`, holds [`REFUND_RULE`]; it logs the top of its skills folder.
const REFERENCE_AGENT: &str = r#"#!/bin/sh
while IFS= read -r line; do
  skills=$(printf '%s' "$line" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
  qid=$(printf '%s' "$line" | sed -n 's/.*"question_id":"\([^"]*\)".*/\1/p')
  ls "$skills" | tr '\n' ' ' >> files.log
  printf '\n' >> files.log
  answer=unknown
  if grep -qx 'RULE refund => yes' "$skills/refunds/references/rules.md"; then answer=yes; fi
  printf '{"type":"result","question_id":"%s","prediction":"%s"}\n' "$qid" "$answer"
done
"#;

/// A project: the Agent Skills skill `refunds` with `references/rules.md` (no rule yet) and
/// `scripts/check.sh`, 30 refund questions (26 of them to the gate), one failed trajectory,
/// and `evolve.toml` with `run_extra` in its `[run]` table.
fn reference_project(run_extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let skill = d.join("skills/refunds");
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: refunds\ndescription: Refunds.\n---\n\n# Refunds\n\nThe rules are in \
         [references/rules.md](references/rules.md).\n",
    )
    .unwrap();
    std::fs::write(
        skill.join("references/rules.md"),
        "# Refund rules\n\nRULE other => no\n",
    )
    .unwrap();
    std::fs::write(skill.join("scripts/check.sh"), "#!/bin/sh\necho ok\n").unwrap();
    std::fs::write(d.join("agent.sh"), REFERENCE_AGENT).unwrap();
    std::fs::create_dir_all(d.join("temp")).unwrap();
    std::fs::write(d.join("temp/failed_trajectory_001.json"), REFUND_TRAJECTORY).unwrap();
    let questions: String = (0..30)
        .map(|i| {
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"refund\", \
                 \"question\": \"refund question {i}\", \"answer\": \"yes\"}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        format!(
            "[run]\nname = \"desk\"\nskills = \"skills\"\nmax_epochs = 1\n{run_extra}\n\n\
             [agent]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout_secs = 30\n\n\
             [questions]\nfile = \"questions.jsonl\"\ntrain = 0.15\ngate = 0.85\nseed = 3\n\n\
             [gate]\nparams = \"calibrated\"\nladder = [6, 12]\n\n\
             [llm.openai]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn a_reference_is_evolved_as_a_document_of_its_own_once_its_skill_opts_in() {
    let fake = start_evolve_refund_rule();
    let dir = reference_project("evolve_references = [\"refunds\"]");
    let d = dir.path();
    let skill_before = std::fs::read_to_string(d.join("skills/refunds/SKILL.md")).unwrap();
    let out = evolve_skill(
        d,
        "skills/refunds/references/rules.md",
        &fake.base_url,
        &["--agent-config", "evolve.toml", "--yes", "--json"],
    );
    let summary = json_of(&out);
    let gate = &summary["gate"];
    assert_eq!(gate["document"], "refunds.references.rules.md", "{gate}");
    // The agent read the candidate at its place in the skill's folder: every gate question
    // is a win, and the candidate was written to the reference alone.
    let verdict = &gate["verdicts"][0];
    assert_eq!(verdict["passed"], true, "{verdict}");
    assert_eq!(verdict["l"], 0, "{verdict}");
    let rules = std::fs::read_to_string(d.join("skills/refunds/references/rules.md")).unwrap();
    assert!(rules.contains(REFUND_RULE), "{rules}");
    assert_eq!(
        std::fs::read_to_string(d.join("skills/refunds/SKILL.md")).unwrap(),
        skill_before
    );
    // The evolved reference is no loose skill of the agent's folder.
    let tops: std::collections::BTreeSet<String> = std::fs::read_to_string(d.join("files.log"))
        .unwrap()
        .lines()
        .map(|l| l.trim().to_owned())
        .collect();
    assert_eq!(
        tops,
        std::collections::BTreeSet::from(["refunds refunds.md".to_owned()])
    );
    // The reference keeps a version history of its own, and a rollback restores it.
    let back = skill_evolve(d)
        .args([
            "rollback",
            "skills/refunds/references/rules.md",
            "--to",
            "v1",
            "--yes",
        ])
        .output()
        .unwrap();
    assert!(back.status.success(), "{back:?}");
    assert_eq!(
        std::fs::read_to_string(d.join("skills/refunds/references/rules.md")).unwrap(),
        "# Refund rules\n\nRULE other => no\n"
    );
}

#[test]
fn scripts_assets_and_references_not_opted_in_are_refused_with_the_reason() {
    let fake = start_evolve_refund_rule();
    let dir = reference_project("");
    let d = dir.path();
    let before = snapshot(d);
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "skills/refunds/references/rules.md",
            &["--agent-config", "evolve.toml", "--yes"],
            "is a reference of skill refunds: add \"refunds\" to [run] evolve_references",
        ),
        (
            "skills/refunds/references/rules.md",
            &["--yes"],
            "a reference is evolved as a document of its own only with --agent-config",
        ),
        (
            "skills/refunds/scripts/check.sh",
            &["--agent-config", "evolve.toml", "--yes"],
            "is scripts/check.sh of the skill folder",
        ),
        (
            "skills/refunds/scripts/check.sh",
            &["--yes"],
            "scripts and assets are given to the agent unchanged and never edited",
        ),
    ];
    for (file, extra, needle) in cases {
        let out = evolve_skill(d, file, &fake.base_url, extra);
        assert_one_line_error(&out, needle);
    }
    assert_eq!(
        fake.calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "refused before any LLM call"
    );
    assert_eq!(snapshot(d), before, "a refused command writes nothing");
    // A name in the setting that is no skill of the folder is refused by `run` too.
    std::fs::write(
        d.join("evolve.toml"),
        std::fs::read_to_string(d.join("evolve.toml"))
            .unwrap()
            .replace(
                "max_epochs = 1\n",
                "max_epochs = 1\nevolve_references = [\"refund\"]\n",
            ),
    )
    .unwrap();
    let out = skill_evolve(d)
        .args(["run", "--config", "evolve.toml", "--dry-run"])
        .output()
        .unwrap();
    assert_one_line_error(
        &out,
        "[run] evolve_references: \"refund\" is no skill of [run] skills (they are refunds)",
    );
}

/// An agent that answers `yes` when the reference `references/answer.md` of the `qa`
/// package it is given holds `RULE qa => yes` (the rule in `SKILL.md` does not help it).
const REFERENCE_READER: &str = r#"#!/bin/sh
while IFS= read -r line; do
  skills=$(printf '%s' "$line" | sed -n 's/.*"skills_dir":"\([^"]*\)".*/\1/p')
  qid=$(printf '%s' "$line" | sed -n 's/.*"question_id":"\([^"]*\)".*/\1/p')
  answer=unknown
  if grep -qx 'RULE qa => yes' "$skills/qa/references/answer.md"; then answer=yes; fi
  printf '{"type":"result","question_id":"%s","prediction":"%s"}\n' "$qid" "$answer"
done
"#;

#[test]
fn run_evolves_the_references_of_a_skill_that_opts_in_and_adopt_writes_them() {
    let fake = start_loop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let qa = d.join("skills/qa");
    std::fs::create_dir_all(qa.join("references")).unwrap();
    let skill =
        "---\nname: qa\ndescription: Answer questions.\n---\n\n# QA\n\nSee references/answer.md.\n";
    let reference = "# Answers\n\nRULE other => no\n";
    std::fs::write(qa.join("SKILL.md"), skill).unwrap();
    std::fs::write(qa.join("references/answer.md"), reference).unwrap();
    std::fs::write(d.join("agent.sh"), REFERENCE_READER).unwrap();
    let questions: String = (0..30)
        .map(|i| {
            format!(
                "{{\"question_id\": \"q{i}\", \"task_type\": \"qa\", \"question\": \"?\", \
                 \"answer\": \"yes\"}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("questions.jsonl"), questions).unwrap();
    let config = one_epoch(&live_config(&fake.base_url)).replace(
        "max_epochs = 1\n",
        "max_epochs = 1\nevolve_references = [\"qa\"]\n",
    );
    std::fs::write(d.join("evolve.toml"), config).unwrap();

    // The pre-flight names the reference evolved with its skill.
    let dry = run_config(d, &["--dry-run"]);
    assert!(dry.status.success(), "{dry:?}");
    let plan =
        String::from_utf8_lossy(&dry.stdout).into_owned() + &String::from_utf8_lossy(&dry.stderr);
    assert!(
        plan.contains("references evolved as documents of their own ([run] evolve_references): ")
            && plan.contains("references/answer.md"),
        "{plan}"
    );

    // The qa case pack is evolved twice: into SKILL.md (no gain: the agent reads the
    // reference) and into the reference (every gate question a win).
    let finished = run_to_end(d);
    finished.assert_summary("2 candidate(s), 1 accepted");
    let proposal: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".skill-evolve/runs/demo/staged/proposal.json")).unwrap(),
    )
    .unwrap();
    let staged: Vec<&str> = proposal["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|doc| doc["document"].as_str().unwrap())
        .collect();
    assert_eq!(staged, ["qa.references.answer.md"], "{proposal}");
    let accepted: Vec<&str> = proposal["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["accepted"] == true)
        .map(|e| e["candidate"].as_str().unwrap())
        .collect();
    assert_eq!(
        accepted,
        ["demo_e0_1-qa.references.answer.md"],
        "{proposal}"
    );

    // Nothing reaches the user's files before adopt; the skill's name adopts its package.
    assert_eq!(
        std::fs::read_to_string(qa.join("references/answer.md")).unwrap(),
        reference
    );
    let adopted = skill_evolve(d)
        .args(["adopt", "demo", "--skill", "qa", "--yes"])
        .output()
        .unwrap();
    assert!(adopted.status.success(), "{adopted:?}");
    let written = std::fs::read_to_string(qa.join("references/answer.md")).unwrap();
    assert!(written.contains("RULE qa => yes"), "{written}");
    assert_eq!(std::fs::read_to_string(qa.join("SKILL.md")).unwrap(), skill);
    // The reference has a history of its own; the skill's folder lists each file's.
    let history = history_json(d, "skills/qa/references/answer.md", None);
    assert_eq!(history["history"].as_array().unwrap().len(), 2, "{history}");
    let package = history_json(d, "skills/qa", None);
    let files = package["files"].as_array().unwrap();
    assert_eq!(files.len(), 2, "{package}");
    assert!(
        files[0]["file"].as_str().unwrap().ends_with("SKILL.md"),
        "{package}"
    );
    assert!(
        files[0]["store"].is_null(),
        "the SKILL.md was never written: {package}"
    );
    assert_eq!(files[1]["current"], "v000002", "{package}");
    let listed = skill_evolve(d)
        .args(["history", "skills/qa"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("no versions yet") && listed.contains("adopted from run demo"),
        "{listed}"
    );
    // Undoing the adoption is refused while the file holds edits made since, and loses none.
    std::fs::write(qa.join("references/answer.md"), format!("{written}mine\n")).unwrap();
    let before = snapshot(d);
    assert_one_line_error(
        &skill_evolve(d)
            .args(["adopt", "demo", "--undo", "--yes"])
            .output()
            .unwrap(),
        "changed since adopting run \"demo\" wrote it",
    );
    assert_eq!(snapshot(d), before);
    // Without them, the package gets back the text the run started from, as a new version,
    // and the run's change is staged again.
    std::fs::write(qa.join("references/answer.md"), &written).unwrap();
    let undone = skill_evolve(d)
        .args(["adopt", "demo", "--undo", "--yes"])
        .output()
        .unwrap();
    assert!(undone.status.success(), "{undone:?}");
    assert!(
        String::from_utf8_lossy(&undone.stdout)
            .contains("restored skills/qa/references/answer.md as v000003"),
        "{undone:?}"
    );
    assert_eq!(
        std::fs::read_to_string(qa.join("references/answer.md")).unwrap(),
        reference
    );
    assert_eq!(std::fs::read_to_string(qa.join("SKILL.md")).unwrap(), skill);
    let history = history_json(d, "skills/qa/references/answer.md", None);
    assert_eq!(
        history["history"][2]["message"], "undid the adoption of run demo",
        "{history}"
    );
    let nothing = skill_evolve(d)
        .args(["adopt", "demo", "--undo", "--yes"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&nothing.stdout).contains("nothing to undo"),
        "{nothing:?}"
    );
    let again = skill_evolve(d)
        .args(["adopt", "demo", "--yes"])
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    assert_eq!(
        std::fs::read_to_string(qa.join("references/answer.md")).unwrap(),
        written
    );
}
