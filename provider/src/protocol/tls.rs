//! go-plugin's automatic mTLS.
//!
//! Terraform generates a self-signed client certificate per provider process and passes it in
//! `PLUGIN_CLIENT_CERT`; the provider answers with its own self-signed certificate in the handshake line.
//! Terraform trusts exactly that certificate (as a root, for server name "localhost"), and the provider must
//! trust exactly Terraform's: a client without it must not reach the provider, which holds cluster
//! credentials once configured.
//!
//! webpki's client verifier cannot do this: both certificates are CA certificates used as end entities, and
//! Terraform's key is ECDSA P-521 with SHA-512 signatures, which ring does not implement. So the verifier below
//! pins the certificate bytes and checks the handshake signature itself, with RustCrypto's `p521` for P-521
//! and ring for everything else.
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{
    AlgorithmIdentifier, CertificateDer, InvalidSignature, PrivateKeyDer, PrivatePkcs8KeyDer,
    SignatureVerificationAlgorithm, UnixTime, alg_id,
};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};
use std::sync::Arc;

/// The provider's TLS identity for one process.
pub(crate) struct ServerIdentity {
    pub(crate) cert: CertificateDer<'static>,
    pub(crate) key: PrivateKeyDer<'static>,
}

/// A fresh self-signed certificate shaped like go-plugin's own: CA, SAN "localhost", server and client auth.
pub(crate) fn server_identity() -> Result<ServerIdentity, rcgen::Error> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose};
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
    params.distinguished_name.push(DnType::OrganizationName, "terraform-provider");
    params.distinguished_name.push(DnType::CommonName, "localhost");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyAgreement,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    // Backdated against clock skew between the two processes; a provider process lives minutes, not days.
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(30);
    let cert = params.self_signed(&key)?;
    Ok(ServerIdentity {
        cert: cert.der().clone(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    })
}

/// Parses `PLUGIN_CLIENT_CERT` (one PEM certificate).
pub(crate) fn parse_client_cert(pem: &str) -> Result<CertificateDer<'static>, String> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| format!("PLUGIN_CLIENT_CERT is not a PEM certificate: {e}"))
}

/// TLS 1.3 only (what go-plugin's Go client negotiates), ALPN "h2" (grpc-go insists on it), and the pinned
/// client certificate.
pub(crate) fn server_config(
    identity: &ServerIdentity,
    client_cert: CertificateDer<'static>,
) -> Result<ServerConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinnedClientCert::new(client_cert, &provider));
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![identity.cert.clone()], identity.key.clone_key())?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(config)
}

/// Accepts exactly one client certificate, byte for byte.
#[derive(Debug)]
pub(crate) struct PinnedClientCert {
    expected: CertificateDer<'static>,
    ring: WebPkiSupportedAlgorithms,
}

impl PinnedClientCert {
    pub(crate) fn new(expected: CertificateDer<'static>, provider: &CryptoProvider) -> PinnedClientCert {
        PinnedClientCert { expected, ring: provider.signature_verification_algorithms }
    }

    fn check_pinned(&self, cert: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        if cert.as_ref() == self.expected.as_ref() {
            Ok(())
        } else {
            Err(rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure))
        }
    }

    fn algorithms(&self, scheme: SignatureScheme) -> &WebPkiSupportedAlgorithms {
        if scheme == SignatureScheme::ECDSA_NISTP521_SHA512 { &P521_ALGORITHMS } else { &self.ring }
    }
}

impl ClientCertVerifier for PinnedClientCert {
    fn client_auth_mandatory(&self) -> bool {
        true
    }

    /// No hints: Go's client then offers its only certificate whatever its issuer.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.check_pinned(end_entity)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check_pinned(cert)?;
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.algorithms(dss.scheme))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.check_pinned(cert)?;
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.algorithms(dss.scheme))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        let mut schemes = self.ring.supported_schemes();
        schemes.push(SignatureScheme::ECDSA_NISTP521_SHA512);
        schemes
    }
}

static P521_ALGORITHMS: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[&EcdsaP521Sha512],
    mapping: &[(SignatureScheme::ECDSA_NISTP521_SHA512, &[&EcdsaP521Sha512])],
};

/// ECDSA over P-521 with SHA-512, the signature go-plugin's client key makes.
#[derive(Debug)]
struct EcdsaP521Sha512;

impl SignatureVerificationAlgorithm for EcdsaP521Sha512 {
    /// `public_key` is the SEC1 point from the certificate; `signature` is ASN.1 DER as TLS carries it.
    fn verify_signature(&self, public_key: &[u8], message: &[u8], signature: &[u8]) -> Result<(), InvalidSignature> {
        use p521::ecdsa::signature::Verifier;
        let key = p521::ecdsa::VerifyingKey::from_sec1_bytes(public_key).map_err(|_| InvalidSignature)?;
        let sig = p521::ecdsa::Signature::from_der(signature).map_err(|_| InvalidSignature)?;
        key.verify(message, &sig).map_err(|_| InvalidSignature)
    }

    fn public_key_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_P521
    }

    fn signature_alg_id(&self) -> AlgorithmIdentifier {
        alg_id::ECDSA_SHA512
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    // Made with OpenSSL (independent of the p521 crate):
    //   openssl ecparam -name secp521r1 -genkey -noout -out k.pem
    //   openssl ec -in k.pem -pubout -conv_form uncompressed -outform DER | tail -c 133   (the point)
    //   printf 'tfplugin6 handshake' | openssl dgst -sha512 -sign k.pem                      (DER signature)
    const POINT: &str = include_str!("testdata/p521_point.hex");
    const SIGNATURE: &str = include_str!("testdata/p521_sha512_sig.hex");
    const MESSAGE: &[u8] = b"tfplugin6 handshake";

    #[test]
    fn p521_sha512_verifies_openssl_signatures() {
        let alg = EcdsaP521Sha512;
        let (point, sig) = (hex(POINT), hex(SIGNATURE));
        assert!(alg.verify_signature(&point, MESSAGE, &sig).is_ok());
        assert!(alg.verify_signature(&point, b"another message", &sig).is_err());
        let mut bad = sig.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(alg.verify_signature(&point, MESSAGE, &bad).is_err());
    }

    #[test]
    fn only_the_pinned_certificate_passes() {
        let a = server_identity().unwrap().cert;
        let b = server_identity().unwrap().cert;
        let provider = rustls::crypto::ring::default_provider();
        let v = PinnedClientCert::new(a.clone(), &provider);
        assert!(v.verify_client_cert(&a, &[], UnixTime::now()).is_ok());
        assert!(v.verify_client_cert(&b, &[], UnixTime::now()).is_err());
        assert!(v.client_auth_mandatory());
        assert!(v.supported_verify_schemes().contains(&SignatureScheme::ECDSA_NISTP521_SHA512));
    }
}
