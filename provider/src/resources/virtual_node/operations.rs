//! `liqo_virtual_node` on the cluster: check the slice, find its Identity's kubeconfig, write the VirtualNode and
//! wait for its Node; remove it in Liqo's order; read it back; import it.
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::Api;
use liqo_schema::liqo::{Identity, ResourceSlice, VirtualNode, labels};
use liqo_schema::tf::{Diagnostic, Value};

use super::objects::{keeping_liqos_keys, observed_state};
use super::schema::attr;
use super::{VirtualNodeResource, schema};
use crate::attributes::Key;
use crate::cluster_api::ClusterApi;
use crate::import_id::{Found, ImportId, TENANT_NAMESPACE_PART, namespaced_id};
use crate::kube::{OpError, Verdict, is_terminating};
use crate::protocol::Ctx;
use crate::resources::lifecycle::{Declared, Done, Failure, Lifecycle, Op, Timeouts};
use crate::resources::shared::resource_slice::slice_provider;
use crate::resources::shared::virtual_node_wait::{node_check, wait_for_virtual_node};

/// The slice must exist, be for this provider and leave the virtual node to this resource. Returns it.
async fn check_slice(op: &Op<'_>, client: &kube::Client, node: &attr::VirtualNode) -> Result<ResourceSlice, Failure> {
    let slices: Api<ResourceSlice> = Api::namespaced(client.clone(), &node.tenant_namespace);
    let (ns, name) = (&node.tenant_namespace, node.slice_name());
    let Some(rs) = crate::kube::get_opt(op.ctx, &slices, name).await? else {
        return Err(Diagnostic::attr_error(
            attr::resource_slice_name,
            format!("ResourceSlice {ns}/{name} not found"),
            "Make the slice first: a liqo_peer with `create_virtual_node = false`, and pass its \
             `resource_slice_name` and `tenant_namespace` (a reference also orders the two).",
        )
        .into());
    };
    let annotation = rs.metadata.annotations.as_ref().and_then(|a| a.get(labels::CREATE_VIRTUAL_NODE));
    if annotation.is_some_and(|v| v.eq_ignore_ascii_case(labels::TRUE)) {
        return Err(Diagnostic::attr_error(
            attr::resource_slice_name,
            format!("Liqo makes the virtual node of ResourceSlice {ns}/{name} itself"),
            format!(
                "The slice is annotated {}=true, so Liqo already runs a virtual node for it; a second one would offer \
                 the same resources twice. Set `create_virtual_node = false` on its liqo_peer (that replaces the \
                 peer), or use another slice.",
                labels::CREATE_VIRTUAL_NODE
            ),
        )
        .into());
    }
    let provider = slice_provider(&rs);
    if provider.is_some_and(|p| p != node.provider()) {
        return Err(Diagnostic::attr_error(
            attr::provider_cluster_id,
            format!(
                "ResourceSlice {ns}/{name} asks provider {}, not {}",
                provider.unwrap_or_default(),
                node.provider()
            ),
            "Pass the slice's own provider: `liqo_peer.<name>.provider_cluster_id`.",
        )
        .into());
    }
    Ok(rs)
}

/// The kubeconfig Secret of the slice's Identity, which Liqo makes once the provider has accepted the slice.
async fn slice_kubeconfig(op: &Op<'_>, client: &kube::Client, node: &attr::VirtualNode) -> Result<String, OpError> {
    let identities: Api<Identity> = Api::namespaced(client.clone(), &node.tenant_namespace);
    // Found as Liqo's getters find it: by provider and slice labels, of type ResourceSlice.
    let selector = format!(
        "{}={},{}={}",
        labels::REMOTE_CLUSTER_ID,
        node.provider(),
        labels::RESOURCE_SLICE_NAME,
        node.slice_name()
    );
    let target = crate::kube::WaitTarget::labelled(&identities, &selector, "status.kubeconfigSecretRef");
    crate::kube::wait_until(op.ctx, &identities, target, op.deadline.left(), |found: &[Identity]| {
        let found: Vec<&Identity> =
            found.iter().filter(|i| i.spec.type_.as_deref() == Some(labels::IDENTITY_TYPE_RESOURCE_SLICE)).collect();
        let secret = found.iter().find_map(|i| i.status.as_ref()?.kubeconfig_secret_ref.as_ref()?.name.clone());
        match (found.first(), secret) {
            (_, Some(secret)) => Verdict::Ready(secret),
            (None, _) => Verdict::Pending(format!(
                "no Identity yet: Liqo makes it once the provider has accepted ResourceSlice {}",
                node.slice_name()
            )),
            (Some(_), None) => Verdict::Pending("the Identity names no kubeconfig Secret yet".into()),
        }
    })
    .await
}

