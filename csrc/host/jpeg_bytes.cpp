// jpeg.h's byte-level helpers, which need no libjpeg: the CMYK conversion of decoded rows and the rewrite of a
// file without its progressive AC scans (the reduced-scale path). libjpeg's decode: jpeg.cpp.
#include "tensorops/jpeg.h"

#include <algorithm>
#include <cstring>

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

}  // namespace jpeg
}  // namespace tensorops
