// The fused skip-gram step, free of TensorFlow (skipgram_step.cc wraps it as
// the SkipGramStep op).
//
// The same step as the trainer's TensorFlow path: every activation is read
// before any row is written, the gradients of one row are summed over the
// minibatch, and the embedding optimizer's rule is applied once per distinct
// row (the TPU's gradient accumulation):
//
//   loss = scale * sum_b [softplus(-t_b.c_b) +
//                         weight * sum_k softplus(t_b.n_{r(b),k})]
//   SGD:      w -= lr * g
//   Adagrad:  a += g^2;  w -= lr * g / sqrt(a)
//
// Negatives are [N, K] with N dividing the batch B, and pair b uses row
// r(b) = b / (B / N). N = B gives each pair its own K negatives; N < B makes
// each group of B / N consecutive pairs share K negatives. `weight`
// (negative_weight) multiplies the negatives' term and its gradients.
//
// The batch is cut into a fixed number of pair blocks, on group boundaries.
// Each block computes its pairs' loss and logits and lists the terms of its
// rows' gradients (a coefficient times a vector it copies) per row shard;
// then each of a fixed number of row shards sums the terms of its rows in
// the order of the pairs, in one map, and applies the rule to each row. No
// row's gradient is merged across maps, and the tables are read only before
// they are written. A call's blocks and shards, step after step, go to
// whichever threads take them (lockstep.h); results do not depend on the
// number of threads.
//
// A group's K negative rows are hot for all its pairs, so shared negatives
// are dense products: the distinct target rows of a chunk of the group
// gathered into a matrix T, logits L = N^T T, target gradients N dL and
// negative-row gradients T dL^T (each target counted as often as it occurs),
// and each negative row's gradient, summed over the group, listed as one
// term.

#ifndef TPU_EMBEDDINGS_KERNELS_SKIPGRAM_STEP_H_
#define TPU_EMBEDDINGS_KERNELS_SKIPGRAM_STEP_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "lockstep.h"

#ifdef __AVX__
#include <immintrin.h>
#endif

namespace tpu_embeddings {

// At most this many pair blocks, each of at least kPairsPerBlock pairs.
constexpr int kPairBlocks = 8;
constexpr int64_t kPairsPerBlock = 256;
constexpr int kRowShards = 8;

struct StepArgs {
  int64_t dim = 0;
  int64_t batch = 0;
  int64_t num_negatives = 0;   // K: negatives per row of `negatives`
  int64_t negative_rows = 0;   // N: rows of `negatives`, dividing `batch`
  // Table of contexts and negatives: 0 (tied to the targets' table) or 1.
  int output_table = 0;
  const int32_t* target = nullptr;     // [batch], rows of tables[0]
  const int32_t* context = nullptr;    // [batch], rows of the output table
  const int32_t* negatives = nullptr;  // [negative_rows, num_negatives]
  float* tables[2] = {nullptr, nullptr};
  float* slots[2] = {nullptr, nullptr};  // Adagrad accumulators; SGD: null
  float learning_rate = 0.0f;
  float loss_scale = 1.0f;
  float negative_weight = 1.0f;  // w, on the negatives' loss and gradients

  // Pairs per row of negatives: 1 when each pair has its own.
  int64_t group() const {
    return negative_rows > 0 ? batch / negative_rows : 1;
  }
};

// A row of one table: the table index in the high half, the id in the low.
inline uint64_t RowKey(int table, int32_t id) {
  return (static_cast<uint64_t>(table) << 32) | static_cast<uint32_t>(id);
}

inline uint64_t Mix(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }

inline int ShardOf(uint64_t key) {
  static_assert(kRowShards == 8, "the shift keeps log2(kRowShards) bits");
  return static_cast<int>(Mix(key) >> 61);
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

  const std::vector<uint64_t>& keys() const { return keys_; }

 private:
  std::vector<int32_t> slots_;
  std::vector<uint64_t> keys_;
  uint64_t mask_ = 0;
};

// out = g * v when the row was just added, else out += g * v.
inline void Accumulate(float* out, float g, const float* v, int64_t dim,
                       bool added) {
  if (added) {
    for (int64_t d = 0; d < dim; ++d) out[d] = g * v[d];
  } else {
    for (int64_t d = 0; d < dim; ++d) out[d] += g * v[d];
  }
}

// The distinct targets of a chunk of pairs: column j of `rows` [dim,
// distinct] is the row of the target that `count[j]` of the pairs have; pair
// i has column `column[i]`.
struct ChunkTargets {
  RowIndex index;  // target id -> column
  std::vector<int32_t> count;
  std::vector<int32_t> column;
  float* rows = nullptr;  // room for a column per pair

