//! The curve formulas as straight-line programs (step tables) over a small register file of
//! field elements. The `Limbs13` profile interprets them with one loop
//! (`shaders/curve_interp.wgsl`); the `Limbs29` profiles write them out as straight-line
//! WGSL generated from the same tables ([`crate::gpu::shader::profile`]).
//!
//! Why a program table and not inlined formulas: Mesa (and other drivers) inline every WGSL
//! function, so each `point_add` written out in full copies 12 Montgomery multiplications
//! into its caller. With several additions per stage the software Vulkan adapter spent
//! minutes compiling one pipeline of 13-bit limbs. Interpreting the formulas keeps one
//! multiplication, one addition and one subtraction per call site. The same programs run on the CPU in
//! [`interpret`], which the tests compare with arkworks.
//!
//! Formulas: Renes, Costello and Batina, "Complete addition formulas for prime order elliptic
//! curves" (2016), algorithms 7 (add), 8 (mixed add) and 9 (double) for a = 0, homogeneous
//! projective coordinates, over the coordinates' field (F_p on G1, F_p^2 on G2: the
//! shaders' `fe_*`). The tables below are templates: each multiplication by b3 = 3b is a
//! [`Op::MulB3`] step, which [`Formulas::of`] writes out as an addition chain where b is a
//! small integer (the G1s: BLS12-377's b3 = 3, two additions; BN254's 9 and BLS12-381's
//! 12, four), and as a multiplication by the constant register [`reg::B3`] where it is not
//! (the G2s: two more multiplications in an addition, one more in a doubling).

use ark_ff::Field;

/// A step's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// dst = a * b
    Mul = 0,
    /// dst = a + b
    Add = 1,
    /// dst = a - b
    Sub = 2,
    /// dst = b3 a, in the template tables only: [`Formulas::of`] replaces it with
    /// additions through the scratch register [`reg::S`], or a multiplication by
    /// [`reg::B3`].
    MulB3 = 3,
}

/// One step: `dst = a op b` over registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Operation.
    pub op: Op,
    /// Destination register.
    pub dst: u8,
    /// First operand register.
    pub a: u8,
    /// Second operand register.
    pub b: u8,
}

/// Registers: inputs P = (X1, Y1, Z1), Q = (X2, Y2, Z2), temporaries, output (X3, Y3, Z3).
pub mod reg {
    /// P.x
    pub const X1: u8 = 0;
    /// P.y
    pub const Y1: u8 = 1;
    /// P.z
    pub const Z1: u8 = 2;
    /// Q.x
    pub const X2: u8 = 3;
    /// Q.y
    pub const Y2: u8 = 4;
    /// Q.z (unused by the mixed addition)
    pub const Z2: u8 = 5;
    /// Temporaries t0..t4 of the paper.
    pub const T0: u8 = 6;
    /// t1
    pub const T1: u8 = 7;
    /// t2
    pub const T2: u8 = 8;
    /// t3
    pub const T3: u8 = 9;
    /// t4
    pub const T4: u8 = 10;
    /// Result x.
    pub const X3: u8 = 11;
    /// Result y.
    pub const Y3: u8 = 12;
    /// Result z.
    pub const Z3: u8 = 13;
    /// Scratch of the multiplications by b3 (their addition chains).
    pub const S: u8 = 14;
    /// Registers of the formulas where b is a small integer.
    pub const COUNT: usize = 15;
    /// The constant 3b, where b is not a small integer (the G2s): one register more.
    pub const B3: u8 = 15;
}

use reg::*;
use Op::*;

pub(crate) const fn s(op: Op, dst: u8, a: u8, b: u8) -> Step {
    Step { op, dst, a, b }
}

