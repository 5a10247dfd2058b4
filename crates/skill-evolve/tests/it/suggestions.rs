//! clap's "did you mean" tips survive the one-line usage error.

use crate::support::skill_evolve;

#[test]
fn a_misspelt_subcommand_or_flag_gets_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["evolv"], "tip: a similar subcommand exists: 'evolve'"),
        (&["stauts"], "tip: a similar subcommand exists: 'status'"),
        (
            &[
                "gate",
                "--win",
                "1",
                "--losses",
                "0",
                "--used",
                "1",
                "--remaining",
                "0",
            ],
            "tip: a similar argument exists: '--wins'",
        ),
    ];
    for (args, tip) in cases {
        let out = skill_evolve(dir.path()).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr:?}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(tip), "{tip:?} not in {stderr:?}");
    }
}
