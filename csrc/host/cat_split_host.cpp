// Host side of cat and split (cat_split_host.h): compiled once, by the C++ compiler, for the CPU and CUDA ops.
//
// cat checks and describes its inputs in one scan, scan_range: over all of them on the caller's thread, or, for
// many inputs when the thread policy grants threads, one chunk per thread, merged in input order. It stops at the
// first input torch.cat rejects and says why (Fault), and cat_prepare raises torch's error for that input. A
// chunk that stops (a fault, or a second dtype) makes the scan run again on one thread, as torch.cat checks.
#include "tensorops/cat_split_host.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/ScalarType.h>

#include "tensorops/copy_table.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace cat_split_host {
namespace {

// ---- layout ------------------------------------------------------------------------------------------------
// Dims of an `ndim`-d tensor in `mf` from the outermost in memory to the innermost.
std::vector<int64_t> memory_order(int64_t ndim, at::MemoryFormat mf) {
  std::vector<int64_t> perm(ndim);
  std::iota(perm.begin(), perm.end(), 0);
  if (mf == at::MemoryFormat::ChannelsLast && ndim == 4) perm = {0, 2, 3, 1};
  if (mf == at::MemoryFormat::ChannelsLast3d && ndim == 5) perm = {0, 2, 3, 4, 1};
  return perm;
}

// Seen in memory order `perm` with `dim` at position `pos`, t is rows (the dims before pos) of one dense run
// each (dim and the dims after it). Returns the row stride in elements if t has that shape in memory, with
// any stride between rows (0 for a broadcast row dim), or -1 if it has not (then the caller copies it).
int64_t row_stride(const at::Tensor& t, const std::vector<int64_t>& perm, int64_t pos) {
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

// The memory format an input suggests for cat's output (only 4-d and 5-d inputs can suggest channels_last).
at::MemoryFormat suggested_format(const at::Tensor& t, int64_t tdim) {
  return tdim == 4 || tdim == 5 ? t.suggest_memory_format() : at::MemoryFormat::Contiguous;
}

// ---- cat's scan ----------------------------------------------------------------------------------------------
// Inputs from which the scan may be split over threads (tensorops/parallel.h decides), and what checking one
// input costs, as the bytes a copy pass moves in the same time, so that the scan is weighed by the same policy
// as every copy (benchmarks/parallel_policy.py measured ~27 ns per input on one thread: ~430 bytes at its
// measured one-thread copy rate of ~16 bytes/ns).
constexpr int64_t kParallelScanInputs = 2048;
constexpr int64_t kCatScanBytesPerInput = 512;

// Many small inputs: the time goes to cache misses on each TensorImpl and its StorageImpl, which the hardware
// cannot predict. The scan of input i prefetches the TensorImpl 8 inputs ahead and the StorageImpl 4 ahead.
void prefetch_ahead(at::TensorList tensors, int64_t i, int64_t end) {
  if (i + 8 < end) {
    const char* p = reinterpret_cast<const char*>(tensors[i + 8].unsafeGetTensorImpl());
    for (int k = 0; k < 4; ++k) __builtin_prefetch(p + 64 * k);
  }
  const c10::TensorImpl* impl = i + 4 < end ? tensors[i + 4].unsafeGetTensorImpl() : nullptr;
  if (impl != nullptr && impl->has_storage()) __builtin_prefetch(impl->unsafe_storage().unsafeGetStorageImpl());
}

// Why torch.cat rejects an input, in the order torch checks one input. kDtype: a second dtype in a scan that
// does not promote (a chunk), which is no error.
enum class Fault { kNone, kUndefined, kZeroDim, kDevice, kLayout, kDtype, kDimRange, kRank, kSize };

// What the scan compares every input with: tensors[0]'s device and dtype, and the reference input (the first
// that is not a legacy-skipped 1-D tensor of shape (0,)), whose sizes the others must match except along dim.
struct Reference {
  c10::Device device;
  at::ScalarType dtype;
  int64_t valid = -1;              // the reference input; -1: none before the first input that is bad anyway
  int64_t ndim = 0, dim = 0;       // dim wrapped, when dim_ok
  bool dim_ok = false;             // dim is in range for the reference input
  c10::IntArrayRef sizes;
  at::MemoryFormat assumed = at::MemoryFormat::Contiguous;  // the format the row strides are computed for
  std::vector<int64_t> perm;                                // memory order of `assumed`
  int64_t pos = 0;                                          // dim's position in perm
};

Reference find_reference(at::TensorList tensors, int64_t dim) {
  // tensors[0].device() raises for an undefined tensors[0], as it always has
  Reference ref{tensors[0].device(), tensors[0].scalar_type()};
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (!t.defined() || t.dim() == 0) break;       // the scan reports this input
    if (t.dim() == 1 && t.size(0) == 0) continue;  // the legacy skip
    ref.valid = static_cast<int64_t>(i);
    ref.ndim = t.dim();
    ref.sizes = t.sizes();
    ref.dim_ok = dim >= -ref.ndim && dim < ref.ndim;
    if (!ref.dim_ok) break;
    ref.dim = dim < 0 ? dim + ref.ndim : dim;
    // the format of the inputs up to the reference: skipped inputs before it are 1-D, which makes it contiguous
    ref.assumed = i == 0 ? suggested_format(t, ref.ndim) : at::MemoryFormat::Contiguous;
    ref.perm = memory_order(ref.ndim, ref.assumed);
    ref.pos = std::find(ref.perm.begin(), ref.perm.end(), ref.dim) - ref.perm.begin();
    break;
  }
  return ref;
}

// What a scan of a range of inputs gathers: torch.cat's checks passed up to `bad`, the promoted dtype, the
// memory format the range suggests, the size along dim, and the pieces (size along dim in `width`, row stride
// in elements or -1 for "copy first", address) with the input each came from.
struct Scan {
  int64_t bad = -1;  // the first input torch.cat rejects (-1: none), and why
  Fault fault = Fault::kNone;
  at::ScalarType dtype = at::kFloat;
  bool mixed_dtypes = false;
  bool contiguous = false;                // an input suggests contiguous, or two suggest different formats
  std::optional<at::MemoryFormat> format;  // the format the inputs suggest, while !contiguous
  int64_t total = 0;
  std::vector<Piece> pieces;
  std::vector<int64_t> index;
  void stop(int64_t i, Fault f) {
    bad = i;
    fault = f;
  }
};

// Scans inputs [begin, end) in order and stops at the first one torch.cat rejects. With `promote`, a second
// dtype is promoted (c10::promoteTypes raises where torch.cat does), else it stops there with kDtype. 1-D
// tensors of shape (0,) take no part in the shape checks and add nothing (torch's legacy rule).
void scan_range(at::TensorList tensors, const Reference& ref, int64_t begin, int64_t end, bool promote, Scan& s) {
  s.dtype = ref.dtype;
  s.pieces.reserve(static_cast<size_t>(end - begin));
  s.index.reserve(static_cast<size_t>(end - begin));
  for (int64_t i = begin; i < end; ++i) {
    prefetch_ahead(tensors, i, end);
    const at::Tensor& t = tensors[i];
    const int64_t tdim = t.defined() ? t.dim() : 0;
    Fault f = !t.defined() ? Fault::kUndefined
              : tdim == 0 ? Fault::kZeroDim
              : t.device() != ref.device ? Fault::kDevice
              : t.layout() != at::kStrided ? Fault::kLayout
                                           : Fault::kNone;
    const at::ScalarType tdtype = f == Fault::kNone ? t.scalar_type() : ref.dtype;
    if (tdtype != ref.dtype) {
      if (promote) {
        s.mixed_dtypes = true;
        s.dtype = c10::promoteTypes(s.dtype, tdtype);
      } else {
        f = Fault::kDtype;
      }
    }
    if (f != Fault::kNone) return s.stop(i, f);
    if (!s.contiguous) {
      const at::MemoryFormat mf = suggested_format(t, tdim);
      s.contiguous = mf == at::MemoryFormat::Contiguous || (s.format.has_value() && *s.format != mf);
      if (!s.contiguous) s.format = mf;
    }
    const c10::IntArrayRef sizes = t.sizes();
    if (tdim == 1 && sizes[0] == 0) continue;  // the legacy skip
    if (i == ref.valid) {
      f = ref.dim_ok ? Fault::kNone : Fault::kDimRange;
    } else if (tdim != ref.ndim) {
      f = Fault::kRank;
    } else {
      for (int64_t d = 0; d < tdim; ++d)
        if (d != ref.dim && sizes[d] != ref.sizes[d]) f = Fault::kSize;
    }
    if (f != Fault::kNone) return s.stop(i, f);
    s.total += sizes[ref.dim];
    if (t.numel() == 0) continue;  // adds no bytes
    const int64_t rs = t.is_conj() || t.is_neg() ? -1 : row_stride(t, ref.perm, ref.pos);
    s.pieces.push_back({sizes[ref.dim], rs, reinterpret_cast<int64_t>(t.const_data_ptr())});
    s.index.push_back(i);
  }
}

// scan_range over one chunk of inputs per thread, merged in input order; false if a chunk stopped early (the
// caller then scans on one thread).
bool scan_chunks(at::TensorList tensors, const Reference& ref, int threads, Scan& s) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  const int64_t nchunks = std::min<int64_t>(threads, (n + 1023) / 1024);
  const int64_t chunk = (n + nchunks - 1) / nchunks;
  std::vector<Scan> parts(static_cast<size_t>(nchunks));
  run_on(threads, 0, nchunks, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c)
      scan_range(tensors, ref, c * chunk, std::min(n, (c + 1) * chunk), /*promote=*/false, parts[c]);
  });
  size_t pieces = 0;
  for (const Scan& part : parts) {
    if (part.bad >= 0) return false;
    pieces += part.pieces.size();
  }
  s.dtype = ref.dtype;
  s.pieces.reserve(pieces);
  s.index.reserve(pieces);
  for (const Scan& part : parts) {
    s.contiguous = s.contiguous || part.contiguous ||
                   (s.format.has_value() && part.format.has_value() && *s.format != *part.format);
    if (!s.format.has_value()) s.format = part.format;
    s.total += part.total;
    s.pieces.insert(s.pieces.end(), part.pieces.begin(), part.pieces.end());
    s.index.insert(s.index.end(), part.index.begin(), part.index.end());
  }
  return true;
}

