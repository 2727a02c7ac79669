//! The simulated Liqo control plane, on the real ground: every status transition it promises happens, driven
//! only by the objects a peering tool would create (admin clients play the provider's part here).
//!
//! Tests that use the two real clusters as peers of each other (gateways between milan and rome, replicated
//! ResourceSlices, faults) hold [`PEERING`]: Liqo allows one gateway per peer and faults are per cluster, so
//! they cannot overlap. Tests with made-up peer IDs run in parallel, holding [`WHOLE_CLUSTER`] for reading: the
//! `drop-watch` and `status-delay-ms` faults slow every object on a cluster, not only the faulted test's, and hold
//! it for writing.
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{CertificateSigningRequest, CertificateSigningRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use liqo_acceptance::ground::{audit, kubeconfig, pki};
use liqo_acceptance::observe::{Seen, until};
use liqo_acceptance::simulator::SIMULATED_ANNOTATION;
use liqo_acceptance::{Ground, MILAN, ROME};
use liqo_schema::liqo::labels::{self, REMOTE_CLUSTER_ID};
use liqo_schema::liqo::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::{Mutex, RwLock};
use x25519_dalek::{PublicKey as WgPublicKey, StaticSecret};

static PEERING: Mutex<()> = Mutex::const_new(());
static WHOLE_CLUSTER: RwLock<()> = RwLock::const_new(());
const TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

// ---------------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------------

fn string_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

fn meta(ns: &str, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(ns.into()),
        labels: Some(string_map(labels)),
        ..Default::default()
    }
}

async fn create<K>(client: &Client, obj: &K) -> Result<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug,
{
    let ns = obj.namespace().context("namespaced object without namespace")?;
    Api::<K>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), obj)
        .await
        .with_context(|| format!("creating {} {ns}/{}", K::kind(&()), obj.name_any()))
}

/// A namespace with the labels Liqo puts on the tenant namespace for `peer`.
async fn tenant_namespace(client: &Client, name: &str, peer: &str) -> Result<()> {
    namespace(client, name, &[(labels::TENANT_NAMESPACE, labels::TRUE), (REMOTE_CLUSTER_ID, peer)]).await
}

async fn namespace(client: &Client, name: &str, labels: &[(&str, &str)]) -> Result<()> {
    let ns = Namespace {
        metadata: ObjectMeta { name: Some(name.into()), labels: Some(string_map(labels)), ..Default::default() },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating Namespace {name}"))?;
    Ok(())
}

/// Deletes namespaces and waits until they are gone (the simulator must release every finalizer in them).
async fn delete_namespaces(client: &Client, names: &[&str]) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    for name in names {
        api.delete(name, &DeleteParams::default()).await.with_context(|| format!("deleting Namespace {name}"))?;
    }
    for name in names {
        wait_gone(&api, name).await?;
    }
    Ok(())
}

/// Polls the named object until `done` holds; the error shows the last state seen.
async fn wait<K>(api: &Api<K>, name: &str, what: &str, done: impl Fn(&K) -> bool) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    until(TIMEOUT, POLL, &format!("{} {name}: {what}", K::kind(&())), || async {
        let last = api.get_opt(name).await.with_context(|| format!("reading {} {name}", K::kind(&())))?;
        Ok(match last {
            Some(obj) if done(&obj) => Seen::Done(obj),
            Some(obj) => Seen::NotYet(format!("\n{}", serde_yaml::to_string(&obj).unwrap_or_default())),
            None => Seen::NotYet("absent".into()),
        })
    })
    .await
}

async fn wait_gone<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    until(TIMEOUT, POLL, &format!("{} {name} to go", K::kind(&())), || async {
        Ok(match api.get_opt(name).await? {
            None => Seen::Done(()),
            Some(obj) => Seen::NotYet(format!("\n{}", serde_yaml::to_string(&obj)?)),
        })
    })
    .await
}

/// The Events the simulator recorded about an object, with `reason`.
async fn events(client: &Client, ns: &str, name: &str, reason: &str) -> Result<Vec<Event>> {
    let list = Api::<Event>::namespaced(client.clone(), ns).list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name) && e.reason.as_deref() == Some(reason)
        })
        .collect())
}

async fn wait_event(client: &Client, ns: &str, name: &str, reason: &str) -> Result<Event> {
    let event = until(TIMEOUT, POLL, &format!("an Event {reason} about {ns}/{name}"), || async {
        Ok(events(client, ns, name, reason)
            .await?
            .into_iter()
            .next()
            .map_or_else(|| Seen::NotYet(String::new()), Seen::Done))
    })
    .await?;
    assert_eq!(event.reporting_controller.as_deref(), Some("simulated-liqo"));
    assert!(event.note.as_deref().unwrap_or_default().starts_with("simulated:"), "{event:?}");
    Ok(event)
}

fn keypair() -> ([u8; 32], [u8; 32]) {
    let private = StaticSecret::from(rand::random::<[u8; 32]>());
    let public = WgPublicKey::from(&private);
    (private.to_bytes(), *public.as_bytes())
}

fn key_secret(ns: &str, name: &str, peer: &str, (private, public): ([u8; 32], [u8; 32])) -> Secret {
    Secret {
        metadata: meta(ns, name, &[(REMOTE_CLUSTER_ID, peer), (labels::GATEWAY_RESOURCE, labels::TRUE)]),
        data: Some(BTreeMap::from([
            (labels::WIREGUARD_PRIVATE_KEY.to_owned(), ByteString(private.to_vec())),
            (labels::WIREGUARD_PUBLIC_KEY.to_owned(), ByteString(public.to_vec())),
        ])),
        ..Default::default()
    }
}

fn public_key(ns: &str, peer: &str, key: [u8; 32]) -> PublicKey {
    let mut pk = PublicKey::new(peer, PublicKeySpec { public_key: Some(ByteString(key.to_vec())) });
    pk.metadata = meta(ns, peer, &[(REMOTE_CLUSTER_ID, peer), (labels::GATEWAY_RESOURCE, labels::TRUE)]);
    pk
}

fn condition_status<'a>(conditions: Option<&'a [LiqoCondition]>, type_: &str) -> Option<&'a str> {
    find_condition(conditions, type_).map(|c| c.status.as_str())
}

fn quantities(pairs: &[(&str, &str)]) -> ResourceList {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned()))).collect()
}

