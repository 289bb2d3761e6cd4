//! The compiler report's command line (`tests/cli.rs` checks it with the other examples').

use std::path::PathBuf;

use clap::Parser;

/// What a GPU compiler makes of every shader: VGPRs, spills, instructions, occupancy and
/// scratch of each pipeline of every stage and self-test function, every arithmetic
/// profile and every curve group, built by Mesa's RADV (ACO) on a null device for RDNA2
/// and RDNA3 (no GPU needed: `apt-get install mesa-vulkan-drivers`). docs/PERF.md,
/// "The shaders as a GPU compiler sees them", has its figures.
#[derive(Parser, Debug)]
#[command(name = "compiler_report")]
pub struct ReportCli {
    /// GPU families: rdna2 (navi21), rdna3 (gfx1100 on Mesa 22, navi31 on Mesa 25), or
    /// any name RADV_FORCE_FAMILY takes.
    #[arg(long, value_delimiter = ',', default_value = "rdna2,rdna3")]
    pub families: Vec<String>,
    /// Curve groups (bls12-377-g1, bls12-381-g1, bn254-g1, bls12-377-g2, bls12-381-g2,
    /// bn254-g2), or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub curves: Vec<String>,
    /// Arithmetic profiles (limbs13, limbs29, limbs29-edwards), `default` (each curve
    /// group's on a desktop GPU), or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub profiles: Vec<String>,
    /// Device parts of a resident set one call binds, for the stages that read stored
    /// bases (they are compiled once per count; 1 is every other stage's).
    #[arg(long, value_delimiter = ',', default_value = "1,2,8", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub parts: Vec<u32>,
    /// Compile the stages only (no self-test functions).
    #[arg(long, conflicts_with = "ops_only")]
    pub stages_only: bool,
    /// The self-test functions to compile (fe_mul, point_add_mixed, ...), or `all`.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub ops: Vec<String>,
    /// Compile the self-test functions only (fe_mul, point_add_mixed, ...).
    #[arg(long)]
    pub ops_only: bool,
    /// Compiles at once, a process each (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Seconds one pipeline may take to compile before it is stopped and reported as such.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// The Vulkan ICD file of the driver (default: RADV's from mesa-vulkan-drivers; another
    /// RADV works, e.g. a newer Mesa's: the families are RADV's null devices).
    #[arg(long)]
    pub icd: Option<PathBuf>,
    /// Writes every row as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Writes each pipeline's assembly into DIR (one .s file a pipeline).
    #[arg(long)]
    pub asm: Option<PathBuf>,
    /// Checks the rows against a budget file (.ci/compiler-budgets.json): exits 1 where a
    /// pipeline spills, passes its instructions or VGPRs, loses waves, fails, or is new.
    #[arg(long)]
    pub check: Option<PathBuf>,
    /// With --check: a budget recorded on another driver fails (by default only its spills
    /// are compared then): CI's figures must be those recorded.
    #[arg(long)]
    pub same_driver: bool,
    /// Writes this run's figures into the budget file, replacing the budgets of the
    /// pipelines this run covers and keeping the others (review the diff: it is the record).
    #[arg(long)]
    pub write_budgets: Option<PathBuf>,
    /// Where PyPI's nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12 wheels lie unpacked
    /// (nvrtc/, nvcc/: .ci/compiler-report fetches them): the CUDA twin of each field's
    /// product is then compiled for sm_90 (NVRTC, ptxas -v) and reported beside the table.
    #[arg(long)]
    pub cuda_tools: Option<PathBuf>,
    /// Internal: whether this process's RADV_FORCE_FAMILY gives a device (exit 0, its name
    /// printed).
    #[arg(long)]
    pub probe: bool,
    /// Internal: compile one job (family, curve group, profile, parts, stage:NAME or
    /// op:NAME) and print its row as JSON.
    #[arg(long, num_args = 5, value_names = ["FAMILY", "CURVE", "PROFILE", "PARTS", "WHAT"])]
    pub worker: Option<Vec<String>>,
}
