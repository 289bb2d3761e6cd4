//! Shared by the examples: their command lines ([`cli`]), a progress line for long calls,
//! and reports as JSON.
#![allow(dead_code)]

pub mod cli;
pub mod row;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpu_msm::MsmReport;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::Layer;

/// How long a call runs before the progress line appears.
pub const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// Records the name of the engine span entered last (`gpu_msm.digits`, `gpu_msm.gpu`, ...).
struct PhaseLayer(Arc<Mutex<&'static str>>);

impl<S> Layer<S> for PhaseLayer
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_enter(&self, id: &tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let (Some(span), Ok(mut p)) = (ctx.span(id), self.0.lock()) {
            *p = span.metadata().name();
        }
    }
}

/// Prints "label: phase, elapsed" on stderr every second once a call has run for
/// [`PROGRESS_AFTER`], until dropped. The phase comes from the engine's tracing spans.
pub struct Progress {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

static PHASE: Mutex<Option<Arc<Mutex<&'static str>>>> = Mutex::new(None);

impl Progress {
    /// Starts the progress line for one call.
    pub fn start(label: String) -> Self {
        let phase = {
            let mut g = PHASE.lock().unwrap();
            g.get_or_insert_with(|| {
                let p = Arc::new(Mutex::new("starting"));
                let subscriber = tracing_subscriber::registry().with(PhaseLayer(p.clone()));
                let _ = tracing::subscriber::set_global_default(subscriber);
                p
            })
            .clone()
        };
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            let mut shown = false;
            while !d.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                let t = start.elapsed();
                if t >= PROGRESS_AFTER && t.subsec_millis() < 100 {
                    let p = *phase.lock().unwrap();
                    eprint!("\r  {label}: {p:<28} {:>6.0} s", t.as_secs_f64());
                    shown = true;
                }
            }
            if shown {
                eprintln!();
            }
        });
        Self {
            done,
            thread: Some(thread),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A report as JSON (times in milliseconds).
pub fn report_json(r: &MsmReport) -> serde_json::Value {
    let p = &r.phases;
    serde_json::json!({
        "curve": r.curve,
        "backend": format!("{:?}", r.backend),
        "route": r.route,
        "adapter": r.adapter,
        "arithmetic": r.arithmetic.map(|a| format!("{a:?}")),
        "n": r.n,
        "window_bits": r.window_bits,
        "num_windows": r.num_windows,
        "num_buckets": r.num_buckets,
        "num_entries": r.num_entries,
        "gpu_timing": r.gpu_timing.map(|t| format!("{t:?}")),
        "resident_bases": r.resident_bases,
        "buffers_allocated": r.buffers_allocated,
        "dispatches": r.dispatches,
        "host_time_ms": ms(r.host_time),
        "devices": r.devices.iter().map(|d| serde_json::json!({
            "device": d.device,
            "adapter": d.adapter,
            "points": [d.points.start, d.points.end],
            "time_ms": ms(d.time),
            "rerun": d.rerun,
        })).collect::<Vec<_>>(),
        "sre": r.sre.as_ref().map(|s| serde_json::json!({
            "applied": s.applied,
            "strategy": s.options.strategy.name(),
            "pairs": s.stats.pairs,
            "additions_saved": s.stats.additions_saved,
            "reason": s.reason,
        })),
        "phases_ms": {
            "digits": ms(p.digits),
            "sre_search": ms(p.sre_search),
            "merged_points": ms(p.merged_points),
            "upload": ms(p.upload),
            "point_conversion": ms(p.point_conversion),
            "bucket_sort": ms(p.bucket_sort),
            "bucket_accumulation": ms(p.bucket_accumulation),
            "bucket_reduction": ms(p.bucket_reduction),
            "download": ms(p.download),
            "window_reduction": ms(p.window_reduction),
            "total": ms(p.total),
        },
    })
}

/// Exits with a message when the engine cannot be built.
pub fn engine_or_exit<C: gpu_msm::GpuCurve>(config: gpu_msm::MsmConfig) -> gpu_msm::GpuMsm<C> {
    gpu_msm::GpuMsm::<C>::with_config(config).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    })
}

/// The engine for `config`, announced: its adapter and, for a software one, what to expect.
pub fn announced_engine<C: gpu_msm::GpuCurve>(config: gpu_msm::MsmConfig) -> gpu_msm::GpuMsm<C> {
    let engine = engine_or_exit::<C>(config);
    println!(
        "adapter: {} ({})",
        engine.adapter_name(),
        engine.adapter_backend()
    );
    software_note(&engine);
    engine
}

/// Says, before a run, when the adapter is a software one and what to expect.
pub fn software_note<C: gpu_msm::GpuCurve>(engine: &gpu_msm::GpuMsm<C>) {
    if engine.is_software_adapter() {
        println!(
            "note: {} is a software adapter: the shaders run on this machine's CPU, so the GPU \
             path is no faster than arkworks here (about 1-1.3x arkworks' time with the wide \
             profiles, 25x with limbs13, measured on 2 cores; docs/PERF.md)",
            engine.adapter_name()
        );
    }
}
