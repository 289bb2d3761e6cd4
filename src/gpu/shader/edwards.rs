//! BLS12-377 G1 as a twisted Edwards curve with a = -1, for the bucket additions of the
//! [`Arithmetic::Limbs29Edwards`](super::field::Arithmetic) profile: a mixed addition costs 7
//! multiplications (against 11 for the complete short Weierstrass formulas), an addition 9
//! and a doubling 8.
//!
//! # The map
//! G1 lies on y^2 = x^3 + 1, which has the point (-1, 0) of order 2. With alpha = -1 and
//! s = 1/sqrt(3 alpha^2) = 1/sqrt(3), the Montgomery curve B v^2 = u^3 + A u^2 + u with
//! A = 3 alpha s, B = s is reached by u = s (x - alpha), v = s y, and the twisted Edwards curve
//! a_te x^2 + y^2 = 1 + d_te x^2 y^2 (a_te = (A + 2) / B, d_te = (A - 2) / B) by
//! x_te = u / v, y_te = (u - 1) / (u + 1). Scaling x' = c x_te with c = sqrt(-a_te) gives
//! -x'^2 + y^2 = 1 + d x'^2 y^2 with d = -d_te / a_te. Every constant is computed from
//! arkworks' field and the root alpha (`EdwardsConstants::for_root`, in `src/curve/mod.rs`,
//! which checks alpha^3 + b = 0), with the root choices that make c exist.
//!
//! In one formula: x' = c (x + 1) / y and y' = (s (x + 1) - 1) / (s (x + 1) + 1); the
//! identity maps to (0, 1).
//!
//! # Why G1 never meets an exceptional case
//! The map is a group isomorphism from the Weierstrass curve onto the Edwards curve's
//! desingularised closure. It is undefined (the image lies at infinity, or is (0, -1)) only at
//! points with y = 0 (order 2) or u = -1 (2P = (0, 0) on the Montgomery curve: order 4).
//! The extended-coordinate formulas (Hisil, Wong, Carter and Dawson, "Twisted Edwards curves
//! revisited", 2008: add-2008-hwcd-3, madd-2008-hwcd-3 and dbl-2008-hwcd) compute
//! Z3 = F G, a multiple of (1 - d x1 x2 y1 y2)(1 + d x1 x2 y1 y2); they give the true sum
//! whenever that is nonzero, and it vanishes only when P1 + P2 or P1 - P2 is a point at
//! infinity of the model (Bernstein, Birkner, Joye, Lange and Peters, "Twisted Edwards
//! curves", 2008, section 6), i.e. a point of order 2 or 4. Every point the engine adds is a
//! sum of G1 points, so P1 + P2 and P1 - P2 are in G1, whose order r is an odd prime: they are
//! never of order 2 or 4, and G1's points other than the identity have y != 0 and u != -1.
//!
//! Bases outside G1 can meet the exceptional case. The shaders then poison the result: every
//! operation whose Z3 comes out zero returns (0 : 0 : 0 : 0), and that value absorbs every
//! later operation (each output coordinate is a product with a factor that is zero), so the
//! window sum fails the host's check and the engine answers with `BaseNotInSubgroup`, never
//! a wrong sum. A base the map cannot send (y = 0 or u = -1) is converted to the poisoned
//! precomputed form (0, 0, 0), which turns any sum it enters into (0 : 0 : Z : 0), also
//! refused by the host (not on the curve).

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::AffineRepr;
use ark_ff::{Field, One, Zero};

use super::program::{Op, Step};
use super::straight_line::{straight_line_fn, StepField};
use crate::curve::{Fe, GpuCurve};

pub use crate::curve::EdwardsConstants;

/// The curve's constants; panics for a curve without the map (the Edwards profile is
/// refused for those before anything reaches here: `CurveSpec::edwards`).
pub fn constants<C: GpuCurve>() -> &'static EdwardsConstants<Fe<C>> {
    C::edwards().unwrap_or_else(|| panic!("{} has no twisted Edwards map", C::NAME))
}

