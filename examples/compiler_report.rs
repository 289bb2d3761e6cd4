//! The shaders as a GPU compiler sees them: every pipeline of every stage and self-test
//! function, every arithmetic profile, every curve group, built by a real GPU compiler,
//! with what it reports (VGPRs, spills, instructions, waves, scratch, multiplies).
//!
//! No GPU is needed: Mesa's RADV driver makes a null device for a GPU family named by
//! `RADV_FORCE_FAMILY` (`--families rdna2,rdna3`: navi21, and gfx1100 or navi31 as the
//! driver's version names it, found by a probe process; any RADV name is taken too), and
//! builds pipelines with ACO, the
//! compiler AMD's GPUs run under Linux. wgpu cannot open that device, so this builds the
//! pipelines with plain Vulkan (ash): naga writes the SPIR-V as wgpu does
//! (`compiler/spirv.rs`), `VK_KHR_pipeline_executable_properties` reads the statistics
//! (`compiler/vulkan.rs`). Each pipeline compiles in a process of its own, so that one that
//! runs past `--timeout` is stopped and reported.
//!
//! ```sh
//! apt-get install -y mesa-vulkan-drivers
//! cargo run --release --example compiler_report -- --curves bls12-377-g1 --profiles default
//! ```
//!
//! `--check .ci/compiler-budgets.json` is CI's gate (`.ci/compiler-report`); `--asm DIR`
//! keeps each pipeline's assembly; `--json FILE` every row.

mod compiler;

use std::collections::BTreeMap;
use std::time::Instant;

use clap::Parser;
use compiler::cli::ReportCli;
use compiler::jobs::{self, Job};
use compiler::pool::{asm_name, default_icd, radv_name, run_all};
use compiler::select::{covers, curve_selection, op_selected, profile_selection};
use compiler::table::print_table;
use compiler::{fail, worker};
use gpu_msm::internals::gpu::ShaderFn;

fn main() {
    let cli = ReportCli::parse();
    if cli.probe {
        match worker::probe() {
            Ok(name) => println!("{name}"),
            Err(e) => fail(&e),
        }
        return;
    }
    if let Some(args) = &cli.worker {
        let job = Job::parse(args).unwrap_or_else(|e| fail(&e));
        let asm = cli.asm.as_ref().map(|d| d.join(asm_name(&job)));
        let row = worker::run(&job, asm.as_deref());
        println!("{}", serde_json::to_string(&row).expect("a row serializes"));
        return;
    }
    let names: Vec<&str> = ShaderFn::ALL.iter().map(|f| f.name()).collect();
    if let Some(bad) = cli
        .ops
        .iter()
        .find(|o| *o != "all" && !names.contains(&o.as_str()))
    {
        fail(&format!("no self-test function {bad} (one of {names:?})"));
    }
    let curves = curve_selection(&cli.curves);
    let profiles = profile_selection(&cli.profiles);
    let (stages, ops) = (!cli.ops_only, !cli.stages_only);
    let mut job_list = jobs::jobs(&cli.families, &curves, None, &cli.parts, stages, ops);
    job_list.retain(|j| profiles.as_ref().is_none_or(|p| p(j)) && op_selected(&cli, j.what));
    let icd = cli.icd.clone().unwrap_or_else(default_icd);
    if let Some(dir) = &cli.asm {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| fail(&format!("{}: {e}", dir.display())));
    }
    let radv: BTreeMap<String, String> = (cli.families.iter())
        .map(|f| (f.clone(), radv_name(f, &icd)))
        .collect();
    let start = Instant::now();
    let rows = run_all(&job_list, &cli, &icd, &radv);
    eprintln!(
        "{} pipelines in {:.0} s",
        rows.len(),
        start.elapsed().as_secs_f64()
    );
    print_table(&rows, &cli.families);
    if let Some(tools) = &cli.cuda_tools {
        if let Err(e) = compiler::cuda::report(tools) {
            println!("\nCUDA twin: not compiled ({})", e.trim());
        }
    }
    if let Some(path) = &cli.json {
        let text = serde_json::to_string_pretty(&rows).expect("rows serialize");
        std::fs::write(path, text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    }
    let covered = |key: &str| covers(key, &cli, &curves, &profiles);
    if let Some(path) = &cli.write_budgets {
        compiler::budgets::write(path, &rows, covered).unwrap_or_else(|e| fail(&e));
        eprintln!("budgets written to {}", path.display());
    }
    if let Some(path) = &cli.check {
        let verdict = compiler::budgets::check(path, &rows, covered, cli.same_driver)
            .unwrap_or_else(|e| fail(&e));
        for n in &verdict.notes {
            println!("note: {n}");
        }
        for f in &verdict.failures {
            println!("FAIL: {f}");
        }
        if !verdict.failures.is_empty() {
            println!("compiler budgets: {} failures", verdict.failures.len());
            std::process::exit(1);
        }
        println!(
            "compiler budgets: all {} pipelines within budget",
            rows.len()
        );
    }
}
