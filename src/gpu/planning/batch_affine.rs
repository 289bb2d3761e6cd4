//! The count model of batch-affine bucket accumulation (affine sums, one inversion shared by
//! a batch of independent additions through Montgomery's trick), against each profile's
//! mixed addition, and the counts of the one that was built and measured: commit 5bb0d24
//! (`git show 5bb0d24:shaders/batch_affine.wgsl`; `MsmConfig::accumulation`, its lanes
//! `sort::BATCH_LANES`) counted 5-49% fewer products than the mixed additions, but lavapipe
//! never ran it faster (1.6-2.2x slower on G1, 1.13-1.15x on the G2s, Limbs29), and
//! 6da8781 removed it (docs/perf-log/2026-12-07.md). `examples/op_counts.rs` prints both.
//!
//! A batch of k independent additions costs 3(k - 1) products for the trick, one inversion,
//! and 3 products each given its inverse (λ = Δy · inv, λ², λ (x1 - x3)): about 6 + I / k
//! products an addition on G1, I the inversion's (3 times as many on G2, over F_p^2). It
//! beats a mixed addition of m products only for k > I / (m - 6) on G1: on BLS12-377, 468
//! on the Edwards profile (m = 7) and 94 on the complete formulas (m = 11), as `op_counts`
//! prints. The additions of a batch must not depend on each other: within one bucket each
//! addition needs the sum before it, so the batch must span buckets.

use crate::gpu::shader::field::CurveProfile;

/// Products of the batch trick and of the affine addition, per addition, in the coordinate
/// field: 3 for the trick (a prefix product, two on the way back) and 3 for the addition.
const PER_ADDITION: u64 = 6;

/// Independent additions a batch of the accumulation built at commit 5bb0d24 (each thread
/// summed that many slices of the sorted entries at once: `sort::BATCH_LANES` there).
pub const BUILT_LANES: u64 = 128;

/// F_p products of an addition given its inverse on F_p^2 in 5bb0d24's shader: the trick's
/// three products and lambda's and lambda (x1 - x3)'s, 3 each, lambda^2 a squaring (2).
const FP2_BUILT_PER_ADDITION: u64 = 5 * FP2_PRODUCT + 2;

/// F_p products of one F_p^2 product (Karatsuba).
const FP2_PRODUCT: u64 = 3;

/// F_p products of an F_p^2 inversion besides the F_p one: the norm a^2 - beta b^2 (two
/// squares; beta small), then a and b times the norm's inverse.
const FP2_INVERSION_EXTRA: u64 = 4;

/// The costs of batch-affine accumulation on one profile, in F_p products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchAffine {
    /// One addition's share of the trick and the addition itself.
    pub per_addition: u64,
    /// The batch's one inversion.
    pub inversion: u64,
}

impl BatchAffine {
    /// The costs on `profile`'s curve group.
    pub fn of(profile: CurveProfile) -> BatchAffine {
        let inversion =
            fermat_inversion_products(&profile.curve.modulus).expect("a curve's p is an odd prime");
        match profile.curve.degree {
            1 => BatchAffine {
                per_addition: PER_ADDITION,
                inversion,
            },
            _ => BatchAffine {
                per_addition: PER_ADDITION * FP2_PRODUCT,
                inversion: inversion + FP2_INVERSION_EXTRA,
            },
        }
    }

    /// The costs of the batch-affine accumulation built at commit 5bb0d24 on `profile`, in
    /// batches of [`BUILT_LANES`]: its inversion was `fp_inverse`'s square-and-multiply
    /// ([`fp_inverse_products`]), not the 4-bit windows of [`BatchAffine::of`], and on
    /// F_p^2 its lambda^2 a squaring.
    pub fn as_built(profile: CurveProfile) -> BatchAffine {
        let bits = 32 * profile.packed_words() as u64;
        let inversion =
            fp_inverse_products(&profile.curve.modulus, bits).expect("a curve's p is an odd prime");
        match profile.curve.degree {
            1 => BatchAffine {
                per_addition: PER_ADDITION,
                inversion,
            },
            _ => BatchAffine {
                per_addition: FP2_BUILT_PER_ADDITION,
                inversion: inversion + FP2_INVERSION_EXTRA,
            },
        }
    }

    /// Products an addition in batches of `k` independent additions.
    pub fn at_batch(&self, k: u64) -> f64 {
        self.per_addition as f64 + self.inversion as f64 / k.max(1) as f64
    }

    /// The smallest batch whose additions cost fewer products than a mixed addition of
    /// `mixed_add`; `None` where none does.
    pub fn break_even(&self, mixed_add: u64) -> Option<u64> {
        let saved = mixed_add
            .checked_sub(self.per_addition)
            .filter(|&s| s > 0)?;
        Some(self.inversion / saved + 1)
    }
}

