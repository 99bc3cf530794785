// Host-side pieces of cat and split shared by the CPU and CUDA launchers: torch's argument checks (with
// messages that name the offending tensor's position), output allocation, and the per-piece copy table of
// cat_split.h. Nothing here touches tensor data except the copies that bring an input into a layout the
// kernels copy from with plain row runs (see cat_prepare / prepare_split).
#pragma once
#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>

#include "tensorops/cat_split.h"
#include "tensorops/checks.h"

namespace tensorops {
namespace cat_split_host {

// ---- layout ------------------------------------------------------------------------------------------------
// Dims of an `ndim`-d tensor in `mf` from the outermost in memory to the innermost.
inline std::vector<int64_t> memory_order(int64_t ndim, at::MemoryFormat mf) {
  std::vector<int64_t> perm(ndim);
  std::iota(perm.begin(), perm.end(), 0);
  if (mf == at::MemoryFormat::ChannelsLast && ndim == 4) perm = {0, 2, 3, 1};
  if (mf == at::MemoryFormat::ChannelsLast3d && ndim == 5) perm = {0, 2, 3, 4, 1};
  return perm;
}

// Seen in memory order `perm` with `dim` at position `pos`, t is rows (the dims before pos) of one dense run
// each (dim and the dims after it). Returns the row stride in elements if t has that shape in memory, with
// any stride between rows (0 for a broadcast row dim), or -1 if it has not (then the caller copies it).
inline int64_t row_stride(const at::Tensor& t, const std::vector<int64_t>& perm, int64_t pos) {
  const c10::IntArrayRef sizes = t.sizes(), strides = t.strides();
  const int64_t ndim = static_cast<int64_t>(perm.size());
  int64_t expected = 1;
  for (int64_t k = ndim - 1; k >= pos; --k) {
    const int64_t d = perm[k];
    if (sizes[d] != 1 && strides[d] != expected) return -1;
    expected *= sizes[d];
  }
  int64_t rs = -1, mult = 1;
  for (int64_t k = pos - 1; k >= 0; --k) {
    const int64_t d = perm[k];
    if (sizes[d] == 1) continue;
    if (rs < 0) {
      rs = strides[d];
    } else if (strides[d] != rs * mult) {
      return -1;
    }
    mult *= sizes[d];
  }
  return rs < 0 ? expected : rs;  // one row: any stride will do
}

// One piece of the copy: bytes per row, the piece's own row stride in bytes and its row-0 address.
struct Piece {
  int64_t width;
  int64_t rs;
  int64_t addr;
};

// Writes the copy table (cat_split.h) into buf (table_words(pieces.size()) words). `wide` is the wide
// tensor's row-0 address and `wide_rs` its row stride; `into_wide` says cat (pieces -> wide) or split.
inline void fill_table(int64_t* buf, const std::vector<Piece>& pieces, int64_t wide, int64_t wide_rs,
                       bool into_wide) {
  const int64_t n = static_cast<int64_t>(pieces.size());
  int64_t* col = buf;
  int64_t* src = buf + (n + 1);
  int64_t* src_rs = buf + (2 * n + 1);
  int64_t* dst = buf + (3 * n + 1);
  int64_t* dst_rs = buf + (4 * n + 1);
  int64_t c = 0;
  for (int64_t s = 0; s < n; ++s) {
    const Piece& p = pieces[s];
    col[s] = c;
    if (into_wide) {
      src[s] = p.addr;
      src_rs[s] = p.rs;
      dst[s] = wide + c;
      dst_rs[s] = wide_rs;
    } else {
      src[s] = wide + c;
      src_rs[s] = wide_rs;
      dst[s] = p.addr;
      dst_rs[s] = p.rs;
    }
    c += p.width;
  }
  col[n] = c;
}

// A prepared copy: the tensors that must stay alive while it runs and the pieces of the table.
struct Prepared {
  std::vector<at::Tensor> keep;  // converted or re-laid-out inputs
  std::vector<Piece> pieces;     // pieces with at least one byte per row, in order
  int64_t wide = 0;              // wide tensor's address
  int64_t wide_rs = 0;           // wide tensor's row stride in bytes
  int64_t rows = 0;
  int64_t row_bytes = 0;
  bool empty() const { return rows == 0 || row_bytes == 0 || pieces.empty(); }
};

// ---- cat ---------------------------------------------------------------------------------------------------
inline void prefetch_impl(const at::Tensor& t) {
  const char* p = reinterpret_cast<const char*>(t.unsafeGetTensorImpl());
  for (int k = 0; k < 4; ++k) __builtin_prefetch(p + 64 * k);
}
inline void prefetch_storage(const at::Tensor& t) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->has_storage()) __builtin_prefetch(impl->unsafe_storage().unsafeGetStorageImpl());
}