  void Reset(int64_t pairs, float* rows) {
    index.Reset(pairs);
    count.resize(pairs);
    column.resize(pairs);
    this->rows = rows;
  }

  int64_t distinct() const {
    return static_cast<int64_t>(index.keys().size());
  }

  // Pair i has target `id`, whose row is `row`.
  void Add(int64_t i, int32_t id, const float* row, int64_t dim) {
    bool added;
    const int32_t slot = index.Find(RowKey(0, id), &added);
    if (added) {
      count[slot] = 0;
      std::copy_n(row, dim, rows + int64_t{slot} * dim);
    }
    ++count[slot];
    column[i] = slot;
  }
};

// One term of a row's gradient: `coefficient` times vector `vector` of its
// block's arena.
struct Term {
  uint64_t key;
  float coefficient;
  int32_t vector;
};

// What one block of pairs computes: its loss, and the terms of the gradients
// of the rows it touches, listed per row shard in the order of its pairs.
// The vectors the terms scale are copied into the block's arena, so the
// shards can sum them while other shards write the tables.
struct BlockTerms {
  std::vector<float> arena;  // [vectors, dim]
  int64_t vectors = 0;
  std::vector<Term> of_shard[kRowShards];
  // Shared negatives: target gradients from the negatives [chunk, dim].
  std::vector<float> target_gradient;
  // [chunk] positives, then [chunk, negatives] (shared negatives: a
  // distinct target's negatives).
  std::vector<float> logits;
  // Shared negatives: the chunk's distinct targets and the group's negative
  // rows [negatives, dim].
  ChunkTargets targets;
  std::vector<float> shared_rows;
  double loss = 0.0;

  // Empties the lists and makes room for `max_vectors` vectors.
  void Reset(int64_t max_vectors, int64_t dim) {
    if (static_cast<int64_t>(arena.size()) < max_vectors * dim) {
      arena.resize(max_vectors * dim);
    }
    vectors = 0;
    for (std::vector<Term>& terms : of_shard) terms.clear();
    loss = 0.0;
  }

  // `count` consecutive new vectors; returns the first's index.
  int32_t NewVectors(int64_t count) {
    const int64_t first = vectors;
    vectors += count;
    return static_cast<int32_t>(first);
  }

  float* Vector(int32_t i, int64_t dim) {
    return arena.data() + int64_t{i} * dim;
  }

