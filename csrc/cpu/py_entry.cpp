// The lean eager entry points (tensorops._C.*_fast), for CPU and CUDA tensors alike: for the common call (plain
// tensors that autograd need not see, arguments as plain Python numbers, lists and tensors) they check the
// arguments in C++ and call the registered op below autograd, without the Python wrapper's argument handling and
// torch.ops' boxed call (a few microseconds, more than the whole kernel for a tensor of a few hundred elements;
// for cat, about 80 ns per tensor of boxed argument parsing, and the Python autograd kernel that
// torch.library.register_autograd installs would box and unbox every tensor again). Anything they are not sure
// of returns None, and the Python wrapper takes its full path (and raises its errors). The op still runs through
// the dispatcher, so the profiler shows tensorops::normalize / clamp / cat / split.
//
// Measured on the 2-core build machine (torch 2.14.1; float32 (64,) pieces), against the route they replace
// (the registered op below autograd, called from Python): cat of 2 tensors 2.2 vs 11.8 us, of 100 4.9 vs 47 us,
// of 10,000 0.66 vs 7.5 ms; split into 2 pieces 5.6 vs 13.2 us, into 100 90 vs 100 us.
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/autograd/python_variable.h>

#include "py_entry.h"
#include "tensorops/crossover.h"
#include "tensorops/parallel.h"

