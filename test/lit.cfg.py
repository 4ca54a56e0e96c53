# -*- Python -*-
# lit configuration for the gacc regression tests.

import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GACC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gacc_obj_root, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py",
                   "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%mlir_lib_dir", config.mlir_lib_dir))
config.substitutions.append(("%gacc_src_root", config.gacc_src_root))
config.substitutions.append(("%gacc_obj_root", config.gacc_obj_root))
config.substitutions.append(("%gacc_bin_dir", config.gacc_tools_dir))
config.substitutions.append(("%examples", os.path.join(config.gacc_src_root,
                                                       "examples")))
config.substitutions.append(("%cmake_generator", config.cmake_generator))
config.substitutions.append(("%cmake", config.cmake_command))
config.substitutions.append(("%cxx", config.cxx_compiler))
config.substitutions.append(("%cc", config.c_compiler))
config.substitutions.append(("%mlir_include_dir", config.mlir_include_dir))
config.substitutions.append(("%mlir_dir", config.mlir_dir))

# Upstream-only lowering of a (micro-batch-inlined) step to the LLVM dialect,
# and mlir-runner on its @main, for numerical tests.
config.substitutions.append(("%upstream_lower_to_llvm", " ".join([
    "--convert-elementwise-to-linalg",
    "--one-shot-bufferize=\"bufferize-function-boundaries"
    " function-boundary-type-conversion=identity-layout-map\"",
    "--convert-linalg-to-loops", "--expand-strided-metadata", "--lower-affine",
    "--arith-expand", "--convert-scf-to-cf", "--convert-math-to-llvm",
    "--convert-math-to-libm",
    "--convert-arith-to-llvm", "--finalize-memref-to-llvm",
    "--convert-func-to-llvm", "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts"])))
config.substitutions.append(("%mlir_run_main", " ".join([
    "mlir-runner -e main -entry-point-result=void",
    "-shared-libs=%s/libmlir_runner_utils.so,%s/libmlir_c_runner_utils.so" % (
        config.mlir_lib_dir, config.mlir_lib_dir)])))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
# "auto"'s GEMM decisions are not read from or written to a cache file that
# outlives the test (runtime/README.md): each test times its shapes afresh;
# test/Execution/gemm-cache.test sets a file of its own.
config.environment["GACCRT_GEMM_CACHE"] = "off"
# No step cache (gacc-run): every test compiles; test/Execution/step-cache.test
# turns it on in a directory of its own.
config.environment["GACC_STEP_CACHE"] = "off"
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.gacc_tools_dir, append_path=True)

tool_dirs = [config.gacc_tools_dir, config.llvm_tools_dir]
config.substitutions.append(
    ("%mpirun", "mpirun --allow-run-as-root --oversubscribe"))

# CUDA checks run where the toolkit is (CUDA_HOME or /usr/local/cuda).
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
ptxas = os.path.join(cuda_home, "bin", "ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    lit_config.note("ptxas not found under %s: CUDA checks are skipped" % cuda_home)

if config.gacc_have_cuda_runtime:
    config.available_features.add("gaccrt-cuda")
# A usable NVIDIA device (the driver's device node) for the GPU-only checks.
if os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-device")
if config.gacc_build_check:
    config.available_features.add("gacc-check")
# gaccrt built with oneDNN's header and libdnnl.so.2 present to load.
if config.gacc_have_onednn and any(
        os.path.exists(os.path.join(d, "libdnnl.so.2"))
        for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                  "/usr/local/lib", "/usr/lib")):
    config.available_features.add("onednn")

tools = ["gacc-opt", "gacc-run", "gacc-check", "gacc-compile", "gacc-run-aot", "gacc-bench-step-ratio", "mlir-opt", "mlir-runner",
         "mlir-translate", "not",
         ToolSubst("%PYTHON", sys.executable, unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# gacc.torch (the PyTorch importer) runs on the interpreter that has torch:
# Debian's python3-torch is importable from /usr/bin/python3 only.
gacc_python = os.environ.get("GACC_PYTHON", "/usr/bin/python3")
config.substitutions.append(("%torch_python", "env PYTHONPATH=%s %s" % (
    os.path.join(config.gacc_obj_root, "python"), gacc_python)))
# The package without torch (gacc.io), on lit's interpreter.
config.substitutions.append(("%gacc_python", "env PYTHONPATH=%s %s" % (
    os.path.join(config.gacc_obj_root, "python"), sys.executable)))
import subprocess
import tempfile
# A full disk for real (test/Robustness): root may mount a small tmpfs.
if hasattr(os, "geteuid") and os.geteuid() == 0:
    probe = tempfile.mkdtemp(prefix="gacc-lit-tmpfs-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs",
                       probe], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode == 0:
        subprocess.run(["umount", probe])
        config.available_features.add("tmpfs-mount")
    os.rmdir(probe)
if subprocess.run([gacc_python, "-c", "import torch"],
                  stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch")
else:
    lit_config.note("%s cannot import torch: the gacc.torch tests are "
                    "skipped" % gacc_python)
# The host CPU's vector extensions (LLVM optimizes a JIT-compiled step for
# them): "avx2" and "avx512f" from /proc/cpuinfo's flags.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                      if line.startswith("flags")), [])
except OSError:
    flags = []
for flag in ("avx2", "avx512f"):
    if flag in flags:
        config.available_features.add(flag)
