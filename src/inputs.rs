//! Random inputs for examples, tests and benchmarks.

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{CurveGroup, PrimeGroup};
use ark_ff::PrimeField;
use ark_ff::UniformRand;
use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use rayon::prelude::*;

use crate::curve::{Fr, GpuCurve};

/// Points per independently seeded chunk of [`random_bases`].
const BASES_CHUNK: usize = 1 << 12;

/// `n` distinct-looking random points of the group (G1 or G2), deterministic in `seed`.
///
/// A full scalar multiplication per point would dominate large examples, so each chunk starts
/// at a random multiple of the generator and walks by additions of 16 random steps. The
/// points are in the group (sums of its points) and their discrete logs are unknown to the caller,
/// which is all an MSM test needs.
pub fn random_bases<C: GpuCurve>(n: usize, seed: u64) -> Vec<Affine<C>> {
    // Written in place, chunk by chunk: peak memory is the output and one chunk per thread
    // (2^26 bases are 7 GB; a copy of them would not fit a 23 GB machine).
    let mut out = vec![Affine::<C>::identity(); n];
    // On the engine's host pool: the known-answer test makes its inputs here while calls
    // may wait for its device.
    crate::host_pool::install(|| {
        out.par_chunks_mut(BASES_CHUNK)
            .enumerate()
            .for_each(|(chunk, dst)| {
                let mut rng = StdRng::seed_from_u64(
                    seed ^ (chunk as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                );
                let g = Projective::<C>::generator();
                let steps: Vec<Projective<C>> =
                    (0..16).map(|_| g * Fr::<C>::rand(&mut rng)).collect();
                let mut acc = g * Fr::<C>::rand(&mut rng);
                let walk: Vec<Projective<C>> = (0..dst.len())
                    .map(|_| {
                        acc += steps[rng.gen_range(0..steps.len())];
                        acc
                    })
                    .collect();
                dst.copy_from_slice(&Projective::<C>::normalize_batch(&walk));
            })
    });
    out
}

/// `n` uniformly random scalars, deterministic in `seed`.
pub fn random_scalars<F: PrimeField>(n: usize, seed: u64) -> Vec<F> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| F::rand(&mut rng)).collect()
}

/// Named adversarial scalar vectors of length n (n >= 2), deterministic in `seed`: random,
/// all equal, all zero, all one, all r - 1, one nonzero, two values alternating, k and -k
/// mixed, and scalars that share every window but the lowest. For tests of every path.
pub fn adversarial_scalars<F: PrimeField>(n: usize, seed: u64) -> Vec<(&'static str, Vec<F>)> {
    let r = random_scalars(n, seed);
    let k = r[0];
    let mut one_nonzero = vec![F::zero(); n];
    one_nonzero[n / 2] = k;
    vec![
        ("random", r.clone()),
        ("all equal", vec![k; n]),
        ("all zero", vec![F::zero(); n]),
        ("all one", vec![F::one(); n]),
        ("r - 1", vec![-F::one(); n]),
        ("one nonzero", one_nonzero),
        (
            "two values",
            (0..n).map(|i| if i % 2 == 0 { k } else { r[1] }).collect(),
        ),
        (
            "k and -k",
            (0..n).map(|i| if i % 3 == 0 { -k } else { k }).collect(),
        ),
        (
            "share all windows but the lowest",
            (0..n).map(|i| k + F::from(i as u64 % 7)).collect(),
        ),
    ]
}

/// Shapes of scalar vectors for examples and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarDistribution {
    /// Uniform in the scalar field.
    Uniform,
    /// Drawn (uniformly, independently) from this many distinct uniform scalars.
    FewDistinct(usize),
    /// Uniform below 2^bits (small witnesses).
    SmallBits(u32),
    /// Zero except for this percentage (1..=100) of uniform scalars at random positions.
    Sparse(u32),
}

impl ScalarDistribution {
    /// Parses `uniform`, `distinct:K`, `bits:B` or `sparse:P`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.split_once(':') {
            None if s == "uniform" => Some(Self::Uniform),
            Some(("distinct", k)) => k.parse().ok().filter(|&k| k > 0).map(Self::FewDistinct),
            Some(("bits", b)) => b.parse().ok().filter(|&b| b <= 255).map(Self::SmallBits),
            Some(("sparse", p)) => p
                .parse()
                .ok()
                .filter(|p| (1..=100).contains(p))
                .map(Self::Sparse),
            _ => None,
        }
    }
}

impl std::fmt::Display for ScalarDistribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Uniform => write!(f, "uniform"),
            Self::FewDistinct(k) => write!(f, "distinct:{k}"),
            Self::SmallBits(b) => write!(f, "bits:{b}"),
            Self::Sparse(p) => write!(f, "sparse:{p}"),
        }
    }
}

/// `n` scalars of distribution `dist`, deterministic in `seed`.
pub fn scalars<F: PrimeField>(dist: ScalarDistribution, n: usize, seed: u64) -> Vec<F> {
    let mut rng = StdRng::seed_from_u64(seed);
    match dist {
        ScalarDistribution::Uniform => random_scalars(n, seed),
        ScalarDistribution::FewDistinct(k) => {
            let values = random_scalars(k, seed ^ 0x5eed);
            (0..n).map(|_| values[rng.gen_range(0..k)]).collect()
        }
        ScalarDistribution::SmallBits(bits) => (0..n)
            .map(|_| {
                let mut limbs = [0u64; 4];
                for (i, l) in limbs.iter_mut().enumerate() {
                    let lo = 64 * i as u32;
                    if lo < bits {
                        let take = (bits - lo).min(64);
                        *l = rng.gen::<u64>() & (u64::MAX >> (64 - take));
                    }
                }
                let mut b = F::BigInt::default();
                for (o, l) in b.as_mut().iter_mut().zip(limbs) {
                    *o = l;
                }
                F::from_bigint(b).unwrap_or_default()
            })
            .collect(),
        ScalarDistribution::Sparse(percent) => {
            let values = random_scalars(n, seed);
            values
                .into_iter()
                .map(|v| {
                    if rng.gen_range(0..100) < percent {
                        v
                    } else {
                        F::from(0u64)
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ff::{BigInteger, PrimeField, Zero};

    #[test]
    fn distributions_parse_and_hold() {
        for s in ["uniform", "distinct:3", "bits:32", "sparse:1"] {
            assert_eq!(ScalarDistribution::parse(s).unwrap().to_string(), s);
        }
        for s in [
            "",
            "distinct:0",
            "bits:256",
            "bits:x",
            "other:1",
            "sparse:0",
            "sparse:101",
        ] {
            assert_eq!(ScalarDistribution::parse(s), None, "{s}");
        }
        let k = scalars::<ark_bls12_377::Fr>(ScalarDistribution::FewDistinct(3), 500, 1);
        let mut distinct = k.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 3);
        let k = scalars::<ark_bls12_377::Fr>(ScalarDistribution::SmallBits(70), 500, 1);
        assert!(k.iter().all(|s| s.into_bigint().num_bits() <= 70));
        assert!(k.iter().any(|s| s.into_bigint().num_bits() > 64));
        let k = scalars::<ark_bls12_377::Fr>(ScalarDistribution::Sparse(10), 1000, 1);
        let nonzero = k.iter().filter(|s| !s.is_zero()).count();
        assert!((50..150).contains(&nonzero), "{nonzero}");
    }
}
