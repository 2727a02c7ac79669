//! `liqo_generate` and `data "liqo_cluster"` against the test ground, once per client (Terraform 1.16.4
//! and OpenTofu 1.11.7). The checks read the clusters directly: outputs are compared with Liqo's objects, and
//! the WireGuard key pair is verified in the Secret, never in Terraform's state or output.
use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use liqo_acceptance::ground::LIQO_VERSION;
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN};
use liqo_schema::liqo::Network;
use liqo_schema::liqo::labels;
use serde_json::{Value, json};

const ADDRESS: &str = "liqo_generate.peer";

/// A remote cluster ID per test and client, so that nothing one run leaves behind can satisfy another's checks.
fn remote_id(test: &str, cli: Cli) -> String {
    format!("gen-{test}-{}", cli.name())
}

/// A working directory with the ground's providers and `hcl` (one of the HCL files beside this test) as `name`,
/// its variables filled in with `vars`.
async fn workdir(ground: &Ground, cli: Cli, name: &str, hcl: &str, vars: &Value) -> Result<Workdir> {
    let work = Workdir::new(cli, &tf::provider_config(ground)).await?;
    work.write(name, hcl)?;
    work.write_vars(vars)?;
    Ok(work)
}

/// One liqo_generate on milan with every output exported, its variables filled in with `vars`
/// (`remote_cluster_id`, …).
async fn generate(ground: &Ground, cli: Cli, vars: &Value) -> Result<Workdir> {
    workdir(ground, cli, "generate.tf", include_str!("generate/generate.tf"), vars).await
}

/// What Liqo's installation on a cluster says (read the way liqoctl reads it).
struct LiqoFacts {
    cluster_id: String,
    pod_cidrs: Vec<String>,
    external_cidr: String,
}

async fn liqo_facts(client: &Client) -> Result<LiqoFacts> {
    let ns = labels::DEFAULT_LIQO_NAMESPACE;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let cm = maps
        .list(&ListParams::default().labels(&format!("{}={}", labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME)))
        .await?;
    let cluster_id = cm
        .items
        .first()
        .and_then(|c| c.data.as_ref()?.get(labels::CLUSTER_ID_KEY).cloned())
        .context("no cluster ID ConfigMap")?;
    let networks: Api<Network> = Api::namespaced(client.clone(), ns);
    let cidrs = |kind: &'static str| {
        let networks = networks.clone();
        async move {
            let mut list =
                networks.list(&ListParams::default().labels(&format!("{}={kind}", labels::NETWORK_TYPE))).await?.items;
            list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            Ok::<Vec<String>, anyhow::Error>(list.into_iter().filter_map(|n| n.status?.cidr).collect())
        }
    };
    let external = cidrs(labels::NETWORK_TYPE_EXTERNAL_CIDR).await?;
    Ok(LiqoFacts {
        cluster_id,
        pod_cidrs: cidrs(labels::NETWORK_TYPE_POD_CIDR).await?,
        external_cidr: external.first().cloned().context("no external CIDR")?,
    })
}

/// The `generate` output (the whole resource object).
async fn outputs(work: &Workdir) -> Result<serde_json::Value> {
    Ok(work.output_json().await?["generate"]["value"].clone())
}

fn key32(secret: &Secret, key: &str) -> Result<[u8; 32]> {
    let raw = secret.data.as_ref().and_then(|d| d.get(key)).with_context(|| format!("Secret without data.{key}"))?;
    raw.0.as_slice().try_into().with_context(|| format!("data.{key} is {} bytes, not 32", raw.0.len()))
}

/// Checks the key Secret holds a valid pair labelled for `remote`; returns (private, public) in base64.
fn check_key_secret(secret: &Secret, remote: &str) -> Result<(String, String)> {
    let b64 = |k: &[u8; 32]| base64::engine::general_purpose::STANDARD.encode(k);
    let private = key32(secret, labels::WIREGUARD_PRIVATE_KEY)?;
    let public = key32(secret, labels::WIREGUARD_PUBLIC_KEY)?;
    let derived = x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from(private));
    ensure!(derived.as_bytes() == &public, "data.publicKey is not derived from data.privateKey");
    ensure!(private[0] & 7 == 0 && private[31] & 0xc0 == 0x40, "the private key is not clamped like `wg genkey`");
    let l = secret.metadata.labels.clone().unwrap_or_default();
    ensure!(l.get(labels::REMOTE_CLUSTER_ID).map(String::as_str) == Some(remote), "key Secret labels {l:?}");
    ensure!(l.get(labels::GATEWAY_RESOURCE).map(String::as_str) == Some(labels::TRUE), "key Secret labels {l:?}");
    Ok((b64(&private), b64(&public)))
}

