//! Crash safety: a writer process killed with SIGKILL at random points during
//! `advance_version` leaves the store at the old or the new version, never a mix.
//!
//! The parent test spawns this test binary again, running only [`writer_child`] with
//! `CRASH_DIR_ENV` set; the child advances the store in a loop and is killed after a random
//! delay (microsecond resolution, up to three times the measured length of one advance). After every kill the parent opens the store and checks
//! that the current version is complete and consistent.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use evolution_store_fs::{Change, FsStore};

use crate::entries;

const CRASH_DIR_ENV: &str = "EVOLUTION_STORE_FS_CRASH_DIR";
const TRIALS: usize = 200;
const READY: &str = "crash-child-ready";
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Every document of generation `g` carries `g`; a mix of generations shows up at once.
fn body(g: u64, doc: &str) -> String {
    format!("generation {g} of {doc}\n").repeat(40)
}

const STATIC_DOC: &str = "never changes\n";

fn seed(root: &Path) -> FsStore {
    FsStore::init(
        root,
        [
            ("gen.txt", "0".to_owned()),
            ("a.md", body(0, "a")),
            ("b.md", body(0, "b")),
            ("extra.md", body(0, "extra")),
            ("static.md", STATIC_DOC.to_owned()),
        ],
        "generation 0",
    )
    .unwrap()
}

/// One advance to the next generation: two rewrites, a counter, and `extra.md` created on
/// even generations and deleted on odd ones.
fn advance_one(store: &FsStore) -> u64 {
    let g: u64 = store.read("gen.txt").unwrap().parse().unwrap();
    let next = g + 1;
    let extra = if next.is_multiple_of(2) {
        Change::write("extra.md", body(next, "extra"))
    } else {
        Change::delete("extra.md")
    };
    store
        .advance_version(
            &[
                Change::write("a.md", body(next, "a")),
                extra,
                Change::write("gen.txt", next.to_string()),
                Change::write("b.md", body(next, "b")),
            ],
            &format!("generation {next}"),
        )
        .unwrap();
    next
}

/// Checks that the current version is one whole generation and returns it.
fn check_consistent(store: &FsStore) -> u64 {
    let version = store.current_version().unwrap();
    let g: u64 = store.read("gen.txt").unwrap().parse().unwrap();
    let mut expected = vec!["a.md", "b.md", "gen.txt", "static.md"];
    if g.is_multiple_of(2) {
        expected.insert(2, "extra.md");
    }
    assert_eq!(
        store.list().unwrap(),
        expected,
        "documents of generation {g}"
    );
    assert_eq!(store.read("a.md").unwrap(), body(g, "a"));
    assert_eq!(store.read("b.md").unwrap(), body(g, "b"));
    if g.is_multiple_of(2) {
        assert_eq!(store.read("extra.md").unwrap(), body(g, "extra"));
    }
    assert_eq!(store.read("static.md").unwrap(), STATIC_DOC);
    // One writer, one generation per version: v1 holds generation 0.
    assert_eq!(version.number(), g + 1);
    let history = store.history().unwrap();
    assert_eq!(history.len() as u64, g + 1);
    assert_eq!(history.last().map(|e| e.version), Some(version));
    g
}

/// Kills and reaps the child if the test fails before it does.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Blocks until the child prints its marker (the harness may print its own text first, even on the same line).
fn wait_until_ready(child: &mut Child, trial: usize) {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let ready = BufReader::new(stdout)
            .lines()
            .any(|line| line.is_ok_and(|l| l.trim_end().ends_with(READY)));
        let _ = tx.send(ready);
    });
    match rx.recv_timeout(READY_TIMEOUT) {
        Ok(true) => {}
        other => panic!("trial {trial}: child never became ready: {other:?}"),
    }
}

/// In a crash trial: advance forever until killed. Run normally: advance a few times and check.
#[test]
fn writer_child() {
    if let Some(dir) = std::env::var_os(CRASH_DIR_ENV) {
        let store = FsStore::open(&dir).unwrap();
        // Straight to the pipe: the test harness may capture `println!`.
        let mut out = std::io::stdout();
        writeln!(out, "{READY}").unwrap();
        out.flush().unwrap();
        loop {
            advance_one(&store);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store = seed(dir.path());
    for expected in 1..=3 {
        assert_eq!(advance_one(&store), expected);
        assert_eq!(check_consistent(&store), expected);
    }
}

#[test]
#[expect(clippy::print_stderr, reason = "the test reports its trial counts")]
fn sigkill_during_advance_leaves_old_or_new_version() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let store = seed(&root);
    let exe = std::env::current_exe().unwrap();
    // Kill delays span three advances as timed here (a child also starts up and cleans up
    // after its killed predecessor), so kills land anywhere in an advance or after a commit. fsync dominates an advance; its cost depends on the disk.
    let started = Instant::now();
    for _ in 0..3 {
        advance_one(&store);
    }
    let advance_micros = u64::try_from(started.elapsed().as_micros() / 3).unwrap();
    let max_delay_micros = (advance_micros * 3).max(1_000);
    let mut generation = check_consistent(&store);
    let (mut unchanged, mut advanced, mut mid_write) = (0_usize, 0_usize, 0_usize);

    for trial in 0..TRIALS {
        let mut child = KillOnDrop(
            Command::new(&exe)
                .args([
                    "--exact",
                    "crash::writer_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CRASH_DIR_ENV, &root)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        wait_until_ready(&mut child.0, trial);
        std::thread::sleep(Duration::from_micros(fastrand::u64(0..max_delay_micros)));
        child.0.kill().unwrap();
        child.0.wait().unwrap();

        // Leftovers prove the kill landed inside an advance.
        let staging_left = !entries(&root.join("staging")).is_empty();
        let versions_on_disk = entries(&root.join("versions")).len();

        let reopened = FsStore::open(&root).unwrap();
        let now = check_consistent(&reopened);
        assert!(
            now >= generation,
            "trial {trial}: went back from {generation} to {now}"
        );
        if staging_left || versions_on_disk as u64 > now + 1 {
            mid_write += 1;
        }
        if now == generation {
            unchanged += 1;
        } else {
            advanced += 1;
        }
        generation = now;
    }

    // The next writer cleans up whatever the killed ones left and carries on.
    let reopened = FsStore::open(&root).unwrap();
    let next = advance_one(&reopened);
    assert_eq!(check_consistent(&reopened), next);
    assert!(entries(&root.join("staging")).is_empty());
    assert_eq!(entries(&root.join("versions")).len() as u64, next + 1);

    eprintln!(
        "crash trials: {TRIALS}, all consistent; {unchanged} left the store unchanged, \
         {advanced} advanced it, {mid_write} were killed with a half-written version on disk; \
         one advance took {advance_micros} µs, kill delays 0..{max_delay_micros} µs"
    );
    assert_eq!(unchanged + advanced, TRIALS);
    assert!(
        mid_write > 0,
        "no kill landed inside an advance; the trial proves nothing"
    );
    assert!(
        advanced > 0,
        "no kill landed after a commit; the trial proves nothing"
    );
}
