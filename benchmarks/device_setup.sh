#!/usr/bin/env bash
# Source on the lent NVIDIA machine (no network) to get MLX's CUDA build from carried
# wheels: part one of the mlx-cuda-13 wheel was copied to /root/w by an earlier call
# (a call carries at most 64 MiB), part two and the small wheels come in .gpu2/.
# Usage: source benchmarks/device_setup.sh
set -e
cat /root/w/mcpart00 .gpu2/mcpart01 > /root/w/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site \
    /root/w/mlx_cuda_13-0.32.4-py3-none-manylinux_2_35_x86_64.whl .gpu2/*.whl
export PYTHONPATH=/tmp/site:$PWD
# MLX's CUDA library looks for the nvidia-* runtime libraries beside itself; the image
# has them in its own site-packages.
NVDIRS=$(python3 -c "import nvidia, glob, os; print(':'.join(d for p in nvidia.__path__ for d in glob.glob(os.path.join(p, '*', 'lib'))))")
export LD_LIBRARY_PATH=$NVDIRS:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
set +e
python3 -c "import mlx.core as mx; print('mlx', mx.__version__, 'cuda', mx.cuda.is_available()); print(mx.ones(3) * 2)"
