//! The pod network, as the API server needs it: the API server calls a webhook (or any Service it is told to
//! call) at the Service's cluster IP, which only a pod network and kube-proxy make reachable. The ground has
//! neither, so each cluster's API server sends that traffic ("cluster" egress, its `--egress-selector-config-file`)
//! through an HTTP CONNECT proxy on a Unix socket, served by the ground's kubelet: it resolves the Service's
//! address to a Ready pod the kubelet runs on this cluster's node (kube-proxy, too, sends traffic only to ready
//! endpoints), and connects to that pod's process on loopback, where every process the kubelet starts outside a
//! gateway sandbox listens (they share the host's network), at the host port the kubelet gave the container port
//! ([`HostPorts`]).
//!
//! This is what lets Liqo's chart be installed as it is, by any installer: its webhook configurations keep
//! pointing at the `liqo-webhook` Service, and the API server checks Liqo's own certificate for that Service's
//! name. Addresses on loopback (the virtual kubelets' endpoints) are dialled as asked; anything else is refused
//! (the ground sends traffic nowhere but loopback and its own namespaces).
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ListParams;
use kube::{Api, Client};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::adapt;
use super::wire::Task;

/// The longest path a Unix socket address holds (`sun_path`, with its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;
/// The longest CONNECT request head read before giving up on a client.
const MAX_HEAD: usize = 8 * 1024;

/// Where the containers of each pod the kubelet runs listen on the host, by pod UID: container port → host port
/// (see `adapt::ProcessPlan::ports`). A container port not listed listens on the host as it is.
pub type HostPorts = Arc<Mutex<HashMap<String, HashMap<u16, u16>>>>;

/// The proxy's socket in a cluster's directory (`<ground>/<cluster>/`).
pub fn socket(cluster_dir: &Path) -> PathBuf {
    cluster_dir.join("pod-network.sock")
}

/// The API server's `--egress-selector-config-file` contents: "cluster" traffic (webhooks and aggregated APIs
/// behind Services, proxying to nodes and pods) through the proxy at `socket`; the rest dialled directly.
pub fn egress_config(socket: &Path) -> Result<String> {
    let path = socket.display().to_string();
    if path.len() > MAX_SOCKET_PATH {
        bail!(
            "the pod network's socket path {path} is {} bytes, longer than a Unix socket address holds \
             ({MAX_SOCKET_PATH}); start the ground in a shorter directory",
            path.len()
        );
    }
    Ok(serde_json::json!({
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [{
            "name": "cluster",
            "connection": {"proxyProtocol": "HTTPConnect", "transport": {"uds": {"udsName": path}}},
        }],
    })
    .to_string())
}

/// Serves the proxy of the cluster whose node is `node` at `socket` until the returned task is dropped.
pub fn serve(client: Client, node: String, socket: PathBuf, host_ports: HostPorts) -> Result<Task> {
    // A socket left by the kubelet's previous run (or the cluster's previous generation) refuses the bind.
    match std::fs::remove_file(&socket) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            return Err(err).with_context(|| format!("removing {}", socket.display()));
        }
        _ => {}
    }
    let listener = UnixListener::bind(&socket).with_context(|| format!("listening on {}", socket.display()))?;
    Ok(Task(tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let (client, node, host_ports) = (client.clone(), node.clone(), host_ports.clone());
            tokio::spawn(async move {
                if let Err(err) = tunnel(stream, &client, &node, &host_ports).await {
                    eprintln!("[kubelet] pod network of node {node}: {err:#}");
                }
            });
        }
    })))
}

/// One CONNECT: reads the request, connects to the pod, answers, then copies both ways.
async fn tunnel(mut stream: UnixStream, client: &Client, node: &str, host_ports: &HostPorts) -> Result<()> {
    let request =
        read_head(&mut stream, "the API server closed the connection before its CONNECT request ended").await?;
    let target = request
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("CONNECT "))
        .and_then(|rest| rest.split(' ').next())
        .with_context(|| format!("not a CONNECT request: {:?}", request.lines().next().unwrap_or_default()))?;
    let address: SocketAddr = target.parse().with_context(|| format!("CONNECT to {target}: not an address"))?;
    let connected = match resolve(client, node, address, host_ports).await {
        Ok(local) => TcpStream::connect(local).await.with_context(|| format!("{target} → {local}")),
        Err(err) => Err(err),
    };
    match connected {
        Ok(mut upstream) => {
            stream.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
            let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
            Ok(())
        }
        Err(err) => {
            let _ = stream.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
            Err(err.context(format!("CONNECT {target}")))
        }
    }
}

