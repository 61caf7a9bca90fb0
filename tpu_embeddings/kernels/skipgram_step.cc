// SkipGramStep: the fused skip-gram training step (skipgram_step.h) as a
// TensorFlow op that updates resource variables in place, locking them as
// TensorFlow's own ResourceSparseApply* ops do.

#define EIGEN_USE_THREADS

#include <memory>
#include <string>
#include <vector>

#include "skipgram_step.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/framework/tensor_shape.h"
#include "tensorflow/core/kernels/training_op_helpers.h"
#include "tensorflow/core/platform/mutex.h"

namespace tensorflow {
namespace {

using CPUDevice = Eigen::ThreadPoolDevice;

REGISTER_OP("SkipGramStep")
    .Input("tables: num_tables * resource")
    .Input("slots: num_slots * resource")
    .Input("target: int32")
    .Input("context: int32")
    .Input("negatives: int32")
    .Input("learning_rate: float")
    .Input("loss_scale: float")
    .Input("negative_weight: float")
    .Output("loss: float")
    .Attr("num_tables: int >= 1")
    .Attr("num_slots: int >= 0")
    .Attr("optimizer: {'sgd', 'adagrad'}")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      // The loss has the learning rate's shape: a scalar, or one per step.
      int tables = 0, slots = 0;
      TF_RETURN_IF_ERROR(c->GetAttr("num_tables", &tables));
      TF_RETURN_IF_ERROR(c->GetAttr("num_slots", &slots));
      c->set_output(0, c->input(tables + slots + 3));
      return OkStatus();
    })
    .Doc(R"doc(
One skip-gram step: loss, gradients, duplicate rows summed, one optimizer
update per distinct row (as a TPU applies the embedding optimizer). Or S
such steps in order, each on the tables the one before it wrote: target and
context [S, B], negatives [S, N, K], learning_rate and loss [S].

tables: [input] (tied: targets, contexts and negatives read it) or [input,
  output] (contexts and negatives read the output table).
slots: Adagrad: one accumulator per table, same shape; SGD: none.
negatives: [N, K] with N dividing B: pair b uses row b / (B / N) (N = B:
  K negatives per pair; N < B: groups of B / N consecutive pairs share K).
negative_weight: multiplies the negatives' term of the loss.
loss: loss_scale * the summed negative-sampling loss of the batch.
)doc");

Status CheckIds(const char* name, const Tensor& ids, int64_t rows) {
  auto flat = ids.flat<int32>();
  for (int64_t i = 0; i < flat.size(); ++i) {
    if (flat(i) < 0 || flat(i) >= rows) {
      return errors::InvalidArgument("SkipGramStep: ", name, " id ", flat(i),
                                     " at position ", i,
                                     " is outside its table's ", rows,
                                     " rows");
    }
  }
  return OkStatus();
}

// A call's steps take one thread per this many pairs x dims of a step, up
// to the intra-op threads and the row shards: the item config's steps (512
// pairs x 64) two, the text defaults' (2048 x 128) eight where the cores
// are there.
constexpr int64_t kWorkPerThread = int64_t{1} << 14;

