//! The wide profiles' Montgomery multiplication and storage conversions, written out as
//! straight-line WGSL: no loop, no array indexed at run time, the modulus' limbs as literals.
//! Generated because a GPU keeps a private array indexed at run time in local memory and a
//! driver need not unroll a loop of hundreds of steps.
//!
//! An element of F_p is L = ceil(bits(p) / 29) limbs of 29 bits in Montgomery form with
//! R = 2^(29 L): for BLS12-377 13 limbs and
//! R = 2^377 (BLS12-381: 14 and 2^406; BN254: 9 and 2^261). [`Field29`] derives every
//! constant from arkworks' `PrimeField` (issue 21); the tests run each field's steps against
//! arkworks. The product is product scanning, column by column (FIPS): one u64 accumulator
//! takes every product of a column, a_i b_j and m_i p_j (58-bit products, at most 2 L a
//! column, so it never overflows up to 16 limbs), and carries once a column. For BLS12-377
//! that is 338 products against the 288 of the 32-bit CIOS it replaced, but about half the
//! 64-bit operations in naga's IR, since no product is split into a word and a carry
//! (`examples/mul_ops.rs` counts both; docs/PERF.md).
//!
//! One step list ([`Field29::program`]) is read by the WGSL emitter ([`Field29::wgsl`]) and
//! by a host interpreter (the oracle, checked against arkworks with every addition checked
//! for overflow); `tests/gpu/shader_ops.rs` compares the shader itself with arkworks on the
//! device. The stored form is ceil(bits(p) / 32) packed words (x R mod p, little-endian; 12
//! for BLS12-377); `fp_unpack` and `fp_pack` move between it and the limbs.

use std::fmt::Write;
use std::sync::OnceLock;

use ark_bls12_377::Fq;
use ark_ff::PrimeField;

/// Bits of a limb.
pub const LIMB_BITS: u32 = crate::curve::LIMB29_BITS;
/// The low [`LIMB_BITS`] bits.
pub const LIMB_MASK: u32 = (1 << LIMB_BITS) - 1;
/// Limbs of one BLS12-377 element ([`bls12_377`]), 13: the curve of the register estimate
/// (`registers.rs`) and of `examples/mul_ops.rs`.
pub const LIMBS: usize = <Fq as PrimeField>::MODULUS_BIT_SIZE.div_ceil(LIMB_BITS) as usize;

/// One prime field's product on limbs of 29 bits, every constant derived from arkworks'
/// [`PrimeField`]: ceil(bits(p) / 29) limbs, R = 2^(29 limbs), p in limbs, -p^-1 mod 2^32,
/// and a packed form of ceil(bits(p) / 32) words. The column sums stay below 2^64 up to 16
/// limbs (2 L products of 58 bits and a carry), which [`Field29::of`] asserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field29 {
    limbs: usize,
    p: Vec<u32>,
    np0: u32,
    modulus_bits: u32,
}

impl Field29 {
    /// The field F's constants.
    pub fn of<F: PrimeField>() -> Field29 {
        Field29::of_modulus(F::MODULUS.as_ref(), F::MODULUS_BIT_SIZE)
    }

    /// The product of the curve's base field.
    pub fn of_curve(curve: &crate::curve::CurveSpec) -> Field29 {
        Field29::of_modulus(&curve.modulus, curve.modulus_bits)
    }

    /// The product modulo p (little-endian u64 words) of `bits` bits.
    fn of_modulus(words: &[u64], bits: u32) -> Field29 {
        let limbs = (crate::curve::radix_bits(bits, LIMB_BITS) / LIMB_BITS) as usize;
        assert!(limbs <= 16, "column sums of {limbs} limbs could pass 2^64");
        Field29 {
            limbs,
            p: split_limbs(words, LIMB_BITS, limbs),
            np0: crate::curve::neg_inv_word(words[0] as u32),
            modulus_bits: bits,
        }
    }

    /// Limbs of one element (L).
    pub fn limb_count(&self) -> usize {
        self.limbs
    }

