//! CPU paths: the small-MSM double-and-add, arkworks' MSM, and the final window reduction.
//!
//! Every path computes the sum of k_i P_i with each scalar taken as its integer in [0, r).
//! For bases in the prime-order subgroup any integer congruent to k_i gives the same point
//! (r P = 0); for a base on the curve but outside the subgroup only this one is the sum the
//! scalars define, and it is what the GPU computes too, so the answer does not depend on
//! the route.

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{AdditiveGroup, VariableBaseMSM};
use ark_ff::{BigInteger, PrimeField, Zero};
use rayon::prelude::*;

use crate::curve::{Fr, GpuCurve};

/// MSM by double-and-add with one shared doubling chain: for each bit of the scalars, from
/// the top, double the accumulator once, then add every base whose scalar has that bit set.
/// Costs (longest scalar bit length) doublings and one mixed addition per set bit.
pub fn double_and_add<C: GpuCurve>(bases: &[Affine<C>], scalars: &[Fr<C>]) -> Projective<C> {
    let bigs: Vec<_> = scalars.iter().map(|s| s.into_bigint()).collect();
    let top = bigs.iter().map(|b| b.num_bits()).max().unwrap_or(0);
    let mut acc = Projective::<C>::zero();
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

/// arkworks' `VariableBaseMSM::msm` (lengths equal), with the scalars' integers in [0, r).
///
/// arkworks multiplies a scalar k close to r (r - k below 2^64) as -(r - k): the same point
/// for a base in the subgroup, but for a base outside the subgroup it differs from k P by
/// r P. This adds r S back, S the sum of those scalars' bases: one addition per such base
/// and one multiplication by r, nothing when there is none or when the caller knows every
/// base is in the subgroup (`in_subgroup`, after a subgroup check).
pub fn arkworks_msm<C: GpuCurve>(
    bases: &[Affine<C>],
    scalars: &[Fr<C>],
    in_subgroup: bool,
) -> Projective<C> {
    // arkworks' own parallel iterators, too, on the host pool.
    let sum = crate::host_pool::install(|| Projective::<C>::msm_unchecked(bases, scalars));
    if in_subgroup {
        return sum;
    }
    let negated = crate::host_pool::install(|| {
        bases
            .par_iter()
            .zip(scalars.par_iter())
            .filter(|(_, k)| arkworks_negates(*k))
            .map(|(p, _)| Projective::<C>::from(*p))
            .reduce(Projective::<C>::zero, |a, b| a + b)
    });
    if negated.is_zero() {
        return sum;
    }
    sum + mul_integer(negated, Fr::<C>::MODULUS)
}

/// Whether arkworks' MSM multiplies k as -(r - k) (its scalar classes `NegU1` to `NegU64`).
fn arkworks_negates<F: PrimeField>(k: &F) -> bool {
    let k = k.into_bigint();
    if k.is_zero() || k.num_bits() <= 64 {
        return false;
    }
    let mut r_minus_k = F::MODULUS;
    r_minus_k.sub_with_borrow(&k);
    r_minus_k.num_bits() <= 64
}

/// k P by double-and-add over the bits of the integer k: the integer multiple for every
/// point on the curve. (arkworks' own scalar multiplication reduces k mod r and uses
/// the GLV endomorphism, which agrees only inside the subgroup.)
pub fn mul_integer<C: GpuCurve>(p: Projective<C>, k: impl BigInteger) -> Projective<C> {
    let mut acc = Projective::<C>::zero();
    for bit in (0..k.num_bits()).rev() {
        acc.double_in_place();
        if k.get_bit(bit as usize) {
            acc += p;
        }
    }
    acc
}

/// Horner over windows: `sum_w 2^(c w) * window_sums[w]`, least significant window first.
pub fn window_reduction<C: GpuCurve>(window_sums: &[Projective<C>], c: u32) -> Projective<C> {
    let mut acc = Projective::<C>::zero();
    for s in window_sums.iter().rev() {
        for _ in 0..c {
            acc.double_in_place();
        }
        acc += s;
    }
    acc
}

/// Reference MSM for tests: sum of k_i * P_i by independent scalar multiplications of the
/// integers k_i in [0, r) (exact on every point of the curve, in the subgroup or not).
pub fn naive_msm<C: GpuCurve>(bases: &[Affine<C>], scalars: &[Fr<C>]) -> Projective<C> {
    bases
        .iter()
        .zip(scalars)
        .map(|(p, k)| mul_integer(Projective::<C>::from(*p), k.into_bigint()))
        .sum()
}

#[cfg(test)]
mod tests {
    type Bls = ark_bls12_377::g1::Config;
    use super::*;
    use crate::inputs::{random_bases, random_scalars};
    use ark_bls12_377::{Fr, G1Affine, G1Projective};
    use ark_ec::VariableBaseMSM;

    #[test]
    fn double_and_add_matches_arkworks() {
        for n in [0, 1, 2, 13, 14, 15, 16, 17, 33] {
            let mut bases = random_bases::<Bls>(n, n as u64);
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

    /// Outside G1 arkworks' MSM differs from the integer sum for scalars close to r; the
    /// corrected one does not, and inside the subgroup both agree with arkworks.
    #[test]
    fn the_arkworks_path_takes_scalars_as_integers_outside_the_subgroup() {
        use ark_bls12_377::Fq;
        use ark_ff::{Field, One};
        let order2 = G1Affine::new_unchecked(-Fq::one(), Fq::zero());
        let order3 = G1Affine::new_unchecked(Fq::zero(), Fq::one());
        let random = (5u64..)
            .find_map(|x| {
                let x = Fq::from(x);
                let p = G1Affine::new_unchecked(x, (x * x * x + Fq::one()).sqrt()?);
                (!p.is_in_correct_subgroup_assuming_on_curve()).then_some(p)
            })
            .unwrap();
        let g1 = random_bases::<Bls>(3, 5);
        let bases = [order2, order3, random, g1[0], g1[1], g1[2]];
        let minus = |k: u64| -Fr::from(k);
        for scalars in [
            [minus(1); 6],
            [
                minus(1),
                minus(2),
                minus(1 << 40),
                Fr::from(3u64),
                minus(7),
                Fr::zero(),
            ],
            [
                Fr::one(),
                Fr::from(2u64),
                Fr::from(5u64),
                minus(9),
                Fr::zero(),
                minus(1),
            ],
        ] {
            let want = double_and_add(&bases, &scalars);
            assert_eq!(naive_msm(&bases, &scalars), want);
            assert_eq!(arkworks_msm(&bases, &scalars, false), want);
        }
        // arkworks alone takes r - 1 as -1: wrong outside the subgroup (order 3: (r - 1) P = P).
        let (b, s) = ([order3], [minus(1)]);
        assert_ne!(G1Projective::msm(&b, &s).unwrap(), double_and_add(&b, &s));
        // Inside G1 the shortcut is exact.
        let s = random_scalars(3, 6);
        assert_eq!(
            arkworks_msm(&g1, &s, true),
            G1Projective::msm(&g1, &s).unwrap()
        );
    }

    #[test]
    fn window_reduction_is_horner() {
        let p: Vec<G1Projective> = random_bases::<Bls>(3, 1)
            .iter()
            .map(|a| (*a).into())
            .collect();
        let c = 5;
        let expected = p[0] + p[1] * Fr::from(1u64 << c) + p[2] * Fr::from(1u64 << (2 * c));
        assert_eq!(window_reduction(&p, c), expected);
        assert_eq!(window_reduction(&[], c), G1Projective::zero());
    }
}