// torch.cat's error for input i (what scan_range found wrong with it), naming its position. `dim` is the
// caller's, not wrapped.
[[noreturn]] void raise_fault(at::TensorList tensors, const Reference& ref, int64_t dim, int64_t i, Fault f) {
  const at::Tensor& t = tensors[i];
  TORCH_CHECK(f != Fault::kUndefined, "tensorops.cat(): tensors[", i, "] is an undefined tensor");
  TORCH_CHECK(f != Fault::kZeroDim, "tensorops.cat(): zero-dimensional tensor (at position ", i,
              ") cannot be concatenated: tensors[", i, "] has shape ()");
  TORCH_CHECK(f != Fault::kDevice, "tensorops.cat(): expected all tensors to be on the same device, but tensors[",
              i, "] is on ", t.device(), " and tensors[0] is on ", ref.device);
  TORCH_CHECK(f != Fault::kLayout, "tensorops.cat(): tensors[", i, "] has layout ", t.layout(),
              "; only strided tensors are supported");
  const int64_t tdim = t.dim();
  TORCH_CHECK_INDEX(f != Fault::kDimRange, "tensorops.cat(): dim ", dim, " is out of range for tensors[", i,
                    "] with ", tdim, " dimensions (expected to be in range of [", -tdim, ", ", tdim - 1, "])");
  // torch's wording after the prefix (callers match on it), then which tensors
  TORCH_CHECK(f != Fault::kRank, "tensorops.cat(): Tensors must have same number of dimensions: got ", ref.ndim,
              " and ", tdim, " (tensors[", ref.valid, "] and tensors[", i, "])");
  const c10::IntArrayRef sizes = t.sizes();
  for (int64_t d = 0; d < ref.ndim; ++d) {
    TORCH_CHECK(d == ref.dim || sizes[d] == ref.sizes[d], "tensorops.cat(): Sizes of tensors must match except "
                "in dimension ", ref.dim, ". Expected size ", ref.sizes[d], " but got size ", sizes[d],
                " for tensor number ", i, " in the list (dimension ", d, ": tensors[", i, "] has shape ", sizes,
                ", tensors[", ref.valid, "] ", ref.sizes, ")");
  }
  TORCH_INTERNAL_ASSERT(false, "tensorops.cat(): input ", i, " was rejected for no reason");
}

}  // namespace