  // Row `id` of `table` gains coefficient * vector `vector`.
  void Add(int table, int32_t id, float coefficient, int32_t vector) {
    const uint64_t key = RowKey(table, id);
    of_shard[ShardOf(key)].push_back({key, coefficient, vector});
  }
};

// A row shard's rows and their summed gradients [keys, dim].
struct ShardSums {
  RowIndex index;
  std::vector<float> rows;
};

struct StepScratch {
  BlockTerms blocks[kPairBlocks];
  ShardSums shards[kRowShards];
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

// Softplus and sigmoid of x from e = exp(-|x|), both accurate in the tails:
//   softplus(x) = max(x, 0) + log1p(e)
//   sigmoid(x)  = 1 / (1 + e) for x >= 0, e / (1 + e) below
// with log1p(e) = 2 atanh(e / (2 + e)) as its series (e <= 1, so the
// series' argument is at most 1/3), and exp by 2^n times a polynomial
// (Cephes' expf); arguments below -80 give exp(-80).
constexpr float kExpFloor = -80.0f;
constexpr float kLog2E = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // ln 2 = kLn2Hi + kLn2Lo
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpPolynomial[6] = {1.9875691500e-4f, 1.3981999507e-3f,
                                     8.3334519073e-3f, 4.1665795894e-2f,
                                     1.6666665459e-1f, 5.0000001201e-1f};
// 1 / (2k + 1) for k = 6, 5, ..., 1: the atanh series in z = t^2.
constexpr float kAtanhSeries[6] = {1.0f / 13, 1.0f / 11, 1.0f / 9,
                                   1.0f / 7,  1.0f / 5,  1.0f / 3};

// Logits taken at a time by SoftplusAndSigmoidSpan.
constexpr int64_t kSpan = 512;

#ifdef __AVX__
constexpr int64_t kLanes = 8;

inline __m256 ExpOfNonPositive(__m256 a) {
  // max(floor, a) keeps a NaN.
  a = _mm256_max_ps(_mm256_set1_ps(kExpFloor), a);
  const __m256 n = _mm256_round_ps(
      _mm256_mul_ps(a, _mm256_set1_ps(kLog2E)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(a, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Hi)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Lo)));
  __m256 p = _mm256_set1_ps(kExpPolynomial[0]);
  for (int i = 1; i < 6; ++i) {
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kExpPolynomial[i]));
  }
  p = _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r),
                    _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2^n from its exponent bits, in two halves (AVX has no 8-lane integers).
  const __m256i k = _mm256_cvtps_epi32(n);
  const __m128i bias = _mm_set1_epi32(127);
  const __m128i low = _mm_slli_epi32(
      _mm_add_epi32(_mm256_castsi256_si128(k), bias), 23);
  const __m128i high = _mm_slli_epi32(
      _mm_add_epi32(_mm256_extractf128_si256(k, 1), bias), 23);
  const __m256 scale = _mm256_castsi256_ps(
      _mm256_insertf128_si256(_mm256_castsi128_si256(low), high, 1));
  return _mm256_mul_ps(p, scale);
}

// logits[0, count) (count a multiple of kLanes, at most kSpan) become their
// sigmoids; lane j of `partial` gains the softplus of logits j, j + kLanes,
// ... Two passes (first every e, then the rest) keep the dependency chains
// short enough to overlap.
inline void SoftplusAndSigmoidSpan(float* logits, int64_t count,
                                   float* partial) {
  alignas(32) float exps[kSpan];
  const __m256 zero = _mm256_setzero_ps();
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t i = 0; i < count; i += kLanes) {
    const __m256 abs = _mm256_andnot_ps(sign, _mm256_loadu_ps(logits + i));
    _mm256_store_ps(exps + i, ExpOfNonPositive(_mm256_sub_ps(zero, abs)));
  }
  __m256 sum = _mm256_loadu_ps(partial);
  for (int64_t i = 0; i < count; i += kLanes) {
    const __m256 x = _mm256_loadu_ps(logits + i);
    const __m256 e = _mm256_load_ps(exps + i);
    const __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
    // x < 0 ? e * s : s, as bit operations on the comparison's mask (GCC
    // turns a blend on a comparison into per-lane branches without AVX2).
    const __m256 negative = _mm256_cmp_ps(x, zero, _CMP_LT_OQ);
    _mm256_storeu_ps(logits + i,
                     _mm256_or_ps(_mm256_and_ps(negative, _mm256_mul_ps(e, s)),
                                  _mm256_andnot_ps(negative, s)));
    const __m256 t = _mm256_div_ps(e, _mm256_add_ps(_mm256_set1_ps(2.0f), e));
    const __m256 z = _mm256_mul_ps(t, t);
    __m256 series = _mm256_set1_ps(kAtanhSeries[0]);
    for (int j = 1; j < 6; ++j) {
      series = _mm256_add_ps(_mm256_mul_ps(series, z),
                             _mm256_set1_ps(kAtanhSeries[j]));
    }
    series = _mm256_add_ps(_mm256_mul_ps(series, z), one);
    const __m256 log1p = _mm256_mul_ps(_mm256_add_ps(t, t), series);
    // max(0, x) keeps a NaN.
    sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_max_ps(zero, x), log1p));
  }
  _mm256_storeu_ps(partial, sum);
}
#else
constexpr int64_t kLanes = 1;