// ---------------------------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn configuration_is_configured_for_its_current_generation() -> Result<()> {
    let _undisturbed = WHOLE_CLUSTER.read().await;
    let ground = Ground::shared_simulated();
    let client = ground.client(MILAN).await?;
    let ns = "sim-conf";
    tenant_namespace(&client, ns, "peer-conf").await?;
    let mut conf = Configuration::new(
        "peer-conf",
        ConfigurationSpec {
            remote: Some(ClusterConfig {
                cidr: Some(ClusterConfigCidr {
                    pod: Some(vec!["10.200.0.0/16".into()]),
                    external: Some(vec!["10.201.0.0/16".into()]),
                }),
            }),
            ..Default::default()
        },
    );
    conf.metadata = meta(ns, "peer-conf", &[(REMOTE_CLUSTER_ID, "peer-conf")]);
    create(&client, &conf).await?;
    let api: Api<Configuration> = Api::namespaced(client.clone(), ns);
    let conf = wait(&api, "peer-conf", "NetworkCIDRsConfigured=True", Configuration::cidrs_configured).await?;
    let remote = conf.status.as_ref().and_then(|s| s.remote.as_ref()).and_then(|r| r.cidr.clone()).unwrap();
    assert_eq!(remote.pod, Some(vec!["10.200.0.0/16".to_owned()]));
    assert_eq!(remote.external, Some(vec!["10.201.0.0/16".to_owned()]));
    let milan = ground.cluster(MILAN);
    let local = conf.spec.local.as_ref().and_then(|l| l.cidr.clone()).context("spec.local is filled like Liqo does")?;
    assert_eq!(local.pod, Some(vec![milan.pod_cidr.clone()]));
    assert_eq!(local.external, Some(vec![milan.external_cidr.clone()]));

    // A spec change bumps the generation: the condition follows it.
    let patch = json!({"spec": {"remote": {"cidr": {"pod": ["10.202.0.0/16"], "external": ["10.201.0.0/16"]}}}});
    let changed = api.patch("peer-conf", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    assert!(!changed.cidrs_configured(), "a new generation is not configured until the controller saw it");
    let conf = wait(&api, "peer-conf", "configured for generation 2", Configuration::cidrs_configured).await?;
    assert_eq!(conf.status.unwrap().remote.unwrap().cidr.unwrap().pod, Some(vec!["10.202.0.0/16".to_owned()]));
    delete_namespaces(&client, &[ns]).await
}

// ---------------------------------------------------------------------------------------------------------------
// Gateways and Connection
// ---------------------------------------------------------------------------------------------------------------

fn server(ns: &str, name: &str, peer: &str, secret: Option<&str>, node_port: Option<i32>) -> GatewayServer {
    let mut gs = GatewayServer::new(
        name,
        GatewayServerSpec {
            endpoint: Some(GatewayServerEndpoint {
                port: Some(51840),
                service_type: Some("NodePort".into()),
                node_port,
                load_balancer_ip: None,
            }),
            mtu: Some(1340),
            secret_ref: secret.map(|s| SecretReference { name: Some(s.into()) }),
            ..Default::default()
        },
    );
    gs.metadata = meta(ns, name, &[(REMOTE_CLUSTER_ID, peer)]);
    gs
}

#[tokio::test]
async fn gateway_server_gets_keys_endpoint_and_rendered_server() -> Result<()> {
    let _undisturbed = WHOLE_CLUSTER.read().await;
    let ground = Ground::shared_simulated();
    let client = ground.client(MILAN).await?;
    let (generated_ns, labelled_ns) = ("sim-gw-generated", "sim-gw-labelled");
    tenant_namespace(&client, generated_ns, "peer-gen").await?;
    tenant_namespace(&client, labelled_ns, "peer-lbl").await?;

    // No spec.secretRef: Liqo generates gw-<name> with a 32-byte key pair and derives a node port.
    create(&client, &server(generated_ns, "server", "peer-gen", None, None)).await?;
    let api: Api<GatewayServer> = Api::namespaced(client.clone(), generated_ns);
    let gs = wait(&api, "server", "endpoint and secretRef", |gs| {
        gs.status.as_ref().is_some_and(|s| s.endpoint.as_ref().is_some_and(|e| e.is_ready()) && s.secret_ref.is_some())
    })
    .await?;
    let status = gs.status.unwrap();
    let endpoint = status.endpoint.unwrap();
    assert_eq!(endpoint.addresses, Some(vec!["127.0.0.1".to_owned()]));
    assert!((30000..=32767).contains(&endpoint.port.unwrap()), "{endpoint:?}");
    assert_eq!(endpoint.protocol.as_deref(), Some("UDP"));
    assert_eq!(status.secret_ref.unwrap().name.as_deref(), Some("gw-server"));
    let server_ref = status.server_ref.context("status.serverRef")?;
    assert_eq!(server_ref.kind.as_deref(), Some("WgGatewayServer"));
    let wg = Api::<WgGatewayServer>::namespaced(client.clone(), generated_ns).get("server").await?;
    assert!(wg.finalizers().contains(&labels::GATEWAY_CLUSTERROLEBINDING_FINALIZER.to_owned()));
    let secret = Api::<Secret>::namespaced(client.clone(), generated_ns).get("gw-server").await?;
    let data = secret.data.clone().unwrap();
    assert_eq!(data[labels::WIREGUARD_PUBLIC_KEY].0.len(), 32);
    let private: [u8; 32] = data[labels::WIREGUARD_PRIVATE_KEY].0.clone().try_into().unwrap();
    assert_eq!(
        WgPublicKey::from(&StaticSecret::from(private)).as_bytes().as_slice(),
        data[labels::WIREGUARD_PUBLIC_KEY].0
    );
    assert_eq!(secret.annotations().get(SIMULATED_ANNOTATION).map(String::as_str), Some("true"));

    // A referenced Secret without Liqo's labels gets them, and the fixed node port is published.
    let mut unlabelled = key_secret(labelled_ns, "gw-keys", "peer-lbl", keypair());
    unlabelled.metadata.labels = None;
    create(&client, &unlabelled).await?;
    create(&client, &server(labelled_ns, "server", "peer-lbl", Some("gw-keys"), Some(30742))).await?;
    let api: Api<GatewayServer> = Api::namespaced(client.clone(), labelled_ns);
    let gs = wait(&api, "server", "endpoint", |gs| gs.status.as_ref().is_some_and(|s| s.endpoint.is_some())).await?;
    assert_eq!(gs.status.unwrap().endpoint.unwrap().port, Some(30742));
    let secret = Api::<Secret>::namespaced(client.clone(), labelled_ns).get("gw-keys").await?;
    assert_eq!(secret.labels().get(REMOTE_CLUSTER_ID).map(String::as_str), Some("peer-lbl"));
    assert_eq!(secret.labels().get(labels::GATEWAY_RESOURCE).map(String::as_str), Some("true"));

    // Namespace deletion completes: the simulator releases the WgGatewayServer finalizers.
    delete_namespaces(&client, &[generated_ns, labelled_ns]).await
}

