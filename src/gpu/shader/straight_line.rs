//! The step tables written out as straight-line WGSL functions (the wide profiles'
//! formulas: no loop, nothing indexed or chosen at run time), in [`schedule`]'s order: the
//! short Weierstrass formulas here ([`wgsl_straight_line`]), the Edwards ones in
//! `edwards.rs` through [`straight_line_fn`].

use super::program::reg::{X3, Y3, Z3};
use super::program::{program_inputs, Formulas, Op, Step};
use super::schedule::schedule;

/// The field a written-out program's registers and steps are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepField {
    /// F_p: `Fp`, `fp_*`.
    Prime,
    /// The coordinates' field: `Fe`, `fe_*` (`element.rs`).
    Coordinates,
}

/// One program as a WGSL function `name(args) -> Point`: `inputs` give the registers'
/// initial values, the steps come in [`schedule`]'s order as one `let` each (a product of a
/// register by itself as a square), and `ret(outputs)` is the returned expression over the
/// registers left in `outputs`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn straight_line_fn(
    name: &str,
    args: &str,
    inputs: &[(u8, String)],
    count: usize,
    field: StepField,
    program: &[Step],
    outputs: &[u8],
    ret: impl Fn(&[String]) -> String,
) -> String {
    let prefix = match field {
        StepField::Prime => "fp",
        StepField::Coordinates => "fe",
    };
    let regs: Vec<u8> = inputs.iter().map(|(r, _)| *r).collect();
    let s = schedule(program, count, &regs, outputs);
    let mut out = format!("fn {name}({args}) -> Point {{\n");
    for (r, v) in inputs {
        out += &format!("    let r{r} = {v};\n");
    }
    for st in &s.steps {
        let (dst, a, b) = (st.dst, st.a, st.b);
        out += &match st.op {
            // A square has steps of its own (fewer products: `mul29.rs`, `element_fp2.wgsl`).
            Op::Mul if a == b => format!("    let r{dst} = {prefix}_square(r{a});\n"),
            Op::Mul => format!("    let r{dst} = {prefix}_mul(r{a}, r{b});\n"),
            Op::Add => format!("    let r{dst} = {prefix}_add(r{a}, r{b});\n"),
            Op::Sub => format!("    let r{dst} = {prefix}_sub(r{a}, r{b});\n"),
            Op::MulB3 => panic!("tables are written out before they are emitted"),
        };
    }
    let names: Vec<String> = s.outputs.iter().map(|r| format!("r{r}")).collect();
    out + &format!("    return {};\n}}\n\n", ret(&names))
}

/// The programs written out as WGSL functions `point_add`, `point_add_mixed` and
/// `point_double` (the wide profile's straight-line formulas): one statement per step, in
/// the order of `schedule.rs` (fewest values live), so that nothing is indexed or chosen at
/// run time. Same table as the interpreter. On a G1 the statements call `fp_*` (the
/// coordinates' field is F_p), on a G2 `fe_*`.
pub fn wgsl_straight_line(curve: &crate::curve::CurveSpec) -> String {
    let f = Formulas::of(curve);
    let field = match curve.degree() {
        1 => StepField::Prime,
        _ => StepField::Coordinates,
    };
    let mut out = String::from(
        "// Generated from the step tables of src/gpu/shader/program.rs: the curve formulas written out.\n",
    );
    let point = |p: &str| [format!("{p}.x"), format!("{p}.y"), format!("{p}.z")];
    let functions: [(&str, &str, &[Step], [String; 3]); 3] = [
        ("point_add", "p: Point, q: Point", &f.add, point("q")),
        (
            "point_add_mixed",
            "p: Point, q: Affine",
            &f.add_mixed,
            ["q.x".into(), "q.y".into(), "FE_ONE".into()],
        ),
        ("point_double", "p: Point", &f.double, point("p")),
    ];
    let ret = |r: &[String]| format!("Point({})", r.join(", "));
    for (name, args, prog, q) in functions {
        let inputs = program_inputs(&f, q);
        let (count, out_regs) = (f.registers, [X3, Y3, Z3]);
        out += &straight_line_fn(name, args, &inputs, count, field, prog, &out_regs, ret);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::program::mul_count;

    #[test]
    fn straight_line_functions_follow_the_tables() {
        use crate::curve::GpuCurve;
        let g1 = <ark_bls12_381::g1::Config as GpuCurve>::spec();
        let g2 = <ark_bls12_381::g2::Config as GpuCurve>::spec();
        for (curve, prefix) in [(g1, " = fp_"), (g2, " = fe_")] {
            let f = Formulas::of(curve);
            let w = wgsl_straight_line(curve);
            for (name, prog) in [
                ("point_add", &f.add),
                ("point_add_mixed", &f.add_mixed),
                ("point_double", &f.double),
            ] {
                let body = w.split(&format!("fn {name}(")).nth(1).expect(name);
                let body = body.split("\n}").next().unwrap();
                let mul = format!("{prefix}mul(");
                let square = format!("{prefix}square(");
                let squares = prog
                    .iter()
                    .filter(|s| s.op == Op::Mul && s.a == s.b)
                    .count();
                assert_eq!(
                    body.matches(&mul[3..]).count(),
                    mul_count(prog) - squares,
                    "{name}"
                );
                assert_eq!(body.matches(&square[3..]).count(), squares, "{name}");
                assert_eq!(body.matches(prefix).count(), prog.len(), "{name}");
            }
            assert_eq!(w.contains("CURVE_B3"), f.has_b3_register());
        }
    }
}
