//! Host side of the shaders' field representation: what each arithmetic profile
//! ([`Arithmetic`], defined in `src/config/choices.rs`) stores and computes, constants for
//! the WGSL header, and conversions between arkworks values and the packed words the shaders
//! read and write.
//!
//! Three profiles ([`Arithmetic`]): 30 limbs of 13 bits in u32 (Montgomery radix 2^390, for
//! adapters without 64-bit integers), and 13 limbs of 29 bits with 64-bit products (radix
//! 2^377, `mul29.rs`, where the adapter has `SHADER_INT64`), the latter with short
//! Weierstrass or twisted Edwards buckets. Either way a reduced value is stored as 12
//! little-endian u32 words of x * R mod p. arkworks keeps x * 2^384 mod p, so bases are
//! converted on the device in every profile.

use ark_bls12_377::{Fq, G1Affine, G1Projective};
use ark_ec::AffineRepr;
use ark_ff::{BigInt, Field, One, PrimeField, Zero};
use rayon::prelude::*;

use super::mul29;

/// Limb width in bits of the portable profile.
pub const LIMB_BITS: u32 = 13;
/// Limbs per element in the portable profile: 30 * 13 = 390 bits >= 377.
pub const LIMBS: u32 = 30;

pub use crate::config::Arithmetic;

impl Arithmetic {
    /// Bits of the Montgomery radix R.
    pub fn radix_bits(self) -> u32 {
        match self {
            Arithmetic::Limbs13 => LIMBS * LIMB_BITS,
            Arithmetic::Limbs32 | Arithmetic::Limbs32Edwards => {
                mul29::LIMBS as u32 * mul29::LIMB_BITS
            }
        }
    }

    /// u32 words of one stored base: (x, y), or the Edwards precomputed triple (WGSL's
    /// `BASE_WORDS`).
    pub fn base_words(self) -> usize {
        if self.is_edwards() {
            3 * PACKED_WORDS
        } else {
            2 * PACKED_WORDS
        }
    }

    /// The former name of [`Arithmetic::base_words`] (the Edwards triple is not affine).
    #[deprecated(note = "renamed base_words")]
    pub fn affine_words(self) -> usize {
        self.base_words()
    }

    /// u32 words of one projective point: (X, Y, Z), or Edwards (X, Y, Z, T).
    pub fn point_words(self) -> usize {
        if self.is_edwards() {
            4 * PACKED_WORDS
        } else {
            3 * PACKED_WORDS
        }
    }

    /// Bytes of `points` stored bases.
    pub(crate) fn stored_base_bytes(self, points: usize) -> u64 {
        (points * self.base_words() * 4) as u64
    }

    /// Bytes of a stored set: `points` bases in `copies` copies (1: the bases alone), then
    /// their identity bits ([`identity_bits_bytes`]), which start on a 16-byte boundary
    /// (every base is a whole number of 16-byte loads).
    pub(crate) fn stored_set_bytes(self, points: usize, copies: u32) -> u64 {
        self.stored_base_bytes(points) * copies as u64 + identity_bits_bytes(points)
    }

    /// Where a set of `points` bases in `copies` copies keeps its identity bits, in
    /// 16-byte loads from its start (`Params::identity_quads`).
    pub(crate) fn identity_quads(self, points: usize, copies: u32) -> u32 {
        (self.stored_base_bytes(points) * copies as u64 / 16) as u32
    }

    /// Bytes a base takes in a stored set with `copies` copies, its identity bit counted as
    /// a byte: n times this is at least [`Arithmetic::stored_set_bytes`] for n >= 19 (the
    /// bits' padding is at most 16 bytes), what the caps on a part or a call divide by.
    pub(crate) fn stored_bytes_per_base(self, copies: u32) -> u64 {
        self.stored_base_bytes(1) * copies as u64 + 1
    }

    /// Bytes of `items` projective sums.
    pub(crate) fn sums_bytes(self, items: u64) -> u64 {
        items * self.point_words() as u64 * 4
    }

    /// 2^(radix - 384) and its inverse: a shader value is arkworks' internal value times
    /// the first (computed once per process; the window sums of every call go through them).
    fn shift(self) -> (Fq, Fq) {
        static SHIFTS: std::sync::OnceLock<[(Fq, Fq); Arithmetic::ALL.len()]> =
            std::sync::OnceLock::new();
        let all = SHIFTS.get_or_init(|| {
            Arithmetic::ALL.map(|a| {
                let up = Fq::from(2u64).pow([u64::from(a.radix_bits().abs_diff(384))]);
                let down = up.inverse().expect("a power of two");
                match a.radix_bits() >= 384 {
                    true => (up, down),
                    false => (down, up),
                }
            })
        });
        all[Arithmetic::ALL
            .iter()
            .position(|&a| a == self)
            .expect("a profile")]
    }

