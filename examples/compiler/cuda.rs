//! The CUDA twin of each field's product (`mul_variants::cuda_twin`: the engine's `fp_mul`
//! steps as CUDA) through NVIDIA's compilers without a GPU: `.ci/cuda_twin.py` compiles
//! each with NVRTC and ptxas for sm_90 (H100, H200) and reports registers, spills and SASS
//! instructions, the figures an NVIDIA GPU's compiler gives where ACO's are the proxy.

use std::path::Path;
use std::process::Command;

use gpu_msm::internals::gpu::shader::mul29::Field29;
use gpu_msm::internals::gpu::shader::mul_variants::cuda_twin;

/// The fields whose twins are compiled: the base fields of the three curves.
fn fields() -> [(&'static str, Field29); 3] {
    [
        ("bls12-377", Field29::of::<ark_bls12_377::Fq>()),
        ("bls12-381", Field29::of::<ark_bls12_381::Fq>()),
        ("bn254", Field29::of::<ark_bn254::Fq>()),
    ]
}

/// Writes the twins, compiles them with the tools in `tools` and prints one table row a
/// field; an error says why there is none.
pub fn report(tools: &Path) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("gpu-msm-cuda-twins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for (name, f) in fields() {
        let path = dir.join(format!("{name}_fp_mul.cu"));
        std::fs::write(&path, cuda_twin(&f)).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(path);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/cuda_twin.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(tools)
        .args(&files)
        .output()
        .map_err(|e| format!("python3 {}: {e}", script.display()))?;
    let _ = std::fs::remove_dir_all(&dir);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    println!("\n| CUDA twin (fp_mul, 29-bit limbs) | arch | registers | spill stores B | spill loads B | SASS instructions (bench kernel) | ptxas |");
    println!("|---|---|---|---|---|---|---|");
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{line}: {e}"))?;
        if let Some(e) = v.get("error") {
            println!("| {} | | {e} | | | | |", v["file"]);
            continue;
        }
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            v["file"].as_str().unwrap_or(""),
            v["arch"].as_str().unwrap_or(""),
            v["registers"],
            v["spill_store_bytes"],
            v["spill_load_bytes"],
            v["sass_instructions"]["bench"],
            v["ptxas"].as_str().unwrap_or("")
        );
    }
    Ok(())
}
