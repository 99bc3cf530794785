// Host-side pieces of cat and split shared by the CPU and CUDA launchers: torch's argument checks (with
// messages that name the offending tensor's position), output allocation, and the per-piece copy table of
// copy_table.h. Nothing here touches tensor data except the copies that bring an input into a layout the
// kernels copy from with plain row runs (see cat_prepare / prepare_split).
#pragma once
#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/ScalarType.h>

#include "tensorops/copy_table.h"
#include "tensorops/checks.h"
#include "tensorops/parallel.h"

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

// Writes the copy table (copy_table.h) into buf (table_words(pieces.size()) words). `wide` is the wide
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
// Inputs from which cat's checking pass may be split over threads (tensorops/parallel.h decides), and what
// checking one input costs, as the bytes a copy pass moves in the same time, so that the scan is weighed by
// the same policy as every copy (benchmarks/parallel_policy.py measured ~27 ns per input on one thread: ~430
// bytes at kSerialBytesPerNs).
constexpr int64_t kParallelScanInputs = 2048;
constexpr int64_t kCatScanBytesPerInput = 512;

inline void prefetch_impl(const at::Tensor& t) {
  const char* p = reinterpret_cast<const char*>(t.unsafeGetTensorImpl());
  for (int k = 0; k < 4; ++k) __builtin_prefetch(p + 64 * k);
}
inline void prefetch_storage(const at::Tensor& t) {
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->has_storage()) __builtin_prefetch(impl->unsafe_storage().unsafeGetStorageImpl());
}

// What one pass over cat's inputs gathers: torch.cat's checks passed, the output's dtype, memory format and
// shape, and the pieces (size along dim in `width`, row stride in elements or -1 for "copy first", address).
struct CatScan {
  std::vector<int64_t> index;  // the input of each piece, for the rare fix-ups
  at::ScalarType dtype = at::kFloat;
  bool mixed_dtypes = false;
  at::MemoryFormat format = at::MemoryFormat::Contiguous;   // the output's
  at::MemoryFormat assumed = at::MemoryFormat::Contiguous;  // the one the row strides were computed for
  std::vector<int64_t> perm, ref_sizes;
  int64_t valid = -1, ndim = 0, pos = 0, total = 0;
};

// The pass in input order, with torch's checks and messages naming the offending tensor's position. 1-D
// tensors of shape (0,) take no part in the shape checks and add nothing (torch's legacy rule).
inline void cat_scan_serial(at::TensorList tensors, int64_t& dim, CatScan& s, Prepared& p) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  s.index.reserve(tensors.size());
  p.pieces.reserve(tensors.size());
  const c10::Device device = tensors[0].device();
  const at::ScalarType first_dtype = tensors[0].scalar_type();
  s.dtype = first_dtype;
  // the memory format as torch.cat computes it, decided as soon as one input suggests contiguous
  std::optional<at::MemoryFormat> format;
  bool format_final = false;
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
      s.mixed_dtypes = true;
      s.dtype = c10::promoteTypes(s.dtype, tdtype);
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
    if (s.valid < 0) {
      s.valid = i;
      s.ndim = tdim;
      TORCH_CHECK_INDEX(dim >= -tdim && dim < tdim, "tensorops.cat(): dim ", dim, " is out of range for tensors[",
                        i, "] with ", tdim, " dimensions (expected to be in range of [", -tdim, ", ", tdim - 1,
                        "])");
      if (dim < 0) dim += tdim;
      s.ref_sizes = sizes.vec();
      s.assumed = *format;
      s.perm = memory_order(tdim, s.assumed);
      s.pos = std::find(s.perm.begin(), s.perm.end(), dim) - s.perm.begin();
    } else {
      // torch's wording after the prefix (callers match on it), then which tensors
      TORCH_CHECK(tdim == s.ndim, "tensorops.cat(): Tensors must have same number of dimensions: got ", s.ndim,
                  " and ", tdim, " (tensors[", s.valid, "] and tensors[", i, "])");
      for (int64_t d = 0; d < s.ndim; ++d) {
        TORCH_CHECK(d == dim || sizes[d] == s.ref_sizes[d], "tensorops.cat(): Sizes of tensors must match except "
                    "in dimension ", dim, ". Expected size ", s.ref_sizes[d], " but got size ", sizes[d],
                    " for tensor number ", i, " in the list (dimension ", d, ": tensors[", i, "] has shape ",
                    sizes, ", tensors[", s.valid, "] ", c10::IntArrayRef(s.ref_sizes), ")");
      }
    }
    s.total += sizes[dim];
    if (t.numel() == 0) continue;  // adds no bytes
    const int64_t rs = t.is_conj() || t.is_neg() ? -1 : row_stride(t, s.perm, s.pos);
    p.pieces.push_back({sizes[dim], rs, reinterpret_cast<int64_t>(t.const_data_ptr())});
    s.index.push_back(i);
  }
  s.format = format.value_or(at::MemoryFormat::Contiguous);
}

