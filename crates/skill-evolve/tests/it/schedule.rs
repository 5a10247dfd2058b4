//! `skill-evolve schedule`: the crontab entry printed, put into a crontab file the test names
//! (never the real crontab) once per folder, replacing that folder's earlier entry only, taken
//! out again with `--uninstall` (every other byte kept), and paths cron cannot carry refused.

use crate::support::{assert_one_line_error, skill_evolve, snapshot};

fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evolve.toml"), "# a run configuration\n").unwrap();
    dir
}

#[test]
fn the_entry_harvests_then_runs_and_stages_only() {
    let dir = folder();
    let d = dir.path();
    let out = skill_evolve(d)
        .args(["schedule", "--every", "night", "--source", "codex"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with("# skill-evolve schedule of '"),
        "{stdout}"
    );
    let line = lines[1];
    assert!(line.starts_with("0 3 * * * cd '"), "{line}");
    let here = d.canonicalize().unwrap();
    assert!(
        line.contains(&format!("'{}'", here.display()))
            || line.contains(&format!("'{}'", d.display())),
        "{line}"
    );
    let harvest = line.find(" harvest --source codex --project '").unwrap();
    assert!(
        line.contains("' --tasks 'mined-tasks.jsonl' >>"),
        "the harvest reads this folder's sessions only: {line}"
    );
    let run = line
        .find(" run --config 'evolve.toml' --fresh --ledger >>")
        .unwrap();
    assert!(harvest < run, "{line}");
    assert!(!line.contains("adopt"), "{line}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("API key"));

    // The note names the variable the run reads its key from, or says none is needed.
    for (llm, note) in [
        (
            "[llm]\nprovider = \"openai\"\n[llm.openai]\nbase_url = \"https://api.deepseek.com/v1\"\napi_key_env = \"MY_DEEPSEEK_KEY\"\n",
            "`run` reads the model's API key from $MY_DEEPSEEK_KEY ([llm] of evolve.toml), so \
             set it on a line of the crontab above the entry (MY_DEEPSEEK_KEY=…)",
        ),
        (
            "[llm]\nprovider = \"replay\"\ncassette = \"run.cassette\"\n",
            "the run's model ([llm] of evolve.toml) needs no API key",
        ),
    ] {
        std::fs::write(d.join("evolve.toml"), llm).unwrap();
        let out = skill_evolve(d)
            .args(["schedule", "--every", "night"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(note), "{stderr}");
        assert!(
            stderr.contains(
                "every run's candidates are tests of their skill's ledger (.skill-evolve/ledger/): \
                 fdr_alpha 0.05 is shared by 365 tests of a skill"
            ),
            "{stderr}"
        );
    }
    // The ledger's own horizon and level are the ones named.
    std::fs::write(
        d.join("evolve.toml"),
        "[gate]\nfdr_alpha = 0.1\nledger = true\nledger_horizon = 100\n",
    )
    .unwrap();
    let out = skill_evolve(d)
        .args(["schedule", "--every", "night"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fdr_alpha 0.1 is shared by 100 tests") && stderr.contains("1.0e-3"),
        "{stderr}"
    );
    // Without the ledger each run spends its own level: what a month of runs risks.
    std::fs::write(d.join("evolve.toml"), "# a run configuration\n").unwrap();
    for (every, figure) in [("night", "(30) the chance"), ("hour", "(720) the chance")] {
        let out = skill_evolve(d)
            .args(["schedule", "--every", every, "--no-ledger"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(" --fresh >>"), "{stdout}");
        assert!(!stdout.contains("--ledger"), "{stdout}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(figure), "{stderr}");
        let month = if every == "night" { "0.785" } else { "1.000" };
        assert!(stderr.contains(&format!("can reach {month}")), "{stderr}");
    }
    // With e-LOND off there is nothing to add.
    std::fs::write(d.join("evolve.toml"), "[gate]\nfdr_alpha = \"off\"\n").unwrap();
    let out = skill_evolve(d)
        .args(["schedule", "--every", "night"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("ledger"), "{stderr}");

    let hourly = skill_evolve(d)
        .args(["schedule", "--every", "hour"])
        .output()
        .unwrap();
    let hourly = String::from_utf8(hourly.stdout).unwrap();
    assert!(hourly.contains("\n0 * * * * cd "), "{hourly}");
    assert!(hourly.contains("--source claude-code"), "{hourly}");
}

#[test]
fn install_appends_to_the_named_file_once() {
    let dir = folder();
    let d = dir.path();
    std::fs::write(d.join("crontab.txt"), "MAILTO=me@example.com").unwrap();
    let install = || {
        skill_evolve(d)
            .args(["schedule", "--every", "night", "--install", "crontab.txt"])
            .output()
            .unwrap()
    };
    let first = install();
    assert!(first.status.success(), "{first:?}");
    assert!(String::from_utf8_lossy(&first.stdout).contains("crontab crontab.txt"));
    let text = std::fs::read_to_string(d.join("crontab.txt")).unwrap();
    assert!(
        text.starts_with("MAILTO=me@example.com\n# skill-evolve schedule of '"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("0 3 * * *")).count(),
        1
    );
    let second = install();
    assert!(second.status.success(), "{second:?}");
    assert!(String::from_utf8_lossy(&second.stdout).contains("nothing written"));
    assert_eq!(
        std::fs::read_to_string(d.join("crontab.txt")).unwrap(),
        text
    );
}

/// The crontab lines of `text` that start a command (not comments, not variables).
fn command_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.contains('='))
        .collect()
}

#[test]
fn installing_again_replaces_the_folders_entry_and_keeps_every_other_line() {
    let dir = folder();
    let d = dir.path();
    let other = folder();
    let crontab = d.join("crontab.txt");
    std::fs::write(&crontab, "MAILTO=me@example.com\n15 2 * * * backup.sh\n").unwrap();
    let install = |folder: &std::path::Path, every: &str| {
        let out = skill_evolve(folder)
            .args(["schedule", "--every", every, "--install"])
            .arg(&crontab)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    install(other.path(), "night");
    install(d, "night");
    let said = install(d, "hour");
    assert!(
        said.contains("replaced this folder's earlier entry"),
        "{said}"
    );
    let text = std::fs::read_to_string(&crontab).unwrap();
    let commands = command_lines(&text);
    assert_eq!(commands.len(), 3, "{text}");
    assert_eq!(commands[0], "15 2 * * * backup.sh", "{text}");
    let of = |folder: &std::path::Path| {
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        commands
            .iter()
            .filter(|l| l.contains(&format!("{name}' && mkdir -p .skill-evolve")))
            .copied()
            .collect::<Vec<_>>()
    };
    let ours = of(d);
    assert_eq!(ours.len(), 1, "one entry for this folder: {text}");
    assert!(ours[0].starts_with("0 * * * * "), "{text}");
    let theirs = of(other.path());
    assert_eq!(theirs.len(), 1, "the other folder's entry stays: {text}");
    assert!(theirs[0].starts_with("0 3 * * * "), "{text}");
    assert!(text.starts_with("MAILTO=me@example.com\n"), "{text}");
    let comments = text.lines().filter(|l| l.starts_with('#')).count();
    assert_eq!(comments, 2, "one comment per entry: {text}");

    // An entry written before entries named their folder is replaced too.
    let old = ours[0].replace("0 * * * * ", "0 3 * * * ");
    let before = format!(
        "MAILTO=me@example.com\n# skill-evolve: harvest, then run (results staged; adopt \
         with `skill-evolve adopt`)\n{old}\n"
    );
    std::fs::write(&crontab, &before).unwrap();
    let said = install(d, "hour");
    assert!(said.contains("(2 lines removed)"), "{said}");
    let text = std::fs::read_to_string(&crontab).unwrap();
    assert_eq!(command_lines(&text), [ours[0]], "{text}");
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn uninstall_takes_out_only_this_folders_entry_and_keeps_every_other_byte() {
    let dir = folder();
    let d = dir.path();
    let other = folder();
    let crontab = d.join("crontab.txt");
    // Lines of every shape: CRLF, blank, spaces, a comment, and no newline at the very end.
    std::fs::write(
        &crontab,
        "MAILTO=me@example.com\r\n15 2 * * * backup.sh\n\n# my own note\n  30 4 * * 1 weekly.sh  ",
    )
    .unwrap();
    let install = |folder: &std::path::Path| {
        let out = skill_evolve(folder)
            .args(["schedule", "--every", "night", "--install"])
            .arg(&crontab)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    install(other.path());
    let with_the_other_folders = std::fs::read(&crontab).unwrap();
    install(d);
    let mut appended = std::fs::read(&crontab).unwrap();
    assert!(appended.len() > with_the_other_folders.len());
    let after = b"45 5 * * * after.sh\r\n0 1 * * * last.sh";
    appended.extend_from_slice(after);
    std::fs::write(&crontab, &appended).unwrap();

    // The run configuration is not needed to take the entry out.
    std::fs::remove_file(d.join("evolve.toml")).unwrap();
    let uninstall = || {
        skill_evolve(d)
            .args(["schedule", "--uninstall", "crontab.txt"])
            .output()
            .unwrap()
    };
    let out = uninstall();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(
        said.contains("removed this folder's entry from crontab.txt (2 lines)")
            && said.contains("crontab crontab.txt"),
        "{said}"
    );
    let mut expected = with_the_other_folders.clone();
    expected.extend_from_slice(after);
    assert_eq!(
        String::from_utf8(std::fs::read(&crontab).unwrap()).unwrap(),
        String::from_utf8(expected.clone()).unwrap()
    );

    // Nothing left to remove: said, exit 0, the file as it was.
    let again = uninstall();
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    let said = String::from_utf8(again.stdout).unwrap();
    assert!(
        said.contains("crontab.txt has no entry of this folder; nothing removed"),
        "{said}"
    );
    assert_eq!(std::fs::read(&crontab).unwrap(), expected);

    // The other folder's entry is taken out from its own folder: the user's lines are left,
    // with the newline `--install` added after the last of them.
    let out = skill_evolve(other.path())
        .args(["schedule", "--uninstall"])
        .arg(&crontab)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut original = b"MAILTO=me@example.com\r\n15 2 * * * backup.sh\n\n# my own note\n  30 4 * * 1 weekly.sh  \n".to_vec();
    original.extend_from_slice(after);
    assert_eq!(
        String::from_utf8(std::fs::read(&crontab).unwrap()).unwrap(),
        String::from_utf8(original).unwrap()
    );
}

#[test]
fn uninstall_from_a_file_that_is_not_there_is_an_error() {
    let dir = folder();
    let d = dir.path();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .args(["schedule", "--uninstall", "crontab.txt"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "no such crontab file");
    std::fs::create_dir(d.join("cron.d")).unwrap();
    let out = skill_evolve(d)
        .args(["schedule", "--uninstall", "cron.d"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "--uninstall must name a regular file");
    std::fs::remove_dir(d.join("cron.d")).unwrap();
    // `--uninstall` takes no entry options, and without it `--every` is needed.
    for args in [
        &["--uninstall", "crontab.txt", "--every", "night"][..],
        &["--uninstall", "crontab.txt", "--install", "other.txt"][..],
        &[][..],
    ] {
        let out = skill_evolve(d).arg("schedule").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    assert_eq!(snapshot(d), before);
}

#[test]
fn what_cron_cannot_carry_is_refused_and_nothing_written() {
    let dir = folder();
    let d = dir.path();
    let before = snapshot(d);
    let refused = |args: &[&str]| {
        skill_evolve(d)
            .args(["schedule", "--every", "night"])
            .args(args)
            .output()
            .unwrap()
    };
    assert_one_line_error(
        &refused(&["--tasks", "50%.jsonl", "--install", "cron.txt"]),
        "cannot carry safely",
    );
    assert_one_line_error(
        &refused(&["--config", "it's.toml", "--install", "cron.txt"]),
        "no run configuration here",
    );
    std::fs::write(d.join("it's.toml"), "").unwrap();
    assert_one_line_error(
        &refused(&["--config", "it's.toml", "--install", "cron.txt"]),
        "cannot carry safely",
    );
    std::fs::remove_file(d.join("it's.toml")).unwrap();
    std::fs::create_dir(d.join("cron.d")).unwrap();
    assert_one_line_error(
        &refused(&["--install", "cron.d"]),
        "--install must name a regular file",
    );
    std::fs::remove_dir(d.join("cron.d")).unwrap();
    assert_eq!(snapshot(d), before);
}

#[test]
fn a_host_agents_program_is_put_first_on_the_entrys_path_or_refused() {
    let dir = folder();
    let d = dir.path();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::write(d.join("bin/claude"), "#!/bin/sh\n").unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        "[agent.host]\nname = \"claude-code\"\ncli = \"bin/claude\"\n",
    )
    .unwrap();
    let out = skill_evolve(d)
        .args(["schedule", "--every", "night"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let bin = std::path::absolute(d.join("bin")).unwrap();
    let path = format!("&& export PATH='{}':\"$PATH\" && ", bin.display());
    let line = stdout.lines().nth(1).unwrap();
    assert!(line.contains(&path), "{line}");
    assert!(
        line.find(&path).unwrap() < line.find(" harvest ").unwrap(),
        "{line}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the agent is claude-code at") && stderr.contains("checks at its start"),
        "{stderr}"
    );

    // A program not found now is refused, and nothing is written.
    std::fs::write(d.join("evolve.toml"), "[agent]\nhost = \"codex\"\n").unwrap();
    let before = snapshot(d);
    let out = skill_evolve(d)
        .env("PATH", d.join("bin"))
        .args(["schedule", "--every", "night", "--install", "cron.txt"])
        .output()
        .unwrap();
    assert_one_line_error(&out, "its program \"codex\" is not found here");
    assert_eq!(snapshot(d), before);
}

/// `[llm] provider = "claude-code"`: installing checks the host's program and its login
/// (refusing without either, nothing written), puts the program's folder first on the
/// entry's `PATH` and names the login it found.
#[cfg(unix)]
#[test]
fn a_host_as_the_optimizer_is_checked_when_installing() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = folder();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        "[llm]\nprovider = \"claude-code\"\n\n[llm.host]\ncli = \"bin/claude\"\n",
    )
    .unwrap();
    let schedule = |d: &std::path::Path| {
        skill_evolve(d)
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("SKILL_EVOLVE_ROLLOUTS_DIR")
            .env_remove("ANTHROPIC_API_KEY")
            .args(["schedule", "--every", "night", "--install", "cron.txt"])
            .output()
            .unwrap()
    };
    // No program: refused, nothing written.
    let before = snapshot(d);
    assert_one_line_error(&schedule(d), "its program \"bin/claude\" is not found here");
    assert_eq!(snapshot(d), before);
    // A program that finds no login: refused, nothing written.
    std::fs::create_dir_all(d.join("bin")).unwrap();
    let write_cli = |status: &str| {
        std::fs::write(
            d.join("bin/claude"),
            format!(
                "#!/bin/sh\nif [ \"$1 $2\" = \"auth status\" ]; then \
                 echo '{{\"loggedIn\": true, \"authMethod\": \"claude.ai\"}}'; exit {status}; fi\n\
                 exit 1\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(d.join("bin/claude"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    };
    write_cli("1");
    let before = snapshot(d);
    assert_one_line_error(&schedule(d), "could not log in");
    assert_eq!(snapshot(d), before);
    // Logged in: installed, the program's folder first on PATH, the login named.
    write_cli("0");
    let out = schedule(d);
    assert!(out.status.success(), "{out:?}");
    let crontab = std::fs::read_to_string(d.join("cron.txt")).unwrap();
    let bin = std::path::absolute(d.join("bin")).unwrap();
    assert!(
        crontab.contains(&format!("export PATH='{}':\"$PATH\"", bin.display())),
        "{crontab}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("the optimizer's model is claude-code at")
            && stderr.contains(&bin.join("claude").display().to_string())
            && stderr.contains("logged in: claude.ai"),
        "{stderr}"
    );
    // No rollout folder is left behind by the check.
    let rollouts = home.join(".cache/skill-evolve/rollouts");
    assert_eq!(std::fs::read_dir(rollouts).unwrap().count(), 0);
}

/// `[agent] host` (Claude Code) with Codex as the optimizer: installing checks both logins,
/// the agent's too (refusing, nothing written, while either finds none), and the notes name
/// the credentials each host logs in with and the login found.
#[cfg(unix)]
#[test]
fn a_host_agents_login_is_checked_when_installing_and_each_hosts_credentials_are_named() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = folder();
    let d = dir.path();
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(d.join("bin")).unwrap();
    std::fs::write(
        d.join("evolve.toml"),
        "[agent.host]\nname = \"claude-code\"\ncli = \"bin/claude\"\n\n\
         [llm]\nprovider = \"codex\"\n\n[llm.host]\ncli = \"bin/codex\"\n",
    )
    .unwrap();
    let write = |name: &str, text: &str| {
        std::fs::write(d.join("bin").join(name), text).unwrap();
        std::fs::set_permissions(
            d.join("bin").join(name),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    };
    let claude = |status: &str| {
        format!(
            "#!/bin/sh\nif [ \"$1 $2\" = \"auth status\" ]; then \
             echo '{{\"loggedIn\": true, \"authMethod\": \"claude.ai\"}}'; exit {status}; fi\n\
             exit 1\n"
        )
    };
    let schedule = |d: &std::path::Path| {
        skill_evolve(d)
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("SKILL_EVOLVE_ROLLOUTS_DIR")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("CODEX_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .args(["schedule", "--every", "night", "--install", "cron.txt"])
            .output()
            .unwrap()
    };
    // The optimizer logs in, the agent does not: refused, naming the agent, nothing written.
    write("claude", &claude("1"));
    write("codex", "#!/bin/sh\nexit 0\n");
    let before = snapshot(d);
    let out = schedule(d);
    assert_one_line_error(&out, "could not log in: [agent] host: claude-code: ");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("[llm] provider"), "{stderr}");
    assert_eq!(snapshot(d), before);
    // The agent logs in, the optimizer does not: refused, naming the optimizer.
    write("claude", &claude("0"));
    write("codex", "#!/bin/sh\nexit 1\n");
    let before = snapshot(d);
    assert_one_line_error(&schedule(d), "could not log in: [llm] provider: codex: ");
    assert_eq!(snapshot(d), before);
    // Both log in: installed; each note names the host's credentials and the login found.
    write("codex", "#!/bin/sh\nexit 0\n");
    let out = schedule(d);
    assert!(out.status.success(), "{out:?}");
    assert!(d.join("cron.txt").is_file());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let note = |start: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in {stderr}"))
            .to_owned()
    };
    let agent = note("note: the agent is claude-code at");
    assert!(agent.contains("ANTHROPIC_API_KEY"), "{agent}");
    assert!(agent.contains("~/.claude"), "{agent}");
    assert!(
        agent.contains("it found logged in: claude.ai now"),
        "{agent}"
    );
    let optimizer = note("note: the optimizer's model is codex at");
    assert!(
        optimizer.contains("CODEX_API_KEY or OPENAI_API_KEY"),
        "{optimizer}"
    );
    assert!(optimizer.contains("~/.codex"), "{optimizer}");
    assert!(optimizer.contains("it found logged in now"), "{optimizer}");
}