/// The Edwards image (x', y') of a point; `None` where the map is undefined (y = 0 or
/// u = -1, points of order 2 and 4, never in the prime-order subgroup), and on a curve
/// without the map. The identity maps to (0, 1).
pub fn to_edwards<C: GpuCurve>(p: &Affine<C>) -> Option<(Fe<C>, Fe<C>)> {
    let k = C::edwards()?;
    if p.is_zero() {
        return Some((Fe::<C>::zero(), Fe::<C>::one()));
    }
    let one = Fe::<C>::one();
    let x1 = p.x - k.alpha;
    let u = k.s * x1;
    let den = p.y * (u + one);
    let inv = den.inverse()?;
    Some((k.c * x1 * (u + one) * inv, (u - one) * p.y * inv))
}

/// The point of an Edwards point (x', y'); `None` for (0, -1), for points off the Edwards
/// curve, and on a curve without the map.
pub fn from_edwards<C: GpuCurve>(x: Fe<C>, y: Fe<C>) -> Option<Affine<C>> {
    let k = C::edwards()?;
    let one = Fe::<C>::one();
    if -x.square() + y.square() != one + k.d * x.square() * y.square() {
        return None;
    }
    if y == one {
        return Some(Affine::<C>::identity());
    }
    // u = (1 + y') / (1 - y'), v = u / x_te = u c / x'; x = u / s + alpha, y = v / s.
    let u = (one + y) * (one - y).inverse()?;
    let v = u * k.c * x.inverse()?;
    let p = Affine::<C>::new_unchecked(u * k.s_inv + k.alpha, v * k.s_inv);
    p.is_on_curve().then_some(p)
}

/// Extended coordinates (X, Y, Z, T) = (x', y', 1, x' y') of a projective point.
pub fn extended<C: GpuCurve>(p: &Projective<C>) -> Option<[Fe<C>; 4]> {
    let (x, y) = to_edwards::<C>(&(*p).into())?;
    Some([x, y, Fe::<C>::one(), x * y])
}

/// The precomputed form of a base that the mixed addition reads: (y' - x', y' + x', k x' y').
pub fn precomputed<C: GpuCurve>(p: &Affine<C>) -> Option<[Fe<C>; 3]> {
    let (x, y) = to_edwards::<C>(p)?;
    Some([y - x, y + x, C::edwards()?.k * x * y])
}

/// Reads extended coordinates back onto the curve: `None` when Z = 0 (a poisoned or
/// degenerate value), when X Y != Z T, or when the point is off the curve or has no
/// preimage.
pub fn from_extended<C: GpuCurve>(c: [Fe<C>; 4]) -> Option<Projective<C>> {
    let [x, y, z, t] = c;
    if z.is_zero() || x * y != z * t {
        return None;
    }
    let zi = z.inverse()?;
    from_edwards::<C>(x * zi, y * zi).map(Into::into)
}

/// Register numbers of the Edwards step tables.
pub mod reg {
    /// P.X
    pub const X1: u8 = 0;
    /// P.Y
    pub const Y1: u8 = 1;
    /// P.Z
    pub const Z1: u8 = 2;
    /// P.T
    pub const T1: u8 = 3;
    /// Q.X, or y' - x' of a precomputed base.
    pub const X2: u8 = 4;
    /// Q.Y, or y' + x' of a precomputed base.
    pub const Y2: u8 = 5;
    /// Q.Z, or k x' y' of a precomputed base.
    pub const Z2: u8 = 6;
    /// Q.T
    pub const T2: u8 = 7;
    /// The constant k = 2d.
    pub const K: u8 = 8;
    /// Temporaries A..H of the formulas.
    pub const A: u8 = 9;
    /// B
    pub const B: u8 = 10;
    /// C
    pub const C: u8 = 11;
    /// D
    pub const D: u8 = 12;
    /// E
    pub const E: u8 = 13;
    /// F
    pub const F: u8 = 14;
    /// G
    pub const G: u8 = 15;
    /// H
    pub const H: u8 = 16;
    /// Result X.
    pub const X3: u8 = 17;
    /// Result Y.
    pub const Y3: u8 = 18;
    /// Result Z.
    pub const Z3: u8 = 19;
    /// Result T.
    pub const T3: u8 = 20;
    /// Number of registers.
    pub const COUNT: usize = 21;
}