/// Where traffic for `address` goes: loopback as is; a Service's cluster IP and port to the target port of a Ready
/// pod it selects on `node`, on loopback.
async fn resolve(client: &Client, node: &str, address: SocketAddr, host_ports: &HostPorts) -> Result<SocketAddr> {
    if address.ip().is_loopback() {
        return Ok(address);
    }
    let services =
        Api::<Service>::all(client.clone()).list(&ListParams::default()).await.context("listing Services")?;
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
        .await
        .context("listing pods")?;
    let (uid, port) = target_port(&services.items, &pods.items, address)?;
    let moved = host_ports.lock().expect("host ports").get(&uid).and_then(|ports| ports.get(&port)).copied();
    Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), moved.unwrap_or(port)))
}

/// A Service's cluster IP and first port: where the API server calls it.
pub fn service_address(service: &Service) -> Result<SocketAddr> {
    let spec = service.spec.as_ref().context("a Service without spec")?;
    let ip: IpAddr = spec.cluster_ip.as_deref().context("no cluster IP")?.parse().context("cluster IP")?;
    let port = spec.ports.iter().flatten().next().context("no port")?.port;
    Ok(SocketAddr::new(ip, u16::try_from(port).context("port out of range")?))
}

/// An HTTP message head, through its blank line, read byte by byte so that nothing after it is taken from `stream`
/// (the tunnelled bytes follow); `ended_early` is the error when the stream ends first or the head grows past
/// [`MAX_HEAD`].
pub(crate) async fn read_head<S: tokio::io::AsyncRead + Unpin>(stream: &mut S, ended_early: &str) -> Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > MAX_HEAD || stream.read(&mut byte).await? == 0 {
            bail!("{ended_early}");
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// Whether the proxy at `socket` connects to `address`, as it would for the API server (`Ok`), or why not.
pub async fn reaches(socket: &Path, address: SocketAddr) -> Result<()> {
    let mut stream =
        UnixStream::connect(socket).await.with_context(|| format!("connecting to {}", socket.display()))?;
    stream.write_all(format!("CONNECT {address} HTTP/1.1\r\nHost: {address}\r\n\r\n").as_bytes()).await?;
    let answer = read_head(&mut stream, "the pod network closed the connection before its answer ended").await?;
    let status = answer.lines().next().unwrap_or_default();
    if status.split(' ').nth(1) == Some("200") {
        Ok(())
    } else {
        bail!("CONNECT {address} through the pod network: {status:?} (the kubelet's log says why)")
    }
}

/// The UID of the pod behind `address` (a Service's cluster IP and port) — a Ready pod of `pods` that the Service
/// selects and the kubelet runs outside a sandbox — and the container port it is sent to.
fn target_port(services: &[Service], pods: &[Pod], address: SocketAddr) -> Result<(String, u16)> {
    let ip = address.ip().to_string();
    let (service, spec) = services
        .iter()
        .find_map(|s| {
            s.spec.as_ref().filter(|spec| spec.cluster_ip.as_deref() == Some(ip.as_str())).map(|spec| (s, spec))
        })
        .with_context(|| {
            format!("no Service has cluster IP {ip}, and the ground's pod network reaches nothing else")
        })?;
    let name = format!(
        "{}/{}",
        service.metadata.namespace.as_deref().unwrap_or_default(),
        service.metadata.name.as_deref().unwrap_or_default()
    );
    let port = spec
        .ports
        .iter()
        .flatten()
        .find(|p| i32::from(address.port()) == p.port)
        .with_context(|| format!("Service {name} has no port {}", address.port()))?;
    let selector: BTreeMap<String, String> = spec.selector.clone().unwrap_or_default();
    let namespace = service.metadata.namespace.as_deref();
    let selected: Vec<&Pod> = pods
        .iter()
        .filter(|pod| pod.metadata.namespace.as_deref() == namespace && pod.metadata.deletion_timestamp.is_none())
        .filter(|pod| {
            let labels = pod.metadata.labels.clone().unwrap_or_default();
            !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
        })
        .filter(|pod| runs_on_host(pod))
        .collect();
    if selected.is_empty() {
        bail!("Service {name} selects no pod the ground's kubelet runs");
    }
    let pod = selected.into_iter().find(|pod| crate::observe::pod_ready(pod)).with_context(|| {
        format!("Service {name} has no ready pod (its readiness probe has not passed yet: see the pod's log)")
    })?;
    let number = match port.target_port.clone().unwrap_or(IntOrString::Int(port.port)) {
        IntOrString::Int(number) => number,
        IntOrString::String(named) => pod
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(named.as_str()))
            .map(|p| p.container_port)
            .with_context(|| format!("Service {name}'s target port {named:?} is no port of its pod"))?,
    };
    let port = u16::try_from(number).with_context(|| format!("Service {name}: port {number} out of range"))?;
    Ok((pod.metadata.uid.clone().unwrap_or_default(), port))
}

