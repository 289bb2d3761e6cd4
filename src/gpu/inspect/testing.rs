//! Read-back helpers for the tests: the GPU bucket sort's output, a resident set's stored
//! words, any buffer's first words.

use ark_ec::short_weierstrass::Affine;

use crate::curve::Fr;
use crate::curve::GpuCurve;
use crate::error::Result;
use crate::gpu::device::setup::scoped;
use crate::gpu::memory::resident::StoredBases;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::planning::layout::{Job, JobBases, JobPlan};
use crate::gpu::GpuContext;

impl GpuContext {
    /// The GPU bucket sort of one call, for the tests: runs the whole job and returns the
    /// bucket offsets (W B + 1 of them) and the sorted entries.
    pub(crate) fn bucket_sort<C: GpuCurve>(
        &self,
        bases: &[Affine<C>],
        scalars: &[Fr<C>],
        c: u32,
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        self.check_curve::<C>()?;
        let job = Job {
            bases: JobBases::Host(bases),
            merged: &[],
            plan: JobPlan::DeviceSort {
                scalars,
                window_bits: c,
                shift: crate::gpu::Shift::NONE,
            },
        };
        let timeout = crate::config::DEFAULT_GPU_TIMEOUT;
        let f = self.submit_blocking(&job, timeout)?;
        self.wait(timeout)?;
        let buckets = crate::digits::num_windows(c, self.profile.curve.scalar_bits) as u64
            * crate::digits::buckets_per_window(c) as u64;
        // The offsets from the prefix sum's levels, as the stages after it read them.
        let (levels, len) = crate::gpu::planning::sort::scan_levels(buckets as u32 + 1);
        let scan = self.read_words(f.ws.get(Slot::Scan), len as u64)?;
        let offsets: Vec<u32> = (0..=buckets as u32)
            .map(|g| crate::gpu::planning::sort::bucket_offset(&scan, &levels, g))
            .collect();
        let total = *offsets.last().expect("W B + 1 offsets") as u64;
        let top = levels.last().expect("one scan level at least");
        if scan[top.out_base as usize] as u64 != total {
            return Err(crate::error::MsmError::Gpu(format!(
                "the scan's total {} is not the last offset {total}",
                scan[top.out_base as usize]
            )));
        }
        let entries = self.read_words(f.ws.get(Slot::Entries), total)?;
        self.finish_blocking(f, timeout)?;
        Ok((offsets, entries))
    }

    /// The stored words of a resident set, as the stages read them (for tests).
    pub(crate) fn read_stored_bases(&self, r: &StoredBases) -> Result<Vec<u32>> {
        self.read_words(&r.buffer, r.buffer.size() / 4)
    }

    /// The first `words` u32 words of a COPY_SRC buffer, copied out through a mapped one
    /// (for tests; waits for the GPU).
    pub(in crate::gpu) fn read_words(&self, src: &wgpu::Buffer, words: u64) -> Result<Vec<u32>> {
        scoped(&self.device, "reading a buffer", || {
            let bytes = (words * 4).max(4);
            let read = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("test read"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = self.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(src, 0, &read, 0, bytes);
            self.queue.submit([encoder.finish()]);
            let bytes = self.read_buffer(&read, crate::config::DEFAULT_GPU_TIMEOUT)?;
            let mut v: Vec<u32> = bytemuck::cast_slice(&bytes).to_vec();
            v.truncate(words as usize);
            Ok(v)
        })
    }
}