/// Complete addition P + Q (algorithm 7): 12 multiplications, 2 multiplications by b3.
pub const ADD_TEMPLATE: &[Step] = &[
    s(Mul, T0, X1, X2),
    s(Mul, T1, Y1, Y2),
    s(Mul, T2, Z1, Z2),
    s(Add, T3, X1, Y1),
    s(Add, T4, X2, Y2),
    s(Mul, T3, T3, T4),
    s(Add, T4, T0, T1),
    s(Sub, T3, T3, T4),
    s(Add, T4, Y1, Z1),
    s(Add, X3, Y2, Z2),
    s(Mul, T4, T4, X3),
    s(Add, X3, T1, T2),
    s(Sub, T4, T4, X3),
    s(Add, X3, X1, Z1),
    s(Add, Y3, X2, Z2),
    s(Mul, X3, X3, Y3),
    s(Add, Y3, T0, T2),
    s(Sub, Y3, X3, Y3),
    s(Add, X3, T0, T0),
    s(Add, T0, X3, T0),
    s(MulB3, T2, T2, T2),
    s(Add, Z3, T1, T2),
    s(Sub, T1, T1, T2),
    s(MulB3, Y3, Y3, Y3),
    s(Mul, X3, T4, Y3),
    s(Mul, T2, T3, T1),
    s(Sub, X3, T2, X3),
    s(Mul, Y3, Y3, T0),
    s(Mul, T1, T1, Z3),
    s(Add, Y3, T1, Y3),
    s(Mul, T0, T0, T3),
    s(Mul, Z3, Z3, T4),
    s(Add, Z3, Z3, T0),
];

/// Mixed addition P + Q with Q = (X2, Y2, 1) not the identity (algorithm 8):
/// 11 multiplications, 2 multiplications by b3.
pub const ADD_MIXED_TEMPLATE: &[Step] = &[
    s(Mul, T0, X1, X2),
    s(Mul, T1, Y1, Y2),
    s(Add, T3, X2, Y2),
    s(Add, T4, X1, Y1),
    s(Mul, T3, T3, T4),
    s(Add, T4, T0, T1),
    s(Sub, T3, T3, T4),
    s(Mul, T4, Y2, Z1),
    s(Add, T4, T4, Y1),
    s(Mul, Y3, X2, Z1),
    s(Add, Y3, Y3, X1),
    s(Add, X3, T0, T0),
    s(Add, T0, X3, T0),
    s(MulB3, T2, Z1, Z1),
    s(Add, Z3, T1, T2),
    s(Sub, T1, T1, T2),
    s(MulB3, Y3, Y3, Y3),
    s(Mul, X3, T4, Y3),
    s(Mul, T2, T3, T1),
    s(Sub, X3, T2, X3),
    s(Mul, Y3, Y3, T0),
    s(Mul, T1, T1, Z3),
    s(Add, Y3, T1, Y3),
    s(Mul, T0, T0, T3),
    s(Mul, Z3, Z3, T4),
    s(Add, Z3, Z3, T0),
];

/// Doubling 2P (algorithm 9): 6 multiplications, 2 squarings, 1 multiplication by b3.
pub const DOUBLE_TEMPLATE: &[Step] = &[
    s(Mul, T0, Y1, Y1),
    s(Add, Z3, T0, T0),
    s(Add, Z3, Z3, Z3),
    s(Add, Z3, Z3, Z3),
    s(Mul, T1, Y1, Z1),
    s(Mul, T2, Z1, Z1),
    s(MulB3, T2, T2, T2),
    s(Mul, X3, T2, Z3),
    s(Add, Y3, T0, T2),
    s(Mul, Z3, T1, Z3),
    s(Add, T1, T2, T2),
    s(Add, T2, T1, T2),
    s(Sub, T0, T0, T2),
    s(Mul, Y3, T0, Y3),
    s(Add, Y3, X3, Y3),
    s(Mul, T1, X1, Y1),
    s(Mul, X3, T0, T1),
    s(Add, X3, X3, X3),
];

/// A curve's formulas: the templates with each multiplication by b3 written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Formulas {
    /// P + Q.
    pub add: Vec<Step>,
    /// P + Q, Q affine and not the identity.
    pub add_mixed: Vec<Step>,
    /// 2P.
    pub double: Vec<Step>,
    /// Registers the programs use: [`reg::COUNT`], one more where [`reg::B3`] holds 3b.
    pub registers: usize,
}

