//! KZG polynomial commitments on any pairing whose G1 the engine runs (BLS12-377, BN254,
//! BLS12-381) with every G1 MSM on a [`GpuMsm`]: the powers of tau are loaded once as
//! resident bases, a commitment to a polynomial of degree d is an MSM over the first d + 1
//! of them, and an opening proof is the commitment to the quotient. Verification is
//! arkworks' pairing: e(C - v G, H) = e(pi, tau H - z H).

use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{CurveGroup, PrimeGroup, ScalarMul};
use ark_ff::{Field, UniformRand};
use ark_std::rand::Rng;
use gpu_msm::{Bases, GpuCurve, GpuMsm, Result};

/// A pairing whose G1 is the engine's curve group `C`.
pub trait KzgPairing<C: GpuCurve>:
    Pairing<G1 = Projective<C>, G1Affine = Affine<C>, ScalarField = gpu_msm::Fr<C>>
{
}

impl<C: GpuCurve, E> KzgPairing<C> for E where
    E: Pairing<G1 = Projective<C>, G1Affine = Affine<C>, ScalarField = gpu_msm::Fr<C>>
{
}

/// A toy trusted setup: powers of a random tau in G1, and tau in G2.
pub struct Srs<E: Pairing> {
    /// tau^i G for i in 0..=max_degree.
    pub powers: Vec<E::G1Affine>,
    /// H, the G2 generator.
    pub h: E::G2Affine,
    /// tau H.
    pub tau_h: E::G2Affine,
}

impl<E: Pairing> Srs<E> {
    /// Powers of tau up to `max_degree` (tau is drawn from `rng` and forgotten).
    pub fn setup(max_degree: usize, rng: &mut impl Rng) -> Self {
        let tau = E::ScalarField::rand(rng);
        let mut t = E::ScalarField::from(1u64);
        let scalars: Vec<E::ScalarField> = (0..=max_degree)
            .map(|_| {
                let s = t;
                t *= tau;
                s
            })
            .collect();
        let powers = E::G1::generator().batch_mul(&scalars);
        let h = E::G2::generator();
        Self {
            powers,
            h: h.into_affine(),
            tau_h: (h * tau).into_affine(),
        }
    }
}

/// p(z) for coefficients low to high.
pub fn evaluate<F: Field>(coeffs: &[F], z: F) -> F {
    coeffs.iter().rev().fold(F::zero(), |acc, c| acc * z + c)
}

/// The quotient (p(x) - p(z)) / (x - z) by synthetic division, and p(z).
pub fn quotient<F: Field>(coeffs: &[F], z: F) -> (Vec<F>, F) {
    if coeffs.is_empty() {
        return (Vec::new(), F::zero());
    }
    let d = coeffs.len() - 1;
    let mut q = vec![F::zero(); d];
    let mut carry = F::zero();
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
pub fn commit<C: GpuCurve>(
    engine: &GpuMsm<C>,
    powers: &Bases<C>,
    coeffs: &[gpu_msm::Fr<C>],
) -> Result<Projective<C>> {
    engine.msm(powers, coeffs)
}

/// The opening of p at z: (p(z), proof).
pub fn open<C: GpuCurve>(
    engine: &GpuMsm<C>,
    powers: &Bases<C>,
    coeffs: &[gpu_msm::Fr<C>],
    z: gpu_msm::Fr<C>,
) -> Result<(gpu_msm::Fr<C>, Projective<C>)> {
    let (q, v) = quotient(coeffs, z);
    Ok((v, engine.msm(powers, &q)?))
}

/// Checks an opening with the pairing: e(C - v G, H) = e(pi, tau H - z H).
pub fn verify<E: Pairing>(
    srs: &Srs<E>,
    commitment: E::G1,
    z: E::ScalarField,
    value: E::ScalarField,
    proof: E::G1,
) -> bool {
    let g = E::G1::generator();
    let lhs = E::pairing(commitment - g * value, srs.h);
    let rhs = E::pairing(proof, E::G2::from(srs.tau_h) - srs.h * z);
    lhs == rhs
}

/// Commits to and opens several polynomials of different degrees (prefixes of the powers,
/// all in one batch for the commitments), and verifies every opening; returns the number of
/// proofs checked, or a description of the first failure.
pub fn run<C: GpuCurve, E: KzgPairing<C>>(
    engine: &GpuMsm<C>,
    srs: &Srs<E>,
    degrees: &[usize],
    rng: &mut impl Rng,
) -> std::result::Result<usize, String> {
    let powers = engine.load_bases(&srs.powers).map_err(|e| e.to_string())?;
    let polys: Vec<Vec<E::ScalarField>> = degrees
        .iter()
        .map(|&d| (0..=d).map(|_| E::ScalarField::rand(rng)).collect())
        .collect();
    let refs: Vec<&[E::ScalarField]> = polys.iter().map(|p| p.as_slice()).collect();
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
        let z = E::ScalarField::rand(rng);
        let (v, proof) = open(engine, &powers, p, z).map_err(|e| e.to_string())?;
        if v != evaluate(p, z) || !verify(srs, *c, z, v, proof) {
            return Err(format!(
                "degree {}: the opening does not verify",
                p.len() - 1
            ));
        }
        // A wrong value must not verify.
        if verify(srs, *c, z, v + E::ScalarField::ONE, proof) {
            return Err(format!("degree {}: a wrong value verified", p.len() - 1));
        }
        checked += 1;
    }
    Ok(checked)
}
