//! `skill-evolve init [DIR]`: writes a commented run configuration
//! (`DIR/evolve.toml`) to start from — the skill documents found in
//! `DIR/skills` (else a host's own skills folder, `DIR/.claude/skills` or
//! `DIR/.agents/skills`, with that host as the agent), the prompt documents of
//! `DIR/prompts`, a placeholder for the agent's command, and a `[profile]`
//! naming the tools seen in a run log
//! (`--runlog`) or a trajectory folder (`--trajectories`). An existing file
//! is kept unless `--force` is given; the file is written whole or not at all.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use evolution_harness::{IngestError, load_trajectory_dir};
use evolution_harvest::host_tools::is_host_builtin;
use evolution_runlog_sqlite::SqliteRunLog;
use evolution_types::RunLog as _;

use crate::cli::InitArgs;
use crate::out::outln;
use evolution_project::error::bad_at;

/// The file `init` writes in the folder.
pub(crate) const RUN_CONFIG: &str = "evolve.toml";

/// Tools listed at most (the most called first); the rest are counted.
const MAX_TOOLS: usize = 64;

/// Longest tool name taken from a trace; longer ones are left out.
const MAX_TOOL_NAME: usize = 100;

/// Tool name → calls seen.
type ToolCounts = BTreeMap<String, u64>;

pub(crate) fn run(args: &InitArgs) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    if !dir.is_dir() {
        return Err(bad_at(dir, None, "no such folder"));
    }
    let target = dir.join(RUN_CONFIG);
    if target.exists() && !args.force {
        return Err(bad_at(
            &target,
            None,
            "already exists: edit it, or pass --force to write a new one over it",
        ));
    }
    let mut tools = ToolCounts::new();
    let mut sources = Vec::new();
    if let Some(path) = &args.runlog {
        tools_from_runlog(path, args.run_id.as_deref(), &mut tools)?;
        sources.push(path.display().to_string());
    }
    if let Some(path) = &args.trajectories {
        tools_from_trajectories(path, &mut tools)?;
        sources.push(path.display().to_string());
    }
    let (tools, left_out) = usable_tools(tools);
    let (skills_dir, host) = skills_folder(dir);
    let skills = skill_documents(&dir.join(skills_dir));
    let with_references = skills_with_references(&dir.join(skills_dir));
    let prompts = plain_documents(&dir.join("prompts"));
    let text = render(&Found {
        skills_dir,
        host,
        skills: &skills,
        with_references: &with_references,
        prompts: prompts.as_deref(),
        tools: &tools,
        left_out,
        sources: &sources,
    });
    // What we write must read back: a bug here is ours, not the user's.
    toml::from_str::<toml::Table>(&text).context("the written configuration does not parse")?;
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.flush())
        .with_context(|| format!("cannot write {}", target.display()))?;
    file.persist(&target)
        .with_context(|| format!("cannot write {}", target.display()))?;
    outln!(
        "wrote {}: {} skill document(s), {}",
        target.display(),
        skills.as_ref().map_or(0, Vec::len),
        if tools.is_empty() {
            "no tool names (give --runlog or --trajectories to fill [profile])".to_owned()
        } else {
            let names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
            format!("tools {}", names.join(", "))
        }
    );
    let todo = match host {
        Some(host) => format!("[agent] host = {host:?} runs each question; set [questions] file"),
        None => "set [agent] command and [questions] file".to_owned(),
    };
    outln!(
        "next: {todo} in it, then `skill-evolve run --config {} --dry-run`",
        target.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Counts the tool calls of a run log's traces (one run, or every run).
fn tools_from_runlog(
    path: &Path,
    run_id: Option<&str>,
    tools: &mut ToolCounts,
) -> anyhow::Result<()> {
    // Opening a missing path would create an empty database: refuse first.
    if !path.is_file() {
        return Err(bad_at(path, None, "no such run log file"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let log = SqliteRunLog::open(path)
            .map_err(|e| bad_at(path, None, format!("not a run log: {e}")))?;
        let runs: Vec<String> = log
            .runs()
            .await
            .map_err(|e| bad_at(path, None, format!("not a run log: {e}")))?
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        let chosen: Vec<&String> = match run_id {
            Some(id) => {
                let Some(run) = runs.iter().find(|r| *r == id) else {
                    return Err(bad_at(
                        path,
                        None,
                        format!(
                            "no run {id:?} here (runs: {})",
                            if runs.is_empty() {
                                "none".to_owned()
                            } else {
                                runs.join(", ")
                            }
                        ),
                    ));
                };
                vec![run]
            }
            None => runs.iter().collect(),
        };
        for run in chosen {
            let steps = log
                .get_traces(run, None)
                .await
                .map_err(|e| bad_at(path, None, e.to_string()))?;
            for step in steps {
                *tools.entry(step.tool_name).or_default() += 1;
            }
        }
        Ok(())
    })
}

/// Counts the tool calls of the `steps` of a trajectory folder's files.
fn tools_from_trajectories(dir: &Path, tools: &mut ToolCounts) -> anyhow::Result<()> {
    let ingested = load_trajectory_dir("init", dir).map_err(|e| match e {
        IngestError::Empty(_) => bad_at(dir, None, "no .json trajectory files here"),
        other => bad_at(dir, None, other.to_string()),
    })?;
    for step in ingested.traces {
        *tools.entry(step.tool_name).or_default() += 1;
    }
    Ok(())
}

/// The tool names fit to write into the file (not empty, no control
/// characters, at most [`MAX_TOOL_NAME`] characters), the most called first,
/// at most [`MAX_TOOLS`]; and how many were left out.
fn usable_tools(tools: ToolCounts) -> (Vec<(String, u64)>, usize) {
    let total = tools.len();
    let mut usable: Vec<(String, u64)> = tools
        .into_iter()
        .filter(|(name, _)| {
            !name.trim().is_empty()
                && name.chars().count() <= MAX_TOOL_NAME
                && !name.chars().any(char::is_control)
        })
        .collect();
    usable.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    usable.truncate(MAX_TOOLS);
    let left_out = total - usable.len();
    (usable, left_out)
}

/// Where the project's skills are (relative to it) and the agent host whose folder that is:
/// `skills/`, else Claude Code's `.claude/skills/`, else Codex's `.agents/skills/`; `skills/`
/// when there is none.
fn skills_folder(dir: &Path) -> (&'static str, Option<&'static str>) {
    [
        ("skills", None),
        (".claude/skills", Some("claude-code")),
        (".agents/skills", Some("codex")),
    ]
    .into_iter()
    .find(|(folder, _)| dir.join(folder).is_dir())
    .unwrap_or(("skills", None))
}

/// The skill documents of a skills folder: its `*.md` files and the
/// `SKILL.md` of its subfolders; `None` when there is no such folder.
fn skill_documents(dir: &Path) -> Option<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        if path.is_file() && name.ends_with(".md") {
            found.push(name.to_owned());
        } else if path.join("SKILL.md").is_file() {
            found.push(format!("{name}/SKILL.md"));
        }
    }
    found.sort();
    Some(found)
}

