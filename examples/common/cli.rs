//! The examples' command lines (clap derive), in one place so that `tests/cli.rs` can check
//! every parser without running an MSM: `--help` lists every flag with its default and unit,
//! an unknown flag or an out-of-range value is an error before any work.
#![allow(dead_code)]

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use gpu_msm::inputs::ScalarDistribution;
use gpu_msm::{AdapterChoice, Arithmetic, Backend, Devices, MsmConfig, PipelineCacheDir, SreMode};
use gpu_msm::{SreOptions, SreStrategy, PAPER_EARLY_STOP};

/// Largest log2 of a point count the examples accept (2^26 points of 96 bytes is 6 GiB of
/// bases, past what one binding holds on most adapters).
pub const MAX_LOG_N: u32 = 26;

/// An arithmetic profile on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArithmeticArg {
    /// 13-bit limbs, interpreted formulas (any adapter).
    Limbs13,
    /// 29-bit limbs with 64-bit products, straight-line formulas (SHADER_INT64; `limbs32`,
    /// its old name, still parses).
    #[value(alias = "limbs32")]
    Limbs29,
    /// 29-bit limbs, twisted Edwards buckets (SHADER_INT64; also `limbs32-edwards`).
    #[value(alias = "limbs32-edwards")]
    Limbs29Edwards,
}

impl From<ArithmeticArg> for Arithmetic {
    fn from(a: ArithmeticArg) -> Self {
        match a {
            ArithmeticArg::Limbs13 => Arithmetic::Limbs13,
            ArithmeticArg::Limbs29 => Arithmetic::Limbs29,
            ArithmeticArg::Limbs29Edwards => Arithmetic::Limbs29Edwards,
        }
    }
}

/// `MsmConfig::bucket_sort` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BucketSortArg {
    /// On the GPU unless SRE plans the call.
    Auto,
    /// Host digits and bucket lists.
    Host,
    /// Decomposition and bucket sort on the GPU.
    Gpu,
}

impl From<BucketSortArg> for gpu_msm::BucketSort {
    fn from(a: BucketSortArg) -> Self {
        match a {
            BucketSortArg::Auto => gpu_msm::BucketSort::Auto,
            BucketSortArg::Host => gpu_msm::BucketSort::Host,
            BucketSortArg::Gpu => gpu_msm::BucketSort::Gpu,
        }
    }
}

/// The curve an example runs on (`--curve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CurveArg {
    /// BLS12-377 (the default)
    #[value(name = "bls12-377")]
    Bls12_377,
    /// BLS12-381
    #[value(name = "bls12-381")]
    Bls12_381,
    /// BN254 (alt_bn128)
    #[value(name = "bn254")]
    Bn254,
}

/// The group of the curve an example runs on (`--group`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GroupArg {
    /// G1, over F_p (the default)
    #[value(name = "g1")]
    G1,
    /// G2, over F_p^2 (a Groth16 prover's B query)
    #[value(name = "g2")]
    G2,
}

/// Runs `$body` with `$c` the config type of `$curve`'s `$group` (a [`CurveArg`] and a
/// [`GroupArg`]): an example's generic main on the group its command line names.
#[macro_export]
macro_rules! on_curve {
    ($curve:expr, $group:expr, $c:ident => $body:expr) => {{
        use $crate::common::cli::{CurveArg, GroupArg};
        match ($curve, $group) {
            (CurveArg::Bls12_377, GroupArg::G1) => {
                type $c = ark_bls12_377::g1::Config;
                $body
            }
            (CurveArg::Bls12_381, GroupArg::G1) => {
                type $c = ark_bls12_381::g1::Config;
                $body
            }
            (CurveArg::Bn254, GroupArg::G1) => {
                type $c = ark_bn254::g1::Config;
                $body
            }
            (CurveArg::Bls12_377, GroupArg::G2) => {
                type $c = ark_bls12_377::g2::Config;
                $body
            }
            (CurveArg::Bls12_381, GroupArg::G2) => {
                type $c = ark_bls12_381::g2::Config;
                $body
            }
            (CurveArg::Bn254, GroupArg::G2) => {
                type $c = ark_bn254::g2::Config;
                $body
            }
        }
    }};
}

