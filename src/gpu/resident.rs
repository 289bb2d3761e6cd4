//! Resident sets: bases uploaded and converted once, kept on the device for many calls.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ark_bls12_377::G1Affine;
use rayon::prelude::*;
use wgpu::util::DeviceExt;

use super::device::scoped;
use super::pipelines::Pass;
use super::pool::{self, ResidentCharge};
use super::shader::contract::{bad_base, Params, ShiftParams, SHIFT_BATCH};
use super::shader::field::pack_affine;
use super::slots::Slot;
use super::stages::{Phase, Source, StageId};
use super::GpuContext;
use crate::error::Result;

/// Shifted copies of a resident part (`config::Precompute`): copy j of base P is
/// 2^(doublings j) P, the copies one after another in the part's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    /// Copies, the bases themselves included (1: none).
    pub copies: u32,
    /// Doublings from one copy to the next: c W'.
    pub doublings: u32,
}

impl Shift {
    /// The bases alone.
    pub const NONE: Shift = Shift {
        copies: 1,
        doublings: 0,
    };
}

/// Bases converted to the shaders' form and kept on the device (a resident set), with
/// their shifted copies if any. The buffer is destroyed, and its memory freed, when this is
/// dropped.
pub struct StoredBases {
    pub(super) buffer: wgpu::Buffer,
    pub(super) id: u64,
    /// The [`GpuContext`] that holds the buffer.
    pub(super) context: u64,
    pub(super) len: usize,
    /// The copies it holds (`len` bases each).
    pub(super) shift: Shift,
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

    /// The shifted copies it holds.
    pub fn shift(&self) -> Shift {
        self.shift
    }
}

impl Drop for StoredBases {
    fn drop(&mut self) {
        self.buffer.destroy();
    }
}

impl GpuContext {
    /// Uploads `bases` and converts them on the device, once: the resident set that calls on
    /// a [`crate::Bases`] handle use, with the shifted copies `shift` asks for. Identity
    /// bases are stored as the profile's identity (never placed). The caller has checked the
    /// bases on the host (the convert stage's own check, whose status this does not read,
    /// repeats it). A base whose copy is not a point of the stored form (one of small order
    /// outside G1) makes the part be stored without copies: [`StoredBases::shift`] says what
    /// was stored. Each wait lasts at most `timeout`.
    pub fn store_bases(
        &self,
        bases: &[G1Affine],
        shift: Shift,
        timeout: Duration,
    ) -> Result<StoredBases> {
        if shift.copies > 1 {
            self.build_shift_stage(timeout)?;
            let stored = self.store_copies(bases, shift, timeout)?;
            if stored.shift == shift {
                return Ok(stored);
            }
        }
        self.store_copies(bases, Shift::NONE, timeout)
    }

    /// [`GpuContext::store_bases`] once: with `Shift::NONE` when a copy failed.
    fn store_copies(
        &self,
        bases: &[G1Affine],
        shift: Shift,
        timeout: Duration,
    ) -> Result<StoredBases> {
        let a = self.arithmetic;
        let one = a.stored_base_bytes(bases.len());
        let bytes = (one * shift.copies as u64).max(super::layout::SECTION_ALIGN);
        let threads = a.convert_threads(bases.len() as u64);
        let shift_threads = (bases.len() as u64).div_ceil(SHIFT_BATCH as u64);
        self.check_sizes(
            &[("bases", bytes)],
            &[("convert", threads), ("shift", shift_threads)],
        )?;
        let charge = self.pool.charge_resident(bytes, timeout)?;
        scoped(&self.device, "loading bases", || {
            let mut words = vec![0u32; bytes as usize / 4];
            pack_affine(bases.par_iter(), a, &mut words[..one as usize / 4]);
            let buffer = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("resident bases"),
                    contents: bytemuck::cast_slice(&words),
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                });
            drop(words);
            let mut encoder = self.device.create_command_encoder(&Default::default());
            let convert = self.convert_pass(&buffer, bases.len());
            let status = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("load status"),
                size: pool::MIN_CLASS_BYTES,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let shifts: Vec<Pass> = (1..shift.copies)
                .map(|copy| self.shift_pass(&buffer, &status, bases.len(), shift, copy))
                .collect();
            for pass in convert.iter().chain(&shifts) {
                pass.record(&mut encoder.begin_compute_pass(&Default::default()));
            }
            let read = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("load status read"),
                size: 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            encoder.copy_buffer_to_buffer(&status, 0, &read, 0, 4);
            let index = self.queue.submit([encoder.finish()]);
            self.wait_for(index, timeout)?;
            let word = u32::from_le_bytes(
                self.read_buffer(&read, timeout)?[..4]
                    .try_into()
                    .expect("4 bytes"),
            );
            let failed = shift.copies > 1 && bad_base(word).is_some();
            Ok(StoredBases {
                buffer,
                id: self.next_bases_id.fetch_add(1, Ordering::Relaxed),
                context: self.id,
                len: bases.len(),
                shift: if failed {
                    Shift {
                        copies: 1,
                        doublings: 0,
                    }
                } else {
                    shift
                },
                _charge: charge,
            })
        })
    }

    /// The convert pass over a part's copy 0, where the profile converts its bases.
    fn convert_pass(&self, buffer: &wgpu::Buffer, len: usize) -> Option<Pass> {
        if !self.arithmetic.converts_bases() {
            return None;
        }
        let params = Params {
            num_points: len as u32,
            ..Default::default()
        };
        let params_buf = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("load params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        // The convert stage's check, whose status the load does not read (the host checked).
        let status = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("convert status"),
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
        Some(Pass {
            phase: Phase::Convert,
            pipeline: self.pipelines().get(StageId::Convert).clone(),
            group,
            dims: self.dispatch_dims(self.arithmetic.convert_threads(len as u64)),
        })
    }

    /// The shift pass that writes copy `copy` of a part of `len` bases from copy - 1.
    fn shift_pass(
        &self,
        buffer: &wgpu::Buffer,
        status: &wgpu::Buffer,
        len: usize,
        shift: Shift,
        copy: u32,
    ) -> Pass {
        let params = ShiftParams {
            num_points: len as u32,
            copy,
            doublings: shift.doublings,
            ..Default::default()
        };
        let params_buf = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("shift params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let group = self.bind(StageId::Shift, |b| match b.name {
            "bases" => buffer.as_entire_binding(),
            "sparams" => params_buf.as_entire_binding(),
            "status" => status.as_entire_binding(),
            other => unreachable!("shift binds no {other}"),
        });
        Pass {
            phase: Phase::Load,
            pipeline: self.pipelines().get(StageId::Shift).clone(),
            group,
            dims: self.dispatch_dims((len as u64).div_ceil(SHIFT_BATCH as u64)),
        }
    }

    /// The former name of [`GpuContext::store_bases`].
    #[deprecated(note = "renamed store_bases")]
    pub fn load_points(&self, bases: &[G1Affine], timeout: Duration) -> Result<StoredBases> {
        self.store_bases(bases, Shift::NONE, timeout)
    }
}
