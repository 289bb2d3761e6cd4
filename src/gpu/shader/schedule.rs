//! The order in which a step table is written out as straight-line WGSL. A GPU compiler
//! allocates registers mostly in the order it is given (ACO keeps it: its pre-schedule
//! demand is within a register or two of what it allocates, `examples/compiler_report.rs`),
//! so the order decides how many field elements are live at once: on a G2 over a 381-bit
//! field each is 28 registers of the 256 a thread has. [`schedule`] reorders a table's steps
//! in dataflow order, each value a register of its own (SSA), choosing greedily the step
//! that frees the most values (a step whose operands end there), then an addition or
//! subtraction before a product, then the table's own order. On RDNA2 (ACO) that took the
//! BLS12-377 additions from 168 VGPRs to 128 (8 waves a SIMD instead of 6), and no
//! formula or stage measured allocates more than in the table's order (docs/PERF.md, "The
//! shaders as a GPU compiler sees them"). `straight_line.rs` writes the result; the tests
//! run it on the CPU against the table.

use super::program::{Op, Step};

/// A table reordered: its steps over registers of their own ([`Scheduled::registers`] in
/// all: the table's registers keep their initial values, each step writes a fresh one), and
/// where each output register of the table ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scheduled {
    /// The steps, in the order chosen; each writes a register no other step writes.
    pub steps: Vec<Step>,
    /// The register holding each of the outputs asked for, in their order.
    pub outputs: Vec<u8>,
    /// Registers the steps use: the table's, then one a step.
    pub registers: usize,
}

/// `program`'s steps reordered to keep few values live: registers `inputs` hold the values
/// it starts from (every other register is written before it is read), `outputs` the values
/// it ends with. Dataflow is kept: every step reads the values the table's order gives it.
pub fn schedule(program: &[Step], registers: usize, inputs: &[u8], outputs: &[u8]) -> Scheduled {
    order(program, registers, inputs, outputs, true)
}

/// `program` in SSA form in its own order (what [`schedule`] is measured against).
pub fn in_table_order(
    program: &[Step],
    registers: usize,
    inputs: &[u8],
    outputs: &[u8],
) -> Scheduled {
    order(program, registers, inputs, outputs, false)
}

/// A table's dataflow: each step's operand values (value r < registers: register r's
/// initial content; registers + i: step i's result), the outputs' values, and each value's
/// readers (a step reading a value twice counts once; an output one more, never freed).
struct Dataflow {
    operands: Vec<(usize, usize)>,
    outputs: Vec<usize>,
    uses: Vec<usize>,
}

impl Dataflow {
    fn of(program: &[Step], registers: usize, inputs: &[u8], outputs: &[u8]) -> Dataflow {
        let mut def: Vec<Option<usize>> = (0..registers)
            .map(|r| inputs.contains(&(r as u8)).then_some(r))
            .collect();
        let mut operands = Vec::with_capacity(program.len());
        for (i, st) in program.iter().enumerate() {
            let read =
                |r: u8| def[r as usize].unwrap_or_else(|| panic!("step {i} reads r{r} unset"));
            operands.push((read(st.a), read(st.b)));
            def[st.dst as usize] = Some(registers + i);
        }
        let outputs: Vec<usize> = (outputs.iter())
            .map(|&r| def[r as usize].unwrap_or_else(|| panic!("output r{r} unset")))
            .collect();
        let mut uses = vec![0usize; registers + program.len()];
        for &(a, b) in &operands {
            uses[a] += 1;
            if b != a {
                uses[b] += 1;
            }
        }
        for &v in &outputs {
            uses[v] += 1;
        }
        Dataflow {
            operands,
            outputs,
            uses,
        }
    }
}

/// The steps in dataflow order: greedily (the most values freed, then an addition or
/// subtraction before a product, then the table's order), or in the table's order.
fn order(
    program: &[Step],
    registers: usize,
    inputs: &[u8],
    outputs: &[u8],
    greedy: bool,
) -> Scheduled {
    let Dataflow {
        operands,
        outputs,
        mut uses,
    } = Dataflow::of(program, registers, inputs, outputs);
    let mut ready = vec![false; uses.len()];
    for r in inputs {
        ready[*r as usize] = true;
    }
    let mut done = vec![false; program.len()];
    let mut steps = Vec::with_capacity(program.len());
    for _ in 0..program.len() {
        let freed = |i: usize| {
            let (a, b) = operands[i];
            let n = (uses[a] == 1) as usize + (b != a && uses[b] == 1) as usize;
            n * greedy as usize
        };
        // Among equals an addition or subtraction before a product: it holds no product's
        // temporaries, and its result often lets a product free its operands.
        let cheap = |i: usize| (greedy && program[i].op != Op::Mul) as usize;
        let pick = (0..program.len())
            .filter(|&i| !done[i] && ready[operands[i].0] && ready[operands[i].1])
            .max_by(|&i, &j| (freed(i), cheap(i), j).cmp(&(freed(j), cheap(j), i)))
            .expect("a step is ready while steps remain: the table is in dataflow order");
        let (a, b) = operands[pick];
        uses[a] -= 1;
        if b != a {
            uses[b] -= 1;
        }
        (done[pick], ready[registers + pick]) = (true, true);
        steps.push(Step {
            op: program[pick].op,
            dst: reg(registers + pick),
            a: reg(a),
            b: reg(b),
        });
    }
    Scheduled {
        steps,
        outputs: outputs.into_iter().map(reg).collect(),
        registers: ready.len(),
    }
}

