//! Sweeps MSM sizes on the chosen adapter, times the three paths (CPU double-and-add,
//! arkworks' `VariableBaseMSM::msm`, the GPU pipeline), prints a table with the winner per
//! size, finds the crossovers, draws a log-log chart and writes a calibration file that
//! `GpuMsm` routes by (`MsmConfig::calibration` or `GPU_MSM_CALIBRATION`).
//!
//! cargo run --release --example crossover -- --max-log 16   (`--help` lists the flags)
//!
//! On BLS12-377 G1 by default; `--curve bls12-381 | bn254` and `--group g2` measure another
//! group, and the calibration file names it (the engine routes by a file only for its group).
//!
//! Flags of earlier versions, all still there: [--max-log 16] [--gpu-max-log L]
//!     [--dd-max N] [--reps 5] [--adapter NAME] [--out FILE]
//!     [--chart crossover.svg]
//!
//! Sizes: 2, 3, 4, 6, 8, 12, ... (powers of two and 1.5 times them) up to 2^max-log. Each
//! size is timed `--reps` times per path (median kept), every result checked against
//! arkworks. The GPU column stops at 2^gpu-max-log (default: max-log) and double-and-add at
//! `--dd-max` points (default 4096); missing cells are "-" and end the crossover search.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ark_ec::short_weierstrass::Projective;
use ark_ec::VariableBaseMSM;
use clap::Parser;
use common::cli::CrossoverCli;
use gpu_msm::{
    inputs, internals::cpu, AdapterChoice, CalibrationSource, GpuCurve, GpuMsm, MsmConfig,
};
use gpu_msm::{Calibration, CalibrationRow};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;