inline void SoftplusAndSigmoidSpan(float* logits, int64_t count,
                                   float* partial) {
  for (int64_t i = 0; i < count; ++i) {
    const float x = logits[i];
    const float a = std::max(kExpFloor, -std::fabs(x));
    const float n = std::nearbyint(a * kLog2E);
    const float r = (a - n * kLn2Hi) - n * kLn2Lo;
    float p = kExpPolynomial[0];
    for (int j = 1; j < 6; ++j) p = p * r + kExpPolynomial[j];
    const float e = std::ldexp(p * r * r + (r + 1.0f), static_cast<int>(n));
    const float s = 1.0f / (1.0f + e);
    logits[i] = std::isnan(x) ? x : x < 0.0f ? e * s : s;
    const float t = e / (2.0f + e);
    const float z = t * t;
    float series = kAtanhSeries[0];
    for (int j = 1; j < 6; ++j) series = series * z + kAtanhSeries[j];
    const float softplus = std::max(0.0f, x) + (t + t) * (series * z + 1.0f);
    *partial += std::isnan(x) ? x : softplus;
  }
}
#endif

// The logits become their sigmoids; returns the sum of their softplus
// values. Every logit goes through the same code (a partial last group of
// lanes is padded), so a value's results do not depend on its position.
inline double SoftplusSumAndSigmoid(float* logits, int64_t n) {
  double sum = 0.0;
  const int64_t whole = n - n % kLanes;
  for (int64_t first = 0; first < whole; first += kSpan) {
    float partial[kLanes] = {};
    SoftplusAndSigmoidSpan(logits + first, std::min(kSpan, whole - first),
                           partial);
    for (int64_t j = 0; j < kLanes; ++j) sum += partial[j];
  }
  if (whole < n) {
    float padded[kLanes] = {};
    float partial[kLanes] = {};
    std::copy(logits + whole, logits + n, padded);
    SoftplusAndSigmoidSpan(padded, kLanes, partial);
    std::copy_n(padded, n - whole, logits + whole);
    for (int64_t j = 0; j < n - whole; ++j) sum += partial[j];
  }
  return sum;
}

inline void Prefetch(const float* row, int64_t dim) {
  for (int64_t d = 0; d < dim; d += 16) __builtin_prefetch(row + d);
}

// Prefetches the target and context rows of pair b and, when `negatives`,
// its own negative rows.
inline void PrefetchPair(const StepArgs& s, int64_t b, bool negatives) {
  const int out = s.output_table;
  Prefetch(s.tables[0] + int64_t{s.target[b]} * s.dim, s.dim);
  Prefetch(s.tables[out] + int64_t{s.context[b]} * s.dim, s.dim);
  if (!negatives) return;
  for (int64_t k = 0; k < s.num_negatives; ++k) {
    Prefetch(s.tables[out] + int64_t{s.negatives[b * s.num_negatives + k]} *
                                 s.dim, s.dim);
  }
}

constexpr int64_t kPairsPerChunk = 32;

