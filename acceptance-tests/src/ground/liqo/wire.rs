//! The network Liqo's gateways run on: network namespaces made by the ground's kubelet, so that Liqo's real
//! `gateway` and `wireguard` binaries build a real (userspace) WireGuard tunnel between clusters.
//!
//! * The **wire**: one namespace for the whole ground, holding a bridge that carries every cluster's node
//!   address ([`node_ip`]). It stands for the network between the clusters' nodes; a gateway Service's node port
//!   is served there (see [`node_port`]), as kube-proxy would on the node.
//! * One **sandbox** per gateway pod, like a pod's network namespace: loopback plus `eth0`, one end of a veth
//!   pair whose other end is on the wire's bridge, with an address of the wire's subnet ([`pod_ip`]). Each pod
//!   needs its own: Liqo's gateway names its tunnel interface `liqo-tunnel`, and a cluster with two peerings
//!   runs two gateways. The cluster's API server (on the host's loopback) is bridged into the sandbox's loopback
//!   on the same port ([`bridge_api_server`]), so the kubeconfig and the server's certificate stay valid.
//!
//! Every namespace is held by one `sleep` process started with `unshare --net` (no name under `/run/netns`), so
//! it and its links vanish when that process and the sockets opened in it are gone: the kubelet owns all of
//! them and they die with it (PR_SET_PDEATHSIG), whatever ends it. Traffic goes only to loopback and to the
//! wire's subnet, which exists only inside these namespaces.
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rustix::thread::LinkNameSpaceType;
use serde::{Deserialize, Serialize};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

use crate::ground::process::{self, Lifetime, Spec, Supervised};

/// How a real-Liqo ground runs Liqo's gateways.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum Gateways {
    /// Liqo's `gateway` and `wireguard` binaries in network namespaces of the ground: a real tunnel.
    Real,
    /// The namespaces cannot be made here (why): the kubelet plays the gateways, reporting their Connection
    /// `Connected` without a tunnel.
    Simulated { reason: String },
}

impl Gateways {
    /// Real when this process can make the namespaces, links and tunnel devices the gateways need.
    pub fn probe() -> Gateways {
        match can_make_namespaces() {
            Ok(()) => Gateways::Real,
            Err(reason) => Gateways::Simulated { reason: format!("{reason:#}") },
        }
    }

    /// One line for people and summaries.
    pub fn describe(&self) -> String {
        match self {
            Gateways::Real => "real gateways: Liqo's gateway and wireguard binaries, a userspace WireGuard tunnel \
                               between network namespaces of the ground"
                .to_owned(),
            Gateways::Simulated { reason } => {
                format!("SIMULATED gateways (Connection reported Connected without a tunnel): {reason}")
            }
        }
    }
}

/// Inotify instances left for this user, when fewer than `wanted`: each wireguard-go takes one (it watches its
/// control socket) and exits with "too many open files" when none is left, which on a machine full of control
/// planes (each holds a few) happens long before memory runs out. `None` when there are enough or it cannot tell.
pub fn inotify_shortage(wanted: usize) -> Option<String> {
    let limit: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances").ok()?.trim().parse().ok()?;
    let used = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|entry| std::fs::read_dir(entry.ok()?.path().join("fd")).ok())
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target.as_os_str() == "anon_inode:inotify")
        .count();
    let left = limit.saturating_sub(used);
    (left < wanted).then(|| {
        format!(
            "only {left} of {limit} inotify instances are free on this machine (fs.inotify.max_user_instances); each \
             gateway's wireguard-go needs one and exits with \"too many open files\" without it"
        )
    })
}