namespace tensorops {
namespace {

using py_entry::plain;
using py_entry::plain_number;
using py_entry::tls_is_plain;

// Up to this many bytes of traffic a call keeps the GIL (releasing and retaking it costs more than the work).
constexpr int64_t kKeepGilWorkBytes = int64_t{256} << 10;
// Below this many input bytes cat_fast / split_fast copy without releasing the GIL (a few ms of copying at most;
// numpy.concatenate never releases it): releasing it for a list needs a tuple snapshot of the list, which costs
// about 10% of a cat of 10,000 small tensors. Tuples and larger copies release the GIL.
constexpr int64_t kKeepGilBytes = int64_t{16} << 20;

bool is_float(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// mean / std as a number or a list/tuple of numbers, finite (std non-zero); false: leave it to Python.
bool stat_values(PyObject* obj, bool is_std, std::vector<double>& out) {
  double v = 0;
  if (plain_number(obj, &v)) {
    out.assign(1, v);
  } else if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
    if (n == 0) return false;
    PyObject** items = PySequence_Fast_ITEMS(obj);
    out.resize(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i)
      if (!plain_number(items[i], &out[static_cast<size_t>(i)])) return false;
  } else {
    return false;
  }
  for (double x : out)
    if (!std::isfinite(x) || (is_std && x == 0)) return false;
  return true;
}

// normalize.py's _check_coefficients: every coefficient finite in the accumulation type.
template <typename acc_t>
bool coefficients_ok(const std::vector<double>& mean, const std::vector<double>& std, double scale) {
  const double tiny = std::numeric_limits<acc_t>::min(), big = std::numeric_limits<acc_t>::max();
  const size_t n = std::max(mean.size(), std.size());
  for (size_t c = 0; c < n; ++c) {
    const double s = std[std.size() > 1 ? c : 0], m = mean[mean.size() > 1 ? c : 0];
    if (std::abs(s) < tiny || !(std::abs(scale / s) <= big && std::abs(m / s) <= big)) return false;
  }
  return true;
}

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

// f() below autograd, with the GIL released unless `keep_gil`.
template <typename F>
auto call_op(bool keep_gil, const F& f) {
  at::AutoDispatchBelowAutograd below_autograd;
  if (keep_gil) return f();
  pybind11::gil_scoped_release no_gil;
  return f();
}

}  // namespace

// normalize_fast(input, mean, std, dim, dtype, scale, memory_format) -> Tensor | None
PyObject* normalize_fast(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject *obj, *mean_obj, *std_obj, *dim_obj, *dtype_obj, *scale_obj, *mf_obj;
  if (!PyArg_UnpackTuple(args, "normalize_fast", 7, 7, &obj, &mean_obj, &std_obj, &dim_obj, &dtype_obj, &scale_obj,
                         &mf_obj))
    return nullptr;
  const at::Tensor* input = nullptr;
  if (!tls_is_plain() || !plain(obj, at::GradMode::is_enabled(), &input)) Py_RETURN_NONE;
  const at::ScalarType in_t = input->scalar_type();
  const int64_t ndim = input->dim();
  if (!(in_t == at::kByte || is_float(in_t)) || ndim < 1 || ndim > 16 || !PyLong_CheckExact(dim_obj))
    Py_RETURN_NONE;
  int64_t dim = PyLong_AsLongLong(dim_obj);
  if (dim == -1 && PyErr_Occurred()) return nullptr;
  if (dim < -ndim || dim >= ndim) Py_RETURN_NONE;
  if (dim < 0) dim += ndim;
  at::ScalarType dtype = in_t == at::kByte ? at::kFloat : in_t;
  if (dtype_obj != Py_None) {
    if (!THPDtype_Check(dtype_obj)) Py_RETURN_NONE;
    dtype = reinterpret_cast<THPDtype*>(dtype_obj)->scalar_type;
    if (!is_float(dtype)) Py_RETURN_NONE;
  }
  double scale = in_t == at::kByte ? 1.0 / 255.0 : 1.0;
  if (scale_obj != Py_None && (!plain_number(scale_obj, &scale) || !std::isfinite(scale))) Py_RETURN_NONE;
  if (!THPMemoryFormat_Check(mf_obj)) Py_RETURN_NONE;
  const at::MemoryFormat mf = reinterpret_cast<THPMemoryFormat*>(mf_obj)->memory_format;
  if (!(mf == at::MemoryFormat::Preserve || mf == at::MemoryFormat::Contiguous ||
        (mf == at::MemoryFormat::ChannelsLast && ndim == 4) || (mf == at::MemoryFormat::ChannelsLast3d && ndim == 5)))
    Py_RETURN_NONE;
  std::vector<double> mean, std;
  if (!stat_values(mean_obj, false, mean) || !stat_values(std_obj, true, std)) Py_RETURN_NONE;
  const int64_t channels = input->size(dim);
  for (const auto* v : {&mean, &std})
    if (v->size() != 1 && static_cast<int64_t>(v->size()) != channels) Py_RETURN_NONE;
  if (!(dtype == at::kDouble ? coefficients_ok<double>(mean, std, scale) : coefficients_ok<float>(mean, std, scale)))
    Py_RETURN_NONE;
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("tensorops::normalize", "")
                       .typed<at::Tensor(const at::Tensor&, c10::ArrayRef<double>, c10::ArrayRef<double>, int64_t,
                                         double, at::ScalarType, at::MemoryFormat)>();
  const int64_t work = input->numel() * static_cast<int64_t>(input->itemsize() + c10::elementSize(dtype));
  at::Tensor out =
      call_op(work < kKeepGilWorkBytes, [&] { return op.call(*input, mean, std, dim, scale, dtype, mf); });
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

namespace {
bool clamp_dtype(at::ScalarType t) {
  switch (t) {
    case at::kBool: case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble:
      return true;
    default:
      return false;
  }
}

// A bound: 0 absent, 1 a number (as torch's Scalar: int stays int), 2 a tensor; -1 leave it to Python.
int bound_kind(PyObject* obj, const at::Tensor& input, bool grad_mode, std::optional<at::Scalar>& num,
               std::optional<at::Tensor>& tensor) {
  if (obj == Py_None) return 0;
  if (PyFloat_CheckExact(obj)) {
    num = at::Scalar(PyFloat_AS_DOUBLE(obj));
    return 1;
  }
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return -1;
    }
    num = at::Scalar(static_cast<int64_t>(v));
    return 1;
  }
  const at::Tensor* t = nullptr;
  if (!plain(obj, grad_mode, &t) || t->device() != input.device() || !clamp_dtype(t->scalar_type())) return -1;
  // broadcastable with input (the bound may be the larger one)
  const int64_t nd = std::max(t->dim(), input.dim());
  for (int64_t i = 1; i <= nd; ++i) {
    const int64_t a = i <= t->dim() ? t->size(-i) : 1, b = i <= input.dim() ? input.size(-i) : 1;
    if (a != b && a != 1 && b != 1) return -1;
  }
  tensor = *t;
  return 2;
}
}  // namespace