    /// The shaders' Montgomery form of x (x * R mod p) in the profile's limbs: the form of a
    /// constant written into the WGSL as an `Fp`.
    pub fn to_shader_limbs(self, x: &Fq) -> Vec<u32> {
        self.limbs_of(&(*x * self.shift().0).0)
    }

    /// An integer below 2^377 in the profile's limbs, least significant first.
    fn limbs_of(self, b: &BigInt<6>) -> Vec<u32> {
        match self {
            Arithmetic::Limbs13 => limbs13(b),
            Arithmetic::Limbs32 | Arithmetic::Limbs32Edwards => mul29::bls12_377().limbs_of(&b.0),
        }
    }

    /// The shaders' Montgomery form of x (x * R mod p), packed.
    pub fn to_shader_words(self, x: &Fq) -> [u32; PACKED_WORDS] {
        // x * 2^(R - 384) in arkworks is stored as x * 2^R.
        bigint_words(&(*x * self.shift().0).0)
    }

    /// Reads a value in the shaders' Montgomery form back into an arkworks element. `None`
    /// when the words are not a reduced value (>= p).
    pub fn from_shader_words(self, w: &[u32]) -> Option<Fq> {
        let v = words_bigint(w);
        if v >= Fq::MODULUS {
            return None;
        }
        // Taken as arkworks' internal form, v means x * 2^(R - 384).
        Some(Fq::new_unchecked(v) * self.shift().1)
    }

    /// Coordinates packed one after another, as the shaders store a point.
    fn coords_to_shader_words(self, coords: &[Fq]) -> Vec<u32> {
        coords
            .iter()
            .flat_map(|c| self.to_shader_words(c))
            .collect()
    }

    /// N coordinates stored one after another; `None` if one is not reduced.
    fn coords_from_shader_words<const N: usize>(self, w: &[u32]) -> Option<[Fq; N]> {
        let mut c = [Fq::zero(); N];
        for (i, x) in c.iter_mut().enumerate() {
            *x = self.from_shader_words(&w[i * PACKED_WORDS..(i + 1) * PACKED_WORDS])?;
        }
        Some(c)
    }

    /// A projective point in the shaders' coordinates, packed ([`Arithmetic::point_words`]
    /// words). `None` only for Edwards, on points the map cannot send (order 2 or 4).
    pub fn point_to_shader_words(self, p: &G1Projective) -> Option<Vec<u32>> {
        if self.is_edwards() {
            return Some(self.coords_to_shader_words(&super::edwards::extended(p)?));
        }
        // arkworks is Jacobian (x = X/Z^2, y = Y/Z^3); homogeneous (X Z : Y : Z^3) is the
        // same point.
        let (x, y, z) = if p.is_zero() {
            (Fq::zero(), Fq::one(), Fq::zero())
        } else {
            (p.x * p.z, p.y, p.z.square() * p.z)
        };
        Some(self.coords_to_shader_words(&[x, y, z]))
    }

    /// A base in the form the mixed addition reads ([`Arithmetic::base_words`] words):
    /// (x, y), or the Edwards precomputed triple (the identity's is (1, 1, 0)). `None` for the
    /// identity in short Weierstrass (stored as zeros) and for points the Edwards map cannot
    /// send.
    pub fn affine_to_shader_words(self, p: &G1Affine) -> Option<Vec<u32>> {
        if p.is_zero() && !self.is_edwards() {
            return None;
        }
        let coords = if self.is_edwards() {
            super::edwards::precomputed(p)?.to_vec()
        } else {
            vec![p.x, p.y]
        };
        Some(self.coords_to_shader_words(&coords))
    }

    /// Reads a projective point from the shaders. `None` when a coordinate is not reduced or
    /// the point is not on the curve (a GPU fault or a poisoned Edwards sum, never a valid
    /// result).
    pub fn point_from_shader_words(self, w: &[u32]) -> Option<G1Projective> {
        if self.is_edwards() {
            return super::edwards::from_extended(self.coords_from_shader_words(w)?);
        }
        let [x, y, z] = self.coords_from_shader_words(w)?;
        if z.is_zero() {
            // The identity is (0 : Y : 0) with Y != 0.
            return (x.is_zero() && !y.is_zero()).then(G1Projective::zero);
        }
        // Y^2 Z = X^3 + Z^3 (b = 1).
        if y.square() * z != x.square() * x + z.square() * z {
            return None;
        }
        // Homogeneous to Jacobian: (X Z, Y Z^2, Z).
        Some(G1Projective::new_unchecked(x * z, y * z.square(), z))
    }