fn reg(v: usize) -> u8 {
    u8::try_from(v).expect("a table of fewer than 256 values")
}

/// The most values a scheduled program holds at once (inputs included until their last
/// reader, outputs from their step on): the quantity [`schedule`] keeps low.
pub fn peak_live(s: &Scheduled, inputs: &[u8]) -> usize {
    let mut last = vec![None; s.registers];
    for (i, st) in s.steps.iter().enumerate() {
        last[st.a as usize] = Some(i);
        last[st.b as usize] = Some(i);
    }
    for &o in &s.outputs {
        last[o as usize] = Some(usize::MAX);
    }
    let born = |r: usize| -> Option<usize> {
        if inputs.contains(&(r as u8)) {
            return Some(0);
        }
        s.steps.iter().position(|st| st.dst as usize == r)
    };
    (0..s.steps.len())
        .map(|i| {
            (0..s.registers)
                .filter(|&r| born(r).is_some_and(|b| b <= i) && last[r].is_some_and(|l| l >= i))
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::program::{interpret, reg, Formulas};

    /// The scheduled program leaves in its outputs what the table leaves in its own, on
    /// random inputs.
    fn same_values<F: ark_ff::Field>(
        program: &[Step],
        registers: usize,
        inputs: &[u8],
        outputs: &[u8],
    ) {
        let s = schedule(program, registers, inputs, outputs);
        assert_eq!(s.steps.len(), program.len());
        let mut rng = ark_std::test_rng();
        for _ in 0..4 {
            let mut table = vec![F::zero(); registers];
            for &r in inputs {
                table[r as usize] = F::rand(&mut rng);
            }
            let mut ours = vec![F::zero(); s.registers];
            ours[..registers].copy_from_slice(&table);
            interpret(program, &mut table);
            interpret(&s.steps, &mut ours);
            for (o, so) in outputs.iter().zip(&s.outputs) {
                assert_eq!(table[*o as usize], ours[*so as usize]);
            }
        }
        // Each step writes a register of its own.
        let mut written: Vec<u8> = s.steps.iter().map(|st| st.dst).collect();
        written.sort();
        written.dedup();
        assert_eq!(written.len(), program.len());
    }

    #[test]
    fn scheduled_formulas_compute_the_tables() {
        use reg::*;
        for f in [
            Formulas::for_b(1),
            Formulas::for_b(4),
            Formulas::for_any_b(),
        ] {
            let mut inputs = vec![X1, Y1, Z1, X2, Y2, Z2];
            if f.has_b3_register() {
                inputs.push(B3);
            }
            for prog in [&f.add, &f.add_mixed, &f.double] {
                same_values::<ark_bls12_381::Fq>(prog, f.registers, &inputs, &[X3, Y3, Z3]);
            }
        }
        use crate::gpu::shader::edwards::{reg as e, ADD, DOUBLE, MADD};
        let inputs = [e::X1, e::Y1, e::Z1, e::T1, e::X2, e::Y2, e::Z2, e::T2, e::K];
        for prog in [ADD, MADD, DOUBLE] {
            same_values::<ark_bls12_377::Fq>(
                prog,
                e::COUNT,
                &inputs,
                &[e::X3, e::Y3, e::Z3, e::T3],
            );
        }
    }

    /// The order never holds more values at once than the table's own, and fewer on the
    /// additions.
    #[test]
    fn the_schedule_holds_fewer_values_than_the_table() {
        use reg::*;
        let f = Formulas::for_any_b();
        let inputs = [X1, Y1, Z1, X2, Y2, Z2, B3];
        let out = [X3, Y3, Z3];
        for prog in [&f.add, &f.add_mixed, &f.double] {
            let ours = peak_live(&schedule(prog, f.registers, &inputs, &out), &inputs);
            let table = peak_live(&in_table_order(prog, f.registers, &inputs, &out), &inputs);
            assert!(ours <= table, "{ours} > {table}");
        }
        use crate::gpu::shader::edwards::{reg as e, ADD};
        let inputs = [e::X1, e::Y1, e::Z1, e::T1, e::X2, e::Y2, e::Z2, e::T2, e::K];
        let out = [e::X3, e::Y3, e::Z3, e::T3];
        let ours = peak_live(&schedule(ADD, e::COUNT, &inputs, &out), &inputs);
        let table = peak_live(&in_table_order(ADD, e::COUNT, &inputs, &out), &inputs);
        assert!(ours < table, "{ours} >= {table}");
    }
}
