//! The proxies of `docs/PERF.md` for resident calls on the GPU bucket sort, from the plan and
//! the formulas' costs (`gpu_msm::internals::gpu::counts`), no GPU needed: window, dispatches, field
//! multiplications, device-memory bytes, and an H200 time estimate derived from them.
//!
//! cargo run --release --example op_counts -- --logs 16,20,24,26 [--passes] [--curve bn254]
//!
//! Each size gets two rows: bases loaded as `load_bases` stores them, and with the shifted
//! copies (`Precompute`) the cost model picks when memory is no object
//! (`digits::choose_precompute`), with the copies' bytes. Either set is stored in parts at
//! Vulkan's 2^31 - 1 byte binding limit on NVIDIA, and one call reads up to
//! `MAX_BASE_PARTS` parts at once (one bucket array over them: NVIDIA binds far more
//! storage buffers a stage than that), as long as the call's own largest buffer binds:
//! the counts are the calls' sums (the estimate adds their times).
//!
//! Then batch-affine accumulation's count model (`gpu::counts::BatchAffine`): field
//! products an addition in batches of k independent additions, against each profile's
//! mixed addition, the batch that breaks even, and the products of the batch-affine
//! accumulation built at commit 5bb0d24 (removed in 6da8781: never faster on lavapipe).
//! Then the registers per thread of the
//! accumulation loop (`gpu::shader::registers`), an estimate from the generated code.
//!
//! The estimate is an estimate, not a measurement: every multiplication at the H200's peak
//! integer rate, every byte at its peak bandwidth, and a fixed cost per dispatch, summed
//! (no overlap). Its constants are printed with it; `.ci/device-check` measures instead.

mod common;

use clap::Parser;
use common::cli::{CurveArg, GroupArg};
use gpu_msm::internals::digits::choose_precompute;
use gpu_msm::internals::gpu::counts::{window_bits, BatchAffine, CallCounts};
use gpu_msm::internals::gpu::field::MAX_BASE_PARTS;
use gpu_msm::internals::gpu::shader::mul29::{Field29, Step};
use gpu_msm::internals::gpu::shader::registers::LoopRegisters;
use gpu_msm::{Arithmetic, CurveProfile, GpuCurve};

/// H200 SXM: 132 SMs x 64 INT32 lanes x 1.98 GHz (boost), integer instructions per second.
const H200_INT_OPS: f64 = 132.0 * 64.0 * 1.98e9;
/// Integer instructions per Montgomery product of the wide profiles, from NVIDIA's compiler
/// rather than assumed: ptxas 12.9 for sm_90 turns the CUDA twin of BLS12-377's Edwards
/// mixed addition (the hot loop's: its 7 products in the engine's order, their additions,
/// the loads and stores) into 5 560 SASS instructions (a static count: the kernel's code
/// size over 16 bytes), 794 for each of its 7 products with the rest shared among them
/// (docs/PERF.md, "The shaders as a GPU compiler sees them"). The twin is a proxy: the
/// engine's WGSL reaches the GPU through NVIDIA's Vulkan driver, not ptxas. It was an
/// estimate of 900 from the source before (1 800 for the 12 x 32-bit CIOS). Another
/// curve's product is scaled by its limb products ([`int_ops_per_mul`]; BN254's twin gives
/// 471 a product where the scaling gives 381: the scaling is an estimate).
const INT_OPS_PER_MUL: f64 = 794.0;
/// Limb products of BLS12-377's product, which [`INT_OPS_PER_MUL`] counts.
const BLS12_377_PRODUCTS: f64 = 338.0;

/// [`INT_OPS_PER_MUL`] scaled to the curve's product by its count of limb products (an
/// estimate: the columns' shifts and masks scale with the limbs, not their squares).
fn int_ops_per_mul(curve: &gpu_msm::internals::curve::CurveSpec) -> f64 {
    let products = (Field29::of_curve(curve).program().iter())
        .filter(|s| matches!(s, Step::Ab(..) | Step::Mp(..)))
        .count();
    INT_OPS_PER_MUL * products as f64 / BLS12_377_PRODUCTS
}
/// H200 HBM3e bandwidth, bytes per second.
const H200_BYTES: f64 = 4.8e12;
/// Cost per dispatch within one submission (an estimate).
const DISPATCH_S: f64 = 5e-6;
/// Vulkan's storage-binding limit on NVIDIA: a resident set (its copies included) is stored
/// in parts of at most this many bytes, and a call's buffers bind at most this many.
const NVIDIA_BINDING: u64 = (1 << 31) - 1;