/// Keys, Secrets and gateways of a network peering between two ground clusters.
struct Network {
    server: Client,
    client: Client,
    server_id: String,
    client_id: String,
    server_ns: String,
    client_ns: String,
    server_keys: ([u8; 32], [u8; 32]),
    client_keys: ([u8; 32], [u8; 32]),
}

impl Network {
    /// Tenant namespaces, key Secrets, the GatewayServer (waited for its endpoint) and a GatewayClient dialling
    /// it (waited for its refs); no PublicKeys yet.
    async fn gateways(
        ground: &Ground,
        server_id: &str,
        client_id: &str,
        suffix: &str,
        node_port: i32,
    ) -> Result<Network> {
        let net = Network {
            server: ground.client(server_id).await?,
            client: ground.client(client_id).await?,
            server_id: server_id.into(),
            client_id: client_id.into(),
            server_ns: format!("sim-net-{suffix}-{server_id}"),
            client_ns: format!("sim-net-{suffix}-{client_id}"),
            server_keys: keypair(),
            client_keys: keypair(),
        };
        tenant_namespace(&net.server, &net.server_ns, client_id).await?;
        tenant_namespace(&net.client, &net.client_ns, server_id).await?;
        create(&net.server, &key_secret(&net.server_ns, "gw-keys", client_id, net.server_keys)).await?;
        create(&net.client, &key_secret(&net.client_ns, "gw-keys", server_id, net.client_keys)).await?;
        create(&net.server, &server(&net.server_ns, "server", client_id, Some("gw-keys"), Some(node_port))).await?;
        let servers: Api<GatewayServer> = Api::namespaced(net.server.clone(), &net.server_ns);
        let gs = wait(&servers, "server", "endpoint", |gs| {
            gs.status.as_ref().and_then(|s| s.endpoint.as_ref()).is_some_and(|e| e.is_ready())
        })
        .await?;
        let mut gc = GatewayClient::new(
            "client",
            GatewayClientSpec {
                endpoint: gs.status.unwrap().endpoint,
                mtu: Some(1340),
                secret_ref: Some(SecretReference { name: Some("gw-keys".into()) }),
                ..Default::default()
            },
        );
        gc.metadata = meta(&net.client_ns, "client", &[(REMOTE_CLUSTER_ID, server_id)]);
        create(&net.client, &gc).await?;
        let clients: Api<GatewayClient> = Api::namespaced(net.client.clone(), &net.client_ns);
        wait(&clients, "client", "clientRef and secretRef", |gc| {
            gc.status.as_ref().is_some_and(|s| s.client_ref.is_some() && s.secret_ref.is_some())
        })
        .await?;
        Ok(net)
    }

    /// Each side gets a PublicKey holding the other side's public key.
    async fn exchange_keys(&self) -> Result<()> {
        create(&self.server, &public_key(&self.server_ns, &self.client_id, self.client_keys.1)).await?;
        create(&self.client, &public_key(&self.client_ns, &self.server_id, self.server_keys.1)).await?;
        Ok(())
    }

    async fn connection(&self, on_server: bool) -> Result<Option<Connection>> {
        let (client, ns, name) = if on_server {
            (&self.server, &self.server_ns, "gw-server")
        } else {
            (&self.client, &self.client_ns, "gw-client")
        };
        Ok(Api::<Connection>::namespaced(client.clone(), ns).get_opt(name).await?)
    }

    async fn wait_connections(&self, value: &str) -> Result<()> {
        for (client, ns, name) in
            [(&self.server, &self.server_ns, "gw-server"), (&self.client, &self.client_ns, "gw-client")]
        {
            let api: Api<Connection> = Api::namespaced(client.clone(), ns);
            wait(&api, name, &format!("status.value {value}"), |c| {
                c.status.as_ref().and_then(|s| s.value.as_deref()) == Some(value)
            })
            .await?;
        }
        Ok(())
    }

    async fn tear_down(self) -> Result<()> {
        delete_namespaces(&self.server, &[&self.server_ns]).await?;
        delete_namespaces(&self.client, &[&self.client_ns]).await
    }
}

#[tokio::test]
async fn connection_is_connected_only_while_both_sides_keys_match() -> Result<()> {
    let _peering = PEERING.lock().await;
    let ground = Ground::shared_simulated();
    let net = Network::gateways(ground, MILAN, ROME, "keys", 30999).await?;
    assert!(net.connection(true).await?.is_none(), "no Connection before a PublicKey exists");

    // Each side holds the other's public key: both Connections reach Connected.
    net.exchange_keys().await?;
    net.wait_connections(CONNECTION_CONNECTED).await?;
    let connection = net.connection(true).await?.unwrap();
    assert_eq!(connection.spec.type_.as_deref(), Some("Server"));
    assert_eq!(connection.labels().get(REMOTE_CLUSTER_ID).map(String::as_str), Some(ROME));
    assert_eq!(connection.owner_references()[0].kind, "GatewayServer");
    assert_eq!(net.connection(false).await?.unwrap().spec.type_.as_deref(), Some("Client"));

    // A wrong key on rome breaks the handshake for both sides; fixing it reconnects them.
    let rome_keys: Api<PublicKey> = Api::namespaced(net.client.clone(), &net.client_ns);
    let wrong = json!({"spec": {"publicKey": ByteString(keypair().1.to_vec())}});
    rome_keys.patch(MILAN, &PatchParams::default(), &Patch::Merge(&wrong)).await?;
    net.wait_connections(CONNECTION_ERROR).await?;
    wait_event(&net.client, &net.client_ns, "gw-client", "ConnectionError").await?;
    let right = json!({"spec": {"publicKey": ByteString(net.server_keys.1.to_vec())}});
    rome_keys.patch(MILAN, &PatchParams::default(), &Patch::Merge(&right)).await?;
    net.wait_connections(CONNECTION_CONNECTED).await?;

    // The fail-connections fault breaks only the cluster it is set on.
    ground.set_fault(ROME, "fail-connections", "true").await?;
    let result = async {
        let api: Api<Connection> = Api::namespaced(net.client.clone(), &net.client_ns);
        wait(&api, "gw-client", "Error under the fault", |c| {
            c.status.as_ref().and_then(|s| s.value.as_deref()) == Some(CONNECTION_ERROR)
        })
        .await?;
        assert_eq!(net.connection(true).await?.unwrap().status.unwrap().value.as_deref(), Some(CONNECTION_CONNECTED));
        anyhow::Ok(())
    }
    .await;
    ground.clear_faults(ROME).await?;
    result?;
    net.wait_connections(CONNECTION_CONNECTED).await?;

    // The ForeignCluster shows the networking module as liqoctl info reads it.
    let fcs: Api<ForeignCluster> = Api::all(net.server.clone());
    let fc = wait(&fcs, ROME, "networking module healthy", |fc| {
        fc.status.as_ref().and_then(|s| s.modules.as_ref()).is_some_and(|m| m.networking.is_healthy())
    })
    .await?;
    assert_eq!(fc.spec.cluster_id.as_deref(), Some(ROME));
    net.tear_down().await
}

