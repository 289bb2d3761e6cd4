//! Scalars to signed c-bit digits, the window-size cost model, and the bucket entry lists
//! (grouped by bucket) that the GPU accumulation stage consumes.

use ark_bls12_377::{Fr, G1Affine};
use ark_ec::AffineRepr;
use ark_ff::PrimeField;
use rayon::prelude::*;

use crate::config::{MAX_WINDOW_BITS, MIN_WINDOW_BITS};

/// Bit length of the scalar field modulus r (253 for BLS12-377).
pub const SCALAR_BITS: u32 = Fr::MODULUS_BIT_SIZE;

/// Field multiplications in one mixed (projective + affine) addition, as in the shaders.
pub const MIXED_ADD_MULS: u64 = 11;
/// Field multiplications in one projective addition, as in the shaders.
pub const ADD_MULS: u64 = 12;

/// Most entries one GPU thread adds in bucket accumulation. A bigger bucket (skewed scalars:
/// one repeated value, 0/1 witnesses, or the top window, where half the points land in one
/// bucket) is split into chunks summed by separate threads and merged afterwards. The cap
/// also keeps each invocation far below the 65535 loop iterations after which Mesa's
/// llvmpipe/lavapipe silently stops a loop (one chunk entry costs about 30 iterations).
pub const MAX_CHUNK_ENTRIES: u32 = 1024;

/// Fewest entries a chunk is cut at: below this the merge work (one projective addition per
/// chunk) would cost more than the parallelism it buys.
pub const MIN_CHUNK_ENTRIES: u32 = 32;

/// Accumulation threads the chunk size aims for: enough to fill a large GPU (an H200 runs
/// about 2^18 threads at once; a thread per chunk also needs a few chunks in flight per
/// core), so the chunk cap is the entries over this, within
/// [`MIN_CHUNK_ENTRIES`]..=[`MAX_CHUNK_ENTRIES`].
pub const TARGET_CHUNKS: u32 = 1 << 16;

/// Most partial sums one GPU thread adds in one merge level: a bucket cut into more chunks
/// than this is merged over several levels (a tree of fan-in `MERGE_FANIN`), so no thread
/// serializes a hot bucket.
pub const MERGE_FANIN: u32 = 32;

/// Most merge levels: enough for 2^31 entries in one bucket at [`MIN_CHUNK_ENTRIES`] each
/// (2^26 chunks, 32^6 > 2^26).
pub const MAX_MERGE_LEVELS: usize = 6;

/// The chunk cap for a plan of `entries` entries: `entries / TARGET_CHUNKS`, clamped to
/// [`MIN_CHUNK_ENTRIES`]..=[`MAX_CHUNK_ENTRIES`].
pub fn chunk_entries(entries: usize) -> u32 {
    let per = entries / TARGET_CHUNKS as usize;
    per.clamp(MIN_CHUNK_ENTRIES as usize, MAX_CHUNK_ENTRIES as usize) as u32
}

/// Bit 31 of an entry: the digit was negative, so the point is subtracted.
pub const SIGN_BIT: u32 = 1 << 31;

/// Number of signed c-bit windows for a `SCALAR_BITS`-bit scalar.
///
/// Digits lie in (-2^(c-1), 2^(c-1)], so a window may carry one into the next. With
/// ceil((SCALAR_BITS + 1) / c) windows the top window holds fewer than c - 1 scalar bits,
/// so its digit plus a carry never exceeds 2^(c-1) and never carries out.
pub fn num_windows(c: u32) -> u32 {
    (SCALAR_BITS + 1).div_ceil(c)
}

/// Buckets per window with signed digits: one per magnitude 1..=2^(c-1).
pub fn buckets_per_window(c: u32) -> u32 {
    1 << (c - 1)
}

/// Signed c-bit windows that scalars of at most `bits` bits need: ceil((bits + 1) / c), so
/// that the top window never carries out; none for `bits = 0` (all scalars zero).
pub fn windows_for_bits(bits: u32, c: u32) -> u32 {
    if bits == 0 {
        0
    } else {
        (bits.min(SCALAR_BITS) + 1).div_ceil(c)
    }
}

