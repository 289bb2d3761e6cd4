//! Every WGSL field and curve function against arkworks, on random and edge values.

mod common;

use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
use ark_ff::{Field, One, UniformRand, Zero};
use gpu_msm::gpu::selftest::ShaderOps;

fn ops() -> ShaderOps<'static> {
    common::gpu_engine()
        .shader_ops()
        .expect("self-test pipeline")
}

/// 0, 1, 2, p-1, p-2, (p-1)/2, (p+1)/2, 2^377 mod p, the shaders' one (2^390 mod p) and random.
fn field_values() -> Vec<Fq> {
    let mut rng = ark_std::test_rng();
    let two = Fq::from(2u64);
    let half = two.inverse().unwrap();
    let mut v = vec![
        Fq::zero(),
        Fq::one(),
        two,
        -Fq::one(),
        -two,
        -half,
        half,
        two.pow([377u64]),
        two.pow([390u64]),
    ];
    v.extend((0..12).map(|_| Fq::rand(&mut rng)));
    v
}

fn pairs() -> Vec<(Fq, Fq)> {
    let v = field_values();
    v.iter()
        .flat_map(|a| v.iter().map(move |b| (*a, *b)))
        .collect()
}

fn check_field(name: &str, got: Vec<Option<Fq>>, want: impl Iterator<Item = Fq>) {
    let mut n = 0;
    for (i, (g, w)) in got.into_iter().zip(want).enumerate() {
        assert_eq!(g, Some(w), "{name} case {i}");
        n += 1;
    }
    assert!(n > 0, "{name}: no cases ran");
}

#[test]
fn fp_add_sub_mul_square_neg() {
    let ops = ops();
    let pairs = pairs();
    check_field(
        "add",
        ops.fp_add(&pairs).unwrap(),
        pairs.iter().map(|(a, b)| *a + b),
    );
    check_field(
        "sub",
        ops.fp_sub(&pairs).unwrap(),
        pairs.iter().map(|(a, b)| *a - b),
    );
    check_field(
        "mul",
        ops.fp_mul(&pairs).unwrap(),
        pairs.iter().map(|(a, b)| *a * b),
    );
    let xs = field_values();
    check_field(
        "square",
        ops.fp_square(&xs).unwrap(),
        xs.iter().map(|a| a.square()),
    );
    check_field("neg", ops.fp_neg(&xs).unwrap(), xs.iter().map(|a| -*a));
    check_field(
        "from_arkworks",
        ops.fp_from_arkworks(&xs).unwrap(),
        xs.iter().copied(),
    );
}

#[test]
fn fp_mul_long_chains() {
    // Wrong results after ~50 chained multiplications were seen on lavapipe with checked
    // shaders; the chains here run far past that.
    let mut rng = ark_std::test_rng();
    let cases: Vec<(Fq, Fq, u32)> = [1u32, 2, 63, 64, 65, 200, 1000]
        .iter()
        .map(|&k| (Fq::rand(&mut rng), Fq::rand(&mut rng), k))
        .chain([(-Fq::one(), -Fq::one(), 301)])
        .collect();
    let got = ops().fp_mul_chain(&cases).unwrap();
    check_field(
        "mul chain",
        got,
        cases.iter().map(|(a, b, k)| *a * b.pow([*k as u64])),
    );
}

fn points() -> Vec<G1Projective> {
    let mut rng = ark_std::test_rng();
    let g = G1Projective::generator();
    let mut v = vec![G1Projective::zero(), g, -g, g.double()];
    // Non-normalized Z: sums in Jacobian form.
    v.extend((0..6).map(|_| g * Fr::rand(&mut rng) + g * Fr::rand(&mut rng)));
    v
}

fn check_points(name: &str, got: Vec<Option<G1Projective>>, want: Vec<G1Projective>) {
    assert_eq!(got.len(), want.len(), "{name}");
    assert!(!want.is_empty());
    for (i, (g, w)) in got.into_iter().zip(want).enumerate() {
        assert_eq!(g, Some(w), "{name} case {i}");
    }
}

#[test]
fn point_add_complete_cases() {
    let ps = points();
    let mut pairs: Vec<(G1Projective, G1Projective)> = Vec::new();
    for p in &ps {
        for q in &ps {
            pairs.push((*p, *q));
        }
        pairs.push((*p, *p)); // P + P
        pairs.push((*p, -*p)); // P + (-P)
    }
    let want = pairs.iter().map(|(p, q)| *p + q).collect();
    check_points("add", ops().point_add(&pairs).unwrap(), want);
}

#[test]
fn point_add_mixed_cases() {
    let ps = points();
    let mut pairs: Vec<(G1Projective, G1Affine)> = Vec::new();
    for p in &ps {
        for q in ps.iter().filter(|q| !q.is_zero()) {
            pairs.push((*p, q.into_affine()));
            pairs.push((-*q, q.into_affine())); // Q + (-Q) = O
            pairs.push((*q, q.into_affine())); // Q + Q
        }
    }
    let want = pairs.iter().map(|(p, q)| *p + q).collect();
    check_points("mixed add", ops().point_add_mixed(&pairs).unwrap(), want);
}

#[test]
fn point_double_neg_mul_small_identity() {
    let ops = ops();
    let ps = points();
    check_points(
        "double",
        ops.point_double(&ps).unwrap(),
        ps.iter().map(|p| p.double()).collect(),
    );
    check_points(
        "neg",
        ops.point_neg(&ps).unwrap(),
        ps.iter().map(|p| -*p).collect(),
    );
    let cases: Vec<(G1Projective, u32)> = ps
        .iter()
        .flat_map(|p| [0u32, 1, 2, 3, 255, 2048, 65535].map(|k| (*p, k)))
        .collect();
    let want = cases
        .iter()
        .map(|(p, k)| *p * Fr::from(*k as u64))
        .collect();
    check_points("mul small", ops.point_mul_small(&cases).unwrap(), want);
    check_points(
        "identity",
        ops.point_identity(3).unwrap(),
        vec![G1Projective::zero(); 3],
    );
}
