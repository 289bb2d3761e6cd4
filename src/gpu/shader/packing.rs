//! The upload's words on the host: arkworks' internal words of each base (the device
//! converts them to the profile's form), the identity bits, both packed in parallel.

use ark_ec::short_weierstrass::Affine;
use ark_ec::AffineRepr;
use rayon::prelude::*;

use super::field::{u64_words_to_u32, CurveProfile};
use crate::curve::{components, Fe, GpuCurve};

/// arkworks' internal (Montgomery, radix 2^(64 N)) words of x, component by component:
/// what the upload sends.
pub fn arkworks_words<C: GpuCurve>(x: &Fe<C>) -> Vec<u32> {
    components::<C>(x)
        .flat_map(|c| u64_words_to_u32(C::internal_words(&c)))
        .collect()
}

/// The base's upload words (arkworks' words of x then y, the rest of `out`, a profile's
/// wider slot, zeroed). Identity bases are zeros; the host never places them in a bucket.
pub fn affine_upload_words<C: GpuCurve>(p: &Affine<C>, out: &mut [u32]) {
    out.fill(0);
    if p.is_zero() {
        return;
    }
    let components = components::<C>(&p.x).chain(components::<C>(&p.y));
    for (k, c) in components.enumerate() {
        let words = C::internal_words(&c);
        let out = &mut out[2 * k * words.len()..2 * (k + 1) * words.len()];
        for (o, w) in out.chunks_exact_mut(2).zip(words) {
            o[0] = *w as u32;
            o[1] = (*w >> 32) as u32;
        }
    }
}

/// The identity bits of `points`: bit i % 32 of word i / 32 is set when base i is the
/// identity, which the GPU bucket sort then places nowhere without reading the base
/// (`count_digits`). `out` holds [`super::field::identity_bits_bytes`]; words past the last base are zero.
pub(crate) fn pack_identity_bits<'a, C: GpuCurve>(
    points: impl IndexedParallelIterator<Item = &'a Affine<C>>,
    out: &mut [u32],
) {
    out.fill(0);
    crate::host_pool::install(|| {
        out.par_iter_mut()
            .zip(points.chunks(32))
            .for_each(|(w, chunk)| {
                *w = (chunk.iter().enumerate())
                    .fold(0, |acc, (b, p)| acc | (u32::from(p.is_zero()) << b))
            })
    });
}

/// Packs affine points into `out` in the upload layout (one profile's stored slot a base),
/// in parallel.
pub(crate) fn pack_affine<'a, C: GpuCurve>(
    points: impl IndexedParallelIterator<Item = &'a Affine<C>>,
    profile: CurveProfile,
    out: &mut [u32],
) {
    crate::host_pool::install(|| {
        out.par_chunks_mut(profile.base_words())
            .zip(points)
            .for_each(|(o, p)| affine_upload_words(p, o))
    });
}

#[cfg(test)]
mod tests {
    use super::super::field::identity_bits_bytes;
    use super::*;
    use ark_bls12_377::G1Affine;

    #[test]
    fn identity_bits_mark_the_identities_only() {
        let g = G1Affine::generator();
        for n in [0usize, 1, 31, 32, 33, 127, 128, 129, 300] {
            let marked: Vec<usize> = [0, 31, 32, 127, 128, n.saturating_sub(1)]
                .into_iter()
                .filter(|&i| i < n)
                .collect();
            let points: Vec<G1Affine> = (0..n)
                .map(|i| {
                    if marked.contains(&i) {
                        G1Affine::zero()
                    } else {
                        g
                    }
                })
                .collect();
            let mut bits = vec![u32::MAX; identity_bits_bytes(n) as usize / 4];
            assert_eq!(bits.len() % 4, 0, "whole 16-byte loads");
            assert!(bits.len() * 32 >= n);
            pack_identity_bits(points.par_iter(), &mut bits);
            for i in 0..bits.len() * 32 {
                let set = bits[i / 32] >> (i % 32) & 1 == 1;
                assert_eq!(set, marked.contains(&i), "n = {n}, bit {i}");
            }
        }
        // The bits start right after the bases and their copies, on a 16-byte load.
        for a in crate::config::Arithmetic::ALL {
            let a = CurveProfile::of::<ark_bls12_377::g1::Config>(a);
            assert_eq!(a.stored_base_bytes(1) % 16, 0);
            let q = a.identity_quads(300, 3) as u64;
            assert_eq!(16 * q, 3 * a.stored_base_bytes(300));
            assert_eq!(a.stored_set_bytes(300, 3), 16 * q + 48);
            for n in [19, 20, 127, 128, 1 << 20] {
                assert!(a.stored_set_bytes(n, 3) <= n as u64 * a.stored_bytes_per_base(3));
            }
        }
    }
}
