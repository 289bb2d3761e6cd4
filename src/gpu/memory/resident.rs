//! Resident sets: bases uploaded and converted once, kept on the device for many calls.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ark_ec::short_weierstrass::{Affine, Projective};
use ark_ec::{AdditiveGroup, AffineRepr, CurveGroup};
use rayon::prelude::*;
use wgpu::util::DeviceExt;

use crate::curve::GpuCurve;
use crate::error::{MsmError, Result};
use crate::gpu::device::setup::scoped;
use crate::gpu::memory::pool::ResidentCharge;
use crate::gpu::memory::workspace::MIN_CLASS_BYTES;
use crate::gpu::pipelines::compile::Pass;
use crate::gpu::pipelines::slots::Slot;
use crate::gpu::pipelines::stages::{Phase, Source, StageId};
use crate::gpu::shader::contract::{bad_base, Params, ShiftParams};
use crate::gpu::shader::field::identity_bits_bytes;
use crate::gpu::shader::packing::{pack_affine, pack_identity_bits};
use crate::gpu::GpuContext;

/// The shifted copies of a resident part (`config::Precompute`), for calls at window size c
/// on its W = `num_windows(c)` windows: copy j of base P is 2^(c W' j) P, W' =
/// `bucket_windows(c, copies)`, the copies one after another in the part's buffer. The one
/// description of the shape: the load, the calls' layout and the counts read it from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shift {
    c: u32,
    copies: u32,
    /// The curve's scalar bits (its window count at c).
    scalar_bits: u32,
}

impl Shift {
    /// The bases alone.
    pub const NONE: Shift = Shift {
        c: 0,
        copies: 1,
        scalar_bits: 0,
    };

    /// `copies` copies for window size c (2 to `MAX_PRECOMPUTED_WINDOW_BITS`), lowered to the fewest
    /// that give the same W' (a copy that no window reaches is not stored), at most W;
    /// [`Shift::NONE`] for at most one copy or a c out of range. `scalar_bits`: the curve's
    /// (its windows at c).
    pub fn new(c: u32, copies: u32, scalar_bits: u32) -> Shift {
        if copies <= 1 || !(2..=crate::config::MAX_PRECOMPUTED_WINDOW_BITS).contains(&c) {
            return Shift::NONE;
        }
        let w = crate::digits::num_windows(c, scalar_bits);
        let used = w.div_ceil(crate::digits::bucket_windows(c, copies, scalar_bits));
        match used {
            1 => Shift::NONE,
            k => Shift {
                c,
                copies: k,
                scalar_bits,
            },
        }
    }

    /// Copies, the bases themselves included (1: none).
    pub fn copies(self) -> u32 {
        self.copies
    }

    /// The window size the copies are for (`None` without copies).
    pub fn window_bits(self) -> Option<u32> {
        (self.copies > 1).then_some(self.c)
    }

    /// Windows of buckets of a call on the copies: W'.
    pub fn bucket_windows(self) -> u32 {
        crate::digits::bucket_windows(self.c, self.copies, self.scalar_bits)
    }

    /// Doublings from one copy to the next: c W' (at most about 256).
    pub fn doublings(self) -> u32 {
        match self.copies {
            1 => 0,
            _ => self.c * self.bucket_windows(),
        }
    }
}

/// Bases converted to the shaders' form and kept on the device (a resident set), with
/// their shifted copies if any. The buffer is destroyed, and its memory freed, when this is
/// dropped.
pub struct StoredBases {
    pub(in crate::gpu) buffer: wgpu::Buffer,
    pub(in crate::gpu) id: u64,
    /// The [`GpuContext`] that holds the buffer.
    pub(in crate::gpu) context: u64,
    pub(in crate::gpu) len: usize,
    /// The copies it holds (`len` bases each).
    pub(in crate::gpu) shift: Shift,
    /// The set's bytes, counted against the engine's memory budget while it lives.
    pub(in crate::gpu) _charge: ResidentCharge,
}

impl StoredBases {
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
        // Destroyed, not only dropped: pooled workspaces' cached bind groups may still hold
        // the buffer, and its memory must come back with its charge. (Destroying takes a
        // lock of wgpu's that a poll or a submit holds while it runs: no poll waits inside
        // wgpu, see `gpu::device::foreign::poll`, but a driver's submit that waits for a hung GPU
        // would hold it for good, docs/RELIABILITY.md "Known gaps".)
        self.buffer.destroy();
    }
}