/// Field multiplications of the GPU pipeline for n points at window size c: n mixed
/// additions per window into the buckets, then two projective additions per bucket for the
/// running sums of the reduction.
pub fn pippenger_cost(n: usize, c: u32) -> u64 {
    pippenger_cost_for_bits(n, c, SCALAR_BITS)
}

/// [`pippenger_cost`] for scalars of at most `bits` bits (only the windows they need).
pub fn pippenger_cost_for_bits(n: usize, c: u32, bits: u32) -> u64 {
    let w = windows_for_bits(bits, c) as u64;
    let b = buckets_per_window(c) as u64;
    w * (n as u64 * MIXED_ADD_MULS + 2 * b * ADD_MULS)
}

/// The window size c that minimises [`pippenger_cost`] for n points.
pub fn best_window_bits(n: usize) -> u32 {
    best_window_bits_for(n, SCALAR_BITS)
}

/// The window size c that minimises [`pippenger_cost_for_bits`] for n scalars of at most
/// `bits` bits.
pub fn best_window_bits_for(n: usize, bits: u32) -> u32 {
    (MIN_WINDOW_BITS.max(2)..=MAX_WINDOW_BITS)
        .min_by_key(|&c| (pippenger_cost_for_bits(n, c, bits.max(1)), c))
        .expect("non-empty range")
}

/// The scalars as little-endian integers (zero where the base is the point at infinity, which
/// contributes nothing), and the largest bit length among them.
pub fn scalar_integers(bases: &[G1Affine], scalars: &[Fr]) -> (Vec<[u64; 4]>, u32) {
    assert_eq!(bases.len(), scalars.len());
    let ints: Vec<[u64; 4]> = scalars
        .par_iter()
        .zip(bases.par_iter())
        .map(|(s, p)| {
            if p.is_zero() {
                [0; 4]
            } else {
                s.into_bigint().0
            }
        })
        .collect();
    let bits = ints
        .par_iter()
        .map(|k| {
            (0..4)
                .rev()
                .find(|&i| k[i] != 0)
                .map_or(0, |i| 64 * i as u32 + 64 - k[i].leading_zeros())
        })
        .max()
        .unwrap_or(0);
    (ints, bits)
}

/// Raw bits [start, start + c) of a little-endian integer given as 64-bit limbs.
fn window_bits_of(limbs: &[u64], start: u32, c: u32) -> u32 {
    let word = (start / 64) as usize;
    let off = start % 64;
    if word >= limbs.len() {
        return 0;
    }
    let mut v = limbs[word] >> off;
    if off + c > 64 && word + 1 < limbs.len() {
        v |= limbs[word + 1] << (64 - off);
    }
    (v & ((1u64 << c) - 1)) as u32
}

/// Writes the signed c-bit digits of the little-endian integer `limbs` (least significant
/// window first) into `out`. Each digit d is in (-2^(c-1), 2^(c-1)] and
/// sum_w d_w 2^(c w) equals the integer provided `out` has at least
/// ceil((bit length + 1) / c) digits (the top window then never carries out).
pub fn signed_digits_of_limbs(limbs: &[u64], c: u32, out: &mut [i32]) {
    let half = 1u32 << (c - 1);
    let mut carry = 0u32;
    for (w, d) in out.iter_mut().enumerate() {
        let raw = window_bits_of(limbs, w as u32 * c, c) + carry;
        if raw > half {
            *d = raw as i32 - (1i32 << c);
            carry = 1;
        } else {
            *d = raw as i32;
            carry = 0;
        }
    }
    debug_assert_eq!(carry, 0, "top window carried out");
}

/// Writes the plain (unsigned) c-bit windows of `limbs` into `out`, digits in [0, 2^c).
pub fn unsigned_digits_of_limbs(limbs: &[u64], c: u32, out: &mut [i32]) {
    for (w, d) in out.iter_mut().enumerate() {
        *d = window_bits_of(limbs, w as u32 * c, c) as i32;
    }
}

/// Writes the signed c-bit digits of `scalar` (least significant window first) into `out`,
/// which must hold [`num_windows`]`(c)` digits. Each digit d is in (-2^(c-1), 2^(c-1)] and
/// sum_w d_w 2^(c w) equals the scalar.
pub fn signed_digits(scalar: &Fr, c: u32, out: &mut [i32]) {
    signed_digits_of_limbs(&scalar.into_bigint().0, c, out);
}