// ---------------------------------------------------------------------------------------------------------------
// Tenant
// ---------------------------------------------------------------------------------------------------------------

fn tenant(ns: &str, consumer: &str, policy: &str, condition: &str) -> Tenant {
    let mut tenant = Tenant::new(
        consumer,
        TenantSpec {
            cluster_id: Some(consumer.into()),
            authz_policy: Some(policy.into()),
            tenant_condition: Some(condition.into()),
            ..Default::default()
        },
    );
    tenant.metadata.namespace = Some(ns.into());
    tenant
}

#[tokio::test]
async fn tenant_gets_its_namespace_finalizer_and_label() -> Result<()> {
    let _undisturbed = WHOLE_CLUSTER.read().await;
    let ground = Ground::shared_simulated();
    let client = ground.client(MILAN).await?;
    let (ns, handshake_ns) = ("sim-tenant", "sim-tenant-handshake");
    tenant_namespace(&client, ns, "consumer-t").await?;
    tenant_namespace(&client, handshake_ns, "consumer-h").await?;

    // Created without the label: Liqo's webhook adds it, the controller sets the status and its finalizer.
    create(&client, &tenant(ns, "consumer-t", AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, TENANT_CONDITION_ACTIVE)).await?;
    let api: Api<Tenant> = Api::namespaced(client.clone(), ns);
    let t = wait(&api, "consumer-t", "status.tenantNamespace", |t| {
        t.status.as_ref().and_then(|s| s.tenant_namespace.as_deref()) == Some(ns)
    })
    .await?;
    assert!(t.finalizers().contains(&labels::TENANT_FINALIZER.to_owned()));
    assert_eq!(t.labels().get(REMOTE_CLUSTER_ID).map(String::as_str), Some("consumer-t"));

    // The nonce handshake is not simulated: a KeysExchange Tenant gets a Warning, never a status.
    create(&client, &tenant(handshake_ns, "consumer-h", AUTHZ_POLICY_KEYS_EXCHANGE, TENANT_CONDITION_ACTIVE)).await?;
    wait_event(&client, handshake_ns, "consumer-h", "SignatureVerificationFailed").await?;
    let handshake = Api::<Tenant>::namespaced(client.clone(), handshake_ns).get("consumer-h").await?;
    assert!(handshake.status.and_then(|s| s.tenant_namespace).is_none());

    api.delete("consumer-t", &DeleteParams::default()).await?;
    wait_gone(&api, "consumer-t").await?;
    delete_namespaces(&client, &[ns, handshake_ns]).await
}

// ---------------------------------------------------------------------------------------------------------------
// ResourceSlices, VirtualNodes, NamespaceOffloading (milan provides to rome)
// ---------------------------------------------------------------------------------------------------------------

/// Authentication between a provider and a consumer cluster, set up the way the provider's resources do:
/// tenant namespaces, Tenant, a certificate minted through the CSR API for `CN=<consumer>, O=liqo.io`,
/// optionally bound to `liqo-remote-controlplane`, and the consumer's control-plane kubeconfig Secret.
struct Authenticated {
    provider: Client,
    consumer: Client,
    provider_id: String,
    consumer_id: String,
    provider_ns: String,
    consumer_ns: String,
}

impl Authenticated {
    async fn new(ground: &Ground, suffix: &str, bind: bool) -> Result<Authenticated> {
        Authenticated::between(ground, MILAN, ROME, suffix, bind).await
    }

    async fn between(
        ground: &Ground,
        provider_id: &str,
        consumer_id: &str,
        suffix: &str,
        bind: bool,
    ) -> Result<Authenticated> {
        let auth = Authenticated {
            provider: ground.client(provider_id).await?,
            consumer: ground.client(consumer_id).await?,
            provider_id: provider_id.into(),
            consumer_id: consumer_id.into(),
            provider_ns: format!("sim-provider-{suffix}"),
            consumer_ns: format!("sim-consumer-{suffix}"),
        };
        tenant_namespace(&auth.provider, &auth.provider_ns, consumer_id).await?;
        tenant_namespace(&auth.consumer, &auth.consumer_ns, provider_id).await?;
        create(
            &auth.provider,
            &tenant(&auth.provider_ns, consumer_id, AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, TENANT_CONDITION_ACTIVE),
        )
        .await?;
        if bind {
            auth.bind().await?;
        }
        let kubeconfig = auth.mint(ground, suffix).await?;
        let secret = Secret {
            metadata: ObjectMeta {
                annotations: Some(string_map(&[(labels::REMOTE_TENANT_NAMESPACE, &auth.provider_ns)])),
                ..meta(
                    &auth.consumer_ns,
                    &auth.secret_name(),
                    &[(labels::IDENTITY_TYPE, labels::IDENTITY_TYPE_CONTROL_PLANE), (REMOTE_CLUSTER_ID, provider_id)],
                )
            },
            data: Some(BTreeMap::from([(labels::KUBECONFIG_KEY.to_owned(), ByteString(kubeconfig.into_bytes()))])),
            ..Default::default()
        };
        create(&auth.consumer, &secret).await?;
        Ok(auth)
    }

    fn secret_name(&self) -> String {
        format!("kubeconfig-controlplane-{}", self.provider_id)
    }

