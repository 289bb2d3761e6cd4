//! SRE search statistics, one line per configuration (the paper's grid and ours).
//!
//! cargo run --release --example sre_stats -- --log-n 6,8,10 --bits 253,753 --window 4,8
//!     --strategy array,greedy,exhaustive,indexed --threshold 0.8,none --seed 1
//!     [--digits unsigned|signed] [--time-limit SECONDS]
//!
//! Every flag takes a comma-separated list; the grid is their product. Scalars are uniform
//! random integers of `--bits` bits. `--digits unsigned` cuts plain B-bit windows, as the
//! paper does; `signed` (the default) uses the engine's signed digits, where opposite digits
//! also match. A search that reaches `--time-limit` (default 60 s) stops and its line says
//! `stopped at the time limit`: its figures are then for the part it searched.

use std::time::{Duration, Instant};

use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
use gpu_msm::internals::digits::DigitMatrix;
use gpu_msm::internals::sre::{search, SreOptions, SreStrategy};

mod common;

use clap::Parser;
use common::cli::SreStatsCli;

fn random_integers(n: usize, bits: u32, seed: u64) -> Vec<Vec<u64>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let limbs = bits.div_ceil(64) as usize;
    (0..n)
        .map(|_| {
            let mut v: Vec<u64> = (0..limbs).map(|_| rng.gen()).collect();
            let top = bits % 64;
            if top != 0 {
                v[limbs - 1] &= (1u64 << top) - 1;
            }
            v
        })
        .collect()
}

fn main() {
    let cli = SreStatsCli::parse();
    let (log_ns, bits, windows) = (&cli.log_n, &cli.bits, &cli.window);
    let (seed, limit, digits) = (cli.seed, cli.time_limit, cli.digits.as_str());
    let signed = digits == "signed";
    for &log_n in log_ns {
        for &b in bits {
            let ints = random_integers(1 << log_n, b, seed ^ ((b as u64) << 32) ^ log_n as u64);
            for &c in windows {
                let d = DigitMatrix::from_integers(&ints, b, c, signed);
                for &strategy in &cli.strategy {
                    let strategy = SreStrategy::from(strategy);
                    let s = strategy.name();
                    for &early_stop in &cli.threshold {
                        let th = early_stop.map_or("none".to_string(), |t| t.to_string());
                        let opts = SreOptions {
                            strategy,
                            early_stop,
                            opposite: signed,
                        };
                        let deadline = Instant::now() + Duration::from_secs_f64(limit);
                        let plan = search(&d, &opts, Some(deadline));
                        let st = plan.stats;
                        println!(
                            "n=2^{log_n} bits={b} B={c} digits={digits} strategy={s} \
                             threshold={th} nonzero={} pairs={} saved={} \
                             redundancy={:.2}% search={:.3}ms{}",
                            st.nonzero_digits,
                            st.pairs,
                            st.additions_saved,
                            st.redundancy_percent(),
                            st.search_time.as_secs_f64() * 1e3,
                            if st.deadline_hit {
                                " stopped at the time limit"
                            } else {
                                ""
                            }
                        );
                    }
                }
            }
        }
    }
}
