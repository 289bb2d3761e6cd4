//! A Groth16 proof whose MSMs all run on `GpuMsm`: A, B in G1, H and L on a G1 engine and
//! B in G2 on a G2 engine, over the proving key's queries loaded once;
//! `Groth16::verify_proof` checks it. On BLS12-377, or `--curve bn254 | bls12-381`. The
//! circuit is a chain of squarings, one constraint per step.
//!
//! cargo run --release --example groth16 -- --log-constraints 14   (`--help` lists the flags)
//!
//! The GPU path is forced unless `--routed` lets the engines route each MSM. Prints the
//! prover's MSM time with `GpuMsm` and with arkworks alone, and arkworks' whole prover.

mod common;
#[path = "provers/groth16.rs"]
mod groth16;

use std::time::Instant;

use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_snark::SNARK;
use ark_std::rand::{rngs::StdRng, SeedableRng};
use clap::Parser;
use common::cli::{CurveArg, Groth16Cli};
use groth16::{GpuPairing, GpuProver, SquaringChain};

fn main() {
    let cli = Groth16Cli::parse();
    match cli.curve {
        CurveArg::Bls12_377 => run::<ark_bls12_377::Bls12_377>(&cli),
        CurveArg::Bls12_381 => run::<ark_bls12_381::Bls12_381>(&cli),
        CurveArg::Bn254 => run::<ark_bn254::Bn254>(&cli),
    }
}

fn run<E: GpuPairing>(cli: &Groth16Cli) {
    let (log_c, proofs) = (cli.log_constraints, cli.proofs as usize);
    let t = Instant::now();
    let g1_config = cli.engine.config();
    let g1 = common::announced_engine::<E::G1Config>(g1_config.clone());
    // The G2 engine shares the G1's device and memory budget, with the same options but the
    // profile where it would be Edwards (no G2 has the map: the adapter's default instead)
    // and the window (G2's buckets are twice G1's bytes).
    let mut g2_config = g1_config;
    if g2_config.arithmetic == Some(gpu_msm::Arithmetic::Limbs29Edwards) {
        g2_config.arithmetic = None;
    }
    g2_config.window_bits = None;
    let g2 = gpu_msm::GpuMsm::<E::G2Config>::on_device_of(&g1, g2_config).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    println!(
        "engines: {} and {}, ready in {:.2?}",
        <E::G1Config as gpu_msm::GpuCurve>::NAME,
        <E::G2Config as gpu_msm::GpuCurve>::NAME,
        t.elapsed()
    );
    let mut rng = StdRng::seed_from_u64(11);
    let steps = 1usize << log_c;
    let setup = SquaringChain { steps, x0: None };
    let t = Instant::now();
    let (pk, vk) = Groth16::<E>::circuit_specific_setup(setup, &mut rng).expect("setup");
    let (g1_bases, g2_bases) = groth16::bases(&pk);
    println!(
        "setup: {steps} constraints, {g1_bases} G1 and {g2_bases} G2 bases in the proving key, \
         {:.2?}",
        t.elapsed()
    );
    let pvk = Groth16::<E>::process_vk(&vk).expect("vk");
    let t = Instant::now();
    let prover = GpuProver::new(&g1, Some(&g2), &pk).expect("load the proving key");
    println!("proving key's queries loaded in {:.2?}", t.elapsed());
    for k in 0..proofs {
        let circuit = SquaringChain {
            steps,
            x0: Some(E::ScalarField::rand(&mut rng)),
        };
        let public = [circuit.output()];
        let (r, s) = groth16::randomness(&mut rng);
        let t = Instant::now();
        let (proof, times) = prover
            .prove(circuit.clone(), r, s, true)
            .unwrap_or_else(|e| {
                eprintln!("proof {k}: {e}");
                std::process::exit(1)
            });
        let total = t.elapsed();
        let ok = Groth16::<E>::verify_with_processed_vk(&pvk, &public, &proof).unwrap();
        let wrong = [public[0] + E::ScalarField::from(1u64)];
        let wrong = Groth16::<E>::verify_with_processed_vk(&pvk, &wrong, &proof).unwrap();
        let t = Instant::now();
        let ark_proof = Groth16::<E>::prove(&pk, circuit, &mut rng).unwrap();
        let ark_total = t.elapsed();
        assert!(Groth16::<E>::verify_with_processed_vk(&pvk, &public, &ark_proof).unwrap());
        println!(
            "proof {k}: verified = {ok} (wrong input rejected = {}); MSMs (G1 and G2): gpu-msm \
             {:.2?}, arkworks {:.2?}; our prover {total:.2?} (includes the arkworks MSMs for \
             the comparison), arkworks' whole prover {ark_total:.2?}",
            !wrong, times.gpu_msm, times.arkworks
        );
        if !ok || wrong {
            std::process::exit(1);
        }
    }
}