impl GpuContext {
    /// Uploads `bases` and converts them on the device, once: the resident set that calls on
    /// a [`crate::Bases`] handle use, with the shifted copies `shift` asks for. Identity
    /// bases are stored as the profile's identity (never placed). The caller has checked the
    /// bases on the host (the convert stage's own check, whose status this does not read,
    /// repeats it). `Ok(None)` when a base's copy is not a point of the stored form (one of
    /// small order outside the subgroup): nothing is kept, and the caller may store the set without
    /// copies. The copies of two bases are compared with the host's (`check_copies`); a
    /// difference is [`MsmError::Gpu`]. Each wait lasts at
    /// most `timeout`.
    pub fn store_bases<C: GpuCurve>(
        &self,
        bases: &[Affine<C>],
        shift: Shift,
        timeout: Duration,
    ) -> Result<Option<StoredBases>> {
        self.check_curve::<C>()?;
        if shift.copies > 1 {
            self.build_shift_stage(timeout)?;
        }
        let a = self.profile;
        let one = a.stored_base_bytes(bases.len());
        let bytes = self.resident_bytes(bases.len(), shift.copies);
        let threads = a.convert_threads(bases.len() as u64);
        // One thread a base (shift.wgsl).
        let shift_threads = bases.len() as u64;
        self.check_sizes(
            &[("bases", bytes)],
            &[("convert", threads), ("shift", shift_threads)],
        )?;
        let charge = self.pool.charge_resident(bytes, timeout)?;
        scoped(&self.device, "loading bases", || {
            let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("resident bases"),
                size: bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            // Copy 0 and the identity bits: the copies' words start as zeros (wgpu clears
            // new buffers).
            let mut words = vec![0u32; one as usize / 4];
            pack_affine(bases.par_iter(), a, &mut words);
            self.queue
                .write_buffer(&buffer, 0, bytemuck::cast_slice(&words));
            let mut bits = vec![0u32; identity_bits_bytes(bases.len()) as usize / 4];
            pack_identity_bits(bases.par_iter(), &mut bits);
            let bits_at = 16 * a.identity_quads(bases.len(), shift.copies) as u64;
            if !bits.is_empty() {
                self.queue
                    .write_buffer(&buffer, bits_at, bytemuck::cast_slice(&bits));
            }
            drop(words);
            let probes = probes(bases);
            if let Some(read) = self.run_load(&buffer, bases.len(), shift, &probes, timeout)? {
                if bad_base(read[0]).is_some() {
                    return Ok(None);
                }
                self.check_copies(bases, shift, &probes, &read[1..])?;
            }
            Ok(Some(StoredBases {
                buffer,
                id: self.next_bases_id.fetch_add(1, Ordering::Relaxed),
                context: self.id,
                len: bases.len(),
                shift,
                _charge: charge,
            }))
        })
    }

    /// Runs the convert pass and the shift passes of a part of `len` bases; with copies,
    /// reads back the shift stage's status word, then the copies 1.. of each probed base
    /// (`None` without copies: nothing to read).
    fn run_load(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
        shift: Shift,
        probes: &[usize],
        timeout: Duration,
    ) -> Result<Option<Vec<u32>>> {
        let status = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("load status"),
            size: MIN_CLASS_BYTES,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        // One submission per pass, each waited for within `timeout`: a copy costs up to
        // about 256 doublings a base, a whole load many times one call.
        let convert = self.convert_pass(buffer, len);
        let shifts =
            (1..shift.copies).map(|copy| self.shift_pass(buffer, &status, len, shift, copy));
        for pass in convert.into_iter().chain(shifts) {
            let mut encoder = self.device.create_command_encoder(&Default::default());
            pass.record(&mut encoder.begin_compute_pass(&Default::default()));
            self.queue.submit([encoder.finish()]);
            self.wait(timeout)?;
        }
        if shift.copies == 1 {
            if !self.profile.converts_bases() {
                // No pass ran: wait for the upload itself, as every load does.
                self.queue.submit([]);
                self.wait(timeout)?;
            }
            return Ok(None);
        }
        let base_bytes = self.profile.stored_base_bytes(1);
        let copied = probes.len() as u64 * (shift.copies as u64 - 1) * base_bytes;
        let read = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("load read"),
            size: 4 + copied,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(&status, 0, &read, 0, 4);
        let mut at = 4;
        for &i in probes {
            for copy in 1..shift.copies as usize {
                let from = (copy * len + i) as u64 * base_bytes;
                encoder.copy_buffer_to_buffer(buffer, from, &read, at, base_bytes);
                at += base_bytes;
            }
        }
        self.queue.submit([encoder.finish()]);
        let bytes = self.read_buffer(&read, timeout)?;
        Ok(Some(bytemuck::cast_slice(&bytes).to_vec()))
    }

