//! `skill-evolve report <run> [--open]`: rebuilds a run's `report.html` (the library's
//! `report_html` draws it) and prints its path, opening it with `--open`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use evolution_project::adopt::find_run;
use evolution_project::run::dir::RunDir;

use crate::cli::ReportArgs;
use crate::out::outln;

/// Runs `report`.
pub(crate) fn run(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let as_path = Path::new(&args.run);
    let dir = if as_path.is_dir() {
        RunDir::at(as_path.to_path_buf())
    } else {
        let cwd = std::env::current_dir().context("cannot read the current folder")?;
        find_run(&args.run, args.dir.as_deref(), &cwd)?
    };
    let path = runtime.block_on(evolution_project::report_html::rebuild(&dir))?;
    outln!("{}", path.display());
    if args.open {
        open(&path)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens `path` with the platform's opener; without a display (Linux and
/// other Unix systems with neither `DISPLAY` nor `WAYLAND_DISPLAY`) says so.
fn open(path: &Path) -> anyhow::Result<()> {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        "xdg-open"
    } else {
        outln!("no display to open it on: open the file above in a browser");
        return Ok(());
    };
    std::process::Command::new(opener)
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {opener} to open {}", path.display()))?;
    Ok(())
}