/// Ready with every wanted label and none of the removed ones.
pub(super) fn labels_check(node: Option<&Node>, wanted: &BTreeMap<String, String>, removed: &[String]) -> Verdict<()> {
    if let Verdict::Pending(seen) = node_check(node) {
        return Verdict::Pending(seen);
    }
    let have = node.and_then(|n| n.metadata.labels.clone()).unwrap_or_default();
    let missing: Vec<String> =
        wanted.iter().filter(|(k, v)| have.get(*k) != Some(v)).map(|(k, v)| format!("{k}={v}")).collect();
    let left: Vec<&String> = removed.iter().filter(|k| have.contains_key(*k)).collect();
    if missing.is_empty() && left.is_empty() {
        return Verdict::Ready(());
    }
    Verdict::Pending(format!(
        "Ready, but the virtual kubelet has not relabelled it yet (missing: {missing:?}; still present: {left:?})"
    ))
}

/// Every wanted taint on the Node and none of the removed ones (compared by key, value and effect).
pub(super) fn taints_check(node: Option<&Node>, wanted: &[Taint], removed: &[&Taint]) -> Verdict<()> {
    let have = node.and_then(|n| n.spec.as_ref()?.taints.clone()).unwrap_or_default();
    let same = |a: &Taint, b: &Taint| a.key == b.key && a.effect == b.effect && a.value == b.value;
    let show = |t: &Taint| format!("{}={}:{}", t.key, t.value.as_deref().unwrap_or_default(), t.effect);
    let missing: Vec<String> = wanted.iter().filter(|w| !have.iter().any(|h| same(h, w))).map(show).collect();
    let left: Vec<String> = removed.iter().filter(|r| have.iter().any(|h| same(h, r))).map(|t| show(t)).collect();
    if missing.is_empty() && left.is_empty() {
        return Verdict::Ready(());
    }
    Verdict::Pending(format!(
        "Ready, but the virtual kubelet has not retainted it yet (missing: {missing:?}; still present: {left:?})"
    ))
}

/// A VirtualNode Liqo made for a slice (owned by the ResourceSlice) is Liqo's: liqo_peer manages it.
fn made_by_liqo(vn: &VirtualNode) -> bool {
    vn.metadata.owner_references.iter().flatten().any(|o| o.kind == "ResourceSlice")
}

#[async_trait]
impl Lifecycle for VirtualNodeResource {
    const TYPE_NAME: &'static str = "liqo_virtual_node";
    /// liqoctl waits for the node without a bound of its own; a virtual kubelet starts within a minute, and Liqo
    /// drains the node before removing it.
    const TIMEOUTS: Timeouts = Timeouts::uniform(Duration::from_secs(300));
    const DECLARED: Declared = schema::DECLARED;
    const IMPORT_ID: ImportId = ImportId {
        parts: &[TENANT_NAMESPACE_PART, ("name", "Name of the VirtualNode.")],
        attributes: &[attr::tenant_namespace, attr::name],
        example: "liqo-tenant-milan/milan-gpu",
        names: "the namespace and name of the VirtualNode on the consumer cluster",
    };
    const LISTED_FOR_PEER: &'static str = "virtual nodes for that provider made outside its ResourceSlices";
    const PEER: Option<Key> = Some(attr::provider_cluster_id);
    const TENANT_NAMESPACE: Option<Key> = Some(attr::tenant_namespace);
    const OBJECTS: &'static str = "the VirtualNode (and the Node Liqo registers for it)";

    fn new(cluster: Arc<ClusterApi>) -> VirtualNodeResource {
        VirtualNodeResource { cluster }
    }

