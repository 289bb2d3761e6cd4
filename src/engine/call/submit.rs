//! Step 5 of a call: the planned call's GPU work (its `Job`) uploaded and submitted.

use tracing::Instrument;

use crate::curve::GpuCurve;
use crate::engine::call::plan::{CallPlan, OnGpu};
use crate::engine::GpuMsm;
use crate::error::Result;
use crate::gpu::{GpuContext, InFlight, Job, JobBases, JobPlan};

impl<C: GpuCurve> GpuMsm<C> {
    /// Uploads a prepared call and submits its stages, awaiting its hand-off to the device's
    /// submitting thread but not the GPU's work. The call first awaits room in the memory
    /// budget if `wait`; else it returns `None` when there is none.
    pub(in crate::engine) async fn submit(
        &self,
        gpu: &GpuContext,
        p: &OnGpu<'_, C>,
        wait: bool,
    ) -> Result<Option<InFlight>> {
        let span = tracing::info_span!("gpu_msm.upload", n = p.call.n());
        let job = Self::job(gpu, p);
        let out = gpu
            .submit_if(&job, wait, self.config.gpu_timeout)
            .instrument(span)
            .await;
        out.map_err(|e| Self::on_device(gpu, e))
    }

    /// A prepared call's GPU work. Resident sets loaded on a device that was lost since are
    /// uploaded by the call.
    pub(in crate::engine) fn job<'a>(gpu: &GpuContext, p: &'a OnGpu<C>) -> Job<'a, C> {
        let n = p.call.n();
        let bases = match p.call.bases.stored_parts(n).filter(|r| gpu.holds(&r[0])) {
            Some(r) => JobBases::Resident(r, n),
            None => JobBases::Host(p.call.points),
        };
        // The call reads the copies it planned for only where the part is held here.
        let shift = match bases {
            JobBases::Resident(..) => p.shift,
            JobBases::Host(_) => crate::gpu::Shift::NONE,
        };
        Job {
            bases,
            merged: &p.merged,
            plan: match &p.plan {
                CallPlan::HostLists(plan) => JobPlan::HostLists(plan),
                CallPlan::DeviceSort => JobPlan::DeviceSort {
                    scalars: p.call.scalars,
                    window_bits: p.c,
                    shift,
                },
            },
        }
    }
}
