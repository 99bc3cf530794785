// libjpeg-turbo's header read and partial decode behind jpeg.h's plain-data interface.
//
// The one frame that calls setjmp (frame()) and the functions it calls hold only plain data: a longjmp out of
// libjpeg lands there, jpeg_destroy_decompress frees everything libjpeg allocated, and the function returns a
// code. No C++ object with a destructor lives in them, so nothing leaks and nothing is skipped.
#include "tensorops/jpeg.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#ifdef TENSOROPS_WITH_LIBJPEG
#include <csetjmp>
// jpeglib.h needs size_t and FILE declared first
#include <jpeglib.h>
#endif

namespace tensorops {
namespace jpeg {

void cmyk_to_rgb(uint8_t* p, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* s = p + 4 * i;
    const int nk = s[3];  // 255 - (255 - stored K): Pillow inverts every channel first
    uint8_t* d = p + 3 * i;
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - s[c]) * nk + 128;  // MULDIV255(C, 255 - K)
      const int v = nk - (((t >> 8) + t) >> 8);
      d[c] = static_cast<uint8_t>(v < 0 ? 0 : v);
    }
  }
}

#ifdef TENSOROPS_WITH_LIBJPEG

namespace {

// A header declaring more scans than this is refused (a progressive file of thousands of tiny scans makes the
// decoder loop for minutes; libjpeg-turbo's own tools use a limit of this kind).
constexpr int kMaxScans = 1000;

struct ErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char* message;
  bool too_many_scans;
};

void on_error(j_common_ptr cinfo) {
  ErrorManager* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (e->too_many_scans)
    std::snprintf(e->message, kMessageBytes, "the JPEG has more than %d scans", kMaxScans);
  else
    (*cinfo->err->format_message)(cinfo, e->message);
  longjmp(e->jump, 1);
}

// Warnings (msg_level -1: corrupt data, a premature end of the file) are errors; trace messages are ignored.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

void on_progress(j_common_ptr cinfo) {
  j_decompress_ptr d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    reinterpret_cast<ErrorManager*>(cinfo->err)->too_many_scans = true;
    on_error(cinfo);
  }
}

// What the frame sets up before jpeg_read_header.
void prepare(jpeg_decompress_struct* cinfo, ErrorManager* err, char* message) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = on_error;
  err->pub.emit_message = on_message;
  err->message = message;
  err->too_many_scans = false;
}

void start(jpeg_decompress_struct* cinfo, jpeg_progress_mgr* progress, const uint8_t* data, size_t size) {
  progress->progress_monitor = on_progress;
  cinfo->progress = progress;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
}

// The header's checks: 0, or 1 with `message` set (the caller destroys cinfo).
int check_header(jpeg_decompress_struct* cinfo, int64_t max_pixels, Info* info, char* message) {
  const int64_t H = cinfo->image_height, W = cinfo->image_width;
  if (H <= 0 || W <= 0) {
    std::snprintf(message, kMessageBytes, "the JPEG declares a %lldx%lld image", static_cast<long long>(H),
                  static_cast<long long>(W));
    return 1;
  }
  if (max_pixels > 0 && H * W > max_pixels) {
    std::snprintf(message, kMessageBytes,
                  "the JPEG declares %lldx%lld = %lld pixels, more than max_pixels = %lld (a decompression bomb?)",
                  static_cast<long long>(H), static_cast<long long>(W), static_cast<long long>(H * W),
                  static_cast<long long>(max_pixels));
    return 1;
  }
  const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  info->height = H;
  info->width = W;
  info->components = cmyk ? 4 : 3;
  info->progressive = cinfo->progressive_mode != 0;
  return 0;
}

