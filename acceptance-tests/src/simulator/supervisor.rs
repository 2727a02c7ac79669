//! Starts every simulated controller of every cluster, restarts a cluster's watches under the `drop-watch`
//! fault, and drives kube-runtime controllers with the simulator's logging and retry policy.
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, bail};
use futures::{StreamExt, TryFutureExt};
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::runtime::controller::{self, Action};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use liqo_schema::liqo::{self, labels};
use serde::de::DeserializeOwned;
use tokio::task::JoinSet;

use super::context::{Cluster, Ctx, Topic, World};
use super::{authentication, faults, foreign_cluster, network, offloading, virtual_node};

/// How long watches live under the `drop-watch` fault before they are dropped and started again.
const DROP_WATCH_PERIOD: Duration = Duration::from_secs(1);
/// Retry delay after a failed reconcile (conflicts, transient API errors).
const RETRY: Duration = Duration::from_millis(500);

pub async fn run(world: Arc<World>) -> Result<()> {
    let mut tasks = JoinSet::new();
    for cluster in world.clusters() {
        tasks.spawn(faults::watch_faults(cluster.clone()));
        tasks.spawn(virtual_node::heartbeat(cluster.clone()));
        tasks.spawn(supervise(world.clone(), cluster.clone()));
    }
    // None of these tasks ends on its own; if one does, the simulator is broken and must say so.
    match tasks.join_next().await {
        Some(Ok(())) => bail!("a simulator task ended unexpectedly"),
        Some(Err(err)) => bail!("a simulator task failed: {err}"),
        None => bail!("the simulator has nothing to run"),
    }
}

/// Runs the controllers of one cluster; under `drop-watch` tears them down and restarts them periodically.
async fn supervise(world: Arc<World>, cluster: Arc<Cluster>) {
    let mut faults = cluster.faults_sender().subscribe();
    loop {
        let mut controllers = JoinSet::new();
        spawn_controllers(&mut controllers, &world, &cluster);
        if faults.borrow_and_update().drop_watch {
            tokio::time::sleep(DROP_WATCH_PERIOD).await;
            log_line!(cluster.name, "fault drop-watch: dropping every watch on this cluster and starting them again");
        } else {
            loop {
                tokio::select! {
                    changed = faults.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        if faults.borrow_and_update().drop_watch {
                            log_line!(cluster.name, "fault drop-watch: dropping every watch on this cluster");
                            break;
                        }
                    }
                    ended = controllers.join_next() => {
                        log_line!(cluster.name, "a controller ended unexpectedly ({ended:?}); restarting all");
                        tokio::time::sleep(DROP_WATCH_PERIOD).await;
                        break;
                    }
                }
            }
        }
        controllers.shutdown().await;
    }
}

