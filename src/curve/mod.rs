//! The curve groups the engine computes on ([`GpuCurve`]), and what its shaders need to know
//! of each ([`CurveSpec`]): every value derived from arkworks' own parameters. The one value
//! given by hand are the Edwards map's root alpha of x^3 + b, which [`CurveConsts::new`]
//! checks and a test compares with the cofactor's parity, and each group's measured
//! small-MSM cutoff ([`GpuCurve::SMALL_MSM_CUTOFF`]).
//!
//! A group qualifies when it is a short Weierstrass curve y^2 = x^3 + b (a = 0) over a prime
//! field F_p of at most 16 limbs of 29 bits (p below 2^464) or over F_p^2 = F_p[u] /
//! (u^2 - beta) with a small integer beta, and has a scalar field of four 64-bit words:
//! BLS12-377, BLS12-381 and BN254's G1 and G2 (not BW6-761, whose p needs 27 limbs and whose
//! r needs six words: the `gpu_curve!` line fails to compile on the trait bounds). Where b
//! is a small integer (the G1s) the formulas multiply by 3b with additions, elsewhere (the
//! G2s) by a constant. The twisted Edwards profile needs a rational point of order 2
//! ([`crate::gpu::shader::edwards::has_two_torsion`]): of these, only BLS12-377's G1 has one.
//!
//! At the bottom of the crate: it depends on arkworks alone, and the shader generation
//! (`gpu::shader`), the digits and the engine read it.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | `GpuCurve`, the field aliases, the Edwards constants, one `gpu_curve!` line per group |
//! | `spec.rs` | `CurveSpec`: the untyped values the shaders are generated from |
//!
//! # Adding a curve
//! 0. Check that it qualifies (above): a = 0, p below 2^464, r in four words.
//! 1. Its arkworks crate in the root Cargo.toml's `[workspace.dependencies]`, the root
//!    package's `[dependencies]` and `examples/Cargo.toml`, and one `gpu_curve!` line below
//!    per group (alpha: the root of x^3 + b where the group has a point of order 2, else
//!    `None`; a G2 must be over F_p^2 with a small non-residue, and gets no Edwards
//!    profile; `cutoff:` a provisional value until step 4).
//! 2. The lists of groups the tests run: `every_profile` in `src/gpu/shader/field.rs` (naga
//!    validates every module of every profile), `curve/`' and `profile.rs`' unit tests
//!    (constants against arkworks), `edwards.rs`' (`two_torsion_of_every_group_...`),
//!    `program.rs`' (the formulas), `mul29.rs`' (the product's steps), and
//!    `tests/gpu/curves.rs` (its shader functions and whole MSMs on the device, the Edwards
//!    refusal), with its shared engine in `tests/common/mod.rs` (`test_curves!`) and its
//!    provers in `tests/gpu/provers.rs`.
//! 3. The examples' `--curve` and `--group` (`examples/common/cli.rs`: `CurveArg`,
//!    `GroupArg` and `on_curve!`), and where the curve has a pairing the Groth16 prover's
//!    `GpuPairing` (`examples/provers/groth16.rs`) and the matches of `examples/groth16.rs`
//!    and `examples/kzg.rs`.
//! 4. Its cutoff measured: `cargo run --release --example cutoff -- --curve C --group G`,
//!    three runs, the median (docs/PERF.md, "Small-MSM cutoff per group").
//! 5. Its figures: `profiles` at 2^14 and 2^16 and `op_counts` (docs/PERF.md's table of
//!    every group), docs/ARCHITECTURE.md's profile figures if its limb counts differ, and, on a GPU,
//!    `crossover --curve C --group G` for a calibration file of its own. Its points must
//!    fit the carry tree in the adapter's workgroup memory: WebGPU's default 16 KiB holds
//!    points of up to 126 words (`src/gpu/planning/capacity.rs`, `workgroup_bytes`; the `stages_tests.rs`
//!    test measures every entry point's arrays).
//!
//! Nothing else in the engine names a curve: sizes, constants, formulas and window counts
//! come from here. Outside it, two tools stay on BLS12-377 G1: `mul29.rs`' own step
//! program (`program`, `LIMBS`: what `examples/mul_ops.rs` counts) and `registers.rs`' count
//! of registers per formula (the `op_counts` example prints it for that group only).

use std::sync::OnceLock;

use ark_ec::short_weierstrass::SWCurveConfig;
use ark_ff::{BigInt, Field, PrimeField, Zero};

mod spec;

pub use spec::CurveSpec;
pub(crate) use spec::{neg_inv_word, radix_bits};

mod sealed {
    /// Only this crate implements [`super::GpuCurve`]: each curve's shaders and proofs are
    /// the crate's.
    pub trait Sealed {}
}