impl Formulas {
    /// The formulas of y^2 = x^3 + b for a small integer b: the multiplications by 3b are
    /// addition chains.
    pub fn for_b(b: u64) -> Formulas {
        Formulas::expand(reg::COUNT, |st| times(3 * b, st.dst, st.a))
    }

    /// The formulas of y^2 = x^3 + b for any b: each multiplication by 3b multiplies by
    /// the constant register [`reg::B3`], which the caller loads with 3b.
    pub fn for_any_b() -> Formulas {
        Formulas::expand(reg::COUNT + 1, |st| vec![s(Mul, st.dst, st.a, reg::B3)])
    }

    fn expand(registers: usize, mul_b3: impl Fn(&Step) -> Vec<Step>) -> Formulas {
        let expand = |t: &[Step]| -> Vec<Step> {
            t.iter()
                .flat_map(|st| match st.op {
                    MulB3 => mul_b3(st),
                    _ => vec![*st],
                })
                .collect()
        };
        Formulas {
            add: expand(ADD_TEMPLATE),
            add_mixed: expand(ADD_MIXED_TEMPLATE),
            double: expand(DOUBLE_TEMPLATE),
            registers,
        }
    }

    /// The formulas of the curve group the spec describes.
    pub fn of(curve: &crate::curve::CurveSpec) -> Formulas {
        match curve.b_small {
            Some(b) => Formulas::for_b(b),
            None => Formulas::for_any_b(),
        }
    }

    /// Whether [`reg::B3`] holds 3b.
    pub fn has_b3_register(&self) -> bool {
        self.registers > reg::COUNT
    }
}

/// dst = k a (k >= 2) by doubling and adding, most significant bit first, through the
/// scratch register S; only the last step writes dst, so dst may be a.
fn times(k: u64, dst: u8, a: u8) -> Vec<Step> {
    assert!(k >= 2, "b3 = 3b is at least 3");
    let mut steps = Vec::new();
    let mut acc = a;
    for i in (0..63 - k.leading_zeros()).rev() {
        steps.push(s(Add, S, acc, acc));
        acc = S;
        if k >> i & 1 == 1 {
            steps.push(s(Add, S, S, a));
        }
    }
    steps.last_mut().expect("k >= 2").dst = dst;
    steps
}

/// Number of multiplications in a program (the cost the comments quote).
pub fn mul_count(program: &[Step]) -> usize {
    program.iter().filter(|s| s.op == Mul).count()
}

/// One step as the shaders read it: op | dst << 8 | a << 16 | b << 24.
pub fn encode(step: &Step) -> u32 {
    assert!(
        step.op != MulB3,
        "tables are written out before they are encoded"
    );
    step.op as u32 | (step.dst as u32) << 8 | (step.a as u32) << 16 | (step.b as u32) << 24
}

/// WGSL constants: the concatenated program table and each program's start and length.
pub fn wgsl_programs(f: &Formulas) -> String {
    let programs = [
        ("ADD", &f.add),
        ("ADD_MIXED", &f.add_mixed),
        ("DOUBLE", &f.double),
    ];
    let mut table = Vec::new();
    let mut out = String::new();
    for (name, prog) in programs {
        out += &format!("const PROG_{name}_START: u32 = {}u;\n", table.len());
        out += &format!("const PROG_{name}_LEN: u32 = {}u;\n", prog.len());
        table.extend(prog.iter().map(encode));
    }
    let words: Vec<String> = table.iter().map(|w| format!("{w}u")).collect();
    out += &format!("const NUM_REGS: u32 = {}u;\n", f.registers);
    out += &format!("const PROGRAM_WORDS: u32 = {}u;\n", table.len());
    out += &format!(
        "const PROGRAM: array<u32, {}> = array<u32, {}>({});\n",
        table.len(),
        table.len(),
        words.join(", ")
    );
    out
}