void fill_table(int64_t* buf, const std::vector<Piece>& pieces, int64_t wide, int64_t wide_rs, bool into_wide) {
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

at::Tensor cat_prepare(at::TensorList tensors, int64_t& dim, Prepared& p) {
  const int64_t n = static_cast<int64_t>(tensors.size());
  TORCH_CHECK_VALUE(n > 0, "tensorops.cat(): expected a non-empty list of Tensors");
  Reference ref = find_reference(tensors, dim);
  Scan s;
  const int threads = n >= kParallelScanInputs ? threads_for(n * kCatScanBytesPerInput) : 1;
  if (!(threads > 1 && ref.valid >= 0 && ref.dim_ok && scan_chunks(tensors, ref, threads, s))) {
    s = Scan();
    scan_range(tensors, ref, 0, n, /*promote=*/true, s);
    if (s.bad >= 0) raise_fault(tensors, ref, dim, s.bad, s.fault);
  }
  p.pieces = std::move(s.pieces);
  const at::MemoryFormat mf = s.contiguous ? at::MemoryFormat::Contiguous
                                           : s.format.value_or(at::MemoryFormat::Contiguous);
  if (ref.valid < 0) {  // every input has shape (0,): the result too, and `dim` is never looked at
    dim = 0;
    p.pieces.clear();
    return at::empty({0}, tensors[0].options().dtype(s.dtype));
  }
  dim = ref.dim;
  std::vector<int64_t> shape = ref.sizes.vec();
  shape[dim] = s.total;
  at::Tensor out = at::empty(shape, tensors[ref.valid].options().dtype(s.dtype).memory_format(mf));
  if (out.numel() == 0) {
    p.pieces.clear();
    return out;
  }
  if (mf != ref.assumed) {  // a later input changed the format: row strides for the output's memory order
    ref.perm = memory_order(ref.ndim, mf);
    ref.pos = std::find(ref.perm.begin(), ref.perm.end(), dim) - ref.perm.begin();
    for (size_t k = 0; k < p.pieces.size(); ++k)
      if (p.pieces[k].rs >= 0) p.pieces[k].rs = row_stride(tensors[s.index[k]], ref.perm, ref.pos);
  }
  const int64_t es = static_cast<int64_t>(out.element_size());
  int64_t inner = 1;
  p.rows = 1;
  for (int64_t k = 0; k < ref.ndim; ++k) {
    if (k < ref.pos) p.rows *= shape[ref.perm[k]];
    if (k > ref.pos) inner *= shape[ref.perm[k]];
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
std::vector<at::Tensor> split_prepare(const at::Tensor& input, c10::SymIntArrayRef split_sizes, int64_t dim,
                                      Prepared& p) {
  const c10::IntArrayRef sizes = C10_AS_INTARRAYREF_SLOW(split_sizes);
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
  if (input.numel() == 0) return outs;
  // the copy, from rows of dense runs in row-major order
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
  return outs;
}

}  // namespace cat_split_host
}  // namespace tensorops