    /// `BaseQuad`, the type of one 16-byte load of the stored bases, and `quad_words`, its
    /// four u32 words in memory order. The wide profiles load `vec2<u64>`: the same 16
    /// bytes a load as `vec4<u32>` on a GPU, but half the loads in llvmpipe, which gathers a
    /// load's components one at a time, lane by lane (Mesa 22: 14% less time in the
    /// accumulation at 2^16, docs/PERF.md). The portable profile has no 64-bit integers.
    fn base_quad_wgsl(self) -> String {
        match self {
            Arithmetic::Limbs13 => "alias BaseQuad = vec4<u32>;\n\
                 fn quad_words(q: BaseQuad) -> vec4<u32> {\n    return q;\n}\n"
                .into(),
            Arithmetic::Limbs32 | Arithmetic::Limbs32Edwards => "alias BaseQuad = vec2<u64>;\n\
                 fn quad_words(q: BaseQuad) -> vec4<u32> {\n    \
                 return vec4<u32>(u32(q.x), u32(q.x >> 32u), u32(q.y), u32(q.y >> 32u));\n}\n"
                .into(),
        }
    }

    /// The generated WGSL header: sizes and the constants of F_p for this profile, all
    /// derived from ark-bls12-377 so that nothing is typed in by hand.
    pub fn wgsl_header(self) -> String {
        let two = Fq::from(2u64);
        let mut s = String::new();
        s += &format!("const PACKED_WORDS: u32 = {PACKED_WORDS}u;\n");
        s += &format!("const BASE_WORDS: u32 = {}u;\n", self.base_words());
        assert!(
            self.base_words().is_multiple_of(4),
            "bases are read 16 bytes at a time"
        );
        s += &format!("const BASE_QUADS: u32 = {}u;\n", self.base_words() / 4);
        s += &format!("const POINT_WORDS: u32 = {}u;\n", self.point_words());
        s += "alias BaseWords = array<u32, BASE_WORDS>;\n";
        s += &self.base_quad_wgsl();
        s += "alias PointWords = array<u32, POINT_WORDS>;\n";
        s += &format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n");
        let (limbs, bits, np0) = match self {
            Arithmetic::Limbs13 => (LIMBS, LIMB_BITS, neg_p_inv_limb()),
            Arithmetic::Limbs32 | Arithmetic::Limbs32Edwards => (
                mul29::LIMBS as u32,
                mul29::LIMB_BITS,
                mul29::neg_p_inv_word(),
            ),
        };
        s += &format!("const LIMBS: u32 = {limbs}u;\n");
        s += &format!("const LIMB_BITS: u32 = {bits}u;\n");
        s += &format!("const LIMB_MASK: u32 = {}u;\n", (1u32 << bits) - 1);
        s += &format!("const NP0: u32 = {np0}u;\n");
        // As constants in the shaders' form: p itself, R mod p (one), and R^2 / 2^384 mod p,
        // the factor whose Montgomery product takes arkworks' x * 2^384 to x * R.
        let radix = u64::from(self.radix_bits());
        let p = Fq::MODULUS;
        let (one, r_convert) = (two.pow([radix]), two.pow([2 * radix - 384]));
        s += &wgsl_limbs("P", &self.limbs_of(&p));
        s += &wgsl_limbs("FP_ONE", &self.limbs_of(&one.into_bigint()));
        s += &wgsl_limbs("R_CONVERT", &self.limbs_of(&r_convert.into_bigint()));
        s += &wgsl_limbs("P_PACKED", &bigint_words(&Fq::MODULUS));
        let mut p_minus_2 = Fq::MODULUS;
        p_minus_2.0[0] -= 2; // p is odd and > 2: no borrow
        s += &wgsl_limbs("P_MINUS_2", &bigint_words(&p_minus_2));
        if self.is_edwards() {
            let k = super::edwards::constants();
            s += &format!("const CONVERT_BATCH: u32 = {CONVERT_BATCH}u;\n");
            for (name, v) in [("TE_K", k.k), ("MAP_S", k.s), ("MAP_C", k.c)] {
                s += &wgsl_limbs(name, &self.to_shader_limbs(&v));
            }
        }
        s += &super::program::wgsl_programs();
        s
    }
}
/// u32 words of one packed field element.
pub const PACKED_WORDS: usize = 12;
const _: () = assert!(mul29::PACKED_WORDS == PACKED_WORDS);
/// Words of one base as uploaded (arkworks' x, y); the profile's stored form may be wider
/// ([`Arithmetic::base_words`]).
pub const UPLOAD_WORDS: usize = 2 * PACKED_WORDS;
/// Fewest bases one storage binding must hold for the default profile to be the Edwards one
/// (144 bytes a base against Limbs32's 96): 2^16. Larger calls are sliced at the binding
/// limit (issue 11), and with slices of 2^16 points Edwards still does about 30% fewer
/// multiplications per point than Limbs32 does on its 1.5 times longer slices. It was 2^20
/// before slicing existed, which gave lavapipe (128 MiB, 932 k Edwards bases) Limbs32; since
/// the written-out loops (issue 20) Edwards is also the faster of the two there (docs/PERF.md).
pub const EDWARDS_MIN_BINDABLE_BASES: u64 = 1 << 16;
/// Bases per thread of the Edwards convert stage: one field inversion (about 570
/// multiplications) is shared by this many points, each of which costs 17 more.
pub const CONVERT_BATCH: u32 = 32;
/// Threads per workgroup in every stage: a power of two (the trees in workgroup memory,
/// `shaders/reduce.wgsl`, `balanced.wgsl` and `scan.wgsl`, halve it level by level).
pub const WORKGROUP_SIZE: u32 = 64;
const _: () = assert!(WORKGROUP_SIZE.is_power_of_two());

