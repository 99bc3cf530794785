// cat and split on the CPU: one pass over the bytes of the wide tensor (cat's output, split's input), split
// in large chunks over the threads tensorops/parallel.h grants, not one task per tensor. Each chunk finds its first piece with the binary search of
// copy_table.h and then walks the piece table, one memcpy per contiguous run (a piece's row). Many small
// tensors cost one table entry and one memcpy each.
//
// This file also holds the fast eager entry points (tensorops._C.cat_fast / split_fast): they turn a Python
// list of tensors into a C++ vector without the boxed argument parsing of torch.ops (about 80 ns per tensor)
// and, when no input needs a gradient, call the registered op below autograd (the Python autograd kernel that
// torch.library.register_autograd installs would otherwise box and unbox every tensor again). The op still
// runs through the dispatcher, so the profiler shows tensorops::cat / tensorops::split.
#include <cstring>
#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>

#include "tensorops/copy_table.h"
#include "tensorops/cat_split_host.h"
#include "tensorops/parallel.h"
#include "py_entry.h"

namespace tensorops {
namespace {

using namespace cat_split_host;
using copy_table::Location;
using copy_table::SegmentTable;

void copy_table_cpu(const SegmentTable& t) {
  const int64_t total = t.rows * t.row_bytes;
  if (total == 0 || t.n == 0) return;
  parallel_for_bytes(0, total, 2 * total, [&](int64_t begin, int64_t end) {
    Location l = copy_table::locate(t, begin);
    int64_t q = begin;
    for (;;) {
      const int64_t n = std::min(l.run, end - q);
      std::memcpy(reinterpret_cast<void*>(l.dst), reinterpret_cast<const void*>(l.src), static_cast<size_t>(n));
      q += n;
      if (q >= end) break;
      if (++l.seg == t.n) {  // next row
        l.seg = 0;
        ++l.row;
      }
      // runs of a few hundred bytes from scattered inputs: prefetch the source a few pieces ahead
      if (l.seg + 4 < t.n) __builtin_prefetch(reinterpret_cast<const void*>(t.src[l.seg + 4] + l.row * t.src_rs[l.seg + 4]));
      l.src = t.src[l.seg] + l.row * t.src_rs[l.seg];
      l.dst = t.dst[l.seg] + l.row * t.dst_rs[l.seg];
      l.run = t.col[l.seg + 1] - t.col[l.seg];
    }
  });
}

void run(const Prepared& p, bool into_wide) {
  if (p.empty()) return;
  const int64_t n = static_cast<int64_t>(p.pieces.size());
  std::unique_ptr<int64_t[]> buf(new int64_t[static_cast<size_t>(copy_table::table_words(n))]);  // no zero fill
  fill_table(buf.get(), p.pieces, p.wide, p.wide_rs, into_wide);
  copy_table_cpu(copy_table::table_view(buf.get(), n, p.row_bytes, p.rows));
}

at::Tensor cat_cpu(at::TensorList tensors, int64_t dim) {
  Prepared p;
  at::Tensor out = cat_prepare(tensors, dim, p);
  run(p, /*into_wide=*/true);
  return out;
}

std::vector<at::Tensor> split_cpu(const at::Tensor& input, c10::SymIntArrayRef sizes, int64_t dim) {
  const auto int_sizes = C10_AS_INTARRAYREF_SLOW(sizes);
  std::vector<at::Tensor> outs = split_outputs(input, int_sizes, dim);
  run(prepare_split(input, dim, outs), /*into_wide=*/false);
  return outs;
}

// ---- fast eager entry points ---------------------------------------------------------------------------------
using py_entry::plain;
using py_entry::tls_is_plain;

// Borrowed at::Tensors; releases the borrows and the snapshot that keeps their Python objects alive, if any
// (with the GIL held).
struct BorrowedTensors {
  PyObject* held = nullptr;
  std::vector<at::Tensor> v;
  explicit BorrowedTensors(Py_ssize_t n) { v.reserve(static_cast<size_t>(n)); }
  void hold(PyObject* snapshot) { held = snapshot; }
  ~BorrowedTensors() {
    for (at::Tensor& t : v) c10::MaybeOwnedTraits<at::Tensor>::destroyBorrow(t);
    Py_XDECREF(held);
  }
  BorrowedTensors(const BorrowedTensors&) = delete;
  BorrowedTensors& operator=(const BorrowedTensors&) = delete;
};

// Below this many input bytes cat_fast copies a list's tensors without releasing the GIL (a few ms of
// copying at most; numpy.concatenate never releases it): releasing it needs a tuple snapshot of the list,
// which costs about 10% of a cat of 10,000 small tensors. Tuples and larger copies release the GIL.
constexpr int64_t kKeepGilBytes = int64_t{16} << 20;

}  // namespace

// cat_fast(tensors: list | tuple, dim: int) -> Tensor | None. None: not handled here, use torch.ops.
PyObject* cat_fast(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject* seq = nullptr;
  long long dim = 0;
  if (!PyArg_ParseTuple(args, "OL", &seq, &dim)) return nullptr;
  if (!(PyList_CheckExact(seq) || PyTuple_CheckExact(seq)) || !tls_is_plain()) Py_RETURN_NONE;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n == 0) Py_RETURN_NONE;
  PyObject** items = PySequence_Fast_ITEMS(seq);
  const bool grad_mode = at::GradMode::is_enabled();
  // The kernel sees the inputs as borrowed at::Tensors, so no TensorImpl refcount moves.
  BorrowedTensors tensors(n);
  int64_t bytes = 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    const at::Tensor* t = nullptr;
    if (i + 8 < n) __builtin_prefetch(items[i + 8]);
    if (i + 4 < n && THPVariable_CheckExact(items[i + 4]))
      __builtin_prefetch(THPVariable_Unpack(items[i + 4]).unsafeGetTensorImpl());
    if (!plain(items[i], grad_mode, &t)) Py_RETURN_NONE;
    bytes += t->numel() * static_cast<int64_t>(t->itemsize());
    tensors.v.push_back(c10::MaybeOwnedTraits<at::Tensor>::createBorrow(*t));
  }
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("tensorops::cat", "")
                       .typed<at::Tensor(at::TensorList, int64_t)>();
  at::Tensor out;
  if (PyList_CheckExact(seq) && bytes < kKeepGilBytes) {
    // A small copy keeps the GIL: nothing can change the list meanwhile, and no snapshot is needed.
    at::AutoDispatchBelowAutograd below_autograd;
    out = op.call(tensors.v, static_cast<int64_t>(dim));
  } else {
    // Without the GIL another thread could change a list: a tuple snapshot keeps the inputs alive.
    tensors.hold(PyTuple_CheckExact(seq) ? (Py_INCREF(seq), seq) : PySequence_Tuple(seq));
    if (!tensors.held) return nullptr;
    pybind11::gil_scoped_release no_gil;
    at::AutoDispatchBelowAutograd below_autograd;
    out = op.call(tensors.v, static_cast<int64_t>(dim));
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

// split_fast(input: Tensor, sizes: list[int], dim: int) -> tuple[Tensor, ...] | None.
PyObject* split_fast(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject* obj = nullptr;
  PyObject* seq = nullptr;
  long long dim = 0;
  if (!PyArg_ParseTuple(args, "OOL", &obj, &seq, &dim)) return nullptr;
  if (!(PyList_CheckExact(seq) || PyTuple_CheckExact(seq)) || !tls_is_plain()) Py_RETURN_NONE;
  const at::Tensor* input = nullptr;
  if (!plain(obj, at::GradMode::is_enabled(), &input)) Py_RETURN_NONE;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject** items = PySequence_Fast_ITEMS(seq);
  std::vector<c10::SymInt> sizes;
  sizes.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!PyLong_CheckExact(items[i])) Py_RETURN_NONE;
    const long long v = PyLong_AsLongLong(items[i]);
    if (v == -1 && PyErr_Occurred()) return nullptr;
    sizes.emplace_back(static_cast<int64_t>(v));
  }
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("tensorops::split", "")
                       .typed<std::vector<at::Tensor>(const at::Tensor&, c10::SymIntArrayRef, int64_t)>();
  std::vector<at::Tensor> outs;
  if (input->numel() * static_cast<int64_t>(input->itemsize()) < kKeepGilBytes) {
    // a small copy keeps the GIL, as cat_fast does (releasing and taking it back costs more than the copy)
    at::AutoDispatchBelowAutograd below_autograd;
    outs = op.call(*input, sizes, static_cast<int64_t>(dim));
  } else {
    pybind11::gil_scoped_release no_gil;
    at::AutoDispatchBelowAutograd below_autograd;
    outs = op.call(*input, sizes, static_cast<int64_t>(dim));
  }
  PyObject* tuple = PyTuple_New(static_cast<Py_ssize_t>(outs.size()));
  if (!tuple) return nullptr;
  for (size_t i = 0; i < outs.size(); ++i) {
    PyObject* o = THPVariable_Wrap(std::move(outs[i]));
    if (!o) {
      Py_DECREF(tuple);
      return nullptr;
    }
    PyTuple_SET_ITEM(tuple, static_cast<Py_ssize_t>(i), o);
  }
  return tuple;
  END_HANDLE_TH_ERRORS
}

TORCH_LIBRARY_IMPL(tensorops, CPU, m) {
  m.impl("cat", &cat_cpu);
  m.impl("split", &split_cpu);
}

}  // namespace tensorops
