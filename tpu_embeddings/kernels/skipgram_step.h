// The fused skip-gram step, free of TensorFlow (skipgram_step.cc wraps it as
// the SkipGramStep op).
//
// The same step as the trainer's TensorFlow path: every activation is read
// before any row is written, the gradients of one row are summed over the
// minibatch, and the embedding optimizer's rule is applied once per distinct
// row (the TPU's gradient accumulation):
//
//   loss = scale * sum_b [softplus(-t_b.c_b) + sum_k softplus(t_b.n_bk)]
//   SGD:      w -= lr * g
//   Adagrad:  a += g^2;  w -= lr * g / sqrt(a)
//
// The batch is cut into a fixed number of pair blocks, each summing its
// pairs' gradients per row in a private map; then each of a fixed number of
// row shards adds the blocks' sums of its rows in block order and applies the
// rule. Blocks and shards run in parallel; results do not depend on the
// number of threads.

#ifndef TPU_EMBEDDINGS_KERNELS_SKIPGRAM_STEP_H_
#define TPU_EMBEDDINGS_KERNELS_SKIPGRAM_STEP_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "Eigen/Core"

namespace tpu_embeddings {

// At most this many pair blocks, each of at least kPairsPerBlock pairs.
constexpr int kPairBlocks = 8;
constexpr int64_t kPairsPerBlock = 1024;
constexpr int kRowShards = 4;

struct StepArgs {
  int64_t dim = 0;
  int64_t batch = 0;
  int64_t num_negatives = 0;
  // Table of contexts and negatives: 0 (tied to the targets' table) or 1.
  int output_table = 0;
  const int32_t* target = nullptr;     // [batch], rows of tables[0]
  const int32_t* context = nullptr;    // [batch], rows of the output table
  const int32_t* negatives = nullptr;  // [batch, num_negatives], same
  float* tables[2] = {nullptr, nullptr};
  float* slots[2] = {nullptr, nullptr};  // Adagrad accumulators; SGD: null
  float learning_rate = 0.0f;
  float loss_scale = 1.0f;
};

// A row of one table: the table index in the high half, the id in the low.
inline uint64_t RowKey(int table, int32_t id) {
  return (static_cast<uint64_t>(table) << 32) | static_cast<uint32_t>(id);
}

inline uint64_t Mix(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }

inline int ShardOf(uint64_t key) {
  return static_cast<int>(Mix(key) >> 62);  // kRowShards == 4
}

// Open-addressing map from row keys to dense indices 0, 1, ...
class RowIndex {
 public:
  void Reset(int64_t max_keys) {
    int64_t capacity = 16;
    while (capacity < 2 * max_keys) capacity <<= 1;
    slots_.assign(capacity, -1);
    mask_ = capacity - 1;
    keys_.clear();
  }

  // The key's index; `added` tells whether it was new.
  int32_t Find(uint64_t key, bool* added) {
    uint64_t h = Mix(key) >> 24;
    while (true) {
      int32_t& slot = slots_[h & mask_];
      if (slot < 0) {
        slot = static_cast<int32_t>(keys_.size());
        keys_.push_back(key);
        *added = true;
        return slot;
      }
      if (keys_[slot] == key) {
        *added = false;
        return slot;
      }
      ++h;
    }
  }

  // The key's index, or -1.
  int32_t Lookup(uint64_t key) const {
    uint64_t h = Mix(key) >> 24;
    while (true) {
      const int32_t slot = slots_[h & mask_];
      if (slot < 0 || keys_[slot] == key) return slot;
      ++h;
    }
  }

  const std::vector<uint64_t>& keys() const { return keys_; }