    /// log2 R: 29 bits a limb.
    pub fn radix_bits(&self) -> u32 {
        self.limbs as u32 * LIMB_BITS
    }

    /// u32 words of the packed form (a reduced value, below p).
    pub fn packed_words(&self) -> usize {
        self.modulus_bits.div_ceil(32) as usize
    }

    /// -p^-1 mod 2^32 (the product uses its low 29 bits; [`neg_p_inv_word`] is
    /// BLS12-377's).
    pub fn np0(&self) -> u32 {
        self.np0
    }

    /// p in limbs.
    pub fn p_limbs(&self) -> &[u32] {
        &self.p
    }

    /// The product's steps. Column k < L takes a_i b_(k-i) and m_i p_(k-i) (i < k), makes
    /// m_k, adds m_k p_0 and shifts; column k >= L takes the products left and writes
    /// r_(k-L); the accumulator left at the end is r_(L-1) (at most 30 bits: the product is
    /// below 2p).
    pub fn program(&self) -> Vec<Step> {
        self.columns(|i, j| Some(Step::Ab(i, j)))
    }

    /// The square's steps: [`Field29::program`]'s, but column k takes each cross product
    /// a_i a_j (i < j) once, doubled ([`Step::Cross`]: 2 a_i times a_j), and a_(k/2)^2 where
    /// k is even: L (L + 1) / 2 products for a^2 instead of L^2 (the reduction's L^2 stay).
    /// A column's sum stays below 2^63 up to 16 limbs (L/2 + 1 products of 59 bits, L of
    /// 58), which the oracle checks.
    pub fn square_program(&self) -> Vec<Step> {
        self.columns(|i, j| match i.cmp(&j) {
            std::cmp::Ordering::Less => Some(Step::Cross(i, j)),
            std::cmp::Ordering::Equal => Some(Step::Ab(i, i)),
            std::cmp::Ordering::Greater => None,
        })
    }

    /// Product scanning, column by column: column k's products of the operands
    /// (`product(i, k - i)`, none where it gives None), then its m_i p_j, then m_k (k < L)
    /// or r_(k-L), then the shift.
    fn columns(&self, product: impl Fn(usize, usize) -> Option<Step>) -> Vec<Step> {
        let n = self.limbs;
        let mut steps = Vec::new();
        for k in 0..2 * n - 1 {
            let lo = k.saturating_sub(n - 1);
            steps.extend((lo..=k.min(n - 1)).filter_map(|i| product(i, k - i)));
            steps.extend((lo..k.min(n)).map(|i| Step::Mp(i, k - i)));
            if k < n {
                steps.extend([Step::MakeM(k), Step::Mp(k, 0)]);
            } else {
                steps.push(Step::Out(k - n));
            }
            steps.push(Step::Shift);
        }
        steps
    }

    /// An integer below 2^(29 limbs), as little-endian u64 words, in limbs.
    pub fn limbs_of(&self, words: &[u64]) -> Vec<u32> {
        split_limbs(words, LIMB_BITS, self.limbs)
    }

