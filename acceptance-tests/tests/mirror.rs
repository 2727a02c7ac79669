//! The provider under test is installed the way users get it: from its release archive in a filesystem
//! mirror, by every client (Terraform 1.16.4, OpenTofu 1.11.7 and Terraform 1.0.11, pinned in the ground's
//! cache). The lock file's hashes are the ones users will commit, so they are checked against the release files
//! and recomputed here independently. `--debug` mode is checked with every client too. And the build of
//! hashicorp/helm, which the mirror serves beside it, says what it needs when its source is missing or not the
//! release. No test ground needed.
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine;
use liqo_acceptance::observe::until_blocking;
use liqo_acceptance::tf::{self, Cli, PROVIDER_VERSION, Workdir, mirror};
use sha2::{Digest, Sha256};

const LOCK_FILE: &str = ".terraform.lock.hcl";

#[tokio::test]
async fn the_provider_installs_from_the_mirror_and_serves_its_schema_with_every_cli() -> Result<()> {
    for cli in Cli::all() {
        let work = Workdir::new(cli, &tf::required_providers()).await.with_context(|| format!("{cli} init"))?;

        // init recorded the mirrored archive for the registry address this client resolves.
        let host = cli.registry_host();
        let lock = std::fs::read_to_string(work.path().join(LOCK_FILE))?;
        assert!(lock.contains(&format!("provider \"{host}/liqotech/liqo\"")), "{cli}: lock file names {host}:\n{lock}");
        assert!(
            lock.contains(&format!("version     = \"{PROVIDER_VERSION}\"")),
            "{cli}: lock file pins the version:\n{lock}"
        );

        // The client starts the installed plugin and gets its schema over the plugin protocol.
        let run = work.run(&["providers", "schema", "-json"]).await?;
        assert!(run.success(), "{cli} providers schema:\n{run}");
        let schema: serde_json::Value = serde_json::from_str(&run.stdout)?;
        let provider = &schema["provider_schemas"][format!("{host}/liqotech/liqo")];
        assert!(
            provider["provider"]["block"].is_object(),
            "{cli}: the plugin must serve a provider schema: {provider}"
        );
    }
    Ok(())
}

