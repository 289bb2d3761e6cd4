//! The buffers and bind groups of one MSM in flight, pooled and reused across calls.
//!
//! A [`Workspace`] holds one buffer per [`Slot`], each sized to a power of two (its size
//! class) and grown only when a call needs more, so a steady stream of calls of similar size
//! allocates nothing. Every upload goes through the workspace's own staging buffer, which is
//! mapped again as soon as the GPU is done with it, and the bind groups are cached until a
//! buffer they name is replaced. Concurrent calls (or the two halves of a batch) take
//! different workspaces from the [`Pool`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Smallest size class, in bytes (also a multiple of every copy and map alignment).
pub const MIN_CLASS_BYTES: u64 = 256;

/// Idle workspaces the pool keeps; more are dropped when returned (after a burst of
/// concurrent calls) so that their memory goes back to the device.
pub const MAX_IDLE_WORKSPACES: usize = 4;

/// The buffers of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Slot {
    /// Affine points (one-shot bases and SRE merged points), converted in place.
    Points,
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
    /// Host-written upload data, copied into the slots above on the GPU.
    Staging,
    /// Resolved timestamps.
    TimestampResolve,
    /// Timestamps, mapped for reading.
    TimestampRead,
    /// Scalars as arkworks keeps them (the GPU bucket sort's input).
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
}

impl Slot {
    fn usage(self) -> wgpu::BufferUsages {
        use wgpu::BufferUsages as U;
        match self {
            Slot::Points => U::STORAGE | U::COPY_DST,
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
            Slot::Readback | Slot::TimestampRead => U::MAP_READ | U::COPY_DST,
            Slot::Params | Slot::MergeParams | Slot::LevelParams => U::UNIFORM | U::COPY_DST,
            Slot::Staging => U::MAP_WRITE | U::COPY_SRC,
            Slot::TimestampResolve => U::QUERY_RESOLVE | U::COPY_SRC,
        }
    }
}

/// The size class of a request: the next power of two, at least [`MIN_CLASS_BYTES`].
pub fn size_class(bytes: u64) -> u64 {
    bytes.max(MIN_CLASS_BYTES).next_power_of_two()
}

/// Which bind group of a call (the cache key, with the points buffer's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Group {
    Convert,
    Accumulate,
    /// Merge level i, and whether it writes the buckets (the last level).
    Merge(usize, bool),
    ReduceSegments,
    ReduceWindows,
    /// The GPU bucket sort and balanced accumulation.
    InitBuckets,
    /// Counting the digits.
    CountDigits,
    /// Scan level i going up.
    ScanBlocks(usize),
    /// Scan level i adding back.
    ScanAdd(usize),
    /// Scattering the entries.
    Scatter,
    /// Balanced accumulation.
    Balanced,
    /// Carry level i, with its parameter block at index j of the level parameters (after
    /// the scan levels, so j depends on the call's bucket count too).
    Carry(usize, usize),
}

/// The buffers, cached bind groups and timestamp queries of one call in flight.
pub(crate) struct Workspace {
    buffers: HashMap<Slot, wgpu::Buffer>,
    groups: HashMap<(Group, u64), wgpu::BindGroup>,
    /// Set when the staging buffer is mapped for writing.
    staging_mapped: Arc<AtomicBool>,
    pub(crate) queries: Option<wgpu::QuerySet>,
    /// Buffers created since [`Workspace::begin_call`].
    pub(crate) allocated: u32,
}

impl Workspace {
    fn new() -> Self {
        Self {
            buffers: HashMap::new(),
            groups: HashMap::new(),
            staging_mapped: Arc::new(AtomicBool::new(false)),
            queries: None,
            allocated: 0,
        }
    }

    /// Starts counting the allocations of a new call.
    pub(crate) fn begin_call(&mut self) {
        self.allocated = 0;
    }