/// A curve group the engine computes MSMs on: `ark_bls12_377::g1::Config` (the default of
/// [`crate::GpuMsm`]), `ark_bn254::g1::Config`, `ark_bls12_381::g1::Config`, and the three
/// curves' `g2::Config`.
pub trait GpuCurve:
    SWCurveConfig<ScalarField: PrimeField<BigInt = BigInt<4>>> + sealed::Sealed + Send + Sync + 'static
{
    /// The group's name in reports, errors and files: "BLS12-377 G1".
    const NAME: &'static str;

    /// Below this many points, without a calibration, a call runs on the CPU's
    /// double-and-add ([`crate::routing`]; [`crate::MsmConfig::small_msm_cutoff`] overrides
    /// it). Measured per group with `examples/cutoff.rs` on a 2-core x86_64 machine, one
    /// thread: the first n where arkworks 0.6's `VariableBaseMSM::msm` beats our
    /// double-and-add, the median over three runs (docs/PERF.md, "Small-MSM cutoff per
    /// group"). Below it double-and-add is the fastest path we have; from it on a bucket
    /// method wins, so the work goes to the GPU.
    const SMALL_MSM_CUTOFF: usize;

    /// arkworks' internal words of x in the prime field: its Montgomery form x 2^(64 N)
    /// mod p, as it stores it (what the upload sends; [`ark_ff::Fp`] keeps it private to
    /// its generic code).
    fn internal_words(x: &Fp<Self>) -> &[u64];

    /// The prime field's element whose internal words are `words` (N of them); `None`
    /// unless they are below p.
    fn from_internal_words(words: &[u64]) -> Option<Fp<Self>>;

    /// arkworks' internal words of a scalar (its Montgomery form, k 2^256 mod r): what the
    /// scalar upload sends (the GPU's sort reduces it).
    fn scalar_internal_words(k: &Fr<Self>) -> &[u64; 4];

    /// Everything derived from arkworks' parameters, computed once.
    fn consts() -> &'static CurveConsts<Self>;

    /// The constants the shaders and their host side read.
    fn spec() -> &'static CurveSpec {
        &Self::consts().spec
    }

    /// The twisted Edwards map's constants, where the group admits the map.
    fn edwards() -> Option<&'static EdwardsConstants<Fe<Self>>> {
        Self::consts().edwards.as_ref()
    }
}

/// One group's derived values: the untyped [`CurveSpec`], and the typed ones the host
/// converts with.
#[derive(Debug)]
pub struct CurveConsts<C: GpuCurve> {
    /// What the shaders are generated from.
    pub spec: CurveSpec,
    /// The Edwards map's constants (the group has a point (alpha, 0) of order 2 the crate
    /// maps from).
    pub edwards: Option<EdwardsConstants<Fe<C>>>,
    /// Per limb width (13, 29): 2^(radix - 64 N) and its inverse, in the prime field. A
    /// shader value is arkworks' internal one times the first, component by component.
    shifts: [(u32, Fp<C>, Fp<C>); 2],
}

impl<C: GpuCurve> CurveConsts<C> {
    /// The values of `C`; `alpha`: the root of x^3 + b the Edwards map starts from, where
    /// the crate runs the Edwards profile on `C`.
    pub(crate) fn new(alpha: Option<Fe<C>>) -> Self {
        if let Some(a) = alpha {
            let on_curve = a.square() * a + C::COEFF_B;
            assert!(
                on_curve.is_zero(),
                "{}: alpha is not a root of x^3 + b",
                C::NAME
            );
        }
        let edwards = alpha.map(EdwardsConstants::for_root);
        let spec = CurveSpec::of::<C>(edwards.as_ref());
        let shifts = [LIMB13_BITS, LIMB29_BITS].map(|bits| {
            let radix = spec.radix_bits(bits);
            let ark = spec.arkworks_radix_bits();
            let up = Fp::<C>::from(2u64).pow([u64::from(radix.abs_diff(ark))]);
            let down = up.inverse().expect("a power of two");
            match radix >= ark {
                true => (bits, up, down),
                false => (bits, down, up),
            }
        });
        CurveConsts {
            spec,
            edwards,
            shifts,
        }
    }

    /// (2^(radix - 64 N), its inverse) for limbs of `limb_bits` bits: arkworks' internal
    /// value times the first is the shaders' form.
    pub fn shift(&self, limb_bits: u32) -> (Fp<C>, Fp<C>) {
        let (_, up, down) = self
            .shifts
            .iter()
            .find(|s| s.0 == limb_bits)
            .expect("limbs of 13 or 29 bits");
        (*up, *down)
    }
}

