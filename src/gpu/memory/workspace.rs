//! The buffers and bind groups of one MSM in flight, reused across calls.
//!
//! A [`Workspace`] holds one buffer per [`Slot`], each sized to a power of two (its size
//! class) and grown only when a call needs more, so a steady stream of calls of similar size
//! allocates nothing. Every upload goes through the workspace's own staging buffers (one,
//! and one a streamed chunk of the scalars), each mapped again as soon as the GPU is done
//! with it, and the bind groups are cached until a buffer they name is replaced.
//! Concurrent calls (or the two halves of a batch) take different workspaces from the
//! [`crate::gpu::memory::pool::Pool`], which counts them against the memory budget.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::gpu::pipelines::slots::Slot;
use crate::gpu::pipelines::stages::StageId;

/// Smallest size class, in bytes (also a multiple of every copy and map alignment).
pub const MIN_CLASS_BYTES: u64 = 256;

/// Most bind groups a workspace keeps (a call of one context makes a few dozen).
const MAX_CACHED_GROUPS: usize = 1024;

/// The size class of a request: the next power of two, at least [`MIN_CLASS_BYTES`].
pub fn size_class(bytes: u64) -> u64 {
    bytes.max(MIN_CLASS_BYTES).next_power_of_two()
}

/// The device's caps on one buffer and on one storage binding. Size classes are powers of
/// two, but adapters' limits need not be (Vulkan on NVIDIA binds at most 2^31 - 1 bytes): a
/// class never exceeds the buffer cap, and a buffer is bound no further than the binding
/// cap. The layout checks that what a call uses fits both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SizeCaps {
    /// Largest buffer, a multiple of [`MIN_CLASS_BYTES`].
    pub(crate) buffer: u64,
    /// Largest storage binding, a multiple of 4.
    pub(crate) binding: u64,
}

impl SizeCaps {
    /// No caps (tests of the pool's accounting).
    #[cfg(test)]
    pub(crate) const NONE: SizeCaps = SizeCaps {
        buffer: u64::MAX / 2 / MIN_CLASS_BYTES * MIN_CLASS_BYTES,
        binding: u64::MAX / 2 / 4 * 4,
    };

    /// The caps of a device with `limits`.
    pub(crate) fn of(limits: &wgpu::Limits) -> SizeCaps {
        SizeCaps {
            buffer: limits.max_buffer_size / MIN_CLASS_BYTES * MIN_CLASS_BYTES,
            binding: limits.max_storage_buffer_binding_size / 4 * 4,
        }
    }

    /// The size of the buffer a request of `bytes` gets: its size class, but no more than
    /// the buffer cap (nor less than the request, which the layout keeps within the cap).
    pub(crate) fn class(self, bytes: u64) -> u64 {
        size_class(bytes)
            .min(self.buffer)
            .max(bytes.next_multiple_of(4))
    }
}

/// What a cached bind group binds besides the workspace's buffers: the context whose
/// pipelines it was made for (contexts of several curve groups share a device's pool, and
/// with it its workspaces), its stage, its level's parameter block and the slots the pass
/// gives by name (with the stored bases' buffer ids, [`BasesIds`], the key of
/// [`Workspace::group`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BindGroupKey {
    pub(crate) context: u64,
    pub(crate) stage: StageId,
    /// The part count of the stage's pipeline (`GpuContext::stage_parts`).
    pub(crate) bound_parts: u32,
    pub(crate) level: usize,
    pub(crate) given: [Option<Slot>; 4],
}

/// The ids of the stored bases' buffers a bind group binds, part by part (the workspace's
/// own bases are `WORKSPACE_BASES_ID`; parts a call does not read repeat its first).
pub(crate) type BasesIds = [u64; crate::gpu::shader::field::MAX_BASE_PARTS as usize];

/// The buffers, cached bind groups and timestamp queries of one call in flight.
pub(crate) struct Workspace {
    buffers: HashMap<Slot, wgpu::Buffer>,
    groups: HashMap<(BindGroupKey, BasesIds), wgpu::BindGroup>,
    /// Set for each staging buffer while it is mapped for writing.
    mapped: HashMap<Slot, Arc<AtomicBool>>,
    pub(crate) queries: Option<wgpu::QuerySet>,
    /// Buffers created since [`Workspace::begin_call`].
    pub(crate) allocated: u32,
    caps: SizeCaps,
}

impl Workspace {
    pub(in crate::gpu) fn new(caps: SizeCaps) -> Self {
        Self {
            caps,
            buffers: HashMap::new(),
            groups: HashMap::new(),
            mapped: HashMap::new(),
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
            self.replace(device, slot, self.caps.class(bytes));
            self.groups.clear();
        }
        &self.buffers[&slot]
    }