/// The registers a point program starts from: P in X1, Y1, Z1, Q (`q`: its coordinates'
/// expressions) in X2, Y2, Z2, and 3b in [`reg::B3`] where the formulas multiply by it.
pub(crate) fn program_inputs(f: &Formulas, q: [String; 3]) -> Vec<(u8, String)> {
    let p = ["p.x", "p.y", "p.z"].map(String::from);
    let mut inputs: Vec<(u8, String)> = [X1, Y1, Z1, X2, Y2, Z2]
        .into_iter()
        .zip(p.into_iter().chain(q))
        .collect();
    if f.has_b3_register() {
        inputs.push((reg::B3, "CURVE_B3".into()));
    }
    inputs
}

/// The interpreter's entry (after `shaders/curve_interp.wgsl`): `point_program` loads P, Q
/// and the constants into the registers, runs a program of the table, and returns the
/// point it leaves in X3, Y3, Z3.
pub fn wgsl_interpreter_entry(f: &Formulas) -> String {
    let q = ["q.x", "q.y", "q.z"].map(String::from);
    let mut out = String::from(
        "// Generated by src/gpu/shader/program.rs: P, Q and the constants in, the sum out.\n\
         fn point_program(p: Point, q: Point, start: u32, len: u32) -> Point {\n    var r: Regs;\n",
    );
    for (r, e) in program_inputs(f, q) {
        out += &format!("    r[{r}] = {e};\n");
    }
    out += "    run_program(&r, start, len);\n";
    out + &format!("    return Point(r[{X3}], r[{Y3}], r[{Z3}]);\n}}\n")
}

