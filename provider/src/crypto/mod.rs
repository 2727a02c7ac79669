//! Certificates, keys and certificate signing requests, with maintained crates: `pem` splits PEM text,
//! `x509-parser` reads certificates and CSRs (and verifies a CSR's self-signature), `rcgen` makes keys and CSRs.
//! WireGuard key pairs are in [`wireguard`] (x25519-dalek). No cluster access here, and no Liqo knowledge beyond
//! what the callers pass in.
//!
//! One rule for CA bundles ([`certificates`]) serves every attribute that takes one (the provider block's
//! `cluster_ca_certificate`, `liqo_tenant.api_server_ca`, `liqo_peer.cluster_ca_certificate`) and the TLS probe.
pub mod wireguard;

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256};
use time::OffsetDateTime;
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::{FromDer, X509Certificate};
use zeroize::Zeroizing;

/// The DER certificates of a PEM bundle: at least one block, every block a `CERTIFICATE` that parses as X.509.
/// The error says what was found instead (never the content: a misplaced key must not be echoed).
pub fn certificates(pem_text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let blocks = pem::parse_many(pem_text).map_err(|e| format!("it is not valid PEM ({e})"))?;
    if blocks.is_empty() {
        return Err("it holds no PEM block".into());
    }
    let others: Vec<&str> = blocks.iter().map(|b| b.tag()).filter(|t| *t != "CERTIFICATE").collect();
    if !others.is_empty() {
        return Err(format!("it holds PEM blocks other than CERTIFICATE ({})", others.join(", ")));
    }
    blocks
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            X509Certificate::from_der(b.contents())
                .map_err(|e| format!("certificate {} of the bundle is not X.509 ({e})", i + 1))?;
            Ok(b.into_contents())
        })
        .collect()
}

/// The one certificate of a PEM text.
fn single_certificate(pem_text: &[u8]) -> Result<Vec<u8>, String> {
    let mut certs = certificates(pem_text)?;
    match certs.len() {
        1 => Ok(certs.remove(0)),
        n => Err(format!("it holds {n} certificates where one is expected")),
    }
}

/// `notAfter` of a PEM certificate.
pub fn not_after(cert_pem: &[u8]) -> Result<OffsetDateTime, String> {
    let der = single_certificate(cert_pem)?;
    let (_, cert) = X509Certificate::from_der(&der).map_err(|e| format!("not X.509: {e}"))?;
    Ok(cert.validity().not_after.to_datetime())
}

// Public keys are compared as the raw key bits (the SubjectPublicKeyInfo's BIT STRING), which do not depend on how
// an encoder spells the algorithm identifier.

/// The public key a PEM certificate was issued for.
pub fn certificate_public_key(cert_pem: &[u8]) -> Result<Vec<u8>, String> {
    let der = single_certificate(cert_pem)?;
    let (_, cert) = X509Certificate::from_der(&der).map_err(|e| format!("not X.509: {e}"))?;
    Ok(cert.public_key().subject_public_key.data.to_vec())
}

/// The public key of a PEM PKCS#8 private key. The error never quotes the key.
pub fn private_key_public_key(key_pem: &str) -> Result<Vec<u8>, String> {
    let key = KeyPair::from_pem(key_pem).map_err(|_| "it is not a PEM PKCS#8 private key".to_string())?;
    Ok(key.public_key_raw().to_vec())
}

/// A fresh private key (PKCS#8 PEM, wiped from memory when dropped) and a PEM CSR for it.
pub struct ClientKey {
    pub key_pem: Zeroizing<String>,
    pub csr_pem: String,
}

/// ECDSA P-256: accepted by kube-apiserver client-certificate auth, by client-go (Liqo) and by rustls (kube-rs),
/// unlike Ed25519 on some TLS stacks. The CSR's subject is `CN=<common_name>, O=<organization>`.
pub fn new_client_key(common_name: &str, organization: &str) -> Result<ClientKey, String> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| format!("key generation failed: {e}"))?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn.push(DnType::OrganizationName, organization);
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key).map_err(|e| format!("CSR encoding failed: {e}"))?;
    let csr_pem = csr.pem().map_err(|e| format!("CSR encoding failed: {e}"))?;
    Ok(ClientKey { key_pem: Zeroizing::new(key.serialize_pem()), csr_pem })
}

/// What a CSR asks for.
#[derive(Debug, PartialEq)]
pub struct CsrSubject {
    pub common_name: String,
    pub organizations: Vec<String>,
    /// The public key that signed the request.
    pub public_key: Vec<u8>,
}

