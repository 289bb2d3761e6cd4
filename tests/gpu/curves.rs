//! The shader functions of every other curve group the shaders are generated for (BN254 and
//! BLS12-381 G1, and the three G2s over F_p^2) against arkworks, in each profile the group
//! allows (the Weierstrass ones: none has a point of order 2): the coordinates' field add,
//! sub, mul, square, neg, inverse and the upload's conversion on random and edge values,
//! the complete additions on the identity, P + P and P + (-P), and the upload check.
//! BLS12-377 G1's are `shader_ops.rs`'. Each runs on a device of its own whose MSM stages
//! are not compiled (`ShaderOps::open`). Then whole MSMs per group on a shared engine (the
//! BLS12 G2s without shifted copies unless `GPU_MSM_FULL_TESTS=1`), and in the 13-bit
//! profile on an engine of its own per group (ignored by default).

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{AdditiveGroup, AffineRepr, CurveGroup, PrimeGroup};
use ark_ff::{BigInteger, Field, One, PrimeField, UniformRand, Zero};
use gpu_msm::internals::curve::{components, from_components, Fe, Fp, Fr};
use gpu_msm::ShaderOps;
use gpu_msm::{Arithmetic, GpuCurve, GpuMsm, MsmConfig};

use crate::common::TestCurve;

/// The kernels of `C` in profile `a` (the test fails, naming the package, without an
/// adapter).
fn ops<C: GpuCurve>(a: Arithmetic) -> ShaderOps<'static, C> {
    crate::common::runtime_dir();
    let config = MsmConfig {
        arithmetic: Some(a),
        ..Default::default()
    };
    match ShaderOps::<C>::open(&config) {
        Ok(ops) => ops,
        Err(e) => panic!("GPU tests need a wgpu adapter (mesa-vulkan-drivers): {e}"),
    }
}

/// 0, 1, 2, p - 1, p - 2, 1/2, -1/2, 2^k - 1, 2^k and 2^k + 1 at limb and word boundaries
/// of both limb widths (below p), and random values.
fn prime_values<F: PrimeField>() -> Vec<F> {
    let mut rng = ark_std::test_rng();
    let two = F::from(2u64);
    let half = two.inverse().unwrap();
    let mut v = vec![F::zero(), F::one(), two, -F::one(), -two, half, -half];
    let bits = F::MODULUS_BIT_SIZE;
    let ks = (1..bits).filter(|k| k % 13 == 0 || k % 29 == 0 || k % 32 == 0);
    for k in ks.chain([bits - 1]) {
        let p = two.pow([k as u64]);
        v.extend([p - F::one(), p, p + F::one()]);
    }
    v.extend((0..12).map(|_| F::rand(&mut rng)));
    v
}

/// Coordinates: on a G1 the values of F_p above; on a G2 each of them beside the next one
/// (c0 + c1 u), the first seven (0, 1, 2, -1, -2, 1/2, -1/2) also as c0 + 0 u and 0 + c1 u,
/// and random elements.
fn field_values<C: GpuCurve>() -> Vec<Fe<C>> {
    let prime = prime_values::<Fp<C>>();
    if C::spec().degree() == 1 {
        return prime
            .into_iter()
            .map(Fe::<C>::from_base_prime_field)
            .collect();
    }
    let zero = Fp::<C>::zero();
    let mut rng = ark_std::test_rng();
    let mut v: Vec<Fe<C>> = Vec::new();
    for (i, &c) in prime.iter().enumerate() {
        let next = prime[(i + 1) % prime.len()];
        v.extend(from_components::<C>([c, next]));
        if i < 7 {
            v.extend(from_components::<C>([c, zero]));
            v.extend(from_components::<C>([zero, c]));
        }
    }
    v.extend((0..8).map(|_| Fe::<C>::rand(&mut rng)));
    v
}

fn check<T: PartialEq + std::fmt::Debug>(name: &str, got: Vec<Option<T>>, want: Vec<T>) {
    assert_eq!(got.len(), want.len(), "{name}");
    assert!(!want.is_empty(), "{name}: no cases ran");
    for (i, (g, w)) in got.into_iter().zip(want).enumerate() {
        assert_eq!(g, Some(w), "{name} case {i}");
    }
}

