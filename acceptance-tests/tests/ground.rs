//! The ground's own tests: each one depends on a real API server or a real controller-manager, so a fake or
//! half-started ground fails them.
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding, RoleRef, Subject};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, Client};
use liqo_acceptance::ground::{FAULTS_CONFIGMAP, LiqoMode, Options, audit, kubeconfig, pki, process};
use liqo_acceptance::observe::{Seen, create_namespace, eventually, until_blocking};
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels;
use serde_json::json;

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn object(resource: &ApiResource, namespace: &str, name: &str, spec: serde_json::Value) -> DynamicObject {
    let mut object = DynamicObject::new(name, resource).within(namespace);
    object.data = json!({ "spec": spec });
    object
}

#[tokio::test]
async fn every_cluster_is_bootstrapped_like_a_liqo_1_2_installation() -> Result<()> {
    let ground = Ground::shared();
    let expected_crds = std::fs::read_dir(liqo_acceptance::ground::LiqoCrds::locate()?.dir)?
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "yaml")))
        .count();
    for cluster in ground.clusters() {
        let client = ground.client(&cluster.name).await?;
        let name = &cluster.name;

        let crds = Api::<CustomResourceDefinition>::all(client.clone()).list(&ListParams::default()).await?;
        let established =
            crds.items
                .iter()
                .filter(|crd| crd.spec.group.ends_with("liqo.io"))
                .filter(|crd| {
                    crd.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|conditions| {
                        conditions.iter().any(|c| c.type_ == "Established" && c.status == "True")
                    })
                })
                .count();
        assert_eq!(established, expected_crds, "{name}: every Liqo CRD must be Established");

        let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), labels::DEFAULT_LIQO_NAMESPACE);
        let selector = format!("{}={}", labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME);
        let found = config_maps.list(&ListParams::default().labels(&selector)).await?;
        assert_eq!(found.items.len(), 1, "{name}: exactly one ConfigMap labelled {selector}");
        let cluster_id = found.items[0].data.as_ref().and_then(|d| d.get(labels::CLUSTER_ID_KEY)).cloned();
        assert_eq!(cluster_id.as_deref(), Some(name.as_str()), "{name}: CLUSTER_ID");

        let networks: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            labels::DEFAULT_LIQO_NAMESPACE,
            &resource("ipam.liqo.io", "v1alpha1", "Network", "networks"),
        );
        for (kind, cidr) in [
            (labels::NETWORK_TYPE_POD_CIDR, &cluster.pod_cidr),
            (labels::NETWORK_TYPE_EXTERNAL_CIDR, &cluster.external_cidr),
        ] {
            let selector = format!("{}={kind}", labels::NETWORK_TYPE);
            let found = networks.list(&ListParams::default().labels(&selector)).await?;
            assert_eq!(found.items.len(), 1, "{name}: one Network labelled {selector}");
            assert_eq!(found.items[0].data["status"]["cidr"], json!(cidr), "{name}: status.cidr of the {kind} Network");
        }

        for (kind, plural, template) in [
            ("WgGatewayServerTemplate", "wggatewayservertemplates", labels::WIREGUARD_SERVER_TEMPLATE),
            ("WgGatewayClientTemplate", "wggatewayclienttemplates", labels::WIREGUARD_CLIENT_TEMPLATE),
        ] {
            let api: Api<DynamicObject> = Api::namespaced_with(
                client.clone(),
                labels::DEFAULT_LIQO_NAMESPACE,
                &resource("networking.liqo.io", "v1beta1", kind, plural),
            );
            let found = api.get(template).await.with_context(|| format!("{name}: {kind} liqo/{template}"))?;
            assert!(
                found.data["spec"]["template"]["spec"].is_object(),
                "{name}: {kind} liqo/{template} has a template body"
            );
        }

        let role = Api::<ClusterRole>::all(client.clone()).get(labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE).await?;
        let role_labels = role.metadata.labels.unwrap_or_default();
        assert_eq!(role_labels.get(labels::APP_NAME).map(String::as_str), Some(labels::REMOTE_CONTROLPLANE_APP_NAME));
        assert!(
            role.rules
                .unwrap_or_default()
                .iter()
                .any(|rule| { rule.resources.as_ref().is_some_and(|r| r.iter().any(|r| r == "resourceslices")) }),
            "{name}: liqo-remote-controlplane must grant access to resourceslices"
        );
    }
    Ok(())
}