/// The field of the coordinates: F_p on G1, F_p^2 on G2 (the shaders' `Fe`, `fe_*`).
pub type Fe<C> = <C as ark_ec::CurveConfig>::BaseField;
/// The prime field F_p under the coordinates, the coordinates' own field on G1 (the shaders'
/// `Fp`, `fp_*`).
pub type Fp<C> = <Fe<C> as Field>::BasePrimeField;

/// x's components over F_p, c0 first: x itself on G1, (c0, c1) of x = c0 + c1 u on G2. A
/// coordinate is stored as its components one after another.
pub fn components<C: GpuCurve>(x: &Fe<C>) -> impl Iterator<Item = Fp<C>> + '_ {
    x.to_base_prime_field_elements()
}

/// The coordinate whose components over F_p are `c` (as many as the extension degree).
pub fn from_components<C: GpuCurve>(c: impl IntoIterator<Item = Fp<C>>) -> Option<Fe<C>> {
    Fe::<C>::from_base_prime_field_elems(c)
}
/// The scalar field.
pub type Fr<C> = <C as ark_ec::CurveConfig>::ScalarField;

/// Bits of the portable profile's limbs.
pub const LIMB13_BITS: u32 = 13;
/// Bits of the wide profiles' limbs (`mul29.rs`).
pub const LIMB29_BITS: u32 = 29;

/// Constants of the map and of the curve -x^2 + y^2 = 1 + d x^2 y^2, for a curve
/// y^2 = x^3 + b with the point (alpha, 0) of order 2.
#[derive(Debug, Clone, Copy)]
pub struct EdwardsConstants<F> {
    /// alpha, the root of x^3 + b (BLS12-377: -1).
    pub alpha: F,
    /// s = 1/sqrt(3 alpha^2), the Montgomery scaling (u = s (x - alpha)).
    pub s: F,
    /// 1/s, for the way back (x = u / s + alpha).
    pub s_inv: F,
    /// c = sqrt(-a_te), the scaling of x to a = -1.
    pub c: F,
    /// d of the a = -1 curve.
    pub d: F,
    /// k = 2d, the constant of the addition formulas.
    pub k: F,
}

impl<F: Field> EdwardsConstants<F> {
    /// The constants from the root alpha of x^3 + b, with the root choices that make c
    /// exist. Panics when neither choice of sqrt(3 alpha^2) makes -a_te a square (the map
    /// needs another model; no curve the crate implements).
    pub fn for_root(alpha: F) -> Self {
        let three = F::from(3u64);
        let root = (three * alpha.square())
            .sqrt()
            .expect("3 alpha^2 is a square mod p");
        for r in [root, -root] {
            let s = r.inverse().expect("nonzero");
            let (a_mont, b_mont) = (three * alpha * s, s);
            let b_inv = b_mont.inverse().expect("nonzero");
            let a_te = (a_mont + F::from(2u64)) * b_inv;
            let d_te = (a_mont - F::from(2u64)) * b_inv;
            if let Some(c) = (-a_te).sqrt() {
                let d = -d_te * a_te.inverse().expect("a_te != 0");
                return EdwardsConstants {
                    alpha,
                    s,
                    s_inv: r,
                    c,
                    d,
                    k: d + d,
                };
            }
        }
        panic!("no choice of sqrt(3 alpha^2) makes -a_te a square");
    }
}

macro_rules! gpu_curve {
    ($config:ty, $name:literal, alpha: $alpha:expr, cutoff: $cutoff:expr) => {
        impl sealed::Sealed for $config {}
        impl GpuCurve for $config {
            const NAME: &'static str = $name;
            const SMALL_MSM_CUTOFF: usize = $cutoff;

            fn internal_words(x: &Fp<Self>) -> &[u64] {
                &x.0 .0
            }

            fn scalar_internal_words(k: &Fr<Self>) -> &[u64; 4] {
                &k.0 .0
            }

            fn from_internal_words(words: &[u64]) -> Option<Fp<Self>> {
                let b = ark_ff::BigInt(words.try_into().ok()?);
                (b < <Fp<Self> as PrimeField>::MODULUS).then(|| ark_ff::Fp::new_unchecked(b))
            }

            fn consts() -> &'static CurveConsts<Self> {
                static K: OnceLock<CurveConsts<$config>> = OnceLock::new();
                K.get_or_init(|| CurveConsts::new($alpha))
            }
        }
    };
}

// The cutoffs: docs/PERF.md, "Small-MSM cutoff per group" (`examples/cutoff.rs`).

// BLS12-377 G1: y^2 = x^3 + 1 has the point (-1, 0) of order 2.
gpu_curve!(
    ark_bls12_377::g1::Config,
    "BLS12-377 G1",
    alpha: Some(-ark_bls12_377::Fq::from(1u64)),
    cutoff: 12
);

