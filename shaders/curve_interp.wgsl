// The curve formulas of the portable profile: the host's step tables (PROGRAM, generated
// from src/gpu/shader/program.rs) run by one interpreter loop over a register file. Included after
// curve.wgsl.

alias Regs = array<Fp, NUM_REGS>;

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
        var v: Fp;
        if (op == OP_MUL) {
            v = fp_mul(a, b);
        } else if (op == OP_ADD) {
            v = fp_add(a, b);
        } else {
            v = fp_sub(a, b);
        }
        (*r)[dst] = v;
    }
}

// Register numbers (REG_*) are generated from src/gpu/shader/program.rs.
fn point_program(p: Point, q: Point, start: u32, len: u32) -> Point {
    var r: Regs;
    r[REG_X1] = p.x;
    r[REG_Y1] = p.y;
    r[REG_Z1] = p.z;
    r[REG_X2] = q.x;
    r[REG_Y2] = q.y;
    r[REG_Z2] = q.z;
    run_program(&r, start, len);
    return Point(r[REG_X3], r[REG_Y3], r[REG_Z3]);
}

// P + Q, complete.
fn point_add(p: Point, q: Point) -> Point {
    return point_program(p, q, PROG_ADD_START, PROG_ADD_LEN);
}

// P + Q with Q affine and not the identity.
fn point_add_mixed(p: Point, q: Affine) -> Point {
    return point_program(p, Point(q.x, q.y, FP_ONE), PROG_ADD_MIXED_START, PROG_ADD_MIXED_LEN);
}

// 2P.
fn point_double(p: Point) -> Point {
    return point_program(p, p, PROG_DOUBLE_START, PROG_DOUBLE_LEN);
}