/// Reads a PEM CSR and verifies its self-signature (the requester holds the key).
pub fn inspect_csr(csr_pem: &[u8]) -> Result<CsrSubject, String> {
    let blocks = pem::parse_many(csr_pem).map_err(|e| format!("it is not valid PEM ({e})"))?;
    let [block] = blocks.as_slice() else {
        return Err(format!("it holds {} PEM blocks where one CERTIFICATE REQUEST is expected", blocks.len()));
    };
    if !matches!(block.tag(), "CERTIFICATE REQUEST" | "NEW CERTIFICATE REQUEST") {
        return Err(format!("its PEM block is {}, not CERTIFICATE REQUEST", block.tag()));
    }
    let (_, csr) = X509CertificationRequest::from_der(block.contents())
        .map_err(|e| format!("it is not a PKCS#10 certificate request ({e})"))?;
    csr.verify_signature().map_err(|e| format!("its signature does not verify ({e})"))?;
    let info = &csr.certification_request_info;
    let strings = |it: &mut dyn Iterator<Item = &x509_parser::x509::AttributeTypeAndValue<'_>>| -> Vec<String> {
        it.filter_map(|a| a.as_str().ok().map(str::to_string)).collect()
    };
    Ok(CsrSubject {
        common_name: strings(&mut info.subject.iter_common_name()).into_iter().next().unwrap_or_default(),
        organizations: strings(&mut info.subject.iter_organization()),
        public_key: info.subject_pki.subject_public_key.data.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use time::format_description::well_known::Rfc3339;

    /// A self-signed certificate valid until `not_after`, and its key.
    fn certificate(not_after: OffsetDateTime) -> (String, KeyPair) {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.not_after = not_after;
        (params.self_signed(&key).unwrap().pem(), key)
    }

    #[test]
    fn expiry_is_read_in_both_asn1_time_encodings() {
        // UTCTime (before 2050) and GeneralizedTime (from 2050).
        for when in ["2031-05-06T07:08:09Z", "2061-01-02T03:04:05Z"] {
            let t = OffsetDateTime::parse(when, &Rfc3339).unwrap();
            assert_eq!(not_after(certificate(t).0.as_bytes()).unwrap(), t);
        }
        assert!(not_after(b"not a certificate").is_err());
    }

    #[test]
    fn a_ca_bundle_is_certificates_only() {
        let soon = OffsetDateTime::now_utc() + Duration::from_secs(3600);
        let (a, key) = certificate(soon);
        let (b, _) = certificate(soon);
        assert_eq!(certificates(a.as_bytes()).unwrap().len(), 1);
        assert_eq!(certificates(format!("{a}{b}").as_bytes()).unwrap().len(), 2);
        let with_key = format!("{a}{}", key.serialize_pem());
        let err = certificates(with_key.as_bytes()).unwrap_err();
        assert!(err.contains("other than CERTIFICATE (PRIVATE KEY)"), "{err}");
        assert!(!err.contains(key.serialize_pem().lines().nth(1).unwrap()), "the key is never echoed");
        for bad in ["", "not PEM", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"] {
            assert!(certificates(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_csr_names_its_subject_and_key_and_a_tampered_one_is_refused() {
        let k = new_client_key("rome", "liqo.io").unwrap();
        assert!(k.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let subject = inspect_csr(k.csr_pem.as_bytes()).unwrap();
        assert_eq!(subject.common_name, "rome");
        assert_eq!(subject.organizations, ["liqo.io"]);
        assert_eq!(subject.public_key, private_key_public_key(&k.key_pem).unwrap());

        let other = new_client_key("rome", "liqo.io").unwrap();
        assert_ne!(private_key_public_key(&other.key_pem).unwrap(), subject.public_key);
        // Flip one byte of the signature: the requester no longer proves it holds the key.
        let block = pem::parse(&k.csr_pem).unwrap();
        let mut der = block.contents().to_vec();
        let last = der.len() - 1;
        der[last] ^= 1;
        let tampered = pem::encode(&pem::Pem::new("CERTIFICATE REQUEST", der));
        assert!(inspect_csr(tampered.as_bytes()).unwrap_err().contains("signature"));
        let (cert, _) = certificate(OffsetDateTime::now_utc() + Duration::from_secs(60));
        assert!(inspect_csr(cert.as_bytes()).unwrap_err().contains("not CERTIFICATE REQUEST"));
    }

    #[test]
    fn a_certificate_names_the_key_it_was_issued_for() {
        let (cert, key) = certificate(OffsetDateTime::now_utc() + Duration::from_secs(60));
        assert_eq!(certificate_public_key(cert.as_bytes()).unwrap(), key.public_key_raw());
        assert!(private_key_public_key("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err());
    }
}
