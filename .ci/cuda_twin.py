#!/usr/bin/env python3
"""The CUDA twins through NVIDIA's own compilers, without a GPU: each CUDA file given (the
engine's product and the G1s' mixed additions as `examples/compiler/cuda.rs` writes them;
`examples/field_rate.rs --cuda FILE` writes the product alone) compiled to PTX by NVRTC
and to SASS for sm_90 (H100, H200) by ptxas, from PyPI's nvidia-cuda-nvrtc-cu12 and
nvidia-cuda-nvcc-cu12 wheels, 12.9.86 (TOOLS holds them unpacked: .ci/compiler-report
fetches them).
Prints one JSON line a file: registers, spill bytes, SASS instructions (the kernel's .text
size over 16 bytes an instruction on sm_70 and later, its padding at the end included), ptxas'
own lines.

usage: cuda_twin.py TOOLS FILE.cu...
"""
import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

ARCH = "sm_90"


def nvrtc_ptx(lib, source, name):
    prog = ctypes.c_void_p()
    # NVRTC has no system headers: the fixed-width types the twins use, declared here.
    source = source.replace("#include <stdint.h>", "typedef unsigned int uint32_t;\n"
                            "typedef unsigned long long uint64_t;")
    check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None))
    opts = [b"--gpu-architecture=compute_90", b"-std=c++17"]
    status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    if status != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise RuntimeError("nvrtc: " + log.value.decode(errors="replace"))
    size = ctypes.c_size_t()
    check(lib, lib.nvrtcGetPTXSize(prog, ctypes.byref(size)))
    ptx = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetPTX(prog, ptx))
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return ptx.value.decode()


def check(lib, status):
    if status != 0:
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        raise RuntimeError("nvrtc: " + lib.nvrtcGetErrorString(status).decode())


def text_sizes(cubin):
    """Sizes of the ELF's .text.* sections (one a kernel), by name."""
    with open(cubin, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = sections[shstrndx][4]
    out = {}
    for s in sections:
        name = data[names_off + s[0]:data.index(b"\0", names_off + s[0])].decode()
        if name.startswith(".text."):
            out[name[len(".text."):]] = s[5]
    return out


def main():
    tools, files = sys.argv[1], sys.argv[2:]
    lib = ctypes.CDLL(os.path.join(tools, "nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
    ptxas = os.path.join(tools, "nvcc/nvidia/cuda_nvcc/bin/ptxas")
    lines = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.splitlines()
    version = next((l.strip() for l in lines if "release" in l), lines[-1].strip() if lines else "")
    for path in files:
        with open(path) as f:
            source = f.read()
        row = {"file": os.path.basename(path), "arch": ARCH, "ptxas": version}
        try:
            ptx = nvrtc_ptx(lib, source, os.path.basename(path))
            with tempfile.TemporaryDirectory() as d:
                ptx_path, cubin = os.path.join(d, "twin.ptx"), os.path.join(d, "twin.cubin")
                with open(ptx_path, "w") as f:
                    f.write(ptx)
                run = subprocess.run([ptxas, "-arch=" + ARCH, "-v", ptx_path, "-o", cubin],
                                     capture_output=True, text=True, check=True)
                info = [l.split(":", 1)[-1].strip() for l in run.stderr.splitlines() if "ptxas info" in l]
                regs = re.search(r"Used (\d+) registers", run.stderr)
                spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", run.stderr)
                row.update({
                    "registers": int(regs.group(1)) if regs else None,
                    "spill_store_bytes": int(spills.group(1)) if spills else None,
                    "spill_load_bytes": int(spills.group(2)) if spills else None,
                    "sass_instructions": {k: v // 16 for k, v in text_sizes(cubin).items()},
                    "ptxas_info": info,
                })
        except Exception as e:  # one failed file is reported, the others still run
            row["error"] = str(e)
        print(json.dumps(row))


if __name__ == "__main__":
    main()