    /// The buffer of `slot`, with room for at least `bytes` (grown to the size class if it
    /// is smaller; the cached bind groups that named the old buffer are dropped).
    pub(crate) fn ensure(
        &mut self,
        device: &wgpu::Device,
        slot: Slot,
        bytes: u64,
    ) -> &wgpu::Buffer {
        let fits = self.buffers.get(&slot).is_some_and(|b| b.size() >= bytes);
        if !fits {
            let size = size_class(bytes);
            let staging = slot == Slot::Staging;
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(slot_label(slot)),
                size,
                usage: slot.usage(),
                mapped_at_creation: staging,
            });
            if staging {
                // A new flag: a pending re-map of the old buffer must not touch it.
                self.staging_mapped = Arc::new(AtomicBool::new(true));
            }
            if let Some(old) = self.buffers.insert(slot, buffer) {
                old.destroy();
            }
            self.groups.clear();
            self.allocated += 1;
        }
        &self.buffers[&slot]
    }

    /// The buffer of `slot`; [`Workspace::ensure`] must have created it.
    pub(crate) fn get(&self, slot: Slot) -> &wgpu::Buffer {
        &self.buffers[&slot]
    }

    /// Whether the staging buffer is mapped for writing now.
    pub(crate) fn staging_mapped(&self) -> bool {
        self.staging_mapped.load(Ordering::Acquire)
    }

    /// Asks for the staging buffer to be mapped again once the GPU has read it (call after
    /// the submission that copies from it).
    pub(crate) fn remap_staging(&self) {
        let flag = Arc::clone(&self.staging_mapped);
        flag.store(false, Ordering::Release);
        let done = Arc::clone(&flag);
        self.get(Slot::Staging)
            .map_async(wgpu::MapMode::Write, .., move |r| {
                done.store(r.is_ok(), Ordering::Release);
            });
    }

    /// The cached bind group `key` over the buffers named by `points_id`, made by `make` on
    /// a miss. Groups over another points buffer are dropped, so that a cache never keeps a
    /// released set of bases alive.
    pub(crate) fn group(
        &mut self,
        key: Group,
        points_id: u64,
        make: impl FnOnce(&Self) -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        if let Some(g) = self.groups.get(&(key, points_id)) {
            return g.clone();
        }
        self.groups
            .retain(|(k, id), _| *k != key || *id == points_id);
        let g = make(self);
        self.groups.insert((key, points_id), g.clone());
        g
    }

    /// Bytes held by this workspace's buffers.
    pub(crate) fn bytes(&self) -> u64 {
        self.buffers.values().map(|b| b.size()).sum()
    }
}

fn slot_label(slot: Slot) -> &'static str {
    match slot {
        Slot::Scalars => "scalars",
        Slot::Scan => "bucket counts and offsets",
        Slot::Counters => "scatter cursors",
        Slot::EntryBuckets => "entry buckets",
        Slot::ItemKeysA | Slot::ItemKeysB => "carry keys",
        Slot::ItemSumsA | Slot::ItemSumsB => "carry sums",
        Slot::LevelParams => "level params",
        Slot::Points => "points",
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
        Slot::TimestampResolve => "timestamps",
        Slot::TimestampRead => "timestamps readback",
    }
}

/// Idle workspaces, shared by the calls of one device.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Workspace>>,
}

impl Pool {
    /// An idle workspace (the largest), or a new empty one.
    pub(crate) fn take(&self) -> Workspace {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let best = (0..idle.len()).max_by_key(|&i| idle[i].bytes());
        match best {
            Some(i) => idle.swap_remove(i),
            None => Workspace::new(),
        }
    }

    /// Returns a workspace after its call has finished.
    pub(crate) fn put(&self, ws: Workspace) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE_WORKSPACES {
            idle.push(ws);
        }
    }

    /// Number of idle workspaces.
    pub(crate) fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |v| v.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_powers_of_two_that_fit() {
        assert_eq!(size_class(0), MIN_CLASS_BYTES);
        assert_eq!(size_class(MIN_CLASS_BYTES - 1), MIN_CLASS_BYTES);
        assert_eq!(size_class(MIN_CLASS_BYTES), MIN_CLASS_BYTES);
        assert_eq!(size_class(MIN_CLASS_BYTES + 1), 2 * MIN_CLASS_BYTES);
        for b in [1u64, 1000, 4096, 4097, 1 << 30] {
            let c = size_class(b);
            assert!(c >= b && c.is_power_of_two() && c / 2 < b.max(MIN_CLASS_BYTES));
        }
    }
}