// Loss and gradient terms of pairs [begin, end), each with its own
// negatives, `kPairsPerChunk` pairs at a time: their logits, then the loss
// and the logits' sigmoids in vectorized passes, then the rows' terms (the
// chunk's rows are still in cache). A pair's target row and the target's
// gradient go to the arena; its context and negative rows' terms scale the
// target row.
inline void SumPairs(const StepArgs& s, int64_t begin, int64_t end,
                     BlockTerms* block) {
  const int64_t dim = s.dim;
  const int64_t k_count = s.num_negatives;
  const int out = s.output_table;
  block->Reset(2 * (end - begin), dim);
  block->logits.resize(kPairsPerChunk * (k_count + 1));
  const float negative_scale = s.negative_weight * s.loss_scale;
  auto row_of = [&](int table, int32_t id) {
    return s.tables[table] + int64_t{id} * dim;
  };
  for (int64_t first = begin; first < end; first += kPairsPerChunk) {
    const int64_t last = std::min(end, first + kPairsPerChunk);
    // The positive logits enter negated: softplus(-pos) is their loss.
    float* positive = block->logits.data();
    float* negative = positive + (last - first);
    for (int64_t b = first; b < last; ++b) {
      if (b + 4 < last) PrefetchPair(s, b + 4, true);
      const float* t = row_of(0, s.target[b]);
      *positive++ = -Dot(t, row_of(out, s.context[b]), dim);
      for (int64_t k = 0; k < k_count; ++k) {
        *negative++ = Dot(t, row_of(out, s.negatives[b * k_count + k]), dim);
      }
    }
    const double positive_loss =
        SoftplusSumAndSigmoid(block->logits.data(), last - first);
    const double negative_loss = SoftplusSumAndSigmoid(
        block->logits.data() + (last - first), (last - first) * k_count);
    block->loss += positive_loss + s.negative_weight * negative_loss;
    const float* positive_sigmoid = block->logits.data();
    const float* sigmoid = positive_sigmoid + (last - first);
    for (int64_t b = first; b < last; ++b) {
      const float* c = row_of(out, s.context[b]);
      const int32_t t = block->NewVectors(2);  // the target row, its gradient
      std::copy_n(row_of(0, s.target[b]), dim, block->Vector(t, dim));
      float* g = block->Vector(t + 1, dim);
      // d loss / d pos = sigmoid(pos) - 1 = -sigmoid(-pos).
      const float d_pos = -*positive_sigmoid++ * s.loss_scale;
      for (int64_t d = 0; d < dim; ++d) g[d] = d_pos * c[d];
      block->Add(out, s.context[b], d_pos, t);
      for (int64_t k = 0; k < k_count; ++k) {
        const int32_t id = s.negatives[b * k_count + k];
        const float* n = row_of(out, id);
        const float d_neg = *sigmoid++ * negative_scale;
        for (int64_t d = 0; d < dim; ++d) g[d] += d_neg * n[d];
        block->Add(out, id, d_neg, t);
      }
      block->Add(0, s.target[b], 1.0f, t + 1);
    }
  }
}

// Pairs of one group taken at a time by SumGroups (its buffers stay in the
// second-level cache).
constexpr int64_t kGroupChunk = 256;

// Column-major float matrix over a buffer: a column is a row of a table.
using MatrixMap =
    Eigen::Map<Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>>;

