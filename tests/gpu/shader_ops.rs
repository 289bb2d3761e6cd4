//! Every WGSL field and curve function against arkworks, on random and edge values.

use crate::common;

use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
use ark_ff::BigInteger;
use ark_ff::{Field, One, UniformRand, Zero};
use gpu_msm::Arithmetic;
use gpu_msm::ShaderOps;

type Bls = ark_bls12_377::g1::Config;

/// The self-test kernel of every arithmetic profile the adapter runs, one per binary: each
/// keeps the pipelines it made (one per shader function), which the tests share.
fn all_ops() -> &'static [ShaderOps<'static>] {
    static OPS: std::sync::OnceLock<Vec<ShaderOps<'static>>> = std::sync::OnceLock::new();
    OPS.get_or_init(|| {
        common::profile_engines()
            .into_iter()
            .map(|e| e.shader_ops().expect("self-test pipeline"))
            .collect()
    })
}

/// Values whose stored words (in profile `a`) sit at limb and word boundaries: 2^k - 1, 2^k
/// and 2^k + 1 for k at multiples of 13, 29 and 32 bits, and p - 1.
fn boundary_values(a: Arithmetic) -> Vec<Fq> {
    let mut v = Vec::new();
    let ks = [
        13u32, 26, 29, 32, 39, 58, 64, 87, 96, 116, 128, 145, 174, 195, 203, 232,
    ];
    for k in ks
        .into_iter()
        .chain([256, 261, 290, 319, 320, 348, 364, 376])
    {
        for d in [-1i64, 0, 1] {
            let mut x = ark_ff::BigInt::<6>::from(1u64) << k;
            let x = if d < 0 {
                x.sub_with_borrow(&1u64.into());
                x
            } else {
                x.add_with_carry(&(d as u64).into());
                x
            };
            let mut w = [0u32; 12];
            for (i, l) in x.0.iter().enumerate() {
                w[2 * i] = *l as u32;
                w[2 * i + 1] = (*l >> 32) as u32;
            }
            v.push(
                common::bls_profile(a)
                    .from_shader_words::<Bls>(&w)
                    .expect("below p"),
            );
        }
    }
    v.push(-Fq::one());
    v
}

/// 0, 1, 2, p-1, p-2, (p-1)/2, (p+1)/2, 2^377 mod p, each profile's one (2^384 and 2^390
/// mod p) and random.
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
        two.pow([384u64]),
        two.pow([390u64]),
    ];
    v.extend((0..12).map(|_| Fq::rand(&mut rng)));
    v
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
    for ops in all_ops() {
        let mut xs = field_values();
        xs.extend(boundary_values(ops.arithmetic()));
        field_ops(ops, &xs);
    }
}

