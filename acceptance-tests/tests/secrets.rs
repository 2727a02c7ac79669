//! No private key and no bearer token leaks through Terraform. The shipped examples `peering` (milan provides,
//! rome consumes) and `hub` (milan provides to rome, turin and naples), and a peering without networking, all on
//! real Liqo (with real gateways where there is networking), each run a full
//! plan/apply/plan/destroy cycle with `TF_LOG=TRACE` into a log file (Terraform's and the provider plugin's logs),
//! with every client (`Cli::available`). After apply, the secrets are read from where they legitimately live, the clusters:
//! * every private key held in a Secret (`privateKey`, `tls.key`, the client keys of kubeconfigs): the
//!   WireGuard keys (raw 32 bytes), the consumers' control-plane keys (PEM, made by liqo_consumer_key) and any
//!   key Liqo or the ground keeps;
//! * every bearer token (ServiceAccount token Secrets, `token` of kubeconfigs in Secrets);
//! * the credentials of the provider blocks themselves (client key or token of the kubeconfig files).
//!
//! Then every artifact is searched for every one of them, with no exception: the state files (and backups), the
//! plan files (a zip holding state and configuration), `plan -json`, `show -json` of every plan and of the state,
//! `output -json`, the output of every command and the TRACE log. Each secret is searched in every text form it
//! could take: for a PEM key its PEM body lines, the base64 of the PEM (Secret data, kubeconfig
//! `client-key-data`) and pieces of it, and the standard/URL-safe base64 and hex of its DER bytes; for raw keys
//! and tokens the same encodings of the raw bytes. A JSON Web Token of any origin is reported too. A positive
//! control shows the search can find what it looks for: each consumer's control-plane key is found, in the
//! searched form, inside the identity Secret that liqo_peer assembled on the consumer cluster.
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use liqo_acceptance::chain::example;
use liqo_acceptance::ground::process;
use liqo_acceptance::tf::{self, Cli, Run, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels;
use serde_json::Value;

const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// One secret and the text forms it may take.
struct Needle {
    what: String,
    forms: Vec<String>,
}

impl Needle {
    /// Base64 (standard and URL-safe, padded or not) and hex of raw bytes.
    fn raw(what: impl Into<String>, bytes: &[u8]) -> Needle {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut forms = vec![
            STANDARD.encode(bytes),
            URL_SAFE.encode(bytes),
            STANDARD_NO_PAD.encode(bytes),
            URL_SAFE_NO_PAD.encode(bytes),
            hex.to_uppercase(),
            hex,
        ];
        // Short secrets would match by chance; every key and token here is far longer.
        forms.retain(|f| f.len() >= 20);
        Needle { what: what.into(), forms }.dedup()
    }

    /// A PEM private key: the forms of its DER bytes, its PEM body lines, the base64 of the whole PEM (how a
    /// Secret or a kubeconfig carries it) and pieces of that base64 (any 3-byte-aligned slice of the PEM encodes
    /// to them, so a partial leak is found too).
    fn pem(what: impl Into<String>, pem: &str) -> Result<Needle> {
        let body: Vec<&str> = pem.lines().filter(|l| !l.starts_with("-----") && !l.trim().is_empty()).collect();
        ensure!(!body.is_empty() && pem.contains("PRIVATE KEY"), "not a PEM private key");
        let der = STANDARD.decode(body.concat()).context("the PEM body is not base64")?;
        let mut needle = Needle::raw(what, &der);
        needle.forms.extend(body.iter().filter(|l| l.len() >= 32).map(|l| l.to_string()));
        let whole = STANDARD.encode(pem.as_bytes());
        needle.forms.extend(
            whole.as_bytes().chunks(48).filter(|c| c.len() == 48).map(|c| String::from_utf8_lossy(c).into_owned()),
        );
        needle.forms.push(whole);
        Ok(needle.dedup())
    }

    /// Key material in whichever form a Secret holds it: PEM text or raw bytes.
    fn key(what: impl Into<String>, bytes: &[u8]) -> Result<Needle> {
        match std::str::from_utf8(bytes) {
            Ok(text) if text.contains("-----BEGIN") => Needle::pem(what, text),
            _ => Ok(Needle::raw(what, bytes)),
        }
    }

    fn dedup(mut self) -> Needle {
        self.forms.sort();
        self.forms.dedup();
        self
    }

    fn found_in(&self, text: &str) -> Option<&str> {
        self.forms.iter().find(|f| text.contains(f.as_str())).map(String::as_str)
    }
}

/// Runs one command like `Workdir::run` does, plus `TF_LOG=TRACE` into `trace`; output goes to
/// `<dir>/<label>.stdout|stderr` (kept for the scan).
async fn traced(work: &Workdir, dir: &Path, trace: &Path, label: &str, args: &[&str]) -> Result<Run> {
    let mirror = tokio::task::spawn_blocking(tf::mirror::get).await??;
    let (out, err) = (dir.join(format!("{label}.stdout")), dir.join(format!("{label}.stderr")));
    let mut command = Command::new(work.cli().program()?);
    command
        .args(args)
        .current_dir(work.path())
        .stdin(Stdio::null())
        .stdout(File::create(&out)?)
        .stderr(File::create(&err)?)
        .env("TF_CLI_CONFIG_FILE", &mirror.cli_config)
        .env("TOFU_CLI_CONFIG_FILE", &mirror.cli_config)
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_INPUT", "0")
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_LOG", "TRACE")
        .env("TF_LOG_PATH", trace);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if ["TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR", "TF_WORKSPACE", "TF_CLI_ARGS", "TF_LOG_PROVIDER", "TF_LOG_CORE"]
            .contains(&k.as_ref())
            || k.starts_with("TF_CLI_ARGS_")
            || k.starts_with("TF_VAR_")
        {
            command.env_remove(&key);
        }
    }
    let description = format!("TF_LOG=TRACE {} {}", work.cli().name(), args.join(" "));
    let started = Instant::now();
    let mut child = process::spawn_attached(command).with_context(|| format!("starting `{description}`"))?;
    let status = tokio::task::spawn_blocking(move || -> std::io::Result<(ExitStatus, bool)> {
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok((status, false));
            }
            if Instant::now() > deadline {
                child.kill()?;
                return Ok((child.wait()?, true));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await??;
    if status.1 {
        bail!("`{description}` was killed after {COMMAND_TIMEOUT:?}");
    }
    Ok(Run {
        command: description,
        status: status.0,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        duration: started.elapsed(),
    })
}

async fn traced_ok(work: &Workdir, dir: &Path, trace: &Path, label: &str, args: &[&str]) -> Result<Run> {
    let run = traced(work, dir, trace, label, args).await?;
    ensure!(run.success(), "{run}");
    Ok(run)
}

/// The secrets of a kubeconfig (client keys and tokens of its users).
fn kubeconfig_secrets(what: &str, yaml: &str, needles: &mut Vec<Needle>) -> Result<()> {
    let doc: Value = serde_yaml::from_str(yaml).with_context(|| format!("{what} is not YAML"))?;
    for user in doc["users"].as_array().into_iter().flatten() {
        let name = user["name"].as_str().unwrap_or("?");
        if let Some(key) = user["user"]["client-key-data"].as_str() {
            let pem = STANDARD.decode(key.trim()).with_context(|| format!("{what}: client-key-data"))?;
            needles.push(Needle::key(format!("the client key of user {name} in {what}"), &pem)?);
        }
        if let Some(token) = user["user"]["token"].as_str() {
            needles.push(Needle::raw(format!("the token of user {name} in {what}"), token.as_bytes()));
            needles.last_mut().expect("just pushed").forms.push(token.to_string());
        }
    }
    Ok(())
}

/// Every private key and bearer token kept in a Secret on `cluster`.
async fn cluster_secrets(ground: &Ground, cluster: &str, needles: &mut Vec<Needle>) -> Result<()> {
    let secrets: Api<Secret> = Api::all(ground.client(cluster).await?);
    for secret in secrets.list(&Default::default()).await?.items {
        let name = format!(
            "Secret {}/{} on {cluster}",
            secret.metadata.namespace.as_deref().unwrap_or_default(),
            secret.metadata.name.as_deref().unwrap_or_default()
        );
        for (key, value) in secret.data.unwrap_or_default() {
            match key.as_str() {
                "privateKey" | "tls.key" => needles.push(Needle::key(format!("{key} of {name}"), &value.0)?),
                "token" => {
                    let mut needle = Needle::raw(format!("the token in {name}"), &value.0);
                    needle.forms.push(String::from_utf8_lossy(&value.0).into_owned());
                    needles.push(needle.dedup());
                }
                k if k == labels::KUBECONFIG_KEY => {
                    kubeconfig_secrets(&name, &String::from_utf8_lossy(&value.0), needles)?
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The identity Secret liqo_peer assembled on `consumer` for `provider` holds the consumer's control-plane key
/// (from liqo_consumer_key's Secret) in the form the scan searches: the search can find what it looks for.
async fn positive_control(ground: &Ground, consumer: &str, provider: &str, needles: &[Needle]) -> Result<()> {
    let secrets: Api<Secret> = Api::namespaced(ground.client(consumer).await?, &format!("liqo-tenant-{provider}"));
    let key = secrets.get(&format!("controlplane-key-{provider}")).await?.data.unwrap_or_default().remove("privateKey");
    let key = Needle::key("probe", &key.context("liqo_consumer_key's Secret without privateKey")?.0)?;
    let identity = secrets.get(&format!("kubeconfig-controlplane-{provider}")).await?.data.unwrap_or_default();
    let identity = String::from_utf8(identity.get(labels::KUBECONFIG_KEY).context("identity kubeconfig")?.0.clone())?;
    ensure!(key.found_in(&identity).is_some(), "{consumer}: the identity kubeconfig does not carry the consumer key");
    ensure!(
        needles.iter().any(|n| n.forms == key.forms),
        "{consumer}: the control-plane key is not among the searched secrets"
    );
    Ok(())
}

/// A JSON Web Token (ServiceAccount tokens are JWTs): `eyJ` and three base64url segments.
fn find_jwt(text: &str) -> Option<usize> {
    let segment = |s: &str| s.len() >= 10 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    text.match_indices("eyJ").map(|(at, _)| at).find(|&at| {
        let end = text[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .map_or(text.len(), |e| at + e);
        let parts: Vec<&str> = text[at..end].split('.').collect();
        parts.len() == 3 && parts.iter().all(|p| segment(p))
    })
}

fn scan_text(name: &str, text: &str, needles: &[Needle], leaks: &mut Vec<String>) {
    let line = |at: usize| text[..at].matches('\n').count() + 1;
    for needle in needles {
        if let Some(form) = needle.found_in(text) {
            let at = text.find(form).unwrap_or(0);
            leaks.push(format!(
                "{name} (line {}) contains {} as `{}…`",
                line(at),
                needle.what,
                &form[..form.len().min(12)]
            ));
        }
    }
    if let Some(at) = find_jwt(text) {
        leaks.push(format!("{name} (line {}) contains a JSON Web Token `{}…`", line(at), &text[at..at + 12]));
    }
}

/// Every file of the working directory except the provider binary Terraform unpacked (`.terraform/`).
fn artifacts(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
            let path = entry?.path();
            if path.file_name().is_some_and(|n| n == ".terraform") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The entries of a plan file (a zip holding the plan, the prior state and the configuration), concatenated.
fn plan_file_contents(path: &Path) -> Result<String> {
    let output =
        Command::new("unzip").arg("-p").arg(path).output().context("running unzip (needed to read plan files)")?;
    ensure!(output.status.success(), "unzip -p {} failed: {}", path.display(), String::from_utf8_lossy(&output.stderr));
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Which clusters a configuration peers: the first provides, the others consume.
struct Peering<'a> {
    what: String,
    provider: &'a str,
    consumers: &'a [&'a str],
}

/// One configuration, one client: the traced cycle, then the scan of everything it left.
async fn cycle(ground: &Ground, cli: Cli, work: Workdir, peering: &Peering<'_>) -> Result<()> {
    let name = &peering.what;
    let clusters: Vec<&str> = std::iter::once(peering.provider).chain(peering.consumers.iter().copied()).collect();
    let root = work.path().parent().context("working directory layout")?.to_path_buf();
    let dir = root.join("traced");
    std::fs::create_dir_all(&dir)?;
    let trace = dir.join("trace.log");
    let t = |label: &'static str, args: &'static [&'static str]| {
        let (work, dir, trace) = (&work, &dir, &trace);
        async move { traced_ok(work, dir, trace, label, args).await }
    };

    t("01-plan", &["plan", "-out=create.tfplan", "-input=false", "-no-color"]).await?;
    t("02-show-create-plan", &["show", "-json", "-no-color", "create.tfplan"]).await?;
    t("03-apply", &["apply", "-input=false", "-no-color", "create.tfplan"]).await?;

    // The secrets, from where they live, while they exist.
    let mut needles = Vec::new();
    for cluster in &clusters {
        cluster_secrets(ground, cluster, &mut needles).await?;
        let provider_kubeconfig = std::fs::read_to_string(ground.kubeconfig(cluster))?;
        kubeconfig_secrets(
            &format!("the provider block's kubeconfig for {cluster}"),
            &provider_kubeconfig,
            &mut needles,
        )?;
    }
    for consumer in peering.consumers {
        positive_control(ground, consumer, peering.provider, &needles)
            .await
            .with_context(|| format!("{cli}: positive control"))?;
    }

    let steady = traced(
        &work,
        &dir,
        &trace,
        "04-plan",
        &["plan", "-detailed-exitcode", "-out=steady.tfplan", "-input=false", "-no-color"],
    )
    .await?;
    ensure!(steady.status.code() == Some(0), "{cli}: the plan after apply must be empty:\n{steady}");
    t("05-plan-json", &["plan", "-json", "-input=false", "-no-color"]).await?;
    t("06-show-steady-plan", &["show", "-json", "-no-color", "steady.tfplan"]).await?;
    t("07-show-state", &["show", "-json", "-no-color"]).await?;
    t("08-output", &["output", "-json", "-no-color"]).await?;
    t("09-plan-destroy", &["plan", "-destroy", "-out=destroy.tfplan", "-input=false", "-no-color"]).await?;
    t("10-show-destroy-plan", &["show", "-json", "-no-color", "destroy.tfplan"]).await?;
    t("11-destroy", &["destroy", "-auto-approve", "-input=false", "-no-color"]).await?;

    let trace_text = std::fs::read_to_string(&trace).with_context(|| format!("reading {}", trace.display()))?;
    ensure!(trace_text.contains("[TRACE]"), "{cli}: {} holds no TRACE lines; was logging on?", trace.display());
    ensure!(
        trace_text.contains("terraform-provider-liqo"),
        "{cli}: the TRACE log shows nothing of the provider process"
    );

    let mut leaks = Vec::new();
    let files = artifacts(&root)?;
    for file in &files {
        let name = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        let text = if file.extension().is_some_and(|e| e == "tfplan") {
            plan_file_contents(file)?
        } else {
            String::from_utf8_lossy(&std::fs::read(file)?).into_owned()
        };
        scan_text(&name, &text, &needles, &mut leaks);
    }
    let states = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("terraform.tfstate")))
        .count();
    ensure!(states > 0, "{cli}: no state file was scanned");
    eprintln!(
        "[secrets] {name} with {cli}: scanned {} files ({states} state files, {} KiB of TRACE log) for {} \
         secrets read from {} clusters",
        files.len(),
        trace_text.len() / 1024,
        needles.len(),
        clusters.len()
    );
    ensure!(leaks.is_empty(), "{cli}: secrets leaked in {name}:\n{}", leaks.join("\n"));
    Ok(())
}

#[test]
fn the_detectors_find_what_they_look_for() {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap().serialize_pem();
    let needle = Needle::pem("k", &key).unwrap();
    let b64 = STANDARD.encode(key.as_bytes());
    assert!(needle.found_in(&format!("client-key-data: {b64}")).is_some());
    assert!(needle.found_in(&b64[10..200]).is_some(), "a piece of the base64 of the PEM");
    assert!(needle.found_in(key.lines().nth(1).unwrap()).is_some(), "a PEM body line");
    assert!(needle.found_in("-----BEGIN PRIVATE KEY-----").is_none());
    let raw = Needle::raw("w", &[7u8; 32]);
    assert!(raw.found_in(&format!("\"privateKey\":\"{}\"", STANDARD.encode([7u8; 32]))).is_some());
    let jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLWJ5dGVz";
    assert_eq!(find_jwt(&format!("Authorization: Bearer {jwt}\n")), Some(22));
    assert_eq!(find_jwt("eyJ is not enough; neither is eyJhbGciOiJ.x.y"), None);
}

#[tokio::test]
async fn the_peering_example_leaks_no_key_and_no_token() -> Result<()> {
    let ground = Ground::shared();
    let peering = Peering { what: "examples/peering".into(), provider: MILAN, consumers: &[ROME] };
    // One after the other: one milan/rome pair, and Liqo allows one peering per pair.
    for cli in Cli::available() {
        let work = example(cli, "peering", ground, &[MILAN, ROME]).await?;
        cycle(ground, cli, work, &peering).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

#[tokio::test]
async fn the_hub_example_leaks_no_key_and_no_token() -> Result<()> {
    let all = [MILAN, "rome", "turin", "naples"];
    let ground = Ground::start(&all).await?;
    let peering = Peering { what: "examples/hub".into(), provider: MILAN, consumers: &all[1..] };
    for cli in Cli::available() {
        let work = example(cli, "hub", &ground, &all).await?;
        cycle(&ground, cli, work, &peering).await.with_context(|| format!("with {cli}"))?;
    }
    drop(ground);
    Ok(())
}

/// A peering without networking (the chain a `--networking-disabled` user writes) on a ground of its own: the
/// same scan, and Liqo must have formed the peering with the credentials assembled on the consumer (the slice
/// Accepted and the virtual node Ready, or apply would fail).
#[tokio::test]
async fn a_peering_without_networking_leaks_no_key_and_no_token() -> Result<()> {
    let (provider, consumer) = ("lucca", "parma");
    let ground = Ground::start(&[provider, consumer]).await?;
    let peering = Peering { what: "a peering on real Liqo".into(), provider, consumers: &[consumer] };
    let config = liqo_acceptance::chain::without_networking(&ground, provider, consumer).replace("VALIDITY", "8760h");
    for cli in Cli::available() {
        let work = Workdir::new(cli, &config).await?;
        cycle(&ground, cli, work, &peering).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}
