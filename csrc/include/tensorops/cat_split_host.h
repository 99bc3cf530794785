// Host side of cat and split, shared by the CPU and CUDA launchers and compiled once (host/cat_split_host.cpp):
// torch's argument checks (with messages that name the offending tensor's position), output allocation, and the
// per-piece copy table of copy_table.h. Nothing here touches tensor data except the copies that bring an input
// into a layout the kernels copy from with plain row runs (see cat_prepare / prepare_split).
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace tensorops {
namespace cat_split_host {

// One piece of the copy: bytes per row, the piece's own row stride in bytes and its row-0 address.
struct Piece {
  int64_t width;
  int64_t rs;
  int64_t addr;
};

// A prepared copy: the tensors that must stay alive while it runs and the pieces of the table.
struct Prepared {
  std::vector<at::Tensor> keep;  // converted or re-laid-out inputs
  std::vector<Piece> pieces;     // pieces with at least one byte per row, in order
  int64_t wide = 0;              // wide tensor's address
  int64_t wide_rs = 0;           // wide tensor's row stride in bytes
  int64_t rows = 0;
  int64_t row_bytes = 0;
  bool empty() const { return rows == 0 || row_bytes == 0 || pieces.empty(); }
};

// Writes the copy table (copy_table.h) into buf (table_words(pieces.size()) words). `wide` is the wide
// tensor's row-0 address and `wide_rs` its row stride; `into_wide` says cat (pieces -> wide) or split.
void fill_table(int64_t* buf, const std::vector<Piece>& pieces, int64_t wide, int64_t wide_rs, bool into_wide);

// Checks the inputs as torch.cat does, allocates the output and prepares the copy, in one pass over the
// inputs (split over threads for many inputs when the policy grants them): with 10,000 small inputs, every
// pass over their TensorImpls is a pass of cache misses. Inputs of another dtype, with the conjugate or
// negative bit set, or whose memory is not rows of dense runs in the output's memory order (e.g. a transposed
// input) are first copied into that layout; the others are read in place. `dim` comes back wrapped.
at::Tensor cat_prepare(at::TensorList tensors, int64_t& dim, Prepared& p);

// Checks as torch.split_with_sizes_copy does, allocates the contiguous pieces and prepares the copy (an input
// that is not rows of dense runs in row-major order, e.g. channels_last or transposed, is first made
// contiguous).
std::vector<at::Tensor> split_prepare(const at::Tensor& input, c10::SymIntArrayRef sizes, int64_t dim, Prepared& p);

}  // namespace cat_split_host
}  // namespace tensorops
