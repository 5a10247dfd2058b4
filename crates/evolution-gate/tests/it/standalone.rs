//! The gate can be depended on alone: none of its normal dependencies is a
//! crate of this workspace.

use std::process::Command;

use serde_json::Value;

#[test]
fn normal_dependencies_contain_no_workspace_member() {
    let cargo = std::env::var("CARGO")
        .ok()
        .or_else(|| option_env!("CARGO").map(str::to_owned))
        .unwrap_or_else(|| "cargo".to_owned());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata is JSON");
    // With `--no-deps` the package list is exactly the workspace members.
    let packages = metadata["packages"].as_array().expect("a package list");
    let members: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    assert!(members.contains(&"evolution-types"), "{members:?}");
    let gate = packages
        .iter()
        .find(|p| p["name"] == "evolution-gate")
        .expect("evolution-gate is a member");
    let normal: Vec<&str> = gate["dependencies"]
        .as_array()
        .expect("a dependency list")
        .iter()
        .filter(|d| d["kind"].is_null())
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert!(!normal.is_empty(), "the gate's dependencies were not found");
    let internal: Vec<&str> = normal
        .iter()
        .copied()
        .filter(|name| members.contains(name))
        .collect();
    assert!(
        internal.is_empty(),
        "evolution-gate depends on workspace crates {internal:?}"
    );
}