fn median_us(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut v: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

/// The calibration file of group `name` ("BN254 G2" writes calibration-bn254-g2.json): one
/// file per group, so that sweeping a second group keeps the first one's file.
fn default_out(name: &str) -> PathBuf {
    if name == "BLS12-377 G1" {
        return "calibration.json".into();
    }
    format!("calibration-{}.json", name.to_lowercase().replace(' ', "-")).into()
}

fn cell(v: Option<f64>) -> String {
    v.map_or("-".into(), |us| format!("{us:.1}"))
}

fn draw(
    path: &PathBuf,
    title: &str,
    rows: &[CalibrationRow],
) -> Result<(), Box<dyn std::error::Error>> {
    type Column = fn(&CalibrationRow) -> Option<f64>;
    let series: [(&str, Column, RGBColor); 3] = [
        ("double-and-add", |r| r.double_and_add_us, RED),
        ("arkworks", |r| r.arkworks_us, BLUE),
        ("gpu", |r| r.gpu_us, GREEN),
    ];
    let xs = rows.iter().map(|r| r.n as f64);
    let ys = rows
        .iter()
        .flat_map(|r| series.iter().filter_map(move |s| (s.1)(r)));
    let (x0, x1) = xs.fold((f64::MAX, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    let (y0, y1) = ys.fold((f64::MAX, 0f64), |(a, b), y| (a.min(y), b.max(y)));
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1 * 1.2).log_scale(), (y0 * 0.8..y1 * 1.2).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("n (points)")
        .y_desc("median time (us)")
        .draw()?;
    for (name, get, color) in series {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| get(r).map(|y| (r.n as f64, y)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

fn main() {
    let cli = CrossoverCli::parse();
    on_curve!(cli.curve, cli.group, C => run::<C>(&cli))
}

fn run<C: GpuCurve>(cli: &CrossoverCli) {
    let max_log = cli.max_log;
    let gpu_max_log = cli.gpu_max_log.unwrap_or(max_log);
    let dd_max = cli.dd_max;
    let reps = cli.reps as usize;
    let out = cli.out.clone().unwrap_or_else(|| default_out(C::NAME));
    let chart = cli.chart.clone();
    let engine = match GpuMsm::<C>::with_config(MsmConfig {
        force_backend: Some(gpu_msm::Backend::Gpu),
        calibration: CalibrationSource::Defaults,
        adapter: AdapterChoice {
            name_contains: cli.adapter.clone(),
            ..Default::default()
        },
        ..Default::default()
    }) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1)
        }
    };
    let threads = rayon::current_num_threads();
    if !cli.json {
        println!(
            "{}: adapter: {} ({}), {threads} CPU threads, {reps} reps per cell",
            C::NAME,
            engine.adapter_name(),
            engine.adapter_backend()
        );
        common::software_note(&engine);
    }

    let mut sizes = Vec::new();
    for l in 1..=max_log {
        sizes.push(1usize << l);
        if l < max_log {
            sizes.push(3usize << (l - 1));
        }
    }
    let bar = if cli.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(sizes.len() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} n = {msg} [{elapsed_precise}]")
            .expect("template"),
    );
    let mut rows = Vec::new();
    for &n in &sizes {
        bar.set_message(n.to_string());
        let bases = inputs::random_bases::<C>(n, n as u64);
        let scalars = inputs::random_scalars(n, 1 + n as u64);
        let expected = Projective::<C>::msm(&bases, &scalars).expect("equal lengths");
        let double_and_add_us = (n <= dd_max).then(|| {
            assert_eq!(cpu::double_and_add(&bases, &scalars), expected, "n = {n}");
            median_us(reps, || {
                let _ = std::hint::black_box(cpu::double_and_add(&bases, &scalars));
            })
        });
        let arkworks_us = Some(median_us(reps, || {
            let _ = std::hint::black_box(Projective::<C>::msm(&bases, &scalars).unwrap());
        }));
        let gpu_us = (n <= 1 << gpu_max_log).then(|| {
            // The first call checks the result (and takes any first-dispatch compilation).
            match engine.msm(&bases, &scalars) {
                Ok(r) => assert_eq!(r, expected, "GPU result at n = {n}"),
                Err(e) => {
                    eprintln!("error at n = {n}: {e}");
                    std::process::exit(1)
                }
            }
            median_us(reps, || {
                let _ = std::hint::black_box(engine.msm(&bases, &scalars).unwrap());
            })
        });
        rows.push(CalibrationRow {
            n,
            double_and_add_us,
            arkworks_us,
            gpu_us,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let machine = format!(
        "{threads} CPU threads, {} on {}",
        engine.adapter_name(),
        engine.adapter_backend()
    );

    if cli.json {
        let cal = Calibration::from_rows(C::NAME, engine.adapter_name(), &machine, rows);
        if let Err(e) = cal.save(&out) {
            eprintln!("error writing {}: {e}", out.display());
            std::process::exit(1)
        }
        println!("{}", serde_json::to_string(&cal).expect("serializable"));
        return;
    }
    println!(
        "{:>9} {:>16} {:>14} {:>14}  winner",
        "n", "double-and-add", "arkworks", "gpu"
    );
    for r in &rows {
        let cands = [
            ("double-and-add", r.double_and_add_us),
            ("arkworks", r.arkworks_us),
            ("gpu", r.gpu_us),
        ];
        let winner = cands
            .iter()
            .filter_map(|(name, t)| t.map(|t| (name, t)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("-", |(name, _)| name);
        println!(
            "{:>9} {:>16} {:>14} {:>14}  {winner}",
            r.n,
            cell(r.double_and_add_us),
            cell(r.arkworks_us),
            cell(r.gpu_us)
        );
    }
    let cal = Calibration::from_rows(C::NAME, engine.adapter_name(), &machine, rows);
    let from = |n: Option<usize>| {
        n.map_or("never in the sweep".to_string(), |n| {
            format!("from n = {n}")
        })
    };
    println!(
        "crossovers: arkworks overtakes double-and-add {}; the GPU overtakes the CPU {}",
        from((cal.arkworks_from != usize::MAX).then_some(cal.arkworks_from)),
        from(cal.gpu_from)
    );
    if let Err(e) = cal.save(&out) {
        eprintln!("error writing {}: {e}", out.display());
        std::process::exit(1)
    }
    println!("calibration written to {}", out.display());
    let title = format!("{} MSM time vs n on {}", C::NAME, engine.adapter_name());
    match draw(&chart, &title, &cal.rows) {
        Ok(()) => println!("chart written to {}", chart.display()),
        Err(e) => eprintln!("chart: {e}"),
    }
}