/// Options shared by the examples that build an engine.
#[derive(Debug, Clone, clap::Args)]
pub struct EngineArgs {
    /// Pick the first adapter whose name contains this (case-insensitive), e.g. llvmpipe or
    /// H200 [default: the high-performance adapter, or GPU_MSM_ADAPTER]
    #[arg(long, value_name = "NAME")]
    pub adapter: Option<String>,
    /// Arithmetic profile of the shaders [default: limbs29-edwards on BLS12-377 G1 where
    /// the adapter has 64-bit integers and binds 2^16 Edwards bases (lavapipe too), limbs29
    /// where it has 64-bit integers otherwise, else limbs13]
    #[arg(long, value_enum)]
    pub arithmetic: Option<ArithmeticArg>,
    /// Let the engine route each MSM (on a software adapter that means the CPU) instead of
    /// forcing the GPU path
    #[arg(long)]
    pub routed: bool,
    /// Emulate a smaller adapter: request the device with WebGPU's default limits but
    /// storage bindings of at most BYTES (an odd value, as Vulkan on NVIDIA's 2^31 - 1, at
    /// sizes a software adapter runs; buffers stay at 256 MiB or BYTES, the larger) [default:
    /// the adapter's own limits]
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(4096..))]
    pub max_binding: Option<u64>,
    /// Keep the driver's pipeline cache in DIR, or `off` [default: ~/.cache/gpu-msm, or
    /// $XDG_CACHE_HOME/gpu-msm]
    #[arg(long, value_name = "DIR|off")]
    pub pipeline_cache: Option<String>,
    /// Split every MSM across several devices: `all` (every hardware adapter), or
    /// NAME:COUNT[,NAME:COUNT...] (COUNT devices on the adapters whose name contains NAME,
    /// e.g. `H200:8`, or `llvmpipe:2` for two devices on lavapipe's one adapter) [default:
    /// one device]
    #[arg(long, value_name = "all|NAME:COUNT,...", value_parser = parse_devices)]
    pub devices: Option<Devices>,
    /// Fewest scalars in a streamed chunk of a call's upload
    /// (`MsmConfig::stream_chunk_scalars`), or `off` for one upload [default: the
    /// engine's, 2^18]
    #[arg(long, value_name = "N|off", value_parser = parse_stream_chunk)]
    pub stream_chunk: Option<StreamChunkArg>,
}

/// `all`, or NAME:COUNT pairs separated by commas.
pub fn parse_devices(s: &str) -> Result<Devices, String> {
    if s == "all" {
        return Ok(Devices::AllHardware);
    }
    let pair = |p: &str| -> Result<(String, usize), String> {
        let (name, count) = p
            .rsplit_once(':')
            .ok_or_else(|| format!("{p:?}: expected NAME:COUNT"))?;
        let count = count
            .parse()
            .map_err(|e| format!("{p:?}: count {count:?}: {e}"))?;
        Ok((name.to_string(), count))
    };
    s.split(',')
        .map(pair)
        .collect::<Result<_, _>>()
        .map(Devices::Named)
}

