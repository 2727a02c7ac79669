//! No private key and no bearer token leaks through Terraform. The shipped examples `peering` (milan provides,
//! rome consumes) and `hub` (milan provides to rome, turin and naples), and a peering without networking, all on
//! real Liqo (with real gateways where there is networking), each run a full
//! plan/apply/plan/destroy cycle with `TF_LOG=TRACE` into a log file (Terraform's and the provider plugin's logs),
//! with every client (`Cli::available`; the two examples, whose own checks are made in the middle of their cycles
//! too, with Terraform 1.0.11 as well). After apply, the secrets are read from where they legitimately live, the
//! clusters:
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
//!
//! A peering left by 0.2.0, whose state held the consumer's key in `kubeconfig`, is migrated as
//! `docs/guides/upgrade-from-0.2.md` says: one ordinary apply of the new configuration, nothing replaced, and
//! afterwards the key is in no state file but the backup of the old one.
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use k8s_openapi::api::core::v1::{Node, Secret};
use k8s_openapi::api::rbac::v1::RoleBinding;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use liqo_acceptance::chain::example;
use liqo_acceptance::ground::process;
use liqo_acceptance::observe::{self, eventually, peering_up};
use liqo_acceptance::tf::{self, Cli, Run, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};
use liqo_schema::liqo::networking::Connection;
use liqo_schema::liqo::{ResourceSlice, Tenant, VirtualNode, labels};
use serde_json::{Value, json};

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
    /// to them, so a partial leak is found too). The pieces cover only the PEM's own bytes: every key of a kind
    /// has the same header, footer and DER prefix (algorithm and lengths, within the first body line), so a piece
    /// of those would find any key of that kind.
    fn pem(what: impl Into<String>, pem: &str) -> Result<Needle> {
        let body: Vec<&str> = pem.lines().filter(|l| !l.starts_with("-----") && !l.trim().is_empty()).collect();
        ensure!(!body.is_empty() && pem.contains("PRIVATE KEY"), "not a PEM private key");
        let der = STANDARD.decode(body.concat()).context("the PEM body is not base64")?;
        let mut needle = Needle::raw(what, &der);
        needle.forms.extend(body.iter().filter(|l| l.len() >= 32).map(|l| l.to_string()));
        let own_from = pem.find(body[0]).map_or(pem.len(), |at| at + body[0].len());
        let own_to = pem.rfind("-----END").unwrap_or(pem.len());
        let whole = STANDARD.encode(pem.as_bytes());
        needle.forms.extend(
            whole
                .as_bytes()
                .chunks(48)
                .enumerate()
                .filter(|(i, c)| c.len() == 48 && i * 36 >= own_from && i * 36 + 36 <= own_to)
                .map(|(_, c)| String::from_utf8_lossy(c).into_owned()),
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

/// Where a traced cycle keeps what it leaves: `root` (the directory above the working directory; every file
/// under it is scanned), `dir` (`root/traced`, each command's output) and `log` (`dir/trace.log`, the TRACE log).
struct Trace<'a> {
    work: &'a Workdir,
    root: PathBuf,
    dir: PathBuf,
    log: PathBuf,
}

impl<'a> Trace<'a> {
    fn new(work: &'a Workdir) -> Result<Self> {
        let root = work.path().parent().context("working directory layout")?.to_path_buf();
        let dir = root.join("traced");
        std::fs::create_dir_all(&dir)?;
        let log = dir.join("trace.log");
        Ok(Trace { work, root, dir, log })
    }

    async fn run(&self, label: &str, args: &[&str]) -> Result<Run> {
        traced(self.work, &self.dir, &self.log, label, args).await
    }

    async fn ok(&self, label: &str, args: &[&str]) -> Result<Run> {
        let run = self.run(label, args).await?;
        ensure!(run.success(), "{run}");
        Ok(run)
    }

    /// The TRACE log, which must show the provider process (or logging was not on).
    fn log_text(&self) -> Result<String> {
        let text = std::fs::read_to_string(&self.log).with_context(|| format!("reading {}", self.log.display()))?;
        ensure!(text.contains("[TRACE]"), "{} holds no TRACE lines; was logging on?", self.log.display());
        ensure!(text.contains("terraform-provider-liqo"), "the TRACE log shows nothing of the provider process");
        Ok(text)
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
    let (status, cpu) = process::run_to_completion(command, COMMAND_TIMEOUT)
        .await
        .with_context(|| format!("running `{description}`"))?;
    Ok(Run {
        command: description,
        status,
        stdout: std::fs::read_to_string(&out).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err).unwrap_or_default(),
        duration: started.elapsed(),
        cpu: Some(cpu),
    })
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

/// The secrets, from where they live: every key and token kept in a Secret on each of `clusters`, and the
/// credentials of the provider block's kubeconfig for each.
async fn secrets_on(ground: &Ground, clusters: &[&str]) -> Result<Vec<Needle>> {
    let mut needles = Vec::new();
    for cluster in clusters {
        cluster_secrets(ground, cluster, &mut needles).await?;
        let provider_kubeconfig = std::fs::read_to_string(ground.kubeconfig(cluster))?;
        kubeconfig_secrets(
            &format!("the provider block's kubeconfig for {cluster}"),
            &provider_kubeconfig,
            &mut needles,
        )?;
    }
    Ok(needles)
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

/// The text of an artifact as the scan reads it: a plan file's entries, any other file as (lossy) UTF-8.
fn artifact_text(file: &Path) -> Result<String> {
    if file.extension().is_some_and(|e| e == "tfplan") {
        plan_file_contents(file)
    } else {
        Ok(String::from_utf8_lossy(&std::fs::read(file)?).into_owned())
    }
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

impl Peering<'_> {
    fn clusters(&self) -> Vec<&str> {
        std::iter::once(self.provider).chain(self.consumers.iter().copied()).collect()
    }
}

/// One configuration, one client: the traced cycle, then the scan of everything it left.
async fn cycle(ground: &Ground, cli: Cli, work: Workdir, peering: &Peering<'_>) -> Result<()> {
    let trace = Trace::new(&work)?;
    let (needles, _) = cycle_up(ground, cli, &trace, peering).await?;
    cycle_down(cli, &trace, peering, &needles).await
}

/// The first half of a traced cycle: plan, apply, the secrets read from the clusters while they exist (with the
/// positive control), the empty plan and every read-only command; returns the secrets and `output -json`.
async fn cycle_up(ground: &Ground, cli: Cli, trace: &Trace<'_>, peering: &Peering<'_>) -> Result<(Vec<Needle>, Value)> {
    trace.ok("01-plan", &["plan", "-out=create.tfplan", "-input=false", "-no-color"]).await?;
    trace.ok("02-show-create-plan", &["show", "-json", "-no-color", "create.tfplan"]).await?;
    trace.ok("03-apply", &["apply", "-input=false", "-no-color", "create.tfplan"]).await?;

    // The secrets, from where they live, while they exist.
    let needles = secrets_on(ground, &peering.clusters()).await?;
    for consumer in peering.consumers {
        positive_control(ground, consumer, peering.provider, &needles)
            .await
            .with_context(|| format!("{cli}: positive control"))?;
    }

    let steady = trace
        .run("04-plan", &["plan", "-detailed-exitcode", "-out=steady.tfplan", "-input=false", "-no-color"])
        .await?;
    ensure!(steady.status.code() == Some(0), "{cli}: the plan after apply must be empty:\n{steady}");
    trace.ok("05-plan-json", &["plan", "-json", "-input=false", "-no-color"]).await?;
    trace.ok("06-show-steady-plan", &["show", "-json", "-no-color", "steady.tfplan"]).await?;
    trace.ok("07-show-state", &["show", "-json", "-no-color"]).await?;
    let outputs = trace.ok("08-output", &["output", "-json", "-no-color"]).await?;
    let outputs = serde_json::from_str(&outputs.stdout).with_context(|| format!("{cli}: output -json"))?;
    Ok((needles, outputs))
}

/// The second half: the destroy plan and the destroy, then the scan of every artifact for every secret.
async fn cycle_down(cli: Cli, trace: &Trace<'_>, peering: &Peering<'_>, needles: &[Needle]) -> Result<()> {
    let name = &peering.what;
    trace.ok("09-plan-destroy", &["plan", "-destroy", "-out=destroy.tfplan", "-input=false", "-no-color"]).await?;
    trace.ok("10-show-destroy-plan", &["show", "-json", "-no-color", "destroy.tfplan"]).await?;
    trace.ok("11-destroy", &["destroy", "-auto-approve", "-input=false", "-no-color"]).await?;

    let trace_text = trace.log_text().with_context(|| format!("with {cli}"))?;
    let root = &trace.root;
    let mut leaks = Vec::new();
    let files = artifacts(root)?;
    for file in &files {
        let name = file.strip_prefix(root).unwrap_or(file).display().to_string();
        scan_text(&name, &artifact_text(file)?, needles, &mut leaks);
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
        peering.clusters().len()
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
    // Keys of one kind share their PEM header and DER prefix: no form of one may find another.
    let other = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap().serialize_pem();
    assert!(needle.found_in(&other).is_none(), "another key's PEM");
    assert!(needle.found_in(&STANDARD.encode(other.as_bytes())).is_none(), "the base64 of another key's PEM");
    let raw = Needle::raw("w", &[7u8; 32]);
    assert!(raw.found_in(&format!("\"privateKey\":\"{}\"", STANDARD.encode([7u8; 32]))).is_some());
    let jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2lnbmF0dXJlLWJ5dGVz";
    assert_eq!(find_jwt(&format!("Authorization: Bearer {jwt}\n")), Some(22));
    assert_eq!(find_jwt("eyJ is not enough; neither is eyJhbGciOiJ.x.y"), None);
}

/// The tests on the shared ground's milan and rome run one at a time: Liqo allows one peering per pair.
static PAIR: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// examples/peering as a user runs it, with every client of `Cli::all`: the traced cycle, with the example's own
/// checks in the middle (rome's virtual node Ready, the `status` output Connected with liqo-demo offloaded) and
/// nothing of the peering left after the destroy.
#[tokio::test]
async fn the_peering_example_peers_offloads_and_leaks_no_key_and_no_token() -> Result<()> {
    let _pair = PAIR.lock().await;
    let ground = Ground::shared();
    let peering = Peering { what: "examples/peering".into(), provider: MILAN, consumers: &[ROME] };
    // One after the other: one milan/rome pair, and Liqo allows one peering per pair.
    for cli in Cli::all() {
        let what = format!("examples/peering with {cli}");
        let work = example(cli, "peering", ground, &[MILAN, ROME]).await?;
        let trace = Trace::new(&work)?;
        let (needles, outputs) = cycle_up(ground, cli, &trace, &peering).await.with_context(|| what.clone())?;
        let node = outputs["virtual_node_name"]["value"].as_str().context("virtual_node_name output")?;
        let ready = observe::node_ready_on(&ground.client(ROME).await?, node).await?;
        ensure!(ready, "{what}: virtual node {node} is not Ready on rome");
        let status = &outputs["status"]["value"];
        ensure!(status["connection"] == "Connected", "{what}: status output {status}");
        ensure!(
            status["offloaded_namespaces"]["liqo-demo"]["phase"] == "Ready",
            "{what}: offloading not Ready: {status}"
        );
        cycle_down(cli, &trace, &peering, &needles).await.with_context(|| what.clone())?;
        inventory::nothing_left(ground, &[MILAN, ROME]).await.with_context(|| format!("{what}: destroy"))?;
    }
    Ok(())
}

/// examples/hub as a user runs it (milan serves rome, turin and naples, each on its own control plane), with
/// every client of `Cli::all`: the traced cycle, with the example's own checks in the middle. After apply each
/// consumer's virtual node is Ready; `destroy -target=module.rome` must leave the other two peerings up
/// throughout (watched all along, not read once after it) and nothing of rome's behind; the destroy leaves no Liqo
/// object on any cluster. One ground of four control planes serves both proofs, for the CPU of the test command.
#[tokio::test]
async fn the_hub_example_serves_three_consumers_targets_one_and_leaks_no_key_and_no_token() -> Result<()> {
    let all = [MILAN, "rome", "turin", "naples"];
    let ground = Ground::start(&all).await?;
    let peering = Peering { what: "examples/hub".into(), provider: MILAN, consumers: &all[1..] };
    for cli in Cli::all() {
        let what = format!("examples/hub with {cli}");
        let work = example(cli, "hub", &ground, &all).await?;
        let trace = Trace::new(&work)?;
        let (needles, outputs) = cycle_up(&ground, cli, &trace, &peering).await.with_context(|| what.clone())?;
        for consumer in peering.consumers {
            let node = outputs["virtual_nodes"]["value"][consumer].as_str().context("virtual_nodes output")?;
            let ready = observe::node_ready_on(&ground.client(consumer).await?, node).await?;
            ensure!(ready, "{what}: no Ready virtual node {node} on {consumer}");
        }

        let others = ["turin", "naples"];
        let target = trace.ok(
            "08b-destroy-target",
            &["destroy", "-auto-approve", "-input=false", "-no-color", "-target=module.rome"],
        );
        let (destroyed, not_up) = watch_peerings(&ground, &others, target).await;
        destroyed.with_context(|| format!("{what}: destroy -target"))?;
        inventory::nothing_left(&ground, &["rome"]).await.with_context(|| format!("{what}: destroy -target"))?;
        ensure!(
            not_up.is_empty(),
            "{what}: while module.rome was destroyed, the other consumers' peerings were not all up:\n{}",
            not_up.join("\n")
        );
        for consumer in others {
            let state = peering_state(&ground.client(consumer).await?).await;
            ensure!(state == UP, "{what}: {consumer}'s peering after targeting rome: {state}");
        }

        cycle_down(cli, &trace, &peering, &needles).await.with_context(|| what.clone())?;
        inventory::nothing_left(&ground, &all).await.with_context(|| format!("{what}: destroy"))?;
    }
    drop(ground);
    Ok(())
}

/// [`peering_state`] of a consumer whose peering is up.
const UP: &str = "virtual node Ready=True, Connection Connected";

/// One consumer's side of its peering with milan: its virtual node's Ready condition and its gateway's
/// Connection status, as strings (a read error is a state too).
async fn peering_state(client: &kube::Client) -> String {
    let read = async {
        let node = match Api::<Node>::all(client.clone()).get_opt(MILAN).await? {
            None => "absent".to_owned(),
            Some(node) => node
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "Ready")
                .map_or("no Ready condition".to_owned(), |c| format!("Ready={}", c.status)),
        };
        let connections: Api<Connection> = Api::namespaced(client.clone(), &format!("liqo-tenant-{MILAN}"));
        let connection = connections.list(&ListParams::default()).await?.items.into_iter().next();
        let connection = connection
            .and_then(|c| c.status)
            .map_or("no Connection status".to_owned(), |s| s.value.unwrap_or_else(|| "empty".to_owned()));
        anyhow::Ok(format!("virtual node {node}, Connection {connection}"))
    };
    read.await.unwrap_or_else(|e| format!("unreadable: {e:#}"))
}

/// Runs `during` while polling every 250 ms the peerings of `consumers` with milan; returns its result and every
/// state seen that was not Ready and Connected (time since the start, consumer, state), in order.
async fn watch_peerings<T>(
    ground: &Ground,
    consumers: &[&str],
    during: impl std::future::Future<Output = Result<T>>,
) -> (Result<T>, Vec<String>) {
    // One client per consumer for the whole watch: a new one per poll is a new TLS handshake on its API server.
    let mut clients = Vec::new();
    for consumer in consumers {
        match ground.client(consumer).await {
            Ok(client) => clients.push((consumer, client)),
            Err(err) => return (Err(err.context(format!("a client of {consumer} to watch its peering"))), Vec::new()),
        }
    }
    let done = AtomicBool::new(false);
    let began = Instant::now();
    let run = async {
        let result = during.await;
        done.store(true, Ordering::SeqCst);
        result
    };
    let watch = async {
        let mut not_up = Vec::new();
        while !done.load(Ordering::SeqCst) {
            for (consumer, client) in &clients {
                let state = peering_state(client).await;
                if state != UP {
                    not_up.push(format!("{:6.1}s {consumer}: {state}", began.elapsed().as_secs_f64()));
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        not_up
    };
    tokio::join!(run, watch)
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

/// Where examples/peering keeps the peering on the shared ground: rome's tenant namespace for milan, milan's for
/// rome, and the module instance of its resources.
const ON_ROME: &str = "liqo-tenant-milan";
const ON_MILAN: &str = "liqo-tenant-rome";
const MODULE: &str = "module.rome_to_milan";

/// The attributes of liqo_tenant and liqo_peer that 0.2.0 did not have (it had `kubeconfig` instead).
const LACKED_BY_0_2_0: [(&str, &[&str]); 2] = [
    ("liqo_tenant", &["authz_policy", "client_certificate", "cluster_ca_certificate", "csr"]),
    (
        "liqo_peer",
        &[
            "api_server_url",
            "client_certificate",
            "client_key_secret",
            "cluster_ca_certificate",
            "kubeconfig_wo",
            "kubeconfig_wo_version",
        ],
    ),
];

/// Turns the state examples/peering left into the one 0.2.0 left for the same peering. 0.2.0 made the consumer's
/// key on the provider side and carried it through the state: liqo_tenant returned the identity kubeconfig, key
/// included, as `kubeconfig`, and liqo_peer took it as `kubeconfig` and wrote it into the identity Secret; so the
/// kubeconfig that Secret holds now is what both attributes held. Both go back to schema version 0, which makes
/// the client ask the provider to upgrade them. liqo_consumer_key did not exist: it leaves the state, and so does
/// every dependency on it. The serial grows as for any new snapshot.
fn as_left_by_0_2_0(state: &mut Value, identity_kubeconfig: &str) -> Result<()> {
    let resources = state["resources"].as_array_mut().context("a state without resources")?;
    resources.retain(|r| r["type"] != "liqo_consumer_key");
    for resource in resources.iter_mut() {
        let lacked = LACKED_BY_0_2_0.iter().find(|(kind, _)| resource["type"] == *kind).map(|(_, lacked)| *lacked);
        for instance in resource["instances"].as_array_mut().into_iter().flatten() {
            if let Some(dependencies) = instance["dependencies"].as_array_mut() {
                dependencies.retain(|d| !d.as_str().is_some_and(|d| d.contains("liqo_consumer_key.")));
            }
            let Some(lacked) = lacked else { continue };
            instance["schema_version"] = json!(0);
            let attributes = instance["attributes"].as_object_mut().context("an instance without attributes")?;
            for attribute in lacked {
                attributes.remove(*attribute);
            }
            attributes.insert("kubeconfig".into(), json!(identity_kubeconfig));
            // Clients record the paths of sensitive values with the instance, and `kubeconfig` was sensitive.
            let mut sensitive = instance["sensitive_attributes"].as_array().cloned().unwrap_or_default();
            sensitive.retain(|path| !lacked.iter().any(|attribute| path[0]["value"] == *attribute));
            sensitive.push(json!([{"type": "get_attr", "value": "kubeconfig"}]));
            instance["sensitive_attributes"] = Value::Array(sensitive);
        }
    }
    state["serial"] = json!(state["serial"].as_u64().context("a state without serial")? + 1);
    Ok(())
}

/// The one instance of `kind` in a state.
fn only_instance<'a>(state: &'a Value, kind: &str) -> Result<&'a Value> {
    let instances: Vec<&Value> = state["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["type"] == kind && r["mode"] == "managed")
        .flat_map(|r| r["instances"].as_array().into_iter().flatten())
        .collect();
    ensure!(instances.len() == 1, "the state holds {} instances of {kind}, not one", instances.len());
    Ok(instances[0])
}

/// The state written for 0.2.0 is what the migration starts from: liqo_tenant and liqo_peer at schema version 0,
/// without what 0.2.0 lacked, each with the consumer's key in `kubeconfig` in a form the scan finds (so the scan
/// that later finds it nowhere else could have), and no liqo_consumer_key.
fn check_as_left_by_0_2_0(text: &str, key: &Needle) -> Result<()> {
    let state: Value = serde_json::from_str(text)?;
    ensure!(
        !state["resources"].as_array().into_iter().flatten().any(|r| r["type"] == "liqo_consumer_key"),
        "the 0.2.0 state holds a liqo_consumer_key"
    );
    for (kind, lacked) in LACKED_BY_0_2_0 {
        let instance = only_instance(&state, kind)?;
        ensure!(instance["schema_version"] == 0, "{kind} is at schema version {}", instance["schema_version"]);
        let attributes = &instance["attributes"];
        ensure!(lacked.iter().all(|a| attributes.get(a).is_none()), "{kind} keeps an attribute 0.2.0 lacked");
        let kubeconfig = attributes["kubeconfig"].as_str().context("no kubeconfig")?;
        ensure!(key.found_in(kubeconfig).is_some(), "{kind}: `kubeconfig` does not carry {}", key.what);
    }
    Ok(())
}

/// The migration plan as the guide describes it: liqo_consumer_key created, liqo_tenant and liqo_peer updated in
/// place, everything else unchanged, and no `kubeconfig` left to show (neither a value nor a sensitivity mark).
fn check_migration_plan(show_json: &str) -> Result<()> {
    ensure!(!show_json.contains("\"kubeconfig\""), "the migration plan still holds `kubeconfig`");
    let plan: Value = serde_json::from_str(show_json)?;
    let actions: BTreeMap<String, String> = plan["resource_changes"]
        .as_array()
        .context("a plan without resource_changes")?
        .iter()
        .map(|c| {
            let actions: Vec<&str> =
                c["change"]["actions"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            (c["address"].as_str().unwrap_or_default().to_string(), actions.join(","))
        })
        .collect();
    let changed: BTreeMap<String, String> =
        actions.iter().filter(|(_, a)| a.as_str() != "no-op").map(|(k, v)| (k.clone(), v.clone())).collect();
    let guide: BTreeMap<String, String> =
        [("liqo_consumer_key", "create"), ("liqo_tenant", "update"), ("liqo_peer", "update")]
            .iter()
            .map(|(kind, action)| (format!("{MODULE}.{kind}.this"), action.to_string()))
            .collect();
    ensure!(changed == guide, "the migration plans {changed:?}; the guide says {guide:?}");
    let kept = [
        "liqo_generate.provider",
        "liqo_generate.consumer",
        "liqo_gateway.server",
        "liqo_gateway.client",
        "liqo_offload.this[\"liqo-demo\"]",
    ];
    for kept in kept {
        let address = format!("{MODULE}.{kept}");
        ensure!(actions.get(&address).is_some_and(|a| a == "no-op"), "{address} is not in the plan as unchanged");
    }
    Ok(())
}

/// The state after the migration: no `kubeconfig` in it (neither an attribute nor a sensitive path), liqo_tenant
/// and liqo_peer upgraded to schema version 1, and the liqo_consumer_key the apply created.
fn check_migrated(text: &str) -> Result<()> {
    ensure!(!text.contains("\"kubeconfig\""), "the state after the migration still holds `kubeconfig`");
    let state: Value = serde_json::from_str(text)?;
    for kind in ["liqo_tenant", "liqo_peer"] {
        let version = &only_instance(&state, kind)?["schema_version"];
        ensure!(*version == 1, "{kind} is at schema version {version} after the migration");
    }
    only_instance(&state, "liqo_consumer_key")?;
    Ok(())
}

/// The kubeconfig of the identity Secret liqo_peer wrote on rome for milan.
async fn identity_kubeconfig(ground: &Ground) -> Result<String> {
    let secrets: Api<Secret> = Api::namespaced(ground.client(ROME).await?, ON_ROME);
    let data = secrets.get(&format!("kubeconfig-controlplane-{MILAN}")).await?.data.unwrap_or_default();
    Ok(String::from_utf8(data.get(labels::KUBECONFIG_KEY).context("an identity Secret without kubeconfig")?.0.clone())?)
}

/// The UIDs of what the guide says the migration keeps (a replaced object has a new UID): the Tenant and its
/// RoleBinding on milan; the ResourceSlice, the VirtualNode, its Node and the identity Secret (rewritten in place)
/// on rome.
async fn kept_in_place(ground: &Ground) -> Result<Vec<(String, String)>> {
    let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);
    let uid = |what: String, meta: ObjectMeta| -> Result<(String, String)> {
        let uid = meta.uid.with_context(|| format!("{what} has no UID"))?;
        Ok((what, uid))
    };
    let mut kept = vec![
        uid("Tenant".into(), Api::<Tenant>::namespaced(milan.clone(), ON_MILAN).get(ROME).await?.metadata)?,
        uid(
            "ResourceSlice".into(),
            Api::<ResourceSlice>::namespaced(rome.clone(), ON_ROME).get(MILAN).await?.metadata,
        )?,
        uid("VirtualNode".into(), Api::<VirtualNode>::namespaced(rome.clone(), ON_ROME).get(MILAN).await?.metadata)?,
        uid("Node".into(), Api::<Node>::all(rome.clone()).get(MILAN).await?.metadata)?,
        uid(
            "the identity Secret".into(),
            Api::<Secret>::namespaced(rome, ON_ROME).get(&format!("kubeconfig-controlplane-{MILAN}")).await?.metadata,
        )?,
    ];
    let selector = format!("{}={ROME}", labels::REMOTE_CLUSTER_ID);
    let bindings =
        Api::<RoleBinding>::namespaced(milan, ON_MILAN).list(&ListParams::default().labels(&selector)).await?;
    ensure!(!bindings.items.is_empty(), "no RoleBinding for {ROME} in {MILAN}'s {ON_MILAN}");
    for binding in bindings.items {
        kept.push(uid(format!("RoleBinding {}", binding.metadata.name.clone().unwrap_or_default()), binding.metadata)?);
    }
    Ok(kept)
}

/// One client: examples/peering applied, its state and clusters turned into what 0.2.0 left, then the guide's
/// migration and every check of it.
async fn migrate_from_0_2_0(ground: &Ground, cli: Cli) -> Result<()> {
    let work = example(cli, "peering", ground, &[MILAN, ROME]).await?;
    work.apply().await.context("apply of examples/peering")?;
    let trace = Trace::new(&work)?;

    let identity = identity_kubeconfig(ground).await?;
    let mut old = Vec::new();
    kubeconfig_secrets("the kubeconfig 0.2.0 kept in state", &identity, &mut old)?;
    ensure!(old.len() == 1, "the identity kubeconfig holds {} credentials, not one key", old.len());
    let old = old.remove(0);
    let kept = kept_in_place(ground).await?;

    let path = work.path().join("terraform.tfstate");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    as_left_by_0_2_0(&mut state, &identity)?;
    std::fs::write(&path, serde_json::to_string_pretty(&state)?)?;
    check_as_left_by_0_2_0(&std::fs::read_to_string(&path)?, &old)?;
    // 0.2.0 kept no key Secret on the consumer (the identity Secret, which it did write, stays).
    let secrets: Api<Secret> = Api::namespaced(ground.client(ROME).await?, ON_ROME);
    let key_secret = format!("controlplane-key-{MILAN}");
    secrets.delete(&key_secret, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(30), "the key Secret to go", || async {
        Ok(secrets.get_opt(&key_secret).await?.is_none().then_some(()))
    })
    .await?;

    // The guide's one apply, of a saved plan so that the plan checked is the plan applied.
    let plan = trace.ok("01-plan", &["plan", "-out=migrate.tfplan", "-input=false", "-no-color"]).await?;
    let show = trace.ok("02-show-plan", &["show", "-json", "-no-color", "migrate.tfplan"]).await?;
    check_migration_plan(&show.stdout)?;
    let apply = trace
        .ok("03-apply", &["apply", "-input=false", "-no-color", "migrate.tfplan"])
        .await
        .context("the migration apply")?;
    check_migrated(&std::fs::read_to_string(&path)?)?;
    peering_up(&ground.client(ROME).await?, "after the migration").await?;
    let now = kept_in_place(ground).await?;
    ensure!(now == kept, "the migration replaced objects the guide says it keeps: before {kept:?}, after {now:?}");

    // The secrets, from where they live now. The old key is in none of them: 0.2.0's key Secret is gone and
    // liqo_peer rewrote the identity Secret with the new key.
    let mut needles = secrets_on(ground, &[MILAN, ROME]).await?;
    ensure!(!needles.iter().any(|n| n.forms == old.forms), "a Secret still holds {}", old.what);
    positive_control(ground, ROME, MILAN, &needles).await?;
    let old_what = old.what.clone();
    needles.push(old);

    trace.log_text()?;
    let backup = work.path().join("terraform.tfstate.backup");
    let (mut leaks, mut in_backup) = (Vec::new(), Vec::new());
    let files = artifacts(&trace.root)?;
    for file in &files {
        let name = file.strip_prefix(&trace.root).unwrap_or(file).display().to_string();
        let found = if *file == backup { &mut in_backup } else { &mut leaks };
        scan_text(&name, &artifact_text(file)?, &needles, found);
    }
    ensure!(leaks.is_empty(), "secrets leaked through the migration:\n{}", leaks.join("\n"));
    // The backup is the state the apply replaced, 0.2.0's, with the old key and nothing else: why the guide says
    // to delete old copies of the state.
    ensure!(
        in_backup.len() == 1 && in_backup[0].contains(&old_what),
        "terraform.tfstate.backup should hold {old_what} and nothing else, found: {in_backup:?}"
    );
    eprintln!(
        "[secrets] migration from 0.2.0 with {cli}: {}; apply took {:.1}s; scanned {} files for {} secrets",
        plan.stdout.lines().find(|l| l.starts_with("Plan:")).unwrap_or("no plan line"),
        apply.duration.as_secs_f64(),
        files.len(),
        needles.len()
    );

    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after the migration is not empty:\n{}", plan.run().stdout);
    // The slice and the virtual node were there before; a resize needs Liqo to replicate the slice to milan
    // with the identity Secret, which now holds the new key (Liqo restarts its replication when it changes).
    let main = std::fs::read_to_string(work.path().join("main.tf"))?;
    let resized = main.replace(r#"cpu = "4""#, r#"cpu = "3""#);
    ensure!(resized != main, "examples/peering no longer asks for 4 CPUs");
    work.write("main.tf", &resized)?;
    work.apply().await.context("a resize after the migration")?;
    let granted = &work.output_json().await?["accepted_resources"]["value"];
    ensure!(granted["cpu"] == json!("3"), "after the migration Liqo granted {granted} for 3 CPUs");
    work.destroy().await.context("destroy after the migration")?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await.context("destroy after the migration")?;
    Ok(())
}

/// docs/guides/upgrade-from-0.2.md on real Liqo: a running peering whose state 0.2.0 wrote (the consumer's key in
/// `kubeconfig`) migrates with one ordinary apply of the new configuration: liqo_consumer_key created, liqo_tenant
/// and liqo_peer updated in place, nothing replaced in Terraform or in the clusters. Afterwards no state file holds
/// a key but the backup of 0.2.0's state, the peering works (a resize is granted), the next plan is empty, and
/// destroy leaves nothing.
#[tokio::test]
async fn a_peering_left_by_0_2_0_migrates_in_one_apply_and_its_key_leaves_the_state() -> Result<()> {
    let _pair = PAIR.lock().await;
    let ground = Ground::shared();
    for cli in Cli::available() {
        let started = Instant::now();
        migrate_from_0_2_0(ground, cli).await.with_context(|| format!("with {cli}"))?;
        eprintln!("[secrets] migration from 0.2.0 with {cli}: {:.0}s in all", started.elapsed().as_secs_f64());
    }
    Ok(())
}