// Checks the inputs as torch.cat does (1-D tensors of shape (0,) take no part in the shape checks and add
// nothing: torch's legacy rule), allocates the output and prepares the copy, in one pass over the
// inputs: with 10,000 small inputs, every pass over their TensorImpls is a pass of cache misses. Inputs of
// another dtype, with the conjugate or negative bit set, or whose memory is not rows of dense runs in the
// output's memory order (e.g. a transposed input) are first copied into that layout; the others are read in
// place. `dim` comes back wrapped.
inline at::Tensor cat_prepare(at::TensorList tensors, int64_t& dim, Prepared& p) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  TORCH_CHECK_VALUE(n > 0, "tensorops.cat(): expected a non-empty list of Tensors");
  // Pieces are recorded in the one pass with their size along dim in `width` (bytes come later) and the row
  // stride in elements (-1: copy first). `index` maps a piece back to its input for the rare fix-ups.
  std::vector<int64_t> index;
  index.reserve(tensors.size());
  p.pieces.reserve(tensors.size());
  const c10::Device device = tensors[0].device();
  const at::ScalarType first_dtype = tensors[0].scalar_type();
  at::ScalarType dtype = first_dtype;
  bool mixed_dtypes = false;
  // the memory format as torch.cat computes it, decided as soon as one input suggests contiguous
  std::optional<at::MemoryFormat> format;
  bool format_final = false;
  at::MemoryFormat assumed = at::MemoryFormat::Contiguous;  // the format the row strides are computed for
  std::vector<int64_t> perm, ref_sizes;
  int64_t valid = -1, ndim = 0, pos = 0, total = 0;
  for (int64_t i = 0; i < n; ++i) {
    // Many small inputs: the time goes to cache misses on each TensorImpl and its StorageImpl, which the
    // hardware cannot predict. Prefetch the TensorImpl 8 inputs ahead and the StorageImpl 4 ahead.
    if (i + 8 < n) prefetch_impl(tensors[i + 8]);
    if (i + 4 < n) prefetch_storage(tensors[i + 4]);
    const at::Tensor& t = tensors[i];
    TORCH_CHECK(t.defined(), "tensorops.cat(): tensors[", i, "] is an undefined tensor");
    const int64_t tdim = t.dim();
    TORCH_CHECK(tdim > 0, "tensorops.cat(): zero-dimensional tensor (at position ", i,
                ") cannot be concatenated: tensors[", i, "] has shape ()");
    TORCH_CHECK(t.device() == device, "tensorops.cat(): expected all tensors to be on the same device, but tensors[",
                i, "] is on ", t.device(), " and tensors[0] is on ", device);
    TORCH_CHECK(t.layout() == at::kStrided, "tensorops.cat(): tensors[", i, "] has layout ", t.layout(),
                "; only strided tensors are supported");
    const at::ScalarType tdtype = t.scalar_type();
    if (tdtype != first_dtype) {
      mixed_dtypes = true;
      dtype = c10::promoteTypes(dtype, tdtype);
    }
    if (!format_final) {
      const at::MemoryFormat f = tdim == 4 || tdim == 5 ? t.suggest_memory_format() : at::MemoryFormat::Contiguous;
      if (f == at::MemoryFormat::Contiguous || (format.has_value() && *format != f)) {
        format = at::MemoryFormat::Contiguous;
        format_final = true;
      } else {
        format = f;
      }
    }
    const c10::IntArrayRef sizes = t.sizes();
    if (tdim == 1 && sizes[0] == 0) continue;  // the legacy skip
    if (valid < 0) {
      valid = i;
      ndim = tdim;
      TORCH_CHECK_INDEX(dim >= -ndim && dim < ndim, "tensorops.cat(): dim ", dim, " is out of range for tensors[",
                        valid, "] with ", ndim, " dimensions (expected to be in range of [", -ndim, ", ", ndim - 1,
                        "])");
      if (dim < 0) dim += ndim;
      ref_sizes = sizes.vec();
      assumed = *format;
      perm = memory_order(ndim, assumed);
      pos = std::find(perm.begin(), perm.end(), dim) - perm.begin();
    } else {
      TORCH_CHECK(tdim == ndim, "tensorops.cat(): tensors must have the same number of dimensions: tensors[", i,
                  "] has ", tdim, " but tensors[", valid, "] has ", ndim);
      for (int64_t d = 0; d < ndim; ++d) {
        TORCH_CHECK(d == dim || sizes[d] == ref_sizes[d], "tensorops.cat(): sizes of tensors must match except in "
                    "dimension ", dim, ": tensors[", i, "] has size ", sizes[d], " in dimension ", d, " but tensors[",
                    valid, "] has size ", ref_sizes[d], " (shapes ", sizes, " and ", c10::IntArrayRef(ref_sizes), ")");
      }
    }
    total += sizes[dim];
    if (t.numel() == 0) continue;  // adds no bytes
    const int64_t rs = t.is_conj() || t.is_neg() ? -1 : row_stride(t, perm, pos);
    p.pieces.push_back({sizes[dim], rs, reinterpret_cast<int64_t>(t.const_data_ptr())});
    index.push_back(i);
  }
  const at::MemoryFormat mf = format.value_or(at::MemoryFormat::Contiguous);
  if (valid < 0) {  // every input has shape (0,): the result too, and `dim` is never looked at
    dim = 0;
    p.pieces.clear();
    return at::empty({0}, tensors[0].options().dtype(dtype));
  }
  std::vector<int64_t> shape = ref_sizes;
  shape[dim] = total;
  at::Tensor out = at::empty(shape, tensors[valid].options().dtype(dtype).memory_format(mf));
  if (out.numel() == 0) {
    p.pieces.clear();
    return out;
  }
  if (mf != assumed) {  // a later input changed the format: row strides for the output's memory order
    perm = memory_order(ndim, mf);
    pos = std::find(perm.begin(), perm.end(), dim) - perm.begin();
    for (size_t s = 0; s < p.pieces.size(); ++s)
      if (p.pieces[s].rs >= 0) p.pieces[s].rs = row_stride(tensors[index[s]], perm, pos);
  }
  const int64_t es = static_cast<int64_t>(out.element_size());
  int64_t inner = 1;
  p.rows = 1;
  for (int64_t k = 0; k < ndim; ++k) {
    if (k < pos) p.rows *= shape[perm[k]];
    if (k > pos) inner *= shape[perm[k]];
  }
  p.row_bytes = total * inner * es;
  p.wide = reinterpret_cast<int64_t>(out.data_ptr());
  p.wide_rs = p.row_bytes;
  for (size_t s = 0; s < p.pieces.size(); ++s) {
    Piece& piece = p.pieces[s];
    piece.width *= inner * es;
    if (piece.rs < 0 || (mixed_dtypes && tensors[index[s]].scalar_type() != dtype)) {
      const at::Tensor& t = tensors[index[s]];
      at::Tensor c = at::empty(t.sizes(), out.options().memory_format(mf));
      c.copy_(t);
      piece.rs = piece.width;
      piece.addr = reinterpret_cast<int64_t>(c.const_data_ptr());
      p.keep.push_back(std::move(c));
    } else {
      piece.rs *= es;
    }
  }
  return out;
}

