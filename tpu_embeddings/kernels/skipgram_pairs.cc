// Skip-gram pairs and negatives of a chunk of id sequences, given the
// chunk's random draws: the integer work of
// tpu_embeddings.models.skipgram.skipgram_pairs and sample_negatives in
// three ops, with the same outputs for the same draws.
//
//   SkipGramKeep:        drops OOV ids (< 0) and subsampled tokens
//                        (uniform >= keep_probability[id]);
//   SkipGramWindows:     (target, context) of every kept token and every
//                        token within its reach in its sequence, targets in
//                        order, contexts from the farthest left to the
//                        farthest right;
//   SkipGramShuffle:     the pairs in a given order, and K negatives each
//                        from an alias table (slot if coin < accept[slot],
//                        else alias[slot]).

#include <algorithm>
#include <cstdint>
#include <limits>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tensorflow {
namespace {

using shape_inference::InferenceContext;

REGISTER_OP("SkipGramKeep")
    .Input("values: int32")
    .Input("row_splits: int64")
    .Input("uniform: float")
    .Input("keep_probability: float")
    .Output("kept_values: int32")
    .Output("kept_row_splits: int64")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      c->set_output(1, c->input(1));
      return OkStatus();
    });

REGISTER_OP("SkipGramWindows")
    .Input("values: int32")
    .Input("row_splits: int64")
    .Input("reach: int32")
    .Output("target: int32")
    .Output("context: int32")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Vector(InferenceContext::kUnknownDim));
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      return OkStatus();
    });

REGISTER_OP("SkipGramShuffle")
    .Input("target: int32")
    .Input("context: int32")
    .Input("order: int32")
    .Input("slot: int32")
    .Input("coin: float")
    .Input("accept: float")
    .Input("alias: int32")
    .Output("shuffled_target: int32")
    .Output("shuffled_context: int32")
    .Output("negatives: int32")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(0));
      c->set_output(1, c->input(0));
      c->set_output(2, c->input(3));
      return OkStatus();
    });

Status CheckSplits(const Tensor& splits, int64_t values) {
  auto s = splits.flat<int64_t>();
  if (splits.dims() != 1 || s.size() < 1 || s(0) != 0 ||
      s(s.size() - 1) != values) {
    return errors::InvalidArgument(
        "skip-gram pairs: row_splits must start at 0 and end at the ",
        values, " values");
  }
  for (int64_t r = 1; r < s.size(); ++r) {
    if (s(r) < s(r - 1)) {
      return errors::InvalidArgument(
          "skip-gram pairs: row_splits must not decrease");
    }
  }
  return OkStatus();
}

class SkipGramKeepOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& values = ctx->input(0);
    const Tensor& splits = ctx->input(1);
    const Tensor& uniform = ctx->input(2);
    const Tensor& keep = ctx->input(3);
    const int64_t n = values.NumElements();
    OP_REQUIRES(ctx, uniform.NumElements() == n,
                errors::InvalidArgument(
                    "SkipGramKeep: one uniform draw per value needed"));
    OP_REQUIRES_OK(ctx, CheckSplits(splits, n));
    auto v = values.flat<int32>();
    auto u = uniform.flat<float>();
    auto p = keep.flat<float>();
    auto s = splits.flat<int64_t>();
    const int64_t vocabulary = p.size();
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      OP_REQUIRES(ctx, v(i) < vocabulary,
                  errors::InvalidArgument("SkipGramKeep: id ", v(i),
                                          " is outside the vocabulary of ",
                                          vocabulary));
      kept += v(i) >= 0 && u(i) < p(v(i));
    }
    Tensor* out_values = nullptr;
    Tensor* out_splits = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({kept}),
                                             &out_values));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, splits.shape(), &out_splits));
    auto ov = out_values->flat<int32>();
    auto os = out_splits->flat<int64_t>();
    int64_t j = 0;
    os(0) = 0;
    for (int64_t r = 0; r + 1 < s.size(); ++r) {
      for (int64_t i = s(r); i < s(r + 1); ++i) {
        if (v(i) >= 0 && u(i) < p(v(i))) ov(j++) = v(i);
      }
      os(r + 1) = j;
    }
  }
};

class SkipGramWindowsOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& values = ctx->input(0);
    const Tensor& splits = ctx->input(1);
    const Tensor& reach = ctx->input(2);
    const int64_t n = values.NumElements();
    OP_REQUIRES(ctx, reach.NumElements() == n,
                errors::InvalidArgument(
                    "SkipGramWindows: one reach per value needed"));
    OP_REQUIRES_OK(ctx, CheckSplits(splits, n));
    auto v = values.flat<int32>();
    auto w = reach.flat<int32>();
    auto s = splits.flat<int64_t>();
    int64_t pairs = 0;
    for (int64_t r = 0; r + 1 < s.size(); ++r) {
      for (int64_t i = s(r); i < s(r + 1); ++i) {
        pairs += std::min<int64_t>(w(i), i - s(r)) +
                 std::min<int64_t>(w(i), s(r + 1) - 1 - i);
      }
    }
    OP_REQUIRES(ctx, pairs <= std::numeric_limits<int32>::max(),
                errors::InvalidArgument(
                    "SkipGramWindows: ", pairs, " pairs in one chunk; use "
                    "fewer sequences per chunk"));
    Tensor* target = nullptr;
    Tensor* context = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({pairs}), &target));
    OP_REQUIRES_OK(ctx,
                   ctx->allocate_output(1, TensorShape({pairs}), &context));
    int32* t = target->flat<int32>().data();
    int32* c = context->flat<int32>().data();
    for (int64_t r = 0; r + 1 < s.size(); ++r) {
      const int64_t first = s(r);
      const int64_t last = s(r + 1) - 1;
      for (int64_t i = first; i <= last; ++i) {
        const int64_t from = i - std::min<int64_t>(w(i), i - first);
        const int64_t to = i + std::min<int64_t>(w(i), last - i);
        for (int64_t j = from; j <= to; ++j) {
          if (j == i) continue;
          *t++ = v(i);
          *c++ = v(j);
        }
      }
    }
  }
};

class SkipGramShuffleOp : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext* ctx) override {
    const Tensor& target = ctx->input(0);
    const Tensor& context = ctx->input(1);
    const Tensor& order = ctx->input(2);
    const Tensor& slot = ctx->input(3);
    const Tensor& coin = ctx->input(4);
    const Tensor& accept = ctx->input(5);
    const Tensor& alias = ctx->input(6);
    const int64_t pairs = target.NumElements();
    OP_REQUIRES(ctx, context.NumElements() == pairs &&
                         order.NumElements() == pairs &&
                         slot.dims() == 2 && slot.dim_size(0) == pairs &&
                         coin.shape() == slot.shape(),
                errors::InvalidArgument(
                    "SkipGramShuffle: target, context and order [P], slot "
                    "and coin [P, K] needed"));
    OP_REQUIRES(ctx, accept.NumElements() == alias.NumElements(),
                errors::InvalidArgument(
                    "SkipGramShuffle: accept and alias differ in size"));
    const int64_t vocabulary = accept.NumElements();
    Tensor* out_target = nullptr;
    Tensor* out_context = nullptr;
    Tensor* negatives = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, target.shape(), &out_target));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, target.shape(), &out_context));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, slot.shape(), &negatives));
    auto t = target.flat<int32>();
    auto c = context.flat<int32>();
    auto o = order.flat<int32>();
    auto ot = out_target->flat<int32>();
    auto oc = out_context->flat<int32>();
    for (int64_t i = 0; i < pairs; ++i) {
      OP_REQUIRES(ctx, o(i) >= 0 && o(i) < pairs,
                  errors::InvalidArgument("SkipGramShuffle: order holds ",
                                          o(i), ", not a pair index"));
      ot(i) = t(o(i));
      oc(i) = c(o(i));
    }
    auto sl = slot.flat<int32>();
    auto co = coin.flat<float>();
    auto ac = accept.flat<float>();
    auto al = alias.flat<int32>();
    auto n = negatives->flat<int32>();
    for (int64_t i = 0; i < sl.size(); ++i) {
      OP_REQUIRES(ctx, sl(i) >= 0 && sl(i) < vocabulary,
                  errors::InvalidArgument("SkipGramShuffle: slot ", sl(i),
                                          " is outside the alias table"));
      n(i) = co(i) < ac(sl(i)) ? sl(i) : al(sl(i));
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("SkipGramKeep").Device(DEVICE_CPU),
                        SkipGramKeepOp);
REGISTER_KERNEL_BUILDER(Name("SkipGramWindows").Device(DEVICE_CPU),
                        SkipGramWindowsOp);
REGISTER_KERNEL_BUILDER(Name("SkipGramShuffle").Device(DEVICE_CPU),
                        SkipGramShuffleOp);

}  // namespace
}  // namespace tensorflow