    async fn bind(&self) -> Result<()> {
        let binding = RoleBinding {
            metadata: meta(
                &self.provider_ns,
                labels::REMOTE_CONTROLPLANE_ROLE_BINDING,
                &[(REMOTE_CLUSTER_ID, &self.consumer_id)],
            ),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: labels::REMOTE_CONTROLPLANE_CLUSTER_ROLE.into(),
            },
            subjects: Some(vec![Subject {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "User".into(),
                name: self.consumer_id.clone(),
                namespace: None,
            }]),
        };
        create(&self.provider, &binding).await?;
        Ok(())
    }

    /// A kubeconfig for `CN=<consumer>, O=liqo.io`, signed by the provider's controller-manager.
    async fn mint(&self, ground: &Ground, suffix: &str) -> Result<String> {
        let (key_pem, csr_pem) = pki::client_key_and_csr(&self.consumer_id, Some(labels::CONTROL_PLANE_ORGANIZATION))?;
        let csrs: Api<CertificateSigningRequest> = Api::all(self.provider.clone());
        let name = format!("sim-{}-{suffix}", self.consumer_id);
        let csr = CertificateSigningRequest {
            metadata: ObjectMeta { name: Some(name.clone()), ..Default::default() },
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
            "type": "Approved", "status": "True", "reason": "SimulatorTest", "message": "approved by the simulator's test",
        }]}});
        csrs.patch_subresource("approval", &name, &PatchParams::default(), &Patch::Merge(&approval)).await?;
        let csr =
            wait(&csrs, &name, "certificate issued", |c| c.status.as_ref().is_some_and(|s| s.certificate.is_some()))
                .await?;
        let certificate = String::from_utf8(csr.status.unwrap().certificate.unwrap().0)?;
        let provider = ground.cluster(&self.provider_id);
        let ca = ground.ca_certificate(&self.provider_id)?;
        kubeconfig::render(&self.provider_id, &self.consumer_id, &provider.api_server, &ca, &certificate, &key_pem)
    }

    fn slice(&self, name: &str, resources: &[(&str, &str)]) -> ResourceSlice {
        let mut rs = ResourceSlice::new(
            name,
            ResourceSliceSpec {
                class: Some(RESOURCE_SLICE_CLASS_DEFAULT.into()),
                provider_cluster_id: Some(self.provider_id.clone()),
                resources: Some(quantities(resources)),
                ..Default::default()
            },
        );
        rs.metadata = ObjectMeta {
            annotations: Some(string_map(&[(labels::CREATE_VIRTUAL_NODE, labels::TRUE)])),
            ..meta(
                &self.consumer_ns,
                name,
                &[
                    (REMOTE_CLUSTER_ID, &self.provider_id),
                    (labels::REMOTE_ID, &self.provider_id),
                    (labels::REPLICATION, labels::TRUE),
                ],
            )
        };
        rs
    }

    fn slices(&self) -> Api<ResourceSlice> {
        Api::namespaced(self.consumer.clone(), &self.consumer_ns)
    }

    fn copies(&self) -> Api<ResourceSlice> {
        Api::namespaced(self.provider.clone(), &self.provider_ns)
    }

    async fn wait_decided(&self, name: &str) -> Result<ResourceSlice> {
        wait(&self.slices(), name, "Authentication and Resources decided", |rs| {
            let conditions = rs.status.as_ref().and_then(|s| s.conditions.as_deref());
            condition_status(conditions, RESOURCE_SLICE_CONDITION_AUTHENTICATION).is_some()
                && condition_status(conditions, RESOURCE_SLICE_CONDITION_RESOURCES).is_some()
        })
        .await
    }

    /// Deletes slices, then the Secret, then the namespaces, checking each finalizer is released in order.
    async fn tear_down(self, slices: &[&str]) -> Result<()> {
        for name in slices {
            match self.slices().delete(name, &DeleteParams::default()).await {
                Err(kube::Error::Api(status)) if status.is_not_found() => {}
                other => drop(other?),
            }
        }
        for name in slices {
            wait_gone(&self.slices(), name).await?;
            wait_gone(&self.copies(), name).await?;
        }
        let secrets: Api<Secret> = Api::namespaced(self.consumer.clone(), &self.consumer_ns);
        secrets.delete(&self.secret_name(), &DeleteParams::default()).await?;
        wait_gone(&secrets, &self.secret_name()).await?;
        delete_namespaces(&self.provider, &[&self.provider_ns]).await?;
        delete_namespaces(&self.consumer, &[&self.consumer_ns]).await
    }
}

