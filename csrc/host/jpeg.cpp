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
// the message codes (JERR_*, JWRN_*), after jpeglib.h
#include <jerror.h>
#endif

namespace tensorops {
namespace jpeg {

#ifdef TENSOROPS_WITH_LIBJPEG

namespace {

constexpr int kMaxComponents = 10;  // libjpeg's MAX_COMPONENTS
constexpr int64_t kSmoothMargin = 2;  // iMCU columns kept beside a progressive file's crop (read_region)

std::atomic<int64_t> g_dc_scan_decodes{0};  // regions decoded from a copy without AC scans (dc_scan_decodes())

// A header declaring more scans than this is refused (a progressive file of thousands of tiny scans makes the
// decoder loop for minutes; libjpeg-turbo's own tools use a limit of this kind).
constexpr int kMaxScans = 1000;

struct ErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char* message;
  bool too_many_scans;
  bool strict;       // warnings are errors
  bool unsupported;  // the error says this libjpeg cannot decode this kind of JPEG (kUnsupported)
  int warnings;      // warnings let pass (the first one's text is in message)
};

// Errors that mean "a kind of JPEG this build does not decode", not "corrupt": lossless and hierarchical
// processes (SOF3, SOF5-7, ...), 12- and 16-bit samples, a coding left out at compile time, a feature
// libjpeg-turbo cannot combine with cropping or scaling (lossless files in libjpeg-turbo 3).
bool unsupported_kind(int code) {
  return code == JERR_SOF_UNSUPPORTED || code == JERR_BAD_PRECISION || code == JERR_NOT_COMPILED ||
         code == JERR_ARITH_NOTIMPL || code == JERR_NOTIMPL;
}

void on_error(j_common_ptr cinfo) {
  ErrorManager* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (e->too_many_scans) {
    std::snprintf(e->message, kMessageBytes, "the JPEG has more than %d scans", kMaxScans);
  } else {
    (*cinfo->err->format_message)(cinfo, e->message);
    e->unsupported = unsupported_kind(cinfo->err->msg_code);
  }
  longjmp(e->jump, 1);
}

// Warnings (msg_level -1: corrupt data libjpeg resynchronises past, junk before a marker, a premature end of the
// file) are counted and the first one kept, as libjpeg's own handler does (it prints the first one), so the
// image decodes as decode_jpeg's and Pillow's do; with strict they are errors. Trace messages are ignored.
void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  ErrorManager* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  // Running out of data is an error for decode_jpeg (its source manager raises "Image is incomplete or
  // truncated") and Pillow ("image file is truncated"): here too, strict or not.
  if (e->strict || cinfo->err->msg_code == JWRN_JPEG_EOF) on_error(cinfo);
  if (e->warnings == 0) (*cinfo->err->format_message)(cinfo, e->message);
  ++e->warnings;
  ++cinfo->err->num_warnings;
}

void on_progress(j_common_ptr cinfo) {
  j_decompress_ptr d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    reinterpret_cast<ErrorManager*>(cinfo->err)->too_many_scans = true;
    on_error(cinfo);
  }
}

