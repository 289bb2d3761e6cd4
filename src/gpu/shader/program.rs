//! The curve formulas as straight-line programs (step tables) over a small register file of
//! field elements. The `Limbs13` profile interprets them with one loop
//! (`shaders/curve_interp.wgsl`); the `Limbs32` profiles write them out as straight-line
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
//! projective coordinates, b3 = 3b = 3.

use ark_bls12_377::Fq;

/// A step's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// dst = a * b
    Mul = 0,
    /// dst = a + b
    Add = 1,
    /// dst = a - b
    Sub = 2,
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
    /// Scratch for multiplications by b3 (two additions).
    pub const S: u8 = 14;
    /// Number of registers.
    pub const COUNT: usize = 15;
}

use reg::*;
use Op::*;

pub(crate) const fn s(op: Op, dst: u8, a: u8, b: u8) -> Step {
    Step { op, dst, a, b }
}

/// Complete addition P + Q (algorithm 7): 12 multiplications, 2 multiplications by b3.
pub const ADD: &[Step] = &[
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
    s(Add, S, T2, T2), // t2 = b3 * t2
    s(Add, T2, S, T2),
    s(Add, Z3, T1, T2),
    s(Sub, T1, T1, T2),
    s(Add, S, Y3, Y3), // Y3 = b3 * Y3
    s(Add, Y3, S, Y3),
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
pub const ADD_MIXED: &[Step] = &[
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
    s(Add, S, Z1, Z1), // t2 = b3 * Z1
    s(Add, T2, S, Z1),
    s(Add, Z3, T1, T2),
    s(Sub, T1, T1, T2),
    s(Add, S, Y3, Y3), // Y3 = b3 * Y3
    s(Add, Y3, S, Y3),
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
pub const DOUBLE: &[Step] = &[
    s(Mul, T0, Y1, Y1),
    s(Add, Z3, T0, T0),
    s(Add, Z3, Z3, Z3),
    s(Add, Z3, Z3, Z3),
    s(Mul, T1, Y1, Z1),
    s(Mul, T2, Z1, Z1),
    s(Add, S, T2, T2), // t2 = b3 * t2
    s(Add, T2, S, T2),
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

/// Number of multiplications in a program (the cost the comments quote).
pub fn mul_count(program: &[Step]) -> usize {
    program.iter().filter(|s| s.op == Mul).count()
}

/// One step as the shaders read it: op | dst << 8 | a << 16 | b << 24.
pub fn encode(step: &Step) -> u32 {
    step.op as u32 | (step.dst as u32) << 8 | (step.a as u32) << 16 | (step.b as u32) << 24
}

/// WGSL constants: the concatenated program table and each program's start and length.
pub fn wgsl_programs() -> String {
    let programs = [("ADD", ADD), ("ADD_MIXED", ADD_MIXED), ("DOUBLE", DOUBLE)];
    let mut table = Vec::new();
    let mut out = String::new();
    for (name, prog) in programs {
        out += &format!("const PROG_{name}_START: u32 = {}u;\n", table.len());
        out += &format!("const PROG_{name}_LEN: u32 = {}u;\n", prog.len());
        table.extend(prog.iter().map(encode));
    }
    let words: Vec<String> = table.iter().map(|w| format!("{w}u")).collect();
    out += &format!("const NUM_REGS: u32 = {}u;\n", reg::COUNT);
    for (name, r) in REG_NAMES {
        out += &format!("const REG_{name}: u32 = {r}u;\n");
    }
    out += &format!("const PROGRAM_WORDS: u32 = {}u;\n", table.len());
    out += &format!(
        "const PROGRAM: array<u32, {}> = array<u32, {}>({});\n",
        table.len(),
        table.len(),
        words.join(", ")
    );
    out
}

/// The registers the shaders name: inputs and outputs of a point program.
const REG_NAMES: [(&str, u8); 9] = [
    ("X1", X1),
    ("Y1", Y1),
    ("Z1", Z1),
    ("X2", X2),
    ("Y2", Y2),
    ("Z2", Z2),
    ("X3", X3),
    ("Y3", Y3),
    ("Z3", Z3),
];

/// The programs written out as WGSL functions `point_add`, `point_add_mixed` and
/// `point_double` (the wide profile's straight-line formulas): one statement per step over
/// local registers `rK`, so that nothing is indexed or chosen at run time. Same table, same
/// register numbers as the interpreter.
pub fn wgsl_straight_line() -> String {
    let mut out = String::from(
        "// Generated from the step tables of src/gpu/shader/program.rs: the curve formulas written out.\n",
    );
    let point = |p: &str| [format!("{p}.x"), format!("{p}.y"), format!("{p}.z")];
    let functions: [(&str, &str, &[Step], [String; 3]); 3] = [
        ("point_add", "p: Point, q: Point", ADD, point("q")),
        (
            "point_add_mixed",
            "p: Point, q: Affine",
            ADD_MIXED,
            ["q.x".into(), "q.y".into(), "FP_ONE".into()],
        ),
        ("point_double", "p: Point", DOUBLE, point("p")),
    ];
    let ret = format!("Point(r{X3}, r{Y3}, r{Z3})");
    for (name, args, prog, q) in functions {
        let inputs: Vec<(u8, String)> = [X1, Y1, Z1, X2, Y2, Z2]
            .into_iter()
            .zip(point("p").into_iter().chain(q))
            .collect();
        out += &straight_line_fn(name, args, &inputs, reg::COUNT, prog, &ret);
    }
    out
}

/// One program as a WGSL function: registers `r0 .. r{count-1}` as locals, `inputs` give
/// the initial values of some, one statement per step, then `return {ret};`.
pub(crate) fn straight_line_fn(
    name: &str,
    args: &str,
    inputs: &[(u8, String)],
    count: usize,
    program: &[Step],
    ret: &str,
) -> String {
    let mut out = format!("fn {name}({args}) -> Point {{\n");
    for r in 0..count as u8 {
        match inputs.iter().find(|(i, _)| *i == r) {
            Some((_, v)) => out += &format!("    var r{r} = {v};\n"),
            None => out += &format!("    var r{r}: Fp;\n"),
        }
    }
    for st in program {
        let f = match st.op {
            Mul => "fp_mul",
            Add => "fp_add",
            Sub => "fp_sub",
        };
        out += &format!("    r{} = {f}(r{}, r{});\n", st.dst, st.a, st.b);
    }
    out + &format!("    return {ret};\n}}\n\n")
}

/// Runs a program on the CPU over arkworks field elements, as the shaders do (the registers
/// of the program's table: [`reg::COUNT`] here, [`super::edwards::reg::COUNT`] for Edwards).
pub fn interpret(program: &[Step], regs: &mut [Fq]) {
    for st in program {
        let (a, b) = (regs[st.a as usize], regs[st.b as usize]);
        regs[st.dst as usize] = match st.op {
            Mul => a * b,
            Add => a + b,
            Sub => a - b,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ark_bls12_377::{Fr, G1Affine, G1Projective};
    use ark_ec::{AdditiveGroup, CurveGroup, PrimeGroup};
    use ark_ff::{Field, One, UniformRand, Zero};

    /// (X : Y : Z) homogeneous for a Jacobian arkworks point.
    fn homogeneous(p: &G1Projective) -> [Fq; 3] {
        if p.is_zero() {
            [Fq::zero(), Fq::one(), Fq::zero()]
        } else {
            [p.x * p.z, p.y, p.z.square() * p.z]
        }
    }

    fn to_affine(h: [Fq; 3]) -> G1Affine {
        if h[2].is_zero() {
            assert!(h[0].is_zero() && !h[1].is_zero(), "bad identity {h:?}");
            return G1Affine::identity();
        }
        let zi = h[2].inverse().unwrap();
        let p = G1Affine::new_unchecked(h[0] * zi, h[1] * zi);
        assert!(p.is_on_curve());
        p
    }

    fn run(prog: &[Step], p: [Fq; 3], q: [Fq; 3]) -> [Fq; 3] {
        let mut r = [Fq::zero(); reg::COUNT];
        r[..3].copy_from_slice(&p);
        r[3..6].copy_from_slice(&q);
        interpret(prog, &mut r);
        [
            r[reg::X3 as usize],
            r[reg::Y3 as usize],
            r[reg::Z3 as usize],
        ]
    }

    fn points() -> Vec<G1Projective> {
        let mut rng = ark_std::test_rng();
        let g = G1Projective::generator();
        let mut v = vec![G1Projective::zero(), g, -g, g.double()];
        v.extend((0..6).map(|_| g * Fr::rand(&mut rng)));
        v
    }

    #[test]
    fn programs_match_arkworks_on_edge_cases() {
        let ps = points();
        for p in &ps {
            // Mixed addition never sees an affine identity.
            for q in &ps {
                let sum = (*p + q).into_affine();
                assert_eq!(to_affine(run(ADD, homogeneous(p), homogeneous(q))), sum);
                if !q.is_zero() {
                    let qa = q.into_affine();
                    let got = run(ADD_MIXED, homogeneous(p), [qa.x, qa.y, Fq::one()]);
                    assert_eq!(to_affine(got), sum);
                }
            }
            for q in [*p, -*p] {
                let sum = (*p + q).into_affine();
                assert_eq!(to_affine(run(ADD, homogeneous(p), homogeneous(&q))), sum);
            }
            let d = run(DOUBLE, homogeneous(p), [Fq::zero(); 3]);
            assert_eq!(to_affine(d), p.double().into_affine());
        }
    }

    #[test]
    fn straight_line_functions_follow_the_tables() {
        let w = wgsl_straight_line();
        for (name, prog) in [
            ("point_add", ADD),
            ("point_add_mixed", ADD_MIXED),
            ("point_double", DOUBLE),
        ] {
            let body = w.split(&format!("fn {name}(")).nth(1).expect(name);
            let body = body.split("\n}").next().unwrap();
            assert_eq!(body.matches("fp_mul(").count(), mul_count(prog), "{name}");
            assert_eq!(body.matches(" = fp_").count(), prog.len(), "{name}");
        }
    }

    #[test]
    fn program_costs_and_registers() {
        assert_eq!(mul_count(ADD), 12);
        assert_eq!(mul_count(ADD_MIXED), 11);
        // The cost model weighs these profiles' additions so.
        let rcb = crate::digits::AddCosts::RCB;
        assert_eq!(mul_count(ADD) as u64, rcb.add);
        assert_eq!(mul_count(ADD_MIXED) as u64, rcb.mixed_add);
        assert_eq!(mul_count(DOUBLE), 8);
        for prog in [ADD, ADD_MIXED, DOUBLE] {
            for st in prog {
                for r in [st.dst, st.a, st.b] {
                    assert!((r as usize) < reg::COUNT);
                }
            }
        }
        // The mixed addition reads Q's z nowhere.
        assert!(ADD_MIXED.iter().all(|s| s.a != reg::Z2 && s.b != reg::Z2));
    }
}
