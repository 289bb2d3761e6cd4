// Field functions common to every profile (after the profile's field file).

// a^(p-2) = a^-1 for a != 0 (0 for a = 0): square-and-multiply over the 32 PACKED_WORDS
// bits of P_MINUS_2 (generated from arkworks: 384 bits for BLS12-377 and BLS12-381, 256 for
// BN254). Not on any hot path: the Edwards convert stage runs it once per CONVERT_BATCH
// bases.
fn fp_inverse(a: Fp) -> Fp {
    var r = FP_ONE;
    let bits = 32u * PACKED_WORDS;
    for (var i = 0u; i < bits; i++) {
        let bit = bits - 1u - i;
        r = fp_square(r);
        if (((P_MINUS_2[bit / 32u] >> (bit % 32u)) & 1u) == 1u) {
            r = fp_mul(r, a);
        }
    }
    return r;
}
