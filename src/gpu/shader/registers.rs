//! Registers per thread of the hottest loop, `accumulate_balanced`'s mixed addition, estimated
//! from what the generated code is written from: the step table of the profile's formula and
//! the multiplier's step list ([`mul29::program`]), which the emitters write out statement for
//! statement. Every value is held from its definition to its last use, in 32-bit registers (a
//! limb of 29 bits takes one, the u64 accumulator and a 64-bit product two each).
//!
//! An estimate, not the compiler's allocation: a compiler may reorder the statements, keep
//! constants as immediates or spill, and the count leaves out `point_checked`, the entry's
//! decoding and address arithmetic. It states what the written order asks for, and shows
//! what a change to the kernel or the formulas saves (`examples/op_counts.rs` prints it).

use super::field::Arithmetic;
use super::mul29::{self, Step as MulStep};
use super::program::{Op, Step};
use super::{edwards, program};

/// 32-bit registers of one field element in the wide profiles: 13 limbs of 29 bits.
pub const FP_REGS: u32 = mul29::LIMBS as u32;

/// The accumulation loop's own words besides the point it sums: the thread, the item count,
/// the entry index and end, the run's key and the head's key (`shaders/balanced.wgsl`).
pub const LOOP_WORDS: u32 = 6;

/// The most 32-bit words live at once inside one `fp_mul`, or with `square` one
/// `fp_square` (its own steps: one operand, and the doubled limbs 2 a_i of its cross
/// products, each live from the start to its last product). `keep_a` and `keep_b`: the
/// caller uses that operand after the product, so none of its limbs dies inside.
pub fn mul_peak(keep_a: bool, keep_b: bool, square: bool) -> u32 {
    let f = mul29::bls12_377();
    let steps = if square {
        f.square_program()
    } else {
        f.program()
    };
    let n = mul29::LIMBS;
    let (mut last_a, mut last_b, mut last_m) = (vec![0; n], vec![0; n], vec![0; n]);
    let mut last_d: Vec<Option<usize>> = vec![None; n];
    let (mut made_m, mut out_r) = (vec![usize::MAX; n], vec![usize::MAX; n]);
    for (s, step) in steps.iter().enumerate() {
        match *step {
            MulStep::Ab(i, j) => (last_a[i], last_b[j]) = (s, s),
            MulStep::Cross(i, j) => (last_d[i], last_a[j]) = (Some(s), s),
            MulStep::Mp(i, _) => last_m[i] = s,
            MulStep::MakeM(k) => made_m[k] = s,
            MulStep::Out(k) => out_r[k] = s,
            MulStep::Shift => {}
        }
    }
    if square {
        for i in 0..n {
            last_a[i] = last_a[i].max(last_b[i]);
        }
    }
    let live = |last: &[usize], keep: bool, s: usize| -> u32 {
        last.iter().filter(|&&l| keep || s <= l).count() as u32
    };
    let doubled = |s: usize| last_d.iter().filter(|l| l.is_some_and(|l| s <= l)).count() as u32;
    (0..steps.len())
        .map(|s| {
            let operands = if square {
                live(&last_a, keep_a || keep_b, s) + doubled(s)
            } else {
                live(&last_a, keep_a, s) + live(&last_b, keep_b, s)
            };
            let m = (0..n).filter(|&k| made_m[k] <= s && s <= last_m[k]).count() as u32;
            let r = out_r.iter().filter(|&&o| o <= s).count() as u32;
            let product = match steps[s] {
                MulStep::Ab(..) | MulStep::Cross(..) | MulStep::Mp(..) => 2,
                _ => 0,
            };
            operands + m + r + 2 + product
        })
        .max()
        .unwrap_or(0)
}

/// The most 32-bit words live at once in a straight-line formula: `inputs` are live on entry
/// (until their last use), the final values of `outputs` until the end. A product counts the
/// values live across it and [`mul_peak`]; an addition or subtraction its operands, the
/// values live across it, its result and a carry.
pub fn formula_peak(program: &[Step], inputs: &[u8], outputs: &[u8]) -> u32 {
    // Each value: its register and (definition, last use); inputs are defined at "step -1".
    struct Value {
        reg: u8,
        def: isize,
        last: isize,
    }
    let mut values: Vec<Value> = inputs
        .iter()
        .map(|&reg| Value {
            reg,
            def: -1,
            last: -1,
        })
        .collect();
    let current = |values: &Vec<Value>, reg: u8| -> usize {
        values
            .iter()
            .rposition(|v| v.reg == reg)
            .unwrap_or_else(|| panic!("register {reg} read before it is written"))
    };
    let mut operands = Vec::new();
    for (i, step) in program.iter().enumerate() {
        let (a, b) = (current(&values, step.a), current(&values, step.b));
        values[a].last = i as isize;
        values[b].last = i as isize;
        operands.push((a, b));
        values.push(Value {
            reg: step.dst,
            def: i as isize,
            last: i as isize,
        });
    }
    let end = program.len() as isize;
    for &reg in outputs {
        let v = current(&values, reg);
        values[v].last = end;
    }
    let across = |i: isize, skip: &[usize]| -> u32 {
        (values.iter().enumerate())
            .filter(|(k, v)| v.def < i && v.last > i && !skip.contains(k))
            .count() as u32
    };
    (program.iter().zip(&operands).enumerate())
        .map(|(i, (step, &(a, b)))| {
            let i = i as isize;
            match step.op {
                Op::Mul => {
                    let keep = |v: usize| values[v].last > i;
                    FP_REGS * across(i, &[a, b]) + mul_peak(keep(a), keep(b), a == b)
                }
                Op::MulB3 => unreachable!("tables are written out before they are measured"),
                Op::Add | Op::Sub => {
                    let ops = if a == b { 1 } else { 2 };
                    FP_REGS * (across(i, &[a, b]) + ops + 1) + 1
                }
            }
        })
        .max()
        .unwrap_or(0)
}