// Pairs [first, last) of a group whose negative rows are `n` [dim, K]:
// their loss, their target and context rows' terms, and the negative rows'
// gradients added to `dn` [dim, K]. A pair's logits and their gradients
// depend on its target row alone, so they are computed once per distinct
// target of the chunk (a frequent word is many pairs' target).
inline void SumGroupChunk(const StepArgs& s, int64_t first, int64_t last,
                          const MatrixMap& n, MatrixMap* dn,
                          BlockTerms* block) {
  const int64_t dim = s.dim;
  const int64_t m = last - first;
  const int64_t k_count = n.cols();
  const int out = s.output_table;
  auto row_of = [&](int table, int32_t id) {
    return s.tables[table] + int64_t{id} * dim;
  };
  ChunkTargets& targets = block->targets;
  const int32_t rows = block->NewVectors(m);  // the distinct target rows
  targets.Reset(m, block->Vector(rows, dim));
  // The positive logits enter negated: softplus(-pos) is their loss.
  float* positive = block->logits.data();
  float* negative = positive + m;
  for (int64_t b = first; b < last; ++b) {
    if (b + 4 < last) PrefetchPair(s, b + 4, false);
    const float* t = row_of(0, s.target[b]);
    targets.Add(b - first, s.target[b], t, dim);
    positive[b - first] = -Dot(t, row_of(out, s.context[b]), dim);
  }
  const int64_t distinct = targets.distinct();
  MatrixMap t(targets.rows, dim, distinct);
  // [K, distinct]: column j holds the logits of distinct target j.
  MatrixMap logits(negative, k_count, distinct);
  logits.noalias() = n.transpose() * t;
  double negative_loss = 0.0;
  for (int64_t j = 0; j < distinct; ++j) {
    negative_loss += targets.count[j] *
                     SoftplusSumAndSigmoid(negative + j * k_count, k_count);
  }
  block->loss += SoftplusSumAndSigmoid(positive, m) +
                 s.negative_weight * negative_loss;
  // d loss / d neg = weight * sigmoid(neg), times the loss scale.
  logits.array() *= s.negative_weight * s.loss_scale;
  MatrixMap dt(block->target_gradient.data(), dim, distinct);
  dt.noalias() = n * logits;
  // A negative row's gradient sums over pairs: target j counts count[j]
  // times.
  for (int64_t j = 0; j < distinct; ++j) {
    logits.col(j) *= static_cast<float>(targets.count[j]);
  }
  dn->noalias() += t * logits.transpose();
  for (int64_t b = first; b < last; ++b) {
    const int64_t j = targets.column[b - first];
    const float* c = row_of(out, s.context[b]);
    const float* from_negatives = dt.data() + j * dim;
    // d loss / d pos = sigmoid(pos) - 1 = -sigmoid(-pos).
    const float d_pos = -positive[b - first] * s.loss_scale;
    const int32_t gradient = block->NewVectors(1);
    float* g = block->Vector(gradient, dim);
    for (int64_t d = 0; d < dim; ++d) g[d] = d_pos * c[d] + from_negatives[d];
    block->Add(out, s.context[b], d_pos, rows + static_cast<int32_t>(j));
    block->Add(0, s.target[b], 1.0f, gradient);
  }
}

// Loss and gradient terms of groups [begin, end) of pairs sharing
// negatives, `kGroupChunk` pairs at a time; each group's negative rows
// have one term each, their gradients summed over the group.
inline void SumGroups(const StepArgs& s, int64_t begin, int64_t end,
                      BlockTerms* block) {
  const int64_t dim = s.dim;
  const int64_t k_count = s.num_negatives;
  const int64_t group = s.group();
  const int64_t chunk = std::min(group, kGroupChunk);
  const int out = s.output_table;
  block->Reset((end - begin) * (2 * group + k_count), dim);
  block->target_gradient.resize(chunk * dim);
  block->logits.resize(chunk * (k_count + 1));
  block->shared_rows.resize(k_count * dim);
  MatrixMap n(block->shared_rows.data(), dim, k_count);
  for (int64_t g = begin; g < end; ++g) {
    const int32_t* ids = s.negatives + g * k_count;
    for (int64_t k = 0; k < k_count; ++k) {
      std::copy_n(s.tables[out] + int64_t{ids[k]} * dim, dim,
                  block->shared_rows.data() + k * dim);
    }
    const int32_t gradients = block->NewVectors(k_count);
    MatrixMap dn(block->Vector(gradients, dim), dim, k_count);
    dn.setZero();
    for (int64_t first = g * group; first < (g + 1) * group;
         first += chunk) {
      SumGroupChunk(s, first, std::min((g + 1) * group, first + chunk), n,
                    &dn, block);
    }
    for (int64_t k = 0; k < k_count; ++k) {
      block->Add(out, ids[k], 1.0f, gradients + static_cast<int32_t>(k));
    }
  }
}

