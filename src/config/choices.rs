//! The choices a configuration names, defined at the bottom of the crate (they depend on
//! nothing in it) and re-exported where they are used: the path a call takes
//! ([`crate::report`]), the shaders' arithmetic ([`crate::gpu::field`]), the SRE search
//! ([`crate::sre`]) and where a calibration comes from ([`crate::calibration`]).

/// Which path computed the MSM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// CPU double-and-add with one shared doubling chain (small MSMs).
    CpuDoubleAndAdd,
    /// arkworks' CPU `VariableBaseMSM::msm` (sizes where a calibration found it fastest).
    CpuArkworks,
    /// The GPU Pippenger pipeline.
    Gpu,
}

/// The field arithmetic a device's shaders run, chosen per adapter at engine creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arithmetic {
    /// 30 limbs of 13 bits, one per u32, Montgomery radix 2^390 (`shaders/field.wgsl`):
    /// needs nothing beyond 32-bit integers. 1800 limb products per multiplication. Curve
    /// formulas interpreted from the step tables (`shaders/curve_interp.wgsl`), which keeps
    /// shaders small where a driver inlines everything.
    Limbs13,
    /// 12 limbs of 32 bits with 64-bit products, radix 2^384 as arkworks
    /// (`shaders/field32.wgsl`): needs `wgpu::Features::SHADER_INT64`. 288 products per
    /// multiplication, and bases need no conversion. Curve formulas written out as
    /// straight-line code generated from the same step tables: no run-time-indexed arrays.
    Limbs32,
    /// The [`Arithmetic::Limbs32`] field with the buckets on the twisted Edwards form of G1
    /// (`src/gpu/shader/edwards.rs`): bases precomputed on the device as (y - x, y + x, 2dxy), mixed
    /// additions of 7 multiplications instead of 11, additions 9 instead of 12. Window sums
    /// map back to short Weierstrass on the host.
    Limbs32Edwards,
}

impl Arithmetic {
    /// Every profile.
    pub const ALL: [Arithmetic; 3] = [
        Arithmetic::Limbs13,
        Arithmetic::Limbs32,
        Arithmetic::Limbs32Edwards,
    ];
}

/// Which pair search to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SreStrategy {
    /// The paper's vanilla array-based search (section 4.1).
    Array,
    /// The paper's list-based greedy search (section 4.2).
    Greedy,
    /// The paper's list-based exhaustive search (section 4.3).
    Exhaustive,
    /// Candidates from a (window, digit) index; best partner per target.
    Indexed,
}

impl SreStrategy {
    /// Every strategy.
    pub const ALL: [SreStrategy; 4] = [Self::Array, Self::Greedy, Self::Exhaustive, Self::Indexed];

    /// Lower-case name, as the examples take it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Array => "array",
            Self::Greedy => "greedy",
            Self::Exhaustive => "exhaustive",
            Self::Indexed => "indexed",
        }
    }

    /// Parses [`SreStrategy::name`].
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The early-stopping threshold the paper uses: a scalar stops once more than 80% of its
/// windows are merged.
pub const PAPER_EARLY_STOP: f64 = 0.8;

/// How to search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SreOptions {
    /// The search.
    pub strategy: SreStrategy,
    /// Early stopping: a scalar leaves the search once more than this fraction of its windows
    /// is merged. `None` searches until no match is left.
    pub early_stop: Option<f64>,
    /// Also match opposite digits (R = P_i - P_j). Only meaningful for signed digits.
    pub opposite: bool,
}

impl SreOptions {
    /// `strategy` with the paper's early stop and opposite matches on.
    pub fn new(strategy: SreStrategy) -> Self {
        Self {
            strategy,
            early_stop: Some(PAPER_EARLY_STOP),
            opposite: true,
        }
    }
}

/// Where an engine gets its calibration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CalibrationSource {
    /// The file named by [`crate::calibration::CALIBRATION_ENV`] when it is set, else the documented defaults.
    #[default]
    FromEnv,
    /// This file.
    File(std::path::PathBuf),
    /// The defaults, whatever the environment says (tests use this).
    Defaults,
}
