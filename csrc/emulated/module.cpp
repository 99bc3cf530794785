// The emulated extension's Python module (built by tests/_emulated.py, never shipped). The extension is
// tensorops' schemas as the library tensorops_emu (tensorops.cpp compiled with TENSOROPS_LIBRARY=tensorops_emu),
// the host code (csrc/host) and the CUDA launch code (csrc/cuda/*.cu compiled as C++ with TENSOROPS_EMULATED):
// torch.ops.tensorops_emu.<op> on CPU tensors runs the CUDA kernels on the emulated device (emu/device.h).
// This module lets the tests read and steer the device:
//   events() -> list[str]      what happened since clear_events(): "launch <kernel> grid=.. block=.. smem=.. ran=..",
//                              "pinned_alloc [capturing]", "copy_to_device async|blocking"
//   clear_events()
//   set_capturing(bool)        what cuda::stream_capturing() answers (the CUDA graph capture paths)
//   set_block_filter(list)     run only these blocks of each launch (negative: from the end); [] runs all
#include <Python.h>

#include <string>
#include <vector>

#define TENSOROPS_EMULATED 1
#include "tensorops/emu/device.h"

namespace {

using tensorops::emu::record;

PyObject* events(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(record().m);
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(record().events.size()));
  for (size_t i = 0; i < record().events.size(); ++i)
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), PyUnicode_FromString(record().events[i].c_str()));
  return list;
}

PyObject* clear_events(PyObject*, PyObject*) {
  std::lock_guard<std::mutex> lock(record().m);
  record().events.clear();
  Py_RETURN_NONE;
}

PyObject* set_capturing(PyObject*, PyObject* arg) {
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return nullptr;
  std::lock_guard<std::mutex> lock(record().m);
  record().capturing = on != 0;
  Py_RETURN_NONE;
}

PyObject* set_block_filter(PyObject*, PyObject* arg) {
  PyObject* seq = PySequence_Fast(arg, "set_block_filter: blocks must be a sequence of ints");
  if (seq == nullptr) return nullptr;
  std::vector<int64_t> blocks;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    const long long b = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
    if (b == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      return nullptr;
    }
    blocks.push_back(b);
  }
  Py_DECREF(seq);
  std::lock_guard<std::mutex> lock(record().m);
  record().block_filter = std::move(blocks);
  Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"events", events, METH_NOARGS, "What the emulated device did since clear_events()."},
    {"clear_events", clear_events, METH_NOARGS, "Forget the recorded events."},
    {"set_capturing", set_capturing, METH_O, "What cuda::stream_capturing() answers."},
    {"set_block_filter", set_block_filter, METH_O, "Run only these blocks of each launch ([]: all)."},
    {nullptr, nullptr, 0, nullptr},
};

#define TENSOROPS_STR2(x) #x
#define TENSOROPS_STR(x) TENSOROPS_STR2(x)
PyModuleDef module_def = {PyModuleDef_HEAD_INIT, TENSOROPS_STR(TORCH_EXTENSION_NAME),
                          "tensorops' CUDA kernels on the emulated device", -1, methods};

}  // namespace

#define TENSOROPS_CAT2(a, b) a##b
#define TENSOROPS_CAT(a, b) TENSOROPS_CAT2(a, b)
extern "C" __attribute__((visibility("default"))) PyObject* TENSOROPS_CAT(PyInit_, TORCH_EXTENSION_NAME)() {
  return PyModule_Create(&module_def);
}
