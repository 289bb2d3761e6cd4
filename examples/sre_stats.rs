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
use gpu_msm::digits::DigitMatrix;
use gpu_msm::sre::{search, SreOptions, SreStrategy};

fn list<T: std::str::FromStr>(args: &[String], name: &str, default: &str) -> Vec<T> {
    let raw = match args.iter().position(|a| a == name) {
        Some(i) => args.get(i + 1).cloned().unwrap_or_default(),
        None => default.to_string(),
    };
    raw.split(',')
        .map(|v| {
            v.trim().parse().unwrap_or_else(|_| {
                eprintln!("bad value {v:?} for {name}");
                std::process::exit(2)
            })
        })
        .collect()
}

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
    let args: Vec<String> = std::env::args().collect();
    let log_ns: Vec<u32> = list(&args, "--log-n", "10");
    let bits: Vec<u32> = list(&args, "--bits", "253");
    let windows: Vec<u32> = list(&args, "--window", "4");
    let strategies: Vec<String> = list(&args, "--strategy", "array");
    let thresholds: Vec<String> = list(&args, "--threshold", "0.8");
    let seed: u64 = list(&args, "--seed", "1")[0];
    let digits: String = list(&args, "--digits", "signed").remove(0);
    let limit: f64 = list(&args, "--time-limit", "60")[0];
    let signed = match digits.as_str() {
        "signed" => true,
        "unsigned" => false,
        other => {
            eprintln!("--digits signed|unsigned, not {other}");
            std::process::exit(2)
        }
    };
    for &log_n in &log_ns {
        for &b in &bits {
            let ints = random_integers(1 << log_n, b, seed ^ ((b as u64) << 32) ^ log_n as u64);
            for &c in &windows {
                let d = DigitMatrix::from_integers(&ints, b, c, signed);
                for s in &strategies {
                    let Some(strategy) = SreStrategy::from_name(s) else {
                        eprintln!("unknown strategy {s}");
                        std::process::exit(2)
                    };
                    for th in &thresholds {
                        let early_stop = match th.as_str() {
                            "none" => None,
                            t => Some(t.parse::<f64>().unwrap_or_else(|_| {
                                eprintln!("--threshold takes numbers or none");
                                std::process::exit(2)
                            })),
                        };
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
