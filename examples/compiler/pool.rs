//! The worker processes: a job each, `--jobs` at once, each stopped after `--timeout`
//! seconds, on the driver and GPU family the run names.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cli::ReportCli;
use super::fail;
use super::jobs::Job;
use super::worker::{self, Row};

/// The assembly file of `job` under `--asm DIR`.
pub fn asm_name(job: &Job) -> String {
    job.key().replace([' ', ':'], "_") + ".s"
}

/// RADV's ICD file from mesa-vulkan-drivers.
pub fn default_icd() -> PathBuf {
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

/// The `RADV_FORCE_FAMILY` name of `family` on the driver `icd`: the first of
/// [`worker::radv_names`] a probe process makes a device of.
pub fn radv_name(family: &str, icd: &Path) -> String {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("own path: {e}")));
    for name in worker::radv_names(family) {
        let out = Command::new(&exe)
            .arg("--probe")
            .env("VK_ICD_FILENAMES", icd)
            .env("RADV_FORCE_FAMILY", name)
            .output();
        if let Ok(o) = out {
            if o.status.success() {
                eprintln!(
                    "{family}: {name}, {}",
                    String::from_utf8_lossy(&o.stdout).trim()
                );
                return name.to_string();
            }
        }
    }
    fail(&format!(
        "no RADV_FORCE_FAMILY of {:?} gives a device with {}",
        worker::radv_names(family),
        icd.display()
    ))
}

/// One worker process in flight.
struct Running {
    index: usize,
    child: Child,
    started: Instant,
    log: PathBuf,
}

/// A worker for `job`; its stderr goes to `log` (a file: a pipe read only after the exit
/// would block a worker that writes more than the pipe holds), its row to stdout.
pub fn spawn(job: &Job, cli: &ReportCli, icd: &Path, radv: &str, log: &Path) -> Child {
    let exe = std::env::current_exe().unwrap_or_else(|e| fail(&format!("own path: {e}")));
    let log =
        std::fs::File::create(log).unwrap_or_else(|e| fail(&format!("{}: {e}", log.display())));
    let mut cmd = Command::new(exe);
    cmd.arg("--worker").args(job.args());
    if let Some(dir) = &cli.asm {
        cmd.arg("--asm").arg(dir);
    }
    cmd.env("VK_ICD_FILENAMES", icd)
        .env("RADV_FORCE_FAMILY", radv)
        // Every pipeline compiled afresh, and nothing left in the user's cache.
        .env("MESA_SHADER_CACHE_DISABLE", "true")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| fail(&format!("starting a worker: {e}")))
}

/// The row a finished worker printed, or why there is none (the tail of its `log`).
pub fn collect(job: &Job, child: &mut Child, log: &Path) -> Row {
    let mut out = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    let err = std::fs::read_to_string(log).unwrap_or_default();
    let _ = std::fs::remove_file(log);
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
pub fn run_all(
    job_list: &[Job],
    cli: &ReportCli,
    icd: &Path,
    radv: &BTreeMap<String, String>,
) -> Vec<Row> {
    let width = match cli.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let mut rows: BTreeMap<usize, Row> = BTreeMap::new();
    let mut running: Vec<Running> = Vec::new();
    let mut next = 0;
    while rows.len() < job_list.len() {
        while running.len() < width && next < job_list.len() {
            let job = &job_list[next];
            let log = log_path(next);
            let child = spawn(job, cli, icd, &radv[&job.family], &log);
            running.push(Running {
                index: next,
                child,
                started: Instant::now(),
                log,
            });
            next += 1;
        }
        let mut i = 0;
        while i < running.len() {
            let job = &job_list[running[i].index];
            match finished(&mut running[i], job, cli) {
                Some(row) => {
                    let r = running.swap_remove(i);
                    progress(rows.len() + 1, job_list.len(), &row);
                    rows.insert(r.index, row);
                }
                None => i += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    rows.into_values().collect()
}

/// Where job `index`'s worker writes its stderr.
fn log_path(index: usize) -> PathBuf {
    std::env::temp_dir().join(format!("gpu-msm-report-{}-{index}.log", std::process::id()))
}

/// The row of a worker that has ended or run past `--timeout` (then stopped), or None.
fn finished(r: &mut Running, job: &Job, cli: &ReportCli) -> Option<Row> {
    let done = matches!(r.child.try_wait(), Ok(Some(_)));
    if done {
        return Some(collect(job, &mut r.child, &r.log));
    }
    if r.started.elapsed() < Duration::from_secs(cli.timeout) {
        return None;
    }
    let _ = r.child.kill();
    let _ = r.child.wait();
    let _ = std::fs::remove_file(&r.log);
    Some(Row::failed(
        job,
        format!("did not compile in {} s", cli.timeout),
    ))
}

fn progress(done: usize, all: usize, row: &Row) {
    let what = match &row.error {
        Some(e) => e.clone(),
        None => format!(
            "{} VGPRs, {} spilled, {} instructions, {:.1} s",
            row.vgprs, row.spilled_vgprs, row.instructions, row.compile_s
        ),
    };
    eprintln!("[{done}/{all}] {}: {what}", row.key);
}
