//! [`CurveSpec`]: what the shaders need to know of one curve group, untyped, derived from
//! arkworks' parameters: the prime field's sizes and Montgomery constants per limb width,
//! the coordinates' field, b, the scalar field, the Edwards constants.

use ark_ff::{Field, One, PrimeField, Zero};

use super::{
    components, from_components, EdwardsConstants, Fe, Fp, Fr, GpuCurve, LIMB13_BITS, LIMB29_BITS,
};

/// What the shaders need to know of one curve group, untyped: its prime field's sizes and
/// Montgomery constants, the coordinates' field over it (F_p or F_p^2), b, its scalar
/// field, and whether the Edwards profile runs on it. The only ones are the crate's,
/// [`GpuCurve::spec`] (compared by address: one per curve group).
#[derive(Debug)]
pub struct CurveSpec {
    /// [`GpuCurve::NAME`].
    pub(crate) name: &'static str,
    /// p, little-endian u64 words (arkworks' `BigInt`: as many words as its own form).
    pub(crate) modulus: Vec<u64>,
    /// Bits of p.
    pub(crate) modulus_bits: u32,
    /// -p^-1 mod 2^32 (the products use its low 29 or 13 bits).
    pub(crate) np0: u32,
    /// Components of a coordinate over F_p: 1 (G1, over F_p) or 2 (G2, over F_p^2).
    pub(crate) degree: u32,
    /// F_p^2 = F_p[u] / (u^2 - beta): beta, a small integer (BN254 and BLS12-381: -1,
    /// BLS12-377: -5); `None` on G1.
    pub(crate) nonresidue: Option<i64>,
    /// b of y^2 = x^3 + b where it is a small integer (the G1s: the formulas multiply by
    /// 3b with additions); `None` where it is not (the G2s: a multiplication by 3b).
    pub(crate) b_small: Option<u64>,
    /// r, the scalar field's modulus.
    pub(crate) scalar_modulus: [u64; 4],
    /// Bits of r.
    pub(crate) scalar_bits: u32,
    /// Whether the twisted Edwards profile can run on the group (it has a point of order 2
    /// and the crate knows its map).
    pub(crate) edwards: bool,
    /// The header's integers that depend on the profile's radix, per limb width (13, 29).
    radix_constants: [RadixConstants; 2],
    /// The Edwards constants k, s, c times the wide radix, mod p (when `edwards`).
    edwards_constants: Vec<(&'static str, Vec<u64>)>,
}

/// The constants that depend on the radix R, for one limb width: R mod p, b R and 3b R
/// (per component over F_p), and the factor that takes arkworks' form to the shaders'.
#[derive(Debug, Clone)]
struct RadixConstants {
    limb_bits: u32,
    one: Vec<u64>,
    b: Vec<Vec<u64>>,
    b3: Vec<Vec<u64>>,
    r_convert: Vec<u64>,
}

impl CurveSpec {
    /// The spec of `C`. Panics if `C` is not a group the shaders can represent (a != 0, a
    /// field wider than F_p^2, a non-residue that is not a small integer, p too wide): a
    /// bug in this crate's impls, checked by the tests for each.
    pub(crate) fn of<C: GpuCurve>(edwards: Option<&EdwardsConstants<Fe<C>>>) -> CurveSpec {
        assert!(
            C::COEFF_A.is_zero(),
            "{}: the formulas are for a = 0",
            C::NAME
        );
        let degree = Fe::<C>::extension_degree() as u32;
        assert!(degree <= 2, "{}: coordinates over F_p or F_p^2", C::NAME);
        let b_small = (1..1u64 << 16).find(|&k| Fe::<C>::from(k) == C::COEFF_B);
        let modulus = Fp::<C>::MODULUS.as_ref().to_vec();
        let np0 = neg_inv_word(modulus[0] as u32);
        let modulus_bits = Fp::<C>::MODULUS_BIT_SIZE;
        assert_eq!(
            modulus_bits.div_ceil(32) as usize,
            2 * modulus.len(),
            "{}: the packed form is arkworks' words",
            C::NAME
        );
        let radix_constants = [LIMB13_BITS, LIMB29_BITS].map(|bits| {
            let radix = u64::from(radix_bits(modulus_bits, bits));
            let two = Fp::<C>::from(2u64);
            let r = Fe::<C>::from_base_prime_field(two.pow([radix]));
            let ark = 64 * modulus.len() as u64;
            RadixConstants {
                limb_bits: bits,
                one: words(&two.pow([radix])),
                b: component_words::<C>(&(C::COEFF_B * r)),
                b3: component_words::<C>(&(C::COEFF_B * Fe::<C>::from(3u64) * r)),
                r_convert: words(&two.pow([2 * radix - ark])),
            }
        });
        let edwards_constants = edwards
            .map(|k| {
                let radix = radix_bits(modulus_bits, LIMB29_BITS);
                let r = Fe::<C>::from(2u64).pow([u64::from(radix)]);
                [
                    ("TE_K", k.k),
                    ("MAP_S", k.s),
                    ("MAP_C", k.c),
                    ("MAP_NEG_ALPHA", -k.alpha),
                ]
                .map(|(n, v)| {
                    let mut c = component_words::<C>(&(v * r));
                    assert_eq!(c.len(), 1, "{}: the Edwards map is over F_p", C::NAME);
                    (n, c.remove(0))
                })
                .to_vec()
            })
            .unwrap_or_default();
        let r = Fr::<C>::MODULUS;
        CurveSpec {
            name: C::NAME,
            modulus,
            modulus_bits,
            np0,
            degree,
            nonresidue: (degree == 2).then(|| nonresidue::<C>()),
            b_small,
            scalar_modulus: r.0,
            scalar_bits: Fr::<C>::MODULUS_BIT_SIZE,
            edwards: edwards.is_some(),
            radix_constants,
            edwards_constants,
        }
    }

