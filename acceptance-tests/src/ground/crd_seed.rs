//! Liqo's CRDs written into a new cluster's keys in the ground's etcd, as an API server stored them, instead of
//! created through the cluster's API each time.
//!
//! Why: the API server validates a CRD's whole schema when it is created and again on each update. Liqo's four
//! largest CRDs hold pod and Deployment templates (WgGatewayServer, WgGatewayClient, VirtualNode, ShadowPod: 2.8 of
//! the 3.1 MB of its 30 CRDs), and creating the 30 cost one kube-apiserver v1.34.4 3.4 CPU-seconds, more than the
//! rest of its start (2.4); written into its etcd keys, the same 30 cost it 1.0 and were Established as fast
//! (2026-11-29, `/proc/<pid>/stat` of one API server). An API server finds CRDs in its storage the way it finds
//! them after a restart. A test run starts a hundred API servers.
//!
//! What is written is what an API server wrote: the first cluster whose CRD set has no seed yet creates them
//! through its API, then its stored CRDs are read back from etcd and kept in `$LIQO_TEST_CACHE/crd-seeds/`, keyed
//! by the CRD files' bytes, the field manager and the kube-apiserver build. Only the key's cluster prefix differs
//! from one cluster to the next (and the CRDs carry the first cluster's UIDs and creation times).
use std::future::Future;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::bootstrap;
use super::control_plane::{Etcd, Layout};

/// Changes when the file's layout does, so that an old seed is never read as a new one.
const FORMAT: &str = "crd-seed 1";

/// The stored CRDs of one CRD set, in a file of the test cache.
pub struct CrdSeed {
    file: PathBuf,
    /// How many CRDs the set has: a seed with another count is not this set's.
    count: usize,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    name: String,
    /// The bytes the API server wrote, base64.
    value: String,
}

impl CrdSeed {
    /// The seed of the CRD files `files`, applied by `manager`, for the API server `kube_apiserver`.
    pub fn of(files: &[PathBuf], manager: &str, kube_apiserver: &Path) -> Result<CrdSeed> {
        // The cache's binary is a link to its versioned build (kube-apiserver-v1.34.4).
        let build =
            std::fs::canonicalize(kube_apiserver).with_context(|| format!("resolving {}", kube_apiserver.display()))?;
        let mut hash = Sha256::new();
        for part in [FORMAT, manager, &build.file_name().unwrap_or_default().to_string_lossy()] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        for file in files {
            let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            hash.update(file.file_name().unwrap_or_default().as_encoded_bytes());
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(&bytes);
        }
        let key: String = hash.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
        Ok(CrdSeed {
            file: super::upstream::cache_dir()?.join("crd-seeds").join(format!("{key}.json")),
            count: files.len(),
        })
    }

    /// Makes the set's CRDs exist on `layout`'s new cluster and waits until each is Established: written into its
    /// etcd keys when the seed exists, else created by `create` (through the cluster's API) and kept as the seed.
    pub async fn install(
        &self,
        etcd: &Etcd,
        layout: &Layout,
        client: &kube::Client,
        create: impl Future<Output = Result<()>>,
    ) -> Result<()> {
        let prefix = format!("{}/apiextensions.k8s.io/customresourcedefinitions/", layout.etcd_prefix());
        let Some(stored) = self.read()? else {
            create.await?;
            return self.record(etcd, &prefix).await;
        };
        let entries = stored
            .iter()
            .map(|crd| {
                let value =
                    STANDARD.decode(&crd.value).with_context(|| format!("{}: {}", self.file.display(), crd.name))?;
                Ok((format!("{prefix}{}", crd.name), value))
            })
            .collect::<Result<Vec<_>>>()?;
        etcd.put_all(&entries).await?;
        let names = stored.into_iter().map(|crd| crd.name).collect();
        bootstrap::wait_established(client, names).await.with_context(|| {
            format!(
                "CRDs written into the cluster's etcd from {}; if that file is damaged, delete it (the next start \
                 creates the CRDs through the API and writes it anew)",
                self.file.display()
            )
        })
    }

    fn read(&self) -> Result<Option<Vec<Stored>>> {
        let text = match std::fs::read(&self.file) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err).with_context(|| format!("reading {}", self.file.display())),
        };
        let stored: Vec<Stored> = serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a CRD seed; delete it", self.file.display()))?;
        ensure!(
            stored.len() == self.count,
            "{} holds {} CRDs, the set has {}; delete it",
            self.file.display(),
            stored.len(),
            self.count
        );
        Ok(Some(stored))
    }

    /// Keeps the CRDs stored under `prefix` as the seed. Several grounds may record the same seed at once: each
    /// writes a file of its own and renames it into place.
    async fn record(&self, etcd: &Etcd, prefix: &str) -> Result<()> {
        let stored: Vec<Stored> = etcd
            .values_under(prefix)
            .await?
            .into_iter()
            .map(|(key, value)| Stored {
                name: key.strip_prefix(prefix).unwrap_or(&key).to_owned(),
                value: STANDARD.encode(value),
            })
            .collect();
        if stored.len() != self.count {
            bail!("read {} CRDs back from etcd under {prefix}, expected {}", stored.len(), self.count);
        }
        let dir = self.file.parent().context("a seed file has a directory")?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        serde_json::to_writer(&mut file, &stored)?;
        file.persist(&self.file).with_context(|| format!("writing {}", self.file.display()))?;
        Ok(())
    }
}