impl EngineArgs {
    /// The engine configuration these options ask for.
    pub fn config(&self) -> MsmConfig {
        MsmConfig {
            adapter: AdapterChoice {
                name_contains: self.adapter.clone(),
                ..Default::default()
            },
            arithmetic: self.arithmetic.map(Into::into),
            force_backend: (!self.routed).then_some(Backend::Gpu),
            limits: self.max_binding.map(|bytes| {
                let webgpu = gpu_msm::wgpu::Limits::default();
                gpu_msm::wgpu::Limits {
                    max_storage_buffer_binding_size: bytes,
                    max_buffer_size: webgpu.max_buffer_size.max(bytes),
                    ..webgpu
                }
            }),
            pipeline_cache: match self.pipeline_cache.as_deref() {
                None => PipelineCacheDir::UserCache,
                Some("off") => PipelineCacheDir::Off,
                Some(dir) => PipelineCacheDir::Dir(dir.into()),
            },
            devices: self.devices.clone().unwrap_or_default(),
            stream_chunk_scalars: StreamChunkArg::config(self.stream_chunk),
            ..Default::default()
        }
    }
}

/// `off`, `auto`, or a strategy with an optional early-stop threshold.
pub fn parse_sre(s: &str) -> Result<SreMode, String> {
    let bad = || {
        format!(
            "{s:?}: expected off, auto or STRATEGY[:THRESHOLD|:none] with STRATEGY one of \
             array, greedy, exhaustive, indexed and THRESHOLD in 0..=1"
        )
    };
    match s {
        "off" => Ok(SreMode::Off),
        "auto" => Ok(SreMode::Auto),
        _ => {
            let (name, th) = match s.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (s, None),
            };
            let early_stop = match th {
                None => Some(PAPER_EARLY_STOP),
                Some("none") => None,
                Some(t) => Some(
                    t.parse::<f64>()
                        .ok()
                        .filter(|t| (0.0..=1.0).contains(t))
                        .ok_or_else(bad)?,
                ),
            };
            Ok(SreMode::On(SreOptions {
                strategy: SreStrategy::from_name(name).ok_or_else(bad)?,
                early_stop,
                opposite: true,
            }))
        }
    }
}

/// `uniform`, `distinct:K`, `bits:B` or `sparse:P`.
pub fn parse_scalars(s: &str) -> Result<ScalarDistribution, String> {
    ScalarDistribution::parse(s)
        .ok_or_else(|| format!("{s:?}: expected uniform, distinct:K (K >= 1), bits:B (B <= 255) or sparse:P (1..=100 percent nonzero)"))
}