/// The digits of many scalars, one row of `num_windows` digits per point.
///
/// Row i multiplies point i: the point is placed, in window w, into the bucket of |digit|,
/// subtracted when the digit is negative. A zero digit places nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigitMatrix {
    /// Window size c.
    pub window_bits: u32,
    /// Digits per row.
    pub num_windows: usize,
    /// Row-major digits, `rows() * num_windows` of them.
    pub digits: Vec<i32>,
}

impl DigitMatrix {
    /// Signed digits of `scalars` at window size c; a point at infinity gets a zero row.
    pub fn new(bases: &[G1Affine], scalars: &[Fr], c: u32) -> Self {
        assert_eq!(bases.len(), scalars.len());
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = num_windows(c) as usize;
        let mut digits = vec![0i32; scalars.len() * nw];
        digits
            .par_chunks_mut(nw)
            .zip(scalars.par_iter().zip(bases.par_iter()))
            .for_each(|(d, (s, p))| {
                if !p.is_zero() {
                    signed_digits(s, c, d);
                }
            });
        Self {
            window_bits: c,
            num_windows: nw,
            digits,
        }
    }

    /// Digits of integers of at most `bits` bits (little-endian 64-bit limbs), signed as in
    /// the engine or plain unsigned windows as in the SRE paper. For statistics at scalar
    /// widths other than BLS12-377's.
    pub fn from_integers(ints: &[Vec<u64>], bits: u32, c: u32, signed: bool) -> Self {
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = if signed {
            (bits + 1).div_ceil(c)
        } else {
            bits.div_ceil(c)
        } as usize;
        let mut digits = vec![0i32; ints.len() * nw];
        digits
            .par_chunks_mut(nw.max(1))
            .zip(ints.par_iter())
            .for_each(|(d, k)| {
                if signed {
                    signed_digits_of_limbs(k, c, d)
                } else {
                    unsigned_digits_of_limbs(k, c, d)
                }
            });
        Self {
            window_bits: c,
            num_windows: nw,
            digits,
        }
    }

    /// Signed digits of scalar integers (from [`scalar_integers`]) in `windows` windows of c
    /// bits; `windows` must cover the largest integer ([`windows_for_bits`]).
    pub fn from_scalar_integers(ints: &[[u64; 4]], c: u32, windows: u32) -> Self {
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = windows as usize;
        let mut digits = vec![0i32; ints.len() * nw];
        if nw > 0 {
            digits
                .par_chunks_mut(nw)
                .zip(ints.par_iter())
                .for_each(|(d, k)| signed_digits_of_limbs(k, c, d));
        }
        Self {
            window_bits: c,
            num_windows: nw,
            digits,
        }
    }

    /// Number of rows (points).
    pub fn rows(&self) -> usize {
        self.digits.len() / self.num_windows.max(1)
    }

    /// The digits of row i.
    pub fn row(&self, i: usize) -> &[i32] {
        &self.digits[i * self.num_windows..(i + 1) * self.num_windows]
    }

    /// Number of nonzero digits: the bucket entries, that is the additions of plain point
    /// merging.
    pub fn nonzero(&self) -> usize {
        self.digits.par_iter().filter(|&&d| d != 0).count()
    }
}

/// The bucket entry lists of one MSM, grouped by bucket (compressed sparse rows).
///
/// Bucket g = w * B + (|d| - 1) of window w owns `entries[offsets[g]..offsets[g + 1]]`; an
/// entry is a point index, with [`SIGN_BIT`] set when the digit was negative. Points at
/// infinity and zero digits place no entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketPlan {
    /// Window size c.
    pub window_bits: u32,
    /// Number of windows W.
    pub num_windows: u32,
    /// Buckets per window B.
    pub buckets_per_window: u32,
    /// W * B + 1 offsets into `entries`.
    pub offsets: Vec<u32>,
    /// Point indices (with sign bit), grouped by bucket, ascending point index in a bucket.
    pub entries: Vec<u32>,
    /// Most entries in one chunk, [`chunk_entries`] of the entry count.
    pub chunk_cap: u32,
    /// Chunk boundaries: chunk k owns `entries[chunk_offsets[k]..chunk_offsets[k + 1]]`, at
    /// most `chunk_cap` entries, all of one bucket.
    pub chunk_offsets: Vec<u32>,
    /// Bucket g is the sum of chunks `bucket_chunks[g]..bucket_chunks[g + 1]` (none when the
    /// bucket is empty).
    pub bucket_chunks: Vec<u32>,
}

