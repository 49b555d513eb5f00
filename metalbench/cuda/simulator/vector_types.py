"""``numba.cuda.simulator.vector_types``: the vector type table (``vector_types[name]``:
``name``, ``base_type``, ``num_elements``, ``user_facing_object``, ``aliases``).

>>> vector_types["float32x4"].user_facing_object.aliases
['float4']
"""
from ...numba_compat.vectors import vector_types  # noqa: F401
