// libjpeg-turbo behind a plain-data interface (host/jpeg.cpp): reading a JPEG's header, and decoding one region
// of it (rows [y0, y1), columns from x0 to x1 widened to the iMCU grid) as interleaved 8-bit rows.
//
// libjpeg reports errors by longjmp. Each function here keeps its setjmp in one small frame that holds plain
// data only (no destructors for a longjmp to skip) and frees what libjpeg allocated on every path; callers get a
// return code and a message, which the op turns into a C++ exception outside that frame.
//
// libjpeg's warnings (corrupt data it resynchronises past, junk bytes before a marker, a premature end of the
// file, an unknown JFIF revision) are what torchvision's decode_jpeg and Pillow let pass: the image decodes as
// theirs does, and the caller is told how many warnings there were and the first one's text. With `strict` a
// warning is an error instead. A file this libjpeg cannot decode at all (lossless or hierarchical JPEG, a sample
// precision other than 8 bits, a coding the build left out) is kUnsupported, not corrupt: the op sends it to
// the fallback decoder.
//
// Built without libjpeg (TENSOROPS_WITH_LIBJPEG unset), every function fails with a message that says so.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tensorops {
namespace jpeg {

constexpr size_t kMessageBytes = 256;

// Return codes of read_info and decode_region.
constexpr int kOk = 0;
constexpr int kError = 1;        // corrupt, truncated, not a JPEG, over max_pixels (or a warning with strict)
constexpr int kUnsupported = 2;  // a valid JPEG of a kind this libjpeg does not decode (see above)

// Colour as the decoder delivers it: 3 components (RGB, from YCbCr, RGB or grayscale JPEGs) or 4 (CMYK, from
// CMYK or YCCK JPEGs, as stored: Adobe's convention, 255 - ink).
struct Info {
  int64_t height = 0, width = 0;
  int components = 0;  // what decode_region writes per pixel: 3 or 4
  bool progressive = false;
  int warnings = 0;  // libjpeg warnings while reading the header (the first one's text in `message`)
};

// A region request and what was decoded.
struct Region {
  int denom = 1;                           // decode at scale 1/denom (1, 2, 4 or 8: libjpeg's DCT scaling)
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;  // rows [y0, y1), columns [x0, x1) wanted, of the scaled image
  int64_t max_pixels = 0;                  // refuse headers declaring more pixels than this (0: no limit)
  bool strict = false;                     // a libjpeg warning is an error
  bool whole_rows = false;                 // decode every column and read rows [0, y0) too (no crop, no skip)
  uint8_t* buffer = nullptr;               // rows of `stride` bytes, (y1 - y0) of them
  size_t capacity = 0;                     // bytes at buffer (at least capacity_for())
  int64_t dx0 = 0, width = 0;              // decoded columns [dx0, dx0 + width) (dx0 <= x0, dx0 + width >= x1)
  int64_t stride = 0;                      // bytes per decoded row: width * components
  uint8_t* scratch = nullptr;              // decode_region's: a copy of the file without its unread scans
  int warnings = 0;                        // libjpeg warnings in the image data, after the header's (the first
                                           // warning of the call, header's included, is the text in `message`)
};

// An image extent at scale 1/denom, as libjpeg computes it (rounded up).
inline int64_t scaled(int64_t extent, int denom) { return (extent + denom - 1) / denom; }

// Whether this build has libjpeg-turbo's partial decode, and which version ("2.1.5"; "" without it).
bool available();
const char* version();
// The JPEG kinds decode_region decodes ("" without libjpeg): 8-bit baseline, extended and progressive, Huffman
// and (where the library has it) arithmetic coding. Lossless, hierarchical and 12-bit files are kUnsupported.
const char* kinds();

// The header of `size` bytes at `data`: kOk and `info` set, or kError / kUnsupported and `message`
// (kMessageBytes) set. `strict`: a warning in the header is an error.
int read_info(const uint8_t* data, size_t size, int64_t max_pixels, bool strict, Info* info, char* message);

// The bytes a region of rows [y0, y1) x columns [x0, x1) needs at most (its columns widened to the iMCU grid and
// to at least two samples of every chroma component; every column with whole_rows).
size_t capacity_for(const Info& info, const Region& region);

// Decodes region->[y0, y1) x [x0, x1) of the image (scaled by 1/region->denom) into region->buffer: kOk and dx0,
// width, stride, warnings set, or kError / kUnsupported and `message` set. The values equal a full decode's (at
// the same scale) in every requested pixel when the request is one pixel wider than needed on each side
// (libjpeg's fancy upsampling reads chroma one pixel beyond). The decoded columns are widened so that every
// component keeps at least two samples: below that libjpeg-turbo's crop switches a subsampled component to
// plain replication, whose values differ from the full decode's.
int decode_region(const uint8_t* data, size_t size, const Info& info, Region* region, char* message);

// The JPEG's `n` bytes at `d` copied to `out` (n bytes available) without the AC scans (spectral selection
// start > 0) of the components whose ids are in drop_ids: the copy's length, or 0 when there is nothing to drop
// or the bytes are not a marker-structured file this reads to its EOI (then the file is decoded as it is). Each
// scan of a progressive JPEG is a separate segment, so a decoder at 1/8 scale, where a 4:4:4 or luma component's
// IDCT reads only the DC coefficient, needs none of those scans: the entropy decoding of most of the file
// (libjpeg decodes every scan of a progressive file before its first row) is skipped, and the values are the
// same as from the whole file.
size_t drop_ac_scans(const uint8_t* d, size_t n, const int* drop_ids, int n_drop, uint8_t* out);

// Whether decode_region drops scans it does not need (default yes; TENSOROPS_JPEG_DC_SCANS=0 turns it off, for
// comparing the two), and how many regions this process decoded so.
bool dc_scans_enabled();
int64_t dc_scan_decodes();

// Decoded CMYK pixels (4 bytes each, as stored) to RGB in place (3 bytes each from the start), as Pillow gives
// ImageFolder users: its JPEG reader takes every CMYK file as Adobe-inverted ("CMYK;I"), and convert("RGB")
// computes R = (255 - K) - C (255 - K) / 255 in integers (its MULDIV255), likewise G from M and B from Y.
void cmyk_to_rgb(uint8_t* pixels, int64_t count);

}  // namespace jpeg
}  // namespace tensorops