#[tokio::test]
async fn an_invalid_gateway_server_is_rejected_by_the_crd_schema() -> Result<()> {
    let ground = Ground::shared();
    let client = ground.client(MILAN).await?;
    create_namespace(&client, "ground-schema").await?;
    let gateway_servers = resource("networking.liqo.io", "v1beta1", "GatewayServer", "gatewayservers");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "ground-schema", &gateway_servers);

    let invalid = object(
        &gateway_servers,
        "ground-schema",
        "invalid",
        json!({
            "endpoint": {"serviceType": "Teleport", "port": 51840},
            "mtu": 1340,
        }),
    );
    match api.create(&PostParams::default(), &invalid).await {
        Err(kube::Error::Api(status)) if status.is_invalid() => {
            assert!(status.message.contains("serviceType"), "the rejection must name the field: {}", status.message);
        }
        other => panic!(
            "GatewayServer ground-schema/invalid with serviceType Teleport must be rejected as Invalid, got {other:?}"
        ),
    }

    // The same object with a valid enum value is accepted, so the rejection above was the schema's doing.
    let valid = object(
        &gateway_servers,
        "ground-schema",
        "valid",
        json!({
            "endpoint": {"serviceType": "NodePort", "port": 51840},
            "mtu": 1340,
        }),
    );
    api.create(&PostParams::default(), &valid).await.context("a valid GatewayServer must be accepted")?;
    Ok(())
}

