//! The documentation examples of the resources, APPLIED on real Liqo (milan provides, rome consumes) with
//! Terraform 1.16.4 and OpenTofu 1.11.7 — not only validated (tests/example_files.rs does that).
//!
//! The fragments `examples/resources/liqo_*/resource.tf` together are one peering (generate → gateways → consumer
//! key → tenant → peer → offloads, and a second slice with a labelled virtual node); they are joined as written (`doc_examples::assemble`) with
//! `examples/provider/provider.tf`, into one working directory. Where fragments repeat a block, the copy of the
//! fragment documenting that resource type is applied: the liqo_tenant example shows the liqo_generate.milan,
//! liqo_consumer_key.rome and liqo_peer.rome_to_milan it works with, and its liqo_peer (without the liqo_peer
//! example's `timeouts` and `depends_on`) is therefore validated only. Only what a user supplies is added:
//!
//! - provider.tf reads milan from `~/.kube/milan.kubeconfig`, context `milan-admin`: the commands run with `HOME`
//!   set to a directory holding milan's admin kubeconfig there, its context so named;
//! - rome's `rome_*` variables (`terraform.tfvars.json`): the `*-data` fields of rome's admin kubeconfig;
//! - the liqo_offload example's `kubernetes_namespace` needs hashicorp/kubernetes, configured by the user:
//!   `kubernetes.tf` (tests/resource_examples/kubernetes.tf) holds a `provider "kubernetes"` block for rome made
//!   of the same variables. The test mirror
//!   serves hashicorp/kubernetes 3.2.1, built from its Go module by `scripts/build-kubernetes-provider.sh`
//!   (`acceptance-tests/test` runs it; the test fails if it is missing).
//!
//! Each client applies, re-plans empty, the outputs and the objects on both clusters are checked against what
//! the examples say; the virtual node is relabelled in place and back; the documented import commands
//! (`import.sh`) bring every resource back into the state; then it destroys and nothing is left: no Liqo object (`inventory::nothing_left`), and
//! neither the offloaded namespaces on rome nor their copies on milan.
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::{Api, Client};
use liqo_acceptance::doc_examples;
use liqo_acceptance::observe::eventually;
use liqo_acceptance::tf::{Cli, Workdir, mirror};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};
use liqo_schema::liqo::{NamespaceOffloading, VirtualNode, labels};
use serde_json::{Value, json};

/// Made by hashicorp/kubernetes (`kubernetes_namespace.demo`) and offloaded by `liqo_offload.demo`.
const DEMO_NS: &str = "liqo-demo";
/// Made and offloaded by `liqo_offload.scratch` (`create_namespace = true`).
const SCRATCH_NS: &str = "liqo-scratch";
/// The context `examples/provider/provider.tf` names in `~/.kube/milan.kubeconfig`.
const MILAN_CONTEXT: &str = "milan-admin";

fn kubeconfig(ground: &Ground, cluster: &str) -> Result<serde_yaml::Value> {
    let path = ground.kubeconfig(cluster);
    serde_yaml::from_str(&std::fs::read_to_string(path)?).with_context(|| format!("parsing {}", path.display()))
}

/// A working directory with the assembled examples, set up as described above, initialised.
async fn workdir(cli: Cli, ground: &Ground) -> Result<Workdir> {
    let mut fragments = doc_examples::resource_fragments()?;
    ensure!(fragments.len() >= 7, "expected the seven resource examples, found {fragments:?}");
    let assembled = doc_examples::assemble(&fragments)?;
    fragments.push("provider/provider.tf".into());
    let provider = doc_examples::read("provider/provider.tf")?;
    eprintln!("[resource_examples] {cli}: applying {fragments:?}; repeated blocks left out: {:?}", assembled.left_out);

    let work = Workdir::uninitialised(cli).await?;
    work.write("main.tf", &format!("{}\n# examples/provider/provider.tf\n{provider}", assembled.text))?;
    work.write("kubernetes.tf", include_str!("resource_examples/kubernetes.tf"))?;

    // ~/.kube/milan.kubeconfig with context milan-admin.
    let home = work.path().parent().context("working directory layout")?.join("home");
    std::fs::create_dir_all(home.join(".kube"))?;
    let mut milan = kubeconfig(ground, MILAN)?;
    milan["contexts"][0]["name"] = MILAN_CONTEXT.into();
    milan["current-context"] = MILAN_CONTEXT.into();
    std::fs::write(home.join(".kube/milan.kubeconfig"), serde_yaml::to_string(&milan)?)?;
    work.set_env("HOME", &home);

    // rome's variables: the kubeconfig's base64 `*-data` fields, as provider.tf expects them.
    let rome = kubeconfig(ground, ROME)?;
    let field = |v: &serde_yaml::Value, what: &str| {
        v.as_str().map(str::to_owned).with_context(|| format!("rome's kubeconfig has no {what}"))
    };
    let vars = json!({
        "rome_host": field(&rome["clusters"][0]["cluster"]["server"], "server")?,
        "rome_ca_data": field(&rome["clusters"][0]["cluster"]["certificate-authority-data"], "CA")?,
        "rome_client_certificate_data": field(&rome["users"][0]["user"]["client-certificate-data"], "certificate")?,
        "rome_client_key_data": field(&rome["users"][0]["user"]["client-key-data"], "key")?,
    });
    work.write_vars(&vars)?;

    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "{cli}: init of the assembled examples failed:\n{init}");
    Ok(work)
}