    /// WGSL of `fp_mul`, `fp_square` (its own steps: [`Field29::square_program`]),
    /// `fp_unpack` and `fp_pack`.
    pub fn wgsl(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "// Generated by src/gpu/shader/mul29.rs: Montgomery product a * b * 2^-{} mod p",
            self.radix_bits()
        );
        let _ = writeln!(
            s,
            "// ({} limbs of 29 bits, one u64 accumulator a column, straight-line), for a, b < p.",
            self.limbs
        );
        s += &self.product_wgsl("fp_mul(a: Fp, b: Fp)", &self.program());
        s += &self.product_wgsl("fp_square(a: Fp)", &self.square_program());
        s += &self.unpack_wgsl();
        s += &self.pack_wgsl();
        s
    }

    /// One product's function `signature -> Fp` from `steps`: b's limbs are read only
    /// where a step reads them (a square has no b), and the doubled limbs 2 a_i where a
    /// [`Step::Cross`] does.
    fn product_wgsl(&self, signature: &str, steps: &[Step]) -> String {
        let (p, np0, n) = (&self.p, self.np0, self.limbs);
        let mut s = format!("fn {signature} -> Fp {{\n");
        let has_b = steps
            .iter()
            .any(|st| matches!(st, Step::Ab(i, j) if i != j));
        let doubled = |i: usize| {
            steps
                .iter()
                .any(|st| matches!(st, Step::Cross(c, _) if *c == i))
        };
        for i in 0..n {
            let _ = writeln!(s, "    let a{i} = u64(a[{i}]);");
            if has_b {
                let _ = writeln!(s, "    let b{i} = u64(b[{i}]);");
            }
            if doubled(i) {
                // 2 a_i < 2^30 in a u32, so that the product is known to be 32 x 32 bits.
                let _ = writeln!(s, "    let d{i} = u64(a[{i}] << 1u);");
            }
        }
        let b = if has_b { "b" } else { "a" };
        s += "    var acc = 0lu;\n";
        for &step in steps {
            let _ = match step {
                Step::Ab(i, j) => writeln!(s, "    acc += a{i} * {b}{j};"),
                Step::Cross(i, j) => writeln!(s, "    acc += d{i} * a{j};"),
                Step::Mp(i, j) => writeln!(s, "    acc += m{i} * {}lu;", p[j]),
                // u32() keeps the low word (no mask: ACO kept an AND with -1 for it).
                Step::MakeM(k) => {
                    writeln!(s, "    let m{k} = u64((u32(acc) * {np0}u) & {LIMB_MASK}u);")
                }
                Step::Out(k) => writeln!(s, "    let r{k} = u32(acc & {LIMB_MASK}lu);"),
                Step::Shift => writeln!(s, "    acc >>= {LIMB_BITS}u;"),
            };
        }
        let _ = writeln!(s, "    let r{} = u32(acc);", n - 1);
        let r: Vec<String> = (0..n).map(|k| format!("r{k}")).collect();
        let _ = writeln!(s, "    return fp_reduce_once(Fp({}));\n}}\n", r.join(", "));
        s
    }

    /// Where limb i sits in the packed words: (word, offset) of its low bit, and whether it
    /// spills into the next word (a spill past the last word holds only bits at or above
    /// bits(p), zero in a reduced value).
    fn limb_place(&self, i: usize) -> (usize, u32, bool) {
        let bit = i * LIMB_BITS as usize;
        let (word, off) = (bit / 32, (bit % 32) as u32);
        (
            word,
            off,
            off + LIMB_BITS > 32 && word + 1 < self.packed_words(),
        )
    }

    fn unpack_wgsl(&self) -> String {
        let parts: Vec<String> = (0..self.limbs)
            .map(|i| {
                let (word, off, spills) = self.limb_place(i);
                let low = format!("(w[{word}] >> {off}u)");
                let v = if spills {
                    format!("({low} | (w[{}] << {}u))", word + 1, 32 - off)
                } else {
                    low
                };
                format!("{v} & {LIMB_MASK}u")
            })
            .collect();
        format!(
            "// {} packed words (x * 2^{} mod p) to {} limbs of 29 bits.\n\
             fn fp_unpack(w: Packed) -> Fp {{\n    return Fp(\n        {}\n    );\n}}\n\n",
            self.packed_words(),
            self.radix_bits(),
            self.limbs,
            parts.join(",\n        ")
        )
    }

    fn pack_wgsl(&self) -> String {
        let mut words: Vec<Vec<String>> = vec![Vec::new(); self.packed_words()];
        for i in 0..self.limbs {
            let (word, off, spills) = self.limb_place(i);
            words[word].push(format!("(a[{i}] << {off}u)"));
            if spills {
                words[word + 1].push(format!("(a[{i}] >> {}u)", 32 - off));
            }
        }
        let words: Vec<String> = words.iter().map(|w| w.join(" | ")).collect();
        format!(
            "// {} limbs of 29 bits (a reduced value) to {} packed words.\n\
             fn fp_pack(a: Fp) -> Packed {{\n    return Packed(\n        {}\n    );\n}}\n",
            self.limbs,
            self.packed_words(),
            words.join(",\n        ")
        )
    }
}