/// The main job: random inputs, MSMs on the chosen adapter, each verified against arkworks.
#[derive(Debug, Parser)]
#[command(name = "msm")]
pub struct MsmCli {
    /// The curve the MSMs run on
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// The curve's group
    #[arg(long, value_enum, default_value = "g1")]
    pub group: GroupArg,
    /// log2 of the number of points
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(0..=MAX_LOG_N as i64))]
    pub log_n: u32,
    /// Window size c in bits [default: the cost model's choice]
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub window: Option<u32>,
    /// Seed of the random bases and scalars
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// MSM calls to run (each verified)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub repeat: u64,
    /// Compile the shaders with wgpu's runtime bounds checks (slow; for testing)
    #[arg(long)]
    pub checked: bool,
    /// Scalar redundancy elimination: off, auto, or array|greedy|exhaustive|indexed with an
    /// optional :THRESHOLD (0..=1, default 0.8) or :none
    #[arg(long, default_value = "off", value_parser = parse_sre)]
    pub sre: SreMode,
    /// Scalar distribution: uniform, distinct:K (K distinct values), bits:B (below 2^B) or
    /// sparse:P (P percent nonzero)
    #[arg(long, default_value = "uniform", value_parser = parse_scalars)]
    pub scalars: ScalarDistribution,
    /// Print the reports as JSON lines instead of tables
    #[arg(long)]
    pub json: bool,
    /// Load the bases on the device once (`load_bases`) and run every call on the handle, as
    /// a prover does
    #[arg(long)]
    pub resident: bool,
    /// With --resident: shifted copies of the bases, `none`, `auto` or a factor K
    /// (`load_bases_with`, `Precompute`)
    #[arg(long, default_value = "none", value_parser = parse_precompute)]
    pub precompute: PrecomputeArg,
    /// Where the bucket entries are made: auto (the GPU unless SRE), host or gpu
    #[arg(long, value_enum, default_value = "auto")]
    pub bucket_sort: BucketSortArg,
    /// Append the last call's row (phases, field products per second by stage) to this
    /// markdown table, its header first if the file is new (the device check's summary)
    #[arg(long, value_name = "FILE")]
    pub table: Option<std::path::PathBuf>,
    /// The row's name in --table [default: curve, group, n and mode]
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Times double-and-add, arkworks and the GPU per size, prints the winner, draws a chart and
/// writes a calibration file for routing.
#[derive(Debug, Parser)]
#[command(name = "crossover")]
pub struct CrossoverCli {
    /// The curve measured (the calibration file names its group)
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// The curve's group
    #[arg(long, value_enum, default_value = "g1")]
    pub group: GroupArg,
    /// Sweep n up to 2^MAX_LOG (and 3 * 2^(l-1) between powers)
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=MAX_LOG_N as i64))]
    pub max_log: u32,
    /// Time the GPU only up to 2^GPU_MAX_LOG points [default: MAX_LOG]
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_LOG_N as i64))]
    pub gpu_max_log: Option<u32>,
    /// Time double-and-add only up to this many points
    #[arg(long, default_value_t = 4096)]
    pub dd_max: usize,
    /// Runs per cell (the median is kept)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub reps: u64,
    /// Calibration file to write (JSON) [default: calibration.json on BLS12-377 G1,
    /// calibration-<curve>-<group>.json on another group, e.g. calibration-bn254-g2.json]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Chart to write (SVG)
    #[arg(long, default_value = "crossover.svg")]
    pub chart: PathBuf,
    /// Print the table as JSON instead of text
    #[arg(long)]
    pub json: bool,
    /// Pick the first adapter whose name contains this (case-insensitive)
    #[arg(long, value_name = "NAME")]
    pub adapter: Option<String>,
}

/// An SRE strategy on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// The paper's array search.
    Array,
    /// The paper's greedy list search.
    Greedy,
    /// The paper's exhaustive list search.
    Exhaustive,
    /// Our (window, digit) index.
    Indexed,
}

impl From<StrategyArg> for SreStrategy {
    fn from(s: StrategyArg) -> Self {
        match s {
            StrategyArg::Array => SreStrategy::Array,
            StrategyArg::Greedy => SreStrategy::Greedy,
            StrategyArg::Exhaustive => SreStrategy::Exhaustive,
            StrategyArg::Indexed => SreStrategy::Indexed,
        }
    }
}

/// An early-stop threshold: a number in 0..=1, or `none`.
pub fn parse_threshold(s: &str) -> Result<Option<f64>, String> {
    match s {
        "none" => Ok(None),
        t => t
            .parse::<f64>()
            .ok()
            .filter(|t| (0.0..=1.0).contains(t))
            .map(Some)
            .ok_or_else(|| format!("{s:?}: expected a number in 0..=1 or none")),
    }
}

/// SRE search statistics over a grid (the product of every list).
#[derive(Debug, Parser)]
#[command(name = "sre_stats")]
pub struct SreStatsCli {
    /// log2 of the number of scalars (comma-separated list)
    #[arg(long, value_delimiter = ',', default_value = "10", value_parser = clap::value_parser!(u32).range(1..=24))]
    pub log_n: Vec<u32>,
    /// Scalar width in bits (list)
    #[arg(long, value_delimiter = ',', default_value = "253", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub bits: Vec<u32>,
    /// Window size in bits (list)
    #[arg(long, value_delimiter = ',', default_value = "4", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub window: Vec<u32>,
    /// Search strategies (list)
    #[arg(long, value_delimiter = ',', default_value = "array", value_enum)]
    pub strategy: Vec<StrategyArg>,
    /// Early-stop thresholds: numbers in 0..=1 or none (list)
    #[arg(long, value_delimiter = ',', default_value = "0.8", value_parser = parse_threshold)]
    pub threshold: Vec<Option<f64>>,
    /// Seed of the random scalars
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Signed digits (the engine's) or unsigned windows (the paper's)
    #[arg(long, default_value = "signed", value_parser = ["signed", "unsigned"])]
    pub digits: String,
    /// Seconds after which a search stops (its line says so)
    #[arg(long, default_value_t = 60.0)]
    pub time_limit: f64,
}

