//! Digits to bucket entry lists (compressed sparse rows), each bucket cut into chunks that
//! one GPU thread adds.

use ark_ec::short_weierstrass::Affine;
#[cfg(test)]
use ark_ec::short_weierstrass::Projective;
#[cfg(test)]
use ark_ec::AffineRepr;
use rayon::prelude::*;

use super::{buckets_per_window, DigitMatrix, SIGN_BIT};
use crate::config::MAX_WINDOW_BITS;
use crate::curve::{Fr, GpuCurve};

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

/// The chunk cap for a plan of `entries` entries: `entries / TARGET_CHUNKS`, clamped to
/// [`MIN_CHUNK_ENTRIES`]..=[`MAX_CHUNK_ENTRIES`].
pub fn chunk_entries(entries: usize) -> u32 {
    let per = entries / TARGET_CHUNKS as usize;
    per.clamp(MIN_CHUNK_ENTRIES as usize, MAX_CHUNK_ENTRIES as usize) as u32
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
    pub fn new<C: GpuCurve>(bases: &[Affine<C>], scalars: &[Fr<C>], c: u32) -> Self {
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
        let counts: Vec<Vec<u32>> = crate::host_pool::install(|| {
            (0..nw)
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
                .collect()
        });

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
        crate::host_pool::install(|| {
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
            })
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
    pub(crate) fn sum_on_cpu<C: GpuCurve>(&self, points: &[Affine<C>]) -> Projective<C> {
        use ark_ff::Zero;
        let windows: Vec<Projective<C>> = (0..self.num_windows)
            .map(|w| {
                let mut sum = Projective::<C>::zero();
                for k in 0..self.buckets_per_window {
                    let g = (w * self.buckets_per_window + k) as usize;
                    let mut bucket = Projective::<C>::zero();
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
                    sum += bucket * Fr::<C>::from(k as u64 + 1);
                }
                sum
            })
            .collect();
        crate::cpu::window_reduction(&windows, self.window_bits)
    }
}

/// Splits each bucket's entry range into chunks of at most `cap` entries.
pub(super) fn chunk(offsets: &[u32], cap: u32) -> (Vec<u32>, Vec<u32>) {
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
