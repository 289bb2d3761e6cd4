//! Resident sets: bases uploaded and converted once, kept on the device for many calls.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ark_bls12_377::G1Affine;
use rayon::prelude::*;
use wgpu::util::DeviceExt;

use super::device::scoped;
use super::pipelines::Pass;
use super::pool::{self, ResidentCharge};
use super::shader::contract::Params;
use super::shader::field::pack_affine;
use super::slots::Slot;
use super::stages::{Phase, Source, StageId};
use super::GpuContext;
use crate::error::Result;

/// Bases converted to the shaders' form and kept on the device (a resident set). The
/// buffer is destroyed, and its memory freed, when this is dropped.
pub struct StoredBases {
    pub(super) buffer: wgpu::Buffer,
    pub(super) id: u64,
    /// The [`GpuContext`] that holds the buffer.
    pub(super) context: u64,
    pub(super) len: usize,
    /// The set's bytes, counted against the engine's memory budget while it lives.
    pub(super) _charge: ResidentCharge,
}

impl StoredBases {
    /// Number of bases.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held on the device.
    pub fn bytes(&self) -> u64 {
        self.buffer.size()
    }
}

impl Drop for StoredBases {
    fn drop(&mut self) {
        self.buffer.destroy();
    }
}

impl GpuContext {
    /// Uploads `bases` and converts them on the device, once: the resident set that calls on
    /// a [`crate::Bases`] handle use. Identity bases are stored as zeros (never placed). The
    /// caller has checked the bases on the host (the convert stage's own check, whose status
    /// this does not read, repeats it). Each wait lasts at most `timeout`.
    pub fn store_bases(&self, bases: &[G1Affine], timeout: Duration) -> Result<StoredBases> {
        let a = self.arithmetic;
        let bytes = self.resident_bytes(bases.len());
        let threads = a.convert_threads(bases.len() as u64);
        self.check_sizes(&[("bases", bytes)], &[("convert", threads)])?;
        let charge = self.pool.charge_resident(bytes, timeout)?;
        scoped(&self.device, "loading bases", || {
            let mut words = vec![0u32; bytes as usize / 4];
            pack_affine(bases.par_iter(), a, &mut words);
            let buffer = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("resident bases"),
                    contents: bytemuck::cast_slice(&words),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                });
            let params = Params {
                num_points: bases.len() as u32,
                ..Default::default()
            };
            let params_buf = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("load params"),
                    contents: bytemuck::bytes_of(&params),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
            let mut encoder = self.device.create_command_encoder(&Default::default());
            if self.arithmetic.converts_bases() {
                let status = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("load status"),
                    size: pool::MIN_CLASS_BYTES,
                    usage: wgpu::BufferUsages::STORAGE,
                    mapped_at_creation: false,
                });
                // The convert stage's bindings, over this load's own buffers.
                let group = self.bind(StageId::Convert, |b| match b.source {
                    Source::Slot(Slot::Bases) => buffer.as_entire_binding(),
                    Source::Slot(Slot::Params) => params_buf.as_entire_binding(),
                    Source::Slot(Slot::Status) => status.as_entire_binding(),
                    other => unreachable!("convert binds no {other:?}"),
                });
                let convert = Pass {
                    phase: Phase::Convert,
                    pipeline: self.pipelines().get(StageId::Convert).clone(),
                    group,
                    dims: self.dispatch_dims(threads),
                };
                convert.record(&mut encoder.begin_compute_pass(&Default::default()));
            }
            let index = self.queue.submit([encoder.finish()]);
            self.wait_for(index, timeout)?;
            Ok(StoredBases {
                buffer,
                id: self.next_bases_id.fetch_add(1, Ordering::Relaxed),
                context: self.id,
                len: bases.len(),
                _charge: charge,
            })
        })
    }

    /// The former name of [`GpuContext::store_bases`].
    #[deprecated(note = "renamed store_bases")]
    pub fn load_points(&self, bases: &[G1Affine], timeout: Duration) -> Result<StoredBases> {
        self.store_bases(bases, timeout)
    }
}
