//! The coordinates' field in WGSL: the type `Fe` and its functions `fe_*`, on which the
//! curve formulas, the storage helpers and the stages compute, so that one shader source
//! serves G1 (coordinates in F_p) and G2 (in F_p^2).
//!
//! - On a G1, `Fe` is F_p (`shaders/element_fp.wgsl`: each `fe_*` calls the profile's
//!   `fp_*`).
//! - On a G2, `Fe` is F_p^2 = F_p[u] / (u^2 - beta) (`shaders/element_fp2.wgsl`), and
//!   [`nonresidue_wgsl`] writes the product by arkworks' beta as additions.
//!
//! Also the header's coordinate constants ([`constants_wgsl`]): `FE_ONE`, `CURVE_B` (the
//! check of uploaded bases) and `CURVE_B3` (3b, the formulas' factor where b is not a small
//! integer), each with its components `NAME_C0`, `NAME_C1` as F_p constants.

use super::field::CurveProfile;
use super::files;
use super::profile::wgsl_limbs;

/// The element layer of `profile`: its constants, its file, and on F_p^2 the product by
/// the non-residue.
pub fn wgsl(profile: CurveProfile) -> String {
    let mut s = constants_wgsl(profile);
    match profile.curve.nonresidue {
        None => s += files::ELEMENT_FP.text,
        Some(beta) => {
            s += &nonresidue_wgsl(beta);
            s += files::ELEMENT_FP2.text;
        }
    }
    s
}

/// `DEGREE`, `ELEMENT_WORDS`, and `FE_ONE`, `CURVE_B`, `CURVE_B3` in the profile's form.
pub fn constants_wgsl(profile: CurveProfile) -> String {
    let curve = profile.curve;
    let bits = profile.arithmetic.limb_bits();
    let mut s = format!("const DEGREE: u32 = {}u;\n", curve.degree());
    s += &format!("const ELEMENT_WORDS: u32 = {}u;\n", profile.element_words());
    let mut one = vec![curve.one(bits).to_vec()];
    one.resize(curve.degree() as usize, vec![0]);
    s += &element_const(profile, "FE_ONE", &one);
    s += &element_const(profile, "CURVE_B", curve.b_form(bits));
    s += &element_const(profile, "CURVE_B3", curve.b3_form(bits));
    s
}

/// `const NAME_Ci: array<u32, LIMBS>` per component, and `const NAME: Fe`.
fn element_const(profile: CurveProfile, name: &str, components: &[Vec<u64>]) -> String {
    let mut s = String::new();
    let names: Vec<String> = (0..components.len())
        .map(|i| format!("{name}_C{i}"))
        .collect();
    for (n, c) in names.iter().zip(components) {
        s += &wgsl_limbs(n, &profile.limbs_of(c));
    }
    match names.as_slice() {
        [c0] => s += &format!("const {name}: Fe = {c0};\n"),
        _ => s += &format!("const {name}: Fe = Fe({});\n", names.join(", ")),
    }
    s
}

/// `fp_mul_nonresidue(a)`, beta a for a small integer beta: |beta| a by doubling and
/// adding from the top bit, then a negation where beta < 0 (BN254, BLS12-381: one
/// negation; BLS12-377: two doublings, an addition and a negation).
pub fn nonresidue_wgsl(beta: i64) -> String {
    let k = beta.unsigned_abs();
    assert!(k >= 1, "a non-residue is not 0");
    let mut s = format!("// beta = {beta}: arkworks' non-residue of F_p^2.\n");
    s += "fn fp_mul_nonresidue(a: Fp) -> Fp {\n    var s = a;\n";
    for i in (0..63 - k.leading_zeros()).rev() {
        s += "    s = fp_add(s, s);\n";
        if k >> i & 1 == 1 {
            s += "    s = fp_add(s, a);\n";
        }
    }
    match beta < 0 {
        true => s += "    return fp_neg(s);\n}\n",
        false => s += "    return s;\n}\n",
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated product by beta, run on the CPU over the statements it emits.
    fn eval_nonresidue(beta: i64, a: i64) -> i64 {
        let w = nonresidue_wgsl(beta);
        let mut s = a;
        for line in w.lines() {
            match line.trim() {
                "s = fp_add(s, s);" => s += s,
                "s = fp_add(s, a);" => s += a,
                "return fp_neg(s);" => return -s,
                "return s;" => return s,
                _ => {}
            }
        }
        panic!("no return in {w}")
    }

    #[test]
    fn nonresidue_products_are_beta_times_a() {
        for beta in [-1i64, -5, -2, 3, 7, 1, -64] {
            assert_eq!(eval_nonresidue(beta, 11), 11 * beta, "beta = {beta}");
        }
    }

    #[test]
    fn constants_name_each_component() {
        let spec = <ark_bn254::g2::Config as crate::curve::GpuCurve>::spec();
        let s = constants_wgsl(crate::config::Arithmetic::Limbs29.on(spec));
        assert!(s.contains("const CURVE_B3: Fe = Fe(CURVE_B3_C0, CURVE_B3_C1);"));
        assert!(s.contains("const FE_ONE: Fe = Fe(FE_ONE_C0, FE_ONE_C1);"));
        let g1 = crate::curve::bls12_377_g1();
        let s = constants_wgsl(crate::config::Arithmetic::Limbs13.on(g1));
        assert!(s.contains("const CURVE_B: Fe = CURVE_B_C0;"));
    }
}
