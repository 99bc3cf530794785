// resized_crop_mirror_normalize's CPU pass for ops whose images are not in memory before the call (the decode
// op): a SampleSource makes each sample's pixels readable on the thread that resamples it, right before, so the
// decoded region is still in cache and memory per thread is bounded by one region.
#pragma once
#include <cstdint>
#include <vector>

#include "tensorops/resize.h"
#include "tensorops/resize_host.h"

namespace tensorops {
namespace resize_cpu {

class SampleSource {
 public:
  virtual ~SampleSource() = default;
  // Points sample.src (the address of pixel (0, 0, 0)) and its strides at memory holding at least rows [y0, y1)
  // x columns [x0, x1) of the image, the pixels its filter reads (scratch: this thread's buffer, reused from one
  // sample to the next). False: the sample cannot be read (its output is filled with `fill`).
  virtual bool prepare(int64_t n, resize::Sample& sample, int64_t y0, int64_t y1, int64_t x0, int64_t x1,
                       std::vector<uint8_t>& scratch) = 0;
  // Bytes of memory traffic prepare() is worth for these many pixels (for parallel.h's policy).
  virtual int64_t cost(int64_t n, int64_t pixels) const = 0;
};

// The pass over r's samples, each prepared by `source` first, in parallel over samples.
void run_from(resize_host::Setup& r, double scale, double fill, SampleSource& source);

}  // namespace resize_cpu
}  // namespace tensorops