/// `h1:` is Go's dirhash Hash1 over the package contents: for each file, sorted by its path inside the
/// package, the line `<hex sha256>  <path>\n`; the SHA-256 of those lines, base64 (standard, padded).
fn hash1_of_zip(zip: &Path) -> Result<String> {
    let dir = tempfile::tempdir()?;
    let output = Command::new("unzip")
        .args(["-q", "-o"])
        .arg(zip)
        .arg("-d")
        .arg(dir.path())
        .output()
        .context("running unzip (install it with `sudo apt-get install -y unzip`)")?;
    if !output.status.success() {
        bail!("unzip {} failed: {}", zip.display(), String::from_utf8_lossy(&output.stderr));
    }
    let mut files = Vec::new();
    collect_files(dir.path(), dir.path(), &mut files)?;
    files.sort();
    let mut summary = String::new();
    for name in &files {
        let content = std::fs::read(dir.path().join(name))?;
        summary.push_str(&format!("{}  {name}\n", hex(&Sha256::digest(&content))));
    }
    Ok(format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(summary.as_bytes()))))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(root, &path, out)?;
        } else {
            let relative = path.strip_prefix(root)?;
            out.push(relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/"));
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `zh:` is the SHA-256 of the whole zip, i.e. the zip's line of the release's SHA256SUMS.
fn zh_from_sha256sums(sums: &Path, zip: &Path) -> Result<String> {
    let text = std::fs::read_to_string(sums).with_context(|| format!("reading {}", sums.display()))?;
    let name = zip.file_name().context("zip path has a file name")?.to_string_lossy().into_owned();
    let hash = text
        .lines()
        .find_map(|line| line.strip_suffix(&format!("  {name}")))
        .with_context(|| format!("{} has no line for {name}:\n{text}", sums.display()))?;
    Ok(format!("zh:{hash}"))
}

/// The `hashes` of the lock file's block for `address`.
fn locked_hashes(lock: &str, address: &str) -> Vec<String> {
    let Some(start) = lock.find(&format!("provider \"{address}\" {{")) else { return Vec::new() };
    let block = &lock[start..];
    let block = &block[..block.find("\n}").unwrap_or(block.len())];
    let Some(list) = block.split_once("hashes = [").map(|(_, rest)| rest.split(']').next().unwrap_or("")) else {
        return Vec::new();
    };
    list.split('"').skip(1).step_by(2).map(str::to_owned).collect()
}

fn lock_file(address: &str, hashes: &[&str]) -> String {
    let hashes: String = hashes.iter().map(|h| format!("    \"{h}\",\n")).collect();
    format!(
        "provider \"{address}\" {{\n  version     = \"{PROVIDER_VERSION}\"\n  constraints = \"{PROVIDER_VERSION}\"\n  \
         hashes = [\n{hashes}  ]\n}}\n"
    )
}

/// `init` in a fresh working directory that already holds `lock`.
async fn init_with_lock(cli: Cli, lock: &str) -> Result<(Workdir, tf::Run)> {
    let work = Workdir::uninitialised(cli).await?;
    work.write("main.tf", &tf::required_providers())?;
    work.write(LOCK_FILE, lock)?;
    let run = work.run(&["init", "-input=false", "-no-color"]).await?;
    Ok((work, run))
}

#[tokio::test]
async fn lock_file_hashes_match_the_release_files_and_verify_on_reinit() -> Result<()> {
    let mirror = tokio::task::spawn_blocking(mirror::get).await??;
    let h1 = hash1_of_zip(&mirror.zip)?;
    let zh = zh_from_sha256sums(&mirror.sha256sums, &mirror.zip)?;
    for cli in Cli::all() {
        let address = format!("{}/liqotech/liqo", cli.registry_host());
        let work = Workdir::new(cli, &tf::required_providers()).await.with_context(|| format!("{cli} init"))?;
        let lock = std::fs::read_to_string(work.path().join(LOCK_FILE))?;
        let hashes = locked_hashes(&lock, &address);
        // A filesystem mirror has no signed SHA256SUMS, so clients record only the package hash (h1:) of this
        // platform; a registry install adds the zh: hashes of every platform, which the next step simulates.
        assert!(hashes.contains(&h1), "{cli}: lock file must hold {h1} (computed from the zip):\n{lock}");
        for hash in hashes.iter().filter(|h| h.starts_with("h1:")) {
            assert_eq!(hash, &h1, "{cli}: every h1: hash must be this package's:\n{lock}");
        }
        for hash in hashes.iter().filter(|h| h.starts_with("zh:")) {
            assert_eq!(hash, &zh, "{cli}: a zh: hash must be the SHA256SUMS line:\n{lock}");
        }

        // init again: the installed package still matches the lock file.
        work.run(&["init", "-input=false", "-no-color"])
            .await
            .and_then(|run| if run.success() { Ok(run) } else { bail!("{cli}: second init failed:\n{run}") })?;
        assert_eq!(
            std::fs::read_to_string(work.path().join(LOCK_FILE))?,
            lock,
            "{cli}: a second init changed the lock"
        );

        // A fresh working directory with the committed lock file: the new install is checked against h1:.
        let (fresh, run) = init_with_lock(cli, &lock).await?;
        assert!(run.success(), "{cli}: init with the committed lock file failed:\n{run}");
        assert_eq!(locked_hashes(&std::fs::read_to_string(fresh.path().join(LOCK_FILE))?, &address), hashes);

        // A lock file as a registry install writes it (zh: from SHA256SUMS only): the client accepts the zip by
        // that hash and adds its h1:.
        let (registry_like, run) = init_with_lock(cli, &lock_file(&address, &[&zh])).await?;
        assert!(run.success(), "{cli}: init with the SHA256SUMS hash as zh: failed:\n{run}");
        let lock = std::fs::read_to_string(registry_like.path().join(LOCK_FILE))?;
        let hashes = locked_hashes(&lock, &address);
        assert!(hashes.contains(&zh) && hashes.contains(&h1), "{cli}: lock must hold {zh} and {h1}:\n{lock}");

        // The checks are real: a lock file naming another package's hash makes init fail.
        let other = format!("h1:{}", base64::engine::general_purpose::STANDARD.encode(Sha256::digest(b"other")));
        let (_, run) = init_with_lock(cli, &lock_file(&address, &[&other])).await?;
        assert!(!run.success(), "{cli}: init must refuse a package that does not match the lock file:\n{run}");
        assert!(run.stderr.contains("checksum"), "{cli}: the refusal should name the checksum:\n{run}");
    }
    Ok(())
}

/// Stops the `--debug` provider when the test ends, even by a panic.
struct DebugProvider(Child);

impl Drop for DebugProvider {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The line `terraform-provider-liqo --debug` prints lets Terraform (which resolves `liqotech/liqo` on
/// registry.terraform.io) and OpenTofu (registry.opentofu.org) attach. Their CLI configuration offers no way to
/// install the provider, so success means the client used the running process.
#[test]
fn the_debug_mode_line_attaches_every_cli() -> Result<()> {
    let binary = mirror::provider_binary()?;
    let dir = tempfile::tempdir()?;
    let mut child = Command::new(&binary)
        .arg("--debug")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.path().join("provider.log"))?)
        .spawn()
        .with_context(|| format!("starting {} --debug", binary.display()))?;
    let stdout = child.stdout.take().context("provider stdout")?;
    let mut provider = DebugProvider(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let value = line
        .trim()
        .strip_prefix("TF_REATTACH_PROVIDERS='")
        .and_then(|s| s.strip_suffix('\''))
        .with_context(|| format!("--debug printed {line:?}, not TF_REATTACH_PROVIDERS='…'"))?
        .to_owned();

    let no_installation = dir.path().join("empty.tfrc");
    std::fs::write(&no_installation, "")?;
    let main_tf = format!("{}\n{}", tf::required_providers(), include_str!("mirror/debug.tf"));
    for cli in Cli::all() {
        let work = dir.path().join(cli.name());
        std::fs::create_dir(&work)?;
        std::fs::write(work.join("main.tf"), &main_tf)?;
        for args in [&["init", "-input=false", "-no-color"][..], &["validate", "-no-color"]] {
            let started = Instant::now();
            let output = Command::new(cli.program()?)
                .args(args)
                .current_dir(&work)
                .env("TF_REATTACH_PROVIDERS", &value)
                .env("TF_CLI_CONFIG_FILE", &no_installation)
                .env("TOFU_CLI_CONFIG_FILE", &no_installation)
                .env("CHECKPOINT_DISABLE", "1")
                .env_remove("TF_PLUGIN_CACHE_DIR")
                .stdin(Stdio::null())
                .output()?;
            let text =
                format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            assert!(
                output.status.success(),
                "{cli} {} with TF_REATTACH_PROVIDERS={value} failed after {:?}:\n{text}",
                args[0],
                started.elapsed()
            );
        }
        assert!(provider.0.try_wait()?.is_none(), "the debug provider exited after {cli} used it");
    }

    // Ctrl-C ends debug mode cleanly.
    Command::new("kill").args(["-INT", &provider.0.id().to_string()]).status()?;
    let status = until_blocking(
        Duration::from_secs(10),
        Duration::from_millis(50),
        "the debug provider's exit on SIGINT",
        || Ok(provider.0.try_wait()?.into()),
    )?;
    assert!(status.success(), "debug provider exit after SIGINT: {status}");
    Ok(())
}

/// `scripts/build-helm-provider.sh` (hashicorp/helm from its source archive, for the mirror) run on an empty cache
/// with `source` as `LIQO_HELM_PROVIDER_SOURCE`: its exit status and what it printed.
fn helm_provider_build(args: &[&str], source: &Path) -> Result<(bool, String)> {
    let cache = tempfile::tempdir()?;
    let script = liqo_acceptance::ground::repository_root().join(mirror::HELM.build_script);
    let output = Command::new(&script)
        .args(args)
        .env("LIQO_TEST_CACHE", cache.path())
        .env("LIQO_HELM_PROVIDER_SOURCE", source)
        // A failed build keeps its work directory for inspection: here, inside the throwaway cache.
        .env("TMPDIR", cache.path())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    let printed = String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned();
    Ok((output.status.success(), printed))
}

/// Without its source archive, the test command stops before any build, naming the file, how to make it and the
/// variable that points at another copy (not a Go error later).
#[test]
fn a_missing_helm_provider_source_is_named_with_the_way_to_get_it() -> Result<()> {
    let missing = Path::new("/nonexistent/terraform-provider-helm-3.1.2.tar.gz");
    let (ok, printed) = helm_provider_build(&["--check"], missing)?;
    assert!(!ok, "--check passed without the archive:\n{printed}");
    for needed in [
        "/nonexistent/terraform-provider-helm-3.1.2.tar.gz",
        "git archive --format=tar --prefix=terraform-provider-helm-3.1.2/ v3.1.2",
        "github.com/hashicorp/terraform-provider-helm",
        "LIQO_HELM_PROVIDER_SOURCE",
    ] {
        assert!(printed.contains(needed), "the message does not name {needed:?}:\n{printed}");
    }
    Ok(())
}

/// An archive whose tar stream is not the v3.1.2 tag's is refused before anything of it is unpacked or built.
#[test]
fn a_helm_provider_source_that_is_not_the_release_is_refused() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let fake = dir.path().join("terraform-provider-helm-3.1.2.tar.gz");
    let status =
        Command::new("sh").arg("-c").arg(format!("echo not the release | gzip -n >{}", fake.display())).status()?;
    assert!(status.success());
    let (ok, printed) = helm_provider_build(&[], &fake)?;
    assert!(!ok, "a fake archive was built:\n{printed}");
    assert!(printed.contains("refusing to build it"), "no refusal in:\n{printed}");
    Ok(())
}
