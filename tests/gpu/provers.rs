//! The two prover examples at a small size: KZG openings checked with the pairing, and a
//! Groth16 proof with its MSMs on the engines (BN254: every one, G2 included) accepted by
//! `Groth16::verify_proof`.

use crate::common;
#[allow(dead_code)]
#[path = "../../examples/provers/groth16.rs"]
mod groth16;
#[allow(dead_code)]
#[path = "../../examples/provers/kzg.rs"]
mod kzg;

use ark_bls12_377::{Bls12_377, Fr};
use ark_ff::UniformRand;
use ark_groth16::Groth16;
use ark_snark::SNARK;
use ark_std::rand::{rngs::StdRng, SeedableRng};
use common::gpu_engine;

#[test]
fn kzg_openings_verify() {
    let mut rng = StdRng::seed_from_u64(1);
    let srs = kzg::Srs::<Bls12_377>::setup(100, &mut rng);
    // The full SRS, prefixes (one of them a single coefficient), and degree 0.
    let checked = kzg::run(gpu_engine(), &srs, &[100, 99, 37, 1, 0], &mut rng).unwrap();
    assert_eq!(checked, 5);
    let (q, v) = kzg::quotient(
        &[Fr::from(3u64), Fr::from(2u64), Fr::from(1u64)],
        Fr::from(5u64),
    );
    // x^2 + 2x + 3 at 5 is 38; quotient x + 7.
    assert_eq!(
        (q, v),
        (vec![Fr::from(7u64), Fr::from(1u64)], Fr::from(38u64))
    );
}

/// KZG on BN254 and BLS12-381: openings of prefixes of the powers, every MSM on the curve's
/// shared engine, verified by arkworks' pairing.
#[test]
fn kzg_openings_verify_on_the_other_curves() {
    use common::TestCurve;
    let mut rng = StdRng::seed_from_u64(3);
    let srs = kzg::Srs::<ark_bn254::Bn254>::setup(40, &mut rng);
    let e = <ark_bn254::g1::Config as TestCurve>::engine();
    assert_eq!(kzg::run(e, &srs, &[40, 17, 0], &mut rng), Ok(3));
    let srs = kzg::Srs::<ark_bls12_381::Bls12_381>::setup(40, &mut rng);
    let e = <ark_bls12_381::g1::Config as TestCurve>::engine();
    assert_eq!(kzg::run(e, &srs, &[40, 17, 0], &mut rng), Ok(3));
}

/// A Groth16 prover on `E` with its G1 MSMs on `g1` and its G2 MSM on `g2` (arkworks where
/// `None`): two proofs verify, and neither verifies another public input.
fn groth16_proofs_verify<E: groth16::GpuPairing>(
    g1: &gpu_msm::GpuMsm<E::G1Config>,
    g2: Option<&gpu_msm::GpuMsm<E::G2Config>>,
) {
    let mut rng = StdRng::seed_from_u64(2);
    let steps = 64;
    let (pk, vk) =
        Groth16::<E>::circuit_specific_setup(groth16::SquaringChain { steps, x0: None }, &mut rng)
            .unwrap();
    let pvk = Groth16::<E>::process_vk(&vk).unwrap();
    let prover = groth16::GpuProver::new(g1, g2, &pk).unwrap();
    for _ in 0..2 {
        let circuit = groth16::SquaringChain {
            steps,
            x0: Some(E::ScalarField::rand(&mut rng)),
        };
        let public = [circuit.output()];
        let (r, s) = groth16::randomness(&mut rng);
        let (proof, _) = prover.prove(circuit, r, s, true).unwrap();
        assert!(Groth16::<E>::verify_with_processed_vk(&pvk, &public, &proof).unwrap());
        let wrong = [public[0] + E::ScalarField::from(1u64)];
        assert!(!Groth16::<E>::verify_with_processed_vk(&pvk, &wrong, &proof).unwrap());
    }
}

/// BN254: every MSM of the prover (A, B in G1 and G2, H, L) on the GPU.
#[test]
fn groth16_on_bn254_with_every_msm_on_the_gpu() {
    use common::TestCurve;
    let g1 = <ark_bn254::g1::Config as TestCurve>::engine();
    let g2 = <ark_bn254::g2::Config as TestCurve>::engine();
    groth16_proofs_verify::<ark_bn254::Bn254>(g1, Some(g2));
}

/// BLS12-377: every MSM of the prover on the GPU too, its G1 ones on the shared (Edwards)
/// engine and B in G2 on the shared BLS12-377 G2 engine; and a prover without a G2 engine
/// (B in G2 on arkworks).
#[test]
fn groth16_on_bls12_377_with_every_msm_on_the_gpu() {
    use common::TestCurve;
    groth16_proofs_verify::<Bls12_377>(gpu_engine(), None);
    let g2 = <ark_bls12_377::g2::Config as TestCurve>::engine();
    groth16_proofs_verify::<Bls12_377>(gpu_engine(), Some(g2));
}
