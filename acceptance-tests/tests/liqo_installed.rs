//! Liqo installed by the same configuration that peers it (`tests/liqo_installed/main.tf`), on a ground whose
//! clusters have no Liqo yet ([`LiqoMode::Installable`]): one `apply` makes the clusters' stand-ins, installs
//! Liqo's chart on both (`helm upgrade --install`, no `--wait`: the provider's first reads may meet a Liqo still
//! starting), then the peering module and an offloaded namespace; the next plan is empty; `destroy` removes the
//! peering and then uninstalls both releases (`helm uninstall --wait`), leaving no peering object and no release
//! (`helm list --all`).
//!
//! Liqo's tutorial installs the chart with hashicorp/helm's `helm_release`. That provider cannot be built here: the
//! Go module proxy this machine reaches serves none of its 2.x or 3.x commits (its release tags are not Go module
//! versions, so only pseudo-versions could name them, and every one tried is refused; only 1.3.2, from 2020, is
//! served, and its dependencies are not). Helm's own command line, run by `terraform_data`, makes the same release.
use anyhow::{Context, Result, ensure};
use liqo_acceptance::chain::copy_example;
use liqo_acceptance::ground::{LiqoMode, Options};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};

const MAIN_TF: &str = include_str!("liqo_installed/main.tf");

async fn installed_and_peered(ground: &Ground, cli: Cli) -> Result<()> {
    let work = Workdir::uninitialised(cli).await?;
    copy_example(&work, "peering")?;
    work.write("main.tf", MAIN_TF)?;
    let liqo = ground.liqo_chart()?;
    let mut clusters = serde_json::Map::new();
    for cluster in [MILAN, ROME] {
        let values = format!("{cluster}-liqo-values.json");
        work.write(&values, &serde_json::to_string_pretty(&ground.liqo_values(cluster)?)?)?;
        clusters.insert(
            cluster.to_owned(),
            serde_json::json!({
                "kubeconfig": ground.kubeconfig(cluster).display().to_string(),
                "values": work.path().join(values).display().to_string(),
            }),
        );
    }
    work.write_vars(&serde_json::json!({
        "clusters": clusters,
        "helm": liqo.helm.display().to_string(),
        "liqo_chart": liqo.chart.display().to_string(),
    }))?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "{init}");

    let applied = work.apply().await.context("one apply: clusters, Liqo on both, the peering")?;
    ensure!(applied.stdout.contains("Resources: 12 added"), "one apply creates everything:\n{}", applied.stdout);
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after the one apply is not empty:\n{}", plan.run().stdout);

    work.destroy().await?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await?;
    for cluster in [MILAN, ROME] {
        let releases = ground.helm_releases(cluster).await?;
        ensure!(
            !releases.iter().any(|r| r == "liqo"),
            "{cli}: Liqo's release is still on {cluster} after destroy: {releases:?}"
        );
        let left = liqo_objects(&ground.client(cluster).await?).await?;
        eprintln!("[liqo_installed] {cli}: {cluster} after uninstall: {left:?}");
    }
    Ok(())
}

/// Pods in Liqo's namespace and Liqo's IPAM objects anywhere, as `kind namespace/name (finalizers)`.
async fn liqo_objects(client: &kube::Client) -> Result<Vec<String>> {
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
    let mut found = Vec::new();
    for (group, version, kind, plural, namespace) in [
        ("", "v1", "Pod", "pods", Some("liqo")),
        ("ipam.liqo.io", "v1alpha1", "Network", "networks", None),
        ("ipam.liqo.io", "v1alpha1", "IP", "ips", None),
        ("core.liqo.io", "v1beta1", "ForeignCluster", "foreignclusters", None),
    ] {
        let resource = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = match namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        for object in api.list(&ListParams::default()).await.with_context(|| format!("listing {kind}"))? {
            let meta = &object.metadata;
            found.push(format!(
                "{kind} {}/{} {:?}",
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
                meta.finalizers.clone().unwrap_or_default()
            ));
        }
    }
    Ok(found)
}

#[tokio::test]
async fn liqo_installed_and_peered_in_one_apply() -> Result<()> {
    let clients = Cli::available();
    let grounds =
        futures::future::join_all(clients.iter().map(|_| {
            Ground::start_with(&[MILAN, ROME], Options { liqo: LiqoMode::installable(), ..Options::default() })
        }))
        .await
        .into_iter()
        .collect::<Result<Vec<Ground>>>()?;
    tf::each_client(clients.iter().copied().zip(&grounds).map(|(cli, ground)| (cli, installed_and_peered(ground, cli))))
        .await
        .map(drop)
}
