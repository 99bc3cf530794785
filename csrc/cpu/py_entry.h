// Shared by the lean eager entry points (tensorops._C.*_fast, in py_entry.cpp): which Python arguments they may
// handle themselves. Everything else (subclasses, functorch and functionalization wrappers, tensors autograd
// must see, an active Python mode, tensors that are not plain dense strided ones) returns None to the Python
// wrapper, which takes its full path.
#pragma once
#include <Python.h>

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/python_variable.h>

namespace tensorops {
namespace py_entry {

// A plain CPU (or CUDA) tensor that autograd need not see: strided, not quantized, dense (torch's CPU / CUDA
// key, which nested, sparse, quantized, mkldnn and meta tensors lack); sets *out to it.
inline bool plain(PyObject* obj, bool grad_mode, at::Tensor const** out) {
  if (!THPVariable_CheckExact(obj)) return false;
  const at::Tensor& t = THPVariable_Unpack(obj);
  // autograd_meta() is null for a tensor that never required grad and has no forward-AD tangent: the common case
  // needs no call. A tangent (torch.autograd.forward_ad's one level, 0) is for the Python wrapper's route, which
  // gives the result its tangent; so the wrappers need not look at forward AD before calling an entry point.
  if (!t.defined()) return false;
  if (t.unsafeGetTensorImpl()->autograd_meta() != nullptr &&
      ((grad_mode && t.requires_grad()) || t._fw_grad(/*level=*/0).defined()))
    return false;
  static const c10::DispatchKeySet special({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                            c10::DispatchKey::FuncTorchBatched,
                                            c10::DispatchKey::FuncTorchGradWrapper,
                                            c10::DispatchKey::Functionalize});
  if (t.key_set().has_any(special)) return false;
  // quantized, sparse, nested and other layouts: not the kernels' business, torch's (through the Python wrapper)
  if (t.layout() != c10::kStrided || t.is_quantized()) return false;
#ifdef TENSOROPS_WITH_CUDA
  if (!t.key_set().has(c10::DispatchKey::CPU) && !t.key_set().has(c10::DispatchKey::CUDA)) return false;
#else
  if (!t.key_set().has(c10::DispatchKey::CPU)) return false;
#endif
  *out = &t;
  return true;
}

// No functorch transform, Python mode or functionalization active on this thread.
inline bool tls_is_plain() {
  static const c10::DispatchKeySet special({c10::DispatchKey::FuncTorchDynamicLayerFrontMode,
                                            c10::DispatchKey::FuncTorchDynamicLayerBackMode,
                                            c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                            c10::DispatchKey::PythonDispatcher, c10::DispatchKey::PreDispatch,
                                            c10::DispatchKey::Functionalize});
  return !c10::impl::tls_local_dispatch_key_set().included_.has_any(special);
}

// A Python float or int (not bool) as a double; false for anything else (or an int too large).
inline bool plain_number(PyObject* obj, double* out) {
  if (PyFloat_CheckExact(obj)) {
    *out = PyFloat_AS_DOUBLE(obj);
    return true;
  }
  if (PyLong_CheckExact(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return false;
    }
    *out = static_cast<double>(v);
    return true;
  }
  return false;
}

}  // namespace py_entry
}  // namespace tensorops
