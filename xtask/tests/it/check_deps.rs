//! `cargo xtask check-deps` on one fixture workspace per kind of violation, on a clean fixture
//! full of traps, and on this very workspace.

use std::path::Path;

use crate::{fixture, run, xtask};

/// Runs check-deps on a fixture; asserts the exact violation lines and the exit code.
fn check(name: &str, expect: &[&str]) {
    let root = fixture(name);
    let out = run(xtask()
        .args(["check-deps", "--manifest-path"])
        .arg(root.join("Cargo.toml")));
    let lines: Vec<&str> = out.stdout.lines().collect();
    let Some((summary, violations)) = lines.split_last() else {
        panic!("no output for fixture {name}; stderr:\n{}", out.stderr);
    };
    assert_eq!(
        violations, expect,
        "fixture {name}; stderr:\n{}",
        out.stderr
    );
    if expect.is_empty() {
        assert_eq!(out.code, Some(0), "fixture {name}: {summary}");
        assert!(summary.starts_with("check-deps: OK ("), "{summary}");
    } else {
        assert_eq!(out.code, Some(1), "fixture {name}: {summary}");
        let plural = if expect.len() == 1 { "" } else { "s" };
        let prefix = format!("check-deps: {} violation{plural} in", expect.len());
        assert!(summary.starts_with(&prefix), "{summary}");
    }
}

#[test]
fn clean_workspace_passes() {
    check("clean", &[]);
}

#[test]
fn clean_fixture_holds_the_traps_it_claims() {
    // The clean fixture must pass although cargo unifies features workspace-wide: the app's
    // tokio/fs and helper/net really are on in `cargo metadata`'s resolve graph.
    let root = fixture("clean");
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let nodes = metadata["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes");
    let node = |name: &str| {
        nodes
            .iter()
            .find(|n| {
                n["id"]
                    .as_str()
                    .is_some_and(|id| id.contains(&format!("/{name}#")))
            })
            .unwrap_or_else(|| panic!("node {name}"))
    };
    let tokio_features: Vec<&str> = node("tokio")["features"]
        .as_array()
        .expect("features")
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(tokio_features.contains(&"fs"), "{tokio_features:?}");
    let helper_deps: Vec<&str> = node("helper")["deps"]
        .as_array()
        .expect("deps")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(helper_deps.contains(&"reqwest"), "{helper_deps:?}");
}

#[test]
fn kernel_to_adapter_by_normal_and_build_dependency() {
    check(
        "kernel-to-adapter",
        &[
            "k-a (kernel) -> adapter-b (adapter)",
            "k-c (kernel) -> adapter-b (adapter)",
        ],
    );
}

#[test]
fn kernel_to_app_through_a_kernel_member() {
    check(
        "kernel-to-app-transitive",
        &[
            "k-a (kernel) -> k-b (kernel) -> app-c (app)",
            "k-b (kernel) -> app-c (app)",
        ],
    );
}

#[test]
fn adapter_to_app_and_to_adapter() {
    check(
        "adapter-to-app",
        &[
            "adapter-a (adapter) -> adapter-c (adapter)",
            "adapter-a (adapter) -> app-b (app)",
        ],
    );
}

#[test]
fn an_app_without_adapters_reaches_kernel_crates_only() {
    // app-a declares `adapters = false`: its normal dependency on an adapter is caught, its
    // dev-dependency on another is not; app-e, without the key, may depend on both.
    check(
        "app-no-adapters",
        &[
            "app-a (app) -> adapter-b (adapter) (adapters = false)",
            "app-f: [package.metadata.evolution] adapters = \"no\" is not a boolean",
        ],
    );
}

#[test]
fn forbidden_io_crates_in_kernel_closures() {
    check(
        "forbidden-crate",
        &[
            "k-a (kernel) -> wrapper -> reqwest (forbidden I/O crate)",
            "k-b (kernel) -> hyper (forbidden I/O crate)",
            // an optional dependency turned on by the edge's features
            "k-c (kernel) -> dbwrap -> rusqlite (forbidden I/O crate)",
            // k-d uses dbwrap without its `db` feature: not reported
            "k-e (kernel) -> k-a (kernel) -> wrapper -> reqwest (forbidden I/O crate)",
            // an optional dependency behind a feature of the kernel crate itself
            "k-f (kernel) -> sqlx (forbidden I/O crate)",
        ],
    );
}

#[test]
fn tokio_features_beyond_the_allowed_ones() {
    check(
        "tokio-features",
        &[
            "k-a (kernel) -> tokio (features beyond sync/time/macros/rt: net)",
            // forwarded by a feature of an intermediate crate
            "k-b (kernel) -> tokio-user -> tokio (features beyond sync/time/macros/rt: fs)",
            // implied by a feature of tokio itself
            "k-c (kernel) -> tokio (features beyond sync/time/macros/rt: fs, full, net)",
        ],
    );
}

#[test]
fn io_modules_in_kernel_sources() {
    check(
        "kernel-std-fs",
        &[
            "k-a (kernel): src/lib.rs:5 uses std::fs",
            "k-a (kernel): src/nested/mod.rs:3 uses std::process",
            "k-a (kernel): src/nested/mod.rs:7 uses std::net",
            "k-a (kernel): src/nested/mod.rs:13 uses tokio::fs",
        ],
    );
}

#[test]
fn missing_layer() {
    check(
        "missing-layer",
        &[
            "k-a (kernel) -> no-layer (no layer)",
            "no-layer: no layer declared (add [package.metadata.evolution] layer = \
             \"kernel\" | \"adapter\" | \"app\" | \"tooling\")",
        ],
    );
}

#[test]
fn unknown_layer() {
    check(
        "unknown-layer",
        &[
            "numeric: unknown layer 3 (expected kernel, adapter, app or tooling)",
            "weird: unknown layer \"service\" (expected kernel, adapter, app or tooling)",
        ],
    );
}

#[test]
fn this_workspace_obeys_the_layer_rules() {
    let out = run(xtask().arg("check-deps"));
    assert_eq!(
        out.code,
        Some(0),
        "cargo xtask check-deps failed on this workspace:\n{}{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.starts_with("check-deps: OK ("), "{}", out.stdout);
}

#[test]
fn a_missing_manifest_is_an_error_not_a_pass() {
    let out = run(xtask()
        .args(["check-deps", "--manifest-path"])
        .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-such-dir/Cargo.toml")));
    assert_eq!(out.code, Some(2), "{}", out.stdout);
    assert!(out.stderr.contains("cargo metadata"), "{}", out.stderr);
}