fn field_ops<C: GpuCurve>(ops: &ShaderOps<C>) {
    let xs = field_values::<C>();
    let pairs: Vec<(Fe<C>, Fe<C>)> = xs
        .iter()
        .flat_map(|a| xs.iter().map(move |b| (*a, *b)))
        .collect();
    let name = |op: &str| format!("{} {:?} {op}", C::NAME, ops.arithmetic());
    let map2 = |f: fn(Fe<C>, Fe<C>) -> Fe<C>| pairs.iter().map(|(a, b)| f(*a, *b)).collect();
    let map1 = |f: fn(Fe<C>) -> Fe<C>| xs.iter().map(|a| f(*a)).collect();
    check(
        &name("add"),
        ops.fe_add(&pairs).unwrap(),
        map2(|a, b| a + b),
    );
    check(
        &name("sub"),
        ops.fe_sub(&pairs).unwrap(),
        map2(|a, b| a - b),
    );
    check(
        &name("mul"),
        ops.fe_mul(&pairs).unwrap(),
        map2(|a, b| a * b),
    );
    check(
        &name("square"),
        ops.fe_square(&xs).unwrap(),
        map1(|a| a.square()),
    );
    check(&name("neg"), ops.fe_neg(&xs).unwrap(), map1(|a| -a));
    let inv = |a: Fe<C>| a.inverse().unwrap_or(Fe::<C>::zero());
    check(&name("inverse"), ops.fe_inverse(&xs).unwrap(), map1(inv));
    check(
        &name("from_arkworks"),
        ops.fe_from_arkworks(&xs).unwrap(),
        xs.clone(),
    );
    let chains: Vec<(Fe<C>, Fe<C>, u32)> = [1u32, 2, 64, 65, 300]
        .into_iter()
        .zip(xs.iter().rev())
        .map(|(k, x)| (*x, -*x + Fe::<C>::one(), k))
        .collect();
    let want = chains
        .iter()
        .map(|(a, b, k)| *a * b.pow([*k as u64]))
        .collect();
    check(&name("mul chain"), ops.fe_mul_chain(&chains).unwrap(), want);
}

/// The identity, G, -G, 2G and sums with Z != 1.
fn points<C: GpuCurve>() -> Vec<Projective<C>> {
    let mut rng = ark_std::test_rng();
    let g = Projective::<C>::generator();
    let mut v = vec![Projective::<C>::zero(), g, -g, g.double()];
    v.extend((0..5).map(|_| g * Fr::<C>::rand(&mut rng) + g * Fr::<C>::rand(&mut rng)));
    v
}

fn point_ops<C: GpuCurve>(ops: &ShaderOps<C>) {
    let name = |op: &str| format!("{} {:?} {op}", C::NAME, ops.arithmetic());
    let ps = points::<C>();
    let mut pairs = Vec::new();
    for p in &ps {
        for q in &ps {
            pairs.push((*p, *q));
        }
        pairs.push((*p, -*p));
    }
    let want = pairs.iter().map(|(p, q)| *p + q).collect();
    check(&name("add"), ops.point_add(&pairs).unwrap(), want);
    let mut mixed: Vec<(Projective<C>, Affine<C>)> = Vec::new();
    for p in &ps {
        for q in ps.iter().filter(|q| !q.is_zero()) {
            mixed.extend([
                (*p, q.into_affine()),
                (-*q, q.into_affine()),
                (*q, q.into_affine()),
            ]);
        }
    }
    let want = mixed.iter().map(|(p, q)| *p + q).collect();
    check(
        &name("mixed add"),
        ops.point_add_mixed(&mixed).unwrap(),
        want,
    );
    let want = ps.iter().map(|p| p.double()).collect();
    check(&name("double"), ops.point_double(&ps).unwrap(), want);
    let want = ps.iter().map(|p| -*p).collect();
    check(&name("neg"), ops.point_neg(&ps).unwrap(), want);
    let small: Vec<(Projective<C>, u32)> = ps
        .iter()
        .flat_map(|p| [0u32, 1, 2, 3, 255, 65535].map(|k| (*p, k)))
        .collect();
    let want = small
        .iter()
        .map(|(p, k)| *p * Fr::<C>::from(*k as u64))
        .collect();
    check(
        &name("mul small"),
        ops.point_mul_small(&small).unwrap(),
        want,
    );
    let want = vec![Projective::<C>::zero(); 2];
    check(&name("identity"), ops.point_identity(2).unwrap(), want);
}

