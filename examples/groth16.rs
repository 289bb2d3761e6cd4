//! A Groth16 proof on BLS12-377 whose G1 MSMs (A, B in G1, H, L) run on `GpuMsm` over the
//! proving key's queries loaded once; `Groth16::verify_proof` checks it. The circuit is a
//! chain of squarings, one constraint per step.
//!
//! cargo run --release --example groth16 -- --log-constraints 14   (`--help` lists the flags)
//!
//! The GPU path is forced unless `--routed` lets the engine route each MSM. Prints the
//! prover's MSM time with `GpuMsm` and with arkworks alone, and arkworks' whole prover.

mod common;
#[path = "provers/groth16.rs"]
mod groth16;

use std::time::Instant;

use ark_bls12_377::{Bls12_377, Fr};
use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_snark::SNARK;
use ark_std::rand::{rngs::StdRng, SeedableRng};
use clap::Parser;
use common::cli::Groth16Cli;
use groth16::{GpuProver, SquaringChain};

fn main() {
    let cli = Groth16Cli::parse();
    let (log_c, proofs) = (cli.log_constraints, cli.proofs as usize);
    let engine = common::announced_engine(cli.engine.config());
    let mut rng = StdRng::seed_from_u64(11);
    let steps = 1usize << log_c;
    let setup = SquaringChain { steps, x0: None };
    let t = Instant::now();
    let (pk, vk) = Groth16::<Bls12_377>::circuit_specific_setup(setup, &mut rng).expect("setup");
    println!(
        "setup: {steps} constraints, {} G1 bases in the proving key, {:.2?}",
        groth16::g1_bases(&pk),
        t.elapsed()
    );
    let pvk = Groth16::<Bls12_377>::process_vk(&vk).expect("vk");
    let t = Instant::now();
    let prover = GpuProver::new(&engine, &pk).expect("load the proving key");
    println!("proving key's G1 queries loaded in {:.2?}", t.elapsed());
    for k in 0..proofs {
        let circuit = SquaringChain {
            steps,
            x0: Some(Fr::rand(&mut rng)),
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
        let ok = Groth16::<Bls12_377>::verify_with_processed_vk(&pvk, &public, &proof).unwrap();
        let wrong = Groth16::<Bls12_377>::verify_with_processed_vk(
            &pvk,
            &[public[0] + Fr::from(1u64)],
            &proof,
        )
        .unwrap();
        let t = Instant::now();
        let ark_proof = Groth16::<Bls12_377>::prove(&pk, circuit, &mut rng).unwrap();
        let ark_total = t.elapsed();
        assert!(Groth16::<Bls12_377>::verify_with_processed_vk(&pvk, &public, &ark_proof).unwrap());
        println!(
            "proof {k}: verified = {ok} (wrong input rejected = {}); G1 MSMs: gpu-msm {:.2?}, \
             arkworks {:.2?}; our prover {total:.2?} (includes the arkworks MSMs for the \
             comparison), arkworks' whole prover {ark_total:.2?}",
            !wrong, times.gpu_msm, times.arkworks
        );
        if !ok || wrong {
            std::process::exit(1);
        }
    }
}
