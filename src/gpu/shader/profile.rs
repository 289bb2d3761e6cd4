//! Which WGSL each arithmetic profile runs: its field, its curve model, its formulas, and
//! its own versions of the two stages that differ by profile (convert, per-segment
//! reduction).

use super::field::Arithmetic;
use super::files;
use super::ShaderFile;

impl Arithmetic {
    /// The WGSL field implementation.
    pub fn field_file(self) -> ShaderFile {
        match self {
            Arithmetic::Limbs13 => files::FIELD13,
            Arithmetic::Limbs32 | Arithmetic::Limbs32Edwards => files::FIELD32,
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

    /// The curve formulas: the interpreter of the step tables (portable profile), or the
    /// tables written out as straight-line functions (wide profiles).
    pub fn formulas_wgsl(self) -> String {
        match self {
            Arithmetic::Limbs13 => files::CURVE_INTERP.text.into(),
            Arithmetic::Limbs32 => super::program::wgsl_straight_line(),
            Arithmetic::Limbs32Edwards => super::edwards::wgsl_straight_line(),
        }
    }

    /// The convert stage's own file, which every call that uploads bases runs: it checks
    /// each one (`check_upload` of `shaders/base_status.wgsl`, which every profile's stage
    /// must call) and stores it in the profile's form: a radix change (portable profile),
    /// the Edwards precomputation, or nothing (Limbs32 stores the upload as it is, and its
    /// stage only checks).
    pub fn convert_file(self) -> ShaderFile {
        match self {
            Arithmetic::Limbs13 => files::CONVERT13,
            Arithmetic::Limbs32 => files::CONVERT32,
            Arithmetic::Limbs32Edwards => files::CONVERT_EDWARDS,
        }
    }

    /// The bucket-reduction stage's per-segment entry point for the profile's formulas.
    pub fn reduce_segments_file(self) -> ShaderFile {
        match self {
            Arithmetic::Limbs13 => files::REDUCE_SEGMENTS_INTERP,
            Arithmetic::Limbs32 | Arithmetic::Limbs32Edwards => files::REDUCE_SEGMENTS_STRAIGHT,
        }
    }
}
