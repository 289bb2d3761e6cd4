//! The 64-bit operations of a Montgomery multiplication in naga's IR, for two straight-line
//! forms (issue 20, "a straight-line multiplier"):
//!
//! - the engine's: CIOS on 12 limbs of 32 bits (`gpu_msm::gpu::shader::mul32`, in the
//!   Limbs32 profiles' prelude), which splits every 64-bit sum into a word and a carry;
//! - a candidate generated here: 13 limbs of 29 bits, R = 2^377, product scanning (FIPS)
//!   with one u64 accumulator that takes every product of a column (58-bit products, at most
//!   26 a column, so it never overflows) and carries once a column.
//!
//! The candidate is a step list (`program`) that both a Rust interpreter (the oracle, checked
//! against arkworks on random and edge values before anything is counted) and the WGSL
//! emitter read. naga parses and validates both modules; every Binary and As expression of
//! `fp_mul` and of its final conditional subtraction is counted by the width of its result.
//! The engine does not use the candidate. The counts are naga's IR, not a GPU's
//! instructions: on NVIDIA a 32x32->64 product with a 64-bit addend is one IMAD.WIDE.U32,
//! and a 64-bit shift by 32 is free (not measured here: no GPU).
//!
//! `cargo run --release --example mul_ops`

use ark_bls12_377::Fq;
use ark_ff::{BigInteger, Field, PrimeField, UniformRand};
use clap::Parser;
use gpu_msm::gpu::shader::{prelude, unroll};
use gpu_msm::Arithmetic;
use naga::{Expression, TypeInner};
use std::fmt::Write;

const LIMBS: usize = 13;
const BITS: u32 = 29;
const MASK: u64 = (1 << BITS) - 1;

/// One step of the candidate's product: `acc` is the u64 accumulator.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// acc += a_i b_j.
    Ab(usize, usize),
    /// acc += m_i p_j.
    Mp(usize, usize),
    /// m_k = (acc mod 2^32) (-p^-1) mod 2^29: the low 29 bits of acc + m_k p_0 are zero.
    MakeM(usize),
    /// r_k = acc mod 2^29.
    Out(usize),
    /// acc >>= 29.
    Shift,
}

/// Column k < 13 takes a_i b_(k-i) and m_i p_(k-i) (i < k), makes m_k, adds m_k p_0 and
/// shifts; column k >= 13 takes the products left and writes r_(k-13); the accumulator
/// that is left is r_12 (at most 30 bits: the product is below 2p < 2^378).
fn program() -> Vec<Step> {
    let mut steps = Vec::new();
    for k in 0..2 * LIMBS - 1 {
        let lo = k.saturating_sub(LIMBS - 1);
        steps.extend((lo..=k.min(LIMBS - 1)).map(|i| Step::Ab(i, k - i)));
        steps.extend((lo..k.min(LIMBS)).map(|i| Step::Mp(i, k - i)));
        if k < LIMBS {
            steps.extend([Step::MakeM(k), Step::Mp(k, 0)]);
        } else {
            steps.push(Step::Out(k - LIMBS));
        }
        steps.push(Step::Shift);
    }
    steps
}

/// p in 29-bit limbs.
fn p_limbs() -> [u64; LIMBS] {
    limbs(&Fq::MODULUS)
}

fn limbs(b: &<Fq as PrimeField>::BigInt) -> [u64; LIMBS] {
    let bits = b.to_bits_le();
    std::array::from_fn(|i| {
        (0..BITS as usize)
            .filter(|&j| bits.get(i * BITS as usize + j).copied().unwrap_or(false))
            .map(|j| 1u64 << j)
            .sum()
    })
}