fn output<'a>(outputs: &'a Value, name: &str) -> &'a Value {
    &outputs[name]["value"]
}

fn text<'a>(value: &'a Value, what: &str) -> Result<&'a str> {
    value.as_str().filter(|s| !s.is_empty()).with_context(|| format!("output {what} is empty or not a string: {value}"))
}

async fn node_ready(client: &Client, node: &str) -> Result<bool> {
    liqo_acceptance::observe::node_ready_on(client, node).await
}

/// The namespace exists and is not being deleted.
async fn namespace_live(client: &Client, name: &str) -> Result<bool> {
    Ok(Api::<Namespace>::all(client.clone())
        .get_opt(name)
        .await?
        .is_some_and(|n| n.metadata.deletion_timestamp.is_none()))
}

async fn namespace_gone(client: &Client, cluster: &str, name: &str, what: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    eventually(Duration::from_secs(90), &format!("{what}: namespace {name} gone from {cluster}"), || async {
        Ok(api.get_opt(name).await?.is_none().then_some(()))
    })
    .await
}

/// The label the liqo_virtual_node example gives its node.
const ACCELERATOR: &str = "example.com/accelerator";

async fn node_label(client: &Client, node: &str, key: &str) -> Result<Option<String>> {
    let node = Api::<Node>::all(client.clone()).get(node).await?;
    Ok(node.metadata.labels.unwrap_or_default().get(key).cloned())
}

/// liqo_virtual_node's labels change in place, as its example says: an override relabels the node (one label
/// changed, one added) and resizes its slice (the node's `resources` follow the slice's grant in the same apply),
/// and its removal puts the example back (the added label removed). The node stays the
/// same object, Ready, and Liqo's virtual kubelet relabels it.
async fn relabel(work: &Workdir, ground: &Ground, what: &str) -> Result<()> {
    let rome = ground.client(ROME).await?;
    let uid = |n: Node| n.metadata.uid.unwrap_or_default();
    let before = uid(Api::<Node>::all(rome.clone()).get("milan-gpu").await?);
    work.write(
        "relabel_override.tf",
        r#"resource "liqo_virtual_node" "gpu" {
  labels = { "example.com/accelerator" = "a100", "example.com/tier" = "batch" }
}

resource "liqo_peer" "rome_to_milan_gpu" {
  resources = { cpu = "3", memory = "4Gi", pods = "50" }
}
"#,
    )?;
    let plan = work.plan().await?;
    let shown = plan.run().stdout.clone();
    ensure!(
        shown.contains("0 to add, 2 to change, 0 to destroy"),
        "{what}: resizing the slice and relabelling its node must be two in-place changes:\n{shown}"
    );
    work.apply().await.with_context(|| format!("{what}: apply of the relabelling"))?;
    for (key, want) in [(ACCELERATOR, Some("a100")), ("example.com/tier", Some("batch"))] {
        let have = node_label(&rome, "milan-gpu", key).await?;
        ensure!(have.as_deref() == want, "{what}: after relabelling, node milan-gpu has {key}={have:?}");
    }
    // The slice's new grant reached the node in the same apply (its `resources` are the slice's
    // `accepted_resources`): Liqo's virtual kubelet reports it as the node's capacity.
    let nodes: Api<Node> = Api::all(rome.clone());
    eventually(Duration::from_secs(60), &format!("{what}: node milan-gpu with cpu capacity 3"), || async {
        let node = nodes.get("milan-gpu").await?;
        let cpu = node.status.and_then(|s| s.capacity).and_then(|c| c.get("cpu").map(|q| q.0.clone()));
        Ok((cpu.as_deref() == Some("3")).then_some(()))
    })
    .await?;
    std::fs::remove_file(work.path().join("relabel_override.tf"))?;
    work.apply().await.with_context(|| format!("{what}: apply back to the example's labels"))?;
    for (key, want) in [(ACCELERATOR, Some("gpu")), ("example.com/tier", None)] {
        let have = node_label(&rome, "milan-gpu", key).await?;
        ensure!(have.as_deref() == want, "{what}: back to the example, node milan-gpu has {key}={have:?}");
    }
    ensure!(node_ready(&rome, "milan-gpu").await?, "{what}: node milan-gpu is not Ready after relabelling");
    let after = uid(Api::<Node>::all(rome.clone()).get("milan-gpu").await?);
    ensure!(before == after, "{what}: relabelling made a new Node (uid {before} → {after}), not an in-place change");
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{what}: the plan after relabelling back is not empty:\n{}", plan.run().stdout);
    Ok(())
}

