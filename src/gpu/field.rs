//! Host side of the shaders' field representation: constants for the WGSL header and
//! conversions between arkworks values and the packed words the shaders read and write.
//!
//! The shaders keep x in F_p as x * 2^390 mod p (Montgomery radix 2^390 = 2^(13 * 30)), and
//! store a reduced value as 12 little-endian u32 words. arkworks keeps x * 2^384 mod p.

use ark_bls12_377::{Fq, G1Affine, G1Projective};
use ark_ec::AffineRepr;
use ark_ff::{BigInt, Field, One, PrimeField, Zero};

/// Limb width in bits.
pub const LIMB_BITS: u32 = 13;
/// Limbs per element: 30 * 13 = 390 bits >= 377.
pub const LIMBS: u32 = 30;
/// u32 words of one packed field element.
pub const PACKED_WORDS: usize = 12;
/// Words of one affine point (x, y).
pub const AFFINE_WORDS: usize = 2 * PACKED_WORDS;
/// Words of one projective point (X, Y, Z).
pub const POINT_WORDS: usize = 3 * PACKED_WORDS;
/// Threads per workgroup in every stage.
pub const WORKGROUP_SIZE: u32 = 64;

/// Packed words of the canonical form of a field element's arkworks representation.
fn bigint_words(b: &BigInt<6>) -> [u32; PACKED_WORDS] {
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

/// The shaders' Montgomery form of x (x * 2^390 mod p), packed.
///
/// x * 64 in arkworks is stored as x * 64 * 2^384 = x * 2^390, which is exactly our form.
pub fn to_shader_words(x: &Fq) -> [u32; PACKED_WORDS] {
    bigint_words(&(*x * Fq::from(64u64)).0)
}

/// Reads a value in the shaders' Montgomery form back into an arkworks element. Returns
/// `None` when the words are not a reduced value (>= p).
pub fn from_shader_words(w: &[u32]) -> Option<Fq> {
    let v = words_bigint(w);
    if v >= Fq::MODULUS {
        return None;
    }
    // Taken as arkworks' internal form, v means v * 2^-384 = x * 2^6.
    let inv64 = Fq::from(64u64).inverse().expect("64 is invertible");
    Some(Fq::new_unchecked(v) * inv64)
}

/// A projective point in the shaders' homogeneous coordinates, packed (36 words).
pub fn point_to_shader_words(p: &G1Projective) -> [u32; POINT_WORDS] {
    // arkworks is Jacobian (x = X/Z^2, y = Y/Z^3); homogeneous (X Z : Y : Z^3) is the same point.
    let (x, y, z) = if p.is_zero() {
        (Fq::zero(), Fq::one(), Fq::zero())
    } else {
        (p.x * p.z, p.y, p.z.square() * p.z)
    };
    let mut w = [0u32; POINT_WORDS];
    w[..PACKED_WORDS].copy_from_slice(&to_shader_words(&x));
    w[PACKED_WORDS..2 * PACKED_WORDS].copy_from_slice(&to_shader_words(&y));
    w[2 * PACKED_WORDS..].copy_from_slice(&to_shader_words(&z));
    w
}

/// Reads a homogeneous projective point from the shaders. `None` when a coordinate is not
/// reduced or the point is not on the curve (a GPU fault, never a valid result).
pub fn point_from_shader_words(w: &[u32]) -> Option<G1Projective> {
    let x = from_shader_words(&w[..PACKED_WORDS])?;
    let y = from_shader_words(&w[PACKED_WORDS..2 * PACKED_WORDS])?;
    let z = from_shader_words(&w[2 * PACKED_WORDS..POINT_WORDS])?;
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

/// Affine base to the upload layout (arkworks words of x then y). Identity bases are zeros;
/// the host never places them in a bucket.
pub fn affine_upload_words(p: &G1Affine, out: &mut [u32]) {
    if p.is_zero() {
        out[..AFFINE_WORDS].fill(0);
        return;
    }
    out[..PACKED_WORDS].copy_from_slice(&arkworks_words(&p.x));
    out[PACKED_WORDS..AFFINE_WORDS].copy_from_slice(&arkworks_words(&p.y));
}

fn limbs13(b: &BigInt<6>) -> Vec<u32> {
    (0..LIMBS)
        .map(|i| {
            let bit = (i * LIMB_BITS) as usize;
            let (word, off) = (bit / 64, bit % 64);
            let mut v = b.0[word] >> off;
            if off + LIMB_BITS as usize > 64 && word + 1 < 6 {
                v |= b.0[word + 1] << (64 - off);
            }
            (v & ((1 << LIMB_BITS) - 1)) as u32
        })
        .collect()
}

fn wgsl_limbs(name: &str, b: &BigInt<6>) -> String {
    let limbs: Vec<String> = limbs13(b).iter().map(|l| format!("{l}u")).collect();
    format!(
        "const {name}: array<u32, {LIMBS}> = array<u32, {LIMBS}>({});\n",
        limbs.join(", ")
    )
}

/// -p^-1 mod 2^13, by Newton iteration on the lowest limb.
fn neg_p_inv_limb() -> u32 {
    let p0 = (Fq::MODULUS.0[0] & ((1 << LIMB_BITS) - 1)) as u32;
    let mut inv = 1u32;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(inv)));
    }
    let mask = (1u32 << LIMB_BITS) - 1;
    debug_assert_eq!(p0.wrapping_mul(inv) & mask, 1);
    inv.wrapping_neg() & mask
}

