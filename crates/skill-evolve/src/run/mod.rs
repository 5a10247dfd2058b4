//! `skill-evolve run --config evolve.toml`: the library's run with the terminal's
//! pre-flight, progress and summary; `--dry-run` and `--fresh`.
//!
//! - [`progress`]: the spinner and the event lines on stderr.

pub(crate) mod progress;

use std::process::ExitCode;

use anyhow::Context as _;
use evolution_project::run::{Ended, find_run_config, prepare, split_listing, stage};

use self::progress::Progress;
use crate::cli::RunArgs;
use crate::out::{out, outln};
use crate::render::terminal_safe;

/// The exit code of a run stopped to wait for the answers of a `handoff` provider.
pub(crate) const HANDOFF_EXIT: u8 = 3;

/// `skill-evolve run`: load and check, print the pre-flight, then run (or resume).
pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let config_path = match &args.config {
        Some(path) => path.clone(),
        None => {
            find_run_config(&std::env::current_dir().context("cannot read the current folder")?)?
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let prepared = runtime.block_on(prepare(
        &config_path,
        &args.options(),
        args.record.clone(),
        args.fresh,
    ))?;
    if !args.dry_run {
        // Refused at once while another process runs this name (a dry run writes nothing).
        prepared.lock()?;
    }
    out!("{}", prepared.preflight());
    let dir = prepared.dir.clone();
    let name = prepared.config.name.clone();
    if args.dry_run {
        out!("{}", split_listing(&prepared.config));
        if args.fresh && dir.root().exists() {
            outln!(
                "--fresh: the run would start over (what it wrote in {} would be deleted)",
                dir.root().display()
            );
        }
        if let Some(line) = reused_answers_line(
            &dir,
            prepared.llm.handoff.as_ref().map_or(0, |h| h.answered()),
        )
        .filter(|_| args.fresh)
        {
            outln!("{line}");
        }
        outln!("dry run: the configuration is valid; nothing was run or written");
        return Ok(ExitCode::SUCCESS);
    }
    if args.fresh {
        let done = prepared.start_over_keeping()?;
        if done.deleted {
            outln!("--fresh: deleted the earlier state of run {name:?}");
        }
        if !done.kept.is_empty() {
            let kept: Vec<String> = done
                .kept
                .iter()
                .filter_map(|p| p.file_name())
                .map(|n| terminal_safe(&n.to_string_lossy()).into_owned())
                .collect();
            outln!(
                "--fresh: kept what the run did not write in {}: {}",
                dir.root().display(),
                kept.join(", ")
            );
        }
        if let Some(line) = reused_answers_line(&dir, done.handoff_answers) {
            outln!("{line}");
        }
    }
    let progress = Progress::new();
    let ended = runtime.block_on(prepared.execute(&progress, async {
        let _ = tokio::signal::ctrl_c().await;
    }));
    progress.finish();
    match ended? {
        Ended::Interrupted => {
            outln!(
                "interrupted: the store is at a consistent version and {} holds where the run \
                 was; run the same command to resume",
                dir.checkpoint().display()
            );
            Ok(ExitCode::from(130))
        }
        Ended::Handoff {
            waiting,
            prompts,
            answers,
        } => {
            outln!(
                "waiting for answers: {waiting} request(s) of the model are in {}; answer them \
                 in {} (one {{\"key\", \"reply\"}} line each; your own agent session can \
                 write them), then run the same command again to resume",
                prompts.display(),
                answers.display()
            );
            Ok(ExitCode::from(HANDOFF_EXIT))
        }
        Ended::Finished(report, path) => {
            outln!(
                "finished ({}) after {} epoch(s): version {} → {}; {} candidate(s), {} accepted",
                report.stop_reason,
                report.epochs,
                report.initial_version,
                report.final_version,
                report.records.len(),
                report.records.iter().filter(|r| r.accepted).count()
            );
            if !report.dropped.is_empty() {
                outln!(
                    "{} proposal(s) dropped before the gate (see the report for each reason)",
                    report.dropped.len()
                );
            }
            outln!("report: {}", path.display());
            outln!("html report: {}", dir.report_html().display());
            match stage::read_proposal(&dir)? {
                Some(p) if !p.documents.is_empty() => outln!(
                    "staged {} document(s) in {}; your files are unchanged until you run \
                     `skill-evolve adopt {name}`",
                    p.documents.len(),
                    dir.staged().display(),
                ),
                _ => outln!("nothing staged: your files stay as they are"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The line saying that a fresh start keeps `n` earlier handoff answers, which answer the
/// requests it asks again; `None` when there are none.
fn reused_answers_line(dir: &evolution_project::run::dir::RunDir, n: usize) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "--fresh: {} keeps {n} earlier answer(s); a request asked again gets its earlier \
             answer (delete the file to answer every request afresh)",
            dir.root()
                .join(evolution_project::run::HANDOFF_DIR)
                .join("answers.jsonl")
                .display()
        )
    })
}
