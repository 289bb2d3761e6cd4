//! The typed error every fallible call returns.

use thiserror::Error;

/// Software Vulkan driver to install on a headless Linux machine without a GPU.
pub const SOFTWARE_VULKAN_HINT: &str =
    "no GPU adapter found; on headless Linux install Mesa's software Vulkan driver \
     (lavapipe): `apt-get install -y mesa-vulkan-drivers`";

/// [`MsmError::NoAdapter`]'s message: the software driver's hint only where no adapter was
/// seen at all.
fn no_adapter_message(detail: &str, seen: &[String]) -> String {
    match seen {
        [] => format!("{SOFTWARE_VULKAN_HINT} ({detail})"),
        _ => format!(
            "no adapter taken: {detail}; adapters seen: {}",
            seen.join(", ")
        ),
    }
}

impl MsmError {
    /// Why an engine runs without an adapter, short, for its route and backend text (a
    /// [`MsmError::NoAdapter`]'s reason and the adapters seen; any other error's message).
    pub(crate) fn no_adapter_reason(&self) -> String {
        match self {
            MsmError::NoAdapter { detail, seen } if seen.is_empty() => {
                format!("none found: {detail}")
            }
            MsmError::NoAdapter { detail, seen } => format!("{detail}; seen: {}", seen.join(", ")),
            e => e.to_string(),
        }
    }
}

/// What can go wrong in an MSM call or when building an engine.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MsmError {
    /// `bases` and `scalars` have different lengths.
    #[error("length mismatch: {bases} bases but {scalars} scalars")]
    LengthMismatch {
        /// Number of bases passed.
        bases: usize,
        /// Number of scalars passed.
        scalars: usize,
    },
    /// No wgpu adapter was taken: wgpu found none (the message then says how to install a
    /// software one), none it found is what the configuration asks for, or the one it would
    /// take has four devices taken to be hung still busy on it.
    #[error("{}", no_adapter_message(detail, seen))]
    NoAdapter {
        /// Why none was taken: what was looked for.
        detail: String,
        /// The adapters wgpu listed, each as "name (backend, type)"; empty when it found
        /// none.
        seen: Vec<String>,
    },
    /// The adapter refused to create a device.
    #[error("device request failed: {0}")]
    DeviceRequest(String),
    /// An invalid `MsmConfig`.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A base is not on the curve, or has a coordinate that is not reduced below p (the
    /// first such index, in the caller's numbering). Every base of every call is checked:
    /// on the host on the CPU paths and in [`crate::GpuMsm::load_bases`], on the GPU inside
    /// the stage that first reads one-shot bases.
    #[error("base {index} is not on the curve (or a coordinate is not reduced)")]
    InvalidBase {
        /// Index of the first base off the curve.
        index: usize,
    },
    /// A base on the curve but outside the prime-order subgroup (G1 or G2; the first such
    /// index, in the caller's numbering), found by [`crate::MsmConfig::validate_subgroup`],
    /// or when such a base made the GPU's formulas fail (only on BLS12-377 G1, whose curve
    /// has points of order 2; a failure is always detected).
    #[error("base {index} is on the curve but not in the prime-order subgroup")]
    BaseNotInSubgroup {
        /// Index of the first base outside the subgroup.
        index: usize,
    },
    /// The input does not fit this engine or adapter (buffer or dispatch limits).
    #[error("input too large: {0}")]
    InputTooLarge(String),
    /// The GPU reported an error (validation, out of memory, failed mapping), or a result
    /// that cannot be right (a window sum off the curve with every base valid), or a blocking
    /// call made on one of the engine's own threads (reached through an executor that polls
    /// tasks inside their wakers' `wake`), refused rather than left waiting for itself. A
    /// lost device is [`MsmError::DeviceLost`].
    #[error("GPU error: {0}")]
    Gpu(String),
    /// The device was lost (a driver reset, a removed GPU) before this call's result came
    /// back; no sum is returned. The engine's next call recovers as
    /// [`crate::MsmConfig::device_loss`] says.
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),
    /// A wait of the call (for the GPU, or for room in the memory budget) lasted longer than
    /// [`crate::MsmConfig::gpu_timeout`] without progress; no sum is returned and the call's
    /// memory is given back. After a GPU wait, the device is treated as hung and dropped,
    /// and every other call in flight on it fails with this error too.
    #[error("timed out: {0}")]
    Timeout(String),
    /// The device failed the known-answer test: at engine creation, or a device made to
    /// replace a lost one ([`crate::DeviceLoss::Recreate`]), which then serves no call; or
    /// (from a call, with [`crate::SelfTest::Refuse`]) the host-list stages failed theirs on
    /// their first use, and calls that plan their buckets on the host are refused.
    #[error("the adapter {adapter} failed the known-answer self-test: {detail}")]
    SelfTestFailed {
        /// Adapter name.
        adapter: String,
        /// What disagreed.
        detail: String,
    },
    /// A [`crate::Bases`] handle loaded by another engine (another device).
    #[error("these bases were loaded by another engine; load them with this one")]
    ForeignBases,
    /// One vector of a batch failed: its index and its error.
    #[error("batch vector {index}: {source}")]
    Batch {
        /// Index of the failing scalar vector.
        index: usize,
        /// What went wrong with it.
        source: Box<MsmError>,
    },
}

impl MsmError {
    /// This error with base indices moved by `offset`: the error of a slice that starts at
    /// point `offset` of the caller's call, in the caller's numbering.
    pub(crate) fn at_offset(self, offset: usize) -> MsmError {
        match self {
            MsmError::InvalidBase { index } => MsmError::InvalidBase {
                index: index + offset,
            },
            MsmError::BaseNotInSubgroup { index } => MsmError::BaseNotInSubgroup {
                index: index + offset,
            },
            e => e,
        }
    }
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, MsmError>;