fn field_ops(ops: &ShaderOps, xs: &[Fq]) {
    let pairs: Vec<(Fq, Fq)> = xs
        .iter()
        .flat_map(|a| xs.iter().map(move |b| (*a, *b)))
        .collect();
    check_field(
        "add",
        ops.fe_add(&pairs).unwrap(),
        pairs.iter().map(|(a, b)| *a + b),
    );
    check_field(
        "sub",
        ops.fe_sub(&pairs).unwrap(),
        pairs.iter().map(|(a, b)| *a - b),
    );
    check_field(
        "mul",
        ops.fe_mul(&pairs).unwrap(),
        pairs.iter().map(|(a, b)| *a * b),
    );
    check_field(
        "square",
        ops.fe_square(xs).unwrap(),
        xs.iter().map(|a| a.square()),
    );
    check_field("neg", ops.fe_neg(xs).unwrap(), xs.iter().map(|a| -*a));
    check_field(
        "from_arkworks",
        ops.fe_from_arkworks(xs).unwrap(),
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
    for ops in all_ops() {
        let got = ops.fe_mul_chain(&cases).unwrap();
        check_field(
            "mul chain",
            got,
            cases.iter().map(|(a, b, k)| *a * b.pow([*k as u64])),
        );
    }
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
    for ops in all_ops() {
        let want = pairs.iter().map(|(p, q)| *p + q).collect();
        check_points("add", ops.point_add(&pairs).unwrap(), want);
    }
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
    for ops in all_ops() {
        let want = pairs.iter().map(|(p, q)| *p + q).collect();
        check_points("mixed add", ops.point_add_mixed(&pairs).unwrap(), want);
    }
}

#[test]
fn point_double_neg_mul_small_identity() {
    for ops in all_ops() {
        point_unary_ops(ops);
    }
}

fn point_unary_ops(ops: &ShaderOps) {
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

#[test]
fn fp_inverse_by_fermat() {
    for ops in all_ops() {
        let mut xs = field_values();
        xs.extend(boundary_values(ops.arithmetic()));
        check_field(
            "inverse",
            ops.fe_inverse(&xs).unwrap(),
            xs.iter().map(|a| a.inverse().unwrap_or(Fq::zero())),
        );
    }
}

/// The convert stage of every profile against the host's form of each base: around the
/// Edwards batch size, with the identity and the two kinds of points the Edwards map cannot
/// send (order 2: y = 0) stored as zeros, at a batch's start, middle and end.
#[test]
fn stored_bases_match_the_host_form() {
    use gpu_msm::internals::gpu::field::CONVERT_BATCH;
    let b = CONVERT_BATCH as usize;
    let order2 = G1Affine::new_unchecked(-Fq::one(), Fq::zero());
    let root = (-Fq::from(3u64)).sqrt().unwrap();
    let other2 = G1Affine::new_unchecked((Fq::one() + root) / Fq::from(2u64), Fq::zero());
    for ops in all_ops() {
        let a = ops.profile();
        for n in [1, b - 1, b, b + 1, 2 * b + 1] {
            let mut bases: Vec<G1Affine> = points()
                .iter()
                .cycle()
                .take(n)
                .map(|p| p.into_affine())
                .collect();
            for (i, p) in [(0, order2), (b / 2, G1Affine::identity()), (b - 1, other2)] {
                if i < n {
                    bases[i] = p;
                }
            }
            let got = ops.stored_bases(&bases).unwrap();
            assert_eq!(got.len(), n);
            for (i, (g, p)) in got.iter().zip(&bases).enumerate() {
                // The identity is stored as zeros (Edwards: as (1, 1, 0)); Edwards poisons
                // what it cannot map.
                let want = a
                    .affine_to_shader_words::<Bls>(p)
                    .unwrap_or_else(|| vec![0; a.base_words()]);
                assert_eq!(*g, want, "{a:?}, n = {n}, base {i}");
            }
        }
    }
}

/// The convert stage's check of an uploaded base (`shaders/base_check.wgsl`) against the
/// host's (arkworks' curve equation on reduced coordinates), in every profile: G1 points, the
/// identity, points on the curve outside G1, points off it (a wrong y, x = -1, x = 0, y = 0,
/// p - 1), and coordinates stored unreduced (x + p, exactly p, all ones).
#[test]
fn upload_check_matches_the_curve_equation() {
    use ark_ec::AffineRepr;
    use ark_ff::{BigInt, PrimeField};
    // Raw words, which may be unreduced: what `packing::arkworks_words` writes for reduced x.
    let words = |b: &BigInt<6>| {
        gpu_msm::internals::gpu::packing::arkworks_words::<Bls>(&Fq::new_unchecked(*b))
    };
    let plus_p = |x: &Fq| {
        let mut v = x.0;
        v.add_with_carry(&Fq::MODULUS);
        v
    };
    let on_curve = |x: Fq, y: Fq| y.square() == x.square() * x + Fq::one();
    let mut cases: Vec<(&str, BigInt<6>, BigInt<6>, bool)> = Vec::new();
    for p in points().iter().map(|p| p.into_affine()) {
        if p.is_zero() {
            cases.push(("identity", BigInt::zero(), BigInt::zero(), true));
            continue;
        }
        cases.push(("G1", p.x.0, p.y.0, true));
        cases.push(("-P", p.x.0, (-p.y).0, true));
        cases.push(("y + 1", p.x.0, (p.y + Fq::one()).0, false));
        cases.push(("x = -1", (-Fq::one()).0, p.y.0, false));
        cases.push(("x = 0", Fq::zero().0, p.y.0, false));
        cases.push(("y = 0", p.x.0, Fq::zero().0, false));
        cases.push(("x + p", plus_p(&p.x), p.y.0, false));
        cases.push(("y + p", p.x.0, plus_p(&p.y), false));
    }
    let root = (-Fq::from(3u64)).sqrt().unwrap();
    for (name, x, y) in [
        ("(-1, 0)", -Fq::one(), Fq::zero()),
        (
            "other order 2",
            (Fq::one() + root) / Fq::from(2u64),
            Fq::zero(),
        ),
        ("(0, 1)", Fq::zero(), Fq::one()),
        ("(0, -1)", Fq::zero(), -Fq::one()),
        ("(p - 1, p - 1)", -Fq::one(), -Fq::one()),
        ("(1, 1)", Fq::one(), Fq::one()),
    ] {
        cases.push((name, x.0, y.0, on_curve(x, y)));
    }
    cases.push(("x = p", Fq::MODULUS, Fq::one().0, false));
    cases.push((
        "all ones",
        BigInt([u64::MAX; 6]),
        BigInt([u64::MAX; 6]),
        false,
    ));
    assert!(cases.iter().any(|c| c.3) && cases.iter().any(|c| !c.3));
    let uploads: Vec<_> = cases
        .iter()
        .map(|(_, x, y, _)| (words(x), words(y)))
        .collect();
    for ops in all_ops() {
        let got = ops.upload_is_valid(&uploads).unwrap();
        assert_eq!(got.len(), cases.len());
        for ((name, .., want), got) in cases.iter().zip(got) {
            assert_eq!(got, *want, "{:?}: {name}", ops.arithmetic());
        }
    }
}

/// Every form of the product in the device check's microbenchmark (`gpu::mul_bench`)
/// against arkworks on each curve's base field: every pair of edge values and random ones,
/// one product (the forms themselves) and chains of 7, each thread's result checked. Small
/// sizes: on lavapipe a correctness test, never a timing.
#[test]
fn fp_mul_forms_match_arkworks_on_every_field() {
    use gpu_msm::MulForm;
    let ops = common::gpu_engine()
        .shader_ops()
        .expect("self-test kernels");
    for form in MulForm::ALL {
        for chain in [1, 7] {
            // 25 edge values: 625 pairs, then random ones.
            let threads = 700;
            let rates = [
                ops.fp_mul_rate::<Fq>(form, threads, chain),
                ops.fp_mul_rate::<ark_bls12_381::Fq>(form, threads, chain),
                ops.fp_mul_rate::<ark_bn254::Fq>(form, threads, chain),
            ];
            for (field, r) in ["BLS12-377", "BLS12-381", "BN254"].iter().zip(rates) {
                let r = r.unwrap_or_else(|e| panic!("{form:?}, {field}, chain {chain}: {e}"));
                assert_eq!((r.threads, r.chain), (threads, chain));
            }
        }
    }
}

/// A form given bad sizes is refused, not dispatched.
#[test]
fn fp_mul_rate_refuses_bad_sizes() {
    use gpu_msm::MsmError;
    use gpu_msm::MulForm;
    let ops = common::gpu_engine()
        .shader_ops()
        .expect("self-test kernels");
    for threads in [0, 65_536 * 64] {
        let got = ops.fp_mul_rate::<Fq>(MulForm::LoHi32, threads, 1);
        assert!(
            matches!(got, Err(MsmError::InvalidConfig(_))),
            "{threads} threads"
        );
    }
    // Twice the chain must stay under llvmpipe's 65,535 iterations a loop.
    let most = gpu_msm::internals::gpu::mul_bench::MAX_CHAIN;
    for chain in [0, most + 1] {
        let got = ops.fp_mul_rate::<Fq>(MulForm::LoHi32, 64, chain);
        assert!(
            matches!(got, Err(MsmError::InvalidConfig(_))),
            "a chain of {chain}"
        );
    }
}
