//! The GPU side: adapter and device, the WGSL pipelines, and one run of the Pippenger
//! stages (convert bases, accumulate buckets, reduce buckets per window).

pub mod field;
pub mod program;
pub mod selftest;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use wgpu::util::DeviceExt;

use crate::config::{MsmConfig, PowerPreference};
use crate::digits::BucketPlan;
use crate::error::{MsmError, Result};
use crate::report::GpuTiming;
use field::{AFFINE_WORDS, POINT_WORDS, WORKGROUP_SIZE};

const FIELD_WGSL: &str = include_str!("../../shaders/field.wgsl");
const CURVE_WGSL: &str = include_str!("../../shaders/curve.wgsl");
const DISPATCH_WGSL: &str = include_str!("../../shaders/dispatch.wgsl");
const CONVERT_WGSL: &str = include_str!("../../shaders/convert.wgsl");
const ACCUMULATE_WGSL: &str = include_str!("../../shaders/accumulate.wgsl");
const REDUCE_WGSL: &str = include_str!("../../shaders/reduce.wgsl");
pub(crate) const SELFTEST_WGSL: &str = include_str!("../../shaders/selftest.wgsl");

/// Bucket reduction gives each thread a run of this many buckets of one window (fewer when a
/// window has fewer buckets), so a window of B buckets is split into B / 16 segments.
pub const REDUCTION_RUN_LENGTH: u32 = 16;

/// The number of passes: convert, accumulate, merge chunks, reduce segments, reduce windows.
const PASSES: usize = 5;

/// The number of timestamp queries: a begin and an end for each pass.
const TIMESTAMP_QUERIES: u32 = 2 * PASSES as u32;

/// Full WGSL source of one stage: generated constants, field, curve, dispatch helpers, stage.
pub(crate) fn stage_source(stage: &str) -> String {
    [
        field::wgsl_header().as_str(),
        FIELD_WGSL,
        CURVE_WGSL,
        DISPATCH_WGSL,
        stage,
    ]
    .join("\n")
}

/// Uniform parameters shared by the stages (layout of `Params` in dispatch.wgsl).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    pub num_points: u32,
    pub num_windows: u32,
    pub buckets_per_window: u32,
    pub total_buckets: u32,
    pub segments: u32,
    pub log2_segments: u32,
    pub run_length: u32,
    pub total_segments: u32,
    pub num_chunks: u32,
    pub _pad: [u32; 3],
}

impl Params {
    fn new(num_points: u32, plan: &BucketPlan) -> Self {
        let b = plan.buckets_per_window;
        let run_length = REDUCTION_RUN_LENGTH.min(b);
        let segments = b / run_length;
        Self {
            num_points,
            num_windows: plan.num_windows,
            buckets_per_window: b,
            total_buckets: plan.total_buckets(),
            segments,
            log2_segments: segments.trailing_zeros(),
            run_length,
            total_segments: plan.num_windows * segments,
            num_chunks: plan.num_chunks(),
            _pad: [0; 3],
        }
    }
}

/// What a GPU run measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct GpuTimes {
    /// Upload until the data is on the GPU.
    pub upload: Duration,
    /// Conversion of the bases.
    pub point_conversion: Duration,
    /// Bucket accumulation.
    pub bucket_accumulation: Duration,
    /// Both bucket-reduction passes.
    pub bucket_reduction: Duration,
    /// Mapping and copying out the window sums.
    pub download: Duration,
}

struct Pipelines {
    convert: wgpu::ComputePipeline,
    accumulate: wgpu::ComputePipeline,
    merge_chunks: wgpu::ComputePipeline,
    reduce_segments: wgpu::ComputePipeline,
    reduce_windows: wgpu::ComputePipeline,
}

/// An adapter, its device and the compiled MSM pipelines.
pub struct GpuContext {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) runtime_checks: bool,
    pipelines: Pipelines,
    timestamps: bool,
    pipeline_creation: Duration,
}

fn pick_adapter(config: &MsmConfig) -> Result<wgpu::Adapter> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::PRIMARY,
        ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    let seen: Vec<String> = adapters
        .iter()
        .map(|a| {
            let i = a.get_info();
            format!("{} ({:?})", i.name, i.backend)
        })
        .collect();
    if let Some(filter) = config.adapter_filter() {
        let want = filter.to_lowercase();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&want))
            .ok_or_else(|| MsmError::NoAdapter {
                detail: format!("no adapter name contains {filter:?}; seen: {seen:?}"),
            });
    }
    let power_preference = match config.adapter.power_preference {
        PowerPreference::HighPerformance => wgpu::PowerPreference::HighPerformance,
        PowerPreference::LowPower => wgpu::PowerPreference::LowPower,
    };
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    }))
    .map_err(|e| MsmError::NoAdapter {
        detail: format!("{e}; seen: {seen:?}"),
    })
}