/// Nothing Terraform wrote — state files and every command's output — contains `secret`.
fn assert_nowhere(work: &Workdir, secret: &str) -> Result<()> {
    let root = work.path().parent().context("working directory layout")?.to_path_buf();
    let mut files = vec![work.path().join("terraform.tfstate"), work.path().join("terraform.tfstate.backup")];
    for entry in std::fs::read_dir(root.join("runs"))? {
        files.push(entry?.path());
    }
    for file in files.into_iter().filter(|f| f.exists()) {
        let text = std::fs::read_to_string(&file)?;
        ensure!(!text.contains(secret), "{} contains the WireGuard private key", file.display());
    }
    Ok(())
}

async fn lifecycle(ground: &Ground, cli: Cli) -> Result<()> {
    let remote = remote_id("life", cli);
    let namespace = format!("liqo-tenant-{remote}");
    let client = ground.client(MILAN).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let work = generate(ground, cli, &json!({"remote_cluster_id": remote})).await?;

    work.apply().await?;
    let out = outputs(&work).await?;
    let facts = liqo_facts(&client).await?;
    assert_eq!(out["cluster_id"], facts.cluster_id.as_str(), "{cli}: cluster_id");
    assert_eq!(out["pod_cidrs"], json!(facts.pod_cidrs), "{cli}: pod_cidrs");
    assert_eq!(out["external_cidr"], facts.external_cidr.as_str(), "{cli}: external_cidr");
    assert_eq!(
        out["api_server_url"].as_str().map(|u| u.trim_end_matches('/')),
        Some(ground.cluster(MILAN).api_server.trim_end_matches('/'))
    );
    assert_eq!(out["tenant_namespace"], namespace.as_str());
    assert_eq!(out["id"], namespace.as_str());
    assert_eq!(out["key_secret_name"], "gw-keys");

    let ns = namespaces.get(&namespace).await?;
    let l = ns.metadata.labels.clone().unwrap_or_default();
    for (k, v) in [
        (labels::REMOTE_CLUSTER_ID, remote.as_str()),
        (labels::TENANT_NAMESPACE, "true"),
        (labels::POD_SECURITY_ENFORCE, "privileged"),
        (labels::POD_SECURITY_AUDIT, "privileged"),
        (labels::POD_SECURITY_WARN, "privileged"),
        (labels::MANAGED_BY, "terraform-provider-liqo"),
    ] {
        assert_eq!(l.get(k).map(String::as_str), Some(v), "{cli}: Namespace label {k}");
    }
    let (private, public) = check_key_secret(&secrets.get("gw-keys").await?, &remote)?;
    assert_eq!(out["wireguard_public_key"], public.as_str(), "{cli}: the output is the Secret's public key");
    assert_nowhere(&work, &private)?;
    assert!(work.plan().await?.is_empty(), "{cli}: a second plan must be empty");

    // Key Secret deleted out of band: the plan shows it, apply writes a fresh pair and the output follows.
    secrets.delete("gw-keys", &DeleteParams::default()).await?;
    let plan = work.plan().await?;
    assert!(!plan.is_empty(), "{cli}: a deleted key Secret must show in the plan");
    assert!(plan.run().stdout.contains(ADDRESS), "{cli}: {}", plan.run().stdout);
    work.apply().await?;
    let (private2, public2) = check_key_secret(&secrets.get("gw-keys").await?, &remote)?;
    assert_ne!(public2, public, "{cli}: a fresh pair after the repair");
    assert_eq!(outputs(&work).await?["wireguard_public_key"], public2.as_str());
    assert_nowhere(&work, &private2)?;
    assert!(work.plan().await?.is_empty(), "{cli}: plan after the repair must be empty");

    // A pair that no longer matches the state (edited out of band) is replaced the same way.
    let mut tampered = secrets.get("gw-keys").await?;
    let other = x25519_dalek::PublicKey::from(&x25519_dalek::StaticSecret::from([7u8; 32]));
    tampered
        .data
        .as_mut()
        .unwrap()
        .insert(labels::WIREGUARD_PUBLIC_KEY.into(), k8s_openapi::ByteString(other.as_bytes().to_vec()));
    secrets.replace("gw-keys", &PostParams::default(), &tampered).await?;
    assert!(!work.plan().await?.is_empty(), "{cli}: a broken key pair must show in the plan");
    work.apply().await?;
    check_key_secret(&secrets.get("gw-keys").await?, &remote)?;

    // Import by the documented ID gives an empty plan.
    work.run(&["state", "rm", ADDRESS]).await?;
    work.import(ADDRESS, &namespace).await?;
    let plan = work.plan().await?;
    assert!(plan.is_empty(), "{cli}: plan after import must be empty:\n{}", plan.run().stdout);

    // Destroy removes the Secret and the Namespace it created, and returns only when they are gone.
    work.destroy().await?;
    assert!(secrets.get_opt("gw-keys").await?.is_none(), "{cli}: key Secret left behind");
    assert!(
        namespaces.get_opt(&namespace).await?.is_none(),
        "{cli}: Namespace {namespace} still present after destroy"
    );
    Ok(())
}

