//! Host side of the shaders' field representation: what each arithmetic profile
//! ([`Arithmetic`], defined in `src/config/choices.rs`) stores and computes, and conversions between arkworks values and the packed words the shaders
//! read and write.
//!
//! Three profiles ([`Arithmetic`]): limbs of 13 bits in u32 (for adapters without 64-bit
//! integers), and limbs of 29 bits with 64-bit products (`mul29.rs`, where the adapter has
//! `SHADER_INT64`), the latter with short Weierstrass or twisted Edwards buckets; on
//! BLS12-377, 30 limbs (R = 2^390) and 13 (R = 2^377). A profile on a curve is a
//! [`CurveProfile`]: either way a reduced value is stored as PACKED_WORDS = ceil(bits(p) /
//! 32) little-endian u32 words of x * R mod p (12 on the BLS12 curves, 8 on BN254). arkworks
//! keeps x * 2^(64 N) mod p (N its u64 words), so bases are converted on the device in every
//! profile.

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::AffineRepr;
use ark_ff::{Field, One, Zero};

use super::mul29;
use crate::curve::{components, from_components, CurveSpec, Fe, Fp, GpuCurve, LIMB13_BITS};

pub use crate::config::Arithmetic;

impl Arithmetic {
    /// Bits of one limb: 13 (portable) or 29 (wide).
    pub fn limb_bits(self) -> u32 {
        match self {
            Arithmetic::Limbs13 => LIMB13_BITS,
            Arithmetic::Limbs29 | Arithmetic::Limbs29Edwards => mul29::LIMB_BITS,
        }
    }

    /// The profile on `curve`.
    pub fn on(self, curve: &'static CurveSpec) -> CurveProfile {
        CurveProfile {
            arithmetic: self,
            curve,
            base_parts: 1,
        }
    }

    /// `BaseQuad`, the type of one 16-byte load of the stored bases, and `quad_words`, its
    /// four u32 words in memory order. The wide profiles load `vec2<u64>`: the same 16
    /// bytes a load as `vec4<u32>` on a GPU, but half the loads in llvmpipe, which gathers a
    /// load's components one at a time, lane by lane (Mesa 22: 14% less time in the
    /// accumulation at 2^16, docs/PERF.md). The portable profile has no 64-bit integers.
    pub(super) fn base_quad_wgsl(self) -> String {
        match self {
            Arithmetic::Limbs13 => "alias BaseQuad = vec4<u32>;\n\
                 fn quad_words(q: BaseQuad) -> vec4<u32> {\n    return q;\n}\n"
                .into(),
            Arithmetic::Limbs29 | Arithmetic::Limbs29Edwards => "alias BaseQuad = vec2<u64>;\n\
                 fn quad_words(q: BaseQuad) -> vec4<u32> {\n    \
                 return vec4<u32>(u32(q.x), u32(q.x >> 32u), u32(q.y), u32(q.y >> 32u));\n}\n"
                .into(),
        }
    }
}

/// An arithmetic profile on one curve group: what the shaders are generated for, the sizes
/// of the values they store, and the conversions between arkworks' values and the shaders'
/// words. Cheap to copy.
///
/// # Panics
/// The conversions (`to_shader_words::<C>` and the others generic over `C`) panic when `C`
/// is not the profile's curve group: a caller's mistake in the types, not bad input (an
/// engine's profile, [`crate::GpuMsm::profile`], is its own group's).
#[derive(Clone, Copy)]
pub struct CurveProfile {
    /// The field arithmetic and bucket model.
    pub arithmetic: Arithmetic,
    /// The curve's constants.
    pub curve: &'static CurveSpec,
    /// Device parts of a resident set one call binds at once (1 to [`MAX_BASE_PARTS`]):
    /// the stages that read stored bases declare this many bindings of them
    /// ([`CurveProfile::base_parts`]).
    base_parts: u32,
}

/// The most device parts of a resident set one call binds (`bases`, `bases_1`, ...): a
/// bucket entry names its part in the log2(MAX_BASE_PARTS) bits below the sign
/// ([`PART_SHIFT`], derived from it). A power of two.
pub const MAX_BASE_PARTS: u32 = 8;

/// Where a bucket entry's part index starts: the bits below are the base's place in its
/// part (its copy's offset plus its index), the bits from here to the sign
/// ([`crate::digits::SIGN_BIT`]) the part: 28 for 8 parts.
pub const PART_SHIFT: u32 = crate::digits::SIGN_BIT.trailing_zeros() - MAX_BASE_PARTS.ilog2();

const _: () = assert!(MAX_BASE_PARTS.is_power_of_two() && MAX_BASE_PARTS >= 2);

