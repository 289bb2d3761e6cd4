//! The 64-bit operations of a Montgomery multiplication in naga's IR, for two straight-line
//! forms (issue 20, "a straight-line multiplier"):
//!
//! - the engine's: 13 limbs of 29 bits, R = 2^377, product scanning by columns with one u64
//!   accumulator (`gpu_msm::internals::gpu::shader::mul29`, in the wide profiles' prelude; its steps
//!   are checked against arkworks by that module's tests and on the device by
//!   `tests/gpu/shader_ops.rs`);
//! - the one it replaced, kept here for the count: CIOS on 12 words of 32 bits, R = 2^384,
//!   which splits every 64-bit sum into a word and a carry. Its host interpreter is checked
//!   against arkworks before anything is counted.
//!
//! naga parses and validates both modules; every Binary and As expression of `fp_mul` and of
//! its final conditional subtraction is counted by the width of its result. The counts are
//! naga's IR, not a GPU's instructions: on NVIDIA a 32x32->64 product with a 64-bit addend
//! is one IMAD.WIDE.U32, and a 64-bit shift by 32 is free (not measured here: no GPU).
//!
//! `cargo run --release --example mul_ops`

use ark_bls12_377::Fq;
use ark_ff::{PrimeField, UniformRand};
use clap::Parser;
use gpu_msm::internals::gpu::shader::{mul29, prelude, unroll};
use gpu_msm::Arithmetic;
use naga::{Expression, TypeInner};
use std::fmt::Write;

/// Words of the CIOS form.
const N: usize = 12;

fn words(b: &<Fq as PrimeField>::BigInt) -> [u32; N] {
    std::array::from_fn(|i| (b.0[i / 2] >> (32 * (i % 2))) as u32)
}

/// The CIOS module: its types, p, the conditional subtraction and the product, written out
/// as the engine wrote it before the 29-bit form.
fn cios_wgsl() -> String {
    let p = words(&Fq::MODULUS);
    let np0 = mul29::neg_p_inv_word();
    let list: Vec<String> = p.iter().map(|w| format!("{w}u")).collect();
    let mut s = format!(
        "alias Fp = array<u32, {N}>;\nconst P: Fp = Fp({});\n\n",
        list.join(", ")
    );
    s += "fn fp_reduce_once(a: Fp, hi: u32) -> Fp {\n    var t: Fp;\n    var borrow = 0u;\n";
    s += "    // unroll\n    for (var i = 0u; i < 12u; i++) {\n";
    s += "        let d = u64(a[i]) - u64(P[i]) - u64(borrow);\n";
    s += "        t[i] = u32(d & 0xfffffffflu);\n        borrow = u32(d >> 63u);\n    }\n";
    s += "    if (hi == 0u && borrow == 1u) {\n        return a;\n    }\n    return t;\n}\n\n";
    s += "fn fp_mul(a: Fp, b: Fp) -> Fp {\n";
    for j in 0..N {
        let _ = writeln!(s, "    let a{j} = u64(a[{j}]);");
    }
    for j in 0..N + 2 {
        let _ = writeln!(s, "    var t{j} = 0u;");
    }
    s += "    var s: u64;\n    var c: u64;\n    var m: u64;\n";
    for i in 0..N {
        let _ = writeln!(s, "    let b{i} = u64(b[{i}]);");
        for j in 0..N {
            let carry = if j == 0 { "" } else { " + c" };
            let t = if i == 0 {
                String::new()
            } else {
                format!("u64(t{j}) + ")
            };
            let _ = writeln!(
                s,
                "    s = {t}a{j} * b{i}{carry}; t{j} = u32(s & 0xfffffffflu); c = s >> 32u;"
            );
        }
        let _ = writeln!(
            s,
            "    s = u64(t{N}) + c; t{N} = u32(s & 0xfffffffflu); t{} = u32(s >> 32u);",
            N + 1
        );
        let _ = writeln!(s, "    m = u64(t0 * {np0}u);");
        let _ = writeln!(s, "    c = (u64(t0) + m * {}lu) >> 32u;", p[0]);
        for (j, pj) in p.iter().enumerate().skip(1) {
            let _ = writeln!(
                s,
                "    s = u64(t{j}) + m * {pj}lu + c; t{} = u32(s & 0xfffffffflu); c = s >> 32u;",
                j - 1
            );
        }
        let _ = writeln!(
            s,
            "    s = u64(t{N}) + c; t{} = u32(s & 0xfffffffflu); t{N} = t{} + u32(s >> 32u);",
            N - 1,
            N + 1
        );
    }
    let t: Vec<String> = (0..N).map(|j| format!("t{j}")).collect();
    let _ = writeln!(
        s,
        "    return fp_reduce_once(Fp({}), t{N});\n}}",
        t.join(", ")
    );
    s
}