    /// Gives `slot` a new buffer of `size` bytes (a staging buffer mapped for writing at
    /// creation, with a new flag, so that a pending re-map of the old one cannot touch it);
    /// the old buffer is dropped, and wgpu frees it once the GPU is done with it (not
    /// destroyed: `Buffer::destroy` waits for the lock a poll in another thread holds).
    fn replace(&mut self, device: &wgpu::Device, slot: Slot, size: u64) {
        let staging = slot.is_staging();
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(slot.name()),
            size,
            usage: slot.usage(),
            mapped_at_creation: staging,
        });
        if staging {
            self.mapped.insert(slot, Arc::new(AtomicBool::new(true)));
        }
        self.buffers.insert(slot, buffer);
        self.allocated += 1;
    }

    /// The buffer of `slot`; [`Workspace::ensure`] must have created it.
    pub(crate) fn get(&self, slot: Slot) -> &wgpu::Buffer {
        &self.buffers[&slot]
    }

    /// The buffer of `slot` as a storage binding: whole, or its first bytes up to the
    /// binding cap when its size class is larger (what a call uses is within the cap).
    pub(crate) fn bound(&self, slot: Slot) -> wgpu::BindingResource<'_> {
        let buffer = self.get(slot);
        if buffer.size() <= self.caps.binding {
            return buffer.as_entire_binding();
        }
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer,
            offset: 0,
            size: wgpu::BufferSize::new(self.caps.binding),
        })
    }

    /// Replaces staging buffer `slot` with a new one of the same size, mapped for writing
    /// at creation (for a call that found the old one not yet mapped again). No bind group
    /// names a staging buffer, so the cached ones stay.
    pub(crate) fn fresh_staging(&mut self, device: &wgpu::Device, slot: Slot) {
        let size = self.get(slot).size();
        self.replace(device, slot, size);
    }

    /// Whether staging buffer `slot` is mapped for writing now.
    pub(crate) fn staging_mapped(&self, slot: Slot) -> bool {
        self.mapped
            .get(&slot)
            .is_some_and(|f| f.load(Ordering::Acquire))
    }

    /// Unmaps staging buffer `slot`, written, for the GPU to copy from; it counts as
    /// unmapped until [`Workspace::staging_remap`]'s re-map completes.
    pub(crate) fn unmap_staging(&self, slot: Slot) {
        if let Some(f) = self.mapped.get(&slot) {
            f.store(false, Ordering::Release);
        }
        self.get(slot).unmap();
    }

    /// Asks for staging buffers `slots` to be mapped again once the GPU has read them: to
    /// run after the submission that copies from them (on the thread that submits). They
    /// count as unmapped from now on.
    pub(crate) fn staging_remap(&self, slots: &[Slot]) -> impl FnOnce() + Send + 'static {
        let remaps: Vec<(Arc<AtomicBool>, wgpu::Buffer)> = slots
            .iter()
            .map(|&slot| {
                let flag = Arc::clone(&self.mapped[&slot]);
                flag.store(false, Ordering::Release);
                (flag, self.get(slot).clone())
            })
            .collect();
        move || {
            for (flag, staging) in remaps {
                staging.map_async(wgpu::MapMode::Write, .., move |r| {
                    flag.store(r.is_ok(), Ordering::Release);
                });
            }
        }
    }

    /// The cached bind group `key` over the buffers named by `bases_ids`, made by `make` on
    /// a miss. Groups over other stored bases are dropped, so that a cache never keeps a
    /// released set of bases alive.
    pub(crate) fn group(
        &mut self,
        key: BindGroupKey,
        bases_ids: BasesIds,
        make: impl FnOnce(&Self) -> wgpu::BindGroup,
    ) -> wgpu::BindGroup {
        if let Some(g) = self.groups.get(&(key, bases_ids)) {
            return g.clone();
        }
        self.groups
            .retain(|(k, ids), _| *k != key || *ids == bases_ids);
        // Groups of contexts that are gone (engines dropped, devices replaced) are never
        // asked for again: a bound keeps them from piling up.
        if self.groups.len() >= MAX_CACHED_GROUPS {
            self.groups.clear();
        }
        let g = make(self);
        self.groups.insert((key, bases_ids), g.clone());
        g
    }

    /// Bytes held by this workspace's buffers.
    pub(crate) fn bytes(&self) -> u64 {
        self.buffers.values().map(|b| b.size()).sum()
    }

    /// Bytes this workspace will hold after [`Workspace::ensure`] has been called for every
    /// `(slot, bytes)` of `needs`: each slot keeps its buffer if it is large enough, else
    /// gets the size class of the largest need.
    pub(crate) fn footprint_with(&self, needs: &[(Slot, u64)]) -> u64 {
        let mut sizes: HashMap<Slot, u64> =
            self.buffers.iter().map(|(s, b)| (*s, b.size())).collect();
        for &(slot, bytes) in needs {
            let have = sizes.entry(slot).or_insert(0);
            if *have < bytes {
                *have = self.caps.class(bytes);
            }
        }
        sizes.values().sum()
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