/// The upload check on C's curve equation: points of the group, the identity, a wrong y,
/// x = 0, y = 0, and coordinates stored unreduced (a component c + p where it fits, a
/// component exactly p).
fn upload_check<C: GpuCurve>(ops: &ShaderOps<C>) {
    let words = |x: &[u64]| -> Vec<u32> {
        x.iter()
            .flat_map(|w| [*w as u32, (*w >> 32) as u32])
            .collect()
    };
    // The upload's own words: arkworks' internal words, component by component.
    let ark = gpu_msm::internals::gpu::packing::arkworks_words::<C>;
    let on_curve = |x: Fe<C>, y: Fe<C>| y.square() == x.square() * x + C::COEFF_B;
    let mut cases: Vec<(&str, Vec<u32>, Vec<u32>, bool)> = Vec::new();
    let p_words = Fp::<C>::MODULUS;
    let pw = 2 * p_words.as_ref().len();
    for p in points::<C>().iter().map(|p| p.into_affine()) {
        if p.is_zero() {
            let zero = vec![0u32; ark(&p.x).len()];
            cases.push(("identity", zero.clone(), zero, true));
            continue;
        }
        cases.push(("point", ark(&p.x), ark(&p.y), true));
        cases.push(("y + 1", ark(&p.x), ark(&(p.y + Fe::<C>::one())), false));
        cases.push((
            "x = 0",
            ark(&Fe::<C>::zero()),
            ark(&p.y),
            on_curve(Fe::<C>::zero(), p.y),
        ));
        cases.push(("y = 0", ark(&p.x), ark(&Fe::<C>::zero()), false));
        // Each component of x in turn stored as c + p where that fits its words.
        for (k, c) in components::<C>(&p.x).enumerate() {
            let mut unreduced = <Fp<C> as PrimeField>::BigInt::default();
            unreduced.as_mut().copy_from_slice(C::internal_words(&c));
            if !unreduced.add_with_carry(&p_words) {
                let mut x = ark(&p.x);
                x[k * pw..(k + 1) * pw].copy_from_slice(&words(unreduced.as_ref()));
                cases.push(("x + p", x, ark(&p.y), false));
            }
        }
    }
    // x = 0 stored as p in one component, beside a y that makes (0, y) a point where b
    // is a square (y = sqrt(b)), so that only the words' check can refuse it: the same
    // (0, y) with x's words zero is accepted.
    let y = C::COEFF_B.sqrt().unwrap_or(Fe::<C>::one());
    let on = on_curve(Fe::<C>::zero(), y);
    cases.push(("(0, y)", ark(&Fe::<C>::zero()), ark(&y), on));
    for k in 0..C::spec().degree() as usize {
        let mut x = ark(&Fe::<C>::zero());
        x[k * pw..(k + 1) * pw].copy_from_slice(&words(p_words.as_ref()));
        cases.push(("x = p", x, ark(&y), false));
    }
    assert!(cases.iter().any(|c| c.3) && cases.iter().any(|c| !c.3));
    let uploads: Vec<_> = cases
        .iter()
        .map(|(_, x, y, _)| (x.clone(), y.clone()))
        .collect();
    let got = ops.upload_is_valid(&uploads).unwrap();
    for ((name, .., want), got) in cases.iter().zip(got) {
        assert_eq!(got, *want, "{} {:?}: {name}", C::NAME, ops.arithmetic());
    }
}

/// The field functions of `C` (add to inverse, the upload's conversion) and the upload
/// check, in each of `profiles`: small pipelines.
fn field_functions<C: GpuCurve>(profiles: &[Arithmetic]) {
    for &a in profiles {
        let ops = ops::<C>(a);
        field_ops(&ops);
        upload_check(&ops);
        // The MSM stages are not compiled on this device: refused, never run.
        let g = Affine::<C>::generator();
        assert!(ops.stored_bases(&[g]).is_err());
    }
}

/// The point functions of `C` in each of `profiles`: a pipeline each, holding the formulas
/// (on lavapipe a G2's take 10 to 40 s each to compile).
fn point_functions<C: GpuCurve>(profiles: &[Arithmetic]) {
    for &a in profiles {
        point_ops(&ops::<C>(a));
    }
}

const WEIERSTRASS: [Arithmetic; 2] = [Arithmetic::Limbs13, Arithmetic::Limbs29];

/// The profiles a G1's point functions run in: Limbs13 by default, the profile the default
/// whole MSMs (on the shared engines, Limbs29 on lavapipe) do not reach; both with
/// `GPU_MSM_FULL_TESTS=1` (each point function is a pipeline of its own, the largest share
/// of these tests' compiles on lavapipe).
fn g1_point_profiles() -> &'static [Arithmetic] {
    match crate::common::full_tests() {
        true => &WEIERSTRASS,
        false => &[Arithmetic::Limbs13],
    }
}

#[test]
fn bn254_g1_functions_match_arkworks() {
    field_functions::<ark_bn254::g1::Config>(&WEIERSTRASS);
    point_functions::<ark_bn254::g1::Config>(g1_point_profiles());
}

#[test]
fn bls12_381_g1_functions_match_arkworks() {
    field_functions::<ark_bls12_381::g1::Config>(&WEIERSTRASS);
    point_functions::<ark_bls12_381::g1::Config>(g1_point_profiles());
}