// The rows of region r (the header read): 0, or 1 with `message` set. Errors inside libjpeg longjmp to frame().
int read_region(jpeg_decompress_struct* cinfo, Region* r, char* message) {
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned int>(r->denom);
  jpeg_start_decompress(cinfo);
  JDIMENSION x0 = static_cast<JDIMENSION>(r->x0), w = static_cast<JDIMENSION>(r->x1 - r->x0);
  if (w < cinfo->output_width) jpeg_crop_scanline(cinfo, &x0, &w);
  const size_t stride = static_cast<size_t>(w) * static_cast<size_t>(cinfo->output_components);
  const size_t rows = static_cast<size_t>(r->y1 - r->y0);
  if (stride * rows > r->capacity) {
    std::snprintf(message, kMessageBytes, "internal: the decoded region needs %zu bytes, %zu were reserved",
                  stride * rows, r->capacity);
    return 1;
  }
  if (r->y0 > 0) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(r->y0));
  for (size_t y = 0; y < rows;) {
    JSAMPROW row = r->buffer + y * stride;
    const JDIMENSION got = jpeg_read_scanlines(cinfo, &row, 1);
    if (got == 0) {  // with a memory source this means no data: libjpeg warned already (an error here)
      std::snprintf(message, kMessageBytes, "the JPEG ended before row %zu", static_cast<size_t>(r->y0) + y);
      return 1;
    }
    y += got;
  }
  r->dx0 = x0;
  r->width = w;
  r->stride = static_cast<int64_t>(stride);
  return 0;
}

// The one frame that calls setjmp: the header (region == nullptr: nothing else), or the header and then the
// region's rows, decoded at 1/region->denom scale.
int frame(const uint8_t* data, size_t size, int64_t max_pixels, Info* info, Region* r, char* message) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  prepare(&cinfo, &err, message);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  start(&cinfo, &progress, data, size);
  jpeg_read_header(&cinfo, TRUE);
  int rc = check_header(&cinfo, max_pixels, info, message);
  if (rc == 0 && r != nullptr) rc = read_region(&cinfo, r, message);
  jpeg_destroy_decompress(&cinfo);  // the rows below a region are never decoded
  return rc;
}

}  // namespace

bool available() { return true; }

const char* version() {
#ifdef LIBJPEG_TURBO_VERSION
#define TENSOROPS_STR2(x) #x
#define TENSOROPS_STR(x) TENSOROPS_STR2(x)
  return TENSOROPS_STR(LIBJPEG_TURBO_VERSION);
#else
  return "libjpeg";
#endif
}

int read_info(const uint8_t* data, size_t size, int64_t max_pixels, Info* info, char* message) {
  if (size == 0) {
    std::snprintf(message, kMessageBytes, "the data is empty");
    return 1;
  }
  return frame(data, size, max_pixels, info, nullptr, message);
}

size_t capacity_for(const Info& info, int64_t y0, int64_t y1, int64_t x0, int64_t x1) {
  // jpeg_crop_scanline moves x0 down to the iMCU grid: at most 4 (sampling) x 8 (DCT) - 1 columns
  const int64_t w = std::min<int64_t>(x1 - x0 + 32, info.width);
  return static_cast<size_t>((y1 - y0) * w * info.components);
}

int decode_region(const uint8_t* data, size_t size, const Info& info, Region* region, char* message) {
  if (size == 0) {
    std::snprintf(message, kMessageBytes, "the data is empty");
    return 1;
  }
  Info seen;
  const int rc = frame(data, size, region->max_pixels, &seen, region, message);
  if (rc == 0 && (seen.height != info.height || seen.width != info.width || seen.components != info.components)) {
    std::snprintf(message, kMessageBytes, "internal: the header changed between reads");
    return 1;
  }
  return rc;
}

#else  // built without libjpeg

namespace {
int unavailable(char* message) {
  std::snprintf(message, kMessageBytes, "tensorops was built without libjpeg-turbo");
  return 1;
}
}  // namespace

bool available() { return false; }
const char* version() { return ""; }
int read_info(const uint8_t*, size_t, int64_t, Info*, char* message) { return unavailable(message); }
size_t capacity_for(const Info&, int64_t, int64_t, int64_t, int64_t) { return 0; }
int decode_region(const uint8_t*, size_t, const Info&, Region*, char* message) { return unavailable(message); }

#endif

}  // namespace jpeg
}  // namespace tensorops