/// F_p products of x^(p - 2) (Fermat's inversion) by a 4-bit fixed window: x^2 .. x^15 (14
/// products), then 4 squarings a window below the top one and a product a nonzero window.
/// `modulus`: p in little-endian words; `None` unless p is odd and above 2.
pub fn fermat_inversion_products(modulus: &[u64]) -> Option<u64> {
    let e = p_minus_2(modulus)?;
    let top = e.iter().rposition(|&w| w != 0)?;
    let bits = 64 * top as u64 + 64 - e[top].leading_zeros() as u64;
    let windows = bits.div_ceil(4);
    let nonzero = (0..windows)
        .filter(|&i| (e[(4 * i / 64) as usize] >> (4 * i % 64)) & 15 != 0)
        .count() as u64;
    // The top window is a table entry; each window below it squares four times.
    Some(14 + 4 * (windows - 1) + nonzero - 1)
}

/// F_p products of `fp_inverse` (`shaders/field_ops.wgsl`, x^(p-2) by square-and-multiply
/// over the shader's `bits` = 32 PACKED_WORDS bits of p - 2, leading zeros included): a
/// squaring (counted as a product) a bit and a product a set bit. `None` unless p is odd
/// and above 2.
pub fn fp_inverse_products(modulus: &[u64], bits: u64) -> Option<u64> {
    let e = p_minus_2(modulus)?;
    Some(bits + e.iter().map(|w| w.count_ones() as u64).sum::<u64>())
}

/// Fermat's exponent p - 2 in little-endian words, for p odd and above 2 (else `None`).
fn p_minus_2(modulus: &[u64]) -> Option<Vec<u64>> {
    let top = modulus.iter().rposition(|&w| w != 0)?;
    if modulus[0] & 1 == 0 || (top == 0 && modulus[0] < 3) {
        return None;
    }
    // p is odd and above 2, so no borrow leaves the lowest word.
    let mut e = modulus.to_vec();
    e[0] -= 2;
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Arithmetic;
    use crate::curve::GpuCurve;

    /// By the square-and-multiply definition, for a small exponent: 4-bit windows.
    #[test]
    fn the_inversion_counts_windows_and_squarings() {
        // p = 2^8 + 1 = 257: p - 2 = 255 = 0xff, two nonzero windows: 14 + 4 + 1.
        assert_eq!(fermat_inversion_products(&[257]), Some(19));
        // p - 2 = 0x101 (p = 259): three windows, two nonzero: 14 + 8 + 1.
        assert_eq!(fermat_inversion_products(&[259]), Some(23));
        // A zero high word is not counted.
        assert_eq!(fermat_inversion_products(&[257, 0]), Some(19));
        // No odd p above 2.
        for bad in [&[][..], &[0], &[1], &[2], &[258], &[0, 1]] {
            assert_eq!(fermat_inversion_products(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn batches_pay_only_far_beyond_a_slice() {
        let curve = <ark_bls12_377::g1::Config as GpuCurve>::spec();
        let b = BatchAffine::of(Arithmetic::Limbs29Edwards.on(curve));
        // 377 bits: 94 windows below the top one.
        assert!((400..=14 + 4 * 94 + 94).contains(&b.inversion), "{b:?}");
        let edwards = Arithmetic::Limbs29Edwards.on(curve).add_costs().mixed_add;
        let rcb = Arithmetic::Limbs29.on(curve).add_costs().mixed_add;
        let (e, r) = (b.break_even(edwards).unwrap(), b.break_even(rcb).unwrap());
        assert!(b.at_batch(e) < edwards as f64 && b.at_batch(e - 1) >= edwards as f64);
        assert!(b.at_batch(r) < rcb as f64 && b.at_batch(r - 1) >= rcb as f64);
        // A thread's slice of the sorted entries holds at most ACCUMULATE_SLICE additions.
        assert!(r > crate::gpu::planning::sort::ACCUMULATE_SLICE as u64);
        assert_eq!(b.break_even(6), None);
        // As built: 384 squarings and a product a set bit of p - 2 (179 on BLS12-377, 110
        // on BN254), on G2 4 more (the norm's).
        let built = |spec, a: Arithmetic| BatchAffine::as_built(a.on(spec));
        assert_eq!(built(curve, Arithmetic::Limbs29).inversion, 384 + 179);
        let bn = <ark_bn254::g1::Config as GpuCurve>::spec();
        assert_eq!(built(bn, Arithmetic::Limbs29).inversion, 256 + 110);
        let g2 = <ark_bls12_377::g2::Config as GpuCurve>::spec();
        assert_eq!(built(g2, Arithmetic::Limbs29).inversion, 384 + 179 + 4);
        assert_eq!(built(g2, Arithmetic::Limbs29).per_addition, 17);
        // p = 7: p - 2 = 0b101, two set bits.
        assert_eq!(fp_inverse_products(&[7], 8), Some(8 + 2));
        assert_eq!(fp_inverse_products(&[8], 8), None);
        let b2 = BatchAffine::of(Arithmetic::Limbs29.on(g2));
        assert_eq!(b2.per_addition, 18);
    }
}