fn can_make_namespaces() -> Result<()> {
    if !rustix::process::geteuid().is_root() {
        bail!("not root, so no network namespaces");
    }
    if !Path::new("/dev/net/tun").exists() {
        bail!("no /dev/net/tun for userspace WireGuard");
    }
    // The whole set-up in a throw-away namespace: a bridge, a veth pair and a TUN device.
    let probe = "ip link add liqo-probe type bridge && ip link add liqo-probe-a type veth peer name liqo-probe-b \
                 && ip tuntap add dev liqo-probe-t mode tun";
    let output = Command::new("unshare")
        .args(["--net", "--", "sh", "-c", probe])
        .stdin(Stdio::null())
        .output()
        .context("running unshare (util-linux) and ip (iproute2)")?;
    if !output.status.success() {
        bail!(
            "cannot make a network namespace with a bridge, a veth pair and a TUN device: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The wire's subnet (only inside the ground's namespaces): 172.30.0.0/16; nodes in 172.30.0.0/24, gateway
/// pods of the k-th cluster in 172.30.<k+1>.0/24. Outside every CIDR Liqo uses on the ground (pods 10.100+k,
/// external 10.150+k, Liqo's internal 10.80 and its defaults 10.70/10.71).
const WIRE_PREFIX: u8 = 16;

/// Node address of the k-th cluster of the ground (its fake worker's InternalIP, where its node ports are).
pub fn node_ip(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(172, 30, 0, u8::try_from(k + 1).expect("at most 50 clusters"))
}

/// Address of the n-th gateway sandbox (n ≥ 1) of the k-th cluster.
pub fn pod_ip(k: usize, n: u8) -> Ipv4Addr {
    Ipv4Addr::new(172, 30, u8::try_from(k + 1).expect("at most 50 clusters"), n)
}

const BRIDGE: &str = "liqo-wire";
/// The wire bridge's own address (locally administered), which node addresses answer with.
const BRIDGE_MAC: &str = "02:6c:69:71:6f:00";

/// A network namespace held by a process of the kubelet.
pub struct Netns {
    holder: Supervised,
    path: PathBuf,
}

impl Netns {
    /// A new, empty network namespace with loopback up. `name` labels the holder in logs and `ps`.
    pub fn create(name: &str, log: &Path) -> Result<Netns> {
        let spec = Spec {
            name: format!("netns {name}"),
            program: "unshare".into(),
            args: vec!["--net".into(), "--".into(), "sleep".into(), "infinity".into()],
            // Names the namespace in the holder's environment, for whoever looks for the ground's processes.
            env: vec![("LIQO_GROUND_NETNS".into(), name.into())],
            log: log.to_path_buf(),
        };
        let holder = process::spawn(&spec, Lifetime::Attached)?;
        let path = PathBuf::from(format!("/proc/{}/ns/net", holder.record().pid));
        let netns = Netns { holder, path };
        // `unshare` makes the namespace just before it becomes `sleep`; until then the holder is in ours.
        let ours = std::fs::read_link("/proc/self/ns/net").context("reading this process's network namespace")?;
        let what = format!("the holder of network namespace {name} to enter a new namespace");
        crate::observe::until_blocking(Duration::from_secs(10), Duration::from_millis(10), &what, || {
            Ok((std::fs::read_link(&netns.path).ok().is_some_and(|ns| ns != ours)).then_some(()).into())
        })?;
        netns.ip(&["link", "set", "lo", "up"])?;
        Ok(netns)
    }

    /// `/proc/<holder>/ns/net`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn pid(&self) -> u32 {
        self.holder.record().pid
    }

    /// Runs `ip ARGS` inside the namespace; returns what it printed.
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut command = Command::new("nsenter");
        command.arg(format!("--net={}", self.path.display())).arg("--").arg("ip").args(args);
        run(command, &format!("ip {} in network namespace {}", args.join(" "), self.holder.record().name))
    }

    /// Runs `f` inside the namespace (see [`in_namespace`]).
    pub fn within<T: Send + 'static>(&self, f: impl FnOnce() -> std::io::Result<T> + Send + 'static) -> Result<T> {
        in_namespace(&self.path, f)
    }
}

/// Runs `f` on a fresh thread that has entered the network namespace at `path`; sockets it opens belong there for
/// good. No thread of this process other than that short-lived one ever leaves the host's namespace.
fn in_namespace<T: Send + 'static>(path: &Path, f: impl FnOnce() -> std::io::Result<T> + Send + 'static) -> Result<T> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    std::thread::spawn(move || {
        rustix::thread::move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network))?;
        f()
    })
    .join()
    .map_err(|_| anyhow::anyhow!("a thread in network namespace {} panicked", path.display()))?
    .with_context(|| format!("opening a socket in network namespace {}", path.display()))
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.holder.kill();
    }
}

