//! The proxies of `docs/PERF.md` for resident calls on the GPU bucket sort, from the plan and
//! the formulas' costs (`gpu_msm::gpu::counts`), no GPU needed: window, dispatches, field
//! multiplications, device-memory bytes, and an H200 time estimate derived from them.
//!
//! cargo run --release --example op_counts -- --logs 16,20,24,26 [--passes]
//!
//! Each size gets two rows: bases loaded as `load_bases` stores them, and with the shifted
//! copies (`Precompute`) the cost model picks when memory is no object
//! (`digits::choose_precompute`), with the copies' bytes.
//!
//! The estimate is an estimate, not a measurement: every multiplication at the H200's peak
//! integer rate, every byte at its peak bandwidth, and a fixed cost per dispatch, summed
//! (no overlap). Its constants are printed with it; `.ci/device-check` measures instead.

use clap::Parser;
use gpu_msm::digits::{choose_precompute, AddCosts};
use gpu_msm::gpu::counts::{window_bits, CallCounts};
use gpu_msm::Arithmetic;

/// H200 SXM: 132 SMs x 64 INT32 lanes x 1.98 GHz (boost), integer instructions per second.
const H200_INT_OPS: f64 = 132.0 * 64.0 * 1.98e9;
/// Integer instructions per 12x32-bit Montgomery product in the WGSL as written (288 32x32
/// -> 64-bit products, each a wide multiply-add and two 64-bit additions, about 6
/// instructions; plus the final subtraction): an estimate from the source, not from SASS.
const INT_OPS_PER_MUL: f64 = 1800.0;
/// H200 HBM3e bandwidth, bytes per second.
const H200_BYTES: f64 = 4.8e12;
/// Cost per dispatch within one submission (an estimate).
const DISPATCH_S: f64 = 5e-6;

#[derive(Parser)]
struct Cli {
    /// log2 of the point counts (comma-separated)
    #[arg(long, value_delimiter = ',', default_value = "16,20,24,26", value_parser = clap::value_parser!(u32).range(1..=30))]
    logs: Vec<u32>,
    /// Also print every pass's counts
    #[arg(long)]
    passes: bool,
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn main() {
    let cli = Cli::parse();
    println!(
        "| profile | n | c | copies (GiB) | windows | dispatches | field muls (M) | read (GiB) | written (GiB) | H200 estimate (ms): muls + bytes + dispatches |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for a in [Arithmetic::Limbs32, Arithmetic::Limbs32Edwards] {
        let shapes = |n: usize| {
            let (c, k) = choose_precompute(None, n, AddCosts::of(a), |_, _| Some(1));
            [(window_bits(n, a), 1), (c, k)]
        };
        for (log, (c, copies)) in cli
            .logs
            .iter()
            .flat_map(|&log| shapes(1 << log).map(|s| (log, s)))
        {
            let n = 1usize << log;
            let k = CallCounts::precomputed(n, c, copies, a);
            let set = gib(copies as u64 * a.base_words() as u64 * 4 * n as u64);
            let muls = k.field_muls() as f64;
            let bytes = (k.bytes_read() + k.bytes_written()) as f64;
            let (tm, tb, td) = (
                muls * INT_OPS_PER_MUL / H200_INT_OPS * 1e3,
                bytes / H200_BYTES * 1e3,
                k.dispatches() as f64 * DISPATCH_S * 1e3,
            );
            println!(
                "| {a:?} | 2^{log} | {} | {copies} ({set:.2}) | {} of {} | {} | {:.1} | {:.2} | {:.2} | {:.1} = {tm:.1} + {tb:.2} + {td:.2} |",
                k.window_bits,
                k.bucket_windows,
                k.windows,
                k.dispatches(),
                muls / 1e6,
                gib(k.bytes_read()),
                gib(k.bytes_written()),
                tm + tb + td
            );
            if cli.passes {
                for p in &k.passes {
                    println!(
                        "|  | {} x{} | | | | | mixed {} + add {} | {:.3} | {:.3} | |",
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
        "Estimate (not measured): {INT_OPS_PER_MUL} integer instructions per field \
         multiplication at {:.1} T/s, {:.1} TB/s, {} us per dispatch; Limbs13 counts as Limbs32 \
         (same formulas and words).",
        H200_INT_OPS / 1e12,
        H200_BYTES / 1e12,
        DISPATCH_S * 1e6
    );
}
