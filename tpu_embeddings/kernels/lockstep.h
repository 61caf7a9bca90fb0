// Lockstep: threads working through a sequence of phases together, free of
// TensorFlow (the SkipGramStep op runs its steps' phases with it).
//
// Each phase is a number of independent items; no item of a phase starts
// before every item of the phase before it has finished. A thread takes the
// next item left with one atomic exchange, so the items of a phase spread
// over whichever threads are there. A thread may join at any time (one that
// arrives late skips the phases already finished), and the work never waits
// for a thread to join: it finishes with the calling thread alone. A thread
// waits only at the end of a phase, for items other threads have taken; it
// spins a little (a phase lasts tens of microseconds, far less than waking
// a sleeping thread takes), then yields its core.

#ifndef TPU_EMBEDDINGS_KERNELS_LOCKSTEP_H_
#define TPU_EMBEDDINGS_KERNELS_LOCKSTEP_H_

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tpu_embeddings {

class Lockstep {
 public:
  // Spins before a waiting thread starts yielding its core.
  static constexpr int kSpins = 2000;

  // Works through phases [0, phases) with every other thread calling Work
  // on this Lockstep with the same arguments; returns once every phase has
  // finished.
  //
  //   items(p) -> int64_t   phase p's items, at least 1
  //   run(p, i)             item i of phase p
  //   finish(p)             once per phase, by the thread that ran its last
  //                         item, before any item of phase p + 1 starts
  template <typename Items, typename Run, typename Finish>
  void Work(int64_t phases, const Items& items, const Run& run,
            const Finish& finish) {
    int64_t start = 0;  // phase p's first item, counted over every phase
    for (int64_t p = 0; p < phases; ++p) {
      const int64_t end = start + items(p);
      if (finished_.load(std::memory_order_acquire) <= p) {
        int64_t taken = taken_.load(std::memory_order_relaxed);
        while (taken < end) {
          if (!taken_.compare_exchange_weak(taken, taken + 1,
                                            std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
            continue;  // `taken` now holds the count another thread left
          }
          run(p, taken - start);
          if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == end) {
            finish(p);
            finished_.store(p + 1, std::memory_order_release);
          }
          taken = taken_.load(std::memory_order_relaxed);
        }
        WaitFor(p + 1);
      }
      start = end;
    }
  }

 private:
  void WaitFor(int64_t phases) {
    for (int spins = 0;
         finished_.load(std::memory_order_acquire) < phases; ++spins) {
      if (spins < kSpins) {
        Pause();
      } else {
        std::this_thread::yield();
      }
    }
  }

  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  std::atomic<int64_t> taken_{0};     // items taken, over every phase
  std::atomic<int64_t> done_{0};      // items run, over every phase
  std::atomic<int64_t> finished_{0};  // phases finished
};

}  // namespace tpu_embeddings

#endif  // TPU_EMBEDDINGS_KERNELS_LOCKSTEP_H_