/// Packed words of the canonical form of a field element's arkworks representation.
pub(super) fn bigint_words(b: &BigInt<6>) -> [u32; PACKED_WORDS] {
    let mut w = [0u32; PACKED_WORDS];
    for (i, limb) in b.0.iter().enumerate() {
        w[2 * i] = *limb as u32;
        w[2 * i + 1] = (*limb >> 32) as u32;
    }
    w
}

fn words_bigint(w: &[u32]) -> BigInt<6> {
    let mut limbs = [0u64; 6];
    for (i, l) in limbs.iter_mut().enumerate() {
        *l = w[2 * i] as u64 | ((w[2 * i + 1] as u64) << 32);
    }
    BigInt(limbs)
}

/// arkworks' internal (Montgomery, radix 2^384) words of x: what the upload sends.
pub fn arkworks_words(x: &Fq) -> [u32; PACKED_WORDS] {
    bigint_words(&x.0)
}

/// Affine base to the upload layout (arkworks words of x then y, the rest of `out`, a
/// profile's wider slot, zeroed). Identity bases are zeros; the host never places them in a
/// bucket.
pub fn affine_upload_words(p: &G1Affine, out: &mut [u32]) {
    out.fill(0);
    if p.is_zero() {
        return;
    }
    out[..PACKED_WORDS].copy_from_slice(&arkworks_words(&p.x));
    out[PACKED_WORDS..UPLOAD_WORDS].copy_from_slice(&arkworks_words(&p.y));
}

/// Bytes of the identity bits of `points` bases: one bit a base, in whole 16-byte loads.
pub(crate) fn identity_bits_bytes(points: usize) -> u64 {
    points.div_ceil(128) as u64 * 16
}

/// The identity bits of `points`: bit i % 32 of word i / 32 is set when base i is the
/// identity, which the GPU bucket sort then places nowhere without reading the base
/// (`count_digits`). `out` holds [`identity_bits_bytes`]; words past the last base are zero.
pub(crate) fn pack_identity_bits<'a>(
    points: impl IndexedParallelIterator<Item = &'a G1Affine>,
    out: &mut [u32],
) {
    out.fill(0);
    out.par_iter_mut()
        .zip(points.chunks(32))
        .for_each(|(w, chunk)| {
            *w = (chunk.iter().enumerate())
                .fold(0, |acc, (b, p)| acc | (u32::from(p.is_zero()) << b))
        });
}

/// Packs affine points into `out` in the upload layout, in parallel.
pub(crate) fn pack_affine<'a>(
    points: impl IndexedParallelIterator<Item = &'a G1Affine>,
    arithmetic: Arithmetic,
    out: &mut [u32],
) {
    out.par_chunks_mut(arithmetic.base_words())
        .zip(points)
        .for_each(|(o, p)| affine_upload_words(p, o));
}

fn limbs13(b: &BigInt<6>) -> Vec<u32> {
    mul29::split_limbs(&b.0, LIMB_BITS, LIMBS as usize)
}

fn wgsl_limbs(name: &str, limbs: &[u32]) -> String {
    let n = limbs.len();
    let limbs: Vec<String> = limbs.iter().map(|l| format!("{l}u")).collect();
    format!(
        "const {name}: array<u32, {n}> = array<u32, {n}>({});\n",
        limbs.join(", ")
    )
}

