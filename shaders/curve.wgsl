// BLS12-377 G1, y^2 = x^3 + 1, in homogeneous projective coordinates (x = X/Z, y = Y/Z).
//
// The formulas are the complete ones of Renes, Costello and Batina (EUROCRYPT 2016,
// algorithms 7, 8 and 9 for a = 0). They have no branches and no exceptional cases for the
// identity, P + P or P + (-P), as long as P - Q is never a point of order 2. The curve has
// such a point, (-1, 0), but it lies outside the prime-order subgroup G1, and every point the
// engine adds is a sum of G1 points, so P - Q is in G1 and the case never arises.
//
// The formulas are not written out here: the host generates them as a table of steps
// (PROGRAM, see src/gpu/program.rs) over a register file, and run_program interprets it.
// Drivers inline every function, so a written-out addition copies its 12 multiplications
// into every caller; the interpreter keeps one copy of fp_mul per call site.
// Costs: add 12M, mixed add 11M, double 8M (b3 = 3 costs two additions).
//
// The identity is (0 : 1 : 0). An affine point (Z = 1) cannot be the identity: the host never
// hands the shaders an identity base.

struct Point {
    x: Fp,
    y: Fp,
    z: Fp,
}

struct Affine {
    x: Fp,
    y: Fp,
}

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

// Register numbers shared with src/gpu/program.rs: P in 0..3, Q in 3..6, result in 11..14.
fn point_program(p: Point, q: Point, start: u32, len: u32) -> Point {
    var r: Regs;
    r[0] = p.x;
    r[1] = p.y;
    r[2] = p.z;
    r[3] = q.x;
    r[4] = q.y;
    r[5] = q.z;
    run_program(&r, start, len);
    return Point(r[11], r[12], r[13]);
}

fn point_identity() -> Point {
    return Point(fp_zero(), FP_ONE, fp_zero());
}

fn point_neg(p: Point) -> Point {
    return Point(p.x, fp_neg(p.y), p.z);
}

fn affine_neg(p: Affine) -> Affine {
    return Affine(p.x, fp_neg(p.y));
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

// k * P for a small k (a u32) by double-and-add from the top set bit.
fn point_mul_small(p: Point, k: u32) -> Point {
    var acc = point_identity();
    if (k == 0u) {
        return acc;
    }
    let top = 31u - countLeadingZeros(k);
    for (var i = 0u; i <= top; i++) {
        acc = point_double(acc);
        if (((k >> (top - i)) & 1u) == 1u) {
            acc = point_add(acc, p);
        }
    }
    return acc;
}

// Storage helpers: a point is 3 packed coordinates (36 u32 words), an affine point 2 (24).
fn point_from_words(w: array<u32, 36>) -> Point {
    var x: Packed;
    var y: Packed;
    var z: Packed;
    for (var i = 0u; i < PACKED_WORDS; i++) {
        x[i] = w[i];
        y[i] = w[PACKED_WORDS + i];
        z[i] = w[2u * PACKED_WORDS + i];
    }
    return Point(fp_unpack(x), fp_unpack(y), fp_unpack(z));
}

fn point_to_words(p: Point) -> array<u32, 36> {
    let x = fp_pack(p.x);
    let y = fp_pack(p.y);
    let z = fp_pack(p.z);
    var w: array<u32, 36>;
    for (var i = 0u; i < PACKED_WORDS; i++) {
        w[i] = x[i];
        w[PACKED_WORDS + i] = y[i];
        w[2u * PACKED_WORDS + i] = z[i];
    }
    return w;
}