 private:
  std::vector<int32_t> slots_;
  std::vector<uint64_t> keys_;
  uint64_t mask_ = 0;
};

// The summed gradients of the rows that one block of pairs touches.
struct BlockSums {
  RowIndex index;
  std::vector<int32_t> of_shard[kRowShards];  // row indices per row shard
  std::vector<float> rows;             // [keys, dim]
  std::vector<float> target_gradient;  // [dim]
  std::vector<float> logits;           // [kPairsPerChunk, 1 + negatives]
  double loss = 0.0;
};

struct StepScratch {
  BlockSums blocks[kPairBlocks];
  // Per row shard: its rows as (block, index in block), a gradient [dim].
  std::vector<std::pair<int32_t, int32_t>> shard_rows[kRowShards];
  std::vector<float> shard_gradients[kRowShards];
};

inline float Dot(const float* a, const float* b, int64_t dim) {
  float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t d = 0;
  for (; d + 8 <= dim; d += 8) {
    for (int j = 0; j < 8; ++j) partial[j] += a[d + j] * b[d + j];
  }
  float s = ((partial[0] + partial[4]) + (partial[1] + partial[5])) +
            ((partial[2] + partial[6]) + (partial[3] + partial[7]));
  for (; d < dim; ++d) s += a[d] * b[d];
  return s;
}

// TensorFlow's Softplus and Sigmoid kernels on `logits` (in place: the
// logits become sigmoid(logit)); returns the sum of the softplus values.
inline double SoftplusSumAndSigmoid(float* logits, int64_t n) {
  Eigen::Map<Eigen::ArrayXf> x(logits, n);
  static const float threshold =
      std::log(std::numeric_limits<float>::epsilon()) + 2.0f;
  const Eigen::ArrayXf e = x.exp();
  const double softplus =
      (x > -threshold)
          .select(x, (x < threshold).select(e, (e + 1.0f).log()))
          .sum();
  x = x.logistic();
  return softplus;
}

inline void Prefetch(const float* row, int64_t dim) {
  for (int64_t d = 0; d < dim; d += 16) __builtin_prefetch(row + d);
}

// out = g * v when the row was just added, else out += g * v.
inline void Accumulate(float* out, float g, const float* v, int64_t dim,
                       bool added) {
  if (added) {
    for (int64_t d = 0; d < dim; ++d) out[d] = g * v[d];
  } else {
    for (int64_t d = 0; d < dim; ++d) out[d] += g * v[d];
  }
}

inline void PrefetchPair(const StepArgs& s, int64_t b) {
  const int out = s.output_table;
  Prefetch(s.tables[0] + int64_t{s.target[b]} * s.dim, s.dim);
  Prefetch(s.tables[out] + int64_t{s.context[b]} * s.dim, s.dim);
  for (int64_t k = 0; k < s.num_negatives; ++k) {
    Prefetch(s.tables[out] + int64_t{s.negatives[b * s.num_negatives + k]} *
                                 s.dim, s.dim);
  }
}

constexpr int64_t kPairsPerChunk = 32;

// Loss and per-row gradient sums of the pairs of block `block` of `blocks`,
// `kPairsPerChunk` pairs at a time: their logits, then the loss and the
// logits' gradients in one vectorized pass, then the rows' gradients (the
// chunk's rows are still in cache).
inline void SumBlock(const StepArgs& s, int64_t block, int64_t blocks,
                     BlockSums* sums) {
  const int64_t begin = block * s.batch / blocks;
  const int64_t end = (block + 1) * s.batch / blocks;
  const int64_t dim = s.dim;
  const int64_t k_count = s.num_negatives;
  const int out = s.output_table;
  const int64_t max_rows = (end - begin) * (k_count + 2);
  sums->index.Reset(max_rows);
  for (std::vector<int32_t>& rows : sums->of_shard) rows.clear();
  if (static_cast<int64_t>(sums->rows.size()) < max_rows * dim) {
    sums->rows.resize(max_rows * dim);
  }
  sums->target_gradient.resize(dim);
  sums->logits.resize(kPairsPerChunk * (k_count + 1));
  sums->loss = 0.0;
  float* g = sums->target_gradient.data();
  auto row_of = [&](int table, int32_t id) {
    return s.tables[table] + int64_t{id} * dim;
  };
  // Adds coefficient * v to the gradient sum of row `id` of `table`.
  auto add = [&](int table, int32_t id, float coefficient, const float* v) {
    bool added;
    const uint64_t key = RowKey(table, id);
    const int32_t i = sums->index.Find(key, &added);
    if (added) sums->of_shard[ShardOf(key)].push_back(i);
    Accumulate(sums->rows.data() + int64_t{i} * dim, coefficient, v, dim,
               added);
  };
  for (int64_t first = begin; first < end; first += kPairsPerChunk) {
    const int64_t last = std::min(end, first + kPairsPerChunk);
    float* logit = sums->logits.data();
    // The positive logit enters negated: softplus(-pos) is its loss.
    for (int64_t b = first; b < last; ++b) {
      if (b + 4 < last) PrefetchPair(s, b + 4);
      const float* t = row_of(0, s.target[b]);
      *logit++ = -Dot(t, row_of(out, s.context[b]), dim);
      for (int64_t k = 0; k < k_count; ++k) {
        *logit++ = Dot(t, row_of(out, s.negatives[b * k_count + k]), dim);
      }
    }
    sums->loss += SoftplusSumAndSigmoid(sums->logits.data(),
                                        (last - first) * (k_count + 1));
    const float* sigmoid = sums->logits.data();
    for (int64_t b = first; b < last; ++b) {
      const float* t = row_of(0, s.target[b]);
      const float* c = row_of(out, s.context[b]);
      // d loss / d pos = sigmoid(pos) - 1 = -sigmoid(-pos).
      const float d_pos = -*sigmoid++ * s.loss_scale;
      for (int64_t d = 0; d < dim; ++d) g[d] = d_pos * c[d];
      add(out, s.context[b], d_pos, t);
      for (int64_t k = 0; k < k_count; ++k) {
        const int32_t id = s.negatives[b * k_count + k];
        const float* n = row_of(out, id);
        const float d_neg = *sigmoid++ * s.loss_scale;
        for (int64_t d = 0; d < dim; ++d) g[d] += d_neg * n[d];
        add(out, id, d_neg, t);
      }
      add(0, s.target[b], 1.0f, g);
    }
  }
}

// The optimizer's rule on row `id` of `table`, with its summed gradient.
inline void Update(const StepArgs& s, int table, int64_t id, const float* g) {
  const int64_t dim = s.dim;
  float* w = s.tables[table] + id * dim;
  float* a = s.slots[table];
  if (a == nullptr) {
    for (int64_t d = 0; d < dim; ++d) w[d] -= s.learning_rate * g[d];
    return;
  }
  // TensorFlow's ResourceSparseApplyAdagrad rule on one row; a division by
  // the square root for its rsqrt (within an ulp), which vectorizes.
  float* accumulator = a + id * dim;
  for (int64_t d = 0; d < dim; ++d) {
    accumulator[d] += g[d] * g[d];
    w[d] -= s.learning_rate * g[d] / std::sqrt(accumulator[d]);
  }
}

// Updates the rows of shard `shard`: each row's gradient is the sum of its
// blocks' sums, added in block order.
inline void ApplyShard(const StepArgs& s, int shard, int64_t blocks,
                       StepScratch* scratch) {
  const int64_t dim = s.dim;
  // The shard's rows, each at the first block that has it.
  std::vector<std::pair<int32_t, int32_t>>& rows = scratch->shard_rows[shard];
  rows.clear();
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockSums& block = scratch->blocks[b];
    for (const int32_t i : block.of_shard[shard]) {
      bool earlier = false;
      for (int64_t e = 0; e < b && !earlier; ++e) {
        earlier = scratch->blocks[e].index.Lookup(block.index.keys()[i]) >= 0;
      }
      if (!earlier) rows.emplace_back(b, i);
    }
  }
  std::vector<float>& sum = scratch->shard_gradients[shard];
  sum.resize(dim);
  constexpr size_t kAhead = 12;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (r + kAhead < rows.size()) {
      const auto& next = rows[r + kAhead];
      const uint64_t key = scratch->blocks[next.first].index.keys()[next.second];
      const int table = static_cast<int>(key >> 32);
      const int64_t id = static_cast<uint32_t>(key);
      Prefetch(s.tables[table] + id * dim, dim);
      if (s.slots[table] != nullptr) Prefetch(s.slots[table] + id * dim, dim);
    }
    const BlockSums& block = scratch->blocks[rows[r].first];
    const uint64_t key = block.index.keys()[rows[r].second];
    const float* g = block.rows.data() + int64_t{rows[r].second} * dim;
    for (int64_t l = rows[r].first + 1; l < blocks; ++l) {
      const int32_t j = scratch->blocks[l].index.Lookup(key);
      if (j < 0) continue;
      if (g != sum.data()) {
        std::copy_n(g, dim, sum.data());
        g = sum.data();
      }
      const float* more = scratch->blocks[l].rows.data() + int64_t{j} * dim;
      for (int64_t d = 0; d < dim; ++d) sum[d] += more[d];
    }
    Update(s, static_cast<int>(key >> 32), static_cast<uint32_t>(key), g);
  }
}

// Runs one step and returns its loss. `parallel(n, fn)` calls fn(i) for i in
// [0, n), on any threads, and returns when all calls have.
template <typename Parallel>
float RunStep(const StepArgs& s, StepScratch* scratch, Parallel parallel) {
  const int64_t blocks = std::max<int64_t>(
      1, std::min<int64_t>(kPairBlocks, s.batch / kPairsPerBlock));
  parallel(blocks,
           [&](int64_t b) { SumBlock(s, b, blocks, &scratch->blocks[b]); });
  parallel(kRowShards, [&](int64_t shard) {
    ApplyShard(s, static_cast<int>(shard), blocks, scratch);
  });
  double loss = 0.0;
  for (int64_t b = 0; b < blocks; ++b) loss += scratch->blocks[b].loss;
  return static_cast<float>(loss * s.loss_scale);
}

}  // namespace tpu_embeddings

#endif  // TPU_EMBEDDINGS_KERNELS_SKIPGRAM_STEP_H_
