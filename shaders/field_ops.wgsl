// Field functions common to every profile (after the profile's field file).

// a^(p-2) = a^-1 for a != 0 (0 for a = 0): square-and-multiply over the 384 bits of
// P_MINUS_2 (12 words, generated from arkworks). Not on any hot path: the Edwards convert
// stage runs it once per CONVERT_BATCH bases.
fn fp_inverse(a: Fp) -> Fp {
    var r = FP_ONE;
    for (var i = 0u; i < 384u; i++) {
        let bit = 383u - i;
        r = fp_square(r);
        if (((P_MINUS_2[bit / 32u] >> (bit % 32u)) & 1u) == 1u) {
            r = fp_mul(r, a);
        }
    }
    return r;
}
