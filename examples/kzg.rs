//! KZG commitments and openings with `GpuMsm`, on BLS12-377 or `--curve bls12-381 | bn254`:
//! powers of tau loaded once, commitments to polynomials of several degrees (prefixes of
//! the powers) in one batch, an opening proof for each, every one checked with the pairing.
//!
//! cargo run --release --example kzg -- --log-degree 14   (`--help` lists the flags)
//!
//! The GPU path is forced unless `--routed` lets the engine route each MSM.

mod common;
#[path = "provers/kzg.rs"]
mod kzg;

use std::time::Instant;

use ark_ec::short_weierstrass::Projective;
use ark_ec::VariableBaseMSM;
use ark_std::rand::{rngs::StdRng, SeedableRng};
use clap::Parser;
use common::cli::{CurveArg, KzgCli};
use gpu_msm::GpuCurve;

fn main() {
    let cli = KzgCli::parse();
    match cli.curve {
        CurveArg::Bls12_377 => run::<ark_bls12_377::g1::Config, ark_bls12_377::Bls12_377>(&cli),
        CurveArg::Bls12_381 => run::<ark_bls12_381::g1::Config, ark_bls12_381::Bls12_381>(&cli),
        CurveArg::Bn254 => run::<ark_bn254::g1::Config, ark_bn254::Bn254>(&cli),
    }
}

fn run<C: GpuCurve, E: kzg::KzgPairing<C>>(cli: &KzgCli) {
    let (log_degree, polys) = (cli.log_degree, cli.polys as usize);
    let engine = common::announced_engine::<C>(cli.engine.config());
    println!("curve: {}", C::NAME);
    let mut rng = StdRng::seed_from_u64(7);
    let max = 1usize << log_degree;
    let t = Instant::now();
    let srs = kzg::Srs::<E>::setup(max, &mut rng);
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
    let coeffs: Vec<gpu_msm::Fr<C>> = gpu_msm::inputs::random_scalars(max + 1, 9);
    let t = Instant::now();
    let ours = engine.msm(&powers, &coeffs).expect("msm");
    let gpu = t.elapsed();
    let t = Instant::now();
    let theirs = Projective::<C>::msm(&srs.powers, &coeffs).unwrap();
    let ark = t.elapsed();
    assert_eq!(ours, theirs);
    println!("one commitment of degree {max}: gpu-msm {gpu:.2?}, arkworks {ark:.2?}");
}