class SkipGramStepOp : public OpKernel {
 public:
  explicit SkipGramStepOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_tables", &num_tables_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("num_slots", &num_slots_));
    std::string optimizer;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("optimizer", &optimizer));
    adagrad_ = optimizer == "adagrad";
    OP_REQUIRES(ctx, num_tables_ == 1 || num_tables_ == 2,
                errors::InvalidArgument(
                    "SkipGramStep: num_tables must be 1 (tied) or 2, got ",
                    num_tables_));
    const int slots = adagrad_ ? num_tables_ : 0;
    OP_REQUIRES(ctx, num_slots_ == slots,
                errors::InvalidArgument("SkipGramStep: ", optimizer, " on ",
                                        num_tables_, " table(s) needs ", slots,
                                        " slot variable(s), got ",
                                        num_slots_));
  }

  void Compute(OpKernelContext* ctx) override TF_NO_THREAD_SAFETY_ANALYSIS {
    const int variables = num_tables_ + num_slots_;
    std::vector<int> inputs(variables);
    for (int i = 0; i < variables; ++i) inputs[i] = i;
    auto locks = MaybeLockVariableInputMutexesInOrder<CPUDevice, float>(
        ctx, /*do_lock=*/true, /*sparse=*/true, inputs);
    std::vector<Tensor> tensors(variables);
    for (int i = 0; i < variables; ++i) {
      OP_REQUIRES_OK(ctx, GetInputTensorFromVariable<CPUDevice, float>(
                              ctx, i, /*lock_held=*/true, /*sparse=*/true,
                              &tensors[i]));
      OP_REQUIRES(ctx, tensors[i].dims() == 2 &&
                           tensors[i].dim_size(1) == tensors[0].dim_size(1),
                  errors::InvalidArgument(
                      "SkipGramStep: every table and slot must be [rows, ",
                      tensors[0].dim_size(1), "], variable ", i, " is ",
                      tensors[i].shape().DebugString()));
      OP_REQUIRES(ctx, i < num_tables_ ||
                           tensors[i].shape() == tensors[i - num_tables_].shape(),
                  errors::InvalidArgument("SkipGramStep: slot ",
                                          i - num_tables_,
                                          " must have its table's shape"));
    }
    const Tensor& target = ctx->input(variables);
    const Tensor& context = ctx->input(variables + 1);
    const Tensor& negatives = ctx->input(variables + 2);
    const Tensor& learning_rate = ctx->input(variables + 3);
    // One step ([B] pairs, a scalar rate) or S steps ([S, B], [S] rates).
    const bool stepped = target.dims() == 2;
    const int64_t steps = stepped ? target.dim_size(0) : 1;
    const int64_t batch = stepped ? target.dim_size(1) : target.NumElements();
    const int negatives_dims = stepped ? 3 : 2;
    const int64_t negative_rows =
        negatives.dims() == negatives_dims
            ? negatives.dim_size(negatives_dims - 2) : -1;
    OP_REQUIRES(ctx, (target.dims() == 1 || target.dims() == 2) &&
                         context.shape() == target.shape() &&
                         (!stepped || (negatives.dims() == 3 &&
                                       negatives.dim_size(0) == steps)) &&
                         (negative_rows == batch ||
                          (negative_rows >= 1 && batch % negative_rows == 0)),
                errors::InvalidArgument(
                    "SkipGramStep: needs target [B], context [B] and "
                    "negatives [N, K] with N dividing B (N = B: K per pair; "
                    "N < B: each B/N consecutive pairs share a row), or the "
                    "same with a leading [S] of steps, got ",
                    target.shape().DebugString(), ", ",
                    context.shape().DebugString(), ", ",
                    negatives.shape().DebugString()));
    OP_REQUIRES(ctx, stepped ? learning_rate.shape() == TensorShape({steps})
                             : TensorShapeUtils::IsScalar(learning_rate.shape()),
                errors::InvalidArgument(
                    "SkipGramStep: learning_rate must be a scalar, or [S] "
                    "with a leading [S] of steps, got ",
                    learning_rate.shape().DebugString()));
    for (int i = variables + 4; i < variables + 6; ++i) {
      const TensorShape& shape = ctx->input(i).shape();
      OP_REQUIRES(ctx, TensorShapeUtils::IsScalar(shape),
                  errors::InvalidArgument(
                      "SkipGramStep: loss_scale and negative_weight must be "
                      "scalars, got ",
                      shape.DebugString()));
    }
    const int out = num_tables_ - 1;
    OP_REQUIRES_OK(ctx, CheckIds("target", target, tensors[0].dim_size(0)));
    OP_REQUIRES_OK(ctx, CheckIds("context", context, tensors[out].dim_size(0)));
    OP_REQUIRES_OK(ctx,
                   CheckIds("negatives", negatives, tensors[out].dim_size(0)));

    tpu_embeddings::StepArgs args;
    args.dim = tensors[0].dim_size(1);
    args.batch = batch;
    args.num_negatives = negatives.dim_size(negatives_dims - 1);
    args.negative_rows = negative_rows;
    args.output_table = out;
    for (int t = 0; t < num_tables_; ++t) {
      args.tables[t] = tensors[t].flat<float>().data();
      if (adagrad_) args.slots[t] = tensors[num_tables_ + t].flat<float>().data();
    }
    args.loss_scale = ctx->input(variables + 4).scalar<float>()();
    args.negative_weight = ctx->input(variables + 5).scalar<float>()();

    Tensor* output = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, learning_rate.shape(),
                                             &output));
    const float* rates = learning_rate.flat<float>().data();
    float* losses = output->flat<float>().data();
    const int64_t negative_ids = negative_rows * args.num_negatives;
    const int32* targets = target.flat<int32>().data();
    const int32* contexts = context.flat<int32>().data();
    const int32* negative_sets = negatives.flat<int32>().data();
    // Pure, so every thread of the call builds the same step.
    auto args_of = [=](int64_t step) {
      tpu_embeddings::StepArgs s = args;
      s.target = targets + step * batch;
      s.context = contexts + step * batch;
      s.negatives = negative_sets + step * negative_ids;
      s.learning_rate = rates[step];
      return s;
    };
    if (batch == 0) {
      std::fill_n(losses, steps, 0.0f);
      return;
    }
    std::unique_ptr<tpu_embeddings::StepScratch> scratch = TakeScratch();
    tpu_embeddings::StepScratch* shared_scratch = scratch.get();
    // Helpers on the intra-op threads join the calling thread's work when
    // they start; the calling thread never waits for one to start, and
    // returns once every step is done: by then a helper that started has no
    // item left, and one that starts later finds every phase finished (the
    // Lockstep it holds outlives the call).
    auto lockstep = std::make_shared<tpu_embeddings::Lockstep>();
    auto* workers = ctx->device()->tensorflow_cpu_worker_threads()->workers;
    const int64_t threads = std::min<int64_t>(
        {int64_t{workers->NumThreads()}, int64_t{tpu_embeddings::kRowShards},
         std::max<int64_t>(1, batch * args.dim / kWorkPerThread)});
    for (int64_t h = 1; h < threads; ++h) {
      workers->Schedule([=] {
        tpu_embeddings::RunSteps(args, steps, args_of, shared_scratch,
                                 losses, lockstep.get());
      });
    }
    tpu_embeddings::RunSteps(args, steps, args_of, shared_scratch, losses,
                             lockstep.get());
    ReturnScratch(std::move(scratch));
  }

 private:
  // Scratch buffers outlive a call, so steps after the first allocate
  // nothing; concurrent calls each take their own.
  std::unique_ptr<tpu_embeddings::StepScratch> TakeScratch() {
    mutex_lock lock(mu_);
    if (free_.empty()) return std::make_unique<tpu_embeddings::StepScratch>();
    std::unique_ptr<tpu_embeddings::StepScratch> scratch =
        std::move(free_.back());
    free_.pop_back();
    return scratch;
  }

  void ReturnScratch(std::unique_ptr<tpu_embeddings::StepScratch> scratch) {
    mutex_lock lock(mu_);
    free_.push_back(std::move(scratch));
  }

  int num_tables_ = 1;
  int num_slots_ = 0;
  bool adagrad_ = false;
  mutex mu_;
  std::vector<std::unique_ptr<tpu_embeddings::StepScratch>> free_
      TF_GUARDED_BY(mu_);
};

REGISTER_KERNEL_BUILDER(Name("SkipGramStep").Device(DEVICE_CPU),
                        SkipGramStepOp);

}  // namespace
}  // namespace tensorflow