/// The names of the Agent Skills skills of `dir` that have `references/**/*.md` files (none
/// when the folder cannot be read as skills).
fn skills_with_references(dir: &Path) -> Vec<String> {
    let Ok(docs) = evolution_project::layout::read_skills(dir) else {
        return Vec::new();
    };
    docs.into_iter()
        .filter(|doc| {
            evolution_project::skill_package::references(doc).is_ok_and(|r| !r.is_empty())
        })
        .map(|doc| doc.skill)
        .collect()
}

/// The regular, non-hidden files of a folder; `None` when there is no such folder.
fn plain_documents(dir: &Path) -> Option<Vec<String>> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| !n.starts_with('.'))
        .collect();
    found.sort();
    Some(found)
}

/// What `init` found in the folder and the traces.
struct Found<'a> {
    /// The skills folder, relative to the project.
    skills_dir: &'a str,
    /// The agent host whose skills folder that is.
    host: Option<&'a str>,
    skills: &'a Option<Vec<String>>,
    with_references: &'a [String],
    prompts: Option<&'a [String]>,
    tools: &'a [(String, u64)],
    left_out: usize,
    sources: &'a [String],
}

/// A TOML string literal (quoted and escaped).
fn quote(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// A TOML array of string literals.
fn array<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.into_iter().map(quote).collect();
    format!("[{}]", items.join(", "))
}

