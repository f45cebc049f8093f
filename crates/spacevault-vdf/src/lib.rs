//! A verifiable delay function: Wesolowski's proofs over the class group
//! of an imaginary quadratic field, with the discriminant, the generator,
//! the serialization of forms and the challenge prime exactly as Chia's
//! timelords and `chiavdf` make them, so that either side verifies the
//! other's proofs (`tests/chiavdf.rs` holds vectors chiavdf made, and
//! checks against chiavdf itself where it is installed).
//!
//! Evaluating takes t squarings one after another, and no known way does
//! it faster with more cores (the group's order is unknown); checking takes
//! two exponentiations of about 264 bits, a few milliseconds.

pub mod bqfc;
pub mod form;
pub mod nucomp;
pub mod prime;
pub mod wesolowski;

pub use bqfc::FORM_BYTES;
pub use form::Form;
pub use rug::Integer;

/// Why bytes are not a proof.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum VdfError {
    #[error("the {0} is not the serialization of a reduced form of the discriminant")]
    NotAForm(&'static str),
    #[error("the proof does not show the output is the input after the iterations")]
    Wrong,
}

/// A class group, named by its discriminant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    ctx: nucomp::Ctx,
}

/// An output and its proof, serialized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proved {
    pub y: [u8; FORM_BYTES],
    pub proof: [u8; FORM_BYTES],
}

impl Group {
    /// The group chiavdf makes from `seed` (`create_discriminant`), with a
    /// discriminant of `bits` bits (a multiple of 8, at most 1024).
    pub fn from_seed(seed: &[u8], bits: u32) -> Group {
        assert!(
            bits.is_multiple_of(8) && (16..=bqfc::MAX_D_BITS).contains(&bits),
            "a discriminant of 16 to 1024 bits, whole bytes"
        );
        Group {
            ctx: nucomp::Ctx::new(&prime::discriminant(seed, bits)),
        }
    }

    pub fn discriminant(&self) -> &Integer {
        &self.ctx.d
    }

    /// The discriminant with the bound of its partial gcds.
    pub fn ctx(&self) -> &nucomp::Ctx {
        &self.ctx
    }

    /// The generator (2, 1), whose serialization is the one byte 0x08.
    pub fn generator(&self) -> Form {
        Form::generator(&self.ctx.d)
    }

    pub fn serialize(&self, f: &Form) -> [u8; FORM_BYTES] {
        bqfc::serialize(f, &self.ctx.d).expect("the group's discriminant fits")
    }

    pub fn deserialize(&self, bytes: &[u8]) -> Option<Form> {
        bqfc::deserialize(bytes, &self.ctx.d)
    }

    /// x^(2^t) and its proof, serialized: the proof from checkpoints kept
    /// while evaluating where they pay (a fraction of t compositions),
    /// else by long division (t squarings more).
    pub fn prove(&self, x: &Form, t: u64) -> Proved {
        let fits = "the group's discriminant fits";
        let (y, proof) = match wesolowski::checkpoint_spacing(t) {
            Some(k) => {
                let (y, kept) = wesolowski::evaluate_keeping(x, t, k, &self.ctx);
                let proof =
                    wesolowski::prove_from_checkpoints(x, &y, t, k, &kept, &self.ctx).expect(fits);
                (y, proof)
            }
            None => {
                let y = wesolowski::evaluate(x, t, &self.ctx);
                let proof = wesolowski::prove(x, &y, t, &self.ctx).expect(fits);
                (y, proof)
            }
        };
        Proved {
            y: self.serialize(&y),
            proof: self.serialize(&proof),
        }
    }

    /// Checks serialized x, y and proof for `t` iterations.
    pub fn verify(&self, x: &[u8], y: &[u8], proof: &[u8], t: u64) -> Result<(), VdfError> {
        let x = self.deserialize(x).ok_or(VdfError::NotAForm("input"))?;
        let y = self.deserialize(y).ok_or(VdfError::NotAForm("output"))?;
        let proof = self.deserialize(proof).ok_or(VdfError::NotAForm("proof"))?;
        if wesolowski::verify(&x, &y, &proof, t, &self.ctx) {
            Ok(())
        } else {
            Err(VdfError::Wrong)
        }
    }
}
