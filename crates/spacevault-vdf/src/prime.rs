//! Primes drawn from a hash: the discriminant of a VDF's class group, and
//! the Wesolowski proof's challenge prime, as chiavdf draws them
//! (`HashPrime`): SHA-256 of a counter appended to the seed, expanded to
//! the length, some bits forced, until a probable prime.

use rug::integer::{IsPrime, Order};
use rug::Integer;
use sha2::{Digest, Sha256};

/// Miller–Rabin rounds after GMP's Baillie–PSW test: a composite passes
/// with a chance below 4^-25 beyond that test, for which none is known.
const PRIME_REPS: u32 = 25;

/// The first probable prime of `bits` bits (a multiple of 8) drawn from
/// `seed`, with the bits of `forced` set. The seed is taken as a
/// big-endian counter: each hash is of the counter plus one.
pub fn hash_prime(seed: &[u8], bits: u32, forced: &[u32]) -> Integer {
    assert!(
        bits.is_multiple_of(8) && bits > 0,
        "a whole number of bytes"
    );
    let bytes = (bits / 8) as usize;
    let mut sprout = seed.to_vec();
    let mut blob = Vec::with_capacity(bytes + 32);
    loop {
        blob.clear();
        while blob.len() < bytes {
            for byte in sprout.iter_mut().rev() {
                *byte = byte.wrapping_add(1);
                if *byte != 0 {
                    break;
                }
            }
            let hash = Sha256::digest(&sprout);
            let take = hash.len().min(bytes - blob.len());
            blob.extend_from_slice(&hash[..take]);
        }
        let mut p = Integer::from_digits(&blob, Order::Msf);
        for &bit in forced {
            p.set_bit(bit, true);
        }
        p.set_bit(0, true);
        if p.is_probably_prime(PRIME_REPS) != IsPrime::No {
            return p;
        }
    }
}

/// The discriminant of `bits` bits chiavdf makes from `seed`: minus a prime
/// ≡ 7 mod 8 with its top bit set, so that the generator (2, 1) is a form.
pub fn discriminant(seed: &[u8], bits: u32) -> Integer {
    -hash_prime(seed, bits, &[0, 1, 2, bits - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discriminant_is_minus_a_prime_of_its_size_7_mod_8() {
        let d = discriminant(b"spacevault", 512);
        assert!(d < 0);
        let p = Integer::from(-&d);
        assert_eq!(p.significant_bits(), 512);
        assert_eq!(Integer::from(&p % 8u32), 7);
        assert_ne!(p.is_probably_prime(30), IsPrime::No);
    }

    #[test]
    fn the_counter_carries_into_the_byte_before() {
        // A seed ending in 0xff: the first hash is of [0x01, 0x00].
        let p = hash_prime(&[0x00, 0xff], 256, &[255]);
        let first = Sha256::digest([0x01, 0x00]);
        let mut expected = Integer::from_digits(&first[..], Order::Msf);
        expected.set_bit(255, true);
        expected.set_bit(0, true);
        // Either the first candidate was prime, or a later one was drawn.
        if expected.is_probably_prime(PRIME_REPS) != IsPrime::No {
            assert_eq!(p, expected);
        } else {
            assert_ne!(p, expected);
        }
    }
}