/// Shows a list in a comment, cut after `max` names.
fn listed(items: &[String], max: usize) -> String {
    let mut shown: Vec<&str> = items.iter().take(max).map(String::as_str).collect();
    let more = items.len().saturating_sub(max);
    let more_text = format!("… and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    shown.join(", ")
}

/// The configuration's text.
fn render(found: &Found<'_>) -> String {
    let mut out = String::from(
        "# Run configuration written by `skill-evolve init`. Paths are relative to this file.\n\
         # Check it with: skill-evolve run --config evolve.toml --dry-run\n\n[run]\n\
         name = \"evolve\"                  # prefix of every run id\n",
    );
    match found.skills {
        Some(skills) if !skills.is_empty() => out.push_str(&format!(
            "skills = {:<24}# found: {}\n",
            quote(found.skills_dir),
            listed(skills, 12)
        )),
        Some(_) => out.push_str("skills = \"skills\"                # empty so far: put the skill documents here\n"),
        None => out.push_str("skills = \"skills\"                # no skills/ folder yet: create it and put the skill documents there\n"),
    }
    match found.prompts {
        Some(prompts) if !prompts.is_empty() => out.push_str(&format!(
            "prompts = \"prompts\"              # evolved too; found: {}\n",
            listed(prompts, 12)
        )),
        _ => out.push_str(
            "# prompts = \"prompts\"            # a folder of prompt documents to evolve too: the\n\
             #                                 # system prompt and <tool>_extract.md / <tool>_verify.md\n",
        ),
    }
    if !found.with_references.is_empty() {
        out.push_str(&format!(
            "# evolve_references = {}   # these skills have references/*.md: list one to\n\
             #                                 # evolve its references too, each its own candidate\n",
            array(found.with_references.iter().map(String::as_str))
        ));
    }
    out.push_str("max_epochs = 3\n\n[agent]\n");
    match found.host {
        Some(host) => out.push_str(&format!(
            "host = {:<27}# the skills are this host's: it answers each question\n\
             #                                 # (options: [agent.host], see docs/hosts.md)\n",
            quote(host)
        )),
        None => out.push_str(
            "command = [\"./my-agent\"]         # TODO: your agent's program and arguments\n\
             # host = \"claude-code\"           # or Claude Code / Codex as the agent instead\n",
        ),
    }
    out.push_str(
        "mode = \"per_question\"            # per_question | worker\n\
         concurrency = 1\ntimeout_secs = 600\n\
         scoring = \"exact_match\"          # exact_match | agent_reported\n\n\
         [questions]\n\
         file = \"questions.jsonl\"         # TODO: your question set (JSON lines or a JSON array)\n\
         train = 0.5\ngate = 0.5\nholdout = 0.0\nseed = 0\n\n\
         [gate]\nparams = \"seed\"                  # seed | calibrated | thrifty | thorough\n\
         # seed: the default thresholds, those of the original Python system; calibrated:\n\
         # tuned by simulation; thrifty: few questions on a useless candidate; thorough:\n\
         # more questions, finds smaller improvements.\n\
         # Any of these overrides the preset's value; together they must pass the gate's\n\
         # own checks (e-value thresholds above 1, lambda_dir at most 0):\n\
         # e_confirm = 20.0\n# e_provisional = 3.0\n# w_net_min = 2\n# delta_min = 0.02\n\
         # lambda_dir = -0.642\n# e_rollback = 10.0\n\
         # alternative = 0.7                # Wald's likelihood ratio for this win rate\n\n\
         [evolve]\n\
         # skill_update = \"patch\"          # patch (small edits) | rewrite (whole document, never longer)\n\
         # consolidate_notes = 6            # appendix notes (old and new) at which they are merged\n\
         # consolidate_chars = 2000         # appendix size past which they are merged (at most 2000)\n\n\
         [budget]\nmax_llm_calls = 400\nmax_rollouts = 2000\n\n\
         # [preferences]                    # the project's house rules: their text goes into every\n\
         # file = \"preferences.md\"          # proposal prompt, and a proposal that breaks a check of\n\
         #                                  # their ```checks block is dropped before its gate\n\
         #                                  # (default: preferences.md beside this file)\n\n\
         # [llm]\n# provider = \"openai\"\n# [llm.openai]\n\
         # base_url = \"https://api.openai.com/v1\"\n# model = \"gpt-4o-mini\"\n\
         # api_key_env = \"OPENAI_API_KEY\"\n\n",
    );
    out.push_str(&render_profile(found));
    out
}

/// The `[profile]` table: the tools seen, judged; the rest commented.
fn render_profile(found: &Found<'_>) -> String {
    let mut out = String::from(
        "[profile]\n\
         # What the diagnosis needs to know about the agent. Without tool names nothing is\n\
         # assumed: no tool call is judged and no tool prompt evolves.\n",
    );
    if found.tools.is_empty() {
        out.push_str(
            "# No traces were given (`skill-evolve init --runlog FILE` or `--trajectories DIR`\n\
             # fills this in). Name the tools whose output the agent extracts from:\n\
             # span_eval_tools = [\"lookup_order\", \"search_kb\"]\n",
        );
    } else {
        let seen: Vec<String> = found
            .tools
            .iter()
            .map(|(name, n)| format!("{name} ({n} call(s))"))
            .collect();
        let (host, judged): (Vec<_>, Vec<_>) = found
            .tools
            .iter()
            .map(|(name, _)| name.as_str())
            .partition(|name| is_host_builtin(name));
        out.push_str(&format!(
            "# Tools seen in {}: {}\n",
            found.sources.join(" and "),
            seen.join(", ")
        ));
        if found.left_out > 0 {
            out.push_str(&format!(
                "# ({} more tool name(s) left out: empty, too long or with control characters, or past {MAX_TOOLS})\n",
                found.left_out
            ));
        }
        if !host.is_empty() {
            out.push_str(&format!(
                "# Left out of span_eval_tools, being the agent host's own tools (add any whose\n\
                 # output the agent extracts from): {}\n",
                host.join(", ")
            ));
        }
        if judged.is_empty() {
            out.push_str(
                "# Each call of the tools named here is judged by the LLM (one call each):\n\
                 # span_eval_tools = [\"lookup_order\", \"search_kb\"]\n",
            );
        } else {
            out.push_str(
                "# Each call of these tools is judged by the LLM (one call each): keep the tools\n\
                 # whose output the agent reads and extracts from.\n",
            );
            out.push_str(&format!("span_eval_tools = {}\n", array(judged)));
        }
    }
    let prompts = found.prompts.unwrap_or_default();
    let mut targets = Vec::new();
    for (tool, _) in found.tools {
        let files: Vec<&str> = ["_extract.md", "_verify.md"]
            .iter()
            .map(|suffix| format!("{tool}{suffix}"))
            .filter_map(|f| prompts.iter().find(|p| **p == f).map(String::as_str))
            .collect();
        if !files.is_empty() {
            targets.push(format!("{} = {}", quote(tool), array(files)));
        }
    }
    if targets.is_empty() {
        out.push_str(
            "# The prompts that steer a tool are <tool>_extract.md and <tool>_verify.md in the\n\
             # prompts folder unless named here:\n\
             # tool_target_files = { lookup_order = [\"lookup_order_extract.md\", \"lookup_order_verify.md\"] }\n",
        );
    } else {
        out.push_str(&format!(
            "tool_target_files = {{ {} }}\n",
            targets.join(", ")
        ));
    }
    let suggest = |words: &[&str]| {
        found
            .tools
            .iter()
            .map(|(n, _)| n.as_str())
            .find(|n| words.iter().any(|w| n.to_lowercase().contains(w)))
    };
    out.push_str(&format!(
        "# A tool whose calls open a node (input field `node_id`), for the repeat-visit rate:\n\
         # visit_tool = {}\n\
         # A tool whose calls search (input field `query`), for keyword repetition:\n\
         # search_tool = {}\n\
         # level_pattern = '_L(\\d+)_'          # regex: a node id's level, for the level-jump pattern\n\
         # frozen_system_sections = [\"Output format\"]   # `##` sections of the system prompt never edited\n\
         # tool_output_format_section = \"Output format\" # `##` section of a tool prompt never edited\n\
         # infra_stop_reasons = [\"error\", \"parse_error\"] # stop reasons that are infrastructure failures\n\
         # min_pattern_count = 3               # failures a behaviour needs before the system prompt is evolved\n\
         # high_confidence = 0.7               # a wrong answer at or above: overconfident\n\
         # low_confidence = 0.5                # a right answer below: underconfident\n\
         # preset = \"video-qa\"                 # start from the built-in video-QA agent's profile\n",
        quote(suggest(&["open", "view", "visit", "read"]).unwrap_or("open_page")),
        quote(suggest(&["search", "query", "find"]).unwrap_or("search_kb")),
    ));
    out
}