/// Waits for a popped error scope and turns a captured error into `MsmError::Gpu`.
fn check_scope(scope: wgpu::ErrorScopeGuard, what: &str) -> Result<()> {
    match pollster::block_on(scope.pop()) {
        None => Ok(()),
        Some(e) => Err(MsmError::Gpu(format!("{what}: {e}"))),
    }
}

impl GpuContext {
    /// Picks the adapter, creates the device and compiles every stage.
    pub fn new(config: &MsmConfig) -> Result<Self> {
        let adapter = pick_adapter(config)?;
        let info = adapter.get_info();
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY)
            && std::env::var(crate::config::TIMING_ENV)
                .map(|v| v != "wallclock")
                .unwrap_or(true);
        let required_features = if timestamps {
            wgpu::Features::TIMESTAMP_QUERY
        } else {
            wgpu::Features::empty()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("gpu-msm"),
            required_features,
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| MsmError::DeviceRequest(e.to_string()))?;
        // Errors are captured by error scopes around every operation; anything that escapes
        // them (none should) is reported here instead of aborting the process.
        device.on_uncaptured_error(std::sync::Arc::new(|e| {
            eprintln!("gpu-msm: uncaptured wgpu error: {e}");
        }));

        let start = Instant::now();
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let checks = config.shader_runtime_checks;
        let pipelines = Pipelines {
            convert: create_pipeline(&device, CONVERT_WGSL, "convert", checks),
            accumulate: create_pipeline(&device, ACCUMULATE_WGSL, "accumulate", checks),
            merge_chunks: create_pipeline(&device, ACCUMULATE_WGSL, "merge_chunks", checks),
            reduce_segments: create_pipeline(&device, REDUCE_WGSL, "reduce_segments", checks),
            reduce_windows: create_pipeline(&device, REDUCE_WGSL, "reduce_windows", checks),
        };
        check_scope(scope, "pipeline creation")?;
        Ok(Self {
            device,
            queue,
            info,
            runtime_checks: checks,
            pipelines,
            timestamps,
            pipeline_creation: start.elapsed(),
        })
    }

    /// Adapter name.
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// Time spent creating the compute pipelines.
    pub fn pipeline_creation_time(&self) -> Duration {
        self.pipeline_creation
    }

    /// How GPU phases are timed on this adapter.
    pub fn timing(&self) -> GpuTiming {
        if self.timestamps {
            GpuTiming::Timestamps
        } else {
            GpuTiming::WallClock
        }
    }

    fn storage_buffer(
        &self,
        label: &str,
        words: &[u32],
        extra: wgpu::BufferUsages,
    ) -> wgpu::Buffer {
        // A binding may not be empty: keep at least one word.
        let data: &[u32] = if words.is_empty() { &[0] } else { words };
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(data),
                usage: wgpu::BufferUsages::STORAGE | extra,
            })
    }

    fn scratch_buffer(&self, label: &str, words: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: words.max(1) * 4,
            usage,
            mapped_at_creation: false,
        })
    }

    fn check_sizes(&self, sizes: &[(&str, u64)], groups: &[(&str, u64)]) -> Result<()> {
        let limits = self.device.limits();
        for (name, bytes) in sizes {
            if *bytes > limits.max_storage_buffer_binding_size || *bytes > limits.max_buffer_size {
                return Err(MsmError::InputTooLarge(format!(
                    "{name} needs {bytes} bytes; this adapter binds at most {} (buffer {})",
                    limits.max_storage_buffer_binding_size, limits.max_buffer_size
                )));
            }
        }
        let max = limits.max_compute_workgroups_per_dimension as u64;
        for (name, g) in groups {
            if *g > max * max {
                return Err(MsmError::InputTooLarge(format!(
                    "{name} needs {g} workgroups; at most {max} x {max}"
                )));
            }
        }
        Ok(())
    }

    fn dispatch_dims(&self, threads: u64) -> (u32, u32) {
        let groups = threads.div_ceil(WORKGROUP_SIZE as u64).max(1);
        let max = self.device.limits().max_compute_workgroups_per_dimension as u64;
        if groups <= max {
            (groups as u32, 1)
        } else {
            (max as u32, groups.div_ceil(max) as u32)
        }
    }

    /// Runs the stages on `points` (n affine bases in the upload layout) and `plan`, and
    /// returns the W window sums in the shaders' packed projective form.
    pub fn run(&self, points: &[u32], plan: &BucketPlan) -> Result<(Vec<u32>, GpuTimes)> {
        let n = (points.len() / AFFINE_WORDS) as u64;
        let params = Params::new(n as u32, plan);
        let point_words = POINT_WORDS as u64;
        let bucket_words = params.total_buckets as u64 * point_words;
        let chunk_words = params.num_chunks as u64 * point_words;
        let partial_words = params.total_segments as u64 * point_words;
        let sum_words = params.num_windows as u64 * point_words;
        self.check_sizes(
            &[
                ("bases", points.len() as u64 * 4),
                ("entries", plan.entries.len() as u64 * 4),
                ("buckets", bucket_words * 4),
                ("chunk sums", chunk_words * 4),
                ("partials", partial_words * 4),
            ],
            &[
                ("convert", n.div_ceil(WORKGROUP_SIZE as u64)),
                (
                    "accumulate",
                    (params.num_chunks as u64).div_ceil(WORKGROUP_SIZE as u64),
                ),
                (
                    "merge",
                    (params.total_buckets as u64).div_ceil(WORKGROUP_SIZE as u64),
                ),
            ],
        )?;

        let mut times = GpuTimes::default();
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);

        let t = Instant::now();
        let copy = wgpu::BufferUsages::COPY_SRC;
        let none = wgpu::BufferUsages::empty();
        let points_buf = self.storage_buffer("bases", points, none);
        let chunk_offsets_buf = self.storage_buffer("chunk offsets", &plan.chunk_offsets, none);
        let bucket_chunks_buf = self.storage_buffer("bucket chunks", &plan.bucket_chunks, none);
        let entries_buf = self.storage_buffer("entries", &plan.entries, none);
        let params_buf = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("params"),
                contents: bytemuck::bytes_of(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            });
        let storage = wgpu::BufferUsages::STORAGE;
        let buckets_buf = self.scratch_buffer("buckets", bucket_words, storage);
        let chunk_sums_buf = self.scratch_buffer("chunk sums", chunk_words, storage);
        let partials_buf = self.scratch_buffer("partials", partial_words, storage);
        let sums_buf = self.scratch_buffer("window sums", sum_words, storage | copy);
        let readback = self.scratch_buffer(
            "window sums readback",
            sum_words,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        // Flush the upload so that its time is the upload's and not the first stage's.
        self.queue.submit([]);
        self.wait()?;
        times.upload = t.elapsed();

        // Each entry point's automatic layout holds only the bindings it uses.
        let bind = |pipeline: &wgpu::ComputePipeline, buffers: &[(u32, &wgpu::Buffer)]| {
            let entries: Vec<wgpu::BindGroupEntry> = buffers
                .iter()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: *i,
                    resource: b.as_entire_binding(),
                })
                .collect();
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            })
        };
        let p = &self.pipelines;
        let stages: [(&wgpu::ComputePipeline, wgpu::BindGroup, (u32, u32)); PASSES] = [
            (
                &p.convert,
                bind(&p.convert, &[(0, &points_buf), (1, &params_buf)]),
                self.dispatch_dims(n),
            ),
            (
                &p.accumulate,
                bind(
                    &p.accumulate,
                    &[
                        (0, &points_buf),
                        (1, &chunk_offsets_buf),
                        (2, &entries_buf),
                        (3, &chunk_sums_buf),
                        (4, &params_buf),
                    ],
                ),
                self.dispatch_dims(params.num_chunks as u64),
            ),
            (
                &p.merge_chunks,
                bind(
                    &p.merge_chunks,
                    &[
                        (3, &chunk_sums_buf),
                        (4, &params_buf),
                        (5, &bucket_chunks_buf),
                        (6, &buckets_buf),
                    ],
                ),
                self.dispatch_dims(params.total_buckets as u64),
            ),
            (
                &p.reduce_segments,
                bind(
                    &p.reduce_segments,
                    &[(0, &buckets_buf), (1, &partials_buf), (3, &params_buf)],
                ),
                self.dispatch_dims(params.total_segments as u64),
            ),
            (
                &p.reduce_windows,
                bind(
                    &p.reduce_windows,
                    &[(1, &partials_buf), (2, &sums_buf), (3, &params_buf)],
                ),
                (params.num_windows, 1),
            ),
        ];

        let encode =
            |encoder: &mut wgpu::CommandEncoder, i: usize, queries: Option<&wgpu::QuerySet>| {
                let (pipeline, group, (x, y)) = &stages[i];
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: queries.map(|q| wgpu::ComputePassTimestampWrites {
                        query_set: q,
                        beginning_of_pass_write_index: Some(2 * i as u32),
                        end_of_pass_write_index: Some(2 * i as u32 + 1),
                    }),
                });
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, group, &[]);
                pass.dispatch_workgroups(*x, *y, 1);
            };

        let mut stage_ns = [0f64; PASSES];
        let copy_out = |encoder: &mut wgpu::CommandEncoder| {
            encoder.copy_buffer_to_buffer(&sums_buf, 0, &readback, 0, sum_words * 4);
        };
        let mut ts_readback = None;
        if self.timestamps {
            let queries = self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("stage timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: TIMESTAMP_QUERIES,
            });
            let resolve = self.scratch_buffer(
                "timestamps",
                2 * TIMESTAMP_QUERIES as u64,
                wgpu::BufferUsages::QUERY_RESOLVE | copy,
            );
            let ts_read = self.scratch_buffer(
                "timestamps readback",
                2 * TIMESTAMP_QUERIES as u64,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            );
            let mut encoder = self.device.create_command_encoder(&Default::default());
            for i in 0..stages.len() {
                encode(&mut encoder, i, Some(&queries));
            }
            copy_out(&mut encoder);
            encoder.resolve_query_set(&queries, 0..TIMESTAMP_QUERIES, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &ts_read, 0, 8 * TIMESTAMP_QUERIES as u64);
            self.queue.submit([encoder.finish()]);
            self.wait()?;
            ts_readback = Some(ts_read);
        } else {
            for (i, ns) in stage_ns.iter_mut().enumerate() {
                let t = Instant::now();
                let mut encoder = self.device.create_command_encoder(&Default::default());
                encode(&mut encoder, i, None);
                if i == stages.len() - 1 {
                    copy_out(&mut encoder);
                }
                self.queue.submit([encoder.finish()]);
                self.wait()?;
                *ns = t.elapsed().as_nanos() as f64;
            }
        }

        let t = Instant::now();
        let sums: Vec<u32> = bytemuck::cast_slice(&self.read_buffer(&readback)?).to_vec();
        times.download = t.elapsed();
        if let Some(ts_read) = ts_readback {
            let raw = self.read_buffer(&ts_read)?;
            let ticks: &[u64] = bytemuck::cast_slice(&raw);
            let period = self.queue.get_timestamp_period() as f64;
            for (i, ns) in stage_ns.iter_mut().enumerate() {
                *ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * period;
            }
        }
        let d = |ns: f64| Duration::from_nanos(ns as u64);
        times.point_conversion = d(stage_ns[0]);
        times.bucket_accumulation = d(stage_ns[1] + stage_ns[2]);
        times.bucket_reduction = d(stage_ns[3] + stage_ns[4]);

        check_scope(oom, "out of GPU memory")?;
        check_scope(val, "validation")?;
        Ok((sums, times))
    }

    /// Blocks until all submitted work is done.
    pub(crate) fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| MsmError::Gpu(format!("poll: {e}")))
    }

    /// Maps a MAP_READ buffer and copies its contents out.
    pub(crate) fn read_buffer(&self, buffer: &wgpu::Buffer) -> Result<Vec<u8>> {
        let (tx, rx) = mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        rx.recv()
            .map_err(|e| MsmError::Gpu(format!("map callback lost: {e}")))?
            .map_err(|e| MsmError::Gpu(format!("map failed: {e}")))?;
        let bytes = buffer
            .get_mapped_range(..)
            .map_err(|e| MsmError::Gpu(format!("mapped range: {e}")))?
            .to_vec();
        buffer.unmap();
        Ok(bytes)
    }
}

/// Compiles one entry point. Unchecked unless `checks`: the stages index fixed-size arrays
/// only over constant in-range loops, and storage buffers only at indices the host bounds
/// (thread guards against the counts in `Params`, point indices < n built by the host).
pub(crate) fn create_pipeline(
    device: &wgpu::Device,
    stage: &str,
    entry: &str,
    checks: bool,
) -> wgpu::ComputePipeline {
    let source = stage_source(stage);
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(entry),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    };
    let module = if checks {
        device.create_shader_module(desc)
    } else {
        // SAFETY: see the function comment; every index in these shaders is in range.
        unsafe { device.create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked()) }
    };
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry),
        layout: None,
        module: &module,
        entry_point: Some(entry),
        compilation_options: Default::default(),
        cache: None,
    })
}