/// Whether the kubelet runs a container of `pod` as a process on the host (gateways run in sandboxes).
fn runs_on_host(pod: &Pod) -> bool {
    let binaries = pod.spec.iter().flat_map(|s| &s.containers).filter_map(adapt::runnable);
    binaries.into_iter().any(|binary| !adapt::GATEWAY.contains(&binary.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service() -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "liqo-webhook", "namespace": "liqo"},
            "spec": {"clusterIP": "10.96.0.17", "selector": {"app": "webhook"},
                     "ports": [{"port": 9443, "targetPort": "webhook"}]},
        }))
        .unwrap()
    }

    fn pod(labels: serde_json::Value, command: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "liqo", "labels": labels, "uid": format!("uid-{labels}")},
            "spec": {"containers": [{"name": "c", "command": [command],
                     "ports": [{"name": "webhook", "containerPort": 31443}]}]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_service_address_leads_to_its_pods_named_port() -> Result<()> {
        let pods =
            [pod(json!({"app": "other"}), "/usr/bin/webhook"), pod(json!({"app": "webhook"}), "/usr/bin/webhook")];
        let (uid, port) = target_port(&[service()], &pods, "10.96.0.17:9443".parse()?)?;
        assert_eq!((uid.as_str(), port), ("uid-{\"app\":\"webhook\"}", 31443));
        Ok(())
    }

    #[test]
    fn only_a_ready_pod_takes_the_traffic() -> Result<()> {
        let mut starting = pod(json!({"app": "webhook"}), "/usr/bin/webhook");
        starting.status = None;
        let err = target_port(&[service()], &[starting.clone()], "10.96.0.17:9443".parse()?).unwrap_err();
        assert!(err.to_string().contains("has no ready pod"), "{err}");
        // While a Deployment rolls, the old pod answers until the new one is Ready.
        let mut old = pod(json!({"app": "webhook"}), "/usr/bin/webhook");
        old.metadata.uid = Some("old".into());
        let (uid, _) = target_port(&[service()], &[starting, old], "10.96.0.17:9443".parse()?)?;
        assert_eq!(uid, "old");
        Ok(())
    }

    #[test]
    fn anything_else_is_refused_with_its_reason() -> Result<()> {
        let pods = [pod(json!({"app": "webhook"}), "/usr/bin/webhook")];
        let err = target_port(&[service()], &pods, "10.96.0.99:9443".parse()?).unwrap_err();
        assert!(err.to_string().contains("no Service has cluster IP 10.96.0.99"), "{err}");
        let err = target_port(&[service()], &pods, "10.96.0.17:443".parse()?).unwrap_err();
        assert!(err.to_string().contains("has no port 443"), "{err}");
        let unrun = [pod(json!({"app": "webhook"}), "/usr/bin/envoy")];
        let err = target_port(&[service()], &unrun, "10.96.0.17:9443".parse()?).unwrap_err();
        assert!(err.to_string().contains("selects no pod the ground's kubelet runs"), "{err}");
        Ok(())
    }

    #[test]
    fn the_egress_configuration_names_the_socket_and_refuses_long_paths() -> Result<()> {
        let config = egress_config(Path::new("/g/rome/pod-network.sock"))?;
        assert!(config.contains("\"udsName\":\"/g/rome/pod-network.sock\""), "{config}");
        assert!(config.contains("\"name\":\"cluster\""), "{config}");
        assert!(egress_config(&Path::new("/").join("d".repeat(120))).is_err());
        Ok(())
    }
}
