//! The clusters the simulator plays Liqo for, and how controllers of one cluster wake those of another.
//!
//! Liqo's controllers react to objects on their own cluster only; the simulator also has to react to the other
//! side of a peering (a key fixed on the provider changes the consumer's Connection, a slice accepted on the
//! provider changes the consumer's copy). Each cluster therefore has a few change [`Topic`]s: watchers publish
//! on the topic of their own cluster and of the peer named by an object's labels, and controllers re-reconcile
//! all their objects when a topic they depend on changes. Object counts are small, so reconciling all is cheap,
//! and every reconcile is idempotent.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::Stream;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ListParams;
use kube::{Api, Client};
use liqo_schema::liqo::labels;
use tokio::sync::watch;

use super::SimCluster;
use super::faults::Faults;
use super::log::Events;
use crate::ground::kubeconfig;
use crate::observe::{Seen, until};

/// Kinds of change a controller may depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    /// PublicKeys, key Secrets, gateways.
    Network = 0,
    /// Tenants, control-plane Secrets, ResourceSlices.
    Authentication = 1,
    /// VirtualNodes, virtual Nodes.
    Offloading = 2,
}

const TOPICS: [Topic; 3] = [Topic::Network, Topic::Authentication, Topic::Offloading];
const CLUSTER_ID_WAIT: Duration = Duration::from_secs(60);

/// Every simulated cluster, by Liqo cluster ID.
pub struct World {
    clusters: Vec<Arc<Cluster>>,
}

impl World {
    pub async fn connect(sims: &[SimCluster]) -> Result<World> {
        if sims.is_empty() {
            bail!("the simulator was given no cluster");
        }
        let mut clusters: Vec<Arc<Cluster>> = Vec::new();
        for sim in sims {
            let client = kubeconfig::client(&sim.kubeconfig)
                .await
                .with_context(|| format!("cluster {}: connecting with {}", sim.name, sim.kubeconfig.display()))?;
            let id = read_cluster_id(&sim.name, &client).await?;
            if let Some(other) = clusters.iter().find(|c| c.id == id) {
                bail!(
                    "clusters {} and {} have the same Liqo cluster ID {id}; each cluster needs its own",
                    other.name,
                    sim.name
                );
            }
            clusters.push(Arc::new(Cluster::new(sim.name.clone(), id, client)));
        }
        Ok(World { clusters })
    }

    pub fn clusters(&self) -> &[Arc<Cluster>] {
        &self.clusters
    }

    /// The simulated cluster whose Liqo cluster ID is `id`.
    pub fn by_id(&self, id: &str) -> Option<&Arc<Cluster>> {
        self.clusters.iter().find(|c| c.id == id)
    }

    /// Wakes `topic` on the cluster whose ID is `id`, if it is simulated (peers outside the simulation are
    /// legitimate: a peering may name a cluster that does not exist).
    pub fn notify(&self, id: &str, topic: Topic) {
        if let Some(cluster) = self.by_id(id) {
            cluster.notify(topic);
        }
    }
}

/// One simulated cluster.
pub struct Cluster {
    /// Ground name (log prefix).
    pub name: String,
    /// Liqo cluster ID.
    pub id: String,
    /// Admin client: Liqo's controllers have cluster-wide rights on their own cluster.
    pub client: Client,
    pub events: Events,
    faults: watch::Sender<Faults>,
    topics: Vec<watch::Sender<u64>>,
    /// Clients built from control-plane kubeconfig Secrets, by Secret `namespace/name`, with the kubeconfig
    /// they were built from (a changed kubeconfig gets a new client, like Liqo's reflector restart).
    remote_clients: Mutex<HashMap<String, (Vec<u8>, Client)>>,
}

impl Cluster {
    fn new(name: String, id: String, client: Client) -> Cluster {
        Cluster {
            events: Events::new(client.clone(), &name),
            name,
            id,
            client,
            faults: watch::Sender::new(Faults::default()),
            topics: TOPICS.iter().map(|_| watch::Sender::new(0)).collect(),
            remote_clients: Mutex::new(HashMap::new()),
        }
    }

    /// The faults switched on now.
    pub fn faults(&self) -> Faults {
        self.faults.borrow().clone()
    }

    pub fn faults_sender(&self) -> &watch::Sender<Faults> {
        &self.faults
    }

    pub fn notify(&self, topic: Topic) {
        self.topics[topic as usize].send_modify(|n| *n = n.wrapping_add(1));
    }

    pub fn notify_all(&self) {
        for topic in TOPICS {
            self.notify(topic);
        }
    }

    /// One item per change of `topic` after this call (changes in a burst may be merged into one item).
    pub fn subscribe(&self, topic: Topic) -> impl Stream<Item = ()> + Send + 'static {
        let rx = self.topics[topic as usize].subscribe();
        futures::stream::unfold(rx, |mut rx| async move {
            rx.changed().await.ok()?;
            Some(((), rx))
        })
    }

    /// A client acting with the credentials of a control-plane kubeconfig (never the admin ones), so the
    /// identity that was minted for the peer and its RBAC are what gets exercised.
    pub async fn remote_client(&self, secret_key: &str, kubeconfig_bytes: &[u8]) -> Result<Client> {
        if let Some((bytes, client)) = self.remote_clients.lock().expect("client cache").get(secret_key)
            && bytes.as_slice() == kubeconfig_bytes
        {
            return Ok(client.clone());
        }
        let yaml = std::str::from_utf8(kubeconfig_bytes).context("the kubeconfig is not UTF-8 text")?;
        let client = kubeconfig::client_from_yaml(yaml).await?;
        self.remote_clients
            .lock()
            .expect("client cache")
            .insert(secret_key.to_owned(), (kubeconfig_bytes.to_vec(), client.clone()));
        Ok(client)
    }
}

/// Controller context: the cluster being reconciled and the others.
pub struct Ctx {
    pub world: Arc<World>,
    pub cluster: Arc<Cluster>,
}

/// The ID in the ConfigMap labelled `app.kubernetes.io/name=clusterid-configmap` in `liqo`, waiting for it a
/// little (the ground may still be bootstrapping when the simulator starts).
async fn read_cluster_id(name: &str, client: &Client) -> Result<String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), labels::DEFAULT_LIQO_NAMESPACE);
    let selector = format!("{}={}", labels::APP_NAME, labels::CLUSTER_ID_CONFIGMAP_APP_NAME);
    let what = format!(
        "cluster {name}: a Liqo cluster ID to appear (ConfigMap liqo/{} labelled {selector}, key {})",
        labels::CLUSTER_ID_CONFIGMAP,
        labels::CLUSTER_ID_KEY
    );
    until(CLUSTER_ID_WAIT, Duration::from_millis(500), &what, || async {
        Ok(match api.list(&ListParams::default().labels(&selector)).await {
            Ok(list) => {
                let ids: Vec<String> = list
                    .items
                    .iter()
                    .filter_map(|cm| cm.data.as_ref()?.get(labels::CLUSTER_ID_KEY).cloned())
                    .filter(|id| !id.is_empty())
                    .collect();
                match ids.as_slice() {
                    [id] => Seen::Done(id.clone()),
                    [] => Seen::NotYet("no ConfigMap with a CLUSTER_ID".to_owned()),
                    _ => bail!("cluster {name}: several cluster-ID ConfigMaps ({selector}) in namespace liqo: {ids:?}"),
                }
            }
            Err(err) => Seen::NotYet(err.to_string()),
        })
    })
    .await
}