// What the frame sets up before jpeg_read_header.
void prepare(jpeg_decompress_struct* cinfo, ErrorManager* err, bool strict, char* message) {
  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = on_error;
  err->pub.emit_message = on_message;
  err->message = message;
  err->too_many_scans = false;
  err->strict = strict;
  err->unsupported = false;
  err->warnings = 0;
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

// Whether an end-of-image marker follows the first scan's header: a file cut short has none, and decode_jpeg
// refuses it (Pillow only where rows are missing), while a partial decode that stops above the cut would never
// notice. (0xFF 0xD9 cannot occur
// inside entropy-coded data, where every 0xFF byte is followed by 0x00 or a restart marker's code; before the
// scan it may, inside an EXIF thumbnail.)
// Searched from the end, where the marker almost always is (a few bytes before it when junk follows the image).
bool ends_with_eoi(const uint8_t* data, size_t size, size_t from) {
  for (size_t i = size; i >= from + 2; --i)
    if (data[i - 2] == 0xFF && data[i - 1] == 0xD9) return true;
  return false;
}

// The width of an iMCU column in output pixels: jpeg_crop_scanline's alignment.
int64_t imcu_width(jpeg_decompress_struct* cinfo) {
#if JPEG_LIB_VERSION >= 70
  const int64_t dct = cinfo->min_DCT_h_scaled_size;
#else
  const int64_t dct = cinfo->min_DCT_scaled_size;
#endif
  const bool single = cinfo->comps_in_scan == 1 && cinfo->num_components == 1;
  return single ? dct : dct * cinfo->max_h_samp_factor;
}

// The first column of a crop of columns [x0, x1) of the output, as jpeg_crop_scanline will align it (down to
// the iMCU grid), moved one iMCU further left where the crop would otherwise leave a subsampled component
// fewer than two samples wide. libjpeg-turbo then replaces that component's fancy upsampling by plain
// replication, and the values differ from a full decode's: a box reading only column 0, or only the last column
// of an image whose width is 2 more than a multiple of 16 (4:2:0, 4:2:2). A crop at least 2 * max_h_samp_factor
// wide keeps every component at two samples or more (read_region widens it to the right where it can).
int64_t crop_start(jpeg_decompress_struct* cinfo, int64_t x0) {
  const int64_t align = imcu_width(cinfo);
  int64_t left = x0 / align * align;
  const int64_t need = 2 * cinfo->max_h_samp_factor, W = cinfo->output_width;
  if (cinfo->max_h_samp_factor > 1 && W - left < need)
    left = std::max<int64_t>(0, left - align * ((need - (W - left) + align - 1) / align));
  return left;
}

// The rows of region r (the header read): 0, or 1 with `message` set. Errors inside libjpeg longjmp to frame().
int read_region(jpeg_decompress_struct* cinfo, Region* r, char* message) {
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned int>(r->denom);
  jpeg_start_decompress(cinfo);
  JDIMENSION x0 = 0, w = cinfo->output_width;
  if (!r->whole_rows) {
    // A progressive file's missing coefficients (a scan left out) are guessed by block smoothing from the DC
    // values of blocks up to two away (libjpeg-turbo 2.1's 5x5 neighbourhood): the crop keeps kSmoothMargin iMCU
    // columns more on each side, so that the blocks the box reads are smoothed as in the whole image's decode,
    // not as the edges of the crop (capacity_for reserves them)
    const int64_t margin = cinfo->progressive_mode ? kSmoothMargin * imcu_width(cinfo) : 0;
    const int64_t left = std::max<int64_t>(crop_start(cinfo, r->x0) - margin, 0);
    x0 = static_cast<JDIMENSION>(left);
    w = static_cast<JDIMENSION>(std::max<int64_t>(r->x1 + margin, left + 2 * cinfo->max_h_samp_factor) - left);
    w = std::min<JDIMENSION>(w, cinfo->output_width - x0);
    if (x0 > 0 || w < cinfo->output_width) jpeg_crop_scanline(cinfo, &x0, &w);
  }
  const size_t stride = static_cast<size_t>(w) * static_cast<size_t>(cinfo->output_components);
  const size_t rows = static_cast<size_t>(r->y1 - r->y0);
  if (stride * std::max<size_t>(rows, 1) > r->capacity) {
    std::snprintf(message, kMessageBytes, "internal: the decoded region needs %zu bytes, %zu were reserved",
                  stride * std::max<size_t>(rows, 1), r->capacity);
    return 1;
  }
  if (r->y0 > 0 && !r->whole_rows) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(r->y0));
  for (size_t y = 0; r->whole_rows && y < static_cast<size_t>(r->y0);) {  // read and dropped: row 0's space
    JSAMPROW row = r->buffer;
    const JDIMENSION got = jpeg_read_scanlines(cinfo, &row, 1);
    if (got == 0) {
      std::snprintf(message, kMessageBytes, "the JPEG ended before row %zu", y);
      return 1;
    }
    y += got;
  }
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
int frame(const uint8_t* data, size_t size, int64_t max_pixels, bool strict, Info* info, Region* r,
          char* message) {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  jpeg_progress_mgr progress;
  int ids[kMaxComponents];
  size_t filtered = 0;
  prepare(&cinfo, &err, strict, message);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return err.unsupported ? kUnsupported : kError;
  }
  jpeg_create_decompress(&cinfo);
  start(&cinfo, &progress, data, size);
  jpeg_read_header(&cinfo, TRUE);
  int rc = check_header(&cinfo, max_pixels, info, message);
  info->warnings = err.warnings;
  if (rc == 0 && r != nullptr &&
      !ends_with_eoi(data, size, static_cast<size_t>(cinfo.src->next_input_byte - data))) {
    std::snprintf(message, kMessageBytes, "the JPEG ends before its end-of-image marker: a file cut short (%zu bytes)",
                  size);
    rc = 1;
  }
  if (rc == 0 && r != nullptr && r->denom == 8 && r->scratch != nullptr && cinfo.progressive_mode) {
    const int n_ids = dc_only_components(&cinfo, ids);
    filtered = n_ids > 0 ? drop_ac_scans(data, size, ids, n_ids, r->scratch) : 0;
    if (filtered > 0) {  // the same header, read again from the copy
      jpeg_abort_decompress(&cinfo);
      start(&cinfo, &progress, r->scratch, filtered);
      jpeg_read_header(&cinfo, TRUE);
      rc = check_header(&cinfo, max_pixels, info, message);
      info->warnings = err.warnings;
      cinfo.do_block_smoothing = FALSE;
      g_dc_scan_decodes.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (rc == 0 && r != nullptr) {
    rc = read_region(&cinfo, r, message);
    r->warnings = err.warnings - info->warnings;  // those of the image data (the header's are info's)
  }
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

const char* kinds() {
#ifdef D_ARITH_CODING_SUPPORTED
  return "8-bit baseline, extended and progressive; Huffman and arithmetic coding";
#else
  return "8-bit baseline, extended and progressive; Huffman coding";
#endif
}

const char* version() {
#ifdef LIBJPEG_TURBO_VERSION
#define TENSOROPS_STR2(x) #x
#define TENSOROPS_STR(x) TENSOROPS_STR2(x)
  return TENSOROPS_STR(LIBJPEG_TURBO_VERSION);
#else
  return "libjpeg";
#endif
}

int read_info(const uint8_t* data, size_t size, int64_t max_pixels, bool strict, Info* info, char* message) {
  if (size == 0) {
    std::snprintf(message, kMessageBytes, "the data is empty");
    return kError;
  }
  return frame(data, size, max_pixels, strict, info, nullptr, message);
}

size_t capacity_for(const Info& info, const Region& r) {
  // jpeg_crop_scanline moves x0 down to the iMCU grid (at most 4 (sampling) x 8 (DCT) - 1 columns), crop_start
  // at most one iMCU further, and the crop is at least 8 columns wide
  // (a progressive file: kSmoothMargin iMCU columns of at most 32 more on each side)
  const int64_t W = scaled(info.width, r.denom);
  const int64_t extra = info.progressive ? 2 * kSmoothMargin * 32 : 0;
  const int64_t w = r.whole_rows ? W : std::min<int64_t>(std::max<int64_t>(r.x1 - r.x0, 8) + 64 + extra, W);
  return static_cast<size_t>(std::max<int64_t>(r.y1 - r.y0, 1) * w * info.components);
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
  const int rc = frame(data, size, region->max_pixels, region->strict, &seen, region, message);
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
  return kError;
}
}  // namespace

bool available() { return false; }
bool dc_scans_enabled() { return false; }
int64_t dc_scan_decodes() { return 0; }
const char* version() { return ""; }
const char* kinds() { return ""; }
int read_info(const uint8_t*, size_t, int64_t, bool, Info*, char* message) { return unavailable(message); }
size_t capacity_for(const Info&, const Region&) { return 0; }
int decode_region(const uint8_t*, size_t, const Info&, Region*, char* message) { return unavailable(message); }

#endif

}  // namespace jpeg
}  // namespace tensorops
