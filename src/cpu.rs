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

/// Horner over windows: `sum_w 2^(c w) * window_sums[w]`, least significant window first.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{random_bases, random_scalars};
    use ark_ec::VariableBaseMSM;

    #[test]
    fn double_and_add_matches_arkworks() {
        for n in [0, 1, 2, 13, 14, 15, 16, 17, 33] {
            let mut bases = random_bases(n, n as u64);
            let mut scalars = random_scalars(n, 99);
            if n > 2 {
                bases[1] = G1Affine::identity();
                scalars[2] = Fr::zero();
                scalars[0] = -Fr::from(1u64);
            }
            let expected = G1Projective::msm(&bases, &scalars).unwrap();
            assert_eq!(double_and_add(&bases, &scalars), expected, "n={n}");
            assert_eq!(naive_msm(&bases, &scalars), expected, "n={n}");
        }
    }

    #[test]
    fn window_reduction_is_horner() {
        let p: Vec<G1Projective> = random_bases(3, 1).iter().map(|a| (*a).into()).collect();
        let c = 5;
        let expected = p[0] + p[1] * Fr::from(1u64 << c) + p[2] * Fr::from(1u64 << (2 * c));
        assert_eq!(window_reduction(&p, c), expected);
        assert_eq!(window_reduction(&[], c), G1Projective::zero());
    }
}