/// What the examples' outputs and comments promise, read back from the outputs and the clusters.
async fn check_applied(ground: &Ground, outputs: &Value, what: &str) -> Result<()> {
    let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);

    // liqo_generate: milan's facts, as rome's side takes them.
    let facts = output(outputs, "milan");
    ensure!(facts["cluster_id"] == MILAN, "{what}: output milan.cluster_id: {facts}");
    let tenant_ns = text(&facts["tenant_namespace"], "milan.tenant_namespace")?;
    ensure!(namespace_live(&milan, tenant_ns).await?, "{what}: milan's tenant namespace {tenant_ns} is missing");
    text(&facts["wireguard_public_key"], "milan.wireguard_public_key")?;
    ensure!(facts["pod_cidrs"].as_array().is_some_and(|c| !c.is_empty()), "{what}: output milan.pod_cidrs: {facts}");

    // liqo_gateway: the fixed node port, and the tunnel Connected.
    let tunnel = output(outputs, "tunnel");
    ensure!(tunnel["rome"] == "Connected", "{what}: the client gateway is not Connected: {tunnel}");
    let endpoint = text(&tunnel["endpoint"], "tunnel.endpoint")?;
    ensure!(endpoint.ends_with(":30742"), "{what}: the server's endpoint is not the example's node port: {endpoint}");

    // liqo_consumer_key: only the CSR is an output.
    let csr = text(output(outputs, "rome_csr"), "rome_csr")?;
    ensure!(csr.starts_with("-----BEGIN CERTIFICATE REQUEST-----"), "{what}: rome_csr is no CSR: {csr}");

    // liqo_tenant: the certificate's expiry, an RFC 3339 time.
    let expires = text(output(outputs, "rome_certificate_expires_at"), "rome_certificate_expires_at")?;
    ensure!(
        expires.len() >= 20 && expires.as_bytes()[4] == b'-' && expires.contains('T'),
        "{what}: rome_certificate_expires_at: {expires}"
    );

    // liqo_peer: the virtual node is Ready on rome; milan granted what the example asks for.
    let node = text(output(outputs, "virtual_node_name"), "virtual_node_name")?;
    ensure!(node_ready(&rome, node).await?, "{what}: virtual node {node} is not Ready on rome");
    let accepted = output(outputs, "accepted_resources");
    for (resource, quantity) in [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")] {
        ensure!(accepted[resource] == quantity, "{what}: accepted_resources[{resource}] is not {quantity}: {accepted}");
    }

    // liqo_virtual_node: the GPU slice's node is Ready on rome with the example's label; Liqo made none of its own.
    let gpu = text(output(outputs, "gpu_node"), "gpu_node")?;
    ensure!(node_ready(&rome, gpu).await?, "{what}: virtual node {gpu} is not Ready on rome");
    let accelerator = node_label(&rome, gpu, ACCELERATOR).await?;
    ensure!(accelerator.as_deref() == Some("gpu"), "{what}: node {gpu} has {ACCELERATOR}={accelerator:?}, not gpu");
    let vns = Api::<VirtualNode>::all(rome.clone()).list(&Default::default()).await?;
    let names: Vec<String> = vns.items.iter().filter_map(|v| v.metadata.name.clone()).collect();
    ensure!(names.len() == 2, "{what}: rome has the VirtualNodes {names:?}, not liqo_peer's and liqo_virtual_node's");

    // liqo_offload: both namespaces offloaded to milan, under Liqo's DefaultName.
    let remote = text(output(outputs, "remote_namespace_name"), "remote_namespace_name")?;
    ensure!(remote == format!("{DEMO_NS}-{ROME}"), "{what}: remote_namespace_name {remote}");
    for ns in [DEMO_NS, SCRATCH_NS] {
        ensure!(namespace_live(&rome, ns).await?, "{what}: namespace {ns} is missing on rome");
        let offloading = Api::<NamespaceOffloading>::namespaced(rome.clone(), ns)
            .get(labels::NAMESPACE_OFFLOADING_NAME)
            .await
            .with_context(|| format!("{what}: the NamespaceOffloading of {ns}"))?;
        let phase = offloading.status.and_then(|s| s.offloading_phase);
        ensure!(phase.as_deref() == Some("Ready"), "{what}: offloading of {ns} is {phase:?}, not Ready");
        let copy = format!("{ns}-{ROME}");
        ensure!(namespace_live(&milan, &copy).await?, "{what}: {ns}'s remote namespace {copy} is missing on milan");
    }
    Ok(())
}

