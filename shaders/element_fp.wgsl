// The coordinates' field on a G1: F_p itself. The curve formulas, storage helpers and
// stages compute on `Fe` with the `fe_*` functions (src/gpu/shader/element.rs says why);
// here each is the profile's `fp_*` (drivers inline them: the code is the F_p code).

alias Fe = Fp;
alias PackedFe = Packed;

fn fe_zero() -> Fe {
    return fp_zero();
}

fn fe_is_zero(a: Fe) -> bool {
    return fp_is_zero(a);
}

fn fe_add(a: Fe, b: Fe) -> Fe {
    return fp_add(a, b);
}

fn fe_sub(a: Fe, b: Fe) -> Fe {
    return fp_sub(a, b);
}

fn fe_neg(a: Fe) -> Fe {
    return fp_neg(a);
}

fn fe_mul(a: Fe, b: Fe) -> Fe {
    return fp_mul(a, b);
}

fn fe_square(a: Fe) -> Fe {
    return fp_square(a);
}

fn fe_inverse(a: Fe) -> Fe {
    return fp_inverse(a);
}

fn fe_from_arkworks(a: Fe) -> Fe {
    return fp_from_arkworks(a);
}

fn fe_unpack(w: PackedFe) -> Fe {
    return fp_unpack(w);
}

fn fe_pack(a: Fe) -> PackedFe {
    return fp_pack(a);
}
