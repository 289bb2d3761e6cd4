//! The CUDA twins of the hot code through NVIDIA's compilers without a GPU: each field's
//! product (`mul_variants::cuda_twin`: the engine's `fp_mul` steps as CUDA) and each G1's
//! mixed addition (the formulas' steps in the engine's order, `schedule.rs`, over that
//! product and limb-wise additions, as the WGSL has them). `.ci/cuda_twin.py` compiles each
//! with NVRTC and ptxas for sm_90 (H100, H200) and reports registers, spills and SASS
//! instructions: what an NVIDIA GPU's compiler makes of the code ACO's figures stand in
//! for.

use std::path::Path;
use std::process::Command;

use gpu_msm::internals::gpu::shader::mul29::{Field29, LIMB_BITS, LIMB_MASK};
use gpu_msm::internals::gpu::shader::mul_variants::cuda_twin;
use gpu_msm::internals::gpu::shader::program::{Formulas, Op, Step};
use gpu_msm::internals::gpu::shader::schedule::schedule;
use gpu_msm::internals::gpu::shader::{edwards, program};
use gpu_msm::GpuCurve;

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
    let mut write = |name: String, text: String| -> Result<(), String> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(path);
        Ok(())
    };
    for (name, f) in fields() {
        write(format!("{name}_fp_mul.cu"), cuda_twin(&f))?;
    }
    for (name, text) in mixed_additions() {
        write(name, text)?;
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
    // SASS instructions: the kernel's code size over 16 bytes (loads, the code, stores;
    // fp_mul's kernel is a loop of one product).
    println!("\n| CUDA twin | arch | registers | spill stores B | spill loads B | SASS instructions | ptxas |");
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
            v["sass_instructions"]
                .as_object()
                .and_then(|m| m.values().next().cloned())
                .unwrap_or_default(),
            v["ptxas"].as_str().unwrap_or("")
        );
    }
    Ok(())
}

/// The mixed additions of the G1s as CUDA: BLS12-377's on both models, BLS12-381's and
/// BN254's in short Weierstrass, each in a file of its own (name, text).
fn mixed_additions() -> Vec<(String, String)> {
    let g1 = [
        ("bls12-377", <ark_bls12_377::g1::Config as GpuCurve>::spec()),
        ("bls12-381", <ark_bls12_381::g1::Config as GpuCurve>::spec()),
        ("bn254", <ark_bn254::g1::Config as GpuCurve>::spec()),
    ];
    let mut out = Vec::new();
    for (name, spec) in g1 {
        let f = Field29::of_curve(spec);
        let one = f.limbs_of(spec.one(LIMB_BITS));
        let madd = Formulas::of(spec).add_mixed;
        // P in X1, Y1, Z1; Q's x and y in X2, Y2, its z the constant one (point_add_mixed).
        use program::reg::*;
        let inputs = [
            (X1, Input::P(0)),
            (Y1, Input::P(1)),
            (Z1, Input::P(2)),
            (X2, Input::Q(0)),
            (Y2, Input::Q(1)),
            (Z2, Input::Constant(one)),
        ];
        let regs = Formulas::of(spec).registers;
        let text = formula_cuda(&f, &madd, regs, &inputs, &[X3, Y3, Z3]);
        out.push((format!("{name}_point_add_mixed_weierstrass.cu"), text));
        if let Some((_, k)) = spec.edwards_constants().iter().find(|(n, _)| *n == "TE_K") {
            use edwards::reg as e;
            // P in X1..T1; Q's (y - x, y + x, k t) in X2, Y2, Z2 (point_add_mixed); k in K.
            let inputs = [
                (e::X1, Input::P(0)),
                (e::Y1, Input::P(1)),
                (e::Z1, Input::P(2)),
                (e::T1, Input::P(3)),
                (e::X2, Input::Q(0)),
                (e::Y2, Input::Q(1)),
                (e::Z2, Input::Q(2)),
                (e::K, Input::Constant(f.limbs_of(k))),
            ];
            let outputs = [e::X3, e::Y3, e::Z3, e::T3];
            let text = formula_cuda(&f, edwards::MADD, e::COUNT, &inputs, &outputs);
            out.push((format!("{name}_point_add_mixed_edwards.cu"), text));
        }
    }
    out
}