fn run(mut command: Command, what: &str) -> Result<String> {
    let output = command.stdin(Stdio::null()).output().with_context(|| format!("running {what}"))?;
    if !output.status.success() {
        bail!("{what} failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The wire: a bridge carrying the node addresses of every cluster.
pub struct Wire {
    netns: Netns,
    links: std::sync::atomic::AtomicU32,
}

impl Wire {
    pub fn create(node_ips: &[Ipv4Addr], log: &Path) -> Result<Wire> {
        let netns = Netns::create("wire", log)?;
        // A bridge whose address nobody set takes the lowest address of its ports, so it changed whenever a
        // gateway pod came or went. Every sandbox kept the old one for the node addresses and its packets to a
        // node port went nowhere until its neighbour entry was probed again (seconds; long enough for Liqo's
        // conncheck to call another consumer's tunnel down while one consumer unpeered). A set address stays.
        netns.ip(&["link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge"])?;
        netns.ip(&["link", "set", BRIDGE, "up"])?;
        for ip in node_ips {
            netns.ip(&["addr", "add", &format!("{ip}/{WIRE_PREFIX}"), "dev", BRIDGE])?;
        }
        Ok(Wire { netns, links: std::sync::atomic::AtomicU32::new(0) })
    }

    /// Plugs a sandbox into the wire: `eth0` with `address` in the sandbox, its peer on the bridge.
    pub fn plug(&self, sandbox: &Netns, address: Ipv4Addr) -> Result<()> {
        let link = format!("gw{}", self.links.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        // Both ends are made directly in their namespaces: no link ever appears in the host's.
        let mut command = Command::new("ip");
        command.args(["link", "add", &link, "netns", &self.netns.pid().to_string(), "type", "veth", "peer", "name"]);
        command.args(["eth0", "netns", &sandbox.pid().to_string()]);
        run(command, &format!("ip link add {link} (veth into the wire)"))?;
        self.netns.ip(&["link", "set", &link, "master", BRIDGE, "up"])?;
        sandbox.ip(&["addr", "add", &format!("{address}/{WIRE_PREFIX}"), "dev", "eth0"])?;
        sandbox.ip(&["link", "set", "eth0", "up"])?;
        // A new pod may get the address of one that is gone, behind a new MAC: drop the wire's neighbour entry so
        // the next packet resolves it again, instead of going to the old MAC until the entry expires (15–45 s).
        self.netns.ip(&["neigh", "flush", "to", &address.to_string()])?;
        Ok(())
    }

    pub fn netns(&self) -> &Netns {
        &self.netns
    }
}

/// Stops a task when dropped.
pub struct Task(pub JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Makes the API server listening on the host's `127.0.0.1:port` reachable at the same address inside `netns`.
pub fn bridge_api_server(netns: &Netns, port: u16) -> Result<Task> {
    let listener = netns.within(move || {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    })?;
    let listener = tokio::net::TcpListener::from_std(listener).context("registering a bridged listener")?;
    Ok(Task(tokio::spawn(async move {
        while let Ok((mut inside, _)) = listener.accept().await {
            tokio::spawn(async move {
                // This task runs on the kubelet's threads, which are in the host's namespace.
                if let Ok(mut host) = tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port)).await {
                    let _ = tokio::io::copy_bidirectional(&mut inside, &mut host).await;
                }
            });
        }
    })))
}

/// A UDP node port on the wire: what arrives at `node:port` goes to `target` from the node's address, and the
/// answers go back from `node:port` — kube-proxy's NodePort with the source NAT it applies (there is no
/// nftables tool here to write its rules).
pub fn node_port(wire: &Wire, node: Ipv4Addr, port: u16, target: SocketAddrV4) -> Result<Task> {
    let listener = udp_in(wire.netns(), SocketAddrV4::new(node, port))?;
    let wire_ns = wire.netns().path().to_path_buf();
    Ok(Task(tokio::spawn(async move {
        let listener = Arc::new(listener);
        let mut upstreams: HashMap<SocketAddr, (Arc<UdpSocket>, Task)> = HashMap::new();
        let mut buffer = vec![0u8; 65536];
        while let Ok((len, from)) = listener.recv_from(&mut buffer).await {
            let upstream = match upstreams.entry(from) {
                Entry::Occupied(known) => known.get().0.clone(),
                Entry::Vacant(new) => {
                    let Ok(upstream) = udp_in_path(&wire_ns, SocketAddrV4::new(node, 0)) else { continue };
                    if upstream.connect(target).await.is_err() {
                        continue;
                    }
                    let upstream = Arc::new(upstream);
                    let (back, to) = (upstream.clone(), listener.clone());
                    let answers = Task(tokio::spawn(async move {
                        let mut buffer = vec![0u8; 65536];
                        loop {
                            match back.recv(&mut buffer).await {
                                Ok(len) => {
                                    let _ = to.send_to(&buffer[..len], from).await;
                                }
                                // An ICMP "port unreachable" from a gateway pod that has not bound its port yet
                                // (a new pod behind the same address): kube-proxy's flow survives it, so must
                                // this one, or every later answer of that pod is lost.
                                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
                                Err(_) => break,
                            }
                        }
                    }));
                    new.insert((upstream.clone(), answers));
                    upstream
                }
            };
            let _ = upstream.send(&buffer[..len]).await;
        }
    })))
}

fn udp_in(netns: &Netns, address: SocketAddrV4) -> Result<UdpSocket> {
    udp_in_path(netns.path(), address)
}

/// A UDP socket bound to `address` in the namespace at `path`. The thread that enters the namespace lives for
/// microseconds, so the caller's (async) thread just waits for it.
fn udp_in_path(path: &Path, address: SocketAddrV4) -> Result<UdpSocket> {
    let socket = in_namespace(path, move || {
        let socket = std::net::UdpSocket::bind(address)?;
        socket.set_nonblocking(true)?;
        Ok(socket)
    })?;
    UdpSocket::from_std(socket).context("registering a UDP socket")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Seen;

    /// The wire bridge's MAC and how many ports it has, read inside the wire's namespace.
    fn bridge(wire: &Wire) -> Result<(String, usize)> {
        let link = wire.netns().ip(&["-o", "link", "show", "dev", BRIDGE])?;
        let mac = link.split_whitespace().skip_while(|w| *w != "link/ether").nth(1).context("no MAC")?.to_owned();
        Ok((mac, wire.netns().ip(&["-o", "link", "show", "master", BRIDGE])?.lines().count()))
    }

    /// A namespace's links go once the kernel has torn it down, a little after its holder ended.
    fn wait_for_ports(wire: &Wire, ports: usize) -> Result<String> {
        let what = format!("the wire to have {ports} ports");
        crate::observe::until_blocking(Duration::from_secs(20), Duration::from_millis(50), &what, || {
            let (mac, now) = bridge(wire)?;
            Ok(if now == ports { Seen::Done(mac) } else { Seen::NotYet(format!("{now} ports")) })
        })
    }

    /// Gateway pods come and go while other tunnels run over the wire: the node addresses must keep answering
    /// with the same MAC, or the other sandboxes send to one that is gone (see [`Wire::create`]).
    #[test]
    fn the_wire_keeps_its_mac_while_gateway_pods_come_and_go() -> Result<()> {
        can_make_namespaces().context("this test makes network namespaces (run it as root)")?;
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("wire.log");
        let wire = Wire::create(&[node_ip(0)], &log)?;
        let before = wait_for_ports(&wire, 0)?;
        assert_eq!(before, BRIDGE_MAC);
        let mut pods: Vec<Netns> = (1..=3)
            .map(|n| {
                let pod = Netns::create(&format!("pod{n}"), &log)?;
                wire.plug(&pod, pod_ip(0, n))?;
                Ok(pod)
            })
            .collect::<Result<_>>()?;
        assert_eq!(wait_for_ports(&wire, 3)?, before, "a port joined");
        // Each in turn, so that whichever holds the lowest MAC goes at some point.
        while let Some(pod) = pods.pop() {
            drop(pod);
            assert_eq!(wait_for_ports(&wire, pods.len())?, before, "a port left");
        }
        Ok(())
    }
}