// The same pass split over the intra-op threads, for many inputs of one dtype with tensors[0] not skipped
// (the case where the pass costs more than the copy). It checks without throwing and returns false on
// anything unusual (a failed check, mixed dtypes); the caller then runs the serial pass, which raises
// torch's error for the first offending tensor.
inline bool cat_scan_parallel(at::TensorList tensors, int64_t dim, CatScan& s, Prepared& p, int threads) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  const at::Tensor& t0 = tensors[0];
  if (!t0.defined() || t0.dim() == 0 || (t0.dim() == 1 && t0.size(0) == 0) || t0.layout() != at::kStrided)
    return false;
  const int64_t ndim = t0.dim();
  if (dim < -ndim || dim >= ndim) return false;
  if (dim < 0) dim += ndim;
  const c10::Device device = t0.device();
  const at::ScalarType dtype = t0.scalar_type();
  const at::MemoryFormat assumed =
      ndim == 4 || ndim == 5 ? t0.suggest_memory_format() : at::MemoryFormat::Contiguous;
  const std::vector<int64_t> perm = memory_order(ndim, assumed);
  const int64_t pos = std::find(perm.begin(), perm.end(), dim) - perm.begin();
  const c10::IntArrayRef ref = t0.sizes();

  struct Slot {
    int64_t size, rs, addr;  // size < 0: no piece
  };
  struct Chunk {
    bool ok = true, contiguous = false;
    std::optional<at::MemoryFormat> format;
    int64_t total = 0;
  };
  std::unique_ptr<Slot[]> slots(new Slot[static_cast<size_t>(n)]);
  const int64_t nchunks = std::min<int64_t>(threads, (n + 1023) / 1024);
  const int64_t chunk = (n + nchunks - 1) / nchunks;
  std::vector<Chunk> chunks(static_cast<size_t>(nchunks));
  run_on(threads, 0, nchunks, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      Chunk& st = chunks[c];
      const int64_t end = std::min(n, (c + 1) * chunk);
      for (int64_t i = c * chunk; i < end; ++i) {
        if (i + 8 < end) prefetch_impl(tensors[i + 8]);
        if (i + 4 < end) prefetch_storage(tensors[i + 4]);
        const at::Tensor& t = tensors[i];
        if (!t.defined()) { st.ok = false; break; }
        const int64_t tdim = t.dim();
        if (tdim == 0 || t.device() != device || t.layout() != at::kStrided || t.scalar_type() != dtype) {
          st.ok = false;
          break;
        }
        if (!st.contiguous) {
          const at::MemoryFormat f = tdim == 4 || tdim == 5 ? t.suggest_memory_format() : at::MemoryFormat::Contiguous;
          if (f == at::MemoryFormat::Contiguous || (st.format.has_value() && *st.format != f)) {
            st.contiguous = true;
          } else {
            st.format = f;
          }
        }
        const c10::IntArrayRef sizes = t.sizes();
        Slot& slot = slots[i];
        slot.size = -1;
        if (tdim == 1 && sizes[0] == 0) continue;  // the legacy skip
        bool same = tdim == ndim;
        for (int64_t d = 0; same && d < ndim; ++d) same = d == dim || sizes[d] == ref[d];
        if (!same) { st.ok = false; break; }
        st.total += sizes[dim];
        if (t.numel() == 0) continue;
        slot.size = sizes[dim];
        slot.rs = t.is_conj() || t.is_neg() ? -1 : row_stride(t, perm, pos);
        slot.addr = reinterpret_cast<int64_t>(t.const_data_ptr());
      }
    }
  });
  bool contiguous = false;
  std::optional<at::MemoryFormat> format;
  for (const Chunk& st : chunks) {
    if (!st.ok) return false;
    contiguous = contiguous || st.contiguous || (format.has_value() && st.format.has_value() && *format != *st.format);
    if (!format.has_value()) format = st.format;
    s.total += st.total;
  }
  s.dtype = dtype;
  s.format = contiguous ? at::MemoryFormat::Contiguous : format.value_or(at::MemoryFormat::Contiguous);
  s.assumed = assumed;
  s.perm = perm;
  s.pos = pos;
  s.ref_sizes = ref.vec();
  s.valid = 0;
  s.ndim = ndim;
  s.index.reserve(tensors.size());
  p.pieces.reserve(tensors.size());
  for (int64_t i = 0; i < n; ++i) {
    if (slots[i].size < 0) continue;
    p.pieces.push_back({slots[i].size, slots[i].rs, slots[i].addr});
    s.index.push_back(i);
  }
  return true;
}