#[tokio::test]
async fn a_csr_is_signed_and_the_certificate_is_scoped_to_the_tenant_namespace() -> Result<()> {
    let ground = Ground::shared();
    let admin = ground.client(MILAN).await?;
    let (tenant, elsewhere) = ("ground-tenant-rome", "ground-not-rome");
    create_namespace(&admin, tenant).await?;
    create_namespace(&admin, elsewhere).await?;

    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some(labels::REMOTE_CONTROLPLANE_ROLE_BINDING.into()),
            namespace: Some(tenant.into()),
            ..Default::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "User".into(),
            name: ROME.into(),
            ..Default::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(admin.clone(), tenant).create(&PostParams::default(), &binding).await?;

    // The consumer's credentials, the way liqo_tenant mints them: CN=<consumer>, O=liqo.io, signed by the
    // controller-manager after approval.
    let (key_pem, csr_pem) = pki::client_key_and_csr(ROME, Some(labels::CONTROL_PLANE_ORGANIZATION))?;
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let csr = CertificateSigningRequest {
        metadata: ObjectMeta { name: Some("ground-rome".into()), ..Default::default() },
        spec: CertificateSigningRequestSpec {
            request: ByteString(csr_pem.into_bytes()),
            signer_name: "kubernetes.io/kube-apiserver-client".into(),
            usages: Some(vec!["digital signature".into(), "client auth".into()]),
            expiration_seconds: Some(3600),
            ..Default::default()
        },
        ..Default::default()
    };
    csrs.create(&PostParams::default(), &csr).await?;
    let approval = json!({"status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "GroundTest", "message": "approved by the ground's own test",
    }]}});
    csrs.patch_subresource("approval", "ground-rome", &PatchParams::default(), &Patch::Merge(&approval)).await?;
    let certificate = eventually(Duration::from_secs(30), "kube-controller-manager signing CSR ground-rome", || {
        let csrs = csrs.clone();
        async move {
            let csr = csrs.get("ground-rome").await?;
            Ok(csr.status.and_then(|s| s.certificate).map(|c| String::from_utf8_lossy(&c.0).into_owned()))
        }
    })
    .await?;
    assert!(certificate.contains("BEGIN CERTIFICATE"), "status.certificate must be PEM: {certificate}");

    let cluster = ground.cluster(MILAN);
    let rome_kubeconfig =
        kubeconfig::render(MILAN, ROME, &cluster.api_server, &ground.ca_certificate(MILAN)?, &certificate, &key_pem)?;
    let as_rome = kubeconfig::client_from_yaml(&rome_kubeconfig).await?;
    let slices = resource("authentication.liqo.io", "v1beta1", "ResourceSlice", "resourceslices");
    let spec =
        json!({"class": "default", "providerClusterID": MILAN, "consumerClusterID": ROME, "resources": {"cpu": "1"}});

    let allowed: Api<DynamicObject> = Api::namespaced_with(as_rome.clone(), tenant, &slices);
    allowed
        .create(&PostParams::default(), &object(&slices, tenant, "rome", spec.clone()))
        .await
        .with_context(|| format!("the certificate of User {ROME} must create ResourceSlices in {tenant}"))?;

    let denied: Api<DynamicObject> = Api::namespaced_with(as_rome, elsewhere, &slices);
    match denied.create(&PostParams::default(), &object(&slices, elsewhere, "rome", spec)).await {
        Err(kube::Error::Api(status)) if status.is_forbidden() => Ok(()),
        other => panic!("User {ROME} must be Forbidden to create ResourceSlices in {elsewhere}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_deleted_namespace_finishes_terminating_and_orphans_are_collected() -> Result<()> {
    let ground = Ground::shared();
    let client = ground.client(ROME).await?;
    let namespace = "ground-doomed";
    create_namespace(&client, namespace).await?;

    // Garbage collector: a dependent ConfigMap goes away with its owner.
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let owner = config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta { name: Some("owner".into()), ..Default::default() },
                ..Default::default()
            },
        )
        .await?;
    let dependent = ConfigMap {
        metadata: ObjectMeta {
            name: Some("dependent".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner.metadata.uid.clone().context("a created object has a uid")?,
                ..Default::default()
            }]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".into(), "v".into())])),
        ..Default::default()
    };
    config_maps.create(&PostParams::default(), &dependent).await?;
    config_maps.delete("owner", &DeleteParams::default()).await?;
    eventually(Duration::from_secs(60), "the garbage collector deleting ConfigMap ground-doomed/dependent", || {
        let config_maps = config_maps.clone();
        async move { Ok(config_maps.get_opt("dependent").await?.is_none().then_some(())) }
    })
    .await?;

    // Namespace controller: content (including a Liqo custom object no simulated controller touches) is removed
    // and the namespace disappears.
    let quotas = resource("offloading.liqo.io", "v1beta1", "Quota", "quotas");
    Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &quotas)
        .create(
            &PostParams::default(),
            &object(&quotas, namespace, "peer", json!({"user": ROME, "resources": {"cpu": "1"}})),
        )
        .await?;
    let namespaces: Api<Namespace> = Api::all(client);
    namespaces.delete(namespace, &DeleteParams::default()).await?;
    eventually(Duration::from_secs(60), "Namespace ground-doomed finishing termination", || {
        let namespaces = namespaces.clone();
        async move { Ok(namespaces.get_opt(namespace).await?.is_none().then_some(())) }
    })
    .await
}

#[tokio::test]
async fn faults_are_set_and_cleared_per_cluster() -> Result<()> {
    // The simulator's fault switches exist only on the simulated ground.
    let ground = Ground::shared_simulated();
    let faults = |client: Client| async move {
        let api: Api<ConfigMap> = Api::namespaced(client, labels::DEFAULT_LIQO_NAMESPACE);
        Ok::<_, anyhow::Error>(api.get(FAULTS_CONFIGMAP).await?.data.unwrap_or_default())
    };
    ground.set_fault(ROME, "status-delay-ms", "250").await?;
    ground.set_fault(ROME, "drop-watch", "true").await?;
    let set = faults(ground.client(ROME).await?).await?;
    assert_eq!(set.get("status-delay-ms").map(String::as_str), Some("250"));
    assert_eq!(set.get("drop-watch").map(String::as_str), Some("true"));
    assert!(faults(ground.client(MILAN).await?).await?.is_empty(), "faults are per cluster");
    ground.clear_faults(ROME).await?;
    assert!(faults(ground.client(ROME).await?).await?.is_empty(), "clear_faults removes every key");
    Ok(())
}

/// Environment variable telling [`crashing_child`] where to record its ground directory.
const CRASH_CHILD: &str = "LIQO_GROUND_CRASH_CHILD";

