//! The consumer's control-plane key Secret: `liqo_consumer_key` writes it, `liqo_peer` reads the key from it (and
//! names it on import). Its name and data keys are decided here, once for both.

/// Data keys of the key Secret: the private key (PKCS#8 PEM, as in Liqo's own `authentication-keys`) and its CSR.
pub const PRIVATE_KEY: &str = "privateKey";
pub const CSR: &str = "csr";

/// Name of the key Secret for `provider`.
pub fn key_secret_name(provider: &str) -> String {
    format!("controlplane-key-{provider}")
}
