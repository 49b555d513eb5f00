"""``numba.cuda.vector_types``: the vector type table, as in the simulator's module.

>>> vector_types["int16x2"].num_elements, str(vector_types["int16x2"].base_type)
(2, 'int16')
"""
from ..numba_compat.vectors import vector_types  # noqa: F401
