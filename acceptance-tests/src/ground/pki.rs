//! Certificates of one ground cluster: a cluster CA (also the controller-manager's CSR signer), the API
//! server's serving certificate, client certificates and the service-account signing key. Keys are ECDSA P-256.
use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

/// A certificate with its private key, both PEM.
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The cluster CA. Clients are authenticated against it and kube-controller-manager signs CSRs with it.
pub struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pub cert_pem: String,
    pub key_pem: String,
}

impl Ca {
    pub fn generate(cluster: &str) -> Result<Ca> {
        let key = KeyPair::generate().context("generating the CA key")?;
        let mut params = CertificateParams::default();
        params.distinguished_name = name(&format!("{cluster}-ca"), None);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        validity(&mut params, Duration::days(3650));
        let cert = params.self_signed(&key).context("self-signing the CA")?;
        let key_pem = key.serialize_pem();
        Ok(Ca { issuer: Issuer::new(params, key), cert_pem: cert.pem(), key_pem })
    }

    /// Serving certificate for the API server, valid for `sans` (DNS names and IP addresses).
    pub fn issue_server(&self, common_name: &str, sans: &[&str]) -> Result<Issued> {
        let mut params = CertificateParams::new(sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
            .context("server certificate names")?;
        params.distinguished_name = name(common_name, None);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.issue(params)
    }

    /// Client certificate: Kubernetes reads the user from CN and the group from O.
    pub fn issue_client(&self, user: &str, group: Option<&str>) -> Result<Issued> {
        let mut params = CertificateParams::default();
        params.distinguished_name = name(user, group);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(params)
    }

    fn issue(&self, mut params: CertificateParams) -> Result<Issued> {
        let key = KeyPair::generate().context("generating a certificate key")?;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params, Duration::days(365));
        let cert = params.signed_by(&key, &self.issuer).context("signing a certificate with the cluster CA")?;
        Ok(Issued { cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    }
}

/// A fresh private key and a PEM certificate signing request for `CN=user, O=group`, as a Kubernetes client
/// submits in a CertificateSigningRequest. Returns `(key_pem, csr_pem)`.
pub fn client_key_and_csr(user: &str, group: Option<&str>) -> Result<(String, String)> {
    let key = KeyPair::generate().context("generating a client key")?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(user, group);
    let csr = params.serialize_request(&key).context("building a certificate signing request")?;
    Ok((key.serialize_pem(), csr.pem().context("encoding a certificate signing request")?))
}

/// Key pair with which service-account tokens are signed (private, PKCS#8) and verified (public), both PEM.
pub fn service_account_keys() -> Result<(String, String)> {
    let key = KeyPair::generate().context("generating the service-account key")?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

// rcgen keeps one value per attribute type, hence a single organization (group).
fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(organization) = organization {
        dn.push(DnType::OrganizationName, organization);
    }
    dn
}

/// Back-dated an hour so that small clock differences never make a fresh certificate "not yet valid".
fn validity(params: &mut CertificateParams, lifetime: Duration) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + lifetime;
}