/// The estimate for one profile's accumulation loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopRegisters {
    /// The loop's own words ([`LOOP_WORDS`]).
    pub loop_words: u32,
    /// The peak inside its mixed addition (the running sum and the base included).
    pub formula: u32,
    /// The peak inside one product alone, both operands dying ([`mul_peak`]).
    pub product: u32,
}

impl LoopRegisters {
    /// The wide profiles' (13 limbs of 29 bits); `None` for Limbs13, whose formulas the
    /// interpreter loop runs over a register file in memory.
    pub fn of(a: Arithmetic) -> Option<LoopRegisters> {
        use edwards::reg as e;
        use program::reg as w;
        let formula = match a {
            Arithmetic::Limbs13 => return None,
            Arithmetic::Limbs29Edwards => formula_peak(
                edwards::MADD,
                &[e::X1, e::Y1, e::Z1, e::T1, e::X2, e::Y2, e::Z2],
                &[e::X3, e::Y3, e::Z3, e::T3],
            ),
            Arithmetic::Limbs29 => formula_peak(
                &program::Formulas::of(crate::curve::bls12_377_g1()).add_mixed,
                &[w::X1, w::Y1, w::Z1, w::X2, w::Y2],
                &[w::X3, w::Y3, w::Z3],
            ),
        };
        Some(LoopRegisters {
            loop_words: LOOP_WORDS,
            formula,
            product: mul_peak(false, false, false),
        })
    }

    /// Words per thread at the loop's peak.
    pub fn total(&self) -> u32 {
        self.loop_words + self.formula
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_product_holds_its_operands_its_reductions_and_its_result() {
        let alone = mul_peak(false, false, false);
        // Never less than both operands at the start, never more than operands, m, r and
        // the accumulator with a product all at once.
        assert!(alone >= 2 * FP_REGS + 4, "{alone}");
        assert!(alone <= 4 * FP_REGS + 4, "{alone}");
        // The peak is column 12's first product: every limb of a and b, m_0 .. m_11, the
        // accumulator and the product (13 + 13 + 12 + 2 + 2). Kept operands cannot lower
        // it (at that point both are whole anyway). A square reads one value and the
        // doubled limbs of its cross products: 6 words more than one operand here, fewer
        // than two.
        assert_eq!(alone, 3 * FP_REGS - 1 + 4);
        assert_eq!(mul_peak(true, true, false), alone);
        assert_eq!(mul_peak(false, false, true), alone - FP_REGS + 6);
    }

    #[test]
    fn a_formula_holds_at_least_its_inputs() {
        for a in [Arithmetic::Limbs29, Arithmetic::Limbs29Edwards] {
            let r = LoopRegisters::of(a).unwrap();
            let inputs = if a.is_edwards() { 7 } else { 5 };
            assert!(r.formula >= inputs * FP_REGS, "{a:?}: {r:?}");
            assert!(r.formula >= r.product, "{a:?}: {r:?}");
        }
        assert!(LoopRegisters::of(Arithmetic::Limbs13).is_none());
        // The values docs/PERF.md records: a change to the formulas or the multiplier moves
        // them, and the table with them.
        let peaks = [Arithmetic::Limbs29, Arithmetic::Limbs29Edwards]
            .map(|a| LoopRegisters::of(a).unwrap().formula);
        assert_eq!(peaks, [133, 107]);
    }

    /// The loop state [`LOOP_WORDS`] counts is the kernel's: six scalars, and one point
    /// (the run being summed; the head is written out, not carried).
    #[test]
    fn loop_words_are_the_kernels() {
        let text = crate::gpu::shader::files::BALANCED.text;
        let start = text.find("fn accumulate_balanced(").expect("the kernel");
        let end = start + text[start..].find("\n}\n").expect("its end");
        let body = &text[start..end];
        for decl in [
            "let t =",
            "let count =",
            "let end =",
            "var key =",
            "var head_key =",
            "var e =",
        ] {
            assert!(body.contains(decl), "{decl}");
        }
        assert_eq!(body.matches("var ").count(), 4, "key, acc, head_key, e");
        assert!(
            !body.contains("var head ="),
            "the head is written out, not carried"
        );
        assert_eq!(LOOP_WORDS, 6);
    }

    #[test]
    fn liveness_follows_the_steps() {
        use program::reg::{T0, T1, X1, X2, X3};
        // X3 = X1 X2 with both inputs dying: the product alone.
        let one = [program::s(Op::Mul, X3, X1, X2)];
        assert_eq!(
            formula_peak(&one, &[X1, X2], &[X3]),
            mul_peak(false, false, false)
        );
        // T0 = X1 X2, T1 = X1 X2 again (X1 and X2 live across the first), X3 = T0 + T1.
        let two = [
            program::s(Op::Mul, T0, X1, X2),
            program::s(Op::Mul, T1, X1, X2),
            program::s(Op::Add, X3, T0, T1),
        ];
        let first = mul_peak(true, true, false);
        let second = FP_REGS + mul_peak(false, false, false);
        assert_eq!(
            formula_peak(&two, &[X1, X2], &[X3]),
            first.max(second).max(3 * FP_REGS + 1)
        );
    }
}