/// -p^-1 mod 2^32 (its low 29 bits are -p^-1 mod 2^29).
fn np0() -> u32 {
    let p0 = Fq::MODULUS.0[0] as u32;
    let mut inv = 1u32;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

/// x in the candidate's form: x 2^377 mod p, in 29-bit limbs.
fn to_form(x: &Fq) -> [u64; LIMBS] {
    limbs(&(*x * Fq::from(2u64).pow([(BITS as usize * LIMBS) as u64])).into_bigint())
}

/// The oracle: the steps on the host, every addition checked for overflow, then the
/// conditional subtraction.
fn interpret(a: &[u64; LIMBS], b: &[u64; LIMBS]) -> [u64; LIMBS] {
    let (p, np0) = (p_limbs(), np0() as u64);
    let (mut acc, mut m, mut r) = (0u64, [0u64; LIMBS], [0u64; LIMBS]);
    for step in program() {
        match step {
            Step::Ab(i, j) => acc = acc.checked_add(a[i] * b[j]).expect("no overflow"),
            Step::Mp(i, j) => acc = acc.checked_add(m[i] * p[j]).expect("no overflow"),
            Step::MakeM(k) => m[k] = ((acc as u32 as u64) * np0) & MASK,
            Step::Out(k) => r[k] = acc & MASK,
            Step::Shift => acc >>= BITS,
        }
    }
    r[LIMBS - 1] = acc;
    // r < 2p: subtract p once if r >= p.
    let mut t = [0u64; LIMBS];
    let mut borrow = 0u64;
    for ((ti, ri), pi) in t.iter_mut().zip(r).zip(p) {
        let d = ri.wrapping_sub(pi + borrow);
        *ti = d & MASK;
        borrow = d >> 63;
    }
    if borrow == 1 {
        r
    } else {
        t
    }
}

/// The candidate's WGSL: the same steps, then `fp_reduce_once29` (straight-line, u32 only).
fn candidate_wgsl() -> String {
    let p = p_limbs();
    let mut s = format!("alias Fp29 = array<u32, {LIMBS}>;\n\n");
    s += "fn fp_reduce_once29(r: Fp29) -> Fp29 {\n    var t: Fp29;\n    var d: u32;\n";
    for (i, pi) in p.iter().enumerate() {
        let borrow = if i == 0 { "" } else { " - (d >> 31u)" };
        let _ = writeln!(s, "    d = r[{i}] - {pi}u{borrow}; t[{i}] = d & {MASK}u;");
    }
    s += "    if ((d >> 31u) == 1u) {\n        return r;\n    }\n    return t;\n}\n\n";
    s += "fn fp_mul(a: Fp29, b: Fp29) -> Fp29 {\n";
    for i in 0..LIMBS {
        let _ = writeln!(
            s,
            "    let a{i} = u64(a[{i}]);\n    let b{i} = u64(b[{i}]);"
        );
    }
    s += "    var acc = 0lu;\n";
    for step in program() {
        let _ = match step {
            Step::Ab(i, j) => writeln!(s, "    acc += a{i} * b{j};"),
            Step::Mp(i, j) => writeln!(s, "    acc += m{i} * {}lu;", p[j]),
            Step::MakeM(k) => writeln!(
                s,
                "    let m{k} = u64((u32(acc & 0xfffffffflu) * {}u) & {MASK}u);",
                np0()
            ),
            Step::Out(k) => writeln!(s, "    let r{k} = u32(acc & {MASK}lu);"),
            Step::Shift => writeln!(s, "    acc >>= {BITS}u;"),
        };
    }
    let _ = writeln!(s, "    let r{} = u32(acc);", LIMBS - 1);
    let r: Vec<String> = (0..LIMBS).map(|k| format!("r{k}")).collect();
    let _ = writeln!(
        s,
        "    return fp_reduce_once29(Fp29({}));\n}}",
        r.join(", ")
    );
    s
}

/// (64-bit, 32-bit) Binary expressions and As conversions of function `name`.
#[derive(Default, Debug)]
struct Ops {
    binary64: usize,
    binary32: usize,
    casts: usize,
}

fn count(source: &str, name: &str) -> Ops {
    let module = naga::front::wgsl::parse_str(source)
        .unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)));
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .expect("the module validates");
    let (handle, f) = module
        .functions
        .iter()
        .find(|(_, f)| f.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no {name}"));
    let fi = &info[handle];
    let mut ops = Ops::default();
    for (h, e) in f.expressions.iter() {
        let width = match fi[h].ty.inner_with(&module.types) {
            TypeInner::Scalar(s) => s.width,
            _ => 0,
        };
        match e {
            Expression::Binary { .. } if width == 8 => ops.binary64 += 1,
            Expression::Binary { .. } => ops.binary32 += 1,
            Expression::As { .. } => ops.casts += 1,
            _ => {}
        }
    }
    ops
}

/// Counts the 64-bit operations of the engine's Montgomery multiplication and of a 29-bit-limb
/// candidate in naga's IR, after checking the candidate against arkworks.
#[derive(Parser)]
struct Cli {}

fn main() {
    Cli::parse();
    // The oracle against arkworks before anything is counted.
    let mut rng = ark_std::test_rng();
    let mut xs = vec![
        Fq::from(0u64),
        Fq::from(1u64),
        -Fq::from(1u64),
        -Fq::from(2u64),
    ];
    xs.extend((0..200).map(|_| Fq::rand(&mut rng)));
    for x in &xs {
        for y in xs.iter().take(40) {
            assert_eq!(interpret(&to_form(x), &to_form(y)), to_form(&(*x * y)));
        }
    }
    println!(
        "29-bit candidate: {} x {} pairs match arkworks",
        xs.len(),
        40
    );

    let engine = unroll::expand(&prelude(Arithmetic::Limbs32)).expect("the prelude unrolls");
    let candidate = candidate_wgsl();
    let rows = [
        (
            "CIOS, 12 x 32 bits (engine)",
            count(&engine, "fp_mul"),
            count(&engine, "fp_reduce_once"),
        ),
        (
            "FIPS, 13 x 29 bits (candidate)",
            count(&candidate, "fp_mul"),
            count(&candidate, "fp_reduce_once29"),
        ),
    ];
    let steps = program();
    let products = steps
        .iter()
        .filter(|s| matches!(s, Step::Ab(..) | Step::Mp(..)))
        .count();
    println!(
        "candidate: {products} products of 29-bit limbs, against the engine's 288 of 32-bit words"
    );
    println!("| multiplier | fp_mul: 64-bit ops | 32-bit ops | casts | final subtraction: 64-bit | 32-bit | casts | 64-bit ops in all |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, m, r) in rows {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            m.binary64,
            m.binary32,
            m.casts,
            r.binary64,
            r.binary32,
            r.casts,
            m.binary64 + r.binary64
        );
    }
}