#[test]
fn the_processes_of_a_crashed_test_process_die_with_it() -> Result<()> {
    let record = tempfile::NamedTempFile::new()?;
    let child = std::process::Command::new(std::env::current_exe()?)
        .args(["crashing_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CRASH_CHILD, record.path())
        .output()?;
    let output = format!("{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
    assert!(!child.status.success(), "the child test process must have crashed:\n{output}");
    let dir = std::fs::read_to_string(record.path())?;
    assert!(!dir.is_empty(), "the child must have started a ground before crashing:\n{output}");
    let processes = Ground::recorded_processes(std::path::Path::new(&dir))?;
    assert!(processes.len() >= 4, "the crashed ground recorded its processes: {processes:?}");
    let ended = until_blocking(
        Duration::from_secs(10),
        Duration::from_millis(100),
        "the crashed test process's ground processes to end with it",
        || {
            let survivors: Vec<&str> =
                processes.iter().filter(|p| process::is_running(p)).map(|p| p.name.as_str()).collect();
            Ok(match survivors.is_empty() {
                true => Seen::Done(()),
                false => Seen::NotYet(format!("processes outlived the crashed test process: {survivors:?}")),
            })
        },
    );
    let _ = std::fs::remove_dir_all(&dir);
    ended
}

#[tokio::test]
async fn the_audit_log_names_the_providers_requests_and_survives_an_api_server_restart() -> Result<()> {
    // Its own ground: the restart would disturb the tests sharing the shared one.
    let ground =
        Ground::start_with(&["audited"], Options { liqo: LiqoMode::ObjectsOnly, ..Options::default() }).await?;
    let as_provider = kubeconfig::client(ground.provider_kubeconfig("audited")).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(as_provider.clone(), "default");
    let marker = |name: &str| ConfigMap {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        ..Default::default()
    };
    configmaps.create(&PostParams::default(), &marker("before-restart")).await?;

    let audit_log = ground.audit_log("audited");
    let created = |name: &'static str| {
        let audit_log = audit_log.clone();
        move || {
            let audit_log = audit_log.clone();
            async move {
                let events = audit::read(&audit_log)?;
                Ok(events.into_iter().find(|e| e.verb == "create" && e.name.as_deref() == Some(name)))
            }
        }
    };
    // The log backend writes asynchronously from a buffer: the event follows the response shortly.
    let event =
        eventually(Duration::from_secs(10), "the audit event of the ConfigMap's creation", created("before-restart"))
            .await?;
    assert_eq!(event.user, audit::PROVIDER_USER, "{event:?}");
    assert_eq!(event.resource.as_deref(), Some("configmaps"), "{event:?}");
    assert_eq!(event.namespace.as_deref(), Some("default"), "{event:?}");
    assert_eq!(event.code, Some(201), "{event:?}");
    let admin_events = audit::read(&audit_log)?.into_iter().filter(|e| e.user == "admin").count();
    assert!(admin_events > 0, "the harness's bootstrap requests are logged under its own user, admin");

    let began = Instant::now();
    ground.restart_api_server("audited", Duration::from_secs(1)).await?;
    let restarted_after = began.elapsed();
    assert!(restarted_after >= Duration::from_secs(1), "the API server must stay down for the requested time");
    eprintln!("[ground] API server restarted and ready after {:.1}s", restarted_after.as_secs_f64());
    // The same client reconnects; the data is still in etcd and the restarted server audits to the same file.
    configmaps.get("before-restart").await.context("the ConfigMap created before the restart")?;
    configmaps.create(&PostParams::default(), &marker("after-restart")).await?;
    eventually(Duration::from_secs(10), "the audit event of a creation after the restart", created("after-restart"))
        .await?;
    Ok(())
}

/// Run only by the test above, in a child process: starts a ground and aborts (no unwinding, no destructors),
/// as a test process killed by a signal or a crash would.
#[tokio::test]
#[ignore = "helper process of the_processes_of_a_crashed_test_process_die_with_it"]
async fn crashing_child() {
    let Some(record) = std::env::var_os(CRASH_CHILD) else { return };
    let ground = Ground::start(&["crash"]).await.expect("the crash ground must start");
    std::fs::write(record, ground.dir().display().to_string()).expect("recording the ground directory");
    std::process::abort();
}
