//! `liqo_tenant` on a Liqo installed under another Helm `nameOverride`: the control-plane ClusterRole is then
//! `<name>-remote-controlplane`, and Liqo finds it by its label `app.kubernetes.io/name=remote-controlplane`, not
//! by name. This file renames the role on `milan`, so it runs in a process (and a ground) of its own.
use std::collections::BTreeMap;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use liqo_acceptance::ground::kubeconfig::ConsumerKey;
use liqo_acceptance::observe::{attributes, flat};
use liqo_acceptance::tf::{self, Cli, Workdir};
use liqo_acceptance::{Ground, MILAN};
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{ResourceSlice, ResourceSliceSpec};

const RENAMED: &str = "acme-remote-controlplane";
const EXTRA: &str = "leftover-remote-controlplane";

/// liqo_tenant on milan for one consumer, whose cluster ID the test fills in: tests/tenant.rs's configuration,
/// its other variables left unset.
const TENANT: &str = include_str!("tenant/tenant.tf");

/// A copy of a control-plane role (rules and labels) under another name.
async fn copy_role(client: &Client, from: &str, name: &str) -> Result<()> {
    let api: Api<ClusterRole> = Api::all(client.clone());
    let original = api.get(from).await?;
    let copy = ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: original.metadata.labels.clone(),
            ..ObjectMeta::default()
        },
        rules: original.rules.clone(),
        aggregation_rule: None,
    };
    api.create(&PostParams::default(), &copy).await?;
    Ok(())
}

async fn renamed(ground: &Ground, cli: Cli) -> Result<()> {
    let milan = ground.client(MILAN).await?;
    let consumer = format!("renamed-{}", cli.name());
    // The test plays the consumer: it keeps the key and gives liqo_tenant the CSR.
    let key = ConsumerKey::new(&consumer)?;
    let work = Workdir::new(cli, &tf::provider_config(ground)).await?;
    work.write("tenant.tf", TENANT)?;
    work.write_vars(&serde_json::json!({ "consumer_cluster_id": consumer }))?;
    work.write("consumer.csr", &key.csr_pem)?;
    work.apply().await?;
    let attrs = attributes(&work, "liqo_tenant.consumer")?;
    let ns = attrs["tenant_namespace"].as_str().context("tenant_namespace")?.to_owned();

    // The binding names the labelled role, the way Liqo names its bindings, and the consumer is authorised.
    let bindings: Api<RoleBinding> = Api::namespaced(milan.clone(), &ns);
    let binding = bindings.get(&format!("liqo-binding-{RENAMED}")).await.context("the binding to the renamed role")?;
    ensure!(binding.role_ref.name == RENAMED, "{cli}: roleRef {:?}", binding.role_ref);
    let as_consumer = key.client(&attrs).await?;
    let mut rs = ResourceSlice::new(
        "renamed",
        ResourceSliceSpec {
            consumer_cluster_id: Some(consumer.clone()),
            provider_cluster_id: Some(MILAN.into()),
            class: Some("default".into()),
            resources: Some(BTreeMap::from([("cpu".to_owned(), Quantity("1".into()))])),
            ..Default::default()
        },
    );
    rs.metadata.labels = Some(BTreeMap::from([(labels::REMOTE_CLUSTER_ID.to_owned(), consumer.clone())]));
    let slices: Api<ResourceSlice> = Api::namespaced(as_consumer, &ns);
    slices.create(&PostParams::default(), &rs).await.context("the consumer may write its ResourceSlice (no 403)")?;
    Api::<ResourceSlice>::namespaced(milan.clone(), &ns).delete("renamed", &DeleteParams::default()).await?;
    ensure!(work.plan().await?.is_empty(), "{cli}: the plan after apply must be empty");

    // Two roles carry the label: the provider refuses to guess, naming both and the label.
    copy_role(&milan, RENAMED, EXTRA).await?;
    let run = work.run(&["plan", "-input=false", "-no-color"]).await?;
    Api::<ClusterRole>::all(milan.clone()).delete(EXTRA, &DeleteParams::default()).await?;
    ensure!(!run.success(), "{cli}: two labelled roles must fail the plan's refresh");
    let stderr = flat(&run.stderr);
    for needle in ["app.kubernetes.io/name=remote-controlplane", RENAMED, EXTRA, "exactly one"] {
        ensure!(stderr.contains(needle), "{cli}: the error names {needle:?}:\n{}", run.stderr);
    }

    work.destroy().await?;
    ensure!(bindings.get_opt(&format!("liqo-binding-{RENAMED}")).await?.is_none(), "{cli}: binding deleted");
    Ok(())
}

#[tokio::test]
async fn a_renamed_liqo_installation_gets_a_binding_to_its_own_role() -> Result<()> {
    let ground = Ground::shared();
    let milan = ground.client(MILAN).await?;
    // Rename the installed role: a copy under the nameOverride-style name, then the original goes.
    copy_role(&milan, labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE, RENAMED).await?;
    let roles: Api<ClusterRole> = Api::all(milan.clone());
    let original = roles.get(labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE).await?;
    roles.delete(labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE, &DeleteParams::default()).await?;
    let result = async {
        for cli in Cli::all() {
            renamed(ground, cli).await.with_context(|| format!("with {cli}"))?;
        }
        anyhow::Ok(())
    }
    .await;
    // Put the installation back as it was, for anything else this process runs.
    roles.delete(RENAMED, &DeleteParams::default()).await?;
    let restored = ClusterRole {
        metadata: ObjectMeta {
            name: original.metadata.name.clone(),
            labels: original.metadata.labels.clone(),
            ..ObjectMeta::default()
        },
        rules: original.rules.clone(),
        aggregation_rule: None,
    };
    roles.create(&PostParams::default(), &restored).await?;
    result
}
