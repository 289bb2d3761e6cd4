//! KZG commitments and openings on BLS12-377 with `GpuMsm`: powers of tau loaded once,
//! commitments to polynomials of several degrees (prefixes of the powers) in one batch, an
//! opening proof for each, every one checked with the pairing.
//!
//! cargo run --release --example kzg -- --log-degree 14   (`--help` lists the flags)
//!
//! The GPU path is forced unless `--routed` lets the engine route each MSM.

mod common;
#[path = "provers/kzg.rs"]
mod kzg;

use std::time::Instant;

use ark_bls12_377::{Fr, G1Projective};
use ark_ec::VariableBaseMSM;
use ark_std::rand::{rngs::StdRng, SeedableRng};
use clap::Parser;
use common::cli::KzgCli;

fn main() {
    let cli = KzgCli::parse();
    let (log_degree, polys) = (cli.log_degree, cli.polys as usize);
    let engine = common::announced_engine(cli.engine.config());
    let mut rng = StdRng::seed_from_u64(7);
    let max = 1usize << log_degree;
    let t = Instant::now();
    let srs = kzg::Srs::setup(max, &mut rng);
    println!(
        "setup: {} powers of tau in {:.2?}",
        srs.powers.len(),
        t.elapsed()
    );
    // Degrees from the full SRS down by halves, and one odd size.
    let mut degrees: Vec<usize> = (0..polys).map(|i| (max >> i).max(1)).collect();
    degrees[polys - 1] = (max / 3).max(1);
    let t = Instant::now();
    match kzg::run(&engine, &srs, &degrees, &mut rng) {
        Ok(k) => println!(
            "{k} commitments and openings (degrees {degrees:?}) verified by the pairing in {:.2?}",
            t.elapsed()
        ),
        Err(e) => {
            eprintln!("KZG FAILED: {e}");
            std::process::exit(1)
        }
    }
    // The commitment MSMs alone: the engine on resident powers against arkworks.
    let powers = engine.load_bases(&srs.powers).expect("load");
    let coeffs: Vec<Fr> = gpu_msm::inputs::random_scalars(max + 1, 9);
    let t = Instant::now();
    let ours = engine.msm(&powers, &coeffs).expect("msm");
    let gpu = t.elapsed();
    let t = Instant::now();
    let theirs = G1Projective::msm(&srs.powers, &coeffs).unwrap();
    let ark = t.elapsed();
    assert_eq!(ours, theirs);
    println!("one commitment of degree {max}: gpu-msm {gpu:.2?}, arkworks {ark:.2?}");
}