fn spawn_controllers(set: &mut JoinSet<()>, world: &Arc<World>, cluster: &Arc<Cluster>) {
    let ctx = Arc::new(Ctx { world: world.clone(), cluster: cluster.clone() });
    set.spawn(network::configurations(ctx.clone()));
    set.spawn(network::gateway_servers(ctx.clone()));
    set.spawn(network::gateway_clients(ctx.clone()));
    set.spawn(network::wg_gateway_servers(ctx.clone()));
    set.spawn(network::wg_gateway_clients(ctx.clone()));
    set.spawn(authentication::tenants(ctx.clone()));
    set.spawn(authentication::resource_slices(ctx.clone()));
    set.spawn(authentication::control_plane_secrets(ctx.clone()));
    set.spawn(virtual_node::virtual_nodes(ctx.clone()));
    set.spawn(offloading::namespace_offloadings(ctx.clone()));
    set.spawn(foreign_cluster::foreign_clusters(ctx.clone()));

    let peer_objects = watcher::Config::default().labels(labels::REMOTE_CLUSTER_ID);
    let virtual_nodes = format!("{}={}", labels::NODE_TYPE, labels::NODE_TYPE_VIRTUAL_NODE);
    set.spawn(notifier::<liqo::Configuration>(ctx.clone(), watcher::Config::default(), &[Topic::Network]));
    set.spawn(notifier::<liqo::Connection>(ctx.clone(), watcher::Config::default(), &[Topic::Network]));
    set.spawn(notifier::<liqo::PublicKey>(ctx.clone(), watcher::Config::default(), &[Topic::Network]));
    set.spawn(notifier::<liqo::GatewayServer>(ctx.clone(), watcher::Config::default(), &[Topic::Network]));
    set.spawn(notifier::<liqo::GatewayClient>(ctx.clone(), watcher::Config::default(), &[Topic::Network]));
    set.spawn(notifier::<Secret>(ctx.clone(), peer_objects, &[Topic::Network, Topic::Authentication]));
    set.spawn(notifier::<liqo::Tenant>(ctx.clone(), watcher::Config::default(), &[Topic::Authentication]));
    set.spawn(notifier::<liqo::ResourceSlice>(ctx.clone(), watcher::Config::default(), &[Topic::Authentication]));
    set.spawn(notifier::<liqo::VirtualNode>(ctx.clone(), watcher::Config::default(), &[Topic::Offloading]));
    set.spawn(notifier::<Node>(ctx.clone(), watcher::Config::default().labels(&virtual_nodes), &[Topic::Offloading]));
    // Simulated gateway pods: a restart (deleted pod) makes the gateway reload its key pair.
    let gateway_pods = watcher::Config::default().labels("networking.liqo.io/component=gateway");
    set.spawn(notifier::<Pod>(ctx.clone(), gateway_pods, &[Topic::Network]));
}

/// Publishes every change of a `K` on `topics` of this cluster and of the peers its labels name.
async fn notifier<K>(ctx: Arc<Ctx>, config: watcher::Config, topics: &'static [Topic])
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let api: Api<K> = Api::all(ctx.cluster.client.clone());
    let mut changes = watcher(api, config).default_backoff().touched_objects().boxed();
    while let Some(change) = changes.next().await {
        let obj = match change {
            Ok(obj) => obj,
            Err(err) => {
                log_line!(ctx.cluster.name, "watching {}: {err}; retrying", K::plural(&()));
                continue;
            }
        };
        let peers: Vec<&String> = [labels::REMOTE_CLUSTER_ID, labels::ORIGIN_ID, labels::REMOTE_ID]
            .iter()
            .filter_map(|key| obj.labels().get(*key))
            .collect();
        for topic in topics {
            ctx.cluster.notify(*topic);
            for peer in &peers {
                ctx.world.notify(peer, *topic);
            }
        }
    }
}

/// A reconcile error that kube-runtime can carry (anyhow's error is not a `std::error::Error`).
#[derive(Debug)]
pub struct ReconcileError(anyhow::Error);

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for ReconcileError {}

/// Runs `controller` with `reconcile`, logging failures and retrying them after [`RETRY`].
pub async fn drive<K, F, Fut>(ctx: Arc<Ctx>, controller: Controller<K>, mut reconcile: F)
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    F: FnMut(Arc<K>, Arc<Ctx>) -> Fut,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    let name = ctx.cluster.name.clone();
    controller
        .run(
            move |obj, ctx| reconcile(obj, ctx).map_err(ReconcileError),
            |obj, err, ctx| {
                if !super::ops::is_expected_race(&err.0) {
                    log_line!(ctx.cluster.name, "{}: {err}; retrying", super::ops::describe(&*obj));
                }
                Action::requeue(RETRY)
            },
            ctx,
        )
        .for_each(|result| {
            match result {
                Ok(_) | Err(controller::Error::ObjectNotFound(_)) | Err(controller::Error::ReconcilerFailed(..)) => {}
                Err(err) => log_line!(name, "controller for {}: {err}", K::plural(&())),
            }
            std::future::ready(())
        })
        .await;
}