/// F_p^2 on the G2s, each function a pipeline of its own (seconds each to compile on
/// lavapipe, docs/PERF.md): BN254's in Limbs29 (the suite's time); with
/// `GPU_MSM_FULL_TESTS=1` the three (BLS12-377's non-residue is -5) in both profiles.
#[test]
fn g2_field_functions_match_arkworks() {
    if crate::common::full_tests() {
        field_functions::<ark_bn254::g2::Config>(&WEIERSTRASS);
        field_functions::<ark_bls12_381::g2::Config>(&WEIERSTRASS);
        field_functions::<ark_bls12_377::g2::Config>(&WEIERSTRASS);
    } else {
        field_functions::<ark_bn254::g2::Config>(&[Arithmetic::Limbs29]);
    }
}

#[test]
#[ignore = "a G2's formulas: minutes of pipeline compiles on lavapipe (BN254 G2's whole MSMs run by default); run with --ignored"]
fn bn254_g2_point_functions_match_arkworks() {
    point_functions::<ark_bn254::g2::Config>(&WEIERSTRASS);
}

#[test]
#[ignore = "a G2 of 381 bits: minutes of pipeline compiles on lavapipe; run with --ignored"]
fn bls12_381_g2_point_functions_match_arkworks() {
    point_functions::<ark_bls12_381::g2::Config>(&WEIERSTRASS);
}

#[test]
#[ignore = "a G2 of 377 bits: minutes of pipeline compiles on lavapipe; run with --ignored"]
fn bls12_377_g2_point_functions_match_arkworks() {
    point_functions::<ark_bls12_377::g2::Config>(&WEIERSTRASS);
}

/// The Edwards profile needs a point of order 2, which none of these groups has: refused.
#[test]
fn edwards_is_refused_where_the_curve_has_no_map() {
    let config = MsmConfig {
        arithmetic: Some(Arithmetic::Limbs29Edwards),
        ..Default::default()
    };
    for r in [
        ShaderOps::<ark_bn254::g1::Config>::open(&config).err(),
        ShaderOps::<ark_bls12_381::g1::Config>::open(&config).err(),
        ShaderOps::<ark_bls12_377::g2::Config>::open(&config).err(),
        ShaderOps::<ark_bn254::g2::Config>::open(&config).err(),
        ShaderOps::<ark_bls12_381::g2::Config>::open(&config).err(),
    ] {
        assert!(
            matches!(r, Some(gpu_msm::MsmError::InvalidConfig(ref why)) if why.contains("no point of order 2")),
            "{r:?}"
        );
    }
}

fn reference<C: GpuCurve>(bases: &[Affine<C>], scalars: &[Fr<C>]) -> Projective<C> {
    use ark_ec::VariableBaseMSM;
    Projective::<C>::msm(bases, scalars).expect("equal lengths")
}