use super::program::s;
use reg::*;
use Op::*;

/// The common tail of the additions: E = B - A, F = D - C, G = D + C, H = B + A,
/// (X3, Y3, T3, Z3) = (E F, G H, E H, F G).
macro_rules! addition_tail {
    ($($head:expr,)*) => {
        &[
            $($head,)*
            s(Sub, E, B, A),
            s(Sub, F, D, C),
            s(Add, G, D, C),
            s(Add, H, B, A),
            s(Mul, X3, E, F),
            s(Mul, Y3, G, H),
            s(Mul, T3, E, H),
            s(Mul, Z3, F, G),
        ]
    };
}

/// P + Q, Q precomputed as (y' - x', y' + x', k x' y') in (X2, Y2, Z2) (madd-2008-hwcd-3,
/// a = -1): 7 multiplications. In the order that holds the fewest values at once (the hot
/// loop's; `registers.rs`): C's product first, whose operands both die, then D, then the
/// sums A and B before their products.
pub const MADD: &[Step] = addition_tail![
    s(Mul, C, T1, Z2),
    s(Add, D, Z1, Z1),
    s(Sub, A, Y1, X1),
    s(Add, B, Y1, X1),
    s(Mul, A, A, X2),
    s(Mul, B, B, Y2),
];

/// P + Q in extended coordinates (add-2008-hwcd-3, a = -1, k = 2d in register K): 9
/// multiplications. Unified: also right for P = Q.
pub const ADD: &[Step] = addition_tail![
    s(Sub, A, Y1, X1),
    s(Sub, E, Y2, X2),
    s(Mul, A, A, E),
    s(Add, B, Y1, X1),
    s(Add, E, Y2, X2),
    s(Mul, B, B, E),
    s(Mul, C, T1, K),
    s(Mul, C, C, T2),
    s(Mul, D, Z1, Z2),
    s(Add, D, D, D),
];

/// 2P (dbl-2008-hwcd, a = -1): 4 multiplications and 4 squarings. F and H are the paper's
/// negated (F = 2 Z^2 - G, H = A + B), which negates all four outputs: the same point.
pub const DOUBLE: &[Step] = &[
    s(Mul, A, X1, X1),
    s(Mul, B, Y1, Y1),
    s(Mul, C, Z1, Z1),
    s(Add, C, C, C),
    s(Sub, G, B, A),
    s(Sub, F, C, G),
    s(Add, H, A, B),
    s(Add, E, X1, Y1),
    s(Mul, E, E, E),
    s(Sub, E, E, H),
    s(Mul, X3, E, F),
    s(Mul, Y3, G, H),
    s(Mul, T3, E, H),
    s(Mul, Z3, F, G),
];