/// Measures the small-MSM cutoff: double-and-add against arkworks on one thread.
#[derive(Debug, Parser)]
#[command(name = "cutoff")]
pub struct CutoffCli {
    /// The curve measured
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// The curve's group
    #[arg(long, value_enum, default_value = "g1")]
    pub group: GroupArg,
    /// Runs per size (the median is kept)
    #[arg(long, default_value_t = 51, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub reps: u64,
}

/// KZG commitments and openings on GpuMsm, verified with the pairing.
#[derive(Debug, Parser)]
#[command(name = "kzg")]
pub struct KzgCli {
    /// The pairing-friendly curve
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// log2 of the largest degree (the SRS has 2^LOG_DEGREE + 1 powers of tau)
    #[arg(long, default_value_t = 14, value_parser = clap::value_parser!(u32).range(0..=24))]
    pub log_degree: u32,
    /// Polynomials to commit to and open
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub polys: u64,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// A Groth16 proof with every MSM of the prover (G1 and G2) on GpuMsm, verified by ark-groth16.
#[derive(Debug, Parser)]
#[command(name = "groth16")]
pub struct Groth16Cli {
    /// The pairing-friendly curve (its G1 and G2 MSMs run on two engines)
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// log2 of the number of constraints (a chain of squarings)
    #[arg(long, default_value_t = 14, value_parser = clap::value_parser!(u32).range(1..=22))]
    pub log_constraints: u32,
    /// Proofs to make and verify
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub proofs: u64,
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// One-shot against resident calls, a batch against separate calls, small scalars against
/// arkworks.
#[derive(Debug, Parser)]
#[command(name = "prover_calls")]
pub struct ProverCallsCli {
    /// The curve the calls run on
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// The curve's group
    #[arg(long, value_enum, default_value = "g1")]
    pub group: GroupArg,
    /// log2 of the number of bases
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=MAX_LOG_N as i64))]
    pub log_n: u32,
    /// Vectors in the batch
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub batch: u64,
    /// log2 of each batch vector's length (at most LOG_N)
    #[arg(long, default_value_t = 14, value_parser = clap::value_parser!(u32).range(1..=MAX_LOG_N as i64))]
    pub batch_log: u32,
    /// Timed calls per row (the median is kept), after one warm-up call
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub reps: u64,
    /// Pick the first adapter whose name contains this (case-insensitive)
    #[arg(long, value_name = "NAME")]
    pub adapter: Option<String>,
}