// clamp_fast(input, min, max, native_below=None) -> Tensor | None. Inputs with fewer elements than
// native_below (default: the measured crossover.h numbers) run torch.clamp itself.
PyObject* clamp_fast(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject *obj, *min_obj, *max_obj, *below_obj = Py_None;
  if (!PyArg_UnpackTuple(args, "clamp_fast", 3, 4, &obj, &min_obj, &max_obj, &below_obj)) return nullptr;
  const bool grad_mode = at::GradMode::is_enabled();
  const at::Tensor* input = nullptr;
  if (!tls_is_plain() || !plain(obj, grad_mode, &input) || !clamp_dtype(input->scalar_type())) Py_RETURN_NONE;
  std::optional<at::Scalar> nlo, nhi;
  std::optional<at::Tensor> tlo, thi;
  const int klo = bound_kind(min_obj, *input, grad_mode, nlo, tlo);
  const int khi = bound_kind(max_obj, *input, grad_mode, nhi, thi);
  // absent both, unsure of one, or a number mixed with a tensor: Python's rules and messages
  if (klo < 0 || khi < 0 || (klo == 0 && khi == 0) || (klo && khi && klo != khi)) Py_RETURN_NONE;
  const bool tensors = klo == 2 || khi == 2;
  int64_t below = tensors ? crossover::kClampTensorNativeBelow : crossover::kClampScalarNativeBelow;
  if (below_obj != Py_None) {
    below = PyLong_AsLongLong(below_obj);
    if (below == -1 && PyErr_Occurred()) return nullptr;
  }
  if (input->numel() < below) {  // tiny: torch.clamp's own call is cheaper than the op's
    try {  // below autograd, as the op would run: nothing here needs a graph (plain() checked)
      at::AutoDispatchBelowAutograd below_autograd;
      return THPVariable_Wrap(tensors ? at::clamp(*input, tlo, thi) : at::clamp(*input, nlo, nhi));
    } catch (const c10::Error&) {
      Py_RETURN_NONE;  // the Python wrapper raises its own message
    }
  }
  const int64_t work = 2 * input->numel() * static_cast<int64_t>(input->itemsize());
  at::Tensor out;
  if (tensors) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("tensorops::clamp", "")
                         .typed<at::Tensor(const at::Tensor&, const std::optional<at::Tensor>&,
                                           const std::optional<at::Tensor>&)>();
    out = call_op(work < kKeepGilWorkBytes, [&] { return op.call(*input, tlo, thi); });
  } else {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("tensorops::clamp_scalar", "")
                         .typed<at::Tensor(const at::Tensor&, const std::optional<at::Scalar>&,
                                           const std::optional<at::Scalar>&)>();
    out = call_op(work < kKeepGilWorkBytes, [&] { return op.call(*input, nlo, nhi); });
  }
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}


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
  // A small copy from a list keeps the GIL: nothing can change the list meanwhile, and no snapshot is needed.
  // Without the GIL another thread could change a list: a tuple snapshot keeps the inputs alive.
  const bool keep_gil = PyList_CheckExact(seq) && bytes < kKeepGilBytes;
  if (!keep_gil) {
    tensors.hold(PyTuple_CheckExact(seq) ? (Py_INCREF(seq), seq) : PySequence_Tuple(seq));
    if (!tensors.held) return nullptr;
  }
  at::Tensor out = call_op(keep_gil, [&] { return op.call(tensors.v, static_cast<int64_t>(dim)); });
  return THPVariable_Wrap(std::move(out));
  END_HANDLE_TH_ERRORS
}

