"""Automatic derivatives of DSL kernels: generated adjoint (reverse-mode) kernels.

    gx, gy = k.vjp(x, y, cotangents=ct, grid=n, threadgroup=256)   # one entry per argument
    f = k.mlx_function(grid=n, threadgroup=256)                     # mx.custom_function
    mb.check_grad(k, x, y, grid=n)                                  # against finite differences

``generate(kernel_ir)`` builds the adjoint kernel's IR (:mod:`.reverse`); it runs on
every backend like any kernel.
"""
from __future__ import annotations

from .prepare import NotDifferentiableError
from .reverse import Adjoint, generate
from .vjp import adjoint_of, vjp, vjp_source

__all__ = ["NotDifferentiableError", "Adjoint", "generate", "adjoint_of", "vjp", "vjp_source"]