// Block `block` of `blocks`: a range of whole rows of negatives, so a group
// never straddles two blocks.
inline void SumBlock(const StepArgs& s, int64_t block, int64_t blocks,
                     BlockTerms* terms) {
  const int64_t begin = block * s.negative_rows / blocks;
  const int64_t end = (block + 1) * s.negative_rows / blocks;
  if (s.group() == 1) {
    SumPairs(s, begin, end, terms);
  } else {
    SumGroups(s, begin, end, terms);
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

// Sums the terms of shard `shard`'s rows, block after block (so in the
// order of the pairs), then applies the rule to each row.
inline void ApplyShard(const StepArgs& s, int shard, int64_t blocks,
                       StepScratch* scratch) {
  const int64_t dim = s.dim;
  ShardSums& sums = scratch->shards[shard];
  int64_t terms = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    terms += static_cast<int64_t>(scratch->blocks[b].of_shard[shard].size());
  }
  sums.index.Reset(terms);
  if (static_cast<int64_t>(sums.rows.size()) < terms * dim) {
    sums.rows.resize(terms * dim);
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockTerms& block = scratch->blocks[b];
    for (const Term& term : block.of_shard[shard]) {
      bool added;
      const int32_t i = sums.index.Find(term.key, &added);
      Accumulate(sums.rows.data() + int64_t{i} * dim, term.coefficient,
                 block.arena.data() + int64_t{term.vector} * dim, dim, added);
    }
  }
  const std::vector<uint64_t>& keys = sums.index.keys();
  constexpr size_t kAhead = 12;
  for (size_t r = 0; r < keys.size(); ++r) {
    if (r + kAhead < keys.size()) {
      const uint64_t key = keys[r + kAhead];
      const int table = static_cast<int>(key >> 32);
      const int64_t id = static_cast<uint32_t>(key);
      Prefetch(s.tables[table] + id * dim, dim);
      if (s.slots[table] != nullptr) Prefetch(s.slots[table] + id * dim, dim);
    }
    Update(s, static_cast<int>(keys[r] >> 32), static_cast<uint32_t>(keys[r]),
           sums.rows.data() + static_cast<int64_t>(r) * dim);
  }
}

// The pair blocks of a step of `s`.
inline int64_t PairBlocks(const StepArgs& s) {
  return std::max<int64_t>(
      1, std::min<int64_t>({int64_t{kPairBlocks}, s.batch / kPairsPerBlock,
                            s.negative_rows}));
}

// Runs `steps` steps in order, each on the tables the one before it wrote:
// step i is `args_of(i)`, which differs from `call` (batch > 0) in its ids
// and learning rate only; losses[i] is its loss. Every thread that calls it
// with the same arguments and `lockstep` shares the work: a step's pair
// blocks are one phase, its row shards the next. Which thread runs a block
// or a shard changes no result. A thread reads `args_of`'s inputs and
// `losses` only while it runs an item, never once every phase has finished.
template <typename ArgsOf>
void RunSteps(const StepArgs& call, int64_t steps, const ArgsOf& args_of,
              StepScratch* scratch, float* losses, Lockstep* lockstep) {
  const int64_t blocks = PairBlocks(call);
  const float loss_scale = call.loss_scale;
  lockstep->Work(
      2 * steps,
      [blocks](int64_t phase) {
        return phase % 2 == 0 ? blocks : int64_t{kRowShards};
      },
      [&](int64_t phase, int64_t item) {
        const StepArgs s = args_of(phase / 2);
        if (phase % 2 == 0) {
          SumBlock(s, item, blocks, &scratch->blocks[item]);
        } else {
          ApplyShard(s, static_cast<int>(item), blocks, scratch);
        }
      },
      [&](int64_t phase) {
        if (phase % 2 != 0) return;
        double loss = 0.0;
        for (int64_t b = 0; b < blocks; ++b) loss += scratch->blocks[b].loss;
        losses[phase / 2] = static_cast<float>(loss * loss_scale);
      });
}

}  // namespace tpu_embeddings

#endif  // TPU_EMBEDDINGS_KERNELS_SKIPGRAM_STEP_H_
