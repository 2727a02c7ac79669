//! Liqo's "Provision with Terraform" tutorial for Liqo 1.x, as docs/guides/provision-with-terraform.md walks through
//! it: `examples/provision-with-terraform` on a ground whose clusters have no Liqo yet ([`LiqoMode::Installable`]),
//! with hashicorp/helm 3.1.2 (built from its source, `scripts/build-helm-provider.sh`) installing Liqo's chart and
//! hashicorp/kubernetes 3.2.1 making Liqo's namespace, both from the test mirror like this provider.
//!
//! One `apply` makes the clusters' stand-ins, installs Liqo on both and peers them; the next plan is empty; a pod
//! offloaded to the virtual node runs on the provider cluster. `destroy -target=module.rome_to_milan` unpeers and
//! leaves Liqo installed and running on both clusters; `apply` peers them again; `destroy` uninstalls Liqo (Helm
//! runs Liqo's own uninstaller, the chart's pre-delete Job, which the ground's kubelet runs as a process) and
//! leaves nothing of Liqo on either cluster.
//!
//! What differs from a user's machine: `terraform_data` stands in for `kind_cluster` (the example shows both), and
//! the example's `liqo_values_files` adds the ground's own values (see `ground::liqo::adapt::values`: the image tag,
//! as the chart in Liqo's Go module has no appVersion; the API server's address; components the ground cannot
//! run switched off). The chart is Liqo v1.2.0's, from its Go module, as a directory.
use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use liqo_acceptance::chain::copy_example;
use liqo_acceptance::ground::{LiqoMode, Options};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory, observe, offloaded_pod};

/// The example's peering module, as `destroy -target` names it (the guide's command).
const PEERING: &str = "module.rome_to_milan";
/// The namespace the example offloads.
const NAMESPACE: &str = "liqo-demo";

async fn tutorial(ground: &Ground, cli: Cli) -> Result<()> {
    let work = Workdir::uninitialised(cli).await?;
    copy_example(&work, "provision-with-terraform")?;
    let liqo = ground.liqo_chart()?;
    let (mut clusters, mut kubeconfigs, mut values) =
        (serde_json::Map::new(), serde_json::Map::new(), serde_json::Map::new());
    for cluster in [MILAN, ROME] {
        let (file, ground_values) = (format!("{cluster}-ground-values.json"), ground.liqo_values(cluster)?);
        work.write(&file, &serde_json::to_string_pretty(&ground_values)?)?;
        values.insert(cluster.into(), serde_json::json!([work.path().join(file).display().to_string()]));
        kubeconfigs.insert(cluster.into(), ground.kubeconfig(cluster).display().to_string().into());
        // The CIDRs the ground's clusters have, as a user gives kind the ones of var.clusters.
        let ipam = &ground_values["ipam"];
        clusters.insert(
            cluster.into(),
            serde_json::json!({"pod_cidr": ipam["podCIDR"], "service_cidr": ipam["serviceCIDR"]}),
        );
    }
    work.write_vars(&serde_json::json!({
        "clusters": clusters,
        "kubeconfigs": kubeconfigs,
        "liqo_repository": null,
        "liqo_chart": liqo.chart.display().to_string(),
        "liqo_version": null,
        "liqo_values_files": values,
    }))?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "{init}");

    let applied = work.apply().await.context("one apply: clusters, Liqo on both, the peering")?;
    ensure!(applied.stdout.contains("Resources: 14 added"), "one apply creates everything:\n{}", applied.stdout);
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after the one apply is not empty:\n{}", plan.run().stdout);
    let outputs = work.output_json().await?;
    for cluster in [MILAN, ROME] {
        let release = &outputs["liqo"]["value"][cluster];
        ensure!(release["status"] == "deployed", "Liqo's release on {cluster}: {release}");
    }
    let (milan, rome) = (ground.client(MILAN).await?, ground.client(ROME).await?);
    let pod = offloaded_pod::run(&rome, &milan, NAMESPACE, "web").await?;
    eprintln!("[provision_with_terraform] {cli}: {pod}");
    let tag = ground.liqo_values(ROME)?["tag"].as_str().unwrap_or_default().to_owned();
    uninstaller_fails_while_peered(&rome, &tag).await.context("Liqo's uninstaller run on rome while peered")?;

    work.destroy_with(&[&format!("-target={PEERING}")]).await.context("unpeering with destroy -target")?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await.context("after destroy -target of the peering")?;
    for cluster in [MILAN, ROME] {
        liqo_running(ground, cluster).await.with_context(|| format!("{cluster}, after destroy -target"))?;
        // The inventory the uninstall is checked with below sees an installed Liqo: its pods, and the IPs its
        // controller-manager holds with a finalizer (what an uninstall without Liqo's uninstaller leaves).
        let installed = inventory::liqo_left(&ground.client(cluster).await?).await?;
        ensure!(
            installed.iter().any(|l| l.starts_with("Pod liqo/liqo-controller-manager"))
                && installed.iter().any(|l| l.starts_with("IP liqo/") && l.contains("liqo.io/finalizer")),
            "{cluster}: the inventory of Liqo misses the installed Liqo:\n  {}",
            installed.join("\n  ")
        );
    }

    work.apply().await.context("apply after destroy -target: peered again")?;
    let outputs = work.output_json().await?;
    let node = outputs["virtual_node_name"]["value"].as_str().unwrap_or_default().to_owned();
    ensure!(
        observe::node_ready_on(&rome, &node).await?,
        "peered again, but no Ready virtual node {node:?} on rome: {}",
        outputs["status"]
    );

    work.destroy().await.context("destroy: the peering, then Liqo")?;
    for cluster in [MILAN, ROME] {
        let releases = ground.helm_releases(cluster).await?;
        ensure!(releases.is_empty(), "{cluster}: Helm releases left after destroy: {releases:?}");
        let left = inventory::liqo_left(&ground.client(cluster).await?).await?;
        ensure!(left.is_empty(), "{cluster}: Liqo left after destroy (uninstall):\n  {}", left.join("\n  "));
    }
    Ok(())
}

