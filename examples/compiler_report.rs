//! The shaders as a GPU compiler sees them: every pipeline of every stage and self-test
//! function, every arithmetic profile, every curve group, built by a real GPU compiler,
//! with what it reports (VGPRs, spills, instructions, waves, scratch, multiplies).
//!
//! No GPU is needed: Mesa's RADV driver makes a null device for a GPU family named by
//! `RADV_FORCE_FAMILY` (`--families rdna2,rdna3`: navi21, and gfx1100 or navi31 as the
//! driver's version names it; any RADV name is taken too), and builds pipelines with ACO, the
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
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use compiler::cli::ReportCli;
use compiler::jobs::{self, CurveGroup, Job};
use compiler::worker::{self, Row};
use gpu_msm::internals::gpu::ShaderFn;
use gpu_msm::Arithmetic;

fn fail(msg: &str) -> ! {
    eprintln!("compiler_report: {msg}");
    std::process::exit(2)
}

fn main() {
    let cli = ReportCli::parse();
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
    let start = Instant::now();
    let rows = run_all(&job_list, &cli, &icd);
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
    if let Some(path) = &cli.write_budgets {
        compiler::budgets::write(path, &rows).unwrap_or_else(|e| fail(&e));
        eprintln!("budgets written to {}", path.display());
    }
    if let Some(path) = &cli.check {
        let covered = |key: &str| covers(key, &cli, &curves, &profiles);
        let verdict = compiler::budgets::check(path, &rows, covered).unwrap_or_else(|e| fail(&e));
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

/// Whether `--ops` takes `what` (every stage is taken).
fn op_selected(cli: &ReportCli, what: jobs::What) -> bool {
    match what {
        jobs::What::Stage(_) => true,
        jobs::What::Op(f) => cli.ops.iter().any(|o| o == "all" || o == f.name()),
    }
}

/// The profile filter of `--profiles`: None for all.
type ProfileFilter = Option<Box<dyn Fn(&Job) -> bool>>;

fn profile_selection(names: &[String]) -> ProfileFilter {
    if names.iter().any(|n| n == "all") {
        return None;
    }
    let mut wanted: Vec<Arithmetic> = Vec::new();
    let mut default = false;
    for n in names {
        match n.as_str() {
            "default" => default = true,
            "limbs13" => wanted.push(Arithmetic::Limbs13),
            "limbs29" => wanted.push(Arithmetic::Limbs29),
            "limbs29-edwards" => wanted.push(Arithmetic::Limbs29Edwards),
            other => fail(&format!("no profile {other}")),
        }
    }
    Some(Box::new(move |j: &Job| {
        wanted.contains(&j.profile)
            || default && j.profile == jobs::default_profile((j.curve.spec)())
    }))
}

fn curve_selection(names: &[String]) -> Vec<&'static CurveGroup> {
    if names.iter().any(|n| n == "all") {
        return jobs::CURVE_GROUPS.iter().collect();
    }
    (names.iter())
        .map(|n| jobs::curve_group(n).unwrap_or_else(|| fail(&format!("no curve group {n}"))))
        .collect()
}

/// Whether this run's selection compiles the pipeline `key` names (a budget's key).
fn covers(
    key: &str,
    cli: &ReportCli,
    curves: &[&'static CurveGroup],
    profiles: &ProfileFilter,
) -> bool {
    let words: Vec<&str> = key.split_whitespace().collect();
    let (family, curve, what) = (words[0], words[1], words.get(3).copied().unwrap_or(""));
    let parts = match words.get(4) {
        Some(k) => k.trim_start_matches('x').parse().unwrap_or(0),
        None => 1,
    };
    let Some(group) = curves.iter().find(|c| c.key == curve) else {
        return false;
    };
    let Some(profile) = Arithmetic::ALL
        .into_iter()
        .find(|a| format!("{a:?}") == words[2])
    else {
        return false;
    };
    let probe = Job {
        family: family.to_string(),
        curve: group,
        profile,
        parts: 1,
        what: jobs::What::Op(ShaderFn::FeAdd),
    };
    cli.families.iter().any(|f| f == family)
        && profiles.as_ref().is_none_or(|p| p(&probe))
        && (cli.parts.contains(&parts) || parts == 1)
        && match what.strip_prefix("op:") {
            Some(op) => !cli.stages_only && cli.ops.iter().any(|o| o == "all" || o == op),
            None => !cli.ops_only,
        }
}

/// The assembly file of `job` under `--asm DIR`.
fn asm_name(job: &Job) -> String {
    job.key().replace([' ', ':'], "_") + ".s"
}

/// RADV's ICD file from mesa-vulkan-drivers.
fn default_icd() -> PathBuf {
    let dir = Path::new("/usr/share/vulkan/icd.d");
    let found = std::fs::read_dir(dir).ok().and_then(|d| {
        d.flatten().map(|e| e.path()).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("radeon_icd"))
        })
    });
    found.unwrap_or_else(|| {
        fail("no radeon_icd*.json in /usr/share/vulkan/icd.d: apt-get install mesa-vulkan-drivers, or --icd FILE")
    })
}