impl std::fmt::Debug for CurveProfile {
    /// `Limbs29 on BN254 G1`: the profile and the curve's name (not its constants), and
    /// the parts a call binds where more than one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} on {}", self.arithmetic, self.curve.name())?;
        match self.base_parts {
            1 => Ok(()),
            k => write!(f, ", {k} base parts a call"),
        }
    }
}

impl PartialEq for CurveProfile {
    fn eq(&self, other: &Self) -> bool {
        self.arithmetic == other.arithmetic
            && std::ptr::eq(self.curve, other.curve)
            && self.base_parts == other.base_parts
    }
}

impl Eq for CurveProfile {}

impl CurveProfile {
    /// The profile `arithmetic` on `C`.
    pub fn of<C: GpuCurve>(arithmetic: Arithmetic) -> Self {
        arithmetic.on(C::spec())
    }

    /// Device parts of a resident set one call binds at once: 1 (as [`Arithmetic::on`]
    /// makes it) to [`MAX_BASE_PARTS`], as many as the adapter's storage bindings per stage
    /// allow (an engine's, [`crate::GpuMsm::profile`]).
    pub fn base_parts(self) -> u32 {
        self.base_parts
    }

    /// This profile binding `k` parts (clamped to 1..=[`MAX_BASE_PARTS`]).
    pub fn with_base_parts(self, k: u32) -> Self {
        Self {
            base_parts: k.clamp(1, MAX_BASE_PARTS),
            ..self
        }
    }

    /// Whether the buckets live on the twisted Edwards curve.
    pub fn is_edwards(self) -> bool {
        self.arithmetic.is_edwards()
    }

    /// Products of F_p in the profile's two bucket additions on its curve group, the cost
    /// model's weights: the step tables' multiplications, each three on a G2 (a product of
    /// F_p^2 is three of F_p: `shaders/element_fp2.wgsl`).
    pub fn add_costs(self) -> crate::digits::AddCosts {
        if self.is_edwards() {
            return crate::digits::AddCosts::EDWARDS;
        }
        let f = super::program::Formulas::of(self.curve);
        let per_product = match self.curve.degree() {
            1 => 1,
            _ => 3,
        };
        crate::digits::AddCosts {
            mixed_add: per_product * super::program::mul_count(&f.add_mixed) as u64,
            add: per_product * super::program::mul_count(&f.add) as u64,
        }
    }

    /// Threads of the convert stage for `points` points.
    pub(crate) fn convert_threads(self, points: u64) -> u64 {
        self.arithmetic.convert_threads(points)
    }

    /// Bits of the Montgomery radix R.
    pub fn radix_bits(self) -> u32 {
        self.curve.radix_bits(self.arithmetic.limb_bits())
    }

    /// Limbs of one element.
    pub fn limbs(self) -> u32 {
        self.radix_bits() / self.arithmetic.limb_bits()
    }

    /// u32 words of one packed element of F_p.
    pub fn packed_words(self) -> usize {
        self.curve.packed_words()
    }

    /// u32 words of one packed coordinate (WGSL's `ELEMENT_WORDS`): its components over
    /// F_p one after another (one on G1, two on G2).
    pub fn element_words(self) -> usize {
        self.curve.element_words()
    }

    /// u32 words of one base as uploaded (arkworks' x, y); the stored form may be wider
    /// ([`CurveProfile::base_words`]).
    pub fn upload_words(self) -> usize {
        2 * self.element_words()
    }

    /// u32 words of one stored base: (x, y), or the Edwards precomputed triple (WGSL's
    /// `BASE_WORDS`).
    pub fn base_words(self) -> usize {
        if self.is_edwards() {
            3 * self.element_words()
        } else {
            2 * self.element_words()
        }
    }

