"""The rest of MLX's ``utils.h`` as MSL: the part of what MLX puts before every custom
kernel (``mlx/backend/metal/kernels/utils.h``) that the translator does not expand itself
(``mlx_utils.py``: ``elem_to_loc`` on an input's ``x_shape``/``x_strides``, ``ceildiv``,
``Limits``).

Real headers lean on it: MLX's ``quantized.h`` pasted into a header names
``ConditionalType``; unary and copy code ``WorkPerThread`` and ``cast_to``; loops carry
``MLX_MTL_PRAGMA_UNROLL``. Each piece here is metalbench's own MSL with the meaning MLX
gives the name, translated like any header, and only when the kernel's text names it and
does not define it itself (code written for an MLX that lacked a name defines its own).

    >>> "ConditionalType" in prelude_for("using U = typename ConditionalType<B, int, uint>::type;", "")
    True
    >>> prelude_for("template <bool c, class A, class B> struct ConditionalType {};", "ConditionalType<1, int, int>")
    ''
"""
from __future__ import annotations

import re

# name -> (MSL text, the names it needs first). Semantics follow MLX's utils.h of 0.2x-0.32.
_PIECES: dict[str, tuple[str, tuple[str, ...]]] = {
    # elements per thread of MLX's elementwise kernels: 8 bytes' worth
    "WorkPerThread": ("""
template <typename U>
struct WorkPerThread {
  static constexpr constant int n = 8 / sizeof(U);
};
""", ()),
    # std::conditional, which Metal lacks
    "ConditionalType": ("""
template <bool Cond, typename A, typename B>
struct ConditionalType { using type = B; };
template <typename A, typename B>
struct ConditionalType<true, A, B> { using type = A; };
""", ()),
    # MLX's bool specialisations test the bits without the sign: the same answer as a cast
    "cast_to": ("""
template <typename To, typename From>
inline To cast_to(From v) { return static_cast<To>(v); }
""", ()),
    # a hint to unroll; the simulator and the printers decide that themselves
    "MLX_MTL_PRAGMA_UNROLL": ("""
#define MLX_MTL_PRAGMA_UNROLL
""", ()),
    # elem_to_loc on shapes and strides in constant buffers (an input MLX binds as constant,
    # a header function's parameters); on x_shape/x_strides themselves mlx_utils.py expands it
    "elem_to_loc": ("""
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(IdxT elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = 0;
  for (int d = ndim - 1; d >= 0 && elem > 0; --d) {
    loc += IdxT(elem % shape[d]) * IdxT(strides[d]);
    elem /= shape[d];
  }
  return loc;
}
template <typename IdxT = int64_t>
inline IdxT elem_to_loc(uint3 elem, constant const int* shape, constant const int64_t* strides, int ndim) {
  IdxT loc = IdxT(elem.x) * IdxT(strides[ndim - 1]) + IdxT(elem.y) * IdxT(strides[ndim - 2]);
  for (int d = ndim - 3; d >= 0; --d) {
    loc += IdxT(elem.z % shape[d]) * IdxT(strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
""", ()),
    # the locations of one element in two (three) arrays of the same shape and their own strides:
    # x and y index the last two dimensions, z the rest (MLX's broadcasting binary/ternary ops)
    "elem_to_loc_2_nd": ("""
template <typename IdxT = int64_t>
inline vec<IdxT, 2> elem_to_loc_2_nd(uint3 elem, constant const int* shape, constant const int64_t* a_strides,
                                     constant const int64_t* b_strides, int ndim) {
  vec<IdxT, 2> loc = {IdxT(elem.x * IdxT(a_strides[ndim - 1]) + IdxT(elem.y) * IdxT(a_strides[ndim - 2])),
                      IdxT(elem.x * IdxT(b_strides[ndim - 1]) + elem.y * IdxT(b_strides[ndim - 2]))};
  for (int d = ndim - 3; d >= 0; --d) {
    uint at = elem.z % shape[d];
    loc.x += at * IdxT(a_strides[d]);
    loc.y += at * IdxT(b_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
""", ()),
    "elem_to_loc_3_nd": ("""
template <typename IdxT = int64_t>
inline vec<IdxT, 3> elem_to_loc_3_nd(uint3 elem, constant const int* shape, constant const int64_t* a_strides,
                                     constant const int64_t* b_strides, constant const int64_t* c_strides,
                                     int ndim) {
  vec<IdxT, 3> loc = {IdxT(elem.x * IdxT(a_strides[ndim - 1])) + IdxT(elem.y * IdxT(a_strides[ndim - 2])),
                      IdxT(elem.x * IdxT(b_strides[ndim - 1])) + IdxT(elem.y * IdxT(b_strides[ndim - 2])),
                      IdxT(elem.x * IdxT(c_strides[ndim - 1])) + IdxT(elem.y * IdxT(c_strides[ndim - 2]))};
  for (int d = ndim - 3; d >= 0; --d) {
    uint at = elem.z % shape[d];
    loc.x += at * IdxT(a_strides[d]);
    loc.y += at * IdxT(b_strides[d]);
    loc.z += at * IdxT(c_strides[d]);
    elem.z /= shape[d];
  }
  return loc;
}
""", ()),
    # walks the locations of consecutive elements of a strided array, one dimension per level
    # (MLX's reductions): next() steps one element (or n), location() is the current offset
    "LoopedElemToLoc": ("""
template <int DIM, typename OffsetT = size_t, bool General = true>
struct LoopedElemToLoc {
  int dim;
  LoopedElemToLoc<DIM - 1, OffsetT, General> outer;
  OffsetT offset{0};
  int index{0};
  LoopedElemToLoc(int d) thread : dim(d), outer(d - 1) {}
  void next(const constant int* shape, const constant int64_t* strides) thread {
    if (dim == 0) {
      return;
    }
    index++;
    offset += OffsetT(strides[dim - 1]);
    if (index >= shape[dim - 1]) {
      index = 0;
      outer.next(shape, strides);
      offset = outer.offset;
    }
  }
  void next(int n, const constant int* shape, const constant int64_t* strides) thread {
    // steps past the end of this dimension carry into the outer one; what is left after the
    // carry steps again (a loop here where MLX's own version calls itself)
    while (dim != 0) {
      index += n;
      offset += n * OffsetT(strides[dim - 1]);
      if (index < shape[dim - 1]) {
        return;
      }
      int over = index - shape[dim - 1];
      if (over >= shape[dim - 1]) {
        outer.next(1 + over / shape[dim - 1], shape, strides);
        over = over % shape[dim - 1];
      } else {
        outer.next(shape, strides);
      }
      index = 0;
      offset = outer.offset;
      if (over <= 0) {
        return;
      }
      n = over;
    }
  }
  OffsetT location() thread { return offset; }
};
template <typename OffsetT>
struct LoopedElemToLoc<1, OffsetT, true> {
  int dim;
  OffsetT offset{0};
  uint index{0};
  LoopedElemToLoc(int d) thread : dim(d) {}
  void next(const constant int* shape, const constant int64_t* strides) thread {
    index++;
    offset = dim > 1 ? elem_to_loc<OffsetT>(index, shape, strides, dim) : offset + OffsetT(strides[0]);
  }
  void next(int n, const constant int* shape, const constant int64_t* strides) thread {
    index += n;
    offset = dim > 1 ? elem_to_loc<OffsetT>(index, shape, strides, dim) : index * OffsetT(strides[0]);
  }
  OffsetT location() thread { return offset; }
};
template <typename OffsetT>
struct LoopedElemToLoc<1, OffsetT, false> {
  OffsetT offset{0};
  LoopedElemToLoc(int) thread {}
  void next(const constant int*, const constant int64_t* strides) thread { offset += OffsetT(strides[0]); }
  void next(int n, const constant int*, const constant int64_t* strides) thread {
    offset += n * OffsetT(strides[0]);
  }
  OffsetT location() thread { return offset; }
};
""", ("elem_to_loc",)),
    # gather_mm/gather_qmm's tile scheduler: which group (expert) and rows the tile-th tile of
    # BM rows covers, given each group's first row in offsets (the last ends at M); false
    # past the last tile. The SIMD-group scans 32 groups at a time.
    "schedule_row_tile": ("""
template <int BM>
inline bool schedule_row_tile(const device int32_t* offsets, const int num_groups, const int M,
                              const int tile, const uint simd_lane_id, thread int& row,
                              thread int& group, thread short& rows) {
  int tiles_done = 0;
  for (int first = 0; first < num_groups; first += 32) {
    const int g = first + int(simd_lane_id);
    const int begin = g < num_groups ? offsets[g] : M;
    const int stop = g < num_groups ? (g + 1 < num_groups ? offsets[g + 1] : M) : M;
    const int my_tiles = (stop - begin + BM - 1) / BM;
    const int through = tiles_done + simd_prefix_inclusive_sum(my_tiles);
    const ushort owner = ushort(simd_sum(int(through <= tile)));
    if (owner < 32) {
      group = first + owner;
      row = simd_shuffle(begin, owner) + (tile - simd_shuffle(through - my_tiles, owner)) * BM;
      rows = short(min(BM, simd_shuffle(stop, owner) - row));
      return true;
    }
    tiles_done = simd_shuffle(through, 31);
  }
  return false;
}
""", ()),
}


def _defines(text: str, name: str) -> bool:
    """Whether ``text`` defines ``name`` itself: a macro, a class or alias, or a function
    (a return type, then the name and its parameters, then a body)."""
    n = re.escape(name)
    return bool(re.search(rf"#\s*define\s+{n}\b|\b(?:struct|class|union|using|typedef)\s+{n}\b"
                          rf"|\b[\w:<>,]+[\s*&]+{n}\s*(?:<[^;{{()]*>\s*)?\([^;{{]*\)\s*(?:const\s*)?\{{",
                          text))


def prelude_for(header: str, body: str) -> str:
    """The pieces of MLX's utils.h that ``header`` and ``body`` name and do not define,
    in dependency order ('' when none)."""
    text = header + "\n" + body
    want: list[str] = []

    def add(name):
        if name in want:
            return
        for dep in _PIECES[name][1]:
            add(dep)
        want.append(name)

    for name in _PIECES:
        if re.search(rf"\b{re.escape(name)}\b", text) and not _defines(header, name):
            add(name)
    return "".join(_PIECES[n][0] for n in want)


def piece_names() -> list[str]:
    """The names this prelude can supply.

    >>> "WorkPerThread" in piece_names()
    True
    """
    return list(_PIECES)