#[tokio::test]
async fn generate_outputs_liqo_facts_and_keeps_the_private_key_in_the_cluster() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        lifecycle(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

async fn adoption(ground: &Ground, cli: Cli) -> Result<()> {
    let remote = remote_id("adopt", cli);
    let namespace = format!("adopted-{remote}");
    let client = ground.client(MILAN).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let own_label = ("team".to_string(), "networking".to_string());
    let existing = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.clone()),
            labels: Some(BTreeMap::from([own_label.clone()])),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces.create(&PostParams::default(), &existing).await?;

    let work = generate(ground, cli, &json!({"remote_cluster_id": remote, "tenant_namespace": namespace})).await?;
    work.apply().await?;
    let l = namespaces.get(&namespace).await?.metadata.labels.unwrap_or_default();
    assert_eq!(l.get(labels::REMOTE_CLUSTER_ID), Some(&remote), "{cli}: adopted Namespace gets Liqo's labels");
    assert!(
        !l.contains_key(labels::MANAGED_BY),
        "{cli}: an adopted Namespace is not marked as created by the provider"
    );
    assert!(work.plan().await?.is_empty());

    work.destroy().await?;
    let after = namespaces.get_opt(&namespace).await?.context("an adopted Namespace must survive destroy")?;
    let l = after.metadata.labels.unwrap_or_default();
    assert_eq!(l.get(&own_label.0), Some(&own_label.1), "{cli}: the creator's labels stay");
    assert!(
        !l.contains_key(labels::REMOTE_CLUSTER_ID) && !l.contains_key(labels::TENANT_NAMESPACE),
        "{cli}: Liqo labels removed: {l:?}"
    );
    assert!(
        Api::<Secret>::namespaced(client, &namespace).get_opt("gw-keys").await?.is_none(),
        "{cli}: key Secret removed"
    );
    namespaces.delete(&namespace, &DeleteParams::default()).await?;

    // A namespace labelled for another peer is refused before anything is written, and stays untouched.
    let taken = format!("taken-{remote}");
    let other_peer = Namespace {
        metadata: ObjectMeta {
            name: Some(taken.clone()),
            labels: Some(BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_string(), "someone-else".to_string())])),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces.create(&PostParams::default(), &other_peer).await?;
    let work = generate(ground, cli, &json!({"remote_cluster_id": remote, "tenant_namespace": taken})).await?;
    let run = work.apply_fails().await?;
    assert!(run.stderr.contains(&format!("Namespace {taken} belongs to another peer")), "{cli}: {}", run.stderr);
    let state = work.run(&["state", "list"]).await?;
    assert!(!state.stdout.contains(ADDRESS), "{cli}: a refused create leaves nothing in the state: {}", state.stdout);
    let l = namespaces.get(&taken).await?.metadata.labels.unwrap_or_default();
    assert_eq!(l.get(labels::REMOTE_CLUSTER_ID).map(String::as_str), Some("someone-else"), "{cli}: {l:?}");
    assert!(
        [labels::TENANT_NAMESPACE, labels::POD_SECURITY_ENFORCE, labels::MANAGED_BY]
            .iter()
            .all(|k| !l.contains_key(*k)),
        "{cli}: the other peer's namespace must stay untouched: {l:?}"
    );
    namespaces.delete(&taken, &DeleteParams::default()).await?;
    Ok(())
}