// split_fast(input: Tensor, split_size_or_sections: int | list[int] | tuple[int], dim: int)
//   -> tuple[Tensor, ...] | None. The arguments as the user gave them (dim may be negative); anything unusual or
// wrong (other types, a dim out of range, negative sizes, sizes that do not add up) returns None, and the Python
// wrapper's checks raise torch's error.
PyObject* split_fast(PyObject* /*self*/, PyObject* args) {
  HANDLE_TH_ERRORS
  PyObject* obj = nullptr;
  PyObject* spec = nullptr;
  PyObject* dim_obj = nullptr;
  if (!PyArg_UnpackTuple(args, "split_fast", 3, 3, &obj, &spec, &dim_obj)) return nullptr;
  if (!PyLong_CheckExact(dim_obj) || !tls_is_plain()) Py_RETURN_NONE;
  const at::Tensor* input = nullptr;
  if (!plain(obj, at::GradMode::is_enabled(), &input)) Py_RETURN_NONE;
  const int64_t ndim = input->dim();
  long long dim = PyLong_AsLongLong(dim_obj);
  if (dim == -1 && PyErr_Occurred()) return nullptr;
  if (ndim == 0 || dim < -ndim || dim >= ndim) Py_RETURN_NONE;
  if (dim < 0) dim += ndim;
  const int64_t dim_size = input->size(dim);
  std::vector<c10::SymInt> sizes;
  if (PyLong_CheckExact(spec)) {  // chunks of this size, a smaller last one (torch.split)
    const long long size = PyLong_AsLongLong(spec);
    if (size == -1 && PyErr_Occurred()) return nullptr;
    if (size <= 0) Py_RETURN_NONE;
    const int64_t count = std::max<int64_t>((dim_size + size - 1) / size, 1);
    sizes.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i + 1 < count; ++i) sizes.emplace_back(static_cast<int64_t>(size));
    sizes.emplace_back(dim_size - static_cast<int64_t>(size) * (count - 1));
  } else if (PyList_CheckExact(spec) || PyTuple_CheckExact(spec)) {
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(spec);
    PyObject** items = PySequence_Fast_ITEMS(spec);
    sizes.reserve(static_cast<size_t>(n));
    int64_t sum = 0;
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!PyLong_CheckExact(items[i])) Py_RETURN_NONE;
      const long long v = PyLong_AsLongLong(items[i]);
      if (v == -1 && PyErr_Occurred()) return nullptr;
      if (v < 0 || v > dim_size) Py_RETURN_NONE;
      sum += v;
      sizes.emplace_back(static_cast<int64_t>(v));
    }
    if (sum != dim_size) Py_RETURN_NONE;
  } else {
    Py_RETURN_NONE;
  }
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("tensorops::split", "")
                       .typed<std::vector<at::Tensor>(const at::Tensor&, c10::SymIntArrayRef, int64_t)>();
  // a small copy keeps the GIL, as cat_fast does (releasing and taking it back costs more than the copy)
  const bool keep_gil = input->numel() * static_cast<int64_t>(input->itemsize()) < kKeepGilBytes;
  std::vector<at::Tensor> outs =
      call_op(keep_gil, [&] { return op.call(*input, sizes, static_cast<int64_t>(dim)); });
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

// native_below() -> {"clamp_scalar": n, "clamp": n, "clamp_grad": n}: the crossover.h numbers this build uses.
PyObject* native_below(PyObject* /*self*/, PyObject* /*args*/) {
  return Py_BuildValue("{s:L,s:L,s:L}", "clamp_scalar", static_cast<long long>(crossover::kClampScalarNativeBelow),
                       "clamp", static_cast<long long>(crossover::kClampTensorNativeBelow), "clamp_grad",
                       static_cast<long long>(crossover::kClampGradNativeBelow));
}

// parallel_stats() -> dict: what parallel.h's policy decided in this process (counts since start; the time the
// callers were descheduled during their shares; the recent ratio of the time lost to the caller's own share, in
// 1/1024ths, and the ratio up to which passes go parallel with torch's current thread count; the current probe
// gap; how many regions were timed and recorded), for the benchmarks' JSON and the tests.
PyObject* parallel_stats(PyObject* /*self*/, PyObject* /*args*/) {
  parallel_detail::State& s = parallel_detail::state();
  auto get = [](const std::atomic<int64_t>& a) { return static_cast<long long>(a.load(std::memory_order_relaxed)); };
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "parallel_passes", get(s.parallel_passes),
                       "serial_passes", get(s.serial_passes), "probes", get(s.probes), "costly_regions",
                       get(s.costly_regions), "descheduled_ns", get(s.descheduled_ns),
                       "recent_wait_ratio_1024", static_cast<long long>(parallel_detail::recent_ratio()),
                       "paying_ratio_1024", static_cast<long long>(parallel_detail::paying_ratio(at::get_num_threads())),
                       "probe_gap_ns", get(s.probe_gap_ns), "recorded_regions", get(s.recorded_regions));
}

// _force_thread_policy(mode) -> the previous mode. A test hook: 0 lets parallel.h's policy decide (the default), 1
// makes every pass that the policy would decide run on one thread, 2 on all of torch's intra-op threads (passes
// below kParallelMinBytes, one intra-op thread, or inside a parallel region stay on one thread).
PyObject* force_thread_policy(PyObject* /*self*/, PyObject* arg) {
  const long mode = PyLong_AsLong(arg);
  if (mode == -1 && PyErr_Occurred()) return nullptr;
  if (mode < 0 || mode > 2) {
    PyErr_SetString(PyExc_ValueError, "_force_thread_policy: mode must be 0 (the policy), 1 (one thread) or 2 (all)");
    return nullptr;
  }
  return PyLong_FromLong(parallel_detail::state().forced.exchange(static_cast<int>(mode)));
}
}  // namespace tensorops
