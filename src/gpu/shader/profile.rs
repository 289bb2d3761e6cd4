//! What each arithmetic profile is and runs: the adapter features it needs and the default
//! choice per adapter, its curve model, whether it converts bases, and its WGSL (field,
//! curve, formulas, and its own versions of the two stages that differ by profile: convert
//! and per-segment reduction). Its data layout (words per value, conversions) is in
//! `field.rs`.

use super::field::u64_words_to_u32;
use super::field::{
    Arithmetic, CurveProfile, CONVERT_BATCH, EDWARDS_MIN_BINDABLE_BASES, WORKGROUP_SIZE,
};
use super::files;
use super::ShaderFile;
use crate::curve::CurveSpec;

impl Arithmetic {
    /// The wgpu features the profile needs.
    pub fn features(self) -> wgpu::Features {
        match self {
            Arithmetic::Limbs13 => wgpu::Features::empty(),
            Arithmetic::Limbs29 | Arithmetic::Limbs29Edwards => wgpu::Features::SHADER_INT64,
        }
    }

    /// The profile an adapter gets by default on `curve`: Limbs29Edwards where the curve
    /// admits the Edwards map, the adapter has 64-bit integers and one storage binding holds
    /// [`EDWARDS_MIN_BINDABLE_BASES`] precomputed bases, Limbs29 where it has 64-bit
    /// integers (its bases take two thirds of the bytes, so larger MSMs fit one binding),
    /// else Limbs13.
    pub fn auto(int64: bool, max_binding_bytes: u64, curve: &'static CurveSpec) -> Arithmetic {
        let edwards_bases =
            max_binding_bytes / (Arithmetic::Limbs29Edwards.on(curve).base_words() * 4) as u64;
        let edwards = curve.edwards && edwards_bases >= EDWARDS_MIN_BINDABLE_BASES;
        match (int64, edwards) {
            (true, true) => Arithmetic::Limbs29Edwards,
            (true, false) => Arithmetic::Limbs29,
            (false, _) => Arithmetic::Limbs13,
        }
    }

    /// Whether the buckets live on the twisted Edwards curve.
    pub fn is_edwards(self) -> bool {
        self == Arithmetic::Limbs29Edwards
    }

    /// Threads of the convert stage for `points` points.
    pub(crate) fn convert_threads(self, points: u64) -> u64 {
        if self.is_edwards() {
            points.div_ceil(CONVERT_BATCH as u64)
        } else {
            points
        }
    }

    /// The curve model's types and storage helpers.
    pub fn curve_file(self) -> ShaderFile {
        if self.is_edwards() {
            files::CURVE_EDWARDS
        } else {
            files::CURVE
        }
    }

    /// The convert stage's own file, which every call that uploads bases runs: it checks
    /// each one (`check_upload` of `shaders/base_status.wgsl`, which every profile's stage
    /// must call) and stores it in the profile's form: a radix change (short Weierstrass
    /// profiles), or the Edwards map and precomputation.
    pub fn convert_file(self) -> ShaderFile {
        match self {
            Arithmetic::Limbs13 | Arithmetic::Limbs29 => files::CONVERT,
            Arithmetic::Limbs29Edwards => files::CONVERT_EDWARDS,
        }
    }
}

impl CurveProfile {
    /// The field's WGSL: the functions both limb layouts share, then the layout's own file,
    /// and for the wide profiles the generated straight-line multiplication and packing.
    /// The portable profile keeps the shared loops as loops (its shaders stay small): their
    /// `// unroll` marks are dropped.
    pub fn field_wgsl(self) -> String {
        let shared = files::FIELD_LIMBS.text;
        match self.arithmetic {
            Arithmetic::Limbs13 => {
                let loops: Vec<&str> = shared
                    .lines()
                    .filter(|l| l.trim() != super::unroll::MARKER)
                    .collect();
                [&loops.join("\n"), files::FIELD13.text].join("\n")
            }
            Arithmetic::Limbs29 | Arithmetic::Limbs29Edwards => [
                shared,
                files::FIELD29.text,
                &super::mul29::Field29::of_curve(self.curve).wgsl(),
            ]
            .join("\n"),
        }
    }