/// BLS12-377's base field (the shaders of each curve use [`Field29::of_curve`]).
pub fn bls12_377() -> &'static Field29 {
    static F: OnceLock<Field29> = OnceLock::new();
    F.get_or_init(Field29::of::<Fq>)
}

/// BLS12-377's -p^-1 mod 2^32; the product uses its low 29 bits (and the portable profile
/// its low 13: -p^-1 mod 2^k is this word's low k bits).
pub fn neg_p_inv_word() -> u32 {
    bls12_377().np0
}

/// One step of the product: `acc` is the u64 accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// acc += a_i b_j.
    Ab(usize, usize),
    /// acc += 2 a_i a_j (a square's cross product, i < j, taken once: 2 a_i times a_j).
    Cross(usize, usize),
    /// acc += m_i p_j.
    Mp(usize, usize),
    /// m_k = (acc mod 2^32) (-p^-1) mod 2^29: the low 29 bits of acc + m_k p_0 are zero.
    MakeM(usize),
    /// r_k = acc mod 2^29.
    Out(usize),
    /// acc >>= 29.
    Shift,
}

/// BLS12-377's product steps ([`Field29::program`]).
pub fn program() -> Vec<Step> {
    bls12_377().program()
}

/// `count` limbs of `bits` bits (at most 32) of an integer given as little-endian u64 words,
/// least significant first: the wide profiles' 29-bit limbs, and the portable profile's
/// 13-bit ones (`field.rs`).
pub fn split_limbs(words: &[u64], bits: u32, count: usize) -> Vec<u32> {
    let mask = (1u64 << bits) - 1;
    (0..count)
        .map(|i| {
            let bit = i * bits as usize;
            let (word, off) = (bit / 64, bit % 64);
            let mut v = words.get(word).copied().unwrap_or(0) >> off;
            if off + bits as usize > 64 && word + 1 < words.len() {
                v |= words[word + 1] << (64 - off);
            }
            (v & mask) as u32
        })
        .collect()
}

/// The steps on the host, every addition checked for overflow, then the conditional
/// subtraction of `fp_reduce_once`: the oracle of the generated code.
#[cfg(test)]
fn interpret(f: &Field29, a: &[u32], b: &[u32]) -> Vec<u32> {
    interpret_steps(f, &f.program(), a, b)
}