/// Runs a program on the CPU over arkworks field elements, as the shaders do (the registers
/// of the program's table: [`reg::COUNT`] here, [`super::edwards::reg::COUNT`] for Edwards).
pub fn interpret<F: Field>(program: &[Step], regs: &mut [F]) {
    for st in program {
        let (a, b) = (regs[st.a as usize], regs[st.b as usize]);
        regs[st.dst as usize] = match st.op {
            Mul => a * b,
            Add => a + b,
            Sub => a - b,
            MulB3 => panic!("tables are written out before they run"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_ec::short_weierstrass::{Affine, Projective, SWCurveConfig};
    use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
    use ark_ff::{One, UniformRand, Zero};

    /// (X : Y : Z) homogeneous for a Jacobian arkworks point.
    fn homogeneous<P: SWCurveConfig>(p: &Projective<P>) -> [P::BaseField; 3] {
        if p.is_zero() {
            [
                P::BaseField::zero(),
                P::BaseField::one(),
                P::BaseField::zero(),
            ]
        } else {
            [p.x * p.z, p.y, p.z.square() * p.z]
        }
    }

    fn to_affine<P: SWCurveConfig>(h: [P::BaseField; 3]) -> Affine<P> {
        if h[2].is_zero() {
            assert!(h[0].is_zero() && !h[1].is_zero(), "bad identity {h:?}");
            return Affine::identity();
        }
        let zi = h[2].inverse().unwrap();
        let p = Affine::new_unchecked(h[0] * zi, h[1] * zi);
        assert!(p.is_on_curve());
        p
    }

    /// Runs a program with P, Q and, where the formulas have one, the register of 3b.
    fn run<P: SWCurveConfig>(
        f: &Formulas,
        prog: &[Step],
        p: [P::BaseField; 3],
        q: [P::BaseField; 3],
    ) -> [P::BaseField; 3] {
        let mut r = vec![P::BaseField::zero(); f.registers];
        r[..3].copy_from_slice(&p);
        r[3..6].copy_from_slice(&q);
        if f.has_b3_register() {
            r[reg::B3 as usize] = P::COEFF_B * P::BaseField::from(3u64);
        }
        interpret(prog, &mut r);
        [
            r[reg::X3 as usize],
            r[reg::Y3 as usize],
            r[reg::Z3 as usize],
        ]
    }

    fn points<P: SWCurveConfig>() -> Vec<Projective<P>> {
        let mut rng = ark_std::test_rng();
        let g = Projective::<P>::generator();
        let mut v = vec![Projective::zero(), g, -g, g.double()];
        v.extend((0..6).map(|_| g * P::ScalarField::rand(&mut rng)));
        v
    }

    fn programs_match_arkworks<P: crate::curve::GpuCurve>() {
        let f = Formulas::of(P::spec());
        let ps = points::<P>();
        let one = P::BaseField::one();
        for p in &ps {
            // Mixed addition never sees an affine identity.
            for q in &ps {
                let sum = (*p + q).into_affine();
                assert_eq!(
                    to_affine::<P>(run::<P>(&f, &f.add, homogeneous(p), homogeneous(q))),
                    sum
                );
                if !q.is_zero() {
                    let qa = q.into_affine();
                    let got = run::<P>(&f, &f.add_mixed, homogeneous(p), [qa.x, qa.y, one]);
                    assert_eq!(to_affine::<P>(got), sum);
                }
            }
            for q in [*p, -*p] {
                let sum = (*p + q).into_affine();
                assert_eq!(
                    to_affine::<P>(run::<P>(&f, &f.add, homogeneous(p), homogeneous(&q))),
                    sum
                );
            }
            let d = run::<P>(&f, &f.double, homogeneous(p), [P::BaseField::zero(); 3]);
            assert_eq!(to_affine::<P>(d), p.double().into_affine());
        }
    }

    #[test]
    fn programs_match_arkworks_on_edge_cases_of_each_curve() {
        programs_match_arkworks::<ark_bls12_377::g1::Config>();
        programs_match_arkworks::<ark_bls12_381::g1::Config>();
        programs_match_arkworks::<ark_bn254::g1::Config>();
        // The G2s, over F_p^2, multiply by the register of 3b.
        programs_match_arkworks::<ark_bls12_377::g2::Config>();
        programs_match_arkworks::<ark_bls12_381::g2::Config>();
        programs_match_arkworks::<ark_bn254::g2::Config>();
        let g2 = Formulas::of(<ark_bn254::g2::Config as crate::curve::GpuCurve>::spec());
        assert_eq!(g2.registers, reg::COUNT + 1);
        assert_eq!(
            (
                mul_count(&g2.add),
                mul_count(&g2.add_mixed),
                mul_count(&g2.double)
            ),
            (14, 13, 9)
        );
    }

    #[test]
    fn b3_chains() {
        for (b, adds) in [(1u64, 2usize), (3, 4), (4, 4), (5, 6)] {
            let steps = times(3 * b, reg::T2, reg::T2);
            assert_eq!(steps.len(), adds, "b = {b}");
            assert!(steps.iter().all(|s| s.op == Add));
            let mut r = [ark_bn254::Fq::zero(); reg::COUNT];
            r[reg::T2 as usize] = ark_bn254::Fq::from(7u64);
            interpret(&steps, &mut r);
            assert_eq!(r[reg::T2 as usize], ark_bn254::Fq::from(21 * b));
        }
        // BLS12-377 (b3 = 3) keeps the two additions it was written with.
        let f = Formulas::for_b(1);
        assert_eq!(f.add.len(), ADD_TEMPLATE.len() + 2);
    }

    #[test]
    fn program_costs_and_registers() {
        let f = Formulas::for_b(1);
        assert_eq!(mul_count(&f.add), 12);
        assert_eq!(mul_count(&f.add_mixed), 11);
        // The cost model weighs these profiles' additions so.
        let rcb = crate::digits::AddCosts::RCB;
        assert_eq!(mul_count(&f.add) as u64, rcb.add);
        assert_eq!(mul_count(&f.add_mixed) as u64, rcb.mixed_add);
        assert_eq!(mul_count(&f.double), 8);
        for prog in [&f.add, &f.add_mixed, &f.double] {
            for st in prog {
                for r in [st.dst, st.a, st.b] {
                    assert!((r as usize) < reg::COUNT);
                }
            }
        }
        // The mixed addition reads Q's z nowhere.
        assert!(f.add_mixed.iter().all(|s| s.a != reg::Z2 && s.b != reg::Z2));
    }
}
