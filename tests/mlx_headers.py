"""MLX's own Metal kernel headers as the installed ``mlx`` package ships them, as a
``metal_kernel`` header: a file with its ``#include "mlx/..."`` lines replaced by the files'
text, the way model code pastes them."""
from pathlib import Path

import mlx.core as mx

INCLUDE = Path(mx.__file__).parent / "include"
KERNELS = "mlx/backend/metal/kernels"
# what MLX itself puts before a custom kernel's header (utils.h and what it includes): a
# pasted header relies on it rather than repeating it
PRELUDED = {"utils.h", "bf16.h", "bf16_math.h", "complex.h", "defines.h", "logging.h"}


def mlx_header(*files: str) -> str:
    """The text of MLX headers ``files`` (relative to ``KERNELS``) with their ``#include
    "mlx/..."`` lines replaced by the files' text (each once), leaving out utils.h and what
    it includes (outside steel/), without ``#pragma once``."""
    done: set = set()

    def expand(rel):
        if rel in done:
            return ""
        done.add(rel)
        out = []
        for line in (INCLUDE / rel).read_text().splitlines():
            s = line.strip()
            if s.startswith('#include "mlx/'):
                inc = s.split('"')[1]
                if not (inc.rsplit("/", 1)[-1] in PRELUDED and "/steel/" not in inc):
                    out.append(expand(inc))
            elif s != "#pragma once":
                out.append(line)
        return "\n".join(out)
    return "\n".join(expand(f"{KERNELS}/{f}") for f in files)
