//! Random inputs for examples, tests and benchmarks.

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{CurveGroup, PrimeGroup};
use ark_ff::UniformRand;
use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use rayon::prelude::*;

/// Points per independently seeded chunk of [`random_bases`].
const BASES_CHUNK: usize = 1 << 12;

/// `n` distinct-looking random G1 points, deterministic in `seed`.
///
/// A full scalar multiplication per point would dominate large examples, so each chunk starts
/// at a random multiple of the generator and walks by additions of 16 random steps. The
/// points are in G1 (sums of G1 points) and their discrete logs are unknown to the caller,
/// which is all an MSM test needs.
pub fn random_bases(n: usize, seed: u64) -> Vec<G1Affine> {
    let chunks: Vec<Vec<G1Affine>> = (0..n.div_ceil(BASES_CHUNK))
        .into_par_iter()
        .map(|chunk| {
            let mut rng =
                StdRng::seed_from_u64(seed ^ (chunk as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let g = G1Projective::generator();
            let steps: Vec<G1Projective> = (0..16).map(|_| g * Fr::rand(&mut rng)).collect();
            let mut acc = g * Fr::rand(&mut rng);
            let len = BASES_CHUNK.min(n - chunk * BASES_CHUNK);
            let walk: Vec<G1Projective> = (0..len)
                .map(|_| {
                    acc += steps[rng.gen_range(0..steps.len())];
                    acc
                })
                .collect();
            G1Projective::normalize_batch(&walk)
        })
        .collect();
    chunks.concat()
}

/// `n` uniformly random scalars, deterministic in `seed`.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| Fr::rand(&mut rng)).collect()
}
