# Sourced by the device bundle's scripts: puts the bundle's libraries
# (libgaccrt, libgaccrt_cuda, OpenBLAS, OpenMPI) first on the library path,
# then the CUDA libraries (cuBLAS, NCCL, cudart) from the CUDA install
# ($CUDA_HOME, /usr/local/cuda) and from the PyTorch wheel's nvidia/* and
# torch/lib folders, then the driver's folders. Sets GACC_BUNDLE.
GACC_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GACC_BUNDLE
_gacc_dirs=$GACC_BUNDLE/lib
for _d in "${CUDA_HOME:-/usr/local/cuda}/lib64" "${CUDA_HOME:-/usr/local/cuda}/lib" \
          /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$_d" ] && _gacc_dirs=$_gacc_dirs:$_d
done
_gacc_wheel=$(python3 - 2> /dev/null <<'PY'
import glob, os
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
try:
    import torch
    roots.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
dirs = []
for root in roots:
    for pattern in ("libcublas.so.*", "libcublasLt.so.*", "libnccl.so.*", "libcudart.so.*"):
        for f in glob.glob(os.path.join(root, "**", pattern), recursive=True):
            d = os.path.dirname(f)
            if d not in dirs:
                dirs.append(d)
print(":".join(dirs))
PY
)
[ -n "$_gacc_wheel" ] && _gacc_dirs=$_gacc_dirs:$_gacc_wheel
for _d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
  [ -d "$_d" ] && _gacc_dirs=$_gacc_dirs:$_d
done
export LD_LIBRARY_PATH=$_gacc_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset _d _gacc_dirs _gacc_wheel