    /// Compares the shift stage's copies 1.. of each probed base (`words`, as
    /// [`GpuContext::run_load`] read them) with 2^(doublings j) P computed on the host: a
    /// known-answer check of the stage on every load, since a wrong copy would give wrong
    /// sums that no later check sees.
    fn check_copies<C: GpuCurve>(
        &self,
        bases: &[Affine<C>],
        shift: Shift,
        probes: &[usize],
        words: &[u32],
    ) -> Result<()> {
        let a = self.profile;
        let mut got = words.chunks_exact(a.base_words());
        for &i in probes {
            let mut p = Projective::<C>::from(bases[i]);
            for copy in 1..shift.copies {
                for _ in 0..shift.doublings() {
                    p.double_in_place();
                }
                let want = a.affine_to_shader_words::<C>(&p.into_affine());
                if want.as_deref() != got.next() {
                    return Err(MsmError::Gpu(format!(
                        "the shift stage's copy {copy} of base {i} differs from the host's"
                    )));
                }
            }
        }
        Ok(())
    }

    /// A uniform buffer holding `bytes` (one load pass's parameter block).
    fn uniform(&self, label: &str, bytes: &[u8]) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    /// The convert pass over a part's copy 0, where the profile converts its bases.
    fn convert_pass(&self, buffer: &wgpu::Buffer, len: usize) -> Option<Pass> {
        if !self.profile.converts_bases() {
            return None;
        }
        let params = Params {
            num_points: len as u32,
            ..Default::default()
        };
        let params_buf = self.uniform("load params", bytemuck::bytes_of(&params));
        // The convert stage's check, whose status the load does not read (the host checked).
        let status = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("convert status"),
            size: MIN_CLASS_BYTES,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        // The convert stage's bindings, over this load's own buffers.
        let group = self.bind(StageId::Convert, 1, |b| match b.source {
            Source::Slot(Slot::Bases) => buffer.as_entire_binding(),
            Source::Slot(Slot::Params) => params_buf.as_entire_binding(),
            Source::Slot(Slot::Status) => status.as_entire_binding(),
            other => unreachable!("convert binds no {other:?}"),
        });
        Some(Pass {
            stage: StageId::Convert,
            phase: Phase::Convert,
            pipeline: self.pipelines().get(StageId::Convert, 1).clone(),
            group,
            dims: self.dispatch_dims(self.profile.convert_threads(len as u64)),
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
            doublings: shift.doublings(),
            ..Default::default()
        };
        let params_buf = self.uniform("shift params", bytemuck::bytes_of(&params));
        let group = self.bind(StageId::Shift, 1, |b| match b.name {
            "bases" => buffer.as_entire_binding(),
            "sparams" => params_buf.as_entire_binding(),
            "status" => status.as_entire_binding(),
            other => unreachable!("shift binds no {other}"),
        });
        Pass {
            stage: StageId::Shift,
            phase: Phase::Load,
            pipeline: self.pipelines().get(StageId::Shift, 1).clone(),
            group,
            dims: self.dispatch_dims(len as u64),
        }
    }
}

/// The bases whose copies a load compares with the host's: the first and the last that are
/// not the identity (none when all are).
fn probes<C: GpuCurve>(bases: &[Affine<C>]) -> Vec<usize> {
    let first = bases.iter().position(|p| !p.is_zero());
    let last = bases.iter().rposition(|p| !p.is_zero());
    let mut v: Vec<usize> = first.into_iter().chain(last).collect();
    v.dedup();
    v
}