/// Whole MSMs of `C` against arkworks' `VariableBaseMSM::msm`, a smaller matrix than
/// BLS12-377's: sizes around 32, every adversarial scalar vector on bases with the identity,
/// a duplicate and a P, -P pair, window sizes where a 255-bit scalar field needs one window
/// more than BLS12-377's 253 bits (3, 5, 15) and others, resident sets (whole and a prefix),
/// a batch, and a call in slices, on engine `e` (a group's shared one, or another profile's);
/// with `copies`, sets loaded with shifted copies too (the shift stage: on lavapipe the
/// largest of a G2's first-dispatch compiles).
fn whole_msms<C: GpuCurve>(e: &GpuMsm<C>, copies: bool) {
    use gpu_msm::inputs::{adversarial_scalars, random_bases, random_scalars};
    let name = &format!("{} {:?}", C::NAME, e.arithmetic().expect("a GPU engine"));
    for n in [1usize, 2, 31, 32, 33] {
        let bases = random_bases::<C>(n, n as u64);
        let scalars: Vec<Fr<C>> = random_scalars(n, 7 + n as u64);
        let (got, rep) = e.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(rep.backend, gpu_msm::Backend::Gpu, "{name} n = {n}");
        assert_eq!(rep.curve, C::NAME);
        assert_eq!(got, reference(&bases, &scalars), "{name} n = {n}");
    }
    let n = 64;
    let mut bases = random_bases::<C>(n, 1);
    bases[1] = Affine::<C>::zero();
    bases[3] = bases[2];
    bases[5] = -bases[4];
    for (what, scalars) in adversarial_scalars::<Fr<C>>(n, 2) {
        let want = reference(&bases, &scalars);
        assert_eq!(e.msm(&bases, &scalars).unwrap(), want, "{name}: {what}");
    }
    // r - 1 and 2^(bits - 1): the scalar field's top bits, in every window size listed.
    let mut scalars: Vec<Fr<C>> = random_scalars(n, 3);
    scalars[0] = -Fr::<C>::one();
    scalars[6] = Fr::<C>::from(2u64).pow([u64::from(Fr::<C>::MODULUS_BIT_SIZE) - 1]);
    let want = reference(&bases, &scalars);
    for c in [1u32, 2, 3, 5, 8, 13, 15, 16] {
        let at_c = |c| {
            let config = MsmConfig {
                window_bits: Some(c),
                ..e.config().clone()
            };
            e.reconfigured(config)?.msm(&bases, &scalars)
        };
        match at_c(c) {
            Ok(got) => assert_eq!(got, want, "{name}: c = {c}"),
            // Refused, typed, only where c = 16's buckets pass the device's binding limit
            // (128 MiB on lavapipe, WebGPU's default): a G2 of 12-word coordinates, 16
            // windows of 2^15 buckets of 288 bytes, 151 MB. BN254 G2's 192-byte buckets
            // (101 MB) must run.
            Err(gpu_msm::MsmError::InvalidConfig(why))
                if c == 16
                    && why.contains("does not fit")
                    && c16_buckets::<C>() > e.max_binding_bytes().unwrap() => {}
            Err(err) => panic!("{name}: c = {c}: {err}"),
        }
    }
    // Resident: the whole set, a prefix, a batch.
    let set = e.load_bases(&bases).unwrap();
    assert_eq!(e.msm(&set, &scalars).unwrap(), want, "{name}: resident");
    let shared = set.clone(); // a handle on the same device memory
    assert_eq!(e.msm(&shared, &scalars).unwrap(), want, "{name}: a clone");
    let prefix = reference(&bases[..40], &scalars[..40]);
    assert_eq!(
        e.msm(&set, &scalars[..40]).unwrap(),
        prefix,
        "{name}: prefix"
    );
    let other: Vec<Fr<C>> = random_scalars(n, 4);
    let sums = e.batch_msm(&set, &[&scalars, &other]).unwrap();
    assert_eq!(sums, vec![want, reference(&bases, &other)], "{name}: batch");
    if copies {
        shifted_copies(e, &bases, &scalars, &other);
    }
    // In slices of 24 points: three calls summed on the host.
    let sliced = e
        .reconfigured(MsmConfig {
            max_slice_points: Some(24),
            ..e.config().clone()
        })
        .unwrap();
    let (got, rep) = sliced.msm_with_report(&bases, &scalars).unwrap();
    assert!(rep.route.contains("slices"), "{name}: {}", rep.route);
    assert_eq!(got, want, "{name}: sliced");
}

/// Sets of `bases` loaded with shifted copies (the shift stage doubles each base c W' times
/// per copy) at c = 5, where BLS12-381's 255 bits need 52 windows and BLS12-377's 253 bits
/// 51, and at c = 15 (18 against 17), with copies that fold the windows unevenly; the
/// report's windows of buckets are the curve's.
fn shifted_copies<C: GpuCurve>(
    e: &GpuMsm<C>,
    bases: &[Affine<C>],
    scalars: &[Fr<C>],
    other: &[Fr<C>],
) {
    let name = &format!("{} {:?}", C::NAME, e.arithmetic().expect("a GPU engine"));
    let (want, bits) = (reference(bases, scalars), C::spec().scalar_bits());
    // The copies are read even where the call's own window would cost less (at c = 15 on
    // 64 points): a test hook, set on an engine of the shared one's device so that the
    // other tests on it keep the cost model's choice.
    let e = &e.reconfigured(e.config().clone()).unwrap();
    e.always_read_copies();
    for (c, k) in [(5u32, 3u32), (15, 2)] {
        let options = gpu_msm::LoadOptions {
            precompute: gpu_msm::Precompute::Factor(k),
            window_bits: Some(c),
        };
        let copies = e.load_bases_with(bases, options).unwrap();
        assert_eq!(copies.precomputed_window_bits(), Some(c), "{name}");
        let (got, rep) = e.msm_with_report(&copies, scalars).unwrap();
        assert_eq!(got, want, "{name}: c = {c}, {k} copies: {}", rep.route);
        assert!(rep.precomputed_copies > 1, "{name}: c = {c}: {}", rep.route);
        let w = gpu_msm::internals::digits::bucket_windows(c, rep.precomputed_copies, bits);
        assert_eq!(rep.num_windows, w, "{name}: c = {c}");
        let (got, _) = e.msm_with_report(&copies, other).unwrap();
        assert_eq!(got, reference(bases, other), "{name}: c = {c}, {k} copies");
    }
}