/// The arithmetic profiles side by side: compile times, field rate, MSM against arkworks.
#[derive(Debug, Parser)]
#[command(name = "profiles")]
pub struct ProfilesCli {
    /// log2 of the MSM sizes to time (comma-separated list)
    #[arg(long, value_delimiter = ',', default_value = "14,16", value_parser = clap::value_parser!(u32).range(1..=MAX_LOG_N as i64))]
    pub logs: Vec<u32>,
    /// Timed calls per cell (the median is kept)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub reps: u64,
    /// Threads of the field-rate dispatch, each a chain of 2000 products: 2^18 keeps a
    /// large GPU busy (4096, the old size, measured its launch); lower it on lavapipe
    #[arg(long, default_value_t = 1 << 18, value_parser = clap::value_parser!(u32).range(64..=1 << 20))]
    pub rate_threads: u32,
    /// Pick the first adapter whose name contains this (case-insensitive)
    #[arg(long, value_name = "NAME")]
    pub adapter: Option<String>,
    /// The curve the MSMs run on
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// The curve's group
    #[arg(long, value_enum, default_value = "g1")]
    pub group: GroupArg,
    /// Profiles to run (comma-separated) [default: every profile the curve allows]
    #[arg(long, value_delimiter = ',', value_enum)]
    pub profiles: Vec<ArithmeticArg>,
    /// Write every profile's shader modules, as the engine compiles them, to
    /// DIR/<profile>/<module>.wgsl and exit (no GPU needed)
    #[arg(long, value_name = "DIR")]
    pub dump_wgsl: Option<std::path::PathBuf>,
    /// Shifted copies of the resident bases: `none` (one set of the largest size, its
    /// prefixes timed), or `auto` or a factor K (one set per size, loaded with
    /// `Precompute::Auto` or `Precompute::Factor(K)`; its load time is printed)
    #[arg(long, default_value = "none", value_parser = parse_precompute)]
    pub precompute: PrecomputeArg,
    /// As the engines' `--stream-chunk` ([`EngineArgs::stream_chunk`])
    #[arg(long, value_name = "N|off", value_parser = parse_stream_chunk)]
    pub stream_chunk: Option<StreamChunkArg>,
}

/// [`EngineArgs::stream_chunk`]: `None` for `off`.
#[derive(Clone, Copy, Debug)]
pub struct StreamChunkArg(pub Option<usize>);

impl StreamChunkArg {
    /// `MsmConfig::stream_chunk_scalars` for the flag, the engine's default without it.
    pub fn config(arg: Option<StreamChunkArg>) -> Option<usize> {
        arg.map_or(MsmConfig::default().stream_chunk_scalars, |c| c.0)
    }
}

/// `off` or a positive count, as [`EngineArgs::stream_chunk`] takes it.
fn parse_stream_chunk(s: &str) -> Result<StreamChunkArg, String> {
    match s {
        "off" => Ok(StreamChunkArg(None)),
        k => match k.parse::<usize>() {
            Ok(k) if k > 0 => Ok(StreamChunkArg(Some(k))),
            _ => Err(format!("`off` or a positive count, not {k:?}")),
        },
    }
}

/// [`ProfilesCli::precompute`]: `None` for `none`.
#[derive(Clone, Copy, Debug)]
pub struct PrecomputeArg(pub Option<gpu_msm::Precompute>);

/// `none`, `auto` or a factor, as [`ProfilesCli::precompute`] takes it.
fn parse_precompute(s: &str) -> Result<PrecomputeArg, String> {
    match s {
        "none" => Ok(PrecomputeArg(None)),
        "auto" => Ok(PrecomputeArg(Some(gpu_msm::Precompute::Auto))),
        k => k
            .parse::<u32>()
            .map(|k| PrecomputeArg(Some(gpu_msm::Precompute::Factor(k))))
            .map_err(|_| format!("`none`, `auto` or a factor, not {k:?}")),
    }
}

/// Field products per second: the engine's chain kernel and each form of the product.
#[derive(Debug, Parser)]
#[command(name = "field_rate")]
pub struct FieldRateCli {
    /// The curve whose base field is timed (G1)
    #[arg(long, value_enum, default_value = "bls12-377")]
    pub curve: CurveArg,
    /// Threads of each dispatch (2^18 fills an H200 several times over)
    #[arg(long, default_value_t = 1 << 18, value_parser = clap::value_parser!(u32).range(1..=4_194_240))]
    pub threads: u32,
    /// Dependent products per thread (each rate is a run of twice this less a run of this)
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=32_767))]
    pub chain: u32,
    /// Write the engine's product on this curve's field as CUDA to FILE
    #[arg(long, value_name = "FILE")]
    pub cuda: Option<std::path::PathBuf>,
    /// Append the rows to this markdown table (the device check's summary)
    #[arg(long, value_name = "FILE")]
    pub table: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
}
