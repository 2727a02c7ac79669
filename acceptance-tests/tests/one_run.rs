//! The clusters, their provider blocks and the peering in one configuration and one `apply`, on real Liqo
//! (`tests/one_run/main.tf`; `terraform_data` stands in for the resources that create the clusters, so both provider
//! blocks are unknown while the first plan is made):
//! - without `depends_on` on the module block, its data sources are read while planning and the plan fails with
//!   "Provider configuration not known yet", naming the unknown attributes and `depends_on` as the way;
//! - with it, one `apply` creates the clusters' stand-ins and the whole peering — the virtual node made by the
//!   module's `virtual_node` (liqo_virtual_node, with its label and the selector of milan's nodes), not by Liqo —
//!   the next plan is empty and `destroy` leaves nothing;
//! - with a client that allows deferral (Terraform 1.16.4 built with experiments, run with `-allow-deferral`; HCP
//!   Terraform Stacks always allows it), the configuration without `depends_on` plans: the provider answers the
//!   data sources deferred (`PROVIDER_CONFIG_UNKNOWN`) and Terraform defers what needs them; the first apply makes
//!   the rest, the second (now with both provider blocks known) the deferred part; then the plan is empty and
//!   `destroy` leaves nothing.
use anyhow::{Context, Result, ensure};
use liqo_acceptance::chain::copy_example;
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};
use liqo_schema::liqo::{VirtualNode, labels};

const MAIN_TF: &str = include_str!("one_run/main.tf");
const DEPENDS_ON: &str = "  depends_on = [terraform_data.milan, terraform_data.rome]\n";

async fn one_run(ground: &Ground, cli: Cli) -> Result<()> {
    if cli == Cli::TerraformExperiments {
        return deferred(ground, cli).await;
    }
    let work = without_depends_on(ground, cli).await?;

    let refused = work.run(&["plan", "-input=false", "-no-color"]).await?;
    ensure!(!refused.success(), "the plan without depends_on reads the data sources, which cannot work:\n{refused}");
    let said = liqo_acceptance::observe::flat(&refused.stderr);
    for needle in ["Provider configuration not known yet", "`kubernetes.config_path`", "depends_on"] {
        ensure!(said.contains(needle), "the error does not say {needle:?}:\n{said}");
    }

    work.write("main.tf", MAIN_TF)?;
    let applied = work.apply().await.context("one apply: the clusters' stand-ins and the peering")?;
    ensure!(applied.stdout.contains("Resources: 11 added"), "one apply creates everything:\n{}", applied.stdout);
    module_virtual_node(ground).await?;
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after the one apply is not empty:\n{}", plan.run().stdout);
    work.destroy().await?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await
}

/// rome's one VirtualNode is the module's: named after milan, made by this provider (its mark), with the label and
/// the offloading patch of `virtual_node` in one_run/main.tf.
async fn module_virtual_node(ground: &Ground) -> Result<()> {
    let nodes: kube::Api<VirtualNode> = kube::Api::all(ground.client(ROME).await?);
    let made = nodes.list(&Default::default()).await?.items;
    let [vn] = made.as_slice() else {
        let names: Vec<_> = made.iter().map(|vn| vn.metadata.name.clone()).collect();
        anyhow::bail!("rome has the VirtualNodes {names:?}, not the module's one");
    };
    let (name, spec) = (vn.metadata.name.as_deref(), &vn.spec);
    let marked = vn.metadata.labels.as_ref().and_then(|l| l.get(labels::MANAGED_BY)).map(String::as_str)
        == Some("terraform-provider-liqo");
    let label = spec.labels.as_ref().and_then(|l| l.get("example.com/pool")).map(String::as_str);
    let patch = spec.offloading_patch.clone().unwrap_or_default();
    let selector = patch.node_selector.unwrap_or_default();
    ensure!(
        name == Some(MILAN)
            && marked
            && label == Some("one-run")
            && selector.get("kubernetes.io/os").map(String::as_str) == Some("linux"),
        "rome's VirtualNode is not the module's virtual_node (name {name:?}, labels {:?}, spec {spec:?})",
        vn.metadata.labels
    );
    Ok(())
}

/// The deferral path: `-allow-deferral` on the configuration without `depends_on`.
async fn deferred(ground: &Ground, cli: Cli) -> Result<()> {
    let work = without_depends_on(ground, cli).await?;
    let plan = work.run(&["plan", "-allow-deferral", "-input=false", "-no-color", "-out=deferred.tfplan"]).await?;
    ensure!(plan.success(), "{cli}: the plan with -allow-deferral defers the data sources instead of failing:\n{plan}");
    let shown = work.run(&["show", "-json", "deferred.tfplan"]).await?;
    ensure!(shown.success(), "{cli}: show of the deferred plan:\n{shown}");
    let shown: serde_json::Value = serde_json::from_str(&shown.stdout).context("plan JSON")?;
    let deferred: Vec<(String, String)> = shown["deferred_changes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["resource_change"]["address"].as_str().unwrap_or_default().to_owned(),
                d["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    eprintln!("[one_run] {cli}: deferred by the plan: {deferred:?}");
    let data_sources_deferred = deferred
        .iter()
        .any(|(address, reason)| address.contains("data.liqo_cluster") && reason == "provider_config_unknown");
    ensure!(
        data_sources_deferred,
        "{cli}: the plan does not defer the liqo_cluster data sources for their provider configuration: {deferred:?}\n{}",
        plan.stdout
    );
    let mut added = 0;
    for round in 1..=2 {
        let applied = work.run(&["apply", "-allow-deferral", "-auto-approve", "-input=false", "-no-color"]).await?;
        ensure!(applied.success(), "{cli}: apply {round} with -allow-deferral:\n{applied}");
        added += resources_added(&applied.stdout)
            .with_context(|| format!("{cli}: apply {round} says no count:\n{}", applied.stdout))?;
        eprintln!("[one_run] {cli}: apply {round} with -allow-deferral: {added} resources added so far");
    }
    ensure!(added == 11, "{cli}: the two applies made {added} resources, not the configuration's 11");
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "{cli}: the plan after the deferred apply is not empty:\n{}", plan.run().stdout);
    work.destroy().await?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await
}

/// N of `Resources: N added` in an apply's output.
fn resources_added(stdout: &str) -> Option<u32> {
    let rest = &stdout[stdout.find("Resources: ")? + "Resources: ".len()..];
    rest.split_whitespace().next()?.parse().ok()
}

/// examples/peering with tests/one_run/main.tf without its `depends_on`, initialised.
async fn without_depends_on(ground: &Ground, cli: Cli) -> Result<Workdir> {
    let work = Workdir::uninitialised(cli).await?;
    copy_example(&work, "peering")?;
    ensure!(MAIN_TF.contains(DEPENDS_ON), "one_run/main.tf lost its depends_on line");
    work.write("main.tf", &MAIN_TF.replace(DEPENDS_ON, ""))?;
    let vars: String =
        [MILAN, ROME].iter().map(|c| format!("{c}_kubeconfig = \"{}\"\n", ground.kubeconfig(c).display())).collect();
    work.write("terraform.tfvars", &vars)?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "{init}");
    Ok(work)
}

#[tokio::test]
async fn clusters_and_peering_in_one_apply() -> Result<()> {
    let mut clients = Cli::available();
    if clients.contains(&Cli::Terraform) {
        clients.push(Cli::TerraformExperiments);
    }
    tf::each_client_on_own_ground(clients, |ground, cli| Box::pin(one_run(ground, cli))).await
}