/// `f`'s product (the engine's, `cuda_twin`'s), and its addition and subtraction limb by
/// limb as `shaders/field_limbs.wgsl` has them (a carry or borrow chain, then p once).
fn field_cuda(f: &Field29) -> String {
    let n = f.limb_count();
    let twin = cuda_twin(f);
    let mul = &twin[..twin.find("extern \"C\"").expect("the twin's kernel")];
    let p: Vec<String> = f.p_limbs().iter().map(|x| format!("{x}u")).collect();
    format!(
        "{mul}\n__device__ const uint32_t P_LIMBS[{n}] = {{{}}};\n\n\
         __device__ __forceinline__ void fp_add(uint32_t r[{n}], const uint32_t a[{n}], const uint32_t b[{n}]) {{\n\
         \x20   uint32_t s[{n}], t[{n}], carry = 0, borrow = 0;\n\
         \x20   for (int i = 0; i < {n}; i++) {{ uint32_t v = a[i] + b[i] + carry; s[i] = v & {LIMB_MASK}u; carry = v >> {LIMB_BITS}; }}\n\
         \x20   s[{last}] |= carry << {LIMB_BITS};\n\
         \x20   for (int i = 0; i < {n}; i++) {{ uint32_t d = s[i] - P_LIMBS[i] - borrow; t[i] = d & {LIMB_MASK}u; borrow = d >> 31; }}\n\
         \x20   for (int i = 0; i < {n}; i++) r[i] = borrow ? s[i] : t[i];\n}}\n\n\
         __device__ __forceinline__ void fp_sub(uint32_t r[{n}], const uint32_t a[{n}], const uint32_t b[{n}]) {{\n\
         \x20   uint32_t d[{n}], t[{n}], borrow = 0, carry = 0;\n\
         \x20   for (int i = 0; i < {n}; i++) {{ uint32_t v = a[i] - b[i] - borrow; d[i] = v & {LIMB_MASK}u; borrow = v >> 31; }}\n\
         \x20   for (int i = 0; i < {n}; i++) {{ uint32_t v = d[i] + P_LIMBS[i] + carry; t[i] = v & {LIMB_MASK}u; carry = v >> {LIMB_BITS}; }}\n\
         \x20   for (int i = 0; i < {n}; i++) r[i] = borrow ? t[i] : d[i];\n}}\n\n",
        p.join(", "),
        last = n - 1,
    )
}

/// Where a formula's input register comes from.
enum Input {
    /// Coordinate k of the point P (read from the input buffer).
    P(usize),
    /// Coordinate k of the base Q (read from the input buffer).
    Q(usize),
    /// A constant (literal limbs).
    Constant(Vec<u32>),
}

/// The kernel `formula`: each thread reads P and Q (4 + 3 coordinates of L limbs), runs the
/// steps in [`schedule`]'s order as the WGSL does, and writes the outputs.
fn formula_cuda(
    f: &Field29,
    steps: &[Step],
    registers: usize,
    inputs: &[(u8, Input)],
    outputs: &[u8],
) -> String {
    let n = f.limb_count();
    let mut s = field_cuda(f);
    s += "extern \"C\" __global__ void formula(const uint32_t *in, uint32_t *out, uint32_t threads) {\n\
          \x20   uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;\n\
          \x20   if (t >= threads) return;\n";
    let width = 7 * n;
    for (r, input) in inputs {
        match input {
            Input::P(k) | Input::Q(k) => {
                let at = match input {
                    Input::P(_) => k * n,
                    _ => (4 + k) * n,
                };
                s += &format!(
                    "    uint32_t r{r}[{n}]; for (int i = 0; i < {n}; i++) r{r}[i] = in[t * {width} + {at} + i];\n"
                );
            }
            Input::Constant(limbs) => {
                let l: Vec<String> = limbs.iter().map(|x| format!("{x}u")).collect();
                s += &format!("    const uint32_t r{r}[{n}] = {{{}}};\n", l.join(", "));
            }
        }
    }
    let regs: Vec<u8> = inputs.iter().map(|(r, _)| *r).collect();
    let order = schedule(steps, registers, &regs, outputs);
    for st in &order.steps {
        let f = match st.op {
            Op::Mul => "fp_mul",
            Op::Add => "fp_add",
            Op::Sub => "fp_sub",
            Op::MulB3 => unreachable!("the tables are written out"),
        };
        s += &format!(
            "    uint32_t r{}[{n}]; {f}(r{}, r{}, r{});\n",
            st.dst, st.dst, st.a, st.b
        );
    }
    for (k, r) in order.outputs.iter().enumerate() {
        s += &format!(
            "    for (int i = 0; i < {n}; i++) out[t * {} + {} + i] = r{r}[i];\n",
            outputs.len() * n,
            k * n
        );
    }
    s + "}\n"
}
