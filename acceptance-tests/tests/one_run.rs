//! The clusters, their provider blocks and the peering in one configuration and one `apply`, on real Liqo
//! (`tests/one_run/main.tf`; `terraform_data` stands in for the resources that create the clusters, so both provider
//! blocks are unknown while the first plan is made):
//! - without `depends_on` on the module block, its data sources are read while planning and the plan fails with
//!   "Provider configuration not known yet", naming the unknown attributes and `depends_on` as the way;
//! - with it, one `apply` creates the clusters' stand-ins and the whole peering, the next plan is empty and
//!   `destroy` leaves nothing.
use anyhow::{Context, Result, ensure};
use liqo_acceptance::chain::copy_example;
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN, ROME, inventory};

const MAIN_TF: &str = include_str!("one_run/main.tf");
const DEPENDS_ON: &str = "  depends_on = [terraform_data.milan, terraform_data.rome]\n";

async fn one_run(ground: &Ground, cli: Cli) -> Result<()> {
    let work = Workdir::uninitialised(cli).await?;
    copy_example(&work, "peering")?;
    ensure!(MAIN_TF.contains(DEPENDS_ON), "one_run/main.tf lost its depends_on line");
    work.write("main.tf", &MAIN_TF.replace(DEPENDS_ON, ""))?;
    let vars: String =
        [MILAN, ROME].iter().map(|c| format!("{c}_kubeconfig = \"{}\"\n", ground.kubeconfig(c).display())).collect();
    work.write("terraform.tfvars", &vars)?;
    let init = work.run(&["init", "-input=false", "-no-color"]).await?;
    ensure!(init.success(), "{init}");

    let refused = work.run(&["plan", "-input=false", "-no-color"]).await?;
    ensure!(!refused.success(), "the plan without depends_on reads the data sources, which cannot work:\n{refused}");
    let said = liqo_acceptance::observe::flat(&refused.stderr);
    for needle in ["Provider configuration not known yet", "`kubernetes.config_path`", "depends_on"] {
        ensure!(said.contains(needle), "the error does not say {needle:?}:\n{said}");
    }

    work.write("main.tf", MAIN_TF)?;
    let applied = work.apply().await.context("one apply: the clusters' stand-ins and the peering")?;
    ensure!(applied.stdout.contains("Resources: 10 added"), "one apply creates everything:\n{}", applied.stdout);
    let plan = work.plan().await?;
    ensure!(plan.is_empty(), "the plan after the one apply is not empty:\n{}", plan.run().stdout);
    work.destroy().await?;
    inventory::nothing_left(ground, &[MILAN, ROME]).await
}

#[tokio::test]
async fn clusters_and_peering_in_one_apply() -> Result<()> {
    tf::each_client_on_own_ground(Cli::available(), |ground, cli| Box::pin(one_run(ground, cli))).await
}
