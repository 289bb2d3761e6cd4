//! The buffers of one call, by role: what each holds, its usage flags and its name in
//! labels and errors.

/// The buffers of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    /// The call's stored bases (one-shot bases and SRE's merged points), uploaded in
    /// arkworks' form, checked, and converted in place where the profile converts.
    Bases,
    /// Accumulation chunk boundaries.
    ChunkOffsets,
    /// Bucket entries (point index and sign).
    Entries,
    /// The merge levels' group boundaries, all levels back to back.
    MergeGroups,
    /// Chunk sums, and the even merge levels' input.
    ChunkSums,
    /// The odd merge levels' input.
    MergeTmp,
    /// Bucket sums.
    Buckets,
    /// Per-segment partial sums of the reduction.
    Partials,
    /// Window sums.
    Sums,
    /// Window sums, mapped for reading.
    Readback,
    /// The stage parameters.
    Params,
    /// One parameter block per merge level.
    MergeParams,
    /// Host-written upload data, copied into the slots above on the GPU (the scalars have
    /// their own, `ScalarStaging`).
    Staging,
    /// Streamed chunk j of the scalars (`SortLayout::scalar_chunks`), host-written (for j
    /// > 0) while the GPU copies and counts the chunks before it.
    ScalarStaging(u8),
    /// Resolved timestamps.
    TimestampResolve,
    /// Timestamps, mapped for reading.
    TimestampRead,
    /// Scalars as arkworks keeps them (the GPU bucket sort's input), uploaded per call;
    /// `count_digits` overwrites each with its integer (zero where its base places
    /// nothing), which `scatter_digits` reads.
    Scalars,
    /// The bucket counts and their prefix-sum levels (the GPU bucket sort).
    Scan,
    /// Per-bucket cursors of the scatter.
    Counters,
    /// The bucket of each sorted entry.
    EntryBuckets,
    /// Carry items (keys), even levels' input.
    ItemKeysA,
    /// Carry items (sums), even levels' input.
    ItemSumsA,
    /// Carry items (keys), odd levels' input.
    ItemKeysB,
    /// Carry items (sums), odd levels' input.
    ItemSumsB,
    /// One parameter block per scan or carry level.
    LevelParams,
    /// The call's status words (`gpu::shader::contract`): the first base that failed the check.
    Status,
}

impl Slot {
    /// Whether the host writes the slot's buffer, mapped (mapped again after each call).
    pub(in crate::gpu) fn is_staging(self) -> bool {
        matches!(self, Slot::Staging | Slot::ScalarStaging(_))
    }

    /// The buffer usages the slot's buffer is created with.
    pub(in crate::gpu) fn usage(self) -> wgpu::BufferUsages {
        use wgpu::BufferUsages as U;
        match self {
            Slot::Bases => U::STORAGE | U::COPY_DST,
            Slot::ChunkOffsets | Slot::MergeGroups | Slot::Scalars => U::STORAGE | U::COPY_DST,
            // Read back by the bucket-sort tests.
            Slot::Entries => U::STORAGE | U::COPY_DST | U::COPY_SRC,
            Slot::Scan => U::STORAGE | U::COPY_DST | U::COPY_SRC,
            Slot::Counters => U::STORAGE | U::COPY_DST,
            Slot::EntryBuckets
            | Slot::ItemKeysA
            | Slot::ItemSumsA
            | Slot::ItemKeysB
            | Slot::ItemSumsB => U::STORAGE,
            Slot::ChunkSums | Slot::MergeTmp | Slot::Buckets | Slot::Partials => U::STORAGE,
            Slot::Sums => U::STORAGE | U::COPY_SRC,
            Slot::Status => U::STORAGE | U::COPY_DST | U::COPY_SRC,
            Slot::Readback | Slot::TimestampRead => U::MAP_READ | U::COPY_DST,
            Slot::Params | Slot::MergeParams | Slot::LevelParams => U::UNIFORM | U::COPY_DST,
            Slot::Staging | Slot::ScalarStaging(_) => U::MAP_WRITE | U::COPY_SRC,
            Slot::TimestampResolve => U::QUERY_RESOLVE | U::COPY_SRC,
        }
    }
}

impl Slot {
    /// The slot's name, in buffer labels and size errors.
    pub(in crate::gpu) fn name(self) -> &'static str {
        match self {
            Slot::Scalars => "scalars",
            Slot::Scan => "bucket counts and offsets",
            Slot::Counters => "scatter cursors",
            Slot::EntryBuckets => "entry buckets",
            Slot::ItemKeysA | Slot::ItemKeysB => "carry keys",
            Slot::ItemSumsA | Slot::ItemSumsB => "carry sums",
            Slot::LevelParams => "level params",
            Slot::Bases => "stored bases",
            Slot::ChunkOffsets => "chunk offsets",
            Slot::Entries => "entries",
            Slot::MergeGroups => "merge groups",
            Slot::ChunkSums => "chunk sums",
            Slot::MergeTmp => "merge scratch",
            Slot::Buckets => "buckets",
            Slot::Partials => "partials",
            Slot::Sums => "window sums",
            Slot::Readback => "window sums readback",
            Slot::Params => "params",
            Slot::MergeParams => "merge params",
            Slot::Staging => "staging",
            Slot::ScalarStaging(_) => "scalar chunk staging",
            Slot::TimestampResolve => "timestamps",
            Slot::TimestampRead => "timestamps readback",
            Slot::Status => "status",
        }
    }
}
