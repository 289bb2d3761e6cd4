//! Chunk sums to bucket sums: merge levels of bounded fan-in.

/// Most partial sums one GPU thread adds in one merge level: a bucket cut into more chunks
/// than this is merged over several levels (a tree of fan-in `MERGE_FANIN`), so no thread
/// serializes a hot bucket.
pub const MERGE_FANIN: u32 = 32;

/// Most merge levels: enough for 2^31 entries in one bucket at [`super::MIN_CHUNK_ENTRIES`] each
/// (2^26 chunks, 32^6 > 2^26).
pub const MAX_MERGE_LEVELS: usize = 6;

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