#[tokio::test]
async fn an_existing_namespace_is_adopted_and_kept_on_destroy() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        adoption(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

/// A loopback port nobody listens on.
fn closed_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

async fn failures(ground: &Ground, cli: Cli) -> Result<()> {
    let client = ground.client(MILAN).await?;
    let namespaces: Api<Namespace> = Api::all(client);

    // Invalid input (refused at plan time) is tests/bad_input.rs's table; here what needs a cluster.
    // No Liqo where the provider block says it is: the diagnostic names the ConfigMap and the attribute, and
    // nothing is written.
    let remote = remote_id("noliqo", cli);
    let vars = json!({"remote_cluster_id": remote, "kubeconfig_path": ground.kubeconfig(MILAN)});
    let work = workdir(ground, cli, "no_liqo.tf", include_str!("generate/no_liqo.tf"), &vars).await?;
    let run = work.apply_fails().await?;
    for needle in [
        "Liqo not found in namespace no-liqo-here",
        "ConfigMap no-liqo-here/liqo-clusterid-configmap",
        "`liqo_namespace`",
    ] {
        assert!(run.stderr.contains(needle), "{cli}: missing {needle:?} in:\n{}", run.stderr);
    }
    assert!(
        namespaces.get_opt(&format!("liqo-tenant-{remote}")).await?.is_none(),
        "{cli}: nothing may be written without Liqo"
    );

    // Unreachable cluster: plan works (no API call), apply fails saying the API server cannot be reached.
    let remote = remote_id("unreachable", cli);
    let port = closed_port()?;
    let vars = json!({"remote_cluster_id": remote, "api_server_port": port});
    let work = workdir(ground, cli, "unreachable.tf", include_str!("generate/unreachable.tf"), &vars).await?;
    ensure!(!work.plan().await?.is_empty(), "{cli}: plan of a new resource needs no cluster");
    let run = work.apply_fails().await?;
    for needle in [format!("Cluster unreachable: https://127.0.0.1:{port}"), "permanently_unreachable".into()] {
        assert!(run.stderr.contains(&needle), "{cli}: missing {needle:?} in:\n{}", run.stderr);
    }

    // A provider block naming a kubeconfig context that does not exist: the error points at the attribute.
    let providers =
        tf::provider_config(ground).replace(&format!("config_context = \"{MILAN}\""), "config_context = \"florence\"");
    let work = Workdir::new(cli, &providers).await?;
    work.write("unknown_context.tf", include_str!("generate/unknown_context.tf"))?;
    let run = work.run(&["plan", "-input=false", "-no-color"]).await?;
    ensure!(!run.success(), "{cli}: an unknown context must fail");
    assert!(
        run.stderr.contains("Unknown kubeconfig context") && run.stderr.contains("`florence`"),
        "{cli}: {}",
        run.stderr
    );
    Ok(())
}

/// A namespace whose deletion cannot finish has no finalizers of its own: the error must name what its deletion
/// conditions report (the remaining object and its finalizer) and the next step, and a later destroy finishes.
#[tokio::test]
async fn a_namespace_held_by_its_content_is_explained_on_destroy() -> Result<()> {
    const HOLD: &str = "example.com/hold";
    let ground = Ground::shared();
    let milan = ground.client(MILAN).await?;
    for cli in Cli::all() {
        let remote = remote_id("held", cli);
        let work = generate(ground, cli, &json!({"remote_cluster_id": remote, "delete_timeout": "30s"})).await?;
        work.apply().await?;
        let ns = format!("{}{remote}", labels::TENANT_NAMESPACE_PREFIX);
        let maps: Api<ConfigMap> = Api::namespaced(milan.clone(), &ns);
        let held = ConfigMap {
            metadata: ObjectMeta {
                name: Some("held".into()),
                finalizers: Some(vec![HOLD.into()]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        maps.create(&PostParams::default(), &held).await?;

        let run = work.run(&["destroy", "-auto-approve", "-input=false", "-no-color"]).await?;
        ensure!(!run.success(), "{cli}: destroy must fail while the namespace is held:\n{run}");
        let stderr = liqo_acceptance::observe::flat(&run.stderr);
        for needle in
            [&format!("Namespace {ns} could not be deleted"), "NamespaceFinalizersRemaining", HOLD, "configmaps"]
        {
            ensure!(stderr.contains(needle), "{cli}: the error names {needle:?}:\n{}", run.stderr);
        }
        ensure!(!stderr.contains("finalizer(s) ."), "{cli}: no empty finalizer list:\n{}", run.stderr);

        // The next step taken (the finalizer released), destroy finishes.
        let release = json!({"metadata": {"finalizers": null}});
        maps.patch("held", &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&release)).await?;
        work.destroy().await?;
        // The deletion already under way finishes by itself (the refresh may find the namespace gone or going).
        let namespaces: Api<Namespace> = Api::all(milan.clone());
        liqo_acceptance::observe::eventually(
            std::time::Duration::from_secs(60),
            &format!("{cli}: {ns} deleted"),
            || async { Ok(namespaces.get_opt(&ns).await?.is_none().then_some(())) },
        )
        .await?;
    }
    Ok(())
}

#[tokio::test]
async fn missing_liqo_and_unreachable_clusters_are_named() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        failures(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

async fn late_provider(ground: &Ground, cli: Cli) -> Result<()> {
    let remote = remote_id("late", cli);
    // late_provider.tf passes the kubeconfig path through a resource, so the provider block is unknown while
    // planning.
    let vars = |kubeconfig_path: &str| json!({"remote_cluster_id": remote, "kubeconfig_path": kubeconfig_path});
    let path = ground.kubeconfig(MILAN).display().to_string();
    let work =
        workdir(ground, cli, "late_provider.tf", include_str!("generate/late_provider.tf"), &vars(&path)).await?;
    work.apply().await?;
    assert!(work.plan().await?.is_empty(), "{cli}: plan once the provider block is known");

    // Now the block becomes unknown again while the resource exists: refreshing it needs the cluster, and the
    // error says which attribute was unknown and how to apply in two steps.
    let kubeconfig = ground.kubeconfig(MILAN);
    let same_file = kubeconfig
        .parent()
        .context("kubeconfig path")?
        .join(".")
        .join(kubeconfig.file_name().context("kubeconfig path")?);
    work.write_vars(&vars(&same_file.display().to_string()))?;
    let run = work.run(&["plan", "-input=false", "-no-color"]).await?;
    ensure!(!run.success(), "{cli}: refreshing with an unknown provider block must fail:\n{run}");
    assert!(run.stderr.contains("`kubernetes.config_path`") && run.stderr.contains("-target"), "{cli}: {}", run.stderr);

    work.write_vars(&vars(&path))?;
    work.destroy().await?;
    Ok(())
}

#[tokio::test]
async fn a_provider_block_known_only_at_apply_works_and_explains_two_step_applies() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        late_provider(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}

async fn data_source(ground: &Ground, cli: Cli) -> Result<()> {
    let work = workdir(ground, cli, "data_source.tf", include_str!("generate/data_source.tf"), &json!({})).await?;
    work.apply().await?;
    let out = work.output_json().await?["cluster"]["value"].clone();
    let facts = liqo_facts(&ground.client(MILAN).await?).await?;
    assert_eq!(out["cluster_id"], facts.cluster_id.as_str());
    assert_eq!(out["id"], facts.cluster_id.as_str());
    assert_eq!(out["pod_cidrs"], json!(facts.pod_cidrs));
    assert_eq!(out["external_cidr"], facts.external_cidr.as_str());
    assert_eq!(out["liqo_version"], LIQO_VERSION, "{cli}: version from the controller-manager image tag");
    Ok(())
}

#[tokio::test]
async fn cluster_data_source_reads_the_same_facts() -> Result<()> {
    let ground = Ground::shared();
    for cli in Cli::available() {
        data_source(ground, cli).await.with_context(|| format!("with {cli}"))?;
    }
    Ok(())
}