/// The Edwards tables written out as WGSL functions `point_add`, `point_add_mixed` and
/// `point_double` over curve_edwards.wgsl's `Point` and `Affine`; each result goes through
/// `point_checked` (the poison rule of the module comment).
pub fn wgsl_straight_line() -> String {
    let mut out = String::from(
        "// Generated from the Edwards step tables of src/gpu/shader/edwards.rs: the formulas written out.\n",
    );
    let coords = |p: &str, names: &[&str]| -> Vec<String> {
        names.iter().map(|n| format!("{p}.{n}")).collect()
    };
    let ret = |r: &[String]| format!("point_checked(Point({}))", r.join(", "));
    let functions: [(&str, &str, &[Step], Vec<String>); 3] = [
        (
            "point_add",
            "p: Point, q: Point",
            ADD,
            coords("q", &["x", "y", "z", "t"]),
        ),
        (
            "point_add_mixed",
            "p: Point, q: Affine",
            MADD,
            coords("q", &["ymx", "ypx", "kt"]),
        ),
        ("point_double", "p: Point", DOUBLE, vec![]),
    ];
    for (name, args, prog, q) in functions {
        let mut inputs: Vec<(u8, String)> = [X1, Y1, Z1, T1]
            .into_iter()
            .zip(coords("p", &["x", "y", "z", "t"]))
            .collect();
        inputs.extend([X2, Y2, Z2, T2].into_iter().zip(q));
        inputs.push((K, "TE_K".into()));
        let outputs = [X3, Y3, Z3, T3];
        out += &straight_line_fn(
            name,
            args,
            &inputs,
            COUNT,
            StepField::Prime,
            prog,
            &outputs,
            ret,
        );
    }
    out
}

/// Whether the short Weierstrass curve group `P` has a rational point of order 2, which the
/// map to a twisted Edwards curve needs (a Montgomery form has one; a quadratic twist adds
/// none, since its points (alpha, 0) are the curve's). Its group has h r points, r an odd
/// prime, so it has such a point exactly when arkworks' cofactor h is even (Cauchy). Of the
/// six groups issue 21 names, only BLS12-377's G1 has one (a test checks the G1s against the
/// roots of x^3 + b): the G2s, BN254's and BLS12-381's groups need a Weierstrass profile.
/// The tests check it against the curves' `alpha` (`src/curve/mod.rs`): a curve without a point
/// of order 2 has none, and so no Edwards profile.
pub fn has_two_torsion<P: ark_ec::short_weierstrass::SWCurveConfig>() -> bool {
    P::COFACTOR.first().is_some_and(|w| w & 1 == 0)
}