/// Liqo's uninstaller (the chart's pre-delete Job, here as a Job of its own with no retry) run while the peering
/// exists: it refuses (exit code 1, "you should: disable networking for clusters ..."), its pod ends Failed and the
/// Job fails. On the ground the kubelet runs the uninstaller, so this is how an uninstall started too early shows:
/// the hook's pod Failed (Helm itself reports the hook as timed out, as on any cluster: see the guide).
async fn uninstaller_fails_while_peered(client: &kube::Client, liqo_version: &str) -> Result<()> {
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{DeleteParams, ListParams, PostParams};

    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "uninstaller-while-peered", "namespace": "liqo"},
        "spec": {"backoffLimit": 0, "template": {"spec": {
            "restartPolicy": "Never",
            "serviceAccountName": "liqo-controller-manager",
            "containers": [{
                "name": "uninstaller",
                "image": format!("ghcr.io/liqotech/uninstaller:{liqo_version}"),
                "command": ["/usr/bin/uninstaller"],
                "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
            }],
        }}},
    }))?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "liqo");
    jobs.create(&PostParams::default(), &job).await.context("creating the Job")?;
    let failed = observe::eventually(std::time::Duration::from_secs(60), "the uninstaller's Job to fail", || async {
        let job = jobs.get("uninstaller-while-peered").await?;
        let conditions = job.status.and_then(|s| s.conditions).unwrap_or_default();
        Ok(conditions.into_iter().find(|c| c.type_ == "Failed" && c.status == "True"))
    })
    .await?;
    let pods = Api::<Pod>::namespaced(client.clone(), "liqo")
        .list(&ListParams::default().labels("job-name=uninstaller-while-peered"))
        .await?;
    let ended: Vec<(Option<String>, Option<i32>)> = pods
        .items
        .iter()
        .map(|pod| {
            let status = pod.status.as_ref();
            let phase = status.and_then(|s| s.phase.clone());
            let code = status
                .and_then(|s| s.container_statuses.as_ref())
                .and_then(|c| c.first())
                .and_then(|c| c.state.as_ref()?.terminated.as_ref())
                .map(|t| t.exit_code);
            (phase, code)
        })
        .collect();
    ensure!(
        ended == [(Some("Failed".to_owned()), Some(1))],
        "the uninstaller's pod should have failed with exit code 1; pods (phase, exit code): {ended:?}; Job: {failed:?}"
    );
    jobs.delete("uninstaller-while-peered", &DeleteParams::background()).await?;
    Ok(())
}

/// Liqo's release is deployed on `cluster` and each of its Deployments has its replicas available.
async fn liqo_running(ground: &Ground, cluster: &str) -> Result<()> {
    let releases = ground.helm_releases(cluster).await?;
    ensure!(releases.iter().any(|r| r == "liqo"), "Liqo's release is gone: {releases:?}");
    let deployments =
        Api::<Deployment>::namespaced(ground.client(cluster).await?, "liqo").list(&Default::default()).await?;
    ensure!(!deployments.items.is_empty(), "no Deployment in namespace liqo");
    for deployment in &deployments.items {
        let wanted = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let available = deployment.status.as_ref().and_then(|s| s.available_replicas).unwrap_or(0);
        ensure!(
            available >= wanted,
            "Deployment liqo/{} has {available} of {wanted} replicas available",
            deployment.metadata.name.as_deref().unwrap_or_default()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn liqos_terraform_tutorial_installs_peers_and_uninstalls_cleanly() -> Result<()> {
    let clients = Cli::available();
    let grounds =
        futures::future::join_all(clients.iter().map(|_| {
            Ground::start_with(&[MILAN, ROME], Options { liqo: LiqoMode::installable(), ..Options::default() })
        }))
        .await
        .into_iter()
        .collect::<Result<Vec<Ground>>>()?;
    tf::each_client(clients.iter().copied().zip(&grounds).map(|(cli, ground)| (cli, tutorial(ground, cli))))
        .await
        .map(drop)
}
