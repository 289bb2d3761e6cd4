//! KZG commitments and openings on BLS12-377 with `GpuMsm`: powers of tau loaded once,
//! commitments to polynomials of several degrees (prefixes of the powers) in one batch, an
//! opening proof for each, every one checked with the pairing.
//!
//! cargo run --release --example kzg -- [--log-degree 14] [--polys 4] [--routed]
//!     [--adapter NAME]
//!
//! The GPU path is forced unless `--routed` lets the engine route each MSM.

mod common;
#[path = "provers/kzg.rs"]
mod kzg;

use std::time::Instant;

use ark_bls12_377::{Fr, G1Projective};
use ark_ec::VariableBaseMSM;
use ark_std::rand::{rngs::StdRng, SeedableRng};
use common::arg;
use gpu_msm::{AdapterChoice, Backend, GpuMsm, MsmConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log_degree: u32 = arg(&args, "--log-degree").unwrap_or(14);
    let polys: usize = arg::<usize>(&args, "--polys").unwrap_or(4).max(1);
    let routed = args.iter().any(|a| a == "--routed");
    let engine = GpuMsm::with_config(MsmConfig {
        force_backend: (!routed).then_some(Backend::Gpu),
        adapter: AdapterChoice {
            name_contains: arg(&args, "--adapter"),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    println!(
        "adapter: {} ({})",
        engine.adapter_name(),
        engine.adapter_backend()
    );
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
