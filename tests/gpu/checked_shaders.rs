//! The same shaders compiled with wgpu's runtime bounds checks, at small sizes: the
//! unchecked build is only sound if the checked one computes the same thing.

use ark_bls12_377::{Fq, Fr, G1Projective};
use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
use ark_ff::{Field, UniformRand, Zero};
use gpu_msm::ShaderOps;
use gpu_msm::{Arithmetic, GpuMsm, MsmConfig, MsmError};

// One test per profile, so that they run at once: on lavapipe each checked pipeline is
// JIT-compiled at its first dispatch on its device's one queue thread, minutes in all on a
// fresh machine, and three devices compile side by side.

#[test]
fn checked_limbs13_agrees_with_arkworks() {
    checked_profile(Arithmetic::Limbs13);
}

#[test]
fn checked_limbs29_agrees_with_arkworks() {
    checked_profile(Arithmetic::Limbs29);
}

#[test]
fn checked_limbs29_edwards_agrees_with_arkworks() {
    checked_profile(Arithmetic::Limbs29Edwards);
}

fn checked_profile(a: Arithmetic) {
    crate::common::runtime_dir();
    let config = MsmConfig {
        force_backend: Some(gpu_msm::Backend::Gpu),
        shader_runtime_checks: true,
        arithmetic: Some(a),
        // Whole MSMs overrun llvmpipe's loop limit when checked (see below), so the
        // known-answer MSMs would refuse the device: this test checks single functions.
        self_test: gpu_msm::SelfTest::Off,
        ..Default::default()
    };
    let refused = |why: &str| a != Arithmetic::Limbs13 && !why.contains("llvmpipe");
    if a != Arithmetic::Limbs29 {
        // Single functions only: the kernels on a device of their own, without the checked
        // MSM stages (the largest share of this test's compiles on lavapipe).
        match ShaderOps::<ark_bls12_377::g1::Config>::open(&config) {
            Ok(ops) => check_functions(&ops),
            // CI's adapter (lavapipe, named in the refusal) runs every profile; others may
            // lack 64-bit integers.
            Err(MsmError::InvalidConfig(why)) if refused(&why) => {
                eprintln!("NOTE: {a:?} arithmetic not run on this adapter: {why}");
            }
            Err(e) => panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {a:?}: {e}"),
        }
        return;
    }
    let engine = match GpuMsm::with_config(config) {
        Ok(e) => e,
        Err(MsmError::InvalidConfig(why)) if refused(&why) => {
            eprintln!("NOTE: {a:?} arithmetic not run on this adapter: {why}");
            return;
        }
        Err(e) => panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {a:?}: {e}"),
    };
    check_functions(&engine.shader_ops().unwrap());
    // The straight-line profile keeps few loops: a whole checked MSM stays under
    // llvmpipe's loop limit, so the unchecked pipeline is compared end to end too. Not the
    // Edwards one: its convert stage runs a field inversion (384 squarings, each a checked
    // loop nest), far past the limit; nor Limbs13, whose interpreter loops; their
    // functions are checked above.
    let bases = gpu_msm::inputs::random_bases(64, 3);
    let scalars = gpu_msm::inputs::random_scalars(64, 4);
    let want = <G1Projective as ark_ec::VariableBaseMSM>::msm(&bases, &scalars).unwrap();
    assert_eq!(engine.msm(&bases, &scalars).unwrap(), want, "checked MSM");
}

fn check_functions(ops: &ShaderOps) {
    // Single functions only: checked code keeps its loops (about 1300 loop iterations per
    // multiplication), and llvmpipe silently stops a shader's loops after 65535 iterations,
    // so even a one-point MSM (the reduction stage) overruns it on lavapipe. Each case
    // below stays under ~20000 iterations. Full checked MSMs need a hardware adapter.
    let mut rng = ark_std::test_rng();
    let pairs: Vec<(Fq, Fq)> = (0..8)
        .map(|_| (Fq::rand(&mut rng), Fq::rand(&mut rng)))
        .collect();
    for ((a, b), got) in pairs.iter().zip(ops.fe_mul(&pairs).unwrap()) {
        assert_eq!(got, Some(*a * b));
    }
    for ((a, b), got) in pairs.iter().zip(ops.fe_sub(&pairs).unwrap()) {
        assert_eq!(got, Some(*a - b));
    }
    let chain = ops.fe_mul_chain(&[(pairs[0].0, pairs[0].1, 10)]).unwrap();
    assert_eq!(chain[0], Some(pairs[0].0 * pairs[0].1.pow([10u64])));
    let g = G1Projective::generator();
    let p = g * Fr::rand(&mut rng);
    let q = g * Fr::rand(&mut rng);
    assert_eq!(
        ops.point_add(&[(p, q), (p, p), (p, -p)]).unwrap(),
        vec![Some(p + q), Some(p + p), Some(G1Projective::zero())]
    );
    assert_eq!(
        ops.point_add_mixed(&[(p, q.into_affine())]).unwrap(),
        vec![Some(p + q)]
    );
    assert_eq!(ops.point_double(&[p]).unwrap(), vec![Some(p.double())]);
}
