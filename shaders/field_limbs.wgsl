// The field functions both limb layouts share (limbs of 29 bits for the wide profiles,
// shaders/field29.wgsl; of 13 bits for the portable one, shaders/field.wgsl; on BLS12-377
// 13 and 30 limbs): a
// value is LIMBS limbs of LIMB_BITS bits, one per u32, in Montgomery form, fully reduced
// (< p). Addition, subtraction and the conditional subtraction of p need only u32.
//
// The loops marked `// unroll` are written out for the wide profiles; the portable profile
// keeps them as loops (src/gpu/shader/profile.rs drops the marks), which keeps its shaders
// small. Every loop runs over a constant range inside array bounds.

alias Fp = array<u32, LIMBS>;
alias Packed = array<u32, PACKED_WORDS>;

fn fp_zero() -> Fp {
    return Fp();
}

fn fp_is_zero(a: Fp) -> bool {
    var acc = 0u;
    // unroll
    for (var i = 0u; i < LIMBS; i++) {
        acc |= a[i];
    }
    return acc == 0u;
}

struct Carried {
    v: Fp,
    carry: u32,
}

// a + b limb by limb, each limb masked to LIMB_BITS, and the carry out of the top limb.
fn fp_add_limbs(a: Fp, b: Fp) -> Carried {
    var r: Fp;
    var carry = 0u;
    // unroll
    for (var i = 0u; i < LIMBS; i++) {
        let s = a[i] + b[i] + carry;
        r[i] = s & LIMB_MASK;
        carry = s >> LIMB_BITS;
    }
    return Carried(r, carry);
}

struct Borrowed {
    v: Fp,
    borrow: u32,
}

// a - b limb by limb, each limb masked to LIMB_BITS, and the borrow out of the top limb
// (1 when a < b). Each difference lies in (-2^(LIMB_BITS+1), 2^(LIMB_BITS+1)), so bit 31 of
// the u32 is its borrow (the top limb of a may hold one bit more).
fn fp_sub_limbs(a: Fp, b: Fp) -> Borrowed {
    var r: Fp;
    var borrow = 0u;
    // unroll
    for (var i = 0u; i < LIMBS; i++) {
        let d = a[i] - b[i] - borrow;
        r[i] = d & LIMB_MASK;
        borrow = d >> 31u;
    }
    return Borrowed(r, borrow);
}

// a - p if a >= p, else a, for a < 2p with limbs below 2^LIMB_BITS (the top one may hold
// one bit more).
fn fp_reduce_once(a: Fp) -> Fp {
    let t = fp_sub_limbs(a, P);
    if (t.borrow == 1u) {
        return a;
    }
    return t.v;
}

// a + b mod p, for a, b < p: the sum, below 2p, keeps its top carry in the top limb (always
// 0 on 13-bit limbs, which hold 2p: field.wgsl).
fn fp_add(a: Fp, b: Fp) -> Fp {
    var r = fp_add_limbs(a, b);
    r.v[LIMBS - 1u] |= r.carry << LIMB_BITS;
    return fp_reduce_once(r.v);
}

// a - b mod p, for a, b < p: on a borrow, p is added back and the carry out of the top limb
// (the 2^(LIMBS LIMB_BITS) the borrow took) is dropped.
fn fp_sub(a: Fp, b: Fp) -> Fp {
    let d = fp_sub_limbs(a, b);
    if (d.borrow == 0u) {
        return d.v;
    }
    return fp_add_limbs(d.v, P).v;
}

fn fp_neg(a: Fp) -> Fp {
    return fp_sub(fp_zero(), a);
}

fn fp_double(a: Fp) -> Fp {
    return fp_add(a, a);
}

// arkworks keeps x as x * 2^(64 n) mod p, n its u64 words (2^384 for the BLS12 fields,
// 2^256 for BN254); R_CONVERT = 2^(2 log2 R - 64 n) mod p, so the Montgomery product gives
// x * R mod p, this profile's form.
fn fp_from_arkworks(a: Fp) -> Fp {
    return fp_mul(a, R_CONVERT);
}