/// Bytes of the buckets of a c = 16 call of `C` (16 windows of 2^15 points of three packed
/// coordinates), whatever the profile: buckets hold packed coordinates.
fn c16_buckets<C: GpuCurve>() -> u64 {
    let windows = u64::from(C::spec().scalar_bits().div_ceil(16));
    windows * (1 << 15) * 3 * C::spec().element_words() as u64 * 4
}

/// Whole MSMs in the portable 13-bit profile, the other profile of a group without the
/// Edwards map (every group but BLS12-377 G1, whose Limbs13 runs in `msm.rs`).
fn limbs13_msms<C: GpuCurve>() {
    let e = crate::common::forced_engine::<C>(MsmConfig {
        arithmetic: Some(Arithmetic::Limbs13),
        // lavapipe compiles a pipeline at its first dispatch: BLS12-381 G2's Limbs13 shift
        // stage (shifted copies) took past the 120 s default there, a Timeout, not a sum.
        gpu_timeout: std::time::Duration::from_secs(600),
        ..Default::default()
    });
    assert_eq!(e.arithmetic(), Some(Arithmetic::Limbs13));
    whole_msms(&e, true);
}

#[test]
fn bn254_g1_msms_match_arkworks() {
    whole_msms(ark_bn254::g1::Config::engine(), true);
}

#[test]
fn bls12_381_g1_msms_match_arkworks() {
    whole_msms(ark_bls12_381::g1::Config::engine(), true);
}

#[test]
fn bn254_g2_msms_match_arkworks() {
    whole_msms(ark_bn254::g2::Config::engine(), true);
}

/// BLS12-381 and BLS12-377 G2 (a 2-minute engine each on a fresh lavapipe): the matrix
/// without shifted copies by default (their shift stage is the largest first-dispatch
/// compile), with them under `GPU_MSM_FULL_TESTS=1`. BN254 G2 runs the copies on the same
/// generic code.
#[test]
fn bls12_381_g2_msms_match_arkworks() {
    whole_msms(
        ark_bls12_381::g2::Config::engine(),
        crate::common::full_tests(),
    );
}

#[test]
fn bls12_377_g2_msms_match_arkworks() {
    whole_msms(
        ark_bls12_377::g2::Config::engine(),
        crate::common::full_tests(),
    );
}

/// Ignored by default: the same generic code as BLS12-377 G1's Limbs13 MSMs (`msm.rs`) on
/// constants each group's Limbs13 functions check by default, behind a Limbs13 engine of
/// its own per group (about a minute of pipeline compiles each on a fresh lavapipe, two
/// for the G2s), which the CI's 20 minutes cannot hold.
#[test]
#[ignore = "a Limbs13 engine per group: minutes of pipeline compiles on lavapipe; run with --ignored"]
fn other_groups_msms_in_limbs13_match_arkworks() {
    limbs13_msms::<ark_bn254::g1::Config>();
    limbs13_msms::<ark_bls12_381::g1::Config>();
    limbs13_msms::<ark_bn254::g2::Config>();
    limbs13_msms::<ark_bls12_381::g2::Config>();
    limbs13_msms::<ark_bls12_377::g2::Config>();
}

