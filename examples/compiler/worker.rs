//! One job in a process of its own (so that the parent can stop a compile that runs past
//! its limit): the module's SPIR-V, the pipeline built by the driver, and what its compiler
//! reported, as one [`Row`].

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::jobs::Job;
use super::spirv::entry_spirv;
use super::vulkan::{Compiler, Executable};

/// What the driver's compiler made of one pipeline (a row of the report, one family).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Row {
    /// [`Job::key`].
    pub key: String,
    pub family: String,
    /// The row without its family ([`Job::row_key`]).
    pub row: String,
    /// The device and driver as the driver names them.
    pub device: String,
    pub driver: String,
    /// Vector registers a lane as the driver allocates them (at most 256), and those it
    /// spilled to scratch memory; the same for scalar registers (RADV: "allocated per
    /// subgroup").
    pub vgprs: u32,
    pub spilled_vgprs: u32,
    pub sgprs: u32,
    pub spilled_sgprs: u32,
    /// Instructions in the executable (ACO's count), and its code size in bytes.
    pub instructions: u32,
    pub code_bytes: u32,
    /// Private (scratch) memory a subgroup asks for, and workgroup memory (LDS) a
    /// workgroup does, bytes: RADV's "Scratch size" and "LDS size".
    pub scratch_bytes: u32,
    pub lds_bytes: u32,
    /// RADV's "Subgroups per SIMD": the most subgroups (waves) in flight on a SIMD that the
    /// registers allow, capped by the driver. More waves hide more latency.
    pub waves: u32,
    /// 32-bit multiplies (v_mul_lo/hi_u32, v_mad_u64_u32) and 24-bit ones (v_mul_u32_u24,
    /// v_mul_hi_u32_u24, v_mad_u32_u24) in the assembly; scratch loads and stores.
    pub mul32: u32,
    pub mul24: u32,
    pub scratch_ops: u32,
    /// Seconds the driver took to build the pipeline.
    pub compile_s: f64,
    /// Why there are no figures: the compile failed or ran past its limit.
    pub error: Option<String>,
}

impl Row {
    /// A row for `job` with no figures, only `error`.
    pub fn failed(job: &Job, error: String) -> Row {
        Row {
            key: job.key(),
            family: job.family.clone(),
            row: job.row_key(),
            error: Some(error),
            ..Row::default()
        }
    }
}

/// Counts of the instruction classes [`Row`] reports, from the driver's assembly.
fn count_ops(assembly: &str, row: &mut Row) {
    for line in assembly.lines() {
        let Some(op) = line.split_whitespace().next() else {
            continue;
        };
        if op.starts_with("v_mul_lo_u32")
            || op.starts_with("v_mul_hi_u32") && !op.starts_with("v_mul_hi_u32_u24")
            || op.starts_with("v_mad_u64_u32")
        {
            row.mul32 += 1;
        } else if op.starts_with("v_mul_u32_u24")
            || op.starts_with("v_mul_hi_u32_u24")
            || op.starts_with("v_mad_u32_u24")
        {
            row.mul24 += 1;
        } else if op.starts_with("scratch_") {
            row.scratch_ops += 1;
        }
    }
}

/// The statistic `name`: an error where the driver gave none (a renamed statistic must not
/// read as zero spills).
fn stat(e: &Executable, name: &str) -> Result<u32, String> {
    (e.stat(name).map(|v| v as u32)).ok_or_else(|| format!("the driver gave no {name:?}"))
}

/// The `RADV_FORCE_FAMILY` names of a family, to try in turn: `rdna2` and `rdna3` name
/// navi21 and the first RDNA3 chip, which Mesa 22 calls gfx1100 and Mesa 25 navi31; any
/// other name is RADV's own. A name the driver does not know gives no device (Mesa 22) or
/// aborts the process (Mesa 25): the parent tries each in a process of its own
/// ([`probe`]).
pub fn radv_names(family: &str) -> Vec<&str> {
    match family {
        "rdna2" => vec!["navi21"],
        "rdna3" => vec!["gfx1100", "navi31"],
        other => vec![other],
    }
}

/// Whether the driver `VK_ICD_FILENAMES` names makes a null device for the
/// `RADV_FORCE_FAMILY` of this process: its name and driver.
pub fn probe() -> Result<String, String> {
    let c = Compiler::new()?;
    Ok(format!("{} ({})", c.device_name(), c.driver()))
}

/// Compiles `job` on the null device of this process's `RADV_FORCE_FAMILY` (the parent sets
/// it to its family's name: [`radv_names`]) and the driver `VK_ICD_FILENAMES` names,
/// writing its assembly to `assembly` where given.
pub fn run(job: &Job, assembly: Option<&std::path::Path>) -> Row {
    let out = (|| -> Result<Row, String> {
        let source = job.source()?;
        let (entry, constants) = (source.entry, &source.constants);
        let spirv = entry_spirv(&source.wgsl, entry, constants)?;
        let compiler = Compiler::new()?;
        let start = Instant::now();
        let executables = compiler.compile(&spirv, entry, true)?;
        let compile_s = start.elapsed().as_secs_f64();
        let [e] = executables.as_slice() else {
            return Err(format!("{} executables, not one", executables.len()));
        };
        let mut row = Row {
            key: job.key(),
            family: job.family.clone(),
            row: job.row_key(),
            device: compiler.device_name().to_string(),
            driver: compiler.driver().to_string(),
            vgprs: stat(e, "VGPRs")?,
            spilled_vgprs: stat(e, "Spilled VGPRs")?,
            sgprs: stat(e, "SGPRs")?,
            spilled_sgprs: stat(e, "Spilled SGPRs")?,
            instructions: stat(e, "Instructions")?,
            code_bytes: stat(e, "Code size")?,
            scratch_bytes: stat(e, "Scratch size")?,
            lds_bytes: stat(e, "LDS size")?,
            waves: stat(e, "Subgroups per SIMD")?,
            compile_s,
            ..Row::default()
        };
        let asm = (e.representations.iter()).find(|(n, _)| n == "Assembly");
        if let Some((_, text)) = asm {
            count_ops(text, &mut row);
            if let Some(path) = assembly {
                std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        Ok(row)
    })();
    out.unwrap_or_else(|e| Row::failed(job, e))
}
