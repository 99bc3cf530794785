// The Python module tensorops._C: build information and the lean eager entry points. Importing it loads the
// library, whose static initializers register every op (schemas: tensorops.cpp; kernels: cpu/, cuda/).
#include <Python.h>

#include "tensorops/batch_cache.h"
#include "tensorops/cpu_isa.h"
#include "tensorops/decode_report.h"
#include "tensorops/jpeg.h"
#include "tensorops/plan.h"

// ----- fast eager entry points (csrc/cpu/py_entry.cpp) ------------------------------------------------------
namespace tensorops {
PyObject* cat_fast(PyObject*, PyObject*);
PyObject* split_fast(PyObject*, PyObject*);
PyObject* normalize_fast(PyObject*, PyObject*);
PyObject* clamp_fast(PyObject*, PyObject*);
PyObject* native_below(PyObject*, PyObject*);
PyObject* parallel_stats(PyObject*, PyObject*);
PyObject* force_thread_policy(PyObject*, PyObject*);
}  // namespace tensorops

// ----- build information ----------------------------------------------------------------------------------
namespace {

PyObject* build_info(PyObject*, PyObject*) {
#ifdef TENSOROPS_WITH_CUDA
  PyObject* cuda = Py_True;
#else
  PyObject* cuda = Py_False;
#endif
  // max_kernel_dims: the most dimensions a kernel's iteration plan holds; tensors with more go to native torch
  // libjpeg: the libjpeg-turbo version the decode op's partial decode was built with ("" without it);
  // jpeg_kinds: the JPEG kinds it decodes itself (the others go through the fallback decoder, Pillow)
  return Py_BuildValue("{s:s,s:s,s:O,s:s,s:i,s:s,s:s}", "version", TENSOROPS_VERSION, "torch",
                       TENSOROPS_TORCH_VERSION, "cuda", cuda, "cuda_archs", TENSOROPS_CUDA_ARCHS, "max_kernel_dims",
                       static_cast<int>(tensorops::kMaxPlanDims), "libjpeg", tensorops::jpeg::version(),
                       "jpeg_kinds", tensorops::jpeg::kinds());
}

// cpu_isa() -> "avx512" | "avx2" | "base": the build of the CPU loops in use (cpu_isa.h; TENSOROPS_CPU_ISA caps it).
PyObject* cpu_isa(PyObject*, PyObject*) { return PyUnicode_FromString(tensorops::cpu_isa_name()); }

// batch_cache_stats() -> dict; batch_cache_release() (tensorops.empty_cache()): the cache of large CPU outputs
// (batch_cache.h).
PyObject* batch_cache_stats(PyObject*, PyObject*) {
  const tensorops::batch_cache::Stats s = tensorops::batch_cache::stats();
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L}", "hits", static_cast<long long>(s.hits), "misses",
                       static_cast<long long>(s.misses), "cached_blocks", static_cast<long long>(s.cached_blocks),
                       "cached_bytes", static_cast<long long>(s.cached_bytes), "evicted",
                       static_cast<long long>(s.evicted), "trimmed", static_cast<long long>(s.trimmed));
}

PyObject* batch_cache_release(PyObject*, PyObject*) {
  tensorops::batch_cache::release();
  Py_RETURN_NONE;
}

// decode_notes() -> [(sample, status, text)]: what the last decode op call on this thread said about its samples
// that did not simply decode (decode_report.h); taken once.
PyObject* decode_notes(PyObject*, PyObject*) {
  std::vector<tensorops::decode_report::Note> notes;
  notes.swap(tensorops::decode_report::last());
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(notes.size()));
  if (list == nullptr) return nullptr;
  for (size_t k = 0; k < notes.size(); ++k) {
    const auto& n = notes[k];
    PyObject* item = Py_BuildValue("(Lis)", static_cast<long long>(n.sample), static_cast<int>(n.status),
                                   n.text.c_str());
    if (item == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(k), item);
  }
  return list;
}

PyObject* decode_whole_row_redecodes(PyObject*, PyObject*) {
  return PyLong_FromLongLong(tensorops::decode_report::whole_row_redecodes());
}

// jpeg_dc_scan_decodes() -> int: progressive regions decoded at 1/8 without their unread scans (jpeg.h).
PyObject* jpeg_dc_scan_decodes(PyObject*, PyObject*) {
  return PyLong_FromLongLong(static_cast<long long>(tensorops::jpeg::dc_scan_decodes()));
}

PyMethodDef methods[] = {
    {"build_info", build_info, METH_NOARGS, "How this extension was built."},
    {"cpu_isa", cpu_isa, METH_NOARGS, "The build of the CPU loops in use: avx512, avx2 or base."},
    {"cat_fast", tensorops::cat_fast, METH_VARARGS,
     "cat_fast(tensors, dim): tensorops::cat below autograd for plain tensors that need no gradient, else None."},
    {"split_fast", tensorops::split_fast, METH_VARARGS,
     "split_fast(input, sizes, dim): tensorops::split below autograd when no gradient is needed, else None."},
    {"normalize_fast", tensorops::normalize_fast, METH_VARARGS,
     "normalize_fast(input, mean, std, dim, dtype, scale, memory_format): tensorops::normalize below autograd "
     "for a plain tensor and numbers as statistics, else None."},
    {"clamp_fast", tensorops::clamp_fast, METH_VARARGS,
     "clamp_fast(input, min, max, native_below=None): tensorops::clamp / clamp_scalar below autograd for plain "
     "tensors and numbers (torch.clamp for fewer elements than native_below, default: crossover.h), else None."},
    {"native_below", tensorops::native_below, METH_NOARGS,
     "native_below(): the element counts below which clamp_fast runs torch.clamp (csrc/include/tensorops/crossover.h)."},
    {"parallel_stats", tensorops::parallel_stats, METH_NOARGS,
     "parallel_stats(): what the CPU thread policy (csrc/include/tensorops/parallel.h) decided in this process."},
    {"_force_thread_policy", tensorops::force_thread_policy, METH_O,
     "_force_thread_policy(mode): test hook; 0 the CPU thread policy decides, 1 one thread, 2 all threads. "
     "Returns the previous mode."},
    {"batch_cache_stats", batch_cache_stats, METH_NOARGS,
     "batch_cache_stats(): this process's hits, misses, what the cache of large CPU outputs holds, and the blocks "
     "its budget evicted and its idle trim gave back (batch_cache.h)."},
    {"batch_cache_release", batch_cache_release, METH_NOARGS,
     "batch_cache_release(): gives every block the cache of large CPU outputs holds back to the system "
     "(tensorops.empty_cache())."},
    {"decode_notes", decode_notes, METH_NOARGS,
     "decode_notes(): [(sample, status, text)] of the last decode op call on this thread (decode_report.h)."},
    {"decode_whole_row_redecodes", decode_whole_row_redecodes, METH_NOARGS,
     "decode_whole_row_redecodes(): images decoded again in full after a libjpeg warning in a partial decode."},
    {"jpeg_dc_scan_decodes", jpeg_dc_scan_decodes, METH_NOARGS,
     "jpeg_dc_scan_decodes(): progressive JPEG regions decoded at 1/8 scale without the AC scans they never read."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", "tensorops' compiled kernels", -1, methods};

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__C() { return PyModule_Create(&module_def); }