/// BLS12-381 G1 on bases outside the subgroup (a point of order 3, (0, 2): x^3 + 4 = 4) with
/// scalars whose words are not reduced (r and 2r, which `new_unchecked` accepts): every route
/// gives the integer sum of arkworks' `into_bigint` of each scalar, as `cpu::naive_msm`
/// computes it: the GPU's bucket sort (whose reduction of the scalars is arkworks'), the
/// host's bucket lists, SRE, arkworks on the CPU and double-and-add. No route differs.
#[test]
fn bls12_381_unreduced_scalars_on_bases_outside_the_subgroup_agree_on_every_route() {
    use ark_bls12_381::{Fq, Fr as Fr381, G1Affine};
    use gpu_msm::inputs::{random_bases, random_scalars};
    type C = ark_bls12_381::g1::Config;
    let order3 = G1Affine::new_unchecked(Fq::zero(), Fq::from(2u64));
    assert!(order3.is_on_curve() && !order3.is_in_correct_subgroup_assuming_on_curve());
    let mut two_r = Fr381::MODULUS;
    assert!(!two_r.add_with_carry(&Fr381::MODULUS), "2r fits 256 bits");
    let n = 40;
    let mut bases = random_bases::<C>(n, 5);
    let mut scalars: Vec<Fr381> = random_scalars(n, 6);
    // Both scalars mean r (into_bigint of r and of 2r): 2 r Q, not the identity (r is
    // prime, so not a multiple of 3).
    for (i, k) in [(0, Fr381::MODULUS), (7, two_r)] {
        bases[i] = order3;
        scalars[i] = ark_ff::Fp::new_unchecked(k);
    }
    bases[3] = -order3;
    // Repeated scalars (those two among them), which SRE merges.
    let repeated = scalars[..10].to_vec();
    scalars[20..30].copy_from_slice(&repeated);
    let want = gpu_msm::internals::cpu::naive_msm(&bases, &scalars);
    let reduced: Vec<Fr381> = scalars
        .iter()
        .map(|k| Fr381::from_bigint(k.into_bigint()).unwrap_or_default())
        .collect();
    assert_ne!(
        want,
        gpu_msm::internals::cpu::naive_msm(&bases, &reduced),
        "the case is not trivial"
    );
    let e = C::engine();
    let routes = [
        (Some(gpu_msm::Backend::Gpu), gpu_msm::BucketSort::Gpu),
        (Some(gpu_msm::Backend::Gpu), gpu_msm::BucketSort::Host),
        (
            Some(gpu_msm::Backend::CpuArkworks),
            gpu_msm::BucketSort::Auto,
        ),
        (
            Some(gpu_msm::Backend::CpuDoubleAndAdd),
            gpu_msm::BucketSort::Auto,
        ),
    ];
    for (backend, sort) in routes {
        let r = e
            .reconfigured(MsmConfig {
                force_backend: backend,
                bucket_sort: sort,
                ..e.config().clone()
            })
            .unwrap();
        let (got, rep) = r.msm_with_report(&bases, &scalars).unwrap();
        assert_eq!(got, want, "{:?}, {sort:?}: {}", rep.backend, rep.route);
    }
    sre_sum(e, &bases, &scalars, want);
}

/// The SRE route's sum of `bases` and `scalars` is `want`, with pairs merged.
fn sre_sum<C: GpuCurve>(
    e: &GpuMsm<C>,
    bases: &[Affine<C>],
    scalars: &[Fr<C>],
    want: Projective<C>,
) {
    let (got, rep) = with_sre(e).msm_with_report(bases, scalars).unwrap();
    assert_eq!(got, want, "SRE: {}", rep.route);
    let sre = rep.sre.expect("an SRE report");
    assert!(
        sre.applied && sre.stats.pairs > 0,
        "SRE merged nothing: {sre:?}"
    );
}

/// An engine on `e`'s device that searches every call for redundant scalars (SRE).
fn with_sre<C: GpuCurve>(e: &GpuMsm<C>) -> GpuMsm<C> {
    use gpu_msm::{SreOptions, SreStrategy};
    e.reconfigured(MsmConfig {
        sre: gpu_msm::SreMode::On(SreOptions::new(SreStrategy::Indexed)),
        ..e.config().clone()
    })
    .unwrap()
}

