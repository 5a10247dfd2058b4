//! Output into a pipe whose reader has gone (`skill-evolve … | head -1`): the
//! program ends quietly with exit code 0 instead of panicking.

use std::process::{Command, Stdio};

#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_skill-evolve"))
        .current_dir(dir.path())
        .args(["gate", "--wins", "9", "--losses", "1", "--used", "10"])
        .args(["--remaining", "20", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the program has written anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
