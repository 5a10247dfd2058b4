//! `skill-evolve gate`: the JSON is the library's verdict; the text explains E, λ, δ̂.

use evolution_gate::{Gate, Tally};

use crate::support::skill_evolve;

fn gate_stdout(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .arg("gate")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn gate_json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&gate_stdout(args)).unwrap()
}

#[test]
fn json_equals_the_library_verdict() {
    let cases: [(u64, u64, u64, u64, bool); 7] = [
        (12, 1, 40, 20, false),
        (12, 1, 40, 20, true),
        (0, 5, 10, 30, false),
        (3, 1, 50, 0, false),
        (4, 1, 50, 0, true),
        (2, 2, 10, 100, false),
        (0, 0, 1, 0, false),
    ];
    for (w, l, n, r, calibrated) in cases {
        let gate = if calibrated {
            Gate::calibrated()
        } else {
            Gate::default()
        };
        // Byte-equal to the library's serialization (a parsed comparison
        // would depend on float parsing, not on what was printed).
        let verdict = gate.decide(&Tally::new(w, l, n, r)).unwrap();
        let expected = serde_json::to_string_pretty(&verdict).unwrap() + "\n";
        let (w_s, l_s, n_s, r_s) = (w.to_string(), l.to_string(), n.to_string(), r.to_string());
        let mut args = vec![
            "--wins",
            &w_s,
            "--losses",
            &l_s,
            "--used",
            &n_s,
            "--remaining",
            &r_s,
        ];
        if calibrated {
            args.push("--calibrated");
        }
        assert_eq!(
            gate_stdout(&args),
            expected,
            "W={w} L={l} n={n} R={r} calibrated={calibrated}"
        );
    }
}

#[test]
fn every_preset_gives_the_library_verdict_and_an_unknown_one_is_refused() {
    for name in evolution_gate::PRESET_NAMES {
        let gate = Gate::preset(name).unwrap();
        for (w, l, n, r) in [
            (14, 2, 30, 100),
            (3, 9, 20, 0),
            (9, 3, 40, 0),
            (5, 5, 12, 80),
        ] {
            let verdict = gate.decide(&Tally::new(w, l, n, r)).unwrap();
            let expected = serde_json::to_string_pretty(&verdict).unwrap() + "\n";
            let args = [w, l, n, r].map(|x| x.to_string());
            let shown = gate_stdout(&[
                "--wins",
                &args[0],
                "--losses",
                &args[1],
                "--used",
                &args[2],
                "--remaining",
                &args[3],
                "--preset",
                name,
            ]);
            assert_eq!(shown, expected, "{name}: W={w} L={l} n={n} R={r}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .args([
            "gate",
            "--wins",
            "1",
            "--losses",
            "0",
            "--used",
            "1",
            "--remaining",
            "0",
        ])
        .args(["--preset", "lenient"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("thrifty") && err.contains("thorough"), "{err}");
}

#[test]
fn huge_counts_saturate_instead_of_failing() {
    let v = gate_json(&[
        "--wins",
        "10000000",
        "--losses",
        "0",
        "--used",
        "10000000",
        "--remaining",
        "0",
    ]);
    assert_eq!(v["decision"], "accept_confirmed");
    assert!(v["ln_e_value"].as_f64().unwrap() > 1e6);
}

#[test]
fn text_explains_e_lambda_and_delta_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path())
        .args([
            "gate",
            "--wins",
            "0",
            "--losses",
            "5",
            "--used",
            "10",
            "--remaining",
            "30",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("decision: reject_directional"),
        "{text}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("E  = ")).count(),
        1,
        "{text}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("λ  = ")).count(),
        1,
        "{text}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("δ̂  = ")).count(),
        1,
        "{text}"
    );
    assert!(text.contains("going the wrong way"), "{text}");
}