/// BN254 G2 on bad and odd bases, on every route:
/// - a coordinate component stored unreduced (c1 of x or c0 of y as c + p: the same value,
///   words at or past p) and a point off the curve are `InvalidBase`, one-shot and loaded;
/// - points of the twist outside G2 (the points of random x's: the cofactor is large) give
///   the integer sum of `cpu::naive_msm` on every route (SRE too) and with shifted copies, and
///   `validate_subgroup` names the first.
#[test]
fn bn254_g2_bad_bases_are_typed_and_bases_outside_g2_agree_on_every_route() {
    use ark_bn254::{Fq, Fq2, Fr as FrBn};
    use gpu_msm::inputs::{random_bases, random_scalars};
    use gpu_msm::{Backend, BucketSort, MsmError};
    type C = ark_bn254::g2::Config;
    let e = C::engine();
    let n = 24;
    let bases = random_bases::<C>(n, 9);
    let mut scalars: Vec<FrBn> = random_scalars(n, 10);
    // Repeated scalars (on the foreign points below too), which SRE merges.
    for (to, from) in [(13, 2), (12, 11), (20, 2)] {
        scalars[to] = scalars[from];
    }
    let plus_p = |c: Fq| -> Fq {
        let mut w = c.0;
        assert!(
            !w.add_with_carry(&Fq::MODULUS),
            "c + p fits BN254's 4 words"
        );
        ark_ff::Fp::new_unchecked(w)
    };
    let mut bad_x = bases.clone();
    let x = bad_x[5].x;
    bad_x[5].x = Fq2::new(x.c0, plus_p(x.c1));
    // The same value (it prints alike), but words past p: arkworks compares words.
    assert_ne!(bad_x[5].x, x);
    let mut bad_y = bases.clone();
    let y = bad_y[6].y;
    bad_y[6].y = Fq2::new(plus_p(y.c0), y.c1);
    let mut off = bases.clone();
    off[7].y += Fq2::one();
    let routes = [
        (Some(Backend::Gpu), BucketSort::Gpu),
        (Some(Backend::Gpu), BucketSort::Host),
        (Some(Backend::CpuArkworks), BucketSort::Auto),
        (Some(Backend::CpuDoubleAndAdd), BucketSort::Auto),
    ];
    let on = |backend, sort| {
        e.reconfigured(MsmConfig {
            force_backend: backend,
            bucket_sort: sort,
            ..e.config().clone()
        })
        .unwrap()
    };
    for (bad, index) in [(&bad_x, 5), (&bad_y, 6), (&off, 7)] {
        for (backend, sort) in routes {
            let got = on(backend, sort).msm(bad, &scalars);
            assert!(
                matches!(got, Err(MsmError::InvalidBase { index: i }) if i == index),
                "{backend:?} {sort:?}: base {index}: {got:?}"
            );
        }
        assert!(matches!(
            e.load_bases(bad),
            Err(MsmError::InvalidBase { index: i }) if i == index
        ));
    }
    let mixed = with_points_outside_g2(&bases);
    let want = gpu_msm::internals::cpu::naive_msm(&mixed, &scalars);
    for (backend, sort) in routes {
        let (got, rep) = on(backend, sort).msm_with_report(&mixed, &scalars).unwrap();
        assert_eq!(got, want, "{:?}, {sort:?}: {}", rep.backend, rep.route);
    }
    sre_sum(e, &mixed, &scalars, want);
    let reading = e.reconfigured(e.config().clone()).unwrap();
    reading.always_read_copies();
    let options = gpu_msm::LoadOptions {
        precompute: gpu_msm::Precompute::Factor(3),
        window_bits: Some(5),
    };
    let copies = reading.load_bases_with(&mixed, options).unwrap();
    let (got, rep) = reading.msm_with_report(&copies, &scalars).unwrap();
    assert_eq!(got, want, "shifted copies: {}", rep.route);
    let checked = e
        .reconfigured(MsmConfig {
            validate_subgroup: true,
            ..e.config().clone()
        })
        .unwrap();
    assert!(matches!(
        checked.msm(&mixed, &scalars),
        Err(MsmError::BaseNotInSubgroup { index: 2 })
    ));
}

/// `bases` with points of the twist outside G2 (those of x = k + (k + 1) u for k = 1, 2,
/// ...: the cofactor is large, so nearly every point of the twist is outside) at 2 and 13
/// (one point twice), and a P, -P pair at 11 and 12.
fn with_points_outside_g2<C: GpuCurve>(bases: &[Affine<C>]) -> Vec<Affine<C>> {
    let outside: Vec<Affine<C>> = (1u64..)
        .filter_map(|k| {
            let x = from_components::<C>([Fp::<C>::from(k), Fp::<C>::from(k + 1)])?;
            let p = Affine::<C>::get_point_from_x_unchecked(x, true)?;
            (!p.is_in_correct_subgroup_assuming_on_curve()).then_some(p)
        })
        .take(2)
        .collect();
    let mut mixed = bases.to_vec();
    mixed[2] = outside[0];
    mixed[11] = outside[1];
    mixed[12] = -outside[1];
    mixed[13] = outside[0];
    mixed
}

/// The BLS12 G2s on points of the twist outside G2 (`with_points_outside_g2`): the integer
/// sum of `cpu::naive_msm` on the GPU's bucket sort, arkworks on the CPU and
/// double-and-add, as on BN254 G2 (above, every route there; the host-list stages and the
/// shift stage are not compiled for these two groups by default).
#[test]
fn bls12_g2s_sum_points_outside_g2_as_integers() {
    use gpu_msm::inputs::{random_bases, random_scalars};
    use gpu_msm::Backend;
    fn check<C: TestCurve>() {
        let e = C::engine();
        let n = 24;
        let bases = with_points_outside_g2(&random_bases::<C>(n, 80));
        let scalars: Vec<Fr<C>> = random_scalars(n, 81);
        let want = gpu_msm::internals::cpu::naive_msm(&bases, &scalars);
        for backend in [Backend::Gpu, Backend::CpuArkworks, Backend::CpuDoubleAndAdd] {
            let on = e
                .reconfigured(MsmConfig {
                    force_backend: Some(backend),
                    ..e.config().clone()
                })
                .unwrap();
            let (got, rep) = on.msm_with_report(&bases, &scalars).unwrap();
            assert_eq!(got, want, "{} {backend:?}: {}", C::NAME, rep.route);
        }
    }
    check::<ark_bls12_381::g2::Config>();
    check::<ark_bls12_377::g2::Config>();
}
