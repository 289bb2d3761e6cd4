//! What each arithmetic profile is and runs: the adapter features it needs and the default
//! choice per adapter, its curve model, whether it converts bases, and its WGSL (field,
//! curve, formulas, and its own versions of the two stages that differ by profile: convert
//! and per-segment reduction). Its data layout (words per value, conversions) is in
//! `field.rs`.

use super::field::{Arithmetic, CurveProfile, CONVERT_BATCH, EDWARDS_MIN_BINDABLE_BASES};
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
            Arithmetic::Limbs29 => super::program::wgsl_straight_line(self.curve),
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
