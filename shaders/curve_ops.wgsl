// Point operations common to both curve models (after curve.wgsl or curve_edwards.wgsl and
// the formulas).

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