/// The generated WGSL header: sizes and the constants of F_p, all derived from
/// ark-bls12-377 so that nothing is typed in by hand.
pub fn wgsl_header() -> String {
    let two = Fq::from(2u64);
    let r = two.pow([(LIMBS * LIMB_BITS) as u64]).into_bigint(); // 2^390 mod p: one
    let r_convert = two.pow([396u64]).into_bigint(); // 2^396 mod p
    let mut s = String::new();
    s += &format!("const LIMBS: u32 = {LIMBS}u;\n");
    s += &format!("const LIMB_BITS: u32 = {LIMB_BITS}u;\n");
    s += &format!("const LIMB_MASK: u32 = {}u;\n", (1u32 << LIMB_BITS) - 1);
    s += &format!("const PACKED_WORDS: u32 = {PACKED_WORDS}u;\n");
    s += &format!("const AFFINE_WORDS: u32 = {AFFINE_WORDS}u;\n");
    s += &format!("const POINT_WORDS: u32 = {POINT_WORDS}u;\n");
    s += &format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n");
    s += &format!("const NP0: u32 = {}u;\n", neg_p_inv_limb());
    s += &wgsl_limbs("P", &Fq::MODULUS);
    s += &wgsl_limbs("FP_ONE", &r);
    s += &wgsl_limbs("R_CONVERT", &r_convert);
    s += &super::program::wgsl_programs();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::PrimeGroup;
    use ark_ff::UniformRand;

    #[test]
    fn shader_words_round_trip() {
        let mut rng = ark_std::test_rng();
        let mut xs = vec![Fq::zero(), Fq::one(), -Fq::one(), Fq::from(64u64)];
        xs.extend((0..50).map(|_| Fq::rand(&mut rng)));
        for x in xs {
            assert_eq!(from_shader_words(&to_shader_words(&x)), Some(x));
        }
        // p itself is not a reduced value.
        let p = bigint_words(&Fq::MODULUS);
        assert_eq!(from_shader_words(&p), None);
    }

    #[test]
    fn points_round_trip_and_bad_points_are_refused() {
        let g = G1Projective::generator();
        for p in [
            G1Projective::zero(),
            g,
            g * ark_bls12_377::Fr::from(12345u64),
        ] {
            assert_eq!(point_from_shader_words(&point_to_shader_words(&p)), Some(p));
        }
        let mut w = point_to_shader_words(&g);
        w[0] ^= 1;
        assert_eq!(point_from_shader_words(&w), None);
        assert_eq!(point_from_shader_words(&[0u32; POINT_WORDS]), None);
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