/// `steps` on the host (a square's with b = a), as [`interpret`].
#[cfg(test)]
fn interpret_steps(f: &Field29, steps: &[Step], a: &[u32], b: &[u32]) -> Vec<u32> {
    let (n, p, np0) = (f.limbs, &f.p, f.np0 as u64);
    let (mut acc, mut m, mut r) = (0u64, vec![0u64; n], vec![0u32; n]);
    for &step in steps {
        match step {
            Step::Ab(i, j) => acc = acc.checked_add(a[i] as u64 * b[j] as u64).unwrap(),
            Step::Cross(i, j) => acc = acc.checked_add(2 * a[i] as u64 * a[j] as u64).unwrap(),
            Step::Mp(i, j) => acc = acc.checked_add(m[i] * p[j] as u64).unwrap(),
            Step::MakeM(k) => m[k] = ((acc as u32 as u64) * np0) & LIMB_MASK as u64,
            Step::Out(k) => r[k] = acc as u32 & LIMB_MASK,
            Step::Shift => acc >>= LIMB_BITS,
        }
    }
    r[n - 1] = u32::try_from(acc).expect("the top limb fits a word");
    // r < 2p: subtract p once if r >= p, limb by limb as fp_reduce_once does.
    let mut t = vec![0u32; n];
    let mut borrow = 0u32;
    for ((ti, &ri), &pi) in t.iter_mut().zip(&r).zip(p) {
        let d = ri.wrapping_sub(pi).wrapping_sub(borrow);
        *ti = d & LIMB_MASK;
        borrow = d >> 31;
    }
    if borrow == 1 {
        r
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader::field::Arithmetic;
    use ark_bls12_377::Fq;

    /// x in F's 29-bit form: x R mod p, R = 2^(29 limbs), in limbs.
    fn form<F: PrimeField>(f: &Field29, x: &F) -> Vec<u32> {
        let r = F::from(2u64).pow([f.radix_bits() as u64]);
        f.limbs_of((*x * r).into_bigint().as_ref())
    }

    fn values<F: PrimeField>(f: &Field29) -> Vec<F> {
        let mut rng = ark_std::test_rng();
        let two = F::from(2u64);
        let r = two.pow([f.radix_bits() as u64]);
        let mut v = vec![
            F::zero(),
            F::one(),
            -F::one(),
            -two,
            two.inverse().unwrap(),
            r,
            r.inverse().unwrap(),
        ];
        v.extend((0..40).map(|_| F::rand(&mut rng)));
        v
    }

    /// The steps against arkworks' product on F, every pair of edge and random values, and
    /// the square's steps on every value.
    fn steps_match<F: PrimeField>() -> Field29 {
        let f = Field29::of::<F>();
        let xs = values::<F>(&f);
        for x in &xs {
            for y in &xs {
                let got = interpret(&f, &form(&f, x), &form(&f, y));
                assert_eq!(got, form(&f, &(*x * y)), "{x} * {y}");
            }
            let sq = interpret_steps(&f, &f.square_program(), &form(&f, x), &form(&f, x));
            assert_eq!(sq, form(&f, &x.square()), "{x}^2");
        }
        // The largest limbs (2^29 - 1, above p) bound every column's sum: no overflow.
        let top = vec![LIMB_MASK; f.limb_count()];
        interpret_steps(&f, &f.square_program(), &top, &top);
        interpret(&f, &top, &top);
        f
    }

    #[test]
    fn steps_match_arkworks_on_every_field() {
        let f = steps_match::<Fq>();
        assert_eq!((f.limb_count(), f.packed_words()), (LIMBS, 12));
        assert_eq!(&f, bls12_377());
        let f = steps_match::<ark_bls12_381::Fq>();
        assert_eq!(
            (f.limb_count(), f.packed_words(), f.radix_bits()),
            (14, 12, 406)
        );
        let f = steps_match::<ark_bn254::Fq>();
        assert_eq!(
            (f.limb_count(), f.packed_words(), f.radix_bits()),
            (9, 8, 261)
        );
    }

    /// The BLS12-377 form is the wide profiles' (`CurveProfile::to_shader_words`).
    #[test]
    fn bls12_377_form_is_the_profiles() {
        let f = bls12_377();
        for x in values::<Fq>(f) {
            let words = Arithmetic::Limbs29
                .on(crate::curve::bls12_377_g1())
                .to_shader_words::<ark_bls12_377::g1::Config>(&x);
            let mut b = ark_ff::BigInt::<6>::zero();
            for (i, w) in words.iter().enumerate() {
                b.0[i / 2] |= (*w as u64) << (32 * (i % 2));
            }
            assert_eq!(f.limbs_of(&b.0), form(f, &x));
        }
    }

    fn limbs_give_the_integer_back<F: PrimeField>() {
        let f = Field29::of::<F>();
        let mut rng = ark_std::test_rng();
        for _ in 0..20 {
            let x = F::rand(&mut rng);
            let back = f
                .limbs_of(x.into_bigint().as_ref())
                .iter()
                .rev()
                .fold(F::zero(), |acc, &l| {
                    acc * F::from(1u64 << LIMB_BITS) + F::from(l as u64)
                });
            assert_eq!(back, x);
        }
        assert!(f.p_limbs().iter().all(|&l| l <= LIMB_MASK));
    }

    #[test]
    fn limbs_give_the_integer_back_on_every_field() {
        limbs_give_the_integer_back::<Fq>();
        limbs_give_the_integer_back::<ark_bls12_381::Fq>();
        limbs_give_the_integer_back::<ark_bn254::Fq>();
    }

    /// The base fields of BLS12-377, BLS12-381 and BN254.
    fn fields() -> [Field29; 3] {
        [
            Field29::of::<Fq>(),
            Field29::of::<ark_bls12_381::Fq>(),
            Field29::of::<ark_bn254::Fq>(),
        ]
    }

    #[test]
    fn generated_code_is_straight_line() {
        for f in fields() {
            let w = f.wgsl();
            let body = &w[w.find("fn fp_mul").unwrap()..w.find("fn fp_square").unwrap()];
            for bad in ["for", "loop", "while", "[i]", "[j]"] {
                assert!(!body.contains(bad), "{bad} in the generated multiplier");
            }
            // 2 L^2 products, each one `*` by a limb of b or by m.
            let products = f
                .program()
                .iter()
                .filter(|s| matches!(s, Step::Ab(..) | Step::Mp(..)))
                .count();
            assert_eq!(products, 2 * f.limb_count() * f.limb_count());
            // Each product is one ` * `, and each m_k one more (its low word times -p^-1).
            assert_eq!(body.matches(" * ").count(), products + f.limb_count());
            // The square: L (L + 1) / 2 products for a^2, L^2 for the reduction.
            let sq = &w[w.find("fn fp_square").unwrap()..];
            let sq = &sq[..sq.find("\n}\n").unwrap()];
            let n = f.limb_count();
            assert_eq!(sq.matches(" * ").count(), n * (n + 1) / 2 + n * n + n);
            assert!(!sq.contains("b["), "the square reads no b");
        }
    }

    /// Packing and unpacking on the host, word by word as the generated text says: every
    /// bit below bits(p) has one place, none is written twice.
    fn pack_and_unpack_place_every_bit(f: &Field29) {
        let words = f.packed_words();
        let mut covered = vec![0u64; words];
        for i in 0..f.limb_count() {
            let (word, off, spills) = f.limb_place(i);
            let low = ((LIMB_MASK as u64) << off) & 0xffff_ffff;
            assert_eq!(covered[word] & low, 0, "limb {i} overlaps");
            covered[word] |= low;
            if spills {
                covered[word + 1] |= (LIMB_MASK >> (32 - off)) as u64;
            }
        }
        let bits = (f.limb_count() * LIMB_BITS as usize).min(32 * words);
        for b in 0..32 * words {
            assert_eq!((covered[b / 32] >> (b % 32)) & 1 == 1, b < bits, "bit {b}");
        }
    }

    #[test]
    fn pack_and_unpack_place_every_bit_on_every_field() {
        for f in fields() {
            pack_and_unpack_place_every_bit(&f);
        }
    }

    /// Every field's generated code parses and validates in naga with the functions it
    /// needs around it (shaders/field_limbs.wgsl, its constants).
    #[test]
    fn generated_code_validates_on_every_field() {
        use crate::gpu::shader::files;
        for f in fields() {
            let limbs = |v: &[u32]| {
                let l: Vec<String> = v.iter().map(|x| format!("{x}u")).collect();
                format!("Fp({})", l.join(", "))
            };
            let mut src = format!(
                "const LIMBS: u32 = {}u;\nconst LIMB_BITS: u32 = {LIMB_BITS}u;\n\
                 const LIMB_MASK: u32 = {LIMB_MASK}u;\nconst PACKED_WORDS: u32 = {}u;\n\
                 const P: Fp = {};\nconst R_CONVERT: Fp = {};\n",
                f.limb_count(),
                f.packed_words(),
                limbs(f.p_limbs()),
                limbs(&vec![0; f.limb_count()]),
            );
            src += files::FIELD_LIMBS.text;
            src += &f.wgsl();
            let src = crate::gpu::shader::unroll::expand(&src).unwrap();
            let module = naga::front::wgsl::parse_str(&src)
                .unwrap_or_else(|e| panic!("{} limbs: {}", f.limb_count(), e.emit_to_string(&src)));
            naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::SHADER_INT64,
            )
            .validate(&module)
            .unwrap_or_else(|e| panic!("{} limbs: {e:?}", f.limb_count()));
        }
    }
}