// ---- split -------------------------------------------------------------------------------------------------
// Checks as torch.split_with_sizes does and allocates the contiguous pieces; `dim` comes back wrapped.
inline std::vector<at::Tensor> split_outputs(const at::Tensor& input, c10::IntArrayRef sizes, int64_t& dim) {
  TORCH_CHECK(input.dim() > 0, "tensorops.split(): split expects at least a 1-dimensional tensor");
  TORCH_CHECK(input.layout() == at::kStrided, "tensorops.split(): input has layout ", input.layout(),
              "; only strided tensors are supported");
  const int64_t ndim = input.dim();
  TORCH_CHECK_INDEX(dim >= -ndim && dim < ndim, "tensorops.split(): dim ", dim,
                    " is out of range for input with ", ndim, " dimensions (expected to be in range of [", -ndim,
                    ", ", ndim - 1, "])");
  if (dim < 0) dim += ndim;
  int64_t sum = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TORCH_CHECK(sizes[i] >= 0, "tensorops.split(): split_sizes must be non-negative, but split_sizes[", i,
                "] is ", sizes[i], " (split_sizes=", sizes, ")");
    sum += sizes[i];
  }
  TORCH_CHECK(sum == input.size(dim), "tensorops.split(): split_sizes must sum exactly to ", input.size(dim),
              " (input's size at dimension ", dim, "), but got split_sizes=", sizes, " (sum ", sum, ")");
  std::vector<at::Tensor> outs;
  outs.reserve(sizes.size());
  std::vector<int64_t> shape = input.sizes().vec();
  for (const int64_t s : sizes) {
    shape[dim] = s;
    outs.push_back(at::empty(shape, input.options()));
  }
  return outs;
}

// The copy for split of `input` into the contiguous `outs`. An input that is not rows of dense runs in
// row-major order (channels_last, transposed...) is first made contiguous.
inline Prepared prepare_split(const at::Tensor& input, int64_t dim, const std::vector<at::Tensor>& outs) {
  Prepared p;
  if (input.numel() == 0) return p;
  const int64_t ndim = input.dim();
  const std::vector<int64_t> perm = memory_order(ndim, at::MemoryFormat::Contiguous);
  const int64_t es = static_cast<int64_t>(input.element_size());
  int64_t inner = 1;
  p.rows = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    if (d < dim) p.rows *= input.size(d);
    if (d > dim) inner *= input.size(d);
  }
  p.row_bytes = input.size(dim) * inner * es;
  at::Tensor src = input;
  int64_t rs = (input.is_conj() || input.is_neg()) ? -1 : row_stride(input, perm, dim);
  if (rs < 0) {
    src = at::empty(input.sizes(), input.options());
    src.copy_(input);
    rs = input.size(dim) * inner;
    p.keep.push_back(src);
  }
  p.wide = reinterpret_cast<int64_t>(src.data_ptr());
  p.wide_rs = rs * es;
  p.pieces.reserve(outs.size());
  for (const at::Tensor& o : outs) {
    if (o.numel() == 0) continue;
    const int64_t width = o.size(dim) * inner * es;
    p.pieces.push_back({width, width, reinterpret_cast<int64_t>(o.data_ptr())});
  }
  return p;
}

}  // namespace cat_split_host
}  // namespace tensorops