    /// Create and update alike (labels and resources change in place): the VirtualNode is applied whole and its
    /// Node awaited with the labels. A failure once the VirtualNode is written records the planned state (a failed
    /// create is tainted and replaced).
    async fn converge(&self, op: &Op<'_>, prior: &Value, planned: &Value, _config: &Value) -> Result<Done, Failure> {
        let client = self.cluster.client().await?;
        let mut node = attr::VirtualNode::of(planned);
        let slice = check_slice(op, &client, &node).await?;
        node.take_slice_classes(&slice);
        let kubeconfig_secret = slice_kubeconfig(op, &client, &node).await?;

        let vns: Api<VirtualNode> = Api::namespaced(client.clone(), &node.tenant_namespace);
        let live = crate::kube::settle(op.ctx, &vns, &node.name, op.deadline.left()).await?;
        let vn = keeping_liqos_keys(node.virtual_node(&kubeconfig_secret), live.as_ref(), prior);
        crate::kube::apply(op.ctx, &vns, &vn).await?;
        let written = |e: OpError| Failure::from(e).after_writing(node.value());

        wait_for_virtual_node(op, &client, &node.tenant_namespace, &node.name, node.provider())
            .await
            .map_err(written)?;
        let prior = attr::VirtualNode::of(prior);
        let wanted_labels = node.labels.clone().unwrap_or_default();
        let removed: Vec<String> =
            prior.labels.iter().flatten().map(|(k, _)| k.clone()).filter(|k| !wanted_labels.contains_key(k)).collect();
        let (wanted_taints, prior_taints) = (node.taints.clone().unwrap_or_default(), prior.taints.unwrap_or_default());
        let untainted: Vec<&Taint> = prior_taints.iter().filter(|t| !wanted_taints.contains(t)).collect();
        let nodes: Api<Node> = Api::all(client);
        crate::kube::wait_for(
            op.ctx,
            &nodes,
            &node.name,
            "the labels and taints of liqo_virtual_node",
            op.deadline.left(),
            |n| match labels_check(n, &wanted_labels, &removed) {
                Verdict::Ready(()) => taints_check(n, &wanted_taints, &untainted),
                pending => pending,
            },
        )
        .await
        .map_err(written)?;
        Ok(node.value().into())
    }

    fn cleanup_command(prior: &Value) -> String {
        let prior = attr::VirtualNode::of(prior);
        let or = |value: String, placeholder: &str| if value.is_empty() { placeholder.to_owned() } else { value };
        let (ns, name) = (or(prior.tenant_namespace, "<tenant_namespace>"), or(prior.name, "<name>"));
        format!("kubectl delete virtualnode -n {ns} {name}")
    }

    /// Liqo's finalizer drains the Node and stops the virtual kubelet; the Node goes last.
    async fn delete(&self, op: &Op<'_>, prior: &Value) -> Result<(), Failure> {
        let client = self.cluster.client().await?;
        let prior = attr::VirtualNode::of(prior);
        let (ns, name) = (prior.tenant_namespace.as_str(), prior.name.as_str());
        let vns: Api<VirtualNode> = Api::namespaced(client.clone(), ns);
        crate::kube::delete_and_wait(op.ctx, &vns, name, op.deadline.left()).await?;
        let nodes: Api<Node> = Api::all(client);
        crate::kube::wait_deleted(
            op.ctx,
            &nodes,
            name,
            "deletion by Liqo (it follows its VirtualNode)",
            op.deadline.left(),
        )
        .await?;
        Ok(())
    }

    async fn observe(&self, ctx: &Ctx, state: &Value) -> Result<Done, Failure> {
        let client = self.cluster.client().await?;
        let node = attr::VirtualNode::of(state);
        let vns: Api<VirtualNode> = Api::namespaced(client, &node.tenant_namespace);
        Ok(match crate::kube::get_opt(ctx, &vns, &node.name).await? {
            Some(vn) if !is_terminating(&vn) => observed_state(state, &vn),
            // Gone or going: plan to create it again (apply waits out the deletion first).
            _ => Value::Null,
        }
        .into())
    }

    async fn find(ctx: &Ctx, client: kube::Client, remote: Option<&str>) -> Result<Vec<Found>, OpError> {
        let api: Api<VirtualNode> = Api::all(client);
        let selector = remote.map(|r| format!("{}={r}", labels::REMOTE_CLUSTER_ID)).unwrap_or_default();
        Ok(crate::kube::list(ctx, &api, &selector)
            .await?
            .iter()
            .filter(|vn| !made_by_liqo(vn))
            .map(|vn| Found::new(namespaced_id(&vn.metadata), "VirtualNode", vn.spec.cluster_id.as_deref()))
            .collect())
    }

    async fn import(&self, ctx: &Ctx, id: &str) -> Result<Value, Failure> {
        let [ns, name] = Self::IMPORT_ID.parse(Self::TYPE_NAME, id)?;
        let client = self.cluster.client().await?;
        let vns: Api<VirtualNode> = Api::namespaced(client, &ns);
        let vn = crate::kube::get_opt(ctx, &vns, &name).await?.ok_or_else(|| {
            Diagnostic::error(
                format!("VirtualNode {ns}/{name} not found"),
                "Nothing to import: check the namespace and name (`kubectl get virtualnodes -A` on the consumer \
                 cluster), or create the virtual node with this resource instead.",
            )
        })?;
        if made_by_liqo(&vn) {
            return Err(Diagnostic::error(
                format!("VirtualNode {ns}/{name} is Liqo's own node for its ResourceSlice"),
                "Liqo makes and keeps it for a ResourceSlice annotated liqo.io/create-virtual-node=true: it belongs \
                 to that peering. Import the liqo_peer of the slice instead.",
            )
            .into());
        }
        Ok(observed_state(&Value::Null, &vn))
    }
}
