//! CPU paths: the small-MSM double-and-add and the final window reduction.

use ark_bls12_377::{Fr, G1Affine, G1Projective};
use ark_ec::{AdditiveGroup, PrimeGroup};
use ark_ff::{BigInteger, PrimeField, Zero};

/// MSM by double-and-add with one shared doubling chain: for each bit of the scalars, from
/// the top, double the accumulator once, then add every base whose scalar has that bit set.
/// Costs (longest scalar bit length) doublings and one mixed addition per set bit.
pub fn double_and_add(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    let bigs: Vec<_> = scalars.iter().map(|s| s.into_bigint()).collect();
    let top = bigs.iter().map(|b| b.num_bits()).max().unwrap_or(0);
    let mut acc = G1Projective::zero();
    for bit in (0..top).rev() {
        acc.double_in_place();
        for (p, k) in bases.iter().zip(&bigs) {
            if k.get_bit(bit as usize) {
                acc += p;
            }
        }
    }
    acc
}

/// Horner over windows: sum_w 2^(c w) * window_sums[w], least significant window first.
pub fn window_reduction(window_sums: &[G1Projective], c: u32) -> G1Projective {
    let mut acc = G1Projective::zero();
    for s in window_sums.iter().rev() {
        for _ in 0..c {
            acc.double_in_place();
        }
        acc += s;
    }
    acc
}

/// Reference MSM for tests: sum of k_i * P_i by independent scalar multiplications.
pub fn naive_msm(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
    bases
        .iter()
        .zip(scalars)
        .map(|(p, k)| G1Projective::from(*p).mul_bigint(k.into_bigint()))
        .sum()
}
