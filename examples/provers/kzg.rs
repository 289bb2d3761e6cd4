//! KZG polynomial commitments on BLS12-377 with every G1 MSM on a [`GpuMsm`]: the powers of
//! tau are loaded once as resident bases, a commitment to a polynomial of degree d is an MSM
//! over the first d + 1 of them, and an opening proof is the commitment to the quotient.
//! Verification is arkworks' pairing: e(C - v G, H) = e(pi, tau H - z H).

use ark_bls12_377::{Bls12_377, Fr, G1Affine, G1Projective, G2Affine, G2Projective};
use ark_ec::pairing::Pairing;
use ark_ec::{CurveGroup, PrimeGroup, ScalarMul};
use ark_ff::{Field, UniformRand, Zero};
use ark_std::rand::Rng;
use gpu_msm::{Bases, GpuMsm, Result};

/// A toy trusted setup: powers of a random tau in G1, and tau in G2.
pub struct Srs {
    /// tau^i G for i in 0..=max_degree.
    pub powers: Vec<G1Affine>,
    /// H, the G2 generator.
    pub h: G2Affine,
    /// tau H.
    pub tau_h: G2Affine,
}

impl Srs {
    /// Powers of tau up to `max_degree` (tau is drawn from `rng` and forgotten).
    pub fn setup(max_degree: usize, rng: &mut impl Rng) -> Self {
        let tau = Fr::rand(rng);
        let mut t = Fr::from(1u64);
        let scalars: Vec<Fr> = (0..=max_degree)
            .map(|_| {
                let s = t;
                t *= tau;
                s
            })
            .collect();
        let powers = G1Projective::generator().batch_mul(&scalars);
        let h = G2Projective::generator();
        Self {
            powers,
            h: h.into_affine(),
            tau_h: (h * tau).into_affine(),
        }
    }
}

/// p(z) for coefficients low to high.
pub fn evaluate(coeffs: &[Fr], z: Fr) -> Fr {
    coeffs.iter().rev().fold(Fr::zero(), |acc, c| acc * z + c)
}

/// The quotient (p(x) - p(z)) / (x - z) by synthetic division, and p(z).
pub fn quotient(coeffs: &[Fr], z: Fr) -> (Vec<Fr>, Fr) {
    if coeffs.is_empty() {
        return (Vec::new(), Fr::zero());
    }
    let d = coeffs.len() - 1;
    let mut q = vec![Fr::zero(); d];
    let mut carry = Fr::zero();
    for i in (0..=d).rev() {
        let v = coeffs[i] + carry * z;
        if i > 0 {
            q[i - 1] = v;
        }
        carry = v;
    }
    (q, carry)
}

/// A commitment: the MSM of the coefficients over the first powers of tau.
pub fn commit(engine: &GpuMsm, powers: &Bases, coeffs: &[Fr]) -> Result<G1Projective> {
    engine.msm(powers, coeffs)
}

/// The opening of p at z: (p(z), proof).
pub fn open(engine: &GpuMsm, powers: &Bases, coeffs: &[Fr], z: Fr) -> Result<(Fr, G1Projective)> {
    let (q, v) = quotient(coeffs, z);
    Ok((v, engine.msm(powers, &q)?))
}

/// Checks an opening with the pairing: e(C - v G, H) = e(pi, tau H - z H).
pub fn verify(srs: &Srs, commitment: G1Projective, z: Fr, value: Fr, proof: G1Projective) -> bool {
    let g = G1Projective::generator();
    let lhs = Bls12_377::pairing(commitment - g * value, srs.h);
    let rhs = Bls12_377::pairing(proof, G2Projective::from(srs.tau_h) - srs.h * z);
    lhs == rhs
}

/// Commits to and opens several polynomials of different degrees (prefixes of the powers,
/// all in one batch for the commitments), and verifies every opening; returns the number of
/// proofs checked, or a description of the first failure.
pub fn run(
    engine: &GpuMsm,
    srs: &Srs,
    degrees: &[usize],
    rng: &mut impl Rng,
) -> std::result::Result<usize, String> {
    let powers = engine.load_bases(&srs.powers).map_err(|e| e.to_string())?;
    let polys: Vec<Vec<Fr>> = degrees
        .iter()
        .map(|&d| (0..=d).map(|_| Fr::rand(rng)).collect())
        .collect();
    let refs: Vec<&[Fr]> = polys.iter().map(|p| p.as_slice()).collect();
    let commitments = engine
        .batch_msm(&powers, &refs)
        .map_err(|e| e.to_string())?;
    let mut checked = 0;
    for (p, c) in polys.iter().zip(&commitments) {
        if *c != commit(engine, &powers, p).map_err(|e| e.to_string())? {
            return Err(format!(
                "degree {}: batch and single commitments differ",
                p.len() - 1
            ));
        }
        let z = Fr::rand(rng);
        let (v, proof) = open(engine, &powers, p, z).map_err(|e| e.to_string())?;
        if v != evaluate(p, z) || !verify(srs, *c, z, v, proof) {
            return Err(format!(
                "degree {}: the opening does not verify",
                p.len() - 1
            ));
        }
        // A wrong value must not verify.
        if verify(srs, *c, z, v + Fr::ONE, proof) {
            return Err(format!("degree {}: a wrong value verified", p.len() - 1));
        }
        checked += 1;
    }
    Ok(checked)
}