/// Device parts of n bases with `copies` copies on `a` at NVIDIA's binding limit.
fn parts(n: usize, copies: u32, a: CurveProfile) -> u64 {
    (n as u64 * copies as u64 * a.base_words() as u64 * 4).div_ceil(NVIDIA_BINDING)
}

/// The calls an n-point call on a set of n bases with k copies at c runs in, and one
/// call's counts: as many parts a call as the device binds (`MAX_BASE_PARTS`), as few calls
/// as let each call's buffers bind (more parts than a call binds, or a call's largest
/// buffer over the binding limit, means more calls).
fn calls(n: usize, c: u32, copies: u32, a: CurveProfile) -> (u64, CallCounts) {
    let p = parts(n, copies, a);
    let mut calls = p.div_ceil(MAX_BASE_PARTS as u64);
    loop {
        let k = CallCounts::precomputed(n.div_ceil(calls as usize), c, copies, a)
            .expect("a shape the cost model chose");
        if k.largest_binding <= NVIDIA_BINDING || calls >= p {
            return (calls, k);
        }
        calls += 1;
    }
}

#[derive(Parser)]
struct Cli {
    /// log2 of the point counts (comma-separated)
    #[arg(long, value_delimiter = ',', default_value = "16,20,24,26", value_parser = clap::value_parser!(u32).range(1..=30))]
    logs: Vec<u32>,
    /// Also print every pass's counts
    #[arg(long)]
    passes: bool,
    /// The curve
    #[arg(long, value_enum, default_value = "bls12-377")]
    curve: CurveArg,
    /// The curve's group
    #[arg(long, value_enum, default_value = "g1")]
    group: GroupArg,
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn main() {
    let cli = Cli::parse();
    on_curve!(cli.curve, cli.group, C => run::<C>(&cli))
}

fn run<C: GpuCurve>(cli: &Cli) {
    let curve = C::spec();
    let ops_per_mul = int_ops_per_mul(curve);
    println!(
        "{}: about {ops_per_mul:.0} integer instructions a field product",
        curve.name()
    );
    println!();
    println!(
        "| profile | n | c | copies (GiB) | parts in calls | windows of buckets | dispatches | field muls (M) | read (GiB) | written (GiB) | H200 estimate (ms): muls + bytes + dispatches |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let wide = [Arithmetic::Limbs29, Arithmetic::Limbs29Edwards];
    for a in wide
        .into_iter()
        .filter(|a| curve.has_edwards_map() || !a.is_edwards())
    {
        let a = a.on(curve);
        let shapes = |n: usize| {
            let fits = |c, k| Some(calls(n, c, k, a).0);
            let (bits, costs) = (a.curve.scalar_bits(), a.add_costs());
            let (c, k) = choose_precompute(None, n, bits, costs, fits);
            [(window_bits(n, a), 1), (c, k)]
        };
        for (log, (c, copies)) in cli
            .logs
            .iter()
            .flat_map(|&log| shapes(1 << log).map(|s| (log, s)))
        {
            let n = 1usize << log;
            let parts = parts(n, copies, a);
            // Calls of equal length (the last shorter: counted as the others, an upper
            // bound).
            let (p, k) = calls(n, c, copies, a);
            let set = gib(copies as u64 * a.base_words() as u64 * 4 * n as u64);
            let muls = (p * k.field_muls()) as f64;
            let (read, written) = (p * k.bytes_read(), p * k.bytes_written());
            let (tm, tb, td) = (
                muls * ops_per_mul / H200_INT_OPS * 1e3,
                (read + written) as f64 / H200_BYTES * 1e3,
                (p * k.dispatches() as u64) as f64 * DISPATCH_S * 1e3,
            );
            println!(
                "| {:?} | 2^{log} | {} | {copies} ({set:.2}) | {parts} in {p} | {} of {} | {} | {:.1} | {:.2} | {:.2} | {:.1} = {tm:.1} + {tb:.2} + {td:.2} |",
                a.arithmetic,
                k.window_bits,
                k.bucket_windows,
                k.windows,
                p * k.dispatches() as u64,
                muls / 1e6,
                gib(read),
                gib(written),
                tm + tb + td
            );
            if cli.passes {
                for p in &k.passes {
                    println!(
                        "|  | {} x{} | | | | | | mixed {} + add {} | {:.3} | {:.3} | |",
                        p.stage,
                        p.dispatches,
                        p.mixed_adds,
                        p.adds,
                        gib(p.bytes_read),
                        gib(p.bytes_written)
                    );
                }
            }
        }
    }
    println!();
    println!(
        "Estimate (not measured): {ops_per_mul:.0} integer instructions per field \
         multiplication at {:.1} T/s, {:.1} TB/s, {} us per dispatch; Limbs13 counts as Limbs29 \
         (same formulas and words).",
        H200_INT_OPS / 1e12,
        H200_BYTES / 1e12,
        DISPATCH_S * 1e6
    );
    batch_affine(curve);
    if !std::ptr::eq(curve, <ark_bls12_377::g1::Config as GpuCurve>::spec()) {
        return; // the register estimate is BLS12-377's (registers.rs)
    }
    println!();
    println!(
        "Registers per thread of accumulate_balanced's loop, estimated from the generated code \
         (gpu::shader::registers: every value held from its definition to its last use, 32-bit \
         words; not a compiler's allocation):"
    );
    println!();
    println!("| profile | loop words | mixed addition's peak | one product alone | total |");
    println!("|---|---|---|---|---|");
    for a in [Arithmetic::Limbs29, Arithmetic::Limbs29Edwards] {
        let r = LoopRegisters::of(a).expect("a wide profile");
        println!(
            "| {a:?} | {} | {} | {} | {} |",
            r.loop_words,
            r.formula,
            r.product,
            r.total()
        );
    }
}

/// Batch-affine accumulation against each profile's mixed addition (F_p products).
fn batch_affine(curve: &'static gpu_msm::internals::curve::CurveSpec) {
    const BATCHES: [u64; 5] = [16, 64, 256, 1024, 4096];
    println!();
    println!(
        "Batch-affine accumulation (count model, gpu::counts::BatchAffine): F_p products an \
         addition in batches of k independent additions (one inversion a batch), against \
         the profile's mixed addition; a thread's slice of the sorted entries holds at most \
         {} entries, most of them one bucket's (dependent). The last column: the one built, \
         at 5bb0d24 (a thread summing k slices at once), which lavapipe never ran faster than \
         the mixed additions; removed in 6da8781 (docs/perf-log/2026-12-07.md).",
        gpu_msm::internals::gpu::sort::ACCUMULATE_SLICE
    );
    println!();
    let ks: Vec<String> = BATCHES.iter().map(|k| format!("k = {k}")).collect();
    let lanes = gpu_msm::internals::gpu::counts::BUILT_LANES;
    println!(
        "| profile | mixed addition | inversion | {} | break-even k | as built at 5bb0d24 (k = \
         {lanes}, square-and-multiply inversion) |",
        ks.join(" | ")
    );
    println!("|---|---|---|{}---|---|", "---|".repeat(BATCHES.len()));
    for a in [Arithmetic::Limbs29, Arithmetic::Limbs29Edwards]
        .into_iter()
        .filter(|a| curve.has_edwards_map() || !a.is_edwards())
    {
        let p = a.on(curve);
        let (b, m) = (BatchAffine::of(p), p.add_costs().mixed_add);
        let at: Vec<String> = BATCHES
            .iter()
            .map(|&k| format!("{:.1}", b.at_batch(k)))
            .collect();
        let built = match a.is_edwards() {
            true => "-".to_string(),
            false => {
                let c = BatchAffine::as_built(p);
                format!("{:.1} (inversion {})", c.at_batch(lanes), c.inversion)
            }
        };
        println!(
            "| {a:?} | {m} | {} | {} | {} | {built} |",
            b.inversion,
            at.join(" | "),
            b.break_even(m)
                .map_or("never".to_string(), |k| k.to_string())
        );
    }
}