impl BucketPlan {
    /// Builds the plan for `bases` and `scalars` (same length, below 2^31) at window size c.
    pub fn new(bases: &[G1Affine], scalars: &[Fr], c: u32) -> Self {
        Self::from_digits(&DigitMatrix::new(bases, scalars, c))
    }

    /// Builds the plan for signed digit rows (row i multiplies point i; fewer than 2^31 rows).
    pub fn from_digits(m: &DigitMatrix) -> Self {
        let c = m.window_bits;
        let n = m.rows();
        assert!(n < SIGN_BIT as usize);
        assert!((1..=MAX_WINDOW_BITS).contains(&c));
        let nw = m.num_windows;
        let nb = buckets_per_window(c) as usize;
        let digits = &m.digits;
        debug_assert!(digits
            .iter()
            .all(|d| d.unsigned_abs() <= buckets_per_window(c)));

        // Count per bucket, window by window in parallel.
        let counts: Vec<Vec<u32>> = (0..nw)
            .into_par_iter()
            .map(|w| {
                let mut cnt = vec![0u32; nb];
                for i in 0..n {
                    let d = digits[i * nw + w];
                    if d != 0 {
                        cnt[d.unsigned_abs() as usize - 1] += 1;
                    }
                }
                cnt
            })
            .collect();

        let mut offsets = Vec::with_capacity(nw * nb + 1);
        let mut total = 0u32;
        for cnt in &counts {
            for &k in cnt {
                offsets.push(total);
                total += k;
            }
        }
        offsets.push(total);

        // Fill each window's slice of `entries` in parallel.
        let mut entries = vec![0u32; total as usize];
        let mut slices = Vec::with_capacity(nw);
        let mut rest: &mut [u32] = &mut entries;
        for w in 0..nw {
            let len = (offsets[(w + 1) * nb] - offsets[w * nb]) as usize;
            let (head, tail) = rest.split_at_mut(len);
            slices.push(head);
            rest = tail;
        }
        slices.into_par_iter().enumerate().for_each(|(w, slice)| {
            let base = offsets[w * nb];
            let mut cursor: Vec<u32> = offsets[w * nb..(w + 1) * nb]
                .iter()
                .map(|&o| o - base)
                .collect();
            for i in 0..n {
                let d = digits[i * nw + w];
                if d != 0 {
                    let k = d.unsigned_abs() as usize - 1;
                    let sign = if d < 0 { SIGN_BIT } else { 0 };
                    slice[cursor[k] as usize] = i as u32 | sign;
                    cursor[k] += 1;
                }
            }
        });

        let chunk_cap = chunk_entries(entries.len());
        let (chunk_offsets, bucket_chunks) = chunk(&offsets, chunk_cap);
        Self {
            window_bits: c,
            num_windows: nw as u32,
            buckets_per_window: nb as u32,
            offsets,
            entries,
            chunk_cap,
            chunk_offsets,
            bucket_chunks,
        }
    }

    /// Number of accumulation chunks.
    pub fn num_chunks(&self) -> u32 {
        self.chunk_offsets.len() as u32 - 1
    }

    /// Total number of buckets, W * B.
    pub fn total_buckets(&self) -> u32 {
        self.num_windows * self.buckets_per_window
    }
}

