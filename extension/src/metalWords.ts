// Generated from the builtin registry (metalbench/builtins/) by `python -m metalbench.builtins`.
// Do not edit: tests/test_registry_derived.py checks that this file is current.

/** Metal standard-library functions, enums and namespaces (builtins). */
export const METAL_BUILTINS =
  'exp exp2 exp10 log log2 log10 sqrt rsqrt pow powr log1p expm1 cbrt ldexp sin cos tan ' +
  'asin acos atan atan2 sinh cosh tanh asinh acosh atanh sinpi cospi tanpi floor ceil trunc ' +
  'round rint fract fmod divide copysign hypot fdim step fma mix smoothstep saturate fabs ' +
  'fmin fmax fmin3 fmax3 erf erfc lgamma tgamma isnan isinf isfinite isunordered signbit ' +
  'dot length distance length_squared distance_squared normalize cross abs min max clamp ' +
  'sign max3 min3 median3 popcount clz ctz reverse_bits mulhi absdiff addsat subsat mul24 ' +
  'mad24 madhi madsat hadd rhadd rotate extract_bits insert_bits simd_sum simd_product ' +
  'simd_max simd_min simd_and simd_or simd_xor simd_prefix_inclusive_sum ' +
  'simd_prefix_exclusive_sum simd_prefix_inclusive_product simd_prefix_exclusive_product ' +
  'simd_shuffle simd_broadcast simd_shuffle_down simd_shuffle_up simd_shuffle_xor ' +
  'simd_shuffle_rotate_down simd_shuffle_rotate_up simd_broadcast_first simd_all simd_any ' +
  'simd_ballot simd_is_first quad_sum quad_product quad_max quad_min quad_and quad_or ' +
  'quad_xor quad_prefix_inclusive_sum quad_prefix_exclusive_sum ' +
  'quad_prefix_inclusive_product quad_prefix_exclusive_product quad_shuffle quad_broadcast ' +
  'quad_shuffle_xor quad_shuffle_up quad_shuffle_down quad_shuffle_rotate_up ' +
  'quad_shuffle_rotate_down make_filled_simdgroup_matrix simdgroup_load simdgroup_store ' +
  'simdgroup_multiply_accumulate simdgroup_multiply atomic_add atomic_fetch_add_explicit ' +
  'atomic_sub atomic_fetch_sub_explicit atomic_min atomic_fetch_min_explicit ' +
  'atomic_min_explicit atomic_max atomic_fetch_max_explicit atomic_max_explicit atomic_and ' +
  'atomic_fetch_and_explicit atomic_or atomic_fetch_or_explicit atomic_xor ' +
  'atomic_fetch_xor_explicit atomic_exchange atomic_exchange_explicit ' +
  'atomic_compare_exchange atomic_compare_exchange_weak_explicit ' +
  'atomic_compare_exchange_strong_explicit atomic_load atomic_load_explicit atomic_store ' +
  'atomic_store_explicit threadgroup_barrier simdgroup_barrier atomic_thread_fence ' +
  'threadgroup_array local_array select static_range mem_flags mem_none mem_device ' +
  'mem_threadgroup mem_texture mem_threadgroup_imageblock mem_object_data memory_order ' +
  'memory_order_relaxed memory_order_seq_cst memory_order_acquire memory_order_release ' +
  'memory_order_acq_rel thread_scope thread_scope_device thread_scope_threadgroup ' +
  'thread_scope_simdgroup thread_scope_thread memory_scope simd_shuffle_and_fill_up ' +
  'simd_shuffle_and_fill_down simd_active_threads_mask simd_is_helper_thread ' +
  'simdgroup_matrix simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8 ' +
  'thread_elements frexp ilogb modf nextafter sincos fmedian3 all any as_type metal fast ' +
  'precise std';

/** Metal thread attributes ([[thread_position_in_grid]] and friends). */
export const METAL_THREAD_ATTRIBUTES =
  'dispatch_quadgroups_per_threadgroup dispatch_simdgroups_per_threadgroup ' +
  'dispatch_threads_per_threadgroup grid_origin grid_size quadgroup_index_in_threadgroup ' +
  'quadgroups_per_threadgroup simdgroup_index_in_threadgroup simdgroups_per_threadgroup ' +
  'thread_execution_width thread_index_in_quadgroup thread_index_in_simdgroup ' +
  'thread_index_in_threadgroup thread_position_in_grid thread_position_in_threadgroup ' +
  'threadgroup_position_in_grid threadgroups_per_grid threads_per_grid ' +
  'threads_per_simdgroup threads_per_threadgroup';

/** Constants highlighted as atoms. */
export const METAL_ATOMS =
  'true false NULL nullptr HUGE_VALF M_PI_H INFINITY NAN MAXFLOAT FLT_MAX FLT_MIN ' +
  'FLT_EPSILON HALF_MAX M_PI_F M_PI_2_F M_PI_4_F M_1_PI_F M_2_PI_F M_2_SQRTPI_F M_E_F ' +
  'M_LOG2E_F M_LOG10E_F M_LN2_F M_LN10_F M_SQRT2_F M_SQRT1_2_F';
