import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def pytest_collection_modifyitems(config, items):
    """GPU tests (marker `gpu`) run only where MLX's CUDA backend sees a GPU."""
    from metalbench import launch
    if launch.cuda_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU with MLX's CUDA backend here (run on the device)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