/// One worker process in flight.
struct Running {
    index: usize,
    child: Child,
    started: Instant,
}

fn spawn(job: &Job, cli: &ReportCli, icd: &Path) -> Child {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("own path: {e}")));
    let mut cmd = Command::new(exe);
    cmd.arg("--worker").args(job.args());
    if let Some(dir) = &cli.asm {
        cmd.arg("--asm").arg(dir);
    }
    cmd.env("VK_ICD_FILENAMES", icd)
        // Every pipeline compiled afresh, and nothing left in the user's cache.
        .env("MESA_SHADER_CACHE_DISABLE", "true")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("starting a worker: {e}")))
}

/// The row a finished worker printed, or why there is none.
fn collect(job: &Job, mut child: Child) -> Row {
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
    match serde_json::from_str::<Row>(out.trim()) {
        Ok(row) => row,
        Err(_) => {
            let tail: String = err.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            Row::failed(job, format!("worker {status}: {tail}"))
        }
    }
}

/// Every job, `--jobs` at once, each stopped after `--timeout` seconds; rows in job order.
fn run_all(job_list: &[Job], cli: &ReportCli, icd: &Path) -> Vec<Row> {
    let width = match cli.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let limit = Duration::from_secs(cli.timeout);
    let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
    let mut running: Vec<Running> = Vec::new();
    let mut next = 0;
    while rows.len() < job_list.len() {
        while running.len() < width && next < job_list.len() {
            let child = spawn(&job_list[next], cli, icd);
            running.push(Running {
                index: next,
                child,
                started: Instant::now(),
            });
            next += 1;
        }
        let mut i = 0;
        while i < running.len() {
            let r = &mut running[i];
            let job = &job_list[r.index];
            let done = matches!(r.child.try_wait(), Ok(Some(_)));
            if !done && r.started.elapsed() < limit {
                i += 1;
                continue;
            }
            let r = running.swap_remove(i);
            let row = if done {
                collect(job, r.child)
            } else {
                let mut child = r.child;
                let _ = child.kill();
                let _ = child.wait();
                Row::failed(job, format!("did not compile in {} s", cli.timeout))
            };
            eprintln!(
                "[{}/{}] {}: {}",
                rows.len() + 1,
                job_list.len(),
                row.key,
                match &row.error {
                    Some(e) => e.clone(),
                    None => format!(
                        "{} VGPRs, {} spilled, {} instructions, {:.1} s",
                        row.vgprs, row.spilled_vgprs, row.instructions, row.compile_s
                    ),
                }
            );
            rows.insert(r.index, row);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    rows.into_values().collect()
}

/// The report as one markdown table: a row a pipeline, the families side by side.
fn print_table(rows: &[Row], families: &[String]) {
    let mut head = String::from("| curve group | profile | pipeline |");
    let mut rule = String::from("|---|---|---|");
    for f in families {
        head += &format!(" {f}: VGPRs | spilled | instructions | waves | scratch B | mul32 |");
        rule += "---|---|---|---|---|---|";
    }
    head += " compile s |";
    rule += "---|";
    println!("{head}\n{rule}");
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        if !order.contains(&r.row.as_str()) {
            order.push(&r.row);
        }
    }
    for key in order {
        let words: Vec<&str> = key.splitn(3, ' ').collect();
        let mut line = format!("| {} | {} | {} |", words[0], words[1], words[2]);
        let mut compile = 0.0f64;
        for f in families {
            match rows.iter().find(|r| r.row == key && &r.family == f) {
                Some(Row { error: Some(e), .. }) => line += &format!(" {e} | | | | | |"),
                Some(r) => {
                    compile = compile.max(r.compile_s);
                    line += &format!(
                        " {} | {} | {} | {} | {} | {} |",
                        r.vgprs, r.spilled_vgprs, r.instructions, r.waves, r.scratch_bytes, r.mul32
                    );
                }
                None => line += " | | | | | |",
            }
        }
        println!("{line} {compile:.1} |");
    }
}
