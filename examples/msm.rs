//! The main job: random inputs, MSMs on the chosen adapter, each verified against arkworks,
//! with the adapter, backend and phase table (`--help` lists the flags), on BLS12-377 G1 or
//! `--curve bls12-381 | bn254` and `--group g2`.
//!
//! cargo run --release --example msm -- --log-n 16

mod common;

use std::time::Instant;

use ark_ec::short_weierstrass::Projective;
use ark_ec::VariableBaseMSM;
use clap::Parser;
use common::cli::MsmCli;
use common::{engine_or_exit, report_json, row, software_note, Progress};
use gpu_msm::{inputs, GpuCurve, MsmConfig};

/// arkworks' MSM runs on at most this many points at a time: at 2^26 points its digit
/// tables and copies of the inputs need more memory than a 23 GB machine has.
const REFERENCE_CHUNK: usize = 1 << 22;

fn main() {
    let cli = MsmCli::parse();
    on_curve!(cli.curve, cli.group, C => run::<C>(&cli))
}

fn run<C: GpuCurve>(cli: &MsmCli) {
    let config = MsmConfig {
        window_bits: cli.window,
        shader_runtime_checks: cli.checked,
        sre: cli.sre,
        bucket_sort: cli.bucket_sort.into(),
        ..cli.engine.config()
    };
    let n = 1usize << cli.log_n;
    let engine = engine_or_exit::<C>(config);
    if !cli.json {
        println!(
            "curve: {}; adapter: {} ({}), arithmetic {:?}, engine ready in {}",
            C::NAME,
            engine.adapter_name(),
            engine.adapter_backend(),
            engine.arithmetic(),
            engine.startup()
        );
        software_note(&engine);
        let devices = engine.device_names();
        if devices.len() > 1 {
            println!(
                "devices: {} ({devices:?}); each MSM split across them",
                devices.len()
            );
        }
    }
    let t = Instant::now();
    let bases = inputs::random_bases::<C>(n, cli.seed);
    let scalars: Vec<gpu_msm::Fr<C>> = inputs::scalars(cli.scalars, n, cli.seed.wrapping_add(1));
    let made = t.elapsed();
    let t = Instant::now();
    // The MSM is linear, so the sum of arkworks' MSMs over chunks is arkworks' MSM.
    let expected: Projective<C> = bases
        .chunks(REFERENCE_CHUNK)
        .zip(scalars.chunks(REFERENCE_CHUNK))
        .map(|(b, s)| Projective::<C>::msm(b, s).expect("equal lengths"))
        .sum();
    let cpu_time = t.elapsed();
    if !cli.json {
        println!(
            "inputs: n = 2^{} = {n}, scalars {}, made in {made:.2?}",
            cli.log_n, cli.scalars
        );
        let chunks = n.div_ceil(REFERENCE_CHUNK);
        let how = if chunks > 1 {
            format!(" (summed over {chunks} chunks of 2^22 points)")
        } else {
            String::new()
        };
        println!("arkworks VariableBaseMSM::msm: {cpu_time:.2?}{how}");
    }

    let resident = cli.resident.then(|| {
        let t = Instant::now();
        let precompute = cli.precompute.0.unwrap_or_default();
        let options = gpu_msm::LoadOptions {
            precompute,
            ..Default::default()
        };
        let handle = engine.load_bases_with(&bases, options).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1);
        });
        if !cli.json {
            println!(
                "load_bases: {:.2?} ({} copies at c = {:?})",
                t.elapsed(),
                handle.precomputed_copies(),
                handle.precomputed_window_bits()
            );
        }
        handle
    });
    let (mut ok, mut matched, mut last) = (true, 0, None);
    for r in 0..cli.repeat {
        let progress = Progress::start(format!("run {r}"));
        let out = match &resident {
            Some(handle) => engine.msm_with_report(handle, &scalars),
            None => engine.msm_with_report(&bases, &scalars),
        };
        drop(progress);
        match out {
            Ok((got, report)) => {
                let good = got == expected;
                ok &= good;
                matched += u64::from(good);
                if cli.json {
                    let mut j = report_json(&report);
                    j["run"] = r.into();
                    j["matches_arkworks"] = good.into();
                    j["arkworks_ms"] = (cpu_time.as_secs_f64() * 1e3).into();
                    println!("{j}");
                } else {
                    let verdict = if good { "matches arkworks" } else { "MISMATCH" };
                    println!("run {r}: {verdict}");
                    print!("{report}");
                }
                last = Some(report);
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
    if let Some(report) = &last {
        let parts = resident
            .as_ref()
            .map_or(1, |h| n.div_ceil(h.part_len().max(1)));
        summary_row::<C>(cli, &engine, report, parts, (matched, cli.repeat), cpu_time);
    }
    if !ok {
        eprintln!("result differs from arkworks");
        std::process::exit(1);
    }
}

/// Field products per second by stage (the plan's counts over the stage's time), printed
/// and, with `--table`, appended to the device check's summary as one row.
fn summary_row<C: GpuCurve>(
    cli: &MsmCli,
    engine: &gpu_msm::GpuMsm<C>,
    report: &gpu_msm::MsmReport,
    parts: usize,
    matched: (u64, u64),
    arkworks: std::time::Duration,
) {
    // The counts are the GPU bucket sort's plan: not SRE's merged points, not host lists.
    let gpu_sort = report.backend == gpu_msm::Backend::Gpu
        && !matches!(cli.bucket_sort, common::cli::BucketSortArg::Host)
        && report.sre.as_ref().is_none_or(|s| !s.applied);
    let muls = (engine.profile())
        .filter(|_| gpu_sort)
        .and_then(|p| row::phase_muls(report, p, parts));
    let timing = report
        .gpu_timing
        .map_or("no GPU".into(), |t| format!("{t:?}"));
    if let (Some(m), false) = (muls, cli.json) {
        println!(
            "field products (plan's counts, timing {timing}): accumulation {:.1} M in {:.2?} = \
             {} M/s, reduction {:.1} M in {:.2?} = {} M/s",
            m.accumulation as f64 / 1e6,
            report.phases.bucket_accumulation,
            row::rate(Some(m.accumulation), report.phases.bucket_accumulation),
            m.reduction as f64 / 1e6,
            report.phases.bucket_reduction,
            row::rate(Some(m.reduction), report.phases.bucket_reduction)
        );
    }
    let Some(file) = &cli.table else { return };
    let mode = match (cli.resident, cli.precompute.0) {
        (false, _) => "one-shot".to_string(),
        (true, None) => "resident".to_string(),
        (true, Some(p)) => format!("resident, {p:?}"),
    };
    let label =
        (cli.label.clone()).unwrap_or_else(|| format!("{} 2^{} {mode}", C::NAME, cli.log_n));
    let line = row::msm_row(&label, report, muls, parts, matched, arkworks);
    if let Err(e) = row::append(file, row::MSM_HEADER, &line) {
        eprintln!("error: writing {}: {e}", file.display());
        std::process::exit(1);
    }
}