/// Runs the documented import commands (`examples/resources/*/import.sh`) against what the examples made: each
/// resource leaves the state and comes back by its import ID. The next plan may only do what import.sh says:
/// liqo_tenant signs the CSR again (and liqo_peer takes the new certificate), and a `timeouts` block of the
/// configuration, which no import reads back, is added; every such change is in place, and no attribute read back
/// by an import differs from the configuration. Applied once, the plan is empty again.
async fn import_as_documented(work: &Workdir, what: &str) -> Result<()> {
    // What import.sh says an import does not read back: the tenant's CSR (Liqo keeps no copy), any `timeouts`.
    let documented =
        |address: &str, attr: &str| attr == "timeouts" || (address.starts_with("liqo_tenant.") && attr == "csr");
    let commands = doc_examples::import_commands()?;
    for (address, id) in &commands {
        let removed = work.run(&["state", "rm", address]).await?;
        ensure!(
            removed.success(),
            "{what}: `state rm {address}` (import.sh names a resource the examples lack?)\n{removed}"
        );
        work.import(address, id).await.with_context(|| format!("{what}: import {address} {id} as import.sh says"))?;
    }
    let plan = work.plan_with(&["-out=after-import.tfplan"]).await?;
    let shown = work.run(&["show", "-json", "after-import.tfplan"]).await?;
    ensure!(shown.success(), "{what}: show of the plan after import\n{shown}");
    let shown: Value = serde_json::from_str(&shown.stdout).context("plan JSON")?;
    let mut updated = Vec::new();
    for change in shown["resource_changes"].as_array().into_iter().flatten() {
        let address = change["address"].as_str().unwrap_or_default();
        let change = &change["change"];
        if change["actions"] == json!(["no-op"]) {
            continue;
        }
        let differing: Vec<&String> = change["after"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(attr, after)| {
                change["after_unknown"][attr.as_str()] != json!(true) && change["before"][attr.as_str()] != **after
            })
            .map(|(attr, _)| attr)
            .collect();
        ensure!(
            change["actions"] == json!(["update"]) && differing.iter().all(|attr| documented(address, attr)),
            "{what}: after importing {} resources as import.sh says, {address} plans {} with {differing:?} differing \
             from what the import read:\n{}",
            commands.len(),
            change["actions"],
            plan.run().stdout
        );
        updated.push(address.to_owned());
    }
    ensure!(
        updated.iter().any(|a| a.starts_with("liqo_tenant.")),
        "{what}: import.sh says the imported liqo_tenant signs its CSR again, but the plan updates only {updated:?}"
    );
    eprintln!(
        "[resource_examples] {what}: {} resources imported; in-place updates after import: {updated:?}",
        commands.len()
    );
    work.apply().await.with_context(|| format!("{what}: apply after import"))?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{what}: the plan after import and apply is not empty:\n{}", plan.run().stdout);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_examples_apply_replan_empty_and_destroy_cleanly() -> Result<()> {
    let mirror = tokio::task::spawn_blocking(mirror::get).await??;
    mirror.require(&mirror::KUBERNETES).context("the liqo_offload example")?;
    let ground = Ground::shared();
    for cli in Cli::available() {
        let what = format!("examples/resources with {cli}");
        let work = workdir(cli, ground).await?;
        work.apply().await.with_context(|| format!("{what}: apply"))?;
        let plan = work.plan().await?;
        ensure!(plan.is_empty(), "{what}: the plan after apply is not empty:\n{}", plan.run().stdout);
        let outputs = work.output_json().await?;
        check_applied(ground, &outputs, &what).await?;
        relabel(&work, ground, &what).await?;
        import_as_documented(&work, &what).await?;

        work.destroy().await.with_context(|| format!("{what}: destroy"))?;
        inventory::nothing_left(ground, &[MILAN, ROME]).await.with_context(|| format!("{what}: destroy"))?;
        let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);
        for ns in [DEMO_NS, SCRATCH_NS] {
            namespace_gone(&rome, ROME, ns, &what).await?;
            namespace_gone(&milan, MILAN, &format!("{ns}-{ROME}"), &what).await?;
        }
    }
    Ok(())
}