    /// The group's name ([`GpuCurve::NAME`]).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Bits of the scalar field's modulus r (the window counts of every call).
    pub fn scalar_bits(&self) -> u32 {
        self.scalar_bits
    }

    /// Whether the twisted Edwards profile runs on the group (it has a point of order 2).
    pub fn has_edwards_map(&self) -> bool {
        self.edwards
    }

    /// Components of a coordinate over F_p: 1 on G1, 2 on G2.
    pub fn degree(&self) -> u32 {
        self.degree
    }

    /// log2 R for limbs of `limb_bits` bits (13 or 29).
    pub fn radix_bits(&self, limb_bits: u32) -> u32 {
        radix_bits(self.modulus_bits, limb_bits)
    }

    /// u32 words of one packed element of F_p: arkworks' words, ceil(bits(p) / 32).
    pub fn packed_words(&self) -> usize {
        2 * self.modulus.len()
    }

    /// u32 words of one packed coordinate: its components' packed words one after another.
    pub fn element_words(&self) -> usize {
        self.degree as usize * self.packed_words()
    }

    /// log2 of arkworks' Montgomery radix: 64 bits a word.
    pub fn arkworks_radix_bits(&self) -> u32 {
        64 * self.modulus.len() as u32
    }

    /// R mod p for limbs of `limb_bits` bits (13 or 29), little-endian u64 words.
    pub fn one(&self, limb_bits: u32) -> &[u64] {
        &self.radix(limb_bits).one
    }

    /// b R for limbs of `limb_bits` bits, per component over F_p: b in the shaders' form.
    pub fn b_form(&self, limb_bits: u32) -> &[Vec<u64>] {
        &self.radix(limb_bits).b
    }

    /// 3b R for limbs of `limb_bits` bits, per component: the formulas' constant where b is
    /// not a small integer.
    pub fn b3_form(&self, limb_bits: u32) -> &[Vec<u64>] {
        &self.radix(limb_bits).b3
    }

    /// R^2 / 2^(64 N) mod p for limbs of `limb_bits` bits: the factor whose Montgomery
    /// product takes arkworks' x 2^(64 N) to x R.
    pub fn r_convert(&self, limb_bits: u32) -> &[u64] {
        &self.radix(limb_bits).r_convert
    }

    /// The Edwards constants in the wide profile's form (x R mod p), by their WGSL names.
    pub fn edwards_constants(&self) -> &[(&'static str, Vec<u64>)] {
        &self.edwards_constants
    }

    fn radix(&self, limb_bits: u32) -> &RadixConstants {
        self.radix_constants
            .iter()
            .find(|c| c.limb_bits == limb_bits)
            .expect("limbs of 13 or 29 bits")
    }
}

/// beta = u^2 of F_p^2 = F_p[u] / (u^2 - beta), read from arkworks' own field (u is the
/// element with components (0, 1)), as a small integer. Panics where it is not one.
fn nonresidue<C: GpuCurve>() -> i64 {
    let zero = Fp::<C>::zero();
    let u = from_components::<C>([zero, Fp::<C>::one()]).expect("two components");
    let c: Vec<Fp<C>> = components::<C>(&u.square()).collect();
    assert!(c[1].is_zero(), "{}: u^2 lies in F_p", C::NAME);
    (1..=64i64)
        .flat_map(|k| [k, -k])
        .find(|&k| {
            let m = Fp::<C>::from(k.unsigned_abs());
            c[0] == if k < 0 { -m } else { m }
        })
        .unwrap_or_else(|| panic!("{}: the non-residue is not a small integer", C::NAME))
}

/// The canonical integers of x's components over F_p, c0 first.
fn component_words<C: GpuCurve>(x: &Fe<C>) -> Vec<Vec<u64>> {
    components::<C>(x).map(|c| words(&c)).collect()
}

/// log2 R for a p of `modulus_bits` bits on limbs of `limb_bits` bits: the wide profiles'
/// (`mul29::Field29`: ceil(bits / 29) limbs, the top limb holding the product's extra bit),
/// and the portable profile's ceil((bits + 1) / 13) limbs of 13 bits, which hold 2p (its
/// product normalises a value below 2p into them before the last subtraction,
/// `shaders/field.wgsl`).
pub(crate) fn radix_bits(modulus_bits: u32, limb_bits: u32) -> u32 {
    match limb_bits {
        LIMB13_BITS => LIMB13_BITS * (modulus_bits + 1).div_ceil(LIMB13_BITS),
        LIMB29_BITS => LIMB29_BITS * modulus_bits.div_ceil(LIMB29_BITS),
        _ => panic!("limbs of 13 or 29 bits"),
    }
}

/// -x^-1 mod 2^32 for an odd x, by Newton iteration.
pub(crate) fn neg_inv_word(x: u32) -> u32 {
    let mut inv = 1u32;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(x.wrapping_mul(inv)));
    }
    debug_assert_eq!(x.wrapping_mul(inv), 1);
    inv.wrapping_neg()
}

/// The canonical integer of x, little-endian u64 words.
fn words<F: PrimeField>(x: &F) -> Vec<u64> {
    x.into_bigint().as_ref().to_vec()
}
