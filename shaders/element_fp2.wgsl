// The coordinates' field on a G2: F_p^2 = F_p[u] / (u^2 - beta), an element c0 + c1 u with
// c0, c1 in F_p, as arkworks' Fp2 (beta, its non-residue: BN254 and BLS12-381 -1,
// BLS12-377 -5). fp_mul_nonresidue, the product by beta, is generated from arkworks'
// value as additions and a negation (src/gpu/shader/element.rs). A packed element is c0's
// PACKED_WORDS words, then c1's: ELEMENT_WORDS in all, arkworks' order.

struct Fe {
    c0: Fp,
    c1: Fp,
}

alias PackedFe = array<u32, ELEMENT_WORDS>;

fn fe_zero() -> Fe {
    return Fe(fp_zero(), fp_zero());
}

fn fe_is_zero(a: Fe) -> bool {
    return fp_is_zero(a.c0) && fp_is_zero(a.c1);
}

fn fe_add(a: Fe, b: Fe) -> Fe {
    return Fe(fp_add(a.c0, b.c0), fp_add(a.c1, b.c1));
}

fn fe_sub(a: Fe, b: Fe) -> Fe {
    return Fe(fp_sub(a.c0, b.c0), fp_sub(a.c1, b.c1));
}

fn fe_neg(a: Fe) -> Fe {
    return Fe(fp_neg(a.c0), fp_neg(a.c1));
}

// (a0 + a1 u)(b0 + b1 u) = a0 b0 + beta a1 b1 + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u:
// three products of F_p (Karatsuba). In this order a0 and b0 end in their sums, a1 and b1
// in the second product: at most five of F_p live at once (a GPU compiler allocates in the
// order it is given: schedule.rs).
fn fe_mul(a: Fe, b: Fe) -> Fe {
    let v0 = fp_mul(a.c0, b.c0);
    let sa = fp_add(a.c0, a.c1);
    let sb = fp_add(b.c0, b.c1);
    let v1 = fp_mul(a.c1, b.c1);
    let m = fp_mul(sa, sb);
    return Fe(fp_add(v0, fp_mul_nonresidue(v1)), fp_sub(fp_sub(m, v0), v1));
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 + beta a1) - a0 a1 - beta a0 a1 + 2 a0 a1 u: two products.
fn fe_square(a: Fe) -> Fe {
    let v = fp_mul(a.c0, a.c1);
    let m = fp_mul(fp_add(a.c0, a.c1), fp_add(a.c0, fp_mul_nonresidue(a.c1)));
    return Fe(fp_sub(fp_sub(m, v), fp_mul_nonresidue(v)), fp_add(v, v));
}

// 1 / (a0 + a1 u) = (a0 - a1 u) / (a0^2 - beta a1^2); 0 for 0. The norm a0^2 - beta a1^2
// is 0 only for a = 0, beta being a non-residue.
fn fe_inverse(a: Fe) -> Fe {
    let norm = fp_sub(fp_square(a.c0), fp_mul_nonresidue(fp_square(a.c1)));
    let t = fp_inverse(norm);
    return Fe(fp_mul(a.c0, t), fp_neg(fp_mul(a.c1, t)));
}

fn fe_from_arkworks(a: Fe) -> Fe {
    return Fe(fp_from_arkworks(a.c0), fp_from_arkworks(a.c1));
}

fn fe_unpack(w: PackedFe) -> Fe {
    var c0: Packed;
    var c1: Packed;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        c0[i] = w[i];
        c1[i] = w[PACKED_WORDS + i];
    }
    return Fe(fp_unpack(c0), fp_unpack(c1));
}

fn fe_pack(a: Fe) -> PackedFe {
    let c0 = fp_pack(a.c0);
    let c1 = fp_pack(a.c1);
    var w: PackedFe;
    // unroll
    for (var i = 0u; i < PACKED_WORDS; i++) {
        w[i] = c0[i];
        w[PACKED_WORDS + i] = c1[i];
    }
    return w;
}
