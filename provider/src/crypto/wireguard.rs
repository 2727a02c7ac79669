//! X25519 key pairs as `wg genkey` / `wg pubkey` make them. Nothing here implements Debug or Display: the private
//! key can only leave this module as the Secret's data.
use base64::Engine;
use k8s_openapi::ByteString;
use liqo_schema::liqo::labels::{WIREGUARD_PRIVATE_KEY, WIREGUARD_PUBLIC_KEY};
use rand::TryRngCore;
use std::collections::BTreeMap;
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// One X25519 pair; the private half can only leave as the key Secret's data.
pub struct KeyPair {
    private: StaticSecret,
    public: PublicKey,
}

/// Curve25519 clamping, as `wg genkey` applies it before printing, so the stored bytes match WireGuard's.
fn clamp(k: &mut [u8; 32]) {
    k[0] &= 248;
    k[31] &= 127;
    k[31] |= 64;
}

impl KeyPair {
    /// A fresh pair from the operating system's random source.
    pub fn generate() -> Result<KeyPair, String> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng
            .try_fill_bytes(&mut *bytes)
            .map_err(|e| format!("the operating system's random source failed: {e}"))?;
        clamp(&mut bytes);
        let private = StaticSecret::from(*bytes);
        let public = PublicKey::from(&private);
        Ok(KeyPair { private, public })
    }

    pub fn public_key(&self) -> String {
        encode(self.public.as_bytes())
    }

    /// `data` of the key Secret: raw 32-byte keys (the API carries them base64-encoded, as `wg` prints them).
    pub fn secret_data(&self) -> BTreeMap<String, ByteString> {
        BTreeMap::from([
            (WIREGUARD_PRIVATE_KEY.to_string(), ByteString(self.private.to_bytes().to_vec())),
            (WIREGUARD_PUBLIC_KEY.to_string(), ByteString(self.public.as_bytes().to_vec())),
        ])
    }
}

/// Standard base64, as `wg` prints keys.
pub fn encode(key: &[u8; 32]) -> String {
    base64::engine::general_purpose::STANDARD.encode(key)
}

/// The public key of a Secret's pair when both keys are 32 bytes and the public one derives from the private one.
pub fn verify(data: &BTreeMap<String, ByteString>) -> Result<[u8; 32], String> {
    let key = |name: &str| -> Result<Zeroizing<[u8; 32]>, String> {
        let raw = data.get(name).ok_or_else(|| format!("data.{name} is missing"))?;
        let arr: [u8; 32] =
            raw.0.as_slice().try_into().map_err(|_| format!("data.{name} is {} bytes, not 32", raw.0.len()))?;
        Ok(Zeroizing::new(arr))
    };
    let private = key(WIREGUARD_PRIVATE_KEY)?;
    let public = key(WIREGUARD_PUBLIC_KEY)?;
    let derived = PublicKey::from(&StaticSecret::from(*private));
    if derived.as_bytes() != &*public {
        return Err(format!("data.{WIREGUARD_PUBLIC_KEY} is not the public key of data.{WIREGUARD_PRIVATE_KEY}"));
    }
    Ok(*public)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_are_clamped_32_byte_pairs() {
        let k = KeyPair::generate().unwrap();
        let data = k.secret_data();
        let private = &data[WIREGUARD_PRIVATE_KEY].0;
        assert_eq!(private.len(), 32);
        assert_eq!(private[0] & 7, 0);
        assert_eq!(private[31] & 0xc0, 0x40);
        assert_eq!(verify(&data).map(|p| encode(&p)), Ok(k.public_key()));
        assert_eq!(k.public_key().len(), 44);
        assert_ne!(KeyPair::generate().unwrap().public_key(), k.public_key(), "each pair is fresh");
    }

    /// RFC 7748 §6.1 (Alice): the derivation matches every other X25519 implementation, `wg pubkey` included.
    #[test]
    fn public_key_derivation_matches_rfc7748() {
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
        };
        let private = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let public = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        let data = BTreeMap::from([
            (WIREGUARD_PRIVATE_KEY.to_string(), ByteString(private.clone())),
            (WIREGUARD_PUBLIC_KEY.to_string(), ByteString(public.clone())),
        ]);
        assert_eq!(verify(&data).unwrap().to_vec(), public);
    }

    #[test]
    fn broken_pairs_are_rejected_with_the_reason() {
        let mut data = KeyPair::generate().unwrap().secret_data();
        data.insert(
            WIREGUARD_PUBLIC_KEY.to_string(),
            KeyPair::generate().unwrap().secret_data()[WIREGUARD_PUBLIC_KEY].clone(),
        );
        assert!(verify(&data).unwrap_err().contains("is not the public key"));
        data.insert(WIREGUARD_PRIVATE_KEY.to_string(), ByteString(vec![1; 31]));
        assert!(verify(&data).unwrap_err().contains("data.privateKey is 31 bytes, not 32"));
        let mut data = KeyPair::generate().unwrap().secret_data();
        data.remove(WIREGUARD_PUBLIC_KEY);
        assert!(verify(&data).unwrap_err().contains("data.publicKey is missing"));
    }
}
