//! Whole skill packages: an Agent Skills skill is its folder (`SKILL.md`, `references/`,
//! `scripts/`, assets). The agent of `run` gets the folder of the version under test as
//! `skills_dir/<name>/`, so the `SKILL.md`'s relative paths resolve, and the host-agent
//! adapter installs the same folder where the host reads skills.

use std::path::Path;

use crate::fake_llm::start_loop;
use crate::run::{live_config, one_epoch, run_to_end};
use crate::support::{assert_one_line_error, run_config, skill_evolve};

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