// Checks the inputs as torch.cat does, allocates the output and prepares the copy, in one pass over the
// inputs (split over threads for many inputs when the policy grants them): with 10,000 small inputs, every pass over their TensorImpls is
// a pass of cache misses. Inputs of another dtype, with the conjugate or negative bit set, or whose memory is
// not rows of dense runs in the output's memory order (e.g. a transposed input) are first copied into that
// layout; the others are read in place. `dim` comes back wrapped.
inline at::Tensor cat_prepare(at::TensorList tensors, int64_t& dim, Prepared& p) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  TORCH_CHECK_VALUE(n > 0, "tensorops.cat(): expected a non-empty list of Tensors");
  CatScan s;
  const int threads = n >= kParallelScanInputs ? threads_for(n * kCatScanBytesPerInput) : 1;
  if (threads > 1 && cat_scan_parallel(tensors, dim, s, p, threads)) {
    if (dim < 0) dim += s.ndim;
  } else {
    s = CatScan();
    p.pieces.clear();
    cat_scan_serial(tensors, dim, s, p);
  }
  const at::MemoryFormat mf = s.format;
  if (s.valid < 0) {  // every input has shape (0,): the result too, and `dim` is never looked at
    dim = 0;
    p.pieces.clear();
    return at::empty({0}, tensors[0].options().dtype(s.dtype));
  }
  std::vector<int64_t> shape = s.ref_sizes;
  shape[dim] = s.total;
  at::Tensor out = at::empty(shape, tensors[s.valid].options().dtype(s.dtype).memory_format(mf));
  if (out.numel() == 0) {
    p.pieces.clear();
    return out;
  }
  if (mf != s.assumed) {  // a later input changed the format: row strides for the output's memory order
    s.perm = memory_order(s.ndim, mf);
    s.pos = std::find(s.perm.begin(), s.perm.end(), dim) - s.perm.begin();
    for (size_t k = 0; k < p.pieces.size(); ++k)
      if (p.pieces[k].rs >= 0) p.pieces[k].rs = row_stride(tensors[s.index[k]], s.perm, s.pos);
  }
  const int64_t es = static_cast<int64_t>(out.element_size());
  int64_t inner = 1;
  p.rows = 1;
  for (int64_t k = 0; k < s.ndim; ++k) {
    if (k < s.pos) p.rows *= shape[s.perm[k]];
    if (k > s.pos) inner *= shape[s.perm[k]];
  }
  p.row_bytes = s.total * inner * es;
  p.wide = reinterpret_cast<int64_t>(out.data_ptr());
  p.wide_rs = p.row_bytes;
  for (size_t k = 0; k < p.pieces.size(); ++k) {
    Piece& piece = p.pieces[k];
    piece.width *= inner * es;
    if (piece.rs < 0 || (s.mixed_dtypes && tensors[s.index[k]].scalar_type() != s.dtype)) {
      const at::Tensor& t = tensors[s.index[k]];
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