    /// The curve formulas: the interpreter of the step tables (portable profile), or the
    /// tables written out as straight-line functions (wide profiles).
    pub fn formulas_wgsl(self) -> String {
        match self.arithmetic {
            Arithmetic::Limbs13 => {
                let f = super::program::Formulas::of(self.curve);
                files::CURVE_INTERP.text.to_string() + &super::program::wgsl_interpreter_entry(&f)
            }
            Arithmetic::Limbs29 => super::straight_line::wgsl_straight_line(self.curve),
            Arithmetic::Limbs29Edwards => super::edwards::wgsl_straight_line(),
        }
    }

    /// The curve model's types and storage helpers.
    pub fn curve_file(self) -> ShaderFile {
        self.arithmetic.curve_file()
    }

    /// The convert stage's own file.
    pub fn convert_file(self) -> ShaderFile {
        self.arithmetic.convert_file()
    }
}

impl CurveProfile {
    /// The generated WGSL header: sizes and the constants of F_p for this profile, all
    /// derived from arkworks' parameters (`CurveSpec`) so that nothing is typed in by hand.
    pub fn wgsl_header(self) -> String {
        let (a, curve) = (self.arithmetic, self.curve);
        let pw = self.packed_words();
        let mut s = String::new();
        s += &format!(
            "// {}: generated from arkworks' parameters (src/curve/).\n",
            curve.name
        );
        s += &format!("const PACKED_WORDS: u32 = {pw}u;\n");
        s += &format!("const BASE_WORDS: u32 = {}u;\n", self.base_words());
        assert!(
            self.base_words().is_multiple_of(4),
            "bases are read 16 bytes at a time"
        );
        s += &format!("const BASE_QUADS: u32 = {}u;\n", self.base_words() / 4);
        s += &format!("const POINT_WORDS: u32 = {}u;\n", self.point_words());
        s += "alias BaseWords = array<u32, BASE_WORDS>;\n";
        s += &a.base_quad_wgsl();
        s += "alias PointWords = array<u32, POINT_WORDS>;\n";
        s += &format!("const WORKGROUP_SIZE: u32 = {WORKGROUP_SIZE}u;\n");
        let bits = a.limb_bits();
        // -p^-1 mod 2^32 (field29.wgsl), or mod 2^13: its low 13 bits (field.wgsl).
        let np0 = match a {
            Arithmetic::Limbs13 => curve.np0 & ((1u32 << bits) - 1),
            Arithmetic::Limbs29 | Arithmetic::Limbs29Edwards => curve.np0,
        };
        s += &format!("const LIMBS: u32 = {}u;\n", self.limbs());
        s += &format!("const LIMB_BITS: u32 = {bits}u;\n");
        s += &format!("const LIMB_MASK: u32 = {}u;\n", (1u32 << bits) - 1);
        s += &format!("const NP0: u32 = {np0}u;\n");
        // As constants in the shaders' form: p itself, R mod p (one), and R^2 / 2^(64 N)
        // mod p, the factor whose Montgomery product takes arkworks' x * 2^(64 N) to x * R.
        s += &wgsl_limbs("P", &self.limbs_of(&curve.modulus));
        s += &wgsl_limbs("FP_ONE", &self.limbs_of(curve.one(bits)));
        s += &wgsl_limbs("R_CONVERT", &self.limbs_of(curve.r_convert(bits)));
        s += &wgsl_limbs("P_PACKED", &u64_words_to_u32(&curve.modulus));
        let mut p_minus_2 = curve.modulus.clone();
        p_minus_2[0] -= 2; // p is odd and > 2: no borrow
        s += &wgsl_limbs("P_MINUS_2", &u64_words_to_u32(&p_minus_2));
        // FE_ONE, CURVE_B (the check of uploaded bases) and CURVE_B3 are the coordinates'
        // field's: element.rs.
        if self.is_edwards() {
            s += &format!("const CONVERT_BATCH: u32 = {CONVERT_BATCH}u;\n");
            for (name, v) in curve.edwards_constants() {
                s += &wgsl_limbs(name, &self.limbs_of(v));
            }
        }
        s += &super::program::wgsl_programs(&super::program::Formulas::of(curve));
        s
    }
}

