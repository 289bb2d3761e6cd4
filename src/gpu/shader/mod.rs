//! The shader-generation side, in one place: every WGSL file of `shaders/`, the profiles'
//! choice among them ([`profile`]), the host/shader contract ([`contract`]), the word
//! layouts and conversions ([`field`]), the upload's packing ([`packing`]), the wide profiles' generated multiplication
//! and packing ([`mul29`]), the curve formulas as step tables ([`program`], [`edwards`]), the prelude
//! every stage starts with, the writing-out of marked loops ([`unroll`], which
//! `gpu::pipelines::stages` applies to each module's whole source), and the registers per thread the
//! written-out hot loop asks for ([`registers`], an estimate). What each stage adds to the
//! prelude (its files and its bindings) is the stage table's (`gpu::pipelines::stages`).
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the files of `shaders/` and the prelude |
//! | `profile.rs` | what each arithmetic profile is and which WGSL it runs, the generated WGSL header of constants |
//! | `field.rs` | a profile on a curve (`CurveProfile`): word layouts, arkworks <-> shader words |
//! | `packing.rs` | the upload's words on the host: arkworks' words of each base, the identity bits |
//! | `element.rs` | the coordinates' field (`Fe`: F_p on G1, F_p^2 on G2) and its constants |
//! | `mul29.rs` | the wide profiles' multiplication and packing, generated straight-line for any prime field (`Field29`, one per curve) |
//! | `mul_variants.rs` | other forms of that product (two accumulators, u32 only) and its CUDA twin, for the device check's microbenchmark |
//! | `contract.rs` | the uniform blocks and constants both sides share (`shader_struct!`) |
//! | `program.rs` | the short Weierstrass formulas as step tables, and their CPU interpreter |
//! | `schedule.rs` | the order the straight-line formulas are written in (few values live at once) |
//! | `straight_line.rs` | the step tables written out as straight-line WGSL functions, in that order |
//! | `unroll.rs` | writes out the loops the shaders mark `// unroll` |
//! | `registers.rs` | registers per thread of the hot loop, estimated from the generated code |
//! | `edwards.rs` | the twisted Edwards model: map, constants, step tables, the proof, and which curve groups admit it (`has_two_torsion`) |

pub mod contract;
pub mod edwards;
pub mod element;
pub mod field;
pub mod mul29;
pub mod mul_variants;
pub mod packing;
pub mod profile;
pub mod program;
pub mod registers;
pub mod schedule;
pub mod straight_line;
pub mod unroll;

use field::CurveProfile;

/// One WGSL file of `shaders/`: its name (for dumps and docs) and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShaderFile {
    /// The file's name in `shaders/`.
    pub name: &'static str,
    /// Its text, as compiled into the crate.
    pub text: &'static str,
}

/// A file of `shaders/`, compiled into the crate.
macro_rules! wgsl_file {
    ($name:literal) => {
        ShaderFile {
            name: $name,
            text: include_str!(concat!("../../../shaders/", $name)),
        }
    };
}

/// Every file of `shaders/`, by name.
pub mod files {
    use super::ShaderFile;

    /// Field functions common to every profile.
    pub const FIELD_OPS: ShaderFile = wgsl_file!("field_ops.wgsl");
    /// Point operations common to both curve models.
    pub const CURVE_OPS: ShaderFile = wgsl_file!("curve_ops.wgsl");
    /// Thread indexing of the stages.
    pub const DISPATCH: ShaderFile = wgsl_file!("dispatch.wgsl");
    /// The stored bases and how the stages that read them load a base.
    pub const BASES: ShaderFile = wgsl_file!("bases.wgsl");
    /// The host plan's accumulation.
    pub const ACCUMULATE: ShaderFile = wgsl_file!("accumulate.wgsl");
    /// The host plan's merge levels.
    pub const MERGE: ShaderFile = wgsl_file!("merge.wgsl");
    /// Bucket reduction (levels and windows).
    pub const REDUCE: ShaderFile = wgsl_file!("reduce.wgsl");
    /// Decomposition: counting and scattering the digits.
    pub const SORT: ShaderFile = wgsl_file!("sort.wgsl");
    /// Bucket offsets from the prefix sum's levels.
    pub const OFFSETS: ShaderFile = wgsl_file!("offsets.wgsl");
    /// The prefix sum of the bucket counts.
    pub const SCAN: ShaderFile = wgsl_file!("scan.wgsl");
    /// Balanced accumulation and the carry levels.
    pub const BALANCED: ShaderFile = wgsl_file!("balanced.wgsl");
    /// The check every uploaded base passes.
    pub const BASE_CHECK: ShaderFile = wgsl_file!("base_check.wgsl");
    /// The status words and the one check every convert stage runs.
    pub const BASE_STATUS: ShaderFile = wgsl_file!("base_status.wgsl");
    /// The shifted copies of a resident set.
    pub const SHIFT: ShaderFile = wgsl_file!("shift.wgsl");
    /// The self-test kernel.
    pub const SELFTEST: ShaderFile = wgsl_file!("selftest.wgsl");
    /// The field functions both limb layouts share (add, subtract, reduce).
    pub const FIELD_LIMBS: ShaderFile = wgsl_file!("field_limbs.wgsl");
    /// The portable profile's field.
    pub const FIELD13: ShaderFile = wgsl_file!("field.wgsl");
    /// The wide profiles' field.
    pub const FIELD29: ShaderFile = wgsl_file!("field29.wgsl");
    /// The coordinates' field on a G1: F_p.
    pub const ELEMENT_FP: ShaderFile = wgsl_file!("element_fp.wgsl");
    /// The coordinates' field on a G2: F_p^2.
    pub const ELEMENT_FP2: ShaderFile = wgsl_file!("element_fp2.wgsl");
    /// Short Weierstrass types and storage.
    pub const CURVE: ShaderFile = wgsl_file!("curve.wgsl");
    /// Twisted Edwards types and storage.
    pub const CURVE_EDWARDS: ShaderFile = wgsl_file!("curve_edwards.wgsl");
    /// The step-table interpreter (portable profile).
    pub const CURVE_INTERP: ShaderFile = wgsl_file!("curve_interp.wgsl");
    /// The short Weierstrass profiles' convert stage (a radix change).
    pub const CONVERT: ShaderFile = wgsl_file!("convert.wgsl");
    /// The Edwards profile's convert stage (the map and precomputation).
    pub const CONVERT_EDWARDS: ShaderFile = wgsl_file!("convert_edwards.wgsl");
}

/// What every stage starts with: generated constants, the contract, the profile's field,
/// the coordinates' field over it, the curve model, the formulas, and the common
/// operations and thread indexing.
pub fn prelude(profile: CurveProfile) -> String {
    [
        profile.wgsl_header().as_str(),
        contract::wgsl(profile.curve).as_str(),
        profile.field_wgsl().as_str(),
        files::FIELD_OPS.text,
        element::wgsl(profile).as_str(),
        profile.curve_file().text,
        profile.formulas_wgsl().as_str(),
        files::CURVE_OPS.text,
        files::DISPATCH.text,
    ]
    .join("\n")
}