/// Runs an Edwards table on the CPU (register K set to k), as the shaders do.
pub fn interpret<C: GpuCurve>(program: &[Step], regs: &mut [Fe<C>; COUNT]) {
    regs[K as usize] = constants::<C>().k;
    super::program::interpret(program, regs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::program::mul_count;
    use ark_bls12_377::{Fq, Fr, G1Affine, G1Projective};
    use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
    use ark_ff::{BigInteger, UniformRand};

    type C = ark_bls12_377::g1::Config;

    /// x^3 + b has a root in F_p (p = 1 mod 3) exactly when (-b)^((p - 1) / 3) = 1.
    fn cubic_has_root<F: ark_ff::PrimeField>(b: F) -> bool {
        let mut e = F::MODULUS;
        e.sub_with_borrow(&F::BigInt::from(1u64));
        // Long division of p - 1 by 3, most significant word first.
        let mut rem = 0u128;
        for w in e.as_mut().iter_mut().rev() {
            let cur = (rem << 64) | *w as u128;
            *w = (cur / 3) as u64;
            rem = cur % 3;
        }
        assert_eq!(rem, 0, "p = 1 mod 3");
        (-b).pow(e) == F::one()
    }

    #[test]
    fn two_torsion_of_every_group_issue_21_names() {
        use ark_ec::short_weierstrass::SWCurveConfig;
        let g1 = [
            has_two_torsion::<ark_bls12_377::g1::Config>(),
            has_two_torsion::<ark_bls12_381::g1::Config>(),
            has_two_torsion::<ark_bn254::g1::Config>(),
        ];
        let roots = [
            cubic_has_root(ark_bls12_377::g1::Config::COEFF_B),
            cubic_has_root(ark_bls12_381::g1::Config::COEFF_B),
            cubic_has_root(ark_bn254::g1::Config::COEFF_B),
        ];
        assert_eq!(g1, roots);
        assert_eq!(g1, [true, false, false]);
        let g2 = [
            has_two_torsion::<ark_bls12_377::g2::Config>(),
            has_two_torsion::<ark_bls12_381::g2::Config>(),
            has_two_torsion::<ark_bn254::g2::Config>(),
        ];
        assert_eq!(g2, [false, false, false]);
    }

    fn points() -> Vec<G1Projective> {
        let mut rng = ark_std::test_rng();
        let g = G1Projective::generator();
        let mut v = vec![G1Projective::zero(), g, -g, g.double(), g * -Fr::from(2u64)];
        v.extend((0..8).map(|_| g * Fr::rand(&mut rng)));
        v
    }

    fn run(prog: &[Step], p: [Fq; 4], q: &[Fq]) -> Option<G1Projective> {
        let mut r = [Fq::zero(); COUNT];
        r[..4].copy_from_slice(&p);
        r[4..4 + q.len()].copy_from_slice(q);
        interpret::<C>(prog, &mut r);
        from_extended([
            r[X3 as usize],
            r[Y3 as usize],
            r[Z3 as usize],
            r[T3 as usize],
        ])
    }

    #[test]
    fn constants_define_the_curve_and_the_map_round_trips() {
        let k = constants::<C>();
        assert_eq!(k.s.square() * Fq::from(3u64), Fq::one());
        assert_eq!(k.s * k.s_inv, Fq::one());
        // d is not zero or one (the curve is not singular) and k = 2d.
        assert!(!k.d.is_zero() && k.d != Fq::one());
        assert_eq!(k.k, k.d + k.d);
        for p in points() {
            let a = p.into_affine();
            let (x, y) = to_edwards(&a).expect("G1 maps");
            assert_eq!(
                -x.square() + y.square(),
                Fq::one() + k.d * x.square() * y.square()
            );
            assert_eq!(from_edwards(x, y), Some(a));
        }
        // The order-2 point (-1, 0) does not map.
        assert_eq!(
            to_edwards(&G1Affine::new_unchecked(-Fq::one(), Fq::zero())),
            None
        );
    }

    #[test]
    fn the_map_is_a_homomorphism() {
        // The affine Edwards law (a = -1) on images equals the image of the arkworks sum.
        let d = constants::<C>().d;
        let ps = points();
        for p in &ps {
            for q in &ps {
                let (x1, y1) = to_edwards(&p.into_affine()).unwrap();
                let (x2, y2) = to_edwards(&q.into_affine()).unwrap();
                let t = d * x1 * x2 * y1 * y2;
                let x3 = (x1 * y2 + y1 * x2) * (Fq::one() + t).inverse().unwrap();
                let y3 = (y1 * y2 + x1 * x2) * (Fq::one() - t).inverse().unwrap();
                assert_eq!(to_edwards(&(*p + q).into_affine()), Some((x3, y3)));
            }
        }
    }

    #[test]
    fn tables_match_arkworks_on_edge_cases() {
        let ps = points();
        for p in &ps {
            let ep = extended(p).unwrap();
            for q in ps.iter().chain([*p, -*p].iter()) {
                let sum = Some(*p + q);
                assert_eq!(run(ADD, ep, &extended(q).unwrap()), sum, "add");
                let pre = precomputed(&q.into_affine()).unwrap();
                assert_eq!(run(MADD, ep, &pre), sum, "mixed add");
            }
            assert_eq!(run(DOUBLE, ep, &[]), Some(p.double()), "double");
            // Projective inputs (Z != 1) give the same points.
            let z = Fq::from(7u64);
            let scaled = ep.map(|c| c * z);
            assert_eq!(run(DOUBLE, scaled, &[]), Some(p.double()));
            assert_eq!(
                run(ADD, scaled, &extended(&ps[1]).unwrap()),
                Some(*p + ps[1])
            );
        }
    }

    #[test]
    fn costs() {
        assert_eq!(mul_count(MADD), 7);
        assert_eq!(mul_count(ADD), 9);
        // The cost model weighs this profile's additions so.
        let te = crate::digits::AddCosts::EDWARDS;
        assert_eq!(
            (mul_count(ADD) as u64, mul_count(MADD) as u64),
            (te.add, te.mixed_add)
        );
        assert_eq!(mul_count(DOUBLE), 8);
        for prog in [MADD, ADD, DOUBLE] {
            for st in prog {
                assert!([st.dst, st.a, st.b].iter().all(|&r| (r as usize) < COUNT));
                assert_ne!(st.dst, K, "K is a constant");
            }
        }
        // The mixed addition reads no T2, the doubling no Q at all.
        assert!(MADD.iter().all(|s| s.a != T2 && s.b != T2));
        assert!(DOUBLE
            .iter()
            .all(|s| [s.a, s.b].iter().all(|r| ![X2, Y2, Z2, T2, K].contains(r))));
    }

    /// A point of order 2 other than (-1, 0): x^2 - x + 1 = 0, y = 0.
    pub(crate) fn other_order_two() -> G1Affine {
        let root = (-Fq::from(3u64))
            .sqrt()
            .expect("-3 is a square (p = 1 mod 3)");
        let x = (Fq::one() + root) * Fq::from(2u64).inverse().unwrap();
        let t = G1Affine::new_unchecked(x, Fq::zero());
        assert!(t.is_on_curve());
        t
    }

    #[test]
    fn outside_g1_the_exceptional_case_is_real_and_has_z_zero() {
        // P + Q with Q = -P + T, T of order 2 other than (-1, 0) (so not in G1): the sum T
        // lies at infinity on the Edwards model, and the formulas' Z3 vanishes, which the
        // shaders turn into poison.
        let p = G1Projective::generator() * Fr::from(5u64);
        let q = -p + other_order_two();
        let z3 = |prog: &[Step], b: &[Fq]| {
            let mut r = [Fq::zero(); COUNT];
            r[..4].copy_from_slice(&extended(&p).unwrap());
            r[4..4 + b.len()].copy_from_slice(b);
            interpret::<C>(prog, &mut r);
            r[Z3 as usize]
        };
        assert!(z3(ADD, &extended(&q).unwrap()).is_zero());
        assert!(z3(MADD, &precomputed(&q.into_affine()).unwrap()).is_zero());
        // P + (P + T): the difference T is at infinity, and that is exceptional too.
        assert!(z3(ADD, &extended(&(p + other_order_two())).unwrap()).is_zero());
        // Within G1 (P + 2P, P + P, P - P) Z3 does not vanish.
        for q in [p.double(), p, -p] {
            assert!(!z3(ADD, &extended(&q).unwrap()).is_zero());
        }
    }

    #[test]
    fn poisoned_values_absorb() {
        // (0 : 0 : 0 : 0) in, (0 : 0 : 0 : 0) out, whatever the other operand.
        let zero = [Fq::zero(); 4];
        let q = extended(&G1Projective::generator()).unwrap();
        for (prog, a, b) in [
            (ADD, zero, q.to_vec()),
            (ADD, q, zero.to_vec()),
            (
                MADD,
                zero,
                precomputed(&G1Affine::generator()).unwrap().to_vec(),
            ),
            (DOUBLE, zero, vec![]),
        ] {
            let mut r = [Fq::zero(); COUNT];
            r[..4].copy_from_slice(&a);
            r[4..4 + b.len()].copy_from_slice(&b);
            interpret::<C>(prog, &mut r);
            assert!(r[X3 as usize].is_zero() && r[Y3 as usize].is_zero());
            assert!(r[Z3 as usize].is_zero() && r[T3 as usize].is_zero());
        }
        // A poisoned precomputed base (0, 0, 0) gives X = Y = T = 0: off the curve.
        let mut r = [Fq::zero(); COUNT];
        r[..4].copy_from_slice(&q);
        interpret::<C>(MADD, &mut r);
        assert!(r[X3 as usize].is_zero() && r[Y3 as usize].is_zero());
        assert!(from_extended::<C>([
            r[X3 as usize],
            r[Y3 as usize],
            r[Z3 as usize],
            r[T3 as usize]
        ])
        .is_none());
    }
}
