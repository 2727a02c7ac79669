//! No private key leaks through Terraform: a full plan/apply/plan/destroy cycle of the whole peering
//! (liqo_generate on both sides, both gateways, liqo_tenant, liqo_peer) runs with `TF_LOG=TRACE` into a log file,
//! then every artifact is searched for the private keys, read from where they legitimately live:
//! * both WireGuard private keys (from the key Secrets in the clusters, read before destroy) must appear
//!   nowhere: not in the state files, plan files, `show -json` documents, command output or the TRACE log;
//! * the consumer's client private key (from liqo_tenant's kubeconfig) must appear only as the value of a
//!   `kubeconfig` attribute marked sensitive, in the state files, the `show -json` documents and the plan files
//!   (which hold the state): the contract says the kubeconfig travels through state, and the docs say so.
//!
//! Keys are searched in every text form they could take: standard and URL-safe base64 (with and without
//! padding) and hex of the raw bytes; for the client key also kubeconfig's `client-key-data`, the PEM body and
//! each line of it. The simulator plays Liqo's controllers on the test ground.
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use liqo_acceptance::ground::process;
use liqo_acceptance::tf::{self, Cli, Run, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels;
use serde_json::Value;

/// Tenant namespaces liqo_generate makes by default: on milan for rome, on rome for milan.
const MILAN_TENANT_NS: &str = "liqo-tenant-rome";
const ROME_TENANT_NS: &str = "liqo-tenant-milan";
/// liqo_generate's default key Secret name.
const KEY_SECRET: &str = "gw-keys";
const COMMAND_TIMEOUT: Duration = Duration::from_secs(600);

/// The contract's example peering (every resource that handles key material), plus the outputs the scan reads.
fn config(ground: &Ground) -> String {
    let chain = liqo_acceptance::chain::full_chain(ground, r#"{ cpu = "4", memory = "8Gi", pods = "110" }"#);
    format!(
        r#"{chain}
output "tenant_namespace" {{
  value = liqo_tenant.rome.tenant_namespace
}}
"#
    )
}

/// One secret and the text forms it may take.
struct Needle {
    what: String,
    forms: Vec<String>,
}

impl Needle {
    /// Base64 (standard and URL-safe, padded or not) and hex of raw key bytes.
    fn raw(what: impl Into<String>, bytes: &[u8]) -> Needle {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut forms = vec![
            STANDARD.encode(bytes),
            URL_SAFE.encode(bytes),
            STANDARD_NO_PAD.encode(bytes),
            URL_SAFE_NO_PAD.encode(bytes),
        ];
        forms.push(hex.to_uppercase());
        forms.push(hex);
        forms.sort();
        forms.dedup();
        Needle { what: what.into(), forms }
    }

    /// The client key of a kubeconfig: `client-key-data`, its PEM body (joined and line by line) and the forms
    /// of the DER bytes.
    fn client_key(what: impl Into<String>, kubeconfig_yaml: &str) -> Result<Needle> {
        let doc: Value = serde_yaml::from_str(kubeconfig_yaml).context("liqo_tenant's kubeconfig is not YAML")?;
        let key_data = doc["users"][0]["user"]["client-key-data"]
            .as_str()
            .context("liqo_tenant's kubeconfig has no client-key-data")?;
        let pem = String::from_utf8(STANDARD.decode(key_data.trim()).context("client-key-data is not base64")?)?;
        let body: Vec<&str> = pem.lines().filter(|l| !l.starts_with("-----") && !l.trim().is_empty()).collect();
        ensure!(!body.is_empty() && pem.contains("PRIVATE KEY"), "client-key-data holds no PEM private key");
        let der = STANDARD.decode(body.concat()).context("the PEM body is not base64")?;
        let mut needle = Needle::raw(what, &der);
        needle.forms.push(key_data.trim().to_string());
        // Each full line carries 48 bytes of the key: any of them printed is a leak.
        needle.forms.extend(body.iter().filter(|l| l.len() >= 32).map(|l| l.to_string()));
        needle.forms.sort();
        needle.forms.dedup();
        Ok(needle)
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

/// `data.privateKey` of the WireGuard key Secret of liqo_generate `name`, checked to be the private half of the
/// public key that resource reports in the state (so the search looks for the right key).
async fn wireguard_private_key(
    ground: &Ground,
    cluster: &str,
    namespace: &str,
    state: &Value,
    name: &str,
) -> Result<Needle> {
    let secrets: Api<Secret> = Api::namespaced(ground.client(cluster).await?, namespace);
    let secret =
        secrets.get(KEY_SECRET).await.with_context(|| format!("Secret {namespace}/{KEY_SECRET} in {cluster}"))?;
    let key = secret
        .data
        .and_then(|mut d| d.remove(labels::WIREGUARD_PRIVATE_KEY))
        .context("key Secret without privateKey")?;
    let private: [u8; 32] =
        key.0.as_slice().try_into().with_context(|| format!("{cluster}: privateKey is {} bytes", key.0.len()))?;
    let public = x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(private));
    let reported = state_attributes(state, "liqo_generate", name)?["wireguard_public_key"].clone();
    ensure!(
        reported == Value::String(STANDARD.encode(public.as_bytes())),
        "{cluster}: Secret {namespace}/{KEY_SECRET} does not hold the private half of liqo_generate.{name}'s wireguard_public_key"
    );
    Ok(Needle::raw(format!("the WireGuard private key of {cluster} (Secret {namespace}/{KEY_SECRET})"), &private))
}

/// The attributes of a managed resource instance in a state document.
fn state_attributes<'a>(state: &'a Value, kind: &str, name: &str) -> Result<&'a Value> {
    state["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["type"] == kind && r["name"] == name && r["mode"] == "managed")
        .map(|r| &r["instances"][0]["attributes"])
        .with_context(|| format!("{kind}.{name} is not in the state"))
}

/// Where the consumer's client key may legitimately appear in a JSON document: as the string value of a
/// `kubeconfig` attribute, in an object whose sensitivity marker (next to it in the parent object) says
/// `kubeconfig` is sensitive. Such values are replaced by a placeholder; values that hold a secret without the
/// marker are reported; returns how many were replaced. Covers state files (`attributes` / `sensitive_attributes`), `show -json` of state and
/// plans (`values` / `sensitive_values`, `before`/`after` / `before_sensitive`/`after_sensitive`).
fn redact_sensitive_kubeconfigs(doc: &mut Value, client_key: &Needle, path: &str, unmarked: &mut Vec<String>) -> usize {
    const MARKERS: [(&str, &str); 4] = [
        ("attributes", "sensitive_attributes"),
        ("values", "sensitive_values"),
        ("before", "before_sensitive"),
        ("after", "after_sensitive"),
    ];
    let mut redacted = 0;
    match doc {
        Value::Object(map) => {
            for (values_key, marker_key) in MARKERS {
                let marked = map.get(marker_key).is_some_and(|m| match m {
                    Value::Object(o) => o.get("kubeconfig") == Some(&Value::Bool(true)),
                    other => other.to_string().contains("\"kubeconfig\""),
                });
                if let Some(Value::Object(values)) = map.get_mut(values_key)
                    && let Some(Value::String(kubeconfig)) = values.get_mut("kubeconfig")
                    && client_key.found_in(kubeconfig).is_some()
                {
                    if marked {
                        *kubeconfig = "(sensitive kubeconfig)".into();
                        redacted += 1;
                    } else {
                        unmarked.push(format!("{path}/{values_key}/kubeconfig (no `{marker_key}` marks it sensitive)"));
                    }
                }
            }
            for (k, v) in map.iter_mut() {
                redacted += redact_sensitive_kubeconfigs(v, client_key, &format!("{path}/{k}"), unmarked);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                redacted += redact_sensitive_kubeconfigs(v, client_key, &format!("{path}/{i}"), unmarked);
            }
        }
        _ => {}
    }
    redacted
}

/// What the scan found in one artifact.
struct Findings {
    leaks: Vec<String>,
    /// Sensitive kubeconfig values holding the client key (the documented exception), per artifact.
    allowed: Vec<String>,
}

fn scan_text(name: &str, text: &str, needles: &[&Needle], findings: &mut Findings) {
    for needle in needles {
        if let Some(form) = needle.found_in(text) {
            let at = text.find(form).unwrap_or(0);
            let line = text[..at].matches('\n').count() + 1;
            findings.leaks.push(format!(
                "{name} (line {line}) contains {} as `{}…`",
                needle.what,
                &form[..form.len().min(12)]
            ));
        }
    }
}

/// A JSON document that may hold the consumer kubeconfig as a sensitive attribute (state, `show -json`).
fn scan_json(name: &str, text: &str, wireguard: &[&Needle], client_key: &Needle, findings: &mut Findings) {
    scan_text(name, text, wireguard, findings);
    let Ok(mut doc) = serde_json::from_str::<Value>(text) else {
        scan_text(name, text, &[client_key], findings);
        return;
    };
    let mut unmarked = Vec::new();
    let redacted_values = redact_sensitive_kubeconfigs(&mut doc, client_key, "", &mut unmarked);
    for place in unmarked {
        findings.leaks.push(format!("{name}: {} at {place}", client_key.what));
    }
    let redacted = doc.to_string();
    if client_key.found_in(&redacted).is_some() {
        scan_text(&format!("{name} (outside sensitive kubeconfig attributes)"), &redacted, &[client_key], findings);
    }
    if redacted_values > 0 {
        findings.allowed.push(format!("{name} ({redacted_values}×)"));
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

async fn cycle(ground: &Ground, cli: Cli) -> Result<()> {
    let work = Workdir::new(cli, &config(ground)).await?;
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

    // The keys, from where they live, while they exist.
    let state: Value = serde_json::from_str(&std::fs::read_to_string(work.path().join("terraform.tfstate"))?)?;
    let wireguard = [
        wireguard_private_key(ground, MILAN, MILAN_TENANT_NS, &state, "milan").await?,
        wireguard_private_key(ground, ROME, ROME_TENANT_NS, &state, "rome").await?,
    ];
    let kubeconfig = state_attributes(&state, "liqo_tenant", "rome")?["kubeconfig"]
        .as_str()
        .context("liqo_tenant.rome has no kubeconfig in the state")?
        .to_owned();
    let client_key = Needle::client_key("the consumer's client private key (liqo_tenant kubeconfig)", &kubeconfig)?;

    let steady = traced(
        &work,
        &dir,
        &trace,
        "04-plan",
        &["plan", "-detailed-exitcode", "-out=steady.tfplan", "-input=false", "-no-color"],
    )
    .await?;
    ensure!(steady.status.code() == Some(0), "{cli}: the plan after apply must be empty:\n{steady}");
    t("05-show-steady-plan", &["show", "-json", "-no-color", "steady.tfplan"]).await?;
    t("06-show-state", &["show", "-json", "-no-color"]).await?;
    t("07-output", &["output", "-json", "-no-color"]).await?;
    t("08-plan-destroy", &["plan", "-destroy", "-out=destroy.tfplan", "-input=false", "-no-color"]).await?;
    t("09-show-destroy-plan", &["show", "-json", "-no-color", "destroy.tfplan"]).await?;
    t("10-destroy", &["destroy", "-auto-approve", "-input=false", "-no-color"]).await?;

    let trace_text = std::fs::read_to_string(&trace).with_context(|| format!("reading {}", trace.display()))?;
    ensure!(trace_text.contains("[TRACE]"), "{cli}: {} holds no TRACE lines; was logging on?", trace.display());
    ensure!(
        trace_text.contains("terraform-provider-liqo"),
        "{cli}: the TRACE log shows nothing of the provider process"
    );

    let mut findings = Findings { leaks: Vec::new(), allowed: Vec::new() };
    let wg: Vec<&Needle> = wireguard.iter().collect();
    let files = artifacts(&root)?;
    for file in &files {
        let name = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        if file.extension().is_some_and(|e| e == "tfplan") {
            // The plan file holds the state (and so the sensitive kubeconfig) in formats the scan cannot
            // attribute to an attribute: only the WireGuard keys are checked there.
            scan_text(&name, &plan_file_contents(file)?, &wg, &mut findings);
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(file)?).into_owned();
        let is_state = file.file_name().is_some_and(|n| n.to_string_lossy().starts_with("terraform.tfstate"));
        let is_show_json = name.contains("-show-") && name.ends_with(".stdout");
        if is_state || is_show_json {
            scan_json(&name, &text, &wg, &client_key, &mut findings);
        } else {
            let mut all = wg.clone();
            all.push(&client_key);
            scan_text(&name, &text, &all, &mut findings);
        }
    }
    eprintln!(
        "[secrets] {cli}: scanned {} files ({} KiB of TRACE log) for 3 private keys; the client key appears only as a \
         sensitive kubeconfig in: {}",
        files.len(),
        trace_text.len() / 1024,
        findings.allowed.join(", ")
    );
    ensure!(findings.leaks.is_empty(), "{cli}: private keys leaked:\n{}", findings.leaks.join("\n"));
    // The exception must be real (the state does carry the kubeconfig), or the client-key needle is wrong.
    ensure!(
        findings.allowed.iter().any(|f| f.contains("terraform.tfstate")),
        "{cli}: the client key was not found in any state file, so the search for it proves nothing"
    );
    Ok(())
}

#[tokio::test]
async fn private_keys_never_reach_state_plans_output_or_trace_logs() -> Result<()> {
    let ground = Ground::shared();
    // One after the other: one milan/rome pair, and Liqo allows one peering per pair.
    for cli in Cli::available() {
        cycle(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}