/// The CIOS product on the host, word by word as `cios_wgsl` writes it.
fn cios(a: &[u32; N], b: &[u32; N]) -> [u32; N] {
    let p = words(&Fq::MODULUS);
    let np0 = mul29::neg_p_inv_word();
    let mut t = [0u32; N + 2];
    for &bi in b {
        let mut c = 0u64;
        for j in 0..N {
            let s = t[j] as u64 + a[j] as u64 * bi as u64 + c;
            t[j] = s as u32;
            c = s >> 32;
        }
        let s = t[N] as u64 + c;
        t[N] = s as u32;
        t[N + 1] = (s >> 32) as u32;
        let m = t[0].wrapping_mul(np0) as u64;
        let mut c = (t[0] as u64 + m * p[0] as u64) >> 32;
        for j in 1..N {
            let s = t[j] as u64 + m * p[j] as u64 + c;
            t[j - 1] = s as u32;
            c = s >> 32;
        }
        let s = t[N] as u64 + c;
        t[N - 1] = s as u32;
        t[N] = t[N + 1] + (s >> 32) as u32;
    }
    let mut r = [0u32; N];
    let mut borrow = 0i64;
    for j in 0..N {
        let d = t[j] as i64 - p[j] as i64 - borrow;
        r[j] = d as u32;
        borrow = (d < 0) as i64;
    }
    if t[N] == 0 && borrow == 1 {
        t[..N].try_into().expect("N words")
    } else {
        r
    }
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

/// Counts the 64-bit operations of the engine's Montgomery multiplication (13 x 29 bits) and
/// of the 32-bit CIOS it replaced, in naga's IR.
#[derive(Parser)]
struct Cli {}

fn main() {
    Cli::parse();
    // The CIOS oracle against arkworks before anything is counted.
    let mut rng = ark_std::test_rng();
    let mut xs = vec![Fq::from(0u64), Fq::from(1u64), -Fq::from(1u64)];
    xs.extend((0..100).map(|_| Fq::rand(&mut rng)));
    for x in &xs {
        for y in xs.iter().take(20) {
            assert_eq!(cios(&words(&x.0), &words(&y.0)), words(&(*x * y).0));
        }
    }
    println!("CIOS: {} x 20 pairs match arkworks", xs.len());

    let engine = unroll::expand(&prelude(
        Arithmetic::Limbs29.on(gpu_msm::internals::curve::bls12_377_g1()),
    ))
    .expect("the prelude unrolls");
    let old = unroll::expand(&cios_wgsl()).expect("the loop unrolls");
    let rows = [
        (
            "FIPS, 13 x 29 bits (engine)",
            count(&engine, "fp_mul"),
            count(&engine, "fp_reduce_once"),
        ),
        (
            "CIOS, 12 x 32 bits (before)",
            count(&old, "fp_mul"),
            count(&old, "fp_reduce_once"),
        ),
    ];
    let products = mul29::program()
        .iter()
        .filter(|s| matches!(s, mul29::Step::Ab(..) | mul29::Step::Mp(..)))
        .count();
    println!("engine: {products} products of 29-bit limbs, against CIOS' 288 of 32-bit words");
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
