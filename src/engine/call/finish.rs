//! Step 6 of a call: the wait for a submitted call's window sums ([`GpuMsm::await_sums`], on
//! `GpuContext::finish` in `gpu/run/execute.rs`),
//! then [`GpuMsm::finish`]: the sums checked, reduced into the MSM, and its report.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::{Affine, Projective};
use tracing::Instrument;

use crate::cpu;
use crate::curve::GpuCurve;
use crate::engine::call::plan::OnGpu;
use crate::engine::call::validate::check_bases;
use crate::engine::GpuMsm;
use crate::error::{MsmError, Result};
use crate::gpu::shader::field::CurveProfile;
use crate::gpu::{CallOutput, GpuContext, GpuTimes, InFlight};
use crate::report::MsmReport;

impl<C: GpuCurve> GpuMsm<C> {
    /// Awaits a submitted call's window sums.
    pub(in crate::engine) async fn await_sums(
        &self,
        gpu: &GpuContext,
        f: InFlight,
    ) -> Result<CallOutput> {
        if self.hooks.lose_in_flight.swap(false, Ordering::AcqRel) {
            gpu.lose();
        }
        let span = tracing::info_span!("gpu_msm.gpu");
        let out = gpu
            .finish(f, self.config.gpu_timeout)
            .instrument(span)
            .await
            .map_err(|e| Self::on_device(gpu, e));
        match out {
            Err(MsmError::Timeout(m)) => Err(MsmError::Timeout(m)),
            // Whatever came back, it came from a device that is gone (lost, or taken to be
            // hung by this call's wait or another's on the device).
            _ if gpu.is_lost() => Err(Self::on_device(
                gpu,
                MsmError::DeviceLost("the device was lost while the call ran".into()),
            )),
            out => out,
        }
    }

    /// The window sums of a finished call, checked and reduced; the report completed.
    pub(in crate::engine) fn finish(
        &self,
        p: OnGpu<C>,
        gpu_out: Result<CallOutput>,
    ) -> Result<(Projective<C>, MsmReport)> {
        let OnGpu {
            mut report,
            start,
            gpu,
            call,
            c,
            overlapped,
            ..
        } = p;
        let CallOutput {
            sums,
            times,
            bad_base,
        } = gpu_out?;
        let bases = call.points;
        if let Some(i) = bad_base {
            // The convert stage found an uploaded base off the curve: the sums mean nothing.
            // The host names the first such base (its check is the same one).
            return Err(match check_bases(bases, false) {
                Err(e) => e,
                Ok(()) => MsmError::Gpu(format!(
                    "the GPU's check refused base {i}, which the host finds on the curve"
                )),
            });
        }
        let profile = gpu.profile();
        let _wr = tracing::info_span!("gpu_msm.window_reduction").entered();
        let t = Instant::now();
        let window_sums = window_sums(profile, &sums, bases)?;
        let result = cpu::window_reduction(&window_sums, c);
        report.phases.window_reduction = t.elapsed();
        report.phases.total = start.elapsed().saturating_sub(overlapped);
        report.arithmetic = Some(profile.arithmetic);
        report.gpu_timing = Some(gpu.timing());
        add_gpu_times(&mut report, &times);
        self.sre
            .learn(&report, C::spec().scalar_bits, profile.add_costs());
        Ok((result, report))
    }
}

/// The window sums read back, as points; one off the curve or unreduced is a base outside
/// the subgroup that met the formulas' exceptional case (every base is on the curve:
/// checked when loaded, or by the convert stage), named as [`MsmError::BaseNotInSubgroup`],
/// or a GPU fault. A group whose curve has no point of order 2 (every group but BLS12-377's
/// G1 and its Edwards profile) has no exceptional case: a GPU fault, without a scan of the
/// bases that would blame them.
fn window_sums<C: GpuCurve>(
    profile: CurveProfile,
    sums: &[u32],
    bases: &[Affine<C>],
) -> Result<Vec<Projective<C>>> {
    let points = sums
        .chunks_exact(profile.point_words())
        .map(|w| profile.point_from_shader_words::<C>(w))
        .collect::<Option<Vec<_>>>();
    let exceptional = crate::gpu::shader::edwards::has_two_torsion::<C>();
    match points {
        Some(p) => Ok(p),
        None if !exceptional => Err(MsmError::Gpu(
            "a window sum came back off the curve or unreduced".into(),
        )),
        None => match check_bases(bases, true) {
            Err(e) => Err(e),
            Ok(()) => Err(MsmError::Gpu(
                "a window sum came back off the curve or unreduced".into(),
            )),
        },
    }
}

/// The GPU's phase times and counts in the report (its total already set), and in a
/// `tracing` event.
fn add_gpu_times(report: &mut MsmReport, times: &GpuTimes) {
    let ph = &mut report.phases;
    ph.upload = times.upload;
    ph.point_conversion = times.point_conversion;
    ph.bucket_sort = times.bucket_sort;
    ph.bucket_accumulation = times.bucket_accumulation;
    ph.bucket_reduction = times.bucket_reduction;
    ph.download = times.download;
    if let Some(e) = times.entries {
        report.num_entries = e as usize;
    }
    report.host_time = report.phases.total.saturating_sub(times.wait);
    report.buffers_allocated = times.buffers_allocated;
    report.dispatches = times.dispatches;
    tracing::info!(
        target: "gpu_msm",
        timing = ?report.gpu_timing,
        upload_ms = ms(times.upload),
        point_conversion_ms = ms(times.point_conversion),
        bucket_sort_ms = ms(times.bucket_sort),
        bucket_accumulation_ms = ms(times.bucket_accumulation),
        bucket_reduction_ms = ms(times.bucket_reduction),
        download_ms = ms(times.download),
        "gpu phases"
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