/// A WGSL constant array `name` of `limbs`.
pub(crate) fn wgsl_limbs(name: &str, limbs: &[u32]) -> String {
    let n = limbs.len();
    let limbs: Vec<String> = limbs.iter().map(|l| format!("{l}u")).collect();
    format!(
        "const {name}: array<u32, {n}> = array<u32, {n}>({});\n",
        limbs.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{from_components, Fe, Fp, GpuCurve};
    use ark_ff::{Field, PrimeField, Zero};

    type Bls = ark_bls12_377::g1::Config;

    fn on<C: GpuCurve>(a: Arithmetic) -> CurveProfile {
        CurveProfile::of::<C>(a)
    }

    /// The header's constants on curve C, read back from the WGSL and checked against
    /// arkworks: p, R mod p, b R mod p, R^2 / 2^(64 N) mod p, -p^-1 mod 2^k.
    fn header_constants<C: GpuCurve>(profiles: &[Arithmetic]) {
        for &a in profiles {
            let profile = on::<C>(a);
            let h = profile.wgsl_header();
            let limbs_of = |name: &str| -> Vec<u32> {
                let line = h
                    .lines()
                    .find(|l| l.starts_with(&format!("const {name}: array<u32")))
                    .unwrap_or_else(|| panic!("{name} in {a:?}'s header"));
                let list = line.split_once('(').unwrap().1.trim_end_matches(");");
                list.split(", ")
                    .map(|v| v.trim_end_matches('u').parse().unwrap())
                    .collect()
            };
            let bits = a.limb_bits();
            let value = |limbs: &[u32]| -> Fp<C> {
                let base = Fp::<C>::from(1u64 << bits);
                limbs
                    .iter()
                    .rev()
                    .fold(Fp::<C>::zero(), |acc, &l| acc * base + Fp::<C>::from(l))
            };
            let r = Fp::<C>::from(2u64).pow([u64::from(profile.radix_bits())]);
            assert_eq!(value(&limbs_of("P")), Fp::<C>::zero(), "{a:?}");
            assert!(limbs_of("P").iter().all(|&l| l < 1 << bits));
            assert_eq!(limbs_of("P").len() as u32, profile.limbs());
            assert_eq!(value(&limbs_of("FP_ONE")), r);
            // The coordinates' constants, component by component (element.rs).
            let e = super::super::element::constants_wgsl(profile);
            let element = |name: &str| -> Fe<C> {
                let c = (0..C::spec().degree()).map(|i| {
                    let n = format!("const {name}_C{i}: array<u32");
                    let line = e.lines().find(|l| l.starts_with(&n)).expect(name);
                    let list = line.split_once('(').unwrap().1.trim_end_matches(");");
                    let limbs: Vec<u32> = list
                        .split(", ")
                        .map(|v| v.trim_end_matches('u').parse().unwrap())
                        .collect();
                    value(&limbs)
                });
                from_components::<C>(c).unwrap()
            };
            let rf = Fe::<C>::from_base_prime_field(r);
            assert_eq!(element("CURVE_B"), C::COEFF_B * rf);
            assert_eq!(element("CURVE_B3"), C::COEFF_B * Fe::<C>::from(3u64) * rf);
            assert_eq!(element("FE_ONE"), rf);
            let ark = Fp::<C>::from(2u64).pow([64 * Fp::<C>::MODULUS.as_ref().len() as u64]);
            assert_eq!(value(&limbs_of("R_CONVERT")) * ark, r * r);
            let np0: u32 = h
                .lines()
                .find_map(|l| l.strip_prefix("const NP0: u32 = "))
                .unwrap()
                .trim_end_matches("u;")
                .parse()
                .unwrap();
            let p0 = Fp::<C>::MODULUS.as_ref()[0] as u32;
            let mask = (1u32 << bits) - 1;
            assert_eq!(p0.wrapping_mul(np0) & mask, mask, "{a:?}");
        }
    }

    #[test]
    fn header_constants_are_arkworks_on_every_curve() {
        header_constants::<Bls>(&Arithmetic::ALL);
        let weierstrass = [Arithmetic::Limbs13, Arithmetic::Limbs29];
        header_constants::<ark_bn254::g1::Config>(&weierstrass);
        header_constants::<ark_bls12_381::g1::Config>(&weierstrass);
        header_constants::<ark_bls12_377::g2::Config>(&weierstrass);
        header_constants::<ark_bn254::g2::Config>(&weierstrass);
        header_constants::<ark_bls12_381::g2::Config>(&weierstrass);
        // BLS12-377: 30 limbs of 13 bits (2^390) and 13 of 29 (2^377).
        assert_eq!(on::<Bls>(Arithmetic::Limbs13).radix_bits(), 390);
        assert_eq!(on::<Bls>(Arithmetic::Limbs29).radix_bits(), 377);
    }
}