/// -p^-1 mod 2^13: the low 13 bits of -p^-1 mod 2^32.
fn neg_p_inv_limb() -> u32 {
    mul29::neg_p_inv_word() & ((1 << LIMB_BITS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::PrimeGroup;
    use ark_ff::UniformRand;

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
        for a in Arithmetic::ALL {
            assert_eq!(a.stored_base_bytes(1) % 16, 0);
            let q = a.identity_quads(300, 3) as u64;
            assert_eq!(16 * q, 3 * a.stored_base_bytes(300));
            assert_eq!(a.stored_set_bytes(300, 3), 16 * q + 48);
            for n in [19, 20, 127, 128, 1 << 20] {
                assert!(a.stored_set_bytes(n, 3) <= n as u64 * a.stored_bytes_per_base(3));
            }
        }
    }

    #[test]
    fn shader_words_round_trip() {
        let mut rng = ark_std::test_rng();
        let mut xs = vec![Fq::zero(), Fq::one(), -Fq::one(), Fq::from(64u64)];
        xs.extend((0..50).map(|_| Fq::rand(&mut rng)));
        for a in Arithmetic::ALL {
            for x in &xs {
                assert_eq!(a.from_shader_words(&a.to_shader_words(x)), Some(*x));
            }
            // p itself is not a reduced value.
            let p = bigint_words(&Fq::MODULUS);
            assert_eq!(a.from_shader_words(&p), None);
        }
        // The wide profiles store x * 2^377: arkworks' words (x * 2^384) times 2^-7.
        let x = xs[5];
        let down = Fq::from(2u64).pow([7u64]).inverse().unwrap();
        assert_eq!(
            Arithmetic::Limbs32.to_shader_words(&x),
            arkworks_words(&(x * down))
        );
    }

    #[test]
    fn points_round_trip_and_bad_points_are_refused() {
        let g = G1Projective::generator();
        for a in Arithmetic::ALL {
            for p in [
                G1Projective::zero(),
                g,
                g * ark_bls12_377::Fr::from(12345u64),
            ] {
                assert_eq!(
                    a.point_from_shader_words(&a.point_to_shader_words(&p).unwrap()),
                    Some(p)
                );
            }
            let mut w = a.point_to_shader_words(&g).unwrap();
            w[0] ^= 1;
            assert_eq!(a.point_from_shader_words(&w), None);
            assert_eq!(
                a.point_from_shader_words(&vec![0u32; a.point_words()]),
                None
            );
        }
    }

    #[test]
    fn default_profile_by_features_and_binding_size() {
        let edwards = EDWARDS_MIN_BINDABLE_BASES * 144;
        assert_eq!(Arithmetic::auto(true, edwards), Arithmetic::Limbs32Edwards);
        assert_eq!(
            Arithmetic::auto(true, edwards + 1),
            Arithmetic::Limbs32Edwards
        );
        assert_eq!(Arithmetic::auto(true, edwards - 1), Arithmetic::Limbs32);
        assert_eq!(
            Arithmetic::auto(true, 128 << 20),
            Arithmetic::Limbs32Edwards
        ); // lavapipe
        assert_eq!(Arithmetic::auto(true, 4 << 20), Arithmetic::Limbs32);
        assert_eq!(Arithmetic::auto(false, u64::MAX), Arithmetic::Limbs13);
    }

    #[test]
    fn wide_montgomery_constant_inverts_p() {
        let p0 = Fq::MODULUS.0[0] as u32;
        assert_eq!(p0.wrapping_mul(mul29::neg_p_inv_word()), u32::MAX);
        for a in Arithmetic::ALL {
            let h = a.wgsl_header();
            assert!(h.contains("const P: array<u32"), "{a:?}");
            assert!(h.contains("const FP_ONE"), "{a:?}");
        }
    }

    #[test]
    fn montgomery_constant_inverts_p() {
        let p0 = (Fq::MODULUS.0[0] & 0x1fff) as u32;
        assert_eq!(p0.wrapping_mul(neg_p_inv_limb()) & 0x1fff, 0x1fff);
        assert_eq!(limbs13(&Fq::MODULUS).len(), LIMBS as usize);
        // Every limb of p fits 13 bits and the limbs give p back.
        let limbs = limbs13(&Fq::MODULUS);
        let mut acc = Fq::zero();
        for &l in limbs.iter().rev() {
            acc = acc * Fq::from(1u64 << LIMB_BITS) + Fq::from(l as u64);
        }
        assert_eq!(acc, Fq::zero());
    }
}