// BN254 G1: y^2 = x^3 + 3, prime order (no point of order 2).
gpu_curve!(ark_bn254::g1::Config, "BN254 G1", alpha: None, cutoff: 13);

// BLS12-381 G1: y^2 = x^3 + 4, x^3 + 4 has no root in F_p (odd cofactor).
gpu_curve!(ark_bls12_381::g1::Config, "BLS12-381 G1", alpha: None, cutoff: 11);

// The G2s, over F_p^2 (the twists' b: BLS12-377 1/u, BN254 3/(9 + u), BLS12-381 4(1 + u)).
// None has a point of order 2 (odd cofactors): short Weierstrass profiles only.
gpu_curve!(ark_bls12_377::g2::Config, "BLS12-377 G2", alpha: None, cutoff: 9);
gpu_curve!(ark_bn254::g2::Config, "BN254 G2", alpha: None, cutoff: 10);
gpu_curve!(ark_bls12_381::g2::Config, "BLS12-381 G2", alpha: None, cutoff: 11);

/// BLS12-377 G1's spec: the curve of the estimates that are not per curve yet
/// (`registers.rs`).
pub fn bls12_377_g1() -> &'static CurveSpec {
    <ark_bls12_377::g1::Config as GpuCurve>::spec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_are_arkworks_parameters() {
        let s = <ark_bls12_377::g1::Config as GpuCurve>::spec();
        assert_eq!(s.packed_words(), 12);
        assert_eq!(s.radix_bits(LIMB13_BITS), 390);
        assert_eq!(s.radix_bits(LIMB29_BITS), 377);
        assert_eq!((s.b_small, s.degree, s.nonresidue), (Some(1), 1, None));
        assert_eq!(s.scalar_bits, 253);
        assert!(s.edwards);
        assert_eq!(s.arkworks_radix_bits(), 384);
        // BN254: 20 limbs of 13 bits (2p < 2^260) and 9 of 29; 8 words, 254-bit scalars.
        let bn = <ark_bn254::g1::Config as GpuCurve>::spec();
        assert_eq!((bn.radix_bits(13), bn.radix_bits(29)), (260, 261));
        assert_eq!(
            (bn.packed_words(), bn.b_small, bn.scalar_bits, bn.edwards),
            (8, Some(3), 254, false)
        );
        let bls381 = <ark_bls12_381::g1::Config as GpuCurve>::spec();
        assert_eq!((bls381.radix_bits(13), bls381.radix_bits(29)), (390, 406));
        assert_eq!(
            (bls381.b_small, bls381.scalar_bits, bls381.edwards),
            (Some(4), 255, false)
        );
    }

    /// The G2s: coordinates over F_p^2 with arkworks' non-residue, b not a small integer,
    /// the G1's scalar field.
    #[test]
    fn g2_specs_are_arkworks_parameters() {
        fn check<C: GpuCurve, G1: GpuCurve>(beta: i64) {
            let (s, g1) = (C::spec(), G1::spec());
            assert_eq!((s.degree(), s.nonresidue, s.b_small), (2, Some(beta), None));
            assert_eq!(s.element_words(), 2 * g1.packed_words());
            assert_eq!(
                (s.modulus.as_slice(), s.np0),
                (g1.modulus.as_slice(), g1.np0)
            );
            assert_eq!(s.scalar_modulus, g1.scalar_modulus);
            assert!(!s.edwards);
        }
        check::<ark_bls12_377::g2::Config, ark_bls12_377::g1::Config>(-5);
        check::<ark_bn254::g2::Config, ark_bn254::g1::Config>(-1);
        check::<ark_bls12_381::g2::Config, ark_bls12_381::g1::Config>(-1);
    }

    /// The Edwards map is given exactly where the group has a point of order 2 (an even
    /// cofactor), and its alpha is a root of x^3 + b (`CurveConsts::new` asserts it).
    #[test]
    fn edwards_exactly_where_there_is_a_point_of_order_two() {
        use crate::gpu::shader::edwards::has_two_torsion;
        fn check<C: GpuCurve>() {
            assert_eq!(
                C::edwards().is_some(),
                has_two_torsion::<C>(),
                "{}",
                C::NAME
            );
            assert_eq!(C::spec().edwards, C::edwards().is_some());
            if let Some(k) = C::edwards() {
                assert!((k.alpha.square() * k.alpha + C::COEFF_B).is_zero());
            }
        }
        check::<ark_bls12_377::g1::Config>();
        check::<ark_bn254::g1::Config>();
        check::<ark_bls12_381::g1::Config>();
        check::<ark_bls12_377::g2::Config>();
        check::<ark_bn254::g2::Config>();
        check::<ark_bls12_381::g2::Config>();
    }
}
