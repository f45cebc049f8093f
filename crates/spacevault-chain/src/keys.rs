//! Ed25519 keys: a farmer's (its public key is the farmer key F its plots
//! belong to, and its libp2p identity) and a client's (the owner of its
//! registers). Verification is strict (no malleable signatures).

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};

/// A key pair that signs.
#[derive(Clone)]
pub struct Keypair(SigningKey);

impl Keypair {
    /// The key pair of a 32-byte secret.
    pub fn from_secret(secret: &[u8; 32]) -> Keypair {
        Keypair(SigningKey::from_bytes(secret))
    }

    pub fn secret(&self) -> [u8; 32] {
        self.0.to_bytes()
    }

    pub fn public(&self) -> [u8; 32] {
        self.0.verifying_key().to_bytes()
    }

    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.0.sign(message).to_bytes()
    }
}

impl std::fmt::Debug for Keypair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keypair({})", hex::encode(self.public()))
    }
}

/// Whether `signature` is `public`'s over `message`. A public key that is
/// no point of the curve verifies nothing.
pub fn verify(public: &[u8; 32], message: &[u8], signature: &[u8; 64]) -> bool {
    let Ok(key) = VerifyingKey::from_bytes(public) else {
        return false;
    };
    let signature = ed25519_dalek::Signature::from_bytes(signature);
    key.verify_strict(message, &signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_verifies_only_for_its_key_and_message() {
        let a = Keypair::from_secret(&[1; 32]);
        let b = Keypair::from_secret(&[2; 32]);
        let sig = a.sign(b"block");
        assert!(verify(&a.public(), b"block", &sig));
        assert!(!verify(&b.public(), b"block", &sig));
        assert!(!verify(&a.public(), b"blocK", &sig));
        let mut bent = sig;
        bent[10] ^= 1;
        assert!(!verify(&a.public(), b"block", &bent));
        assert_eq!(Keypair::from_secret(&a.secret()).public(), a.public());
    }

    #[test]
    fn a_keypair_shows_its_public_key_and_never_its_secret() {
        let k = Keypair::from_secret(&[0x5a; 32]);
        let shown = format!("{k:?}");
        assert_eq!(shown, format!("Keypair({})", hex::encode(k.public())));
        assert!(!shown.contains(&hex::encode([0x5a; 32])));
    }
}