#[cfg(test)]
impl BucketPlan {
    /// The MSM this plan describes over `points`, summed on the CPU bucket by bucket (each
    /// bucket times its magnitude, then Horner over windows): the reference the plan's
    /// producers are tested against. Panics if an entry places the point at infinity.
    pub(crate) fn sum_on_cpu(&self, points: &[G1Affine]) -> ark_bls12_377::G1Projective {
        use ark_bls12_377::G1Projective;
        use ark_ff::Zero;
        let windows: Vec<G1Projective> = (0..self.num_windows)
            .map(|w| {
                let mut sum = G1Projective::zero();
                for k in 0..self.buckets_per_window {
                    let g = (w * self.buckets_per_window + k) as usize;
                    let mut bucket = G1Projective::zero();
                    for &e in &self.entries[self.offsets[g] as usize..self.offsets[g + 1] as usize]
                    {
                        let p = points[(e & !SIGN_BIT) as usize];
                        assert!(!p.is_zero(), "point at infinity placed");
                        if e & SIGN_BIT != 0 {
                            bucket -= p;
                        } else {
                            bucket += p;
                        }
                    }
                    sum += bucket * Fr::from(k as u64 + 1);
                }
                sum
            })
            .collect();
        crate::cpu::window_reduction(&windows, self.window_bits)
    }
}

/// Splits each bucket's entry range into chunks of at most `cap` entries.
fn chunk(offsets: &[u32], cap: u32) -> (Vec<u32>, Vec<u32>) {
    let mut chunk_offsets = Vec::with_capacity(offsets.len());
    let mut bucket_chunks = Vec::with_capacity(offsets.len());
    bucket_chunks.push(0);
    for g in offsets.windows(2) {
        let mut start = g[0];
        while start < g[1] {
            chunk_offsets.push(start);
            start = start.saturating_add(cap);
        }
        bucket_chunks.push(chunk_offsets.len() as u32);
    }
    chunk_offsets.push(*offsets.last().expect("at least one offset"));
    (chunk_offsets, bucket_chunks)
}

/// One level of the merge of chunk sums into bucket sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeLevel {
    /// Where this level's group boundaries start in [`MergePlan::groups`].
    pub group_base: u32,
    /// Groups (outputs) of this level; group g sums its inputs
    /// `groups[group_base + g]..groups[group_base + g + 1]`.
    pub num_groups: u32,
    /// Inputs of this level (the previous level's groups, or the chunks).
    pub num_inputs: u32,
}

/// How the chunk sums become bucket sums: levels of at most [`MERGE_FANIN`] inputs per
/// output, all of one bucket; the last level has exactly one group per bucket (empty for an
/// empty bucket), so it writes the bucket sums.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergePlan {
    /// Every level's group boundaries, level after level.
    pub groups: Vec<u32>,
    /// The levels, first to last (at least one).
    pub levels: Vec<MergeLevel>,
}