#[tokio::test]
async fn resource_slice_is_replicated_accepted_and_becomes_a_virtual_node() -> Result<()> {
    let _peering = PEERING.lock().await;
    let ground = Ground::shared_simulated();
    let auth = Authenticated::new(ground, "accept", true).await?;
    create(&auth.consumer, &auth.slice("milan-accept", &[("cpu", "2"), ("memory", "4Gi")])).await?;

    let rs = auth.wait_decided("milan-accept").await?;
    let status = rs.status.as_ref().unwrap();
    assert!(status.is_accepted(), "{status:?}");
    assert_eq!(
        status.resources.as_ref(),
        Some(&quantities(&[("cpu", "2"), ("ephemeral-storage", "20Gi"), ("memory", "4Gi"), ("pods", "110")]))
    );
    assert_eq!(rs.spec.consumer_cluster_id.as_deref(), Some(ROME), "the consumer controller fills the IDs");
    assert!(rs.finalizers().contains(&labels::CRD_REPLICATOR_RESOURCE_FINALIZER.to_owned()));
    let copy = auth.copies().get("milan-accept").await?;
    assert_eq!(copy.labels().get(labels::REPLICATED).map(String::as_str), Some("true"));
    assert_eq!(copy.labels().get(labels::ORIGIN_ID).map(String::as_str), Some(ROME));
    let replicated_by = |f: &&k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry| {
        f.manager.as_deref() == Some("simulated-liqo-crd-replicator") && f.subresource.is_none()
    };
    assert!(
        copy.metadata.managed_fields.iter().flatten().any(|f| replicated_by(&f)),
        "the copy's spec is applied by the crd-replicator's manager: {:?}",
        copy.metadata.managed_fields
    );
    let secret = Api::<Secret>::namespaced(auth.consumer.clone(), &auth.consumer_ns).get(&auth.secret_name()).await?;
    assert!(secret.finalizers().contains(&labels::CRD_REPLICATOR_OPERATOR_FINALIZER.to_owned()));

    // VirtualNode and its Node.
    let vns: Api<VirtualNode> = Api::namespaced(auth.consumer.clone(), &auth.consumer_ns);
    let vn = wait(&vns, "milan-accept", "VirtualKubelet and Node Running", |vn| {
        let status = vn.status.as_ref();
        [VIRTUAL_NODE_CONDITION_VIRTUAL_KUBELET, VIRTUAL_NODE_CONDITION_NODE]
            .iter()
            .all(|t| status.and_then(|s| s.condition(t)).map(|c| c.status.as_str()) == Some(VIRTUAL_NODE_RUNNING))
    })
    .await?;
    assert!(vn.finalizers().contains(&labels::VIRTUAL_NODE_FINALIZER.to_owned()));
    assert_eq!(vn.owner_references()[0].kind, "ResourceSlice");
    assert_eq!(vn.spec.cluster_id.as_deref(), Some(MILAN));
    let nodes: Api<Node> = Api::all(auth.consumer.clone());
    let node = wait(&nodes, "milan-accept", "Ready", liqo_acceptance::observe::node_ready).await?;
    assert_eq!(node.labels().get(labels::NODE_TYPE).map(String::as_str), Some(labels::NODE_TYPE_VIRTUAL_NODE));
    assert_eq!(node.status.unwrap().capacity.unwrap()["cpu"], Quantity("2".into()));

    // Once settled, the simulator writes nothing more (no write loop between the two clusters): the versions stop
    // changing for two seconds, as a loop never lets them. The Node may be Ready before the VirtualNode's last
    // status write, which on a loaded machine comes seconds later, so settling is awaited (bounded), not assumed.
    let versions = || async {
        let rv = |o: &ObjectMeta| o.resource_version.clone().unwrap_or_default();
        anyhow::Ok([
            rv(&auth.slices().get("milan-accept").await?.metadata),
            rv(&auth.copies().get("milan-accept").await?.metadata),
            rv(&vns.get("milan-accept").await?.metadata),
            rv(&nodes.get("milan-accept").await?.metadata),
        ])
    };
    let before = std::cell::Cell::new(None);
    let settled = "slice, provider copy, VirtualNode and Node to stop changing for 2 s (a write loop?)";
    until(Duration::from_secs(30), Duration::from_secs(2), settled, || async {
        let after = versions().await?;
        Ok(match before.replace(Some(after.clone())) {
            Some(before) if before == after => Seen::Done(()),
            Some(before) => Seen::NotYet(format!("{before:?} -> {after:?}")),
            None => Seen::NotYet(format!("{after:?}")),
        })
    })
    .await?;

    // A resource change flows to status.resources, the VirtualNode quota and the Node capacity.
    let patch = json!({"spec": {"resources": {"cpu": "3", "memory": "4Gi"}}});
    auth.slices().patch("milan-accept", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    wait(&nodes, "milan-accept", "capacity cpu 3", |n| {
        n.status.as_ref().and_then(|s| s.capacity.as_ref()).and_then(|c| c.get("cpu")) == Some(&Quantity("3".into()))
    })
    .await?;
    let vn = vns.get("milan-accept").await?;
    assert_eq!(vn.spec.resource_quota.unwrap().hard.unwrap()["cpu"], Quantity("3".into()));

    // The ForeignCluster on rome sees milan as a provider with healthy offloading.
    let fcs: Api<ForeignCluster> = Api::all(auth.consumer.clone());
    let fc = wait(&fcs, MILAN, "offloading module healthy", |fc| {
        fc.status.as_ref().and_then(|s| s.modules.as_ref()).is_some_and(|m| m.offloading.is_healthy())
    })
    .await?;
    let fc_status = fc.status.unwrap();
    assert!(fc_status.role.contains("Provider"), "{}", fc_status.role);
    assert_eq!(fc_status.api_server_url.as_deref(), Some(ground.cluster(MILAN).api_server.as_str()));

    // Unpeering: the slice goes after its provider copy, taking the VirtualNode and the Node with it.
    auth.slices().delete("milan-accept", &DeleteParams::default()).await?;
    wait_gone(&vns, "milan-accept").await?;
    wait_gone(&nodes, "milan-accept").await?;
    auth.tear_down(&["milan-accept"]).await
}

#[tokio::test]
async fn provider_denies_slices_of_cordoned_tenants_and_under_the_fault() -> Result<()> {
    let _peering = PEERING.lock().await;
    let ground = Ground::shared_simulated();
    let auth = Authenticated::new(ground, "deny", true).await?;
    create(&auth.consumer, &auth.slice("milan-deny-before", &[("cpu", "1")])).await?;
    assert!(auth.wait_decided("milan-deny-before").await?.status.unwrap().is_accepted());

    // Cordoned: existing slices stay accepted (and are annotated), new ones are denied with a reason.
    let tenants: Api<Tenant> = Api::namespaced(auth.provider.clone(), &auth.provider_ns);
    tenants
        .patch(ROME, &PatchParams::default(), &Patch::Merge(json!({"spec": {"tenantCondition": "Cordoned"}})))
        .await?;
    wait(&auth.copies(), "milan-deny-before", "annotated cordon-tenant", |rs| {
        rs.annotations().get(labels::CORDON_TENANT).map(String::as_str) == Some("true")
    })
    .await?;
    create(&auth.consumer, &auth.slice("milan-deny-cordoned", &[("cpu", "1")])).await?;
    let denied = auth.wait_decided("milan-deny-cordoned").await?.status.unwrap();
    let resources = denied.condition(RESOURCE_SLICE_CONDITION_RESOURCES).unwrap();
    assert_eq!(resources.status, RESOURCE_SLICE_DENIED);
    assert_eq!(resources.reason.as_deref(), Some(RESOURCE_SLICE_RESOURCES_DENIED_REASON));
    assert!(resources.message.as_deref().unwrap().contains("Cordoned"), "{resources:?}");
    assert!(auth.slices().get("milan-deny-before").await?.status.unwrap().is_accepted());
    tenants.patch(ROME, &PatchParams::default(), &Patch::Merge(json!({"spec": {"tenantCondition": "Active"}}))).await?;

    // The deny-resource-slices fault on the provider.
    ground.set_fault(MILAN, "deny-resource-slices", "true").await?;
    let result = async {
        create(&auth.consumer, &auth.slice("milan-deny-fault", &[("cpu", "1")])).await?;
        let denied = auth.wait_decided("milan-deny-fault").await?;
        let vns: Api<VirtualNode> = Api::namespaced(auth.consumer.clone(), &auth.consumer_ns);
        assert!(vns.get_opt("milan-deny-fault").await?.is_none(), "no VirtualNode for a denied slice");
        anyhow::Ok(denied)
    }
    .await;
    ground.clear_faults(MILAN).await?;
    let denied = result?.status.unwrap();
    let resources = denied.condition(RESOURCE_SLICE_CONDITION_RESOURCES).unwrap();
    assert_eq!(resources.status, RESOURCE_SLICE_DENIED);
    assert!(resources.message.as_deref().unwrap().contains("deny-resource-slices"), "{resources:?}");

    // Drained: like Liqo's tenant controller, the simulator deletes the consumer's control-plane RoleBinding and
    // every provider copy of its slices, and leaves status.tenantNamespace alone.
    tenants
        .patch(ROME, &PatchParams::default(), &Patch::Merge(json!({"spec": {"tenantCondition": "Drained"}})))
        .await?;
    let bindings: Api<RoleBinding> = Api::namespaced(auth.provider.clone(), &auth.provider_ns);
    wait_gone(&bindings, labels::REMOTE_CONTROLPLANE_ROLE_BINDING).await?;
    for name in ["milan-deny-before", "milan-deny-cordoned", "milan-deny-fault"] {
        wait_gone(&auth.copies(), name).await?;
    }
    // Active and bound again, the consumer's replicator can delete the provider copies for the tear-down.
    tenants.patch(ROME, &PatchParams::default(), &Patch::Merge(json!({"spec": {"tenantCondition": "Active"}}))).await?;
    auth.bind().await?;
    auth.tear_down(&["milan-deny-before", "milan-deny-cordoned", "milan-deny-fault"]).await
}

/// Liqo's tenant controller returns before writing status.tenantNamespace for a Drained Tenant; it only adds
/// its finalizer.
#[tokio::test]
async fn a_tenant_created_drained_gets_only_the_finalizer() -> Result<()> {
    let _undisturbed = WHOLE_CLUSTER.read().await;
    let ground = Ground::shared_simulated();
    let client = ground.client(MILAN).await?;
    let ns = "sim-tenant-drained";
    tenant_namespace(&client, ns, "consumer-d").await?;
    create(&client, &tenant(ns, "consumer-d", AUTHZ_POLICY_TOLERATE_NO_HANDSHAKE, TENANT_CONDITION_DRAINED)).await?;
    let api: Api<Tenant> = Api::namespaced(client.clone(), ns);
    wait(&api, "consumer-d", "Liqo's finalizer", |t| t.finalizers().iter().any(|f| f == labels::TENANT_FINALIZER))
        .await?;
    // Give a (wrong) status write time to land before checking that none came.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let drained = api.get("consumer-d").await?;
    assert!(
        drained.status.as_ref().and_then(|s| s.tenant_namespace.as_deref()).is_none(),
        "a Drained Tenant gets no status.tenantNamespace: {:?}",
        drained.status
    );
    api.delete("consumer-d", &DeleteParams::default()).await?;
    wait_gone(&api, "consumer-d").await?;
    delete_namespaces(&client, &[ns]).await
}

#[tokio::test]
async fn replication_with_an_unbound_identity_surfaces_forbidden_until_bound() -> Result<()> {
    let _peering = PEERING.lock().await;
    let ground = Ground::shared_simulated();
    let auth = Authenticated::new(ground, "forbidden", false).await?;
    create(&auth.consumer, &auth.slice("milan-forbidden", &[("cpu", "1")])).await?;
    let event = wait_event(&auth.consumer, &auth.consumer_ns, "milan-forbidden", "ReplicationFailed").await?;
    assert!(event.note.as_deref().unwrap().to_lowercase().contains("forbidden"), "{event:?}");
    assert!(auth.slices().get("milan-forbidden").await?.status.is_none(), "no status without the provider's decision");
    assert!(auth.copies().get_opt("milan-forbidden").await?.is_none(), "admin credentials are never used to replicate");

    // RBAC fixed: the retry succeeds.
    auth.bind().await?;
    assert!(auth.wait_decided("milan-forbidden").await?.status.unwrap().is_accepted());
    auth.tear_down(&["milan-forbidden"]).await
}

#[tokio::test]
async fn namespace_offloading_creates_and_removes_remote_namespaces() -> Result<()> {
    let _peering = PEERING.lock().await;
    let ground = Ground::shared_simulated();
    let auth = Authenticated::new(ground, "offload", true).await?;
    create(&auth.consumer, &auth.slice("milan-offload", &[("cpu", "1")])).await?;
    let nodes: Api<Node> = Api::all(auth.consumer.clone());
    wait(&nodes, "milan-offload", "virtual node", |_| true).await?;

    let ns = "sim-offload-demo";
    namespace(&auth.consumer, ns, &[]).await?;
    let mut nso = NamespaceOffloading::new(
        labels::NAMESPACE_OFFLOADING_NAME,
        NamespaceOffloadingSpec {
            namespace_mapping_strategy: Some(MAPPING_DEFAULT_NAME.into()),
            pod_offloading_strategy: Some(POD_OFFLOADING_LOCAL_AND_REMOTE.into()),
            cluster_selector: Some(NodeSelector { node_selector_terms: vec![] }),
            ..Default::default()
        },
    );
    nso.metadata.namespace = Some(ns.into());
    create(&auth.consumer, &nso).await?;
    let api: Api<NamespaceOffloading> = Api::namespaced(auth.consumer.clone(), ns);
    let is_phase = |phase: &'static str| {
        move |n: &NamespaceOffloading| {
            n.status.as_ref().is_some_and(|s| {
                s.offloading_phase.as_deref() == Some(phase) && s.observed_generation == n.metadata.generation
            })
        }
    };
    let nso = wait(&api, labels::NAMESPACE_OFFLOADING_NAME, "phase Ready", is_phase(OFFLOADING_PHASE_READY)).await?;
    let remote_name = format!("{ns}-{ROME}");
    let status = nso.status.clone().unwrap();
    assert_eq!(status.remote_namespace_name.as_deref(), Some(remote_name.as_str()));
    let conditions = status.remote_namespaces_conditions.unwrap();
    assert_eq!(condition_status(conditions.get(MILAN).map(Vec::as_slice), REMOTE_NAMESPACE_READY), Some("True"));
    assert!(nso.finalizers().contains(&labels::NAMESPACE_OFFLOADING_FINALIZER.to_owned()));
    let milan_namespaces: Api<Namespace> = Api::all(auth.provider.clone());
    assert!(milan_namespaces.get_opt(&remote_name).await?.is_some(), "remote namespace on the provider");
    let local = Api::<Namespace>::all(auth.consumer.clone()).get(ns).await?;
    assert_eq!(local.labels().get(labels::SCHEDULING_ENABLED).map(String::as_str), Some("true"));

    // A selector that matches no virtual node: nothing selected, the remote namespace goes away.
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: REMOTE_CLUSTER_ID.into(),
                operator: "In".into(),
                values: Some(vec!["nowhere".into()]),
            }]),
            match_fields: None,
        }],
    };
    let patch = json!({"spec": {"clusterSelector": selector}});
    api.patch(labels::NAMESPACE_OFFLOADING_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    wait(
        &api,
        labels::NAMESPACE_OFFLOADING_NAME,
        "phase NoClusterSelected",
        is_phase(OFFLOADING_PHASE_NO_CLUSTER_SELECTED),
    )
    .await?;
    wait_gone(&milan_namespaces, &remote_name).await?;

    // Back to all clusters, then unoffload: the finalizer goes only after the remote namespace is gone.
    let patch = json!({"spec": {"clusterSelector": {"nodeSelectorTerms": []}}});
    api.patch(labels::NAMESPACE_OFFLOADING_NAME, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    wait(&api, labels::NAMESPACE_OFFLOADING_NAME, "phase Ready again", is_phase(OFFLOADING_PHASE_READY)).await?;
    api.delete(labels::NAMESPACE_OFFLOADING_NAME, &DeleteParams::default()).await?;
    wait_gone(&api, labels::NAMESPACE_OFFLOADING_NAME).await?;
    assert!(milan_namespaces.get_opt(&remote_name).await?.is_none_or(|n| n.metadata.deletion_timestamp.is_some()));
    delete_namespaces(&auth.consumer, &[ns]).await?;
    auth.tear_down(&["milan-offload"]).await
}

// ---------------------------------------------------------------------------------------------------------------
// Faults that affect every kind
// ---------------------------------------------------------------------------------------------------------------

async fn configuration_round_trip(ground: &Ground, ns: &str) -> Result<Duration> {
    let client = ground.client(MILAN).await?;
    tenant_namespace(&client, ns, ns).await?;
    let mut conf = Configuration::new(
        ns,
        ConfigurationSpec {
            remote: Some(ClusterConfig {
                cidr: Some(ClusterConfigCidr {
                    pod: Some(vec!["10.210.0.0/16".into()]),
                    external: Some(vec!["10.211.0.0/16".into()]),
                }),
            }),
            ..Default::default()
        },
    );
    conf.metadata = meta(ns, ns, &[(REMOTE_CLUSTER_ID, ns)]);
    let began = Instant::now();
    create(&client, &conf).await?;
    wait(&Api::<Configuration>::namespaced(client.clone(), ns), ns, "configured", Configuration::cidrs_configured)
        .await?;
    let took = began.elapsed();
    delete_namespaces(&client, &[ns]).await?;
    Ok(took)
}

#[tokio::test]
async fn status_delay_fault_delays_every_status_write() -> Result<()> {
    let _peering = PEERING.lock().await;
    let _whole_cluster = WHOLE_CLUSTER.write().await;
    let ground = Ground::shared_simulated();
    ground.set_fault(MILAN, "status-delay-ms", "1500").await?;
    let delayed = configuration_round_trip(ground, "sim-delay").await;
    ground.clear_faults(MILAN).await?;
    let delayed = delayed?;
    assert!(delayed >= Duration::from_millis(1500), "status arrived after {delayed:?}");
    let prompt = configuration_round_trip(ground, "sim-prompt").await?;
    eprintln!("Configuration status: {prompt:?} without the fault, {delayed:?} with status-delay-ms=1500");
    assert!(prompt < Duration::from_millis(1500), "without the fault the status took {prompt:?}");
    Ok(())
}

#[tokio::test]
async fn drop_watch_fault_still_converges() -> Result<()> {
    let _peering = PEERING.lock().await;
    let _whole_cluster = WHOLE_CLUSTER.write().await;
    let ground = Ground::shared_simulated();
    // Each restart of the simulator's watches begins with a fresh cluster-wide LIST (the harness's own waits are
    // namespaced), so the audit log shows whether the fault really dropped them.
    let relists = || -> Result<usize> {
        Ok(audit::read(&ground.audit_log(MILAN))?
            .iter()
            .filter(|e| e.verb == "list" && e.resource.as_deref() == Some("configurations") && e.namespace.is_none())
            .count())
    };
    let before = relists()?;
    ground.set_fault(MILAN, "drop-watch", "true").await?;
    // Let at least one restart happen before the object appears.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let result = configuration_round_trip(ground, "sim-drop").await;
    let during = relists()? - before;
    ground.clear_faults(MILAN).await?;
    result?;
    assert!(during >= 2, "Configurations were listed {during} time(s) under drop-watch: the fault restarted no watch");
    eprintln!("drop-watch: the simulator's Configuration watch was listed anew {during} times; the status still came");
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// Several clusters
// ---------------------------------------------------------------------------------------------------------------

#[tokio::test]
async fn one_provider_serves_several_consumers() -> Result<()> {
    const PROVIDER: &str = "hub";
    const CONSUMERS: [&str; 2] = ["spoke-a", "spoke-b"];
    let ground = Ground::start_simulated(&[PROVIDER, CONSUMERS[0], CONSUMERS[1]]).await?;

    let mut networks = Vec::new();
    for (node_port, consumer) in (31000..).zip(CONSUMERS) {
        let net = Network::gateways(&ground, PROVIDER, consumer, consumer, node_port).await?;
        net.exchange_keys().await?;
        networks.push(net);
    }
    for net in &networks {
        net.wait_connections(CONNECTION_CONNECTED).await?;
    }

    for consumer in CONSUMERS {
        let auth = Authenticated::between(&ground, PROVIDER, consumer, consumer, true).await?;
        create(&auth.consumer, &auth.slice(PROVIDER, &[("cpu", "1")])).await?;
        assert!(auth.wait_decided(PROVIDER).await?.status.unwrap().is_accepted(), "slice of {consumer}");
        let nodes: Api<Node> = Api::all(auth.consumer.clone());
        wait(&nodes, PROVIDER, &format!("virtual node Ready on {consumer}"), liqo_acceptance::observe::node_ready)
            .await?;
        let copy = auth.copies().get(PROVIDER).await?;
        assert_eq!(copy.labels().get(labels::ORIGIN_ID).map(String::as_str), Some(consumer));
    }

    let fcs: Api<ForeignCluster> = Api::all(ground.client(PROVIDER).await?);
    for consumer in CONSUMERS {
        wait(&fcs, consumer, "role Consumer", |fc| fc.status.as_ref().is_some_and(|s| s.role == "Consumer")).await?;
    }
    Ok(())
}
