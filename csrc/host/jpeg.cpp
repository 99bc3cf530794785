// libjpeg-turbo's header read and partial decode behind jpeg.h's plain-data interface.
//
// The one frame that calls setjmp (frame()) and the functions it calls hold only plain data: a longjmp out of
// libjpeg lands there, jpeg_destroy_decompress frees everything libjpeg allocated, and the function returns a
// code. No C++ object with a destructor lives in them, so nothing leaks and nothing is skipped.
#include "tensorops/jpeg.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

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

size_t drop_ac_scans(const uint8_t* d, size_t n, const int* drop_ids, int n_drop, uint8_t* out) {
  auto dropped_id = [&](int id) { return std::find(drop_ids, drop_ids + n_drop, id) != drop_ids + n_drop; };
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8) return 0;
  size_t pos = 2, len = 2, scans_dropped = 0;
  std::memcpy(out, d, 2);  // SOI
  while (pos < n) {
    if (d[pos] != 0xFF) return 0;  // not at a marker: not a file this filter understands
    size_t m = pos;
    while (m + 1 < n && d[m + 1] == 0xFF) ++m;  // fill bytes before the marker
    if (m + 1 >= n) return 0;
    const uint8_t code = d[m + 1];
    if (code == 0xD9) {  // EOI: done
      std::memcpy(out + len, d + pos, m + 2 - pos);
      len += m + 2 - pos;
      return scans_dropped > 0 ? len : 0;
    }
    if (code == 0x00 || code == 0x01 || (code >= 0xD0 && code <= 0xD8)) return 0;  // no segment starts so here
    if (m + 4 > n) return 0;
    const size_t seg = (size_t{d[m + 2]} << 8) | d[m + 3];  // the length counts its own two bytes
    if (seg < 2 || m + 2 + seg > n) return 0;
    size_t end = m + 2 + seg;
    bool drop = false;
    if (code == 0xDA) {  // SOS: its header, then entropy-coded data up to the next marker that is not RST
      const size_t ns = seg >= 3 ? d[m + 4] : 0;
      if (ns < 1 || seg < 6 + 2 * ns) return 0;
      const int ss = d[m + 5 + 2 * ns];  // spectral selection start: 0 for DC scans, > 0 for AC scans
      drop = ss > 0 && ns == 1 && dropped_id(d[m + 5]);
      while (true) {
        if (end + 1 >= n) return 0;  // no marker after the data: truncated (the unfiltered decode says so)
        if (d[end] == 0xFF && d[end + 1] != 0x00 && d[end + 1] != 0xFF && (d[end + 1] < 0xD0 || d[end + 1] > 0xD7))
          break;
        ++end;
      }
    }
    if (drop) {
      ++scans_dropped;
    } else {
      std::memcpy(out + len, d + pos, end - pos);
      len += end - pos;
    }
    pos = end;
  }
  return 0;  // no EOI
}

#ifdef TENSOROPS_WITH_LIBJPEG

namespace {

constexpr int kMaxComponents = 10;  // libjpeg's MAX_COMPONENTS

std::atomic<int64_t> g_dc_scan_decodes{0};  // regions decoded from a copy without AC scans (dc_scan_decodes())

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

// A progressive file decoded at 1/8 (r->scratch set): the ids of the components whose blocks then come out as
// one pixel, whose IDCT reads only the DC coefficient (4:2:0 chroma is enlarged to 2x2 blocks, which read AC
// coefficients too, and keeps its AC scans).
int dc_only_components(jpeg_decompress_struct* cinfo, int* ids) {
  cinfo->scale_num = 1;
  cinfo->scale_denom = 8;
  jpeg_calc_output_dimensions(cinfo);
  int n = 0;
  for (int c = 0; c < cinfo->num_components && n < kMaxComponents; ++c) {
    const jpeg_component_info& comp = cinfo->comp_info[c];
#if JPEG_LIB_VERSION >= 70
    const bool one = comp.DCT_h_scaled_size == 1 && comp.DCT_v_scaled_size == 1;
#else
    const bool one = comp.DCT_scaled_size == 1;
#endif
    if (one) ids[n++] = comp.component_id;
  }
  return n;
}

// The one frame that calls setjmp: the header (region == nullptr: nothing else), or the header and then the
// region's rows, decoded at 1/region->denom scale. A progressive file at 1/8 with region->scratch is decoded
// from a copy without the AC scans of the components whose IDCT reads only DC coefficients (drop_ac_scans), with
// block smoothing off: libjpeg would otherwise guess the missing coefficients, as it never does for a whole file.
int frame(const uint8_t* data, size_t size, int64_t max_pixels, Info* info, Region* r, char* message) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  int ids[kMaxComponents];
  size_t filtered = 0;
  prepare(&cinfo, &err, message);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return 1;
  }
  jpeg_create_decompress(&cinfo);
  start(&cinfo, &progress, data, size);
  jpeg_read_header(&cinfo, TRUE);
  int rc = check_header(&cinfo, max_pixels, info, message);
  if (rc == 0 && r != nullptr && r->denom == 8 && r->scratch != nullptr && cinfo.progressive_mode) {
    const int n_ids = dc_only_components(&cinfo, ids);
    filtered = n_ids > 0 ? drop_ac_scans(data, size, ids, n_ids, r->scratch) : 0;
    if (filtered > 0) {  // the same header, read again from the copy
      jpeg_abort_decompress(&cinfo);
      start(&cinfo, &progress, r->scratch, filtered);
      jpeg_read_header(&cinfo, TRUE);
      rc = check_header(&cinfo, max_pixels, info, message);
      cinfo.do_block_smoothing = FALSE;
      g_dc_scan_decodes.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (rc == 0 && r != nullptr) rc = read_region(&cinfo, r, message);
  jpeg_destroy_decompress(&cinfo);  // the rows below a region are never decoded
  return rc;
}

}  // namespace

bool available() { return true; }

bool dc_scans_enabled() {
  const char* v = std::getenv("TENSOROPS_JPEG_DC_SCANS");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

int64_t dc_scan_decodes() { return g_dc_scan_decodes.load(std::memory_order_relaxed); }

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
  std::unique_ptr<uint8_t[]> scratch;  // outside frame(): freed on every path
  if (region->denom == 8 && info.progressive && dc_scans_enabled()) {
    scratch.reset(new (std::nothrow) uint8_t[size]);
    region->scratch = scratch.get();  // nullptr when out of memory: the whole file is decoded
  }
  const int rc = frame(data, size, region->max_pixels, &seen, region, message);
  region->scratch = nullptr;
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
bool dc_scans_enabled() { return false; }
int64_t dc_scan_decodes() { return 0; }
const char* version() { return ""; }
int read_info(const uint8_t*, size_t, int64_t, Info*, char* message) { return unavailable(message); }
size_t capacity_for(const Info&, int64_t, int64_t, int64_t, int64_t) { return 0; }
int decode_region(const uint8_t*, size_t, const Info&, Region*, char* message) { return unavailable(message); }

#endif

}  // namespace jpeg
}  // namespace tensorops
