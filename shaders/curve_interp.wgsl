// The curve formulas of the portable profile: the host's step tables (PROGRAM, generated
// from src/gpu/shader/program.rs) run by one interpreter loop over a register file of
// coordinates (Fe: F_p on a G1, F_p^2 on a G2). Included after curve.wgsl; the host
// appends point_program, which loads P, Q and the constants (3b on a G2) into the
// registers and runs a program.

alias Regs = array<Fe, NUM_REGS>;

const OP_MUL: u32 = 0u;
const OP_ADD: u32 = 1u;

// Runs PROGRAM[start .. start + len] on the registers. Each step is
// op | dst << 8 | a << 16 | b << 24; register numbers are < NUM_REGS by construction (the
// host's tests check the table), and clamped here as well.
fn run_program(r: ptr<function, Regs>, start: u32, len: u32) {
    for (var i = 0u; i < len; i++) {
        let st = PROGRAM[min(start + i, PROGRAM_WORDS - 1u)];
        let op = st & 0xffu;
        let dst = min((st >> 8u) & 0xffu, NUM_REGS - 1u);
        let a = (*r)[min((st >> 16u) & 0xffu, NUM_REGS - 1u)];
        let b = (*r)[min(st >> 24u, NUM_REGS - 1u)];
        var v: Fe;
        if (op == OP_MUL) {
            v = fe_mul(a, b);
        } else if (op == OP_ADD) {
            v = fe_add(a, b);
        } else {
            v = fe_sub(a, b);
        }
        (*r)[dst] = v;
    }
}

// P + Q, complete.
fn point_add(p: Point, q: Point) -> Point {
    return point_program(p, q, PROG_ADD_START, PROG_ADD_LEN);
}

// P + Q with Q affine and not the identity.
fn point_add_mixed(p: Point, q: Affine) -> Point {
    return point_program(p, Point(q.x, q.y, FE_ONE), PROG_ADD_MIXED_START, PROG_ADD_MIXED_LEN);
}

// 2P.
fn point_double(p: Point) -> Point {
    return point_program(p, p, PROG_DOUBLE_START, PROG_DOUBLE_LEN);
}