impl MergePlan {
    /// The merge of a plan's chunks (`bucket_chunks`: bucket g owns chunks
    /// `bucket_chunks[g]..bucket_chunks[g + 1]`) with fan-in at most `fanin` (>= 2).
    pub fn new(bucket_chunks: &[u32], fanin: u32) -> Self {
        assert!(fanin >= 2);
        let mut counts: Vec<u32> = bucket_chunks.windows(2).map(|w| w[1] - w[0]).collect();
        let mut inputs = *bucket_chunks.last().unwrap_or(&0);
        let mut groups = Vec::new();
        let mut levels = Vec::new();
        loop {
            let last = counts.iter().all(|&k| k <= fanin);
            let group_base = groups.len() as u32;
            let mut at = 0u32;
            groups.push(0);
            for k in counts.iter_mut() {
                if last {
                    at += *k;
                    groups.push(at);
                    continue;
                }
                let parts = k.div_ceil(fanin);
                for p in 0..parts {
                    at += fanin.min(*k - p * fanin);
                    groups.push(at);
                }
                *k = parts;
            }
            let num_groups = groups.len() as u32 - group_base - 1;
            levels.push(MergeLevel {
                group_base,
                num_groups,
                num_inputs: inputs,
            });
            inputs = num_groups;
            if last {
                return Self { groups, levels };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{random_bases, random_scalars};
    use ark_bls12_377::G1Projective;
    use ark_ec::VariableBaseMSM;
    use ark_ff::{BigInteger, Field, Zero};

    fn edge_scalars() -> Vec<Fr> {
        let mut v = vec![
            Fr::zero(),
            Fr::from(1u64),
            Fr::from(2u64),
            -Fr::from(1u64),
            -Fr::from(2u64),
        ];
        let mut top = <Fr as PrimeField>::BigInt::from(1u64);
        for _ in 0..252 {
            top.mul2();
        }
        v.push(Fr::from_bigint(top).unwrap()); // 2^252
        v.extend(random_scalars(20, 7));
        v
    }

    #[test]
    fn signed_digits_reconstruct_every_window_size() {
        for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
            let nw = num_windows(c) as usize;
            let half = 1i64 << (c - 1);
            for k in edge_scalars() {
                let mut d = vec![0i32; nw];
                signed_digits(&k, c, &mut d);
                let mut acc = Fr::zero();
                for &di in d.iter().rev() {
                    assert!(
                        (di as i64) > -half && (di as i64) <= half,
                        "c={c} digit {di}"
                    );
                    acc *= Fr::from(1u64 << c);
                    acc += if di < 0 {
                        -Fr::from((-di) as u64)
                    } else {
                        Fr::from(di as u64)
                    };
                }
                assert_eq!(acc, k, "c={c}");
            }
        }
    }

    #[test]
    fn cost_model_picks_a_valid_minimum() {
        for log_n in 0..24 {
            let n = 1usize << log_n;
            let c = best_window_bits(n);
            assert!((2..=MAX_WINDOW_BITS).contains(&c));
            for other in 2..=MAX_WINDOW_BITS {
                assert!(pippenger_cost(n, c) <= pippenger_cost(n, other));
            }
        }
        // Bigger inputs never pick a smaller window.
        let picks: Vec<u32> = (0..24).map(|l| best_window_bits(1 << l)).collect();
        assert!(picks.windows(2).all(|w| w[0] <= w[1]), "{picks:?}");
        assert_eq!(best_window_bits(1 << 20), 16);
    }

    /// The plan, summed bucket by bucket on the CPU, gives arkworks' MSM.
    #[test]
    fn bucket_plan_sums_to_the_msm() {
        let n = 300;
        let mut bases = random_bases(n, 3);
        let mut scalars = random_scalars(n, 4);
        bases[5] = G1Affine::identity();
        scalars[7] = Fr::zero();
        scalars[8] = -Fr::from(1u64);
        let expected = G1Projective::msm(&bases, &scalars).unwrap();
        for c in [1, 2, 5, 8, 13, 16] {
            let plan = BucketPlan::new(&bases, &scalars, c);
            assert_eq!(plan.offsets.len(), plan.total_buckets() as usize + 1);
            let acc = plan.sum_on_cpu(&bases);
            assert_eq!(acc, expected, "c={c}");
        }
    }

    #[test]
    fn chunk_cap_follows_the_entry_count_within_bounds() {
        let t = TARGET_CHUNKS as usize;
        let (lo, hi) = (MIN_CHUNK_ENTRIES as usize, MAX_CHUNK_ENTRIES as usize);
        assert_eq!(chunk_entries(0), MIN_CHUNK_ENTRIES);
        for per in [lo - 1, lo, lo + 1, hi - 1, hi, hi + 1] {
            for e in [per * t - 1, per * t, per * t + 1] {
                let want = (e / t).clamp(lo, hi) as u32;
                assert_eq!(chunk_entries(e), want, "{e} entries");
            }
        }
    }

    /// Sums of the chunk counts, level by level, end with one group per bucket holding all
    /// of its chunks, and no group takes more than the fan-in or mixes buckets.
    #[test]
    fn merge_levels_bound_the_fanin() {
        let f = MERGE_FANIN;
        for (sizes, want_levels) in [
            (vec![0, 0, 0], 1),
            (vec![1, 0, f - 1], 1),
            (vec![f], 1),
            (vec![f + 1], 2),
            (vec![3, f * f], 2),
            (vec![f * f + 1, 0], 3),
            (vec![f * f * f + 1], 4),
        ] {
            let mut bc = vec![0u32];
            for s in &sizes {
                bc.push(bc.last().unwrap() + s);
            }
            let plan = MergePlan::new(&bc, f);
            assert_eq!(plan.levels.len(), want_levels, "{sizes:?}");
            assert!(plan.levels.len() <= MAX_MERGE_LEVELS);
            // Follow every chunk's bucket through the levels.
            let mut owner: Vec<usize> = (0..sizes.len())
                .flat_map(|g| std::iter::repeat_n(g, sizes[g] as usize))
                .collect();
            for (i, lv) in plan.levels.iter().enumerate() {
                assert_eq!(lv.num_inputs as usize, owner.len());
                let gs = &plan.groups[lv.group_base as usize..][..lv.num_groups as usize + 1];
                assert_eq!(gs[0], 0);
                assert_eq!(*gs.last().unwrap() as usize, owner.len());
                let last = i + 1 == plan.levels.len();
                let mut next = Vec::new();
                for (g, w) in gs.windows(2).enumerate() {
                    assert!(w[1] >= w[0] && w[1] - w[0] <= f);
                    let members = &owner[w[0] as usize..w[1] as usize];
                    let bucket = if last { g } else { members[0] };
                    assert!(members.iter().all(|&b| b == bucket), "{sizes:?}");
                    next.push(bucket);
                }
                owner = next;
            }
            assert_eq!(owner, (0..sizes.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn windows_follow_the_largest_scalar() {
        let bases = random_bases(4, 1);
        for c in [2, 5, 16] {
            assert_eq!(windows_for_bits(0, c), 0);
            assert_eq!(windows_for_bits(SCALAR_BITS, c), num_windows(c));
            for bits in [1u32, 7, 8, 9, 64, 65, 252] {
                let k = Fr::from(2u64).pow([bits as u64 - 1]); // bit length `bits`
                let scalars = [k, Fr::from(1u64), Fr::zero(), -k];
                let (ints, top) = scalar_integers(&bases[..3], &scalars[..3]);
                assert_eq!(top, bits.max(1));
                let w = windows_for_bits(top, c);
                let d = DigitMatrix::from_scalar_integers(&ints, c, w);
                let full = DigitMatrix::new(&bases[..3], &scalars[..3], c);
                for i in 0..3 {
                    assert_eq!(d.row(i), &full.row(i)[..w as usize], "c={c} bits={bits}");
                    assert!(full.row(i)[w as usize..].iter().all(|&x| x == 0));
                }
            }
        }
        // A scalar on the point at infinity does not count.
        let mut b = bases.clone();
        b[0] = G1Affine::identity();
        let (_, top) = scalar_integers(&b[..2], &[-Fr::from(1u64), Fr::from(3u64)]);
        assert_eq!(top, 2);
    }

    #[test]
    fn chunks_cover_buckets_within_the_cap() {
        let m = MAX_CHUNK_ENTRIES;
        for sizes in [
            vec![0, 0],
            vec![m - 1, m, m + 1],
            vec![0, 3 * m + 5, 0, 1],
            vec![],
        ] {
            let mut offsets = vec![0u32];
            for s in &sizes {
                offsets.push(offsets.last().unwrap() + s);
            }
            let (co, bc) = chunk(&offsets, m);
            assert_eq!(bc.len(), offsets.len());
            for (g, s) in sizes.iter().enumerate() {
                let (a, b) = (bc[g] as usize, bc[g + 1] as usize);
                assert_eq!(b - a, s.div_ceil(m) as usize, "bucket {g} of {sizes:?}");
                assert_eq!(co[a], offsets[g]);
                assert_eq!(co[b], offsets[g + 1]);
                for k in a..b {
                    assert!(co[k + 1] > co[k] && co[k + 1] - co[k] <= m);
                }
            }
        }
    }

    #[test]
    fn window_count_covers_the_scalar() {
        for c in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
            assert!(num_windows(c) * c > SCALAR_BITS);
            assert!((num_windows(c) - 1) * c <= SCALAR_BITS);
            assert_eq!(Fr::MODULUS.num_bits(), SCALAR_BITS);
        }
    }

    mod properties {
        use super::*;
        use ark_ff::BigInteger;
        use proptest::prelude::*;

        fn scalar(bytes: [u8; 32]) -> Fr {
            Fr::from_le_bytes_mod_order(&bytes)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            /// Signed digits recompose to the scalar at every window size, each within
            /// (-2^(c-1), 2^(c-1)], and the trimmed matrix keeps exactly the needed windows.
            #[test]
            fn signed_digits_recompose(bytes in any::<[u8; 32]>(), shift in 0u32..253, c in 1u32..=16) {
                let k = scalar(bytes).into_bigint() >> shift; // small scalars too
                let s = Fr::from_bigint(k).unwrap();
                let (ints, bits) = scalar_integers(&random_bases(1, 1), &[s]);
                prop_assert_eq!(bits, k.num_bits());
                let w = windows_for_bits(bits, c);
                let d = DigitMatrix::from_scalar_integers(&ints, c, w);
                let half = 1i64 << (c - 1);
                let mut acc = Fr::zero();
                for &di in d.row(0).iter().rev() {
                    prop_assert!((di as i64) > -half && (di as i64) <= half);
                    acc *= Fr::from(1u64 << c);
                    acc += if di < 0 { -Fr::from((-di) as u64) } else { Fr::from(di as u64) };
                }
                prop_assert_eq!(acc, s);
            }

            /// Every nonzero digit becomes exactly one entry, in the bucket of its magnitude
            /// and window, signed as the digit; chunks tile each bucket within the cap.
            #[test]
            fn bucket_plans_place_every_digit_once(
                rows in 1usize..40,
                c in 1u32..=6,
                seed in any::<u64>(),
            ) {
                use ark_std::rand::{rngs::StdRng, Rng, SeedableRng};
                let mut rng = StdRng::seed_from_u64(seed);
                let nw = 3usize;
                let half = 1i32 << (c - 1);
                let digits: Vec<i32> = (0..rows * nw)
                    .map(|_| if rng.gen_bool(0.3) { 0 } else { rng.gen_range(-half + 1..=half) })
                    .collect();
                let m = DigitMatrix { window_bits: c, num_windows: nw, digits: digits.clone() };
                let plan = BucketPlan::from_digits(&m);
                let mut seen = vec![0i32; rows * nw];
                let b = plan.buckets_per_window as usize;
                for g in 0..plan.total_buckets() as usize {
                    let (w, mag) = (g / b, g % b + 1);
                    for &e in &plan.entries[plan.offsets[g] as usize..plan.offsets[g + 1] as usize] {
                        let i = (e & !SIGN_BIT) as usize;
                        let d = if e & SIGN_BIT != 0 { -(mag as i32) } else { mag as i32 };
                        prop_assert_eq!(seen[i * nw + w], 0);
                        seen[i * nw + w] = d;
                    }
                }
                prop_assert_eq!(seen, digits);
                for g in 0..plan.total_buckets() as usize {
                    let (a, z) = (plan.bucket_chunks[g] as usize, plan.bucket_chunks[g + 1] as usize);
                    if a < z {
                        prop_assert_eq!(plan.chunk_offsets[a], plan.offsets[g]);
                        prop_assert_eq!(plan.chunk_offsets[z], plan.offsets[g + 1]);
                    }
                    for k in a..z {
                        let len = plan.chunk_offsets[k + 1] - plan.chunk_offsets[k];
                        prop_assert!(len >= 1 && len <= plan.chunk_cap);
                    }
                }
            }

            /// Merge plans: one group per bucket at the end, no group over the fan-in.
            #[test]
            fn merge_plans_end_with_one_group_per_bucket(
                counts in proptest::collection::vec(0u32..3000, 0..20),
                fanin in 2u32..40,
            ) {
                let mut bc = vec![0u32];
                for k in &counts {
                    bc.push(bc.last().unwrap() + k);
                }
                let plan = MergePlan::new(&bc, fanin);
                let last = plan.levels.last().unwrap();
                prop_assert_eq!(last.num_groups as usize, counts.len());
                prop_assert_eq!(plan.levels[0].num_inputs, *bc.last().unwrap());
                for (i, lv) in plan.levels.iter().enumerate() {
                    let gs = &plan.groups[lv.group_base as usize..][..lv.num_groups as usize + 1];
                    prop_assert_eq!(*gs.last().unwrap(), lv.num_inputs);
                    prop_assert!(gs.windows(2).all(|w| w[1] >= w[0] && w[1] - w[0] <= fanin));
                    if i > 0 {
                        prop_assert_eq!(lv.num_inputs, plan.levels[i - 1].num_groups);
                    }
                }
            }
        }
    }
}