    /// u32 words of one projective point: (X, Y, Z), or Edwards (X, Y, Z, T).
    pub fn point_words(self) -> usize {
        if self.is_edwards() {
            4 * self.element_words()
        } else {
            3 * self.element_words()
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
    /// a byte: n times this is at least [`CurveProfile::stored_set_bytes`] for n >= 19 (the
    /// bits' padding is at most 16 bytes), what the caps on a part or a call divide by.
    pub(crate) fn stored_bytes_per_base(self, copies: u32) -> u64 {
        self.stored_base_bytes(1) * copies as u64 + 1
    }

    /// Bytes of `items` projective sums.
    pub(crate) fn sums_bytes(self, items: u64) -> u64 {
        items * self.point_words() as u64 * 4
    }

    /// Whether bases uploaded in arkworks' form must be converted on the device (for a
    /// resident set, checked on the host, the convert stage runs only then; a call that
    /// uploads bases runs it in every profile, to check them). Every profile's radix differs
    /// from arkworks' on every curve the crate implements.
    pub fn converts_bases(self) -> bool {
        self.radix_bits() != self.curve.arkworks_radix_bits() || self.is_edwards()
    }

    /// `C`'s shift for this profile: (2^(radix - 64 N), its inverse), in F_p.
    fn shift<C: GpuCurve>(self) -> (Fp<C>, Fp<C>) {
        self.check_curve::<C>();
        C::consts().shift(self.arithmetic.limb_bits())
    }

    /// Panics when `C` is not the profile's curve: its conversions would give another
    /// curve's words (a pointer comparison, at every conversion).
    fn check_curve<C: GpuCurve>(self) {
        assert!(
            std::ptr::eq(self.curve, C::spec()),
            "a {} profile used with {}",
            self.curve.name,
            C::NAME
        );
    }

    /// An integer below R (little-endian u64 words) in the profile's limbs, least
    /// significant first.
    pub fn limbs_of(self, words: &[u64]) -> Vec<u32> {
        let limbs = self.limbs() as usize;
        mul29::split_limbs(words, self.arithmetic.limb_bits(), limbs)
    }

    /// The shaders' Montgomery form of x (each component c as c * R mod p), packed
    /// ([`CurveProfile::element_words`] words).
    pub fn to_shader_words<C: GpuCurve>(self, x: &Fe<C>) -> Vec<u32> {
        // c * 2^(R - 64 N) in arkworks is stored as c * 2^R.
        let up = self.shift::<C>().0;
        components::<C>(x)
            .flat_map(|c| u64_words_to_u32(C::internal_words(&(c * up))))
            .collect()
    }

    /// Reads a coordinate in the shaders' Montgomery form ([`CurveProfile::element_words`]
    /// words) back into an arkworks element. `None` when a component is not a reduced value
    /// (>= p) or `w` is not one coordinate's words.
    pub fn from_shader_words<C: GpuCurve>(self, w: &[u32]) -> Option<Fe<C>> {
        if w.len() != self.element_words() {
            return None;
        }
        let down = self.shift::<C>().1;
        let c: Option<Vec<Fp<C>>> = w
            .chunks_exact(self.packed_words())
            .map(|w| {
                let v: Vec<u64> = w
                    .chunks_exact(2)
                    .map(|p| p[0] as u64 | (p[1] as u64) << 32)
                    .collect();
                // Taken as arkworks' internal form, v means c * 2^(R - 64 N).
                Some(C::from_internal_words(&v)? * down)
            })
            .collect();
        from_components::<C>(c?)
    }

    /// Coordinates packed one after another, as the shaders store a point.
    fn coords_to_shader_words<C: GpuCurve>(self, coords: &[Fe<C>]) -> Vec<u32> {
        coords
            .iter()
            .flat_map(|c| self.to_shader_words::<C>(c))
            .collect()
    }

    /// N coordinates stored one after another; `None` if one is not reduced.
    fn coords_from_shader_words<C: GpuCurve, const N: usize>(
        self,
        w: &[u32],
    ) -> Option<[Fe<C>; N]> {
        let pw = self.element_words();
        let mut c = [Fe::<C>::zero(); N];
        for (i, x) in c.iter_mut().enumerate() {
            *x = self.from_shader_words::<C>(&w[i * pw..(i + 1) * pw])?;
        }
        Some(c)
    }

    /// A projective point in the shaders' coordinates, packed ([`CurveProfile::point_words`]
    /// words). `None` only for Edwards, on points the map cannot send (order 2 or 4).
    pub fn point_to_shader_words<C: GpuCurve>(self, p: &Projective<C>) -> Option<Vec<u32>> {
        if self.is_edwards() {
            return Some(self.coords_to_shader_words::<C>(&super::edwards::extended(p)?));
        }
        // arkworks is Jacobian (x = X/Z^2, y = Y/Z^3); homogeneous (X Z : Y : Z^3) is the
        // same point.
        let (x, y, z) = if p.is_zero() {
            (Fe::<C>::zero(), Fe::<C>::one(), Fe::<C>::zero())
        } else {
            (p.x * p.z, p.y, p.z.square() * p.z)
        };
        Some(self.coords_to_shader_words::<C>(&[x, y, z]))
    }

    /// A base in the form the mixed addition reads ([`CurveProfile::base_words`] words):
    /// (x, y), or the Edwards precomputed triple (the identity's is (1, 1, 0)). `None` for the
    /// identity in short Weierstrass (stored as zeros) and for points the Edwards map cannot
    /// send.
    pub fn affine_to_shader_words<C: GpuCurve>(self, p: &Affine<C>) -> Option<Vec<u32>> {
        if p.is_zero() && !self.is_edwards() {
            return None;
        }
        let coords = if self.is_edwards() {
            super::edwards::precomputed(p)?.to_vec()
        } else {
            vec![p.x, p.y]
        };
        Some(self.coords_to_shader_words::<C>(&coords))
    }

    /// Reads a projective point from the shaders. `None` when a coordinate is not reduced or
    /// the point is not on the curve (a GPU fault or a poisoned Edwards sum, never a valid
    /// result).
    pub fn point_from_shader_words<C: GpuCurve>(self, w: &[u32]) -> Option<Projective<C>> {
        if self.is_edwards() {
            return super::edwards::from_extended(self.coords_from_shader_words::<C, 4>(w)?);
        }
        let [x, y, z] = self.coords_from_shader_words::<C, 3>(w)?;
        if z.is_zero() {
            // The identity is (0 : Y : 0) with Y != 0.
            return (x.is_zero() && !y.is_zero()).then(Projective::<C>::zero);
        }
        // Y^2 Z = X^3 + b Z^3.
        if y.square() * z != x.square() * x + C::COEFF_B * z.square() * z {
            return None;
        }
        // Homogeneous to Jacobian: (X Z, Y Z^2, Z).
        Some(Projective::<C>::new_unchecked(x * z, y * z.square(), z))
    }
}

/// Fewest bases one storage binding must hold for the default profile to be the Edwards one
/// (144 bytes a base against Limbs29's 96): 2^16. Larger calls are sliced at the binding
/// limit (issue 11), and with slices of 2^16 points Edwards still does about 30% fewer
/// multiplications per point than Limbs29 does on its 1.5 times longer slices. It was 2^20
/// before slicing existed, which gave lavapipe (128 MiB, 932 k Edwards bases) Limbs29; since
/// the written-out loops (issue 20) Edwards is also the faster of the two there (docs/PERF.md).
pub const EDWARDS_MIN_BINDABLE_BASES: u64 = 1 << 16;
/// Bases per thread of the Edwards convert stage: one field inversion (about 570
/// multiplications) is shared by this many points, each of which costs 17 more.
pub const CONVERT_BATCH: u32 = 32;
/// Threads per workgroup in every stage: a power of two (the trees in workgroup memory,
/// `shaders/reduce.wgsl`, `balanced.wgsl` and `scan.wgsl`, halve it level by level).
pub const WORKGROUP_SIZE: u32 = 64;
const _: () = assert!(WORKGROUP_SIZE.is_power_of_two());

/// Little-endian u64 words as little-endian u32 words.
pub(crate) fn u64_words_to_u32(words: &[u64]) -> Vec<u32> {
    words
        .iter()
        .flat_map(|w| [*w as u32, (*w >> 32) as u32])
        .collect()
}

/// Bytes of the identity bits of `points` bases: one bit a base, in whole 16-byte loads.
pub(crate) fn identity_bits_bytes(points: usize) -> u64 {
    points.div_ceil(128) as u64 * 16
}

/// Every profile on every curve the crate implements, where the curve allows it (the tests
/// generate and validate each one's shaders).
pub fn every_profile() -> Vec<CurveProfile> {
    let curves = [
        crate::curve::bls12_377_g1(),
        <ark_bn254::g1::Config as GpuCurve>::spec(),
        <ark_bls12_381::g1::Config as GpuCurve>::spec(),
        <ark_bls12_377::g2::Config as GpuCurve>::spec(),
        <ark_bn254::g2::Config as GpuCurve>::spec(),
        <ark_bls12_381::g2::Config as GpuCurve>::spec(),
    ];
    curves
        .into_iter()
        .flat_map(|c| Arithmetic::ALL.map(|a| a.on(c)))
        .filter(|p| p.curve.edwards || !p.is_edwards())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::packing::arkworks_words;
    use ark_bls12_377::{Fq, G1Projective};
    use ark_ec::PrimeGroup;
    use ark_ff::{PrimeField, UniformRand};

    type Bls = ark_bls12_377::g1::Config;

    fn on<C: GpuCurve>(a: Arithmetic) -> CurveProfile {
        CurveProfile::of::<C>(a)
    }

    /// Round trips of values and points through each profile's words, on curve C.
    fn round_trips<C: GpuCurve>(profiles: &[Arithmetic]) {
        use ark_ec::short_weierstrass::Projective;
        let mut rng = ark_std::test_rng();
        let one = Fe::<C>::one();
        let mut xs = vec![Fe::<C>::zero(), one, -one, Fe::<C>::from(64u64)];
        // On F_p^2: u, and p - 1 in the second component.
        xs.extend(from_components::<C>([Fp::<C>::zero(), Fp::<C>::one()]));
        xs.extend(from_components::<C>([Fp::<C>::one(), -Fp::<C>::one()]));
        xs.extend((0..50).map(|_| Fe::<C>::rand(&mut rng)));
        let g = Projective::<C>::generator();
        for &a in profiles {
            let a = on::<C>(a);
            for x in &xs {
                let w = a.to_shader_words::<C>(x);
                assert_eq!(w.len(), a.element_words());
                assert_eq!(a.from_shader_words::<C>(&w), Some(*x));
            }
            // p itself is not a reduced value, in any component.
            let p = u64_words_to_u32(Fp::<C>::MODULUS.as_ref());
            for c in 0..C::spec().degree() as usize {
                let mut w = vec![0u32; a.element_words()];
                w[c * p.len()..(c + 1) * p.len()].copy_from_slice(&p);
                assert_eq!(a.from_shader_words::<C>(&w), None);
            }
            for p in [
                Projective::<C>::zero(),
                g,
                g * C::ScalarField::from(12345u64),
            ] {
                let w = a.point_to_shader_words::<C>(&p).unwrap();
                assert_eq!(w.len(), a.point_words());
                assert_eq!(a.point_from_shader_words::<C>(&w), Some(p));
            }
            let mut w = a.point_to_shader_words::<C>(&g).unwrap();
            w[0] ^= 1;
            assert_eq!(a.point_from_shader_words::<C>(&w), None);
            let zeros = vec![0u32; a.point_words()];
            assert_eq!(a.point_from_shader_words::<C>(&zeros), None);
        }
    }

    #[test]
    fn shader_words_round_trip_on_every_curve() {
        round_trips::<Bls>(&Arithmetic::ALL);
        let weierstrass = [Arithmetic::Limbs13, Arithmetic::Limbs29];
        round_trips::<ark_bn254::g1::Config>(&weierstrass);
        round_trips::<ark_bls12_381::g1::Config>(&weierstrass);
        round_trips::<ark_bls12_377::g2::Config>(&weierstrass);
        round_trips::<ark_bn254::g2::Config>(&weierstrass);
        round_trips::<ark_bls12_381::g2::Config>(&weierstrass);
        // The wide profiles store x * 2^377 on BLS12-377: arkworks' words (x * 2^384) times
        // 2^-7.
        let x = Fq::from(12345u64);
        let down = Fq::from(2u64).pow([7u64]).inverse().unwrap();
        assert_eq!(
            on::<Bls>(Arithmetic::Limbs29).to_shader_words::<Bls>(&x),
            arkworks_words::<Bls>(&(x * down))
        );
        let p = G1Projective::generator();
        assert!(on::<Bls>(Arithmetic::Limbs29Edwards)
            .point_to_shader_words::<Bls>(&p)
            .is_some());
    }

    #[test]
    fn default_profile_by_features_binding_size_and_curve() {
        let bls = crate::curve::bls12_377_g1();
        let edwards = EDWARDS_MIN_BINDABLE_BASES * 144;
        assert_eq!(
            Arithmetic::auto(true, edwards, bls),
            Arithmetic::Limbs29Edwards
        );
        assert_eq!(
            Arithmetic::auto(true, edwards + 1, bls),
            Arithmetic::Limbs29Edwards
        );
        assert_eq!(
            Arithmetic::auto(true, edwards - 1, bls),
            Arithmetic::Limbs29
        );
        assert_eq!(
            Arithmetic::auto(true, 128 << 20, bls),
            Arithmetic::Limbs29Edwards
        ); // lavapipe
        assert_eq!(Arithmetic::auto(true, 4 << 20, bls), Arithmetic::Limbs29);
        assert_eq!(Arithmetic::auto(false, u64::MAX, bls), Arithmetic::Limbs13);
        // Curves without a point of order 2 never get the Edwards profile.
        for curve in [
            <ark_bn254::g1::Config as GpuCurve>::spec(),
            <ark_bls12_381::g1::Config as GpuCurve>::spec(),
        ] {
            assert_eq!(Arithmetic::auto(true, u64::MAX, curve), Arithmetic::Limbs29);
            assert_eq!(
                Arithmetic::auto(false, u64::MAX, curve),
                Arithmetic::Limbs13
            );
        }
    }
}
