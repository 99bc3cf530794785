// What decode_resized_crop_mirror_normalize's CPU op found out about its samples, beyond the batch: each
// sample's status (the op's second output) and, for the samples that are not kOk, the text that says why (the
// error, or libjpeg's first warning). Tensors carry the statuses; the texts stay on the calling thread until
// tensorops._C.decode_notes() takes them (tensorops/decode.py, right after the call), so Python can name the file
// in its warning or its drop message.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tensorops {
namespace decode_report {

// A sample's status (int8).
constexpr int8_t kOk = 0;
constexpr int8_t kFailed = 1;       // not decoded (corrupt, truncated with strict, not an image): its output is fill
constexpr int8_t kWarned = 2;       // decoded as decode_jpeg decodes it, with libjpeg warnings (the text: the first)
constexpr int8_t kUnsupported = 3;  // a JPEG kind this libjpeg does not decode: output fill, for the fallback

struct Note {
  int64_t sample;
  int8_t status;
  std::string text;
};

// The notes of the last call on this thread (replaced by each call).
std::vector<Note>& last();

// Images this process decoded a second time with every column and the rows above their region, after libjpeg
// warned during their partial decode (tensorops._C.decode_whole_row_redecodes(), for the tests).
int64_t whole_row_redecodes();

}  // namespace decode_report
}  // namespace tensorops
